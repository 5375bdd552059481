//! `sealmq trigger-monitor QM [--initq Q]`: MQ's runmqtrm. It gets trigger messages from an
//! initiation queue and starts the program the triggered queue's PROCESS names, as runmqtrm
//! does for APPLTYPE(UNIX): `APPLICID 'MQTMC2' ENVRDATA` run by the shell (an ENVRDATA
//! ending in `&` runs the program in the background; otherwise the monitor waits for it).
//! The program reads the trigger (queue name, TRIGDATA, USERDATA, ...) from its argument.
//!
//! Unlike runmqtrm it does not trust the message (SECURITY.md, "Triggering"): it serves only
//! trigger messages the queue manager made (origin user SYSTEM, format MQTRIG), takes the
//! program and its data from the definitions on the queue manager as they are now (the queue
//! must name that PROCESS and this initiation queue), and starts nothing as root unless told.

#![allow(unsafe_code)]

use crate::CliResult;
use crate::app_cmd::{ConnArgs, connect};
use crate::dump_cmd::{objects, s};
use clap::Args;
use sealmq_client::Client;
use sealmq_mqi::trigger::{DEFAULT_INITIATION_Q, TriggerMsg, appl_type_number};
use sealmq_mqi::{GetOptions, OpenOptions};
use sealmq_types::ReasonCode;
use std::path::Path;
use std::time::Duration;

#[derive(Args)]
pub struct TriggerMonitorArgs {
    /// Queue manager name.
    pub qm: String,
    /// The initiation queue to serve.
    #[arg(long, default_value = DEFAULT_INITIATION_Q)]
    pub initq: String,
    /// End after this many trigger messages (default: run until the queue manager ends).
    #[arg(long)]
    pub count: Option<u64>,
    /// Reach the queue manager over TCP (HOST:PORT) instead of its local socket.
    #[arg(long)]
    pub conn: Option<String>,
    /// The SVRCONN channel to connect through with --conn.
    #[arg(long, default_value = "", requires = "conn")]
    pub channel: String,
    /// Start every program as this OS user (the monitor must run as root to switch to it).
    #[arg(long, value_name = "USER")]
    pub run_as: Option<String>,
    /// Let a monitor running as root start programs as root (refused without it).
    #[arg(long, conflicts_with = "run_as")]
    pub allow_root: bool,
}

/// The OS identity programs run as: `None` for the monitor's own.
struct RunAs {
    name: String,
    uid: u32,
    gid: u32,
    home: String,
}

/// An OS user's uid, gid and home directory, from the system's user database.
fn os_user(name: &str) -> Result<RunAs, String> {
    let cname = std::ffi::CString::new(name).map_err(|_| format!("no OS user '{name}'"))?;
    let mut buf = vec![0u8; 16 * 1024];
    // SAFETY: an all-zero passwd is a valid value of this plain C struct.
    let mut pw: libc::passwd = unsafe { std::mem::zeroed() };
    let mut found: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: every pointer is valid for the call; getpwnam_r writes the entry's strings into
    // `buf` (of the length given) and points `found` at `pw` when the user exists.
    let rc = unsafe {
        libc::getpwnam_r(
            cname.as_ptr(),
            &mut pw,
            buf.as_mut_ptr().cast(),
            buf.len(),
            &mut found,
        )
    };
    if rc != 0 || found.is_null() {
        return Err(format!(
            "no OS user '{name}': give an existing user to --run-as"
        ));
    }
    let home = if pw.pw_dir.is_null() {
        "/".to_string()
    } else {
        // SAFETY: pw_dir points at a NUL-terminated string inside `buf`, alive here.
        unsafe { std::ffi::CStr::from_ptr(pw.pw_dir) }
            .to_string_lossy()
            .into_owned()
    };
    Ok(RunAs {
        name: name.to_string(),
        uid: pw.pw_uid,
        gid: pw.pw_gid,
        home,
    })
}

/// Who programs will run as, or why the monitor must not start.
fn identity(a: &TriggerMonitorArgs) -> Result<Option<RunAs>, String> {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    match &a.run_as {
        Some(name) => {
            let who = os_user(name)?;
            // SAFETY: as above.
            if !root && who.uid != unsafe { libc::geteuid() } {
                return Err(format!(
                    "--run-as {name}: only a monitor running as root can start programs as \
                     another user"
                ));
            }
            if who.uid == 0 && !root {
                return Err("--run-as root needs a monitor running as root".into());
            }
            Ok(Some(who))
        }
        None if root && !a.allow_root => Err(
            "the trigger monitor runs as root, so the programs it starts would too: give \
             --run-as USER to start them as that user, or --allow-root if that is intended"
                .into(),
        ),
        None => Ok(None),
    }
}

/// Whether the shell would find `program` (an absolute path, or a name on PATH).
fn findable(program: &str) -> bool {
    let is_executable = |p: &Path| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.contains('/') {
        return is_executable(Path::new(program));
    }
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| is_executable(&d.join(program))))
}

/// An MQ object name as MQSC accepts it unquoted: 1-48 of A-Z a-z 0-9 . / _ %. A name from a
/// message goes into an MQSC command only when it is one.
fn object_name(n: &str) -> bool {
    !n.is_empty()
        && n.len() <= 48
        && n.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"./_%".contains(&b))
}

/// The trigger as the definitions on the queue manager say it now: the message only names
/// the queue and process; the program and every datum come from their definitions.
fn from_definitions(c: &mut Client, tm: &TriggerMsg, initq: &str) -> Result<TriggerMsg, String> {
    for n in [&tm.queue, &tm.process] {
        if !object_name(n) {
            return Err(format!("names '{n}', which is not an object name: skipped"));
        }
    }
    let q = objects(
        c,
        &format!("DISPLAY QLOCAL({}) PROCESS INITQ TRIGDATA", tm.queue),
    )
    .map_err(|e| format!("no local queue {}: {e}", tm.queue))?;
    let q = q
        .first()
        .ok_or_else(|| format!("no local queue {}", tm.queue))?;
    if s(q, "PROCESS") != tm.process || s(q, "INITQ") != initq {
        return Err(format!(
            "queue {} names PROCESS({}) INITQ({}), not PROCESS({}) on {initq}: the message \
             does not match the definitions and is skipped",
            tm.queue,
            s(q, "PROCESS"),
            s(q, "INITQ"),
            tm.process
        ));
    }
    let p = objects(c, &format!("DISPLAY PROCESS({}) ALL", tm.process))
        .map_err(|e| format!("no PROCESS({}): {e}", tm.process))?;
    let p = p
        .first()
        .ok_or_else(|| format!("no PROCESS({})", tm.process))?;
    Ok(TriggerMsg {
        queue: tm.queue.clone(),
        process: tm.process.clone(),
        trig_data: s(q, "TRIGDATA").to_string(),
        appl_type: appl_type_number(s(p, "APPLTYPE")),
        appl_id: s(p, "APPLICID").to_string(),
        env_data: s(p, "ENVRDATA").to_string(),
        user_data: s(p, "USERDATA").to_string(),
    })
}

/// Starts the program of one trigger; an error says what could not be started.
fn start(tm: &TriggerMsg, qmgr: &str, who: Option<&RunAs>) -> Result<String, String> {
    if !matches!(tm.appl_type, 6) {
        return Err(format!(
            "PROCESS({}) has application type {}: this monitor starts UNIX programs (APPLTYPE(UNIX))",
            tm.process, tm.appl_type
        ));
    }
    let program = tm.appl_id.split_whitespace().next().unwrap_or_default();
    if program.is_empty() {
        return Err(format!(
            "PROCESS({}) has no APPLICID: ALTER PROCESS({}) APPLICID('/path/to/program')",
            tm.process, tm.process
        ));
    }
    if !findable(program) {
        return Err(format!(
            "PROCESS({}) names '{program}', which is not an executable program here: correct \
             its APPLICID",
            tm.process
        ));
    }
    let script = format!("{} \"$1\" {}", tm.appl_id, tm.env_data);
    let mut cmd = std::process::Command::new("/bin/sh");
    cmd.arg("-c")
        .arg(&script)
        .arg("sealmq-trigger")
        .arg(tm.tmc2(qmgr));
    if let Some(w) = who {
        use std::os::unix::process::CommandExt;
        // Group first (std sets it before the user, and drops supplementary groups).
        cmd.gid(w.gid)
            .uid(w.uid)
            .env("HOME", &w.home)
            .env("USER", &w.name)
            .env("LOGNAME", &w.name)
            // Accounts such as nobody have a home that does not exist.
            .current_dir(if Path::new(&w.home).is_dir() {
                w.home.as_str()
            } else {
                "/"
            });
    }
    let status = cmd
        .status()
        .map_err(|e| format!("cannot run /bin/sh for '{program}': {e}"))?;
    let as_whom = who.map(|w| format!(" as {}", w.name)).unwrap_or_default();
    if status.success() {
        Ok(format!(
            "started '{}'{as_whom} (PROCESS {})",
            tm.appl_id, tm.process
        ))
    } else {
        Err(format!(
            "'{}' (PROCESS {}) ended with {status}",
            tm.appl_id, tm.process
        ))
    }
}

pub fn run(a: TriggerMonitorArgs) -> CliResult {
    let who = identity(&a)?;
    let c = ConnArgs {
        qm: a.qm.clone(),
        queue: a.initq.clone(),
        conn: a.conn.clone(),
        tls: false,
        keystore: None,
        channel: a.channel.clone(),
        user: None,
        allow_cleartext_password: false,
        password_fd: None,
        reconnect: false,
        reconnect_timeout: 0,
        call_timeout: None,
    };
    let mut client = connect(&c, "sealmq-trigger-monitor")?;
    // The monitor reads definitions on every trigger: find out now if it may.
    let refused = match client.mqsc("DISPLAY QMGR QMNAME", true) {
        Ok((_, 0)) => None,
        Ok(_) => Some("2035 NOT_AUTHORIZED".to_string()),
        Err(e) => Some(e.to_string()),
    };
    if let Some(e) = refused {
        return Err(format!(
            "the trigger monitor reads each trigger's queue and PROCESS definitions from the \
             queue manager: run it as the queue manager's administrator, or grant its user DSP \
             on the queue manager and the queues ({e})"
        )
        .into());
    }
    let (h, _) = client
        .open(&a.initq, OpenOptions::input())
        .map_err(|e| format!("cannot open initiation queue {}: {e}", a.initq))?;
    println!(
        "sealmq: trigger monitor for {} on queue manager {} started",
        a.initq, a.qm
    );
    let gmo = GetOptions {
        wait: Some(Duration::from_millis(5000)),
        ..Default::default()
    };
    let mut served = 0u64;
    while a.count.is_none_or(|n| served < n) {
        let m = match client.get(h, &gmo) {
            Ok(m) => m,
            Err(e) if e.reason == ReasonCode::NoMsgAvailable => continue,
            Err(e) => {
                return Err(format!("trigger monitor on {}: {e}", a.initq).into());
            }
        };
        served += 1;
        let tm = sealmq_mqi::trigger::from_queue_manager(&m.md)
            .and_then(|()| TriggerMsg::decode(&m.payload).map_err(|e| e.to_string()))
            .and_then(|tm| {
                from_definitions(&mut client, &tm, &a.initq)
                    .map_err(|e| format!("trigger for queue {}: {e}", tm.queue))
            });
        match tm {
            Err(e) => eprintln!("sealmq: a message on {}: {e}", a.initq),
            Ok(tm) => match start(&tm, &a.qm, who.as_ref()) {
                Ok(what) => println!("sealmq: trigger for queue {}: {what}", tm.queue),
                Err(why) => eprintln!("sealmq: trigger for queue {}: {why}", tm.queue),
            },
        }
    }
    let _ = client.close(h);
    Ok(())
}

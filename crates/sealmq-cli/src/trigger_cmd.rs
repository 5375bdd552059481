//! `sealmq trigger-monitor QM [--initq Q]`: MQ's runmqtrm. It gets trigger messages from an
//! initiation queue and starts the program the triggered queue's PROCESS names, as runmqtrm
//! does for APPLTYPE(UNIX): `APPLICID 'MQTMC2' ENVRDATA` run by the shell (an ENVRDATA
//! ending in `&` runs the program in the background; otherwise the monitor waits for it).
//! The program reads the trigger (queue name, TRIGDATA, USERDATA, ...) from its argument.

use crate::CliResult;
use crate::app_cmd::{ConnArgs, connect};
use clap::Args;
use sealmq_engine::mqi::{GetOptions, OpenOptions};
use sealmq_engine::objects::DEFAULT_INITIATION_Q;
use sealmq_engine::trigger::TriggerMsg;
use sealmq_types::ReasonCode;
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
}

/// Whether the shell would find `program` (an absolute path, or a name on PATH).
fn findable(program: &str) -> bool {
    use sealmq_engine::services::is_executable;
    if program.contains('/') {
        return is_executable(std::path::Path::new(program));
    }
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| is_executable(&d.join(program))))
}

/// Starts the program of one trigger message; an error says what could not be started.
fn start(tm: &TriggerMsg, qmgr: &str) -> Result<String, String> {
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
    let status = std::process::Command::new("/bin/sh")
        .arg("-c")
        .arg(&script)
        .arg("sealmq-trigger")
        .arg(tm.tmc2(qmgr))
        .status()
        .map_err(|e| format!("cannot run /bin/sh for '{program}': {e}"))?;
    if status.success() {
        Ok(format!("started '{}' (PROCESS {})", tm.appl_id, tm.process))
    } else {
        Err(format!(
            "'{}' (PROCESS {}) ended with {status}",
            tm.appl_id, tm.process
        ))
    }
}

pub fn run(a: TriggerMonitorArgs) -> CliResult {
    let c = ConnArgs {
        qm: a.qm.clone(),
        queue: a.initq.clone(),
        conn: a.conn.clone(),
        tls: false,
        keystore: None,
        channel: a.channel.clone(),
        user: None,
        allow_cleartext_password: false,
    };
    let mut client = connect(&c, "sealmq-trigger-monitor")?;
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
            Err(e) if e.reason == ReasonCode::NoMsgAvailable.code() => continue,
            Err(e) => {
                return Err(format!("trigger monitor on {}: {e}", a.initq).into());
            }
        };
        served += 1;
        match TriggerMsg::decode(&m.payload) {
            Err(e) => eprintln!("sealmq: a message on {} is skipped: {e}", a.initq),
            Ok(tm) => match start(&tm, &a.qm) {
                Ok(what) => println!("sealmq: trigger for queue {}: {what}", tm.queue),
                Err(why) => eprintln!("sealmq: trigger for queue {}: {why}", tm.queue),
            },
        }
    }
    let _ = client.close(h);
    Ok(())
}

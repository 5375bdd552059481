//! `sealmq mqsc` as IBM MQ administrators use runmqsc: at a terminal (a real pseudo-terminal,
//! through util-linux's `script`) each command is answered before the next is typed; as a
//! client from another host's home over TLS, each command runs with the authority of the user
//! the channel maps to; scripts get runmqsc's transcript and exit codes.

mod common;
use common::*;
use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Everything the terminal has shown so far, read by a thread of its own.
fn screen(mut from: impl Read + Send + 'static) -> Arc<Mutex<String>> {
    let shown = Arc::new(Mutex::new(String::new()));
    let s2 = shown.clone();
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = from.read(&mut buf) {
            if n == 0 {
                break;
            }
            s2.lock()
                .unwrap()
                .push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    });
    shown
}

fn count(shown: &Arc<Mutex<String>>, what: &str) -> usize {
    shown.lock().unwrap().matches(what).count()
}

#[test]
fn at_a_terminal_each_command_is_answered_before_the_next_is_typed() {
    let h = Home::new();
    h.ok(&["create", "QT"]);
    h.ok(&["start", "QT", "--background"]);
    let exe = sealmq_exe();
    // `script` gives sealmq a pseudo-terminal for its standard input and output.
    let mut term = Command::new("script")
        .args([
            "-qfec",
            &format!("'{}' mqsc QT", exe.display()),
            "/dev/null",
        ])
        .env("SEALMQ_HOME", h.dir.path())
        .env("TERM", "xterm")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("util-linux's script runs");
    let shown = screen(term.stdout.take().unwrap());
    let mut keys = term.stdin.take().unwrap();
    let wait = |what: &str, n: usize| {
        wait_for(Duration::from_secs(20), what, || count(&shown, what) >= n);
    };
    // The banner and a prompt, before anything is typed.
    wait("Starting MQSC for queue manager QT.", 1);
    wait("QT> ", 1);
    keys.write_all(b"DEFINE QLOCAL(TERM.Q) DESCR('typed')\n")
        .unwrap();
    wait("AMQ8006I: IBM MQ queue created.", 1);
    // A continued command is answered when its last line is typed.
    keys.write_all(b"DISPLAY QLOCAL(TERM.Q) +\n").unwrap();
    wait("     : ", 1);
    assert_eq!(count(&shown, "AMQ8409I"), 0, "answered before it ended");
    keys.write_all(b"  DESCR CURDEPTH\n").unwrap();
    wait("AMQ8409I: Display Queue details.", 1);
    wait("DESCR(typed)", 1);
    keys.write_all(b"FROB\n").unwrap();
    wait("AMQ8405I: Syntax error detected", 1);
    keys.write_all(b"end\n").unwrap();
    let status = term.wait().unwrap();
    wait("3 MQSC commands read.", 1);
    wait("One command has a syntax error.", 1);
    assert_eq!(status.code(), Some(10), "{}", shown.lock().unwrap());
    // The queue is really there.
    let d = h.mqsc("QT", "DISPLAY QLOCAL(TERM.Q) DESCR\n");
    assert!(d.contains("DESCR(typed)"), "{d}");
    h.ok(&["stop", "QT"]);
}

#[test]
fn scripts_get_runmqscs_transcript_echo_switch_verify_mode_and_exit_codes() {
    let h = Home::new();
    h.ok(&["create", "QS"]);
    h.ok(&["start", "QS", "--background"]);
    let run = |args: &[&str], script: &str| h.run(args, Some(script));
    let o = run(
        &["mqsc", "QS"],
        "* set up\nDEFINE QLOCAL(S.Q) +\n  DESCR('one')\nPING QMGR\nDISPLAY QMGR PSMODE CMDLEVEL\n",
    );
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(
        out.starts_with(
            "       : * set up\n     1 : DEFINE QLOCAL(S.Q) +\n       :   DESCR('one')\n\
             AMQ8006I: IBM MQ queue created.\n     2 : PING QMGR\n\
             AMQ8415I: Ping IBM MQ Queue Manager command complete.\n\
             \x20    3 : DISPLAY QMGR PSMODE CMDLEVEL\nAMQ8408I: Display Queue Manager details.\n"
        ),
        "{out}"
    );
    assert!(
        out.contains("PSMODE(ENABLED)") && out.contains("CMDLEVEL(940)"),
        "{out}"
    );
    assert!(
        out.ends_with(
            "3 MQSC commands read.\nNo commands have a syntax error.\n\
             All valid MQSC commands were processed.\n"
        ),
        "{out}"
    );
    // -e: no echo; a command that fails: exit code 10, MQ's message, then sealmq's detail.
    let o = run(&["mqsc", "QS", "-e"], "DELETE QLOCAL(NO.SUCH.Q)\n");
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(10), "{out}");
    assert!(
        out.starts_with("AMQ8147E: IBM MQ object NO.SUCH.Q not found.\nSMQ0900E: line 1: "),
        "{out}"
    );
    assert!(!out.contains("     1 : "), "{out}");
    // -v: the syntax is checked, nothing runs.
    let o = run(
        &["mqsc", "QS", "-v"],
        "DEFINE QLOCAL(V.Q)\nFROB QLOCAL(X)\n",
    );
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(10), "{out}");
    assert!(out.contains("One command has a syntax error."), "{out}");
    let d = run(&["mqsc", "QS"], "DISPLAY QLOCAL(V.Q)\n");
    assert_eq!(d.status.code(), Some(10), "-v defined V.Q: {d:?}");
    // No queue manager to run on: 20, as runmqsc.
    let o = run(&["mqsc", "NOSUCH"], "DISPLAY QMGR\n");
    assert_eq!(o.status.code(), Some(20), "{o:?}");
    let port = free_port().to_string();
    let o = run(
        &["mqsc", "QS", "--conn", &format!("127.0.0.1:{port}")],
        "PING QMGR\n",
    );
    assert_eq!(o.status.code(), Some(20), "{o:?}");
    h.ok(&["stop", "QS"]);
}

#[test]
fn as_a_client_over_tls_each_command_needs_the_mapped_users_authority() {
    let h = Home::new();
    let port = free_port();
    h.ok(&["create", "QR"]);
    // The administrator's workstation: a home of its own with no queue manager in it.
    let desk = Home::new();
    let ops = desk.dir.path().join("ops");
    let addr = h.start_tls_for("QR", port, &ops, "CN=ops,O=Example");
    h.mqsc(
        "QR",
        "DEFINE QLOCAL(APP.Q)\n\
         DEFINE CHANNEL(ADMIN.SVRCONN) CHLTYPE(SVRCONN) SSLCIPH(ANY)\n\
         SET CHLAUTH('ADMIN.SVRCONN') TYPE(SSLPEERMAP) SSLPEER('CN=ops,O=Example') USERSRC(MAP) MCAUSER('opsuser')\n\
         SET AUTHREC OBJTYPE(QMGR) PRINCIPAL('opsuser') AUTHADD(CONNECT)\n",
    );
    let remote = |script: &str| {
        let o = desk.run(
            &[
                "mqsc",
                "QR",
                "--conn",
                &addr,
                "--channel",
                "ADMIN.SVRCONN",
                "--tls",
                "--keystore",
                &ops.to_string_lossy(),
            ],
            Some(script),
        );
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stdout).into_owned(),
        )
    };
    // Connected, but without authority every command is refused with MQ's AMQ8135E.
    let (code, out) = remote("DISPLAY QMGR QMNAME\nDEFINE QLOCAL(OPS.Q1)\n");
    assert_eq!(code, Some(10), "{out}");
    assert_eq!(out.matches("AMQ8135E: Not authorized.").count(), 2, "{out}");
    assert!(out.contains("'opsuser' is not authorized to CRT"), "{out}");
    assert!(!h.mqsc("QR", "DISPLAY QUEUE(*)\n").contains("OPS.Q1"));
    // Granted DSP on the queue manager and CRT, DSP on OPS.* queues: those, and only those.
    h.mqsc(
        "QR",
        "SET AUTHREC OBJTYPE(QMGR) PRINCIPAL('opsuser') AUTHADD(DSP)\n\
         SET AUTHREC PROFILE('OPS.*') OBJTYPE(QUEUE) PRINCIPAL('opsuser') AUTHADD(CRT,DSP)\n",
    );
    let (code, out) = remote(
        "DISPLAY QMGR QMNAME PLATFORM\nDEFINE QLOCAL(OPS.Q1)\nDEFINE QLOCAL(APP.Q2)\nDISPLAY QLOCAL(*)\n",
    );
    assert_eq!(code, Some(10), "{out}");
    assert!(
        out.contains("QMNAME(QR)") && out.contains("PLATFORM(UNIX)"),
        "{out}"
    );
    assert_eq!(
        out.matches("AMQ8006I: IBM MQ queue created.").count(),
        1,
        "{out}"
    );
    assert!(
        out.contains("'opsuser' is not authorized to CRT on QUEUE 'APP.Q2'"),
        "{out}"
    );
    // A generic DISPLAY shows what the user may display: OPS.Q1, not APP.Q.
    let shown = out.split("     4 : ").nth(1).unwrap_or_default();
    assert!(
        shown.contains("QUEUE(OPS.Q1)") && !shown.contains("APP.Q"),
        "{out}"
    );
    assert!(
        h.mqsc("QR", "DISPLAY QLOCAL(OPS.Q1)\n")
            .contains("QUEUE(OPS.Q1)")
    );
    // What the remote user changed is in the queue manager's error log, with who.
    let log = h.qm_dir("QR").join("errors").join("SEALMQ01.LOG");
    wait_for(
        Duration::from_secs(10),
        "the remote change in the error log",
        || {
            std::fs::read_to_string(&log).is_ok_and(|l| {
                l.lines().any(|l| {
                    l.contains("remote MQSC") && l.contains("opsuser") && l.contains("OPS.Q1")
                })
            })
        },
    );
    h.ok(&["stop", "QR"]);
}

/// MQSC from a client runs on the blocking pool like any request: only the administrator's
/// own socket gets a thread of its own per command, so a remote flood of MQSC makes none.
#[test]
fn remote_mqsc_makes_no_thread_per_command() {
    let h = Home::new();
    let port = free_port();
    h.ok(&["create", "QF"]);
    h.start_tcp("QF", port);
    h.mqsc(
        "QF",
        "DEFINE CHANNEL(ADMIN.SVRCONN) CHLTYPE(SVRCONN) MCAUSER('opsuser')\n\
         SET AUTHREC OBJTYPE(QMGR) PRINCIPAL('opsuser') AUTHADD(CONNECT,DSP)\n",
    );
    let pid = h.pid("QF");
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let seen = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let watcher = {
        let (stop, seen) = (stop.clone(), seen.clone());
        std::thread::spawn(move || {
            let tasks = format!("/proc/{pid}/task");
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                for t in std::fs::read_dir(&tasks).into_iter().flatten().flatten() {
                    let comm = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default();
                    if comm.trim() == "sealmq-admin" {
                        seen.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                }
            }
        })
    };
    let script = "DISPLAY QMGR QMNAME\n".repeat(2000);
    let o = h.run(
        &[
            "mqsc",
            "QF",
            "-e",
            "--conn",
            &format!("127.0.0.1:{port}"),
            "--channel",
            "ADMIN.SVRCONN",
        ],
        Some(&script),
    );
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    watcher.join().unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(out.contains("2000 MQSC commands read."), "{out}");
    assert_eq!(
        seen.load(std::sync::atomic::Ordering::Relaxed),
        0,
        "remote MQSC ran on threads of its own"
    );
    h.ok(&["stop", "QF"]);
}

//! Issue 27: an application that dies while its get waits is noticed within its channel's
//! heartbeat interval (HBINT), not when the wait ends, and its unit of work is backed out then.
//!
//! The application is this test binary run again as a child (`dead_client_child`, ignored
//! unless the parent runs it): over TCP through a SVRCONN channel with HBINT(2), or on the
//! Unix socket, it gets a message under syncpoint (holding it) and then waits ten minutes for
//! another. The parent kills it with SIGKILL and expects the held message back on its queue
//! within a few seconds.

mod common;

use common::{Home, free_port, wait_for};
use std::time::{Duration, Instant};

const CHILD_ENV: &str = "SEALMQ_DEAD_CLIENT";

/// The child: `SEALMQ_DEAD_CLIENT` is `tcp ADDR` or `local QM_DIR`.
#[test]
#[ignore = "run by dead_client_* as a child process"]
fn dead_client_child() {
    use sealmq_engine::mqi::{GetOptions, OpenOptions};
    let Ok(how) = std::env::var(CHILD_ENV) else {
        return;
    };
    let mut c = match how.split_once(' ') {
        Some(("tcp", addr)) => {
            sealmq_client::Client::connect_tcp_channel(addr, "APP.SVRCONN", "dying").unwrap()
        }
        Some(("local", dir)) => {
            sealmq_client::Client::connect_local(std::path::Path::new(dir), "dying").unwrap()
        }
        _ => panic!("{CHILD_ENV}={how}"),
    };
    let (held, _) = c.open("HELD.Q", OpenOptions::input()).unwrap();
    let (wait, _) = c.open("WAIT.Q", OpenOptions::input()).unwrap();
    let gmo = GetOptions {
        syncpoint: true,
        ..Default::default()
    };
    c.get(held, &gmo).unwrap();
    println!("holding");
    let long = GetOptions {
        wait: Some(Duration::from_secs(600)),
        ..Default::default()
    };
    let _ = c.get(wait, &long);
}

fn run_and_kill(h: &Home, qm: &str, how: &str) -> Duration {
    use std::io::BufRead;
    h.ok(&["put", qm, "HELD.Q", "--message", "held"]);
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "dead_client_child", "--ignored", "--nocapture"])
        .env(CHILD_ENV, how)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let out = child.stdout.take().unwrap();
    let mut lines = std::io::BufReader::new(out).lines();
    assert!(
        lines.any(|l| l.is_ok_and(|l| l.contains("holding"))),
        "the child never held its message"
    );
    // Held under the child's unit of work: no one else gets it.
    let err = h.fails(&["get", qm, "HELD.Q"]);
    assert!(err.contains("2033"), "{err}");
    // Its get now waits (ten minutes); the child dies without a word.
    wait_for(Duration::from_secs(30), "the child's get to wait", || {
        h.mqsc(qm, "DISPLAY QSTATUS(WAIT.Q) WAITING\n")
            .contains("WAITING(1)")
    });
    child.kill().unwrap();
    let killed = Instant::now();
    child.wait().unwrap();
    wait_for(
        Duration::from_secs(30),
        "the dead application's message back",
        || h.run(&["get", qm, "HELD.Q"], None).status.success(),
    );
    killed.elapsed()
}

#[test]
fn an_application_that_dies_in_a_get_wait_is_noticed_within_hbint_and_backed_out() {
    let h = Home::new();
    h.ok(&["create", "QL"]);
    let port = free_port();
    h.start_tcp("QL", port);
    h.mqsc(
        "QL",
        "DEFINE QLOCAL(HELD.Q)\nDEFINE QLOCAL(WAIT.Q)\n\
         DEFINE CHANNEL(APP.SVRCONN) CHLTYPE(SVRCONN) MCAUSER('app') HBINT(2)\n\
         SET AUTHREC OBJTYPE(QMGR) PRINCIPAL('app') AUTHADD(CONNECT)\n\
         SET AUTHREC PROFILE('*.Q') OBJTYPE(QUEUE) PRINCIPAL('app') AUTHADD(GET,PUT,BROWSE)\n",
    );
    let tcp = run_and_kill(&h, "QL", &format!("tcp 127.0.0.1:{port}"));
    let dir = h.qm_dir("QL");
    let local = run_and_kill(&h, "QL", &format!("local {}", dir.display()));
    eprintln!(
        "a dead application's held message came back after {tcp:?} (TCP, HBINT 2 s) and {local:?} (Unix socket, 5 s)"
    );
    // Within the interval and a little (the kill, the look, the backout, the get).
    assert!(tcp < Duration::from_secs(8), "{tcp:?}");
    assert!(local < Duration::from_secs(10), "{local:?}");
    h.ok(&["stop", "QL"]);
}

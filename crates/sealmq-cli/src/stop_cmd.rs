//! `sealmq stop`: ends a queue manager's server (quiescing, or `--immediate`) and waits for it
//! to be gone; `sealmq ha drain` stops an instance the same way.

use crate::CliResult;
use crate::home::{exists, running};
use clap::Args;
use sealmq_client::Client;
use sealmq_types::ReasonCode;
use std::time::{Duration, Instant};

#[derive(Args)]
pub struct StopArgs {
    pub qm: String,
    /// Do not wait for applications to finish their units of work.
    #[arg(long)]
    pub immediate: bool,
}

pub fn stop(a: StopArgs) -> CliResult {
    let dir = exists(&a.qm)?;
    if !running(&dir) {
        return Err(format!("queue manager '{}' is not running", a.qm).into());
    }
    let pid: Option<i32> = std::fs::read_to_string(dir.join("qm.pid"))
        .ok()
        .and_then(|p| p.trim().parse().ok());
    let ended = dir.join(sealmq_server::ENDED_FILE);
    let _ = std::fs::remove_file(&ended);
    let mut c = match Client::connect_local(&dir, "sealmq-stop") {
        Ok(c) => c,
        // A replica instance serves nobody: it ends on SIGTERM (its Raft log is synced at
        // every append, so nothing is lost).
        Err(e) if e.reason == sealmq_server::standby::REPLICA_REASON && pid.is_some() => {
            return stop_replica(&a.qm, &dir, pid.unwrap_or_default());
        }
        Err(e) => return Err(e.to_string().into()),
    };
    match c.stop(a.immediate) {
        Ok(()) => {}
        // An immediate stop may close our connection before its answer arrives (2009), and a
        // queue manager already ending answers 2161: either way it is ending — wait for it.
        Err(e)
            if e.reason == ReasonCode::ConnectionBroken
                || e.reason == ReasonCode::QMgrQuiescing => {}
        Err(e) => return Err(e.to_string().into()),
    }
    drop(c); // our own connection must not hold up a controlled stop
    let deadline = Instant::now() + Duration::from_secs(60);
    // Returns once the process has exited, not merely released its lock.
    while running(&dir) || pid.is_some_and(process_alive) {
        if Instant::now() > deadline {
            return Err(format!("queue manager '{}' did not end within 60 s", a.qm).into());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    match std::fs::read_to_string(&ended) {
        Ok(s) if s.trim() == "ok" => {}
        Ok(s) => {
            return Err(format!(
                "queue manager '{}' ended, but its final checkpoint {}; the next start replays \
                 the log instead (see {})",
                a.qm,
                s.trim(),
                dir.join("qm.log").display()
            )
            .into());
        }
        Err(_) => {
            return Err(format!(
                "queue manager '{}' ended without saying how (see {})",
                a.qm,
                dir.join("qm.log").display()
            )
            .into());
        }
    }
    println!("Queue manager {} ended.", a.qm);
    Ok(())
}

fn stop_replica(qm: &str, dir: &std::path::Path, pid: i32) -> CliResult {
    // SAFETY: kill(2) with a pid read from the instance's own qm.pid and a plain signal.
    #[allow(unsafe_code)]
    let r = unsafe { libc::kill(pid, libc::SIGTERM) };
    if r != 0 {
        return Err(format!("cannot signal queue manager '{qm}' (pid {pid})").into());
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    while running(dir) || process_alive(pid) {
        if Instant::now() > deadline {
            return Err(format!("queue manager '{qm}' did not end within 60 s").into());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    println!("Queue manager {qm} (a replica instance) ended.");
    Ok(())
}

/// Whether process `pid` still exists (a zombie waiting for its parent counts as gone).
fn process_alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the command name in parentheses.
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X"),
        Err(_) => false,
    }
}

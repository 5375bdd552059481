//! Crash durability: `kill -9` at 24 different moments of concurrent persistent work.
//!
//! The durability contract checked, after every kill and restart:
//! - a message whose put commit returned (`C`) is on the queue exactly once, unless a getter's
//!   commit of it returned (`G`);
//! - a message whose get commit returned (`G`) is gone;
//! - a message appears only if its put was at least attempted (`P`); one whose commit had not
//!   returned may be there or not (the commit may have reached the log), and the same holds
//!   for a get in flight (`g` without `G`);
//! - no message appears twice.
//!
//! The queue is carried from round to round, so recovery of recovered state is exercised too.

use sealmq_engine::*;
use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[derive(Default)]
struct Seen {
    attempted: HashSet<String>,
    committed: HashSet<String>,
    got_inflight: HashSet<String>,
    got: HashSet<String>,
}

fn run_round(dir: &std::path::Path, round: usize, run_for: Duration, seen: &mut Seen) -> usize {
    let mut child = Command::new(env!("CARGO_BIN_EXE_sealmq-engine-torture"))
        .arg(dir)
        .arg(round.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start the torture child");
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut lines = Vec::new();
    let start_deadline = Instant::now() + Duration::from_secs(60);
    // Wait for READY, then let it work for `run_for`, then SIGKILL.
    loop {
        let l = rx
            .recv_timeout(start_deadline.saturating_duration_since(Instant::now()))
            .expect("child never became ready");
        if l == "READY" {
            break;
        }
    }
    let until = Instant::now() + run_for;
    while let Ok(l) = rx.recv_timeout(until.saturating_duration_since(Instant::now())) {
        lines.push(l);
        if Instant::now() >= until {
            break;
        }
    }
    child.kill().expect("SIGKILL");
    let _ = child.wait();
    // Lines already written before the kill are still in the pipe.
    lines.extend(rx.iter());
    let _ = reader.join();
    let commits = lines.iter().filter(|l| l.starts_with("C ")).count();
    for l in &lines {
        let mut parts = l.split(' ');
        match parts.next() {
            Some("P") => seen.attempted.extend(parts.map(String::from)),
            Some("C") => seen.committed.extend(parts.map(String::from)),
            Some("g") => seen.got_inflight.extend(parts.map(String::from)),
            Some("G") => seen.got.extend(parts.map(String::from)),
            _ => {}
        }
    }
    commits
}

fn verify(dir: &std::path::Path, seen: &mut Seen) {
    // The torture's small cache: the browse below reads most messages from queue files.
    let mut cfg = QmConfig::new("TORTURE", dir);
    cfg.msg_cache_bytes = Some(64 << 10);
    let (qm, _) = sealmq_engine::start(cfg).expect("restart after SIGKILL");
    let c = Connection::connect(&qm, "check", "check").unwrap();
    let h = c.open("TQ", OpenOptions::browse()).unwrap();
    let mut present: HashMap<String, usize> = HashMap::new();
    let mut opt = GetOptions {
        browse: Browse::First,
        ..Default::default()
    };
    while let Ok(g) = c.get(&h, opt.clone()) {
        *present
            .entry(String::from_utf8(g.payload).unwrap())
            .or_default() += 1;
        opt.browse = Browse::Next;
    }
    for (id, n) in &present {
        assert_eq!(*n, 1, "message {id} is on the queue {n} times");
        assert!(
            seen.attempted.contains(id),
            "message {id} appeared but was never put"
        );
        assert!(
            !seen.got.contains(id),
            "message {id} was got and committed but is back"
        );
    }
    for id in &seen.committed {
        if !seen.got.contains(id) && !seen.got_inflight.contains(id) {
            assert!(present.contains_key(id), "committed message {id} is lost");
        }
    }
    // Settle the in-flight outcomes for the next round: what is present was committed, what
    // was in flight to a getter and is gone was got.
    for id in present.keys() {
        seen.committed.insert(id.clone());
    }
    for id in seen.got_inflight.drain().collect::<Vec<_>>() {
        if !present.contains_key(&id) {
            seen.got.insert(id);
        }
    }
    drop(c);
    qm.close_log_for_tests();
}

#[test]
fn kill_dash_nine_never_loses_or_duplicates_committed_persistent_messages() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("QM");
    let mut seen = Seen::default();
    let mut total_commits = 0;
    for round in 0..24 {
        // Kill moments spread from just after start to well into steady work.
        let run_for = Duration::from_millis(20 + (round as u64 * 37) % 400);
        total_commits += run_round(&dir, round, run_for, &mut seen);
        verify(&dir, &mut seen);
    }
    assert!(
        total_commits > 50,
        "the child committed too little to test anything ({total_commits})"
    );
    // Messages waited in queue files (TQ's directory is its name in hexadecimal).
    let tq = dir.join("queues").join("5451");
    let data = std::fs::read_dir(&tq)
        .map(|r| {
            r.flatten()
                .filter(|e| e.path().extension().is_some_and(|x| x == "qd"))
                .count()
        })
        .unwrap_or(0);
    assert!(data > 0, "no queue data files in {}", tq.display());
}

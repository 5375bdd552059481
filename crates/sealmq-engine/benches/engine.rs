//! Engine benchmarks (issue 3), run side by side so ratios are meaningful on a noisy machine:
//!
//! `cargo bench -p sealmq-engine --bench engine -- [fsync|putters|nonpersistent|restart] [--seconds N] [--messages N]`
//!
//! - `fsync`: a raw loop of 1 KB write + fdatasync on the same disk (the floor for one committer).
//! - `putters`: persistent put + commit of 1 KB with 1, 4 and 16 concurrent putters (group commit).
//! - `nonpersistent`: non-persistent put + get of 1 KB in process, one thread.
//! - `restart`: start time with N persistent messages queued (default 1,000,000), after a clean
//!   shutdown (checkpoint only) and after a crash with a log tail.

use sealmq_engine::*;
use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

fn arg(name: &str, default: u64) -> u64 {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn wanted(name: &str) -> bool {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--") && a.parse::<u64>().is_err())
        .collect();
    args.is_empty() || args.iter().any(|a| a == name)
}

fn fsync_loop(dir: &std::path::Path, secs: u64) -> f64 {
    let path = dir.join("fsync.dat");
    let mut f = std::fs::File::create(&path).expect("file");
    let buf = [0x5au8; 1024];
    let start = Instant::now();
    let mut n = 0u64;
    while start.elapsed() < Duration::from_secs(secs) {
        f.write_all(&buf).expect("write");
        f.sync_data().expect("sync");
        n += 1;
    }
    n as f64 / start.elapsed().as_secs_f64()
}

fn putters(dir: &std::path::Path, n: usize, secs: u64) -> (f64, f64) {
    let qm =
        sealmq_engine::create(QmConfig::new("BENCH", dir.join(format!("put{n}")))).expect("qm");
    let mut d = QueueDef::new("Q", QType::Local);
    d.max_depth = u32::MAX;
    qm.define(d, false).expect("define");
    let stop = Arc::new(AtomicBool::new(false));
    let count = Arc::new(AtomicU64::new(0));
    let payload = vec![0x42u8; 1024];
    let threads: Vec<_> = (0..n)
        .map(|_| {
            let (qm, stop, count, payload) =
                (qm.clone(), stop.clone(), count.clone(), payload.clone());
            std::thread::spawn(move || {
                let c = Connection::connect(&qm, "bench", "putter").expect("connect");
                let h = c.open("Q", OpenOptions::output()).expect("open");
                while !stop.load(Ordering::Relaxed) {
                    let mut md = Md {
                        persistence: Persistence::Persistent,
                        ..Md::default()
                    };
                    c.put(
                        &h,
                        &mut md,
                        &payload,
                        PutOptions {
                            syncpoint: true,
                            ..Default::default()
                        },
                    )
                    .expect("put");
                    c.commit().expect("commit");
                    count.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    let before = qm.log_stats();
    let start = Instant::now();
    std::thread::sleep(Duration::from_secs(secs));
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        t.join().expect("join");
    }
    let el = start.elapsed().as_secs_f64();
    let s = qm.log_stats();
    let per_sync = (s.records - before.records) as f64 / (s.batches - before.batches).max(1) as f64;
    (count.load(Ordering::Relaxed) as f64 / el, per_sync)
}

fn nonpersistent(dir: &std::path::Path, secs: u64) -> f64 {
    let qm = sealmq_engine::create(QmConfig::new("BENCH", dir.join("np"))).expect("qm");
    qm.define(QueueDef::new("Q", QType::Local), false)
        .expect("define");
    let c = Connection::connect(&qm, "bench", "np").expect("connect");
    let out = c.open("Q", OpenOptions::output()).expect("open");
    let inp = c.open("Q", OpenOptions::input()).expect("open");
    let payload = vec![0x42u8; 1024];
    let start = Instant::now();
    let mut n = 0u64;
    while start.elapsed() < Duration::from_secs(secs) {
        for _ in 0..1000 {
            let mut md = Md {
                persistence: Persistence::NotPersistent,
                ..Md::default()
            };
            c.put(&out, &mut md, &payload, PutOptions::default())
                .expect("put");
            c.get(&inp, GetOptions::default()).expect("get");
        }
        n += 1000;
    }
    n as f64 / start.elapsed().as_secs_f64()
}

fn restart(dir: &std::path::Path, messages: u64) -> (f64, f64, f64, u64) {
    let cfg = QmConfig::new("BENCH", dir.join("restart"));
    let qm = sealmq_engine::create(cfg.clone()).expect("qm");
    let mut d = QueueDef::new("Q", QType::Local);
    d.max_depth = u32::MAX;
    qm.define(d, false).expect("define");
    let payload = vec![0x42u8; 1024];
    let t = Instant::now();
    put_persistent(&qm, "load", messages, &payload)
        .commit()
        .expect("commit");
    let load = t.elapsed().as_secs_f64();
    qm.shutdown().expect("shutdown");
    drop(qm);
    let t = Instant::now();
    let (qm, rep) = sealmq_engine::start(cfg.clone()).expect("start");
    let clean = t.elapsed().as_secs_f64();
    assert_eq!(rep.messages, messages);
    // A crash with a tail of 10,000 more messages after the checkpoint.
    drop(put_persistent(&qm, "tail", 10_000, &payload));
    qm.close_log_for_tests();
    drop(qm);
    let t = Instant::now();
    let (_qm, rep) = sealmq_engine::start(cfg).expect("start");
    let crash = t.elapsed().as_secs_f64();
    (load, clean, crash, rep.records_replayed)
}

fn main() {
    if std::env::args().any(|a| a == "--test" || a == "--list") {
        return; // `cargo test --benches` / `cargo bench --no-run` helpers
    }
    let secs = arg("--seconds", 3);
    let tmp =
        tempfile::tempdir_in(std::env::var("SEALMQ_BENCH_DIR").unwrap_or_else(|_| ".".into()))
            .expect("tempdir");
    let dir = tmp.path();
    println!("{:<44} {:>14}", "scenario", "result");
    let mut fsync_rate = 0.0;
    if wanted("fsync") || wanted("putters") {
        fsync_rate = fsync_loop(dir, secs);
        println!(
            "{:<44} {:>11.0} /s",
            "raw 1 KB write+fdatasync loop", fsync_rate
        );
    }
    if wanted("putters") {
        let mut one = 0.0;
        for n in [1usize, 4, 16] {
            let (rate, per_sync) = putters(dir, n, secs);
            if n == 1 {
                one = rate;
            }
            println!(
                "{:<44} {:>11.0} /s  ({:.2}x one putter, {:.2}x raw fsync, {:.1} records per sync)",
                format!("persistent put+commit 1 KB, {n} putters"),
                rate,
                rate / one,
                rate / fsync_rate,
                per_sync
            );
        }
    }
    if wanted("nonpersistent") {
        let rate = nonpersistent(dir, secs);
        println!(
            "{:<44} {:>11.0} /s  (one thread)",
            "non-persistent put+get 1 KB in process", rate
        );
    }
    if wanted("restart") {
        let n = arg("--messages", 1_000_000);
        let (load, clean, crash, replayed) = restart(dir, n);
        println!(
            "{:<44} {:>11.1} s",
            format!("load {n} persistent 1 KB messages"),
            load
        );
        println!(
            "{:<44} {:>11.2} s",
            format!("restart with {n} queued (clean)"),
            clean
        );
        println!(
            "{:<44} {:>11.2} s  ({replayed} log records replayed)",
            format!("restart with {n} + 10000 (after crash)"),
            crash
        );
    }
}

/// Puts `n` persistent messages to Q, committing every 1,000; returns the connection with
/// the last, uncommitted, part of its work.
fn put_persistent(qm: &Arc<QueueManager>, app: &str, n: u64, payload: &[u8]) -> Connection {
    let c = Connection::connect(qm, "bench", app).expect("connect");
    let h = c.open("Q", OpenOptions::output()).expect("open");
    for i in 0..n {
        let mut md = Md {
            persistence: Persistence::Persistent,
            ..Md::default()
        };
        let pmo = PutOptions {
            syncpoint: true,
            ..Default::default()
        };
        c.put(&h, &mut md, payload, pmo).expect("put");
        if i % 1000 == 999 {
            c.commit().expect("commit");
        }
    }
    c
}

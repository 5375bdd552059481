//! `sealmq-engine-torture DIR ROUND`: runs concurrent persistent puts and gets under syncpoint
//! against the queue manager in DIR (created on first use) until it is killed, reporting on
//! standard output, one flushed line each:
//!
//! - `P <id>...` before a putter commits, `C <id>...` once its commit returned;
//! - `g <id>` once a getter got a message under syncpoint, `G <id>` once that commit returned.
//!
//! The crash test kills it with SIGKILL at chosen moments and checks the queue against these
//! lines. Ids are `ROUND-THREAD-N`, unique across rounds.

use sealmq_engine::*;
use std::io::Write;
use std::sync::Arc;

fn say(line: &str) {
    let out = std::io::stdout();
    let mut l = out.lock();
    let _ = writeln!(l, "{line}");
    let _ = l.flush();
}

fn main() {
    let mut args = std::env::args().skip(1);
    let (Some(dir), Some(round)) = (args.next(), args.next()) else {
        eprintln!("usage: sealmq-engine-torture DIR ROUND");
        std::process::exit(2);
    };
    // A small cache and frequent checkpoints: most queued messages are only in queue files
    // when the kill comes. Small queue files and mixed priorities (high ones are got first)
    // leave files sparse, so compaction runs too.
    let mut cfg = QmConfig::new("TORTURE", &dir);
    cfg.msg_cache_bytes = Some(64 << 10);
    cfg.checkpoint_bytes = 128 << 10;
    cfg.queue_file_bytes = Some(16 << 10);
    let qm = if std::path::Path::new(&dir).join("log").exists() {
        match sealmq_engine::start(cfg) {
            Ok((qm, _)) => qm,
            Err(e) => {
                eprintln!("start failed: {e}");
                std::process::exit(1);
            }
        }
    } else {
        match sealmq_engine::create(cfg) {
            Ok(qm) => qm,
            Err(e) => {
                eprintln!("create failed: {e}");
                std::process::exit(1);
            }
        }
    };
    if qm.queue_def("TQ").is_err() {
        let mut d = QueueDef::new("TQ", QType::Local);
        d.max_depth = 10_000_000;
        if let Err(e) = qm.define(d, false) {
            eprintln!("define failed: {e}");
            std::process::exit(1);
        }
    }
    say("READY");
    let mut threads = Vec::new();
    for t in 0..3 {
        let qm: Arc<QueueManager> = qm.clone();
        let round = round.clone();
        threads.push(std::thread::spawn(move || {
            let c = Connection::connect(&qm, "torture", "putter").unwrap_or_else(|e| panic!("{e}"));
            let h = c
                .open("TQ", OpenOptions::output())
                .unwrap_or_else(|e| panic!("{e}"));
            let mut n = 0u64;
            loop {
                let batch = 1 + (n % 4) as usize;
                let mut ids = Vec::new();
                for _ in 0..batch {
                    let id = format!("{round}-{t}-{n}");
                    n += 1;
                    let mut md = Md {
                        persistence: Persistence::Persistent,
                        priority: (n % 10) as i32,
                        ..Md::default()
                    };
                    if c.put(
                        &h,
                        &mut md,
                        id.as_bytes(),
                        PutOptions {
                            syncpoint: true,
                            ..Default::default()
                        },
                    )
                    .is_err()
                    {
                        continue;
                    }
                    ids.push(id);
                }
                say(&format!("P {}", ids.join(" ")));
                if c.commit().is_ok() {
                    say(&format!("C {}", ids.join(" ")));
                }
            }
        }));
    }
    for _ in 0..2 {
        let qm: Arc<QueueManager> = qm.clone();
        threads.push(std::thread::spawn(move || {
            let c = Connection::connect(&qm, "torture", "getter").unwrap_or_else(|e| panic!("{e}"));
            let h = c
                .open("TQ", OpenOptions::input())
                .unwrap_or_else(|e| panic!("{e}"));
            loop {
                let opts = GetOptions {
                    syncpoint: true,
                    wait: Some(std::time::Duration::from_millis(50)),
                    ..Default::default()
                };
                match c.get(&h, opts) {
                    Ok(g) => {
                        let id = String::from_utf8_lossy(&g.payload).into_owned();
                        say(&format!("g {id}"));
                        if c.commit().is_ok() {
                            say(&format!("G {id}"));
                        }
                    }
                    Err(_) => continue,
                }
            }
        }));
    }
    for t in threads {
        let _ = t.join();
    }
}

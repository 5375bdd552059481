//! `sealmq bench drain --messages N --size BYTES [--persistent] [--consumers K] [--window N]`:
//! fills a queue with N messages (one putter, a commit every 1,000 — `sealmq put --syncpoint
//! 1000`), then drains it with K consumers, once per way of getting, side by side in one run:
//! plain gets, gets under syncpoint (a commit every 100), asynchronous consume outside a unit
//! of work, and asynchronous consume under syncpoint (100 per commit). Each drain reports its
//! rate and the queue manager's and the applications' CPU per message; `--rounds` interleaves
//! and ends with medians.

use super::app::{open_q, per_second, put_plain};
use super::common::{BenchArgs, cpu_seconds};
use crate::CliResult;
use sealmq_client::{Client, ConsumeMode, ConsumeOptions};
use sealmq_engine::Persistence;
use sealmq_engine::mqi::{GetOptions, OpenOptions};
use sealmq_types::ReasonCode;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

const QUEUE: &str = "BENCH.DRAIN";
/// Messages per commit of the filling putter.
const FILL_BATCH: u64 = 1000;
/// Messages per commit of the draining ways under syncpoint.
const SYNC_BATCH: u32 = 100;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Way {
    Get,
    GetSyncpoint,
    Async,
    AsyncSyncpoint,
}

impl Way {
    const ALL: [Way; 4] = [Way::Get, Way::GetSyncpoint, Way::Async, Way::AsyncSyncpoint];

    fn name(self) -> &'static str {
        match self {
            Way::Get => "get",
            Way::GetSyncpoint => "get --syncpoint 100",
            Way::Async => "async consume",
            Way::AsyncSyncpoint => "async consume --syncpoint 100",
        }
    }
}

struct Run {
    rate: f64,
    qm_us: f64,
    app_us: f64,
}

fn fill(dir: &Path, n: u64, size: usize, persistent: bool) -> CliResult<f64> {
    let mut c = Client::connect_local(dir, "bench-fill").map_err(|e| e.to_string())?;
    let h = open_q(&mut c, QUEUE, OpenOptions::output())?;
    let payload = vec![0x6b_u8; size];
    let t = Instant::now();
    for i in 0..n {
        put_plain(&mut c, h, Persistence::of(persistent), &payload, true)?;
        if (i + 1) % FILL_BATCH == 0 {
            c.commit().map_err(|e| e.to_string())?;
        }
    }
    c.commit().map_err(|e| e.to_string())?;
    let rate = per_second(n, t);
    let _ = c.close(h);
    Ok(rate)
}

/// One consumer: takes messages until the queue stays empty; returns when it took the last.
fn consume(dir: PathBuf, way: Way, window: u32, taken: Arc<AtomicU64>) -> Result<Instant, String> {
    let mut c = Client::connect_local(&dir, "bench-drain").map_err(|e| e.to_string())?;
    let h = open_q(&mut c, QUEUE, OpenOptions::input())?;
    let mut last = Instant::now();
    match way {
        Way::Get | Way::GetSyncpoint => {
            let sync = way == Way::GetSyncpoint;
            let gmo = GetOptions {
                syncpoint: sync,
                ..Default::default()
            };
            let mut n = 0u64;
            loop {
                match c.get(h, &gmo) {
                    Ok(_) => {
                        n += 1;
                        taken.fetch_add(1, Ordering::Relaxed);
                        if sync && n.is_multiple_of(u64::from(SYNC_BATCH)) {
                            c.commit().map_err(|e| e.to_string())?;
                        }
                        last = Instant::now();
                    }
                    Err(e) if e.reason == ReasonCode::NoMsgAvailable => break,
                    Err(e) => return Err(e.to_string()),
                }
            }
            if sync {
                c.commit().map_err(|e| e.to_string())?;
                last = Instant::now();
            }
        }
        Way::Async | Way::AsyncSyncpoint => {
            let sync = way == Way::AsyncSyncpoint;
            let opts = ConsumeOptions {
                mode: if sync {
                    ConsumeMode::Syncpoint
                } else {
                    ConsumeMode::Auto
                },
                window,
                batch: if sync {
                    SYNC_BATCH
                } else {
                    (window / 4).clamp(1, 500)
                },
                batch_ms: 50,
                ..Default::default()
            };
            let mut consumer = c.consume(h, opts).map_err(|e| e.to_string())?;
            while consumer
                .next(Duration::from_millis(300))
                .map_err(|e| e.to_string())?
                .is_some()
            {
                taken.fetch_add(1, Ordering::Relaxed);
                last = Instant::now();
            }
            // Settles what was processed (and hands over what was committed).
            let rest = consumer.stop().map_err(|e| e.to_string())?;
            taken.fetch_add(rest.len() as u64, Ordering::Relaxed);
            if sync || !rest.is_empty() {
                last = Instant::now();
            }
        }
    }
    let _ = c.close(h);
    Ok(last)
}

fn drain(dir: &Path, pid: &str, way: Way, a: &BenchArgs, n: u64) -> CliResult<Run> {
    let taken = Arc::new(AtomicU64::new(0));
    let (q0, a0, t0) = (cpu_seconds(pid), cpu_seconds("self"), Instant::now());
    let threads: Vec<_> = (0..a.consumers.max(1))
        .map(|_| {
            let (dir, taken) = (dir.to_path_buf(), taken.clone());
            let window = a.window;
            std::thread::spawn(move || consume(dir, way, window, taken))
        })
        .collect();
    let mut end = t0;
    for t in threads {
        let last = t
            .join()
            .map_err(|_| "a consumer thread panicked".to_string())??;
        end = end.max(last);
    }
    let (q1, a1) = (cpu_seconds(pid), cpu_seconds("self"));
    let got = taken.load(Ordering::Relaxed);
    if got != n {
        return Err(format!("{}: drained {got} of {n} messages", way.name()).into());
    }
    let el = end.duration_since(t0).as_secs_f64().max(1e-9);
    Ok(Run {
        rate: n as f64 / el,
        qm_us: (q1 - q0) * 1e6 / n as f64,
        app_us: (a1 - a0) * 1e6 / n as f64,
    })
}

pub fn run(a: &BenchArgs, dir: &Path, pid: &str) -> CliResult {
    let n = a.messages.unwrap_or(100_000);
    let size = a.size.unwrap_or(1024);
    super::common::define_deep_queue(dir, QUEUE, size)?;
    let kind = if a.persistent {
        "persistent"
    } else {
        "non-persistent"
    };
    let mut all: Vec<(&'static str, Run)> = Vec::new();
    let mut fills = Vec::new();
    for round in 0..a.rounds.max(1) {
        for way in Way::ALL {
            let f = fill(dir, n, size, a.persistent)?;
            fills.push(f);
            let r = drain(dir, pid, way, a, n)?;
            if a.json {
                println!(
                    "{}",
                    serde_json::json!({"scenario": "drain", "round": round + 1, "way": way.name(),
                        "messages": n, "size": size, "persistent": a.persistent,
                        "consumers": a.consumers, "window": a.window, "fill_rate_per_s": f,
                        "rate_per_s": r.rate, "qm_cpu_us_per_msg": r.qm_us,
                        "app_cpu_us_per_msg": r.app_us})
                );
            }
            all.push((way.name(), r));
        }
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(|x, y| x.total_cmp(y));
        v.get(v.len() / 2).copied().unwrap_or(0.0)
    };
    let fill_rate = median(&mut fills);
    let base = {
        let mut v: Vec<f64> = all
            .iter()
            .filter(|(w, _)| *w == Way::Get.name())
            .map(|(_, r)| r.rate)
            .collect();
        median(&mut v).max(1e-9)
    };
    if a.json {
        println!(
            "{}",
            serde_json::json!({"scenario": "drain", "median_fill_rate_per_s": fill_rate})
        );
        return Ok(());
    }
    println!(
        "drain: {n} {kind} messages of {size} bytes, {} consumer(s), window {}, {} round(s) (medians)",
        a.consumers.max(1),
        a.window,
        a.rounds.max(1)
    );
    println!("filled by one putter, a commit every {FILL_BATCH}: {fill_rate:.0} msg/s");
    println!(
        "{:<32} {:>10} {:>9} {:>12} {:>12}",
        "way", "msg/s", "vs get", "QM µs/msg", "app µs/msg"
    );
    for way in Way::ALL {
        let pick = |f: fn(&Run) -> f64| {
            let mut v: Vec<f64> = all
                .iter()
                .filter(|(w, _)| *w == way.name())
                .map(|(_, r)| f(r))
                .collect();
            median(&mut v)
        };
        let rate = pick(|r| r.rate);
        println!(
            "{:<32} {:>10.0} {:>8.1}x {:>12.1} {:>12.1}",
            way.name(),
            rate,
            rate / base,
            pick(|r| r.qm_us),
            pick(|r| r.app_us)
        );
    }
    Ok(())
}

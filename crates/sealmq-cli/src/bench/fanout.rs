//! `sealmq bench fanout [--subscribers 1,10,100] [--messages N] [--size BYTES] [--persistent]
//! [--consume] [--rounds R]` (issue 28): one publisher, K subscribers on the topic
//! `bench/fanout`, each taking from its managed queue on a connection of its own — one get
//! (waiting) per message, or with `--consume` by asynchronous consume (read-ahead outside a
//! unit of work, as a RabbitMQ consumer with automatic acknowledgement takes pushed messages).
//! Non-persistent publications to non-durable subscriptions by default; `--persistent`:
//! persistent publications (a commit every 100) to durable subscriptions. Each run reports
//! deliveries per second (publications × subscribers, until the last subscriber has all), the
//! publish rate and the queue manager's CPU per delivery; `--rounds` interleaves and ends with
//! medians. `benches/rabbitmq-fanout.sh` runs it beside RabbitMQ's fanout exchange.

use super::common::{BenchArgs, cpu_seconds};
use super::conns::median;
use crate::CliResult;
use sealmq_client::pubsub::Subscription;
use sealmq_client::{Client, ConsumeMode, ConsumeOptions};
use sealmq_engine::mqi::GetOptions;
use sealmq_engine::{Md, Persistence};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

const TOPIC: &str = "bench/fanout";
/// Publications per commit with `--persistent`.
const COMMIT_EVERY: u64 = 100;

struct Run {
    deliveries_per_s: f64,
    publish_per_s: f64,
    qm_us_per_delivery: f64,
}

fn subscriber(
    dir: PathBuf,
    i: usize,
    n: u64,
    durable: bool,
    consume: bool,
    ready: Arc<Barrier>,
) -> Result<Instant, String> {
    let mut c = Client::connect_local(&dir, "bench-sub").map_err(|e| e.to_string())?;
    let name = if durable {
        format!("BENCH.FANOUT.{i}")
    } else {
        String::new()
    };
    let s = Subscription {
        name: name.clone(),
        topic: TOPIC.into(),
        durable,
        ..Default::default()
    };
    let (h, _) = c.subscribe(&s).map_err(|e| e.to_string())?;
    let wait = Duration::from_secs(30);
    let done = if !consume {
        ready.wait();
        let gmo = GetOptions {
            wait: Some(wait),
            ..Default::default()
        };
        for _ in 0..n {
            c.get(h, &gmo).map_err(|e| format!("subscriber {i}: {e}"))?;
        }
        Instant::now()
    } else {
        let opts = ConsumeOptions {
            mode: ConsumeMode::ReadAhead,
            ..Default::default()
        };
        let mut consumer = c.consume(h, opts).map_err(|e| e.to_string())?;
        ready.wait();
        for got in 0..n {
            if consumer
                .next(wait)
                .map_err(|e| format!("subscriber {i}: {e}"))?
                .is_none()
            {
                return Err(format!(
                    "subscriber {i}: nothing for 30 s after {got} messages"
                ));
            }
        }
        let done = Instant::now();
        consumer.stop().map_err(|e| e.to_string())?;
        done
    };
    if durable {
        let _ = c.close(h);
        c.unsubscribe(&name).map_err(|e| e.to_string())?;
    } else {
        let _ = c.close(h);
    }
    Ok(done)
}

fn one_run(
    dir: &Path,
    pid: &str,
    k: usize,
    n: u64,
    size: usize,
    persistent: bool,
    consume: bool,
) -> CliResult<Run> {
    let ready = Arc::new(Barrier::new(k + 1));
    let subs: Vec<_> = (0..k)
        .map(|i| {
            let (d, r) = (dir.to_path_buf(), ready.clone());
            std::thread::spawn(move || subscriber(d, i, n, persistent, consume, r))
        })
        .collect();
    let mut c = Client::connect_local(dir, "bench-pub").map_err(|e| e.to_string())?;
    ready.wait();
    let payload = vec![0x46u8; size];
    let cpu0 = cpu_seconds(pid);
    let t0 = Instant::now();
    for i in 0..n {
        let mut md = Md {
            persistence: Persistence::of(persistent),
            ..Md::default()
        };
        c.publish(TOPIC, &mut md, &payload, persistent)
            .map_err(|e| e.to_string())?;
        if persistent && (i + 1) % COMMIT_EVERY == 0 {
            c.commit().map_err(|e| e.to_string())?;
        }
    }
    if persistent {
        c.commit().map_err(|e| e.to_string())?;
    }
    let published = t0.elapsed();
    let mut last = t0;
    for s in subs {
        let done = s
            .join()
            .map_err(|_| "a subscriber panicked".to_string())??;
        last = last.max(done);
    }
    let el = last.duration_since(t0).as_secs_f64().max(1e-9);
    let deliveries = (n * k as u64) as f64;
    Ok(Run {
        deliveries_per_s: deliveries / el,
        publish_per_s: n as f64 / published.as_secs_f64().max(1e-9),
        qm_us_per_delivery: (cpu_seconds(pid) - cpu0) * 1e6 / deliveries,
    })
}

pub fn run(a: &BenchArgs, dir: &Path, pid: &str) -> CliResult {
    let sizes: Vec<usize> = if a.consumers > 1 {
        vec![a.consumers]
    } else {
        a.subscribers
            .split(',')
            .map(|k| match k.trim().parse::<usize>() {
                Ok(k) if (1..=1000).contains(&k) => Ok(k),
                _ => Err(format!(
                    "--subscribers: '{k}' is not a count from 1 to 1000"
                )),
            })
            .collect::<Result<_, _>>()?
    };
    let size = a.size.unwrap_or(1024);
    let total = a.messages.unwrap_or(100_000);
    let kind = if a.persistent {
        "persistent publications, durable subscriptions"
    } else {
        "non-persistent publications, non-durable subscriptions"
    };
    let rounds = a.rounds.max(1);
    let mut all: Vec<Vec<Run>> = sizes.iter().map(|_| Vec::new()).collect();
    for round in 0..rounds {
        for (j, &k) in sizes.iter().enumerate() {
            // About `total` deliveries per run, at least 200 publications.
            let n = (total / k as u64).max(200);
            let r = one_run(dir, pid, k, n, size, a.persistent, a.consume)?;
            println!(
                "round {}/{rounds}: {k} subscriber(s), {n} publications of {size} bytes: \
                 {:.0} deliveries/s, {:.0} publications/s, queue manager {:.1} µs per delivery",
                round + 1,
                r.deliveries_per_s,
                r.publish_per_s,
                r.qm_us_per_delivery
            );
            all[j].push(r);
        }
    }
    for (j, &k) in sizes.iter().enumerate() {
        let mut d: Vec<f64> = all[j].iter().map(|r| r.deliveries_per_s).collect();
        let mut p: Vec<f64> = all[j].iter().map(|r| r.publish_per_s).collect();
        let mut c: Vec<f64> = all[j].iter().map(|r| r.qm_us_per_delivery).collect();
        let (d, p, c) = (median(&mut d), median(&mut p), median(&mut c));
        if a.json {
            println!(
                "{}",
                serde_json::json!({
                    "scenario": "fanout", "subscribers": k, "persistent": a.persistent,
                    "size": size, "deliveries_per_s": d, "publications_per_s": p,
                    "qm_us_per_delivery": c, "consume": a.consume,
                })
            );
        } else {
            println!(
                "fanout ({kind}), {k} subscriber(s): {d:.0} deliveries/s, {p:.0} publications/s, \
                 queue manager {c:.1} µs per delivery (median of {rounds})"
            );
        }
    }
    Ok(())
}

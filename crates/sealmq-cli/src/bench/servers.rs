//! `sealmq bench servers --baseline PATH`: this build's server against another build's (an
//! older commit's `target/release/sealmq`), side by side in one run. Two throw-away queue
//! managers on loopback ports, the second created and started by the baseline executable; in
//! each round, for 1, 4 and 64 pairs (or `--pairs`), 2 KB non-persistent request/reply and
//! persistent puts outside a unit of work (one queue per putter) run `--seconds` on each, the
//! order alternating from round to round. Printed: each rate, and this build's as a ratio of
//! the baseline's (medians of rounds), with each queue manager's CPU per operation.

use super::app::{join_all, open_q, put_plain};
use super::common::BenchArgs;
use super::conns::{CHANNEL, median, per_second_after_warmup, rr, setup_script};
use crate::CliResult;
use sealmq_client::Client;
use sealmq_engine::md::Persistence;
use sealmq_engine::mqi::OpenOptions;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

const THIS: &str = "BENCH.THIS";
const BASE: &str = "BENCH.BASELINE";

/// Persistent 2 KB puts outside a unit of work by `putters` connections for `secs`: puts per
/// second.
fn put_rate(addr: &str, putters: usize, secs: f64) -> CliResult<f64> {
    let stop = Arc::new(AtomicBool::new(false));
    let count = Arc::new(AtomicU64::new(0));
    let mut threads = Vec::new();
    for p in 0..putters {
        let mut c = Client::connect_tcp_channel(addr, CHANNEL, "bench-putter")
            .map_err(|e| e.to_string())?;
        let (stop, count) = (stop.clone(), count.clone());
        threads.push(std::thread::spawn(move || -> Result<(), String> {
            let h = open_q(&mut c, &format!("RR.PUT.{p}"), OpenOptions::output())?;
            let payload = vec![0x50u8; 2048];
            while !stop.load(Ordering::Relaxed) {
                put_plain(&mut c, h, Persistence::Persistent, &payload, false)?;
                count.fetch_add(1, Ordering::Relaxed);
            }
            Ok(())
        }));
    }
    let rate = per_second_after_warmup(&count, secs);
    stop.store(true, Ordering::Relaxed);
    join_all(threads)?;
    Ok(rate)
}

pub fn run(a: &BenchArgs) -> CliResult {
    let secs = a.seconds.max(1) as f64;
    let sizes: Vec<usize> = if a.pairs > 1 {
        vec![a.pairs]
    } else {
        vec![1, 4, 64]
    };
    let most = sizes.iter().copied().max().unwrap_or(1);
    let Some(baseline) = a.baseline.clone() else {
        return Err(
            "sealmq bench servers compares this build with another: give --baseline PATH \
             (that build's sealmq executable, e.g. a worktree's target/release/sealmq)"
                .to_string()
                .into(),
        );
    };
    if !baseline.is_file() {
        return Err(format!("--baseline {}: no such executable", baseline.display()).into());
    }
    let mut net = super::net::Net::new("servers")?;
    let mut addrs = Vec::new();
    for (qm, exe) in [(THIS, net.exe()), (BASE, baseline)] {
        net.create_by(&exe, qm)?;
        let port = super::net::free_port()?;
        net.start_by(&exe, qm, port, false)?;
        let mut script = setup_script(4 * most + 64, most);
        for p in 0..most {
            script.push_str(&format!("DEFINE QLOCAL(RR.PUT.{p}) MAXDEPTH(999999999)\n"));
        }
        net.mqsc(qm, &script)?;
        addrs.push((qm, format!("127.0.0.1:{port}")));
    }
    // (kind, pairs) -> rates of [this build, baseline], one per round.
    let kinds: Vec<(&str, usize)> = ["rr", "put"]
        .iter()
        .flat_map(|k| sizes.iter().map(move |p| (*k, *p)))
        .collect();
    let mut rates = vec![[Vec::new(), Vec::new()]; kinds.len()];
    // The queue managers' CPU per operation (µs), same shape.
    let mut cpu = vec![[Vec::new(), Vec::new()]; kinds.len()];
    let pids: Vec<String> = addrs
        .iter()
        .map(|(qm, _)| {
            std::fs::read_to_string(net.dir(qm).join("qm.pid"))
                .map(|p| p.trim().to_string())
                .unwrap_or_default()
        })
        .collect();
    let rounds = a.rounds.max(1);
    for round in 0..rounds {
        for (k, &(kind, pairs)) in kinds.iter().enumerate() {
            let order: [usize; 2] = if round % 2 == 0 { [0, 1] } else { [1, 0] };
            for i in order {
                let (qm, addr) = &addrs[i];
                let c0 = super::common::cpu_seconds(&pids[i]);
                let t0 = Instant::now();
                let r = match kind {
                    "rr" => rr(addr, pairs, secs)?,
                    _ => {
                        let r = put_rate(addr, pairs, secs)?;
                        let clear: String = (0..pairs)
                            .map(|p| format!("CLEAR QLOCAL(RR.PUT.{p})\n"))
                            .collect();
                        net.mqsc(qm, &clear)?;
                        r
                    }
                };
                // The whole run (warm-up and wind-down too): rate × its seconds operations.
                let ops = r * (t0.elapsed().as_secs_f64() - 0.3).max(secs);
                let used = super::common::cpu_seconds(&pids[i]) - c0;
                cpu[k][i].push(used * 1e6 / ops.max(1.0));
                rates[k][i].push(r);
            }
            println!(
                "round {}/{rounds}: {kind} {pairs} pair(s): this build {:.0}/s, baseline {:.0}/s",
                round + 1,
                rates[k][0][round],
                rates[k][1][round]
            );
        }
    }
    let mut json = Vec::new();
    for (k, &(kind, pairs)) in kinds.iter().enumerate() {
        // Each round's ratio first (both ran back to back in it): the median of those
        // cancels the machine's drift between rounds, which the ratio of medians does not.
        let spread = Spread::of(&rates[k][0], &rates[k][1]);
        let e = median(&mut rates[k][0]);
        let t = median(&mut rates[k][1]);
        let (ce, ct) = (median(&mut cpu[k][0]), median(&mut cpu[k][1]));
        let what = if kind == "rr" {
            "request/reply"
        } else {
            "persistent put"
        };
        println!(
            "{what}, {pairs} pair(s): this build {e:.0}/s, baseline {t:.0}/s, ratio {:.2} \
             (target at least 1.0); queue manager CPU per operation {ce:.0} µs against {ct:.0} µs; \
             median of the rounds' ratios {:.2} (interquartile {:.2}–{:.2}, all {:.2}–{:.2})",
            e / t.max(1e-9),
            spread.median,
            spread.q1,
            spread.q3,
            spread.low,
            spread.high
        );
        json.push(serde_json::json!({
            "kind": kind, "pairs": pairs, "this_build": e, "baseline": t,
            "ratio": e / t.max(1e-9),
            "cpu_us_this_build": ce, "cpu_us_baseline": ct,
            "round_ratio_median": spread.median, "round_ratio_q1": spread.q1,
            "round_ratio_q3": spread.q3, "round_ratio_low": spread.low,
            "round_ratio_high": spread.high,
        }));
    }
    if a.json {
        println!("{}", serde_json::Value::Array(json));
    }
    for (qm, _) in &addrs {
        net.stop(qm)?;
    }
    Ok(())
}

/// The spread of this build's rate over the baseline's, round by round.
struct Spread {
    median: f64,
    /// The first and third quartiles.
    q1: f64,
    q3: f64,
    low: f64,
    high: f64,
}

impl Spread {
    fn of(this: &[f64], base: &[f64]) -> Spread {
        let mut r: Vec<f64> = this
            .iter()
            .zip(base)
            .map(|(t, b)| t / b.max(1e-9))
            .collect();
        r.sort_by(f64::total_cmp);
        // The value at fraction `f` of the sorted ratios (nearest rank).
        let at = |f: f64| {
            let i = ((r.len().saturating_sub(1)) as f64 * f).round() as usize;
            r.get(i).copied().unwrap_or(0.0)
        };
        Spread {
            median: at(0.5),
            q1: at(0.25),
            q3: at(0.75),
            low: at(0.0),
            high: at(1.0),
        }
    }
}

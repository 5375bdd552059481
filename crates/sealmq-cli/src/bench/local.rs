//! `sealmq bench local-rr|put1`: request/reply and put1 against a local queue manager under
//! each quality of protection asked for.

use super::app::{join_all, open_q, request_reply, respond};
use super::common::{
    BenchArgs, Protection, Qm, cpu_seconds, cpu_split, mqsc, prepare, print_medians,
};
use super::prims;
use crate::CliResult;
use sealmq_engine::mqi::{GetOptions, OpenOptions};
use sealmq_engine::{Md, MsgType, Persistence};
use sealmq_protect::KeyReuse;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The default scenarios (`local-rr`, `put1`): every combination of `--qop` and `--key`, side
/// by side, round after round.
pub(super) fn run(a: &BenchArgs) -> CliResult {
    let qm = prepare(a)?;
    let work = std::env::temp_dir().join(format!("sealmq-bench-ks-{}", std::process::id()));
    std::fs::create_dir_all(&work).map_err(|e| e.to_string())?;
    let reuse = KeyReuse::parse(&a.key_reuse)?;
    let mut all: Vec<(String, f64)> = Vec::new();
    let r = (|| -> CliResult {
        for round in 0..a.rounds.max(1) {
            if a.rounds > 1 && !a.json {
                println!("round {}/{}", round + 1, a.rounds);
            }
            run_round(a, &qm, &work, reuse, &mut all)?;
        }
        print_medians(a, &all);
        Ok(())
    })();
    let _ = std::fs::remove_dir_all(&work);
    drop(qm);
    r
}

/// What one run measured.
struct Measured {
    txns: u64,
    msgs: u64,
    elapsed: f64,
    qm_cpu: f64,
    app_cpu: f64,
    /// The applications' CPU in user space only (protection runs there; the kernel's share
    /// moves with how often a thread sleeps and is woken, see docs/benchmarks.md).
    app_user: f64,
    asym: u64,
}

fn measure(
    qm: &Qm,
    prot: &Protection,
    secs: u64,
    count: &AtomicU64,
    per_txn_msgs: u64,
) -> Measured {
    let user = || cpu_split("self").map_or(0.0, |(u, _)| u);
    let (q0, a0, u0, t0, c0, o0) = (
        cpu_seconds(&qm.pid),
        cpu_seconds("self"),
        user(),
        Instant::now(),
        count.load(Ordering::Relaxed),
        prot.asym_ops(&qm.dir),
    );
    std::thread::sleep(Duration::from_secs(secs));
    let (q1, a1, u1, el, c1, o1) = (
        cpu_seconds(&qm.pid),
        cpu_seconds("self"),
        user(),
        t0.elapsed().as_secs_f64(),
        count.load(Ordering::Relaxed),
        prot.asym_ops(&qm.dir),
    );
    Measured {
        txns: c1 - c0,
        msgs: (c1 - c0) * per_txn_msgs,
        elapsed: el,
        qm_cpu: q1 - q0,
        app_cpu: a1 - a0,
        app_user: u1 - u0,
        asym: o1 - o0,
    }
}

/// Every qop × key run once, each rate recorded under its label in `all`.
fn run_round(
    a: &BenchArgs,
    qm: &Qm,
    work: &Path,
    reuse: KeyReuse,
    all: &mut Vec<(String, f64)>,
) -> CliResult {
    let mut baseline = None;
    let mut first = true;
    // The applications' CPU per transaction unprotected (when `none` is among the runs),
    // and each key type's primitives, measured once per round.
    let mut plain_app = None;
    let mut costs = std::collections::HashMap::new();
    {
        for qop in a.qop.split(',').map(str::trim) {
            let keys: Vec<&str> = if qop == "none" {
                vec!["-"]
            } else {
                a.key.split(',').map(str::trim).collect()
            };
            for key in keys {
                let prot =
                    Protection::new(qop, if key == "-" { "rsa2048" } else { key }, reuse, work)?;
                let (m, size, persistent) = match a.scenario.as_str() {
                    "local-rr" => (
                        local_rr(a, qm, &prot)?,
                        a.size.unwrap_or(2048),
                        a.persistent,
                    ),
                    "put1" => (
                        put1(a, qm, &prot)?,
                        a.size.unwrap_or(1024),
                        !a.nonpersistent,
                    ),
                    other => {
                        return Err(
                            format!(
                                "unknown scenario '{other}': use local-rr, put1, mover-rr, stream or partner"
                            )
                            .into()
                        );
                    }
                };
                let stored = prot.stored_bytes(size)?;
                let rate = m.txns as f64 / m.elapsed;
                let base = *baseline.get_or_insert(rate);
                let app = m.app_cpu * 1e6 / m.txns.max(1) as f64;
                let user = m.app_user * 1e6 / m.txns.max(1) as f64;
                let prim = if qop == "none" {
                    plain_app = Some((app, user));
                    None
                } else {
                    let c = *costs
                        .entry(key.to_string())
                        .or_insert_with(|| prims::measure(key));
                    let (out, back) = if a.scenario == "put1" {
                        (1.0, 0.0)
                    } else {
                        (2.0, 2.0)
                    };
                    let reuse = match prot.reuse {
                        KeyReuse::Disabled => Some(1),
                        KeyReuse::Count(n) => Some(u64::from(n)),
                        KeyReuse::Unlimited => None,
                    };
                    let aead = prims::aead(size).unwrap_or(0.0);
                    c.map(|c| {
                        let per = prims::per_txn(&c, aead, qop, reuse, (out, back));
                        let ratio = plain_app
                            .filter(|_| per > 0.0)
                            .map(|(p, pu): (f64, f64)| ((app - p) / per, (user - pu) / per));
                        (per, ratio)
                    })
                };
                let shown = Shown {
                    stored,
                    vs_first: rate / base,
                    header: first,
                    prim,
                };
                report(a, &prot, &m, size, persistent, &shown);
                first = false;
                let reuse = if prot.qop == "none" {
                    "-".to_string()
                } else {
                    prot.reuse.to_string()
                };
                all.push((format!("{} {} reuse {}", prot.qop, key, reuse), rate));
            }
        }
    }
    Ok(())
}

/// What a run's row shows beside its measurements.
struct Shown {
    stored: usize,
    vs_first: f64,
    header: bool,
    /// The primitives' µs per transaction, and the applications' CPU beyond an unprotected
    /// run's divided by it (when the run had one): all of it, and in user space only.
    prim: Option<(f64, Option<(f64, f64)>)>,
}

fn report(a: &BenchArgs, p: &Protection, m: &Measured, size: usize, persistent: bool, s: &Shown) {
    let (stored, vs_first, header) = (s.stored, s.vs_first, s.header);
    let (prim, over) = match s.prim {
        Some((per, ratio)) => (Some(per), ratio),
        None => (None, None),
    };
    let rate = m.txns as f64 / m.elapsed;
    let per = |cpu: f64| {
        if m.txns > 0 {
            cpu * 1e6 / m.txns as f64
        } else {
            0.0
        }
    };
    let asym = if m.msgs > 0 {
        m.asym as f64 / m.msgs as f64
    } else {
        0.0
    };
    let key = if p.qop == "none" {
        "-".to_string()
    } else {
        p.key.clone()
    };
    if a.json {
        println!(
            "{}",
            serde_json::json!({
                "scenario": a.scenario,
                "qop": p.qop,
                "key": key,
                "key_reuse": p.reuse.to_string(),
                "rate_per_s": rate,
                "qm_cpu_us_per_txn": per(m.qm_cpu),
                "app_cpu_us_per_txn": per(m.app_cpu),
                "app_user_cpu_us_per_txn": per(m.app_user),
                "asym_ops_per_msg": asym,
                "stored_bytes": stored,
                "transactions": m.txns,
                "seconds": m.elapsed,
                "pairs": a.pairs,
                "queues": a.queues.unwrap_or(a.pairs),
                "buffer": a.buffer,
                "message_bytes": size,
                "persistent": persistent,
                "dse": a.dse,
                "rate_vs_first_run": vs_first,
                "primitives_us_per_txn": prim,
                "protection_cpu_vs_primitives": over.map(|o| o.0),
                "protection_user_cpu_vs_primitives": over.map(|o| o.1),
            })
        );
        return;
    }
    if header {
        println!(
            "{} {} B, {} pair(s), {}{}",
            a.scenario,
            size,
            a.pairs,
            if persistent {
                "persistent"
            } else {
                "non-persistent"
            },
            if a.dse { ", log encrypted at rest" } else { "" }
        );
        println!(
            "qop              key      reuse      rate/s  vs first  QM us/txn  app us/txn  app user us  asym ops/msg  stored B  prim us/txn  x prim  x prim user"
        );
    }
    let prim = prim.map_or("-".to_string(), |p| format!("{p:.1}"));
    let (over, over_user) = over.map_or(("-".to_string(), "-".to_string()), |(o, u)| {
        (format!("{o:.2}x"), format!("{u:.2}x"))
    });
    println!(
        "{:<16} {:<8} {:<9} {:>8.0}  {:>7.2}x  {:>9.1}  {:>10.1}  {:>11.1}  {:>12.3}  {:>8}  {:>11}  {:>6}  {:>11}",
        p.qop,
        key,
        p.reuse.to_string(),
        rate,
        vs_first,
        per(m.qm_cpu),
        per(m.app_cpu),
        per(m.app_user),
        asym,
        stored,
        prim,
        over,
        over_user
    );
}

fn local_rr(a: &BenchArgs, qm: &Qm, prot: &Protection) -> CliResult<Measured> {
    let size = a.size.unwrap_or(2048);
    let nq = a.queues.unwrap_or(a.pairs).clamp(1, a.pairs.max(1));
    let persistence = Persistence::of(a.persistent);
    let buffer = a.buffer;
    let mut script = String::new();
    let mut queues = Vec::new();
    for i in 0..nq {
        script.push_str(&format!(
            "DEFINE QLOCAL(BENCH.REQ.{i}) REPLACE\nDEFINE QLOCAL(BENCH.REP.{i}) REPLACE\n"
        ));
        queues.push(format!("BENCH.REQ.{i}"));
        queues.push(format!("BENCH.REP.{i}"));
    }
    script.push_str(&prot.script(&queues));
    mqsc(&qm.dir, &script)?;
    let stop = Arc::new(AtomicBool::new(false));
    // Responders stop only after every requester has: a request in flight always gets its reply.
    let stop_responders = Arc::new(AtomicBool::new(false));
    let count = Arc::new(AtomicU64::new(0));
    let mut requesters = Vec::new();
    let mut responders = Vec::new();
    for p in 0..a.pairs {
        let i = p % nq;
        let (dir, halt) = (qm.dir.clone(), stop_responders.clone());
        let mut c = prot.client(&dir, "bench-server")?;
        responders.push(std::thread::spawn(move || -> Result<(), String> {
            let gmo = GetOptions {
                wait: Some(Duration::from_millis(200)),
                buffer,
                ..Default::default()
            };
            respond(&mut c, i, &gmo, persistence, &halt)
        }));
        let (halt, done) = (stop.clone(), count.clone());
        let mut c = prot.client(&qm.dir, "bench-requester")?;
        requesters.push(std::thread::spawn(move || -> Result<(), String> {
            let req = open_q(&mut c, &format!("BENCH.REQ.{i}"), OpenOptions::output())?;
            let rep = open_q(&mut c, &format!("BENCH.REP.{i}"), OpenOptions::input())?;
            let payload = vec![0x42u8; size];
            while !halt.load(Ordering::Relaxed) {
                let md = Md {
                    msg_type: MsgType::Request,
                    persistence,
                    ..Md::default()
                };
                let wait = Duration::from_secs(10);
                request_reply(&mut c, (req, rep), md, &payload, wait, buffer)?;
                done.fetch_add(1, Ordering::Relaxed);
            }
            Ok(())
        }));
    }
    let m = measure(qm, prot, a.seconds, &count, 2);
    stop.store(true, Ordering::Relaxed);
    join_all(requesters)?;
    stop_responders.store(true, Ordering::Relaxed);
    join_all(responders)?;
    Ok(m)
}

fn put1(a: &BenchArgs, qm: &Qm, prot: &Protection) -> CliResult<Measured> {
    let size = a.size.unwrap_or(1024);
    let script = format!(
        "DEFINE QLOCAL(BENCH.PUT1) REPLACE MAXDEPTH(999999999)\nCLEAR QLOCAL(BENCH.PUT1)\n{}",
        prot.script(&["BENCH.PUT1".to_string()])
    );
    mqsc(&qm.dir, &script)?;
    let persistent = !a.nonpersistent;
    let stop = Arc::new(AtomicBool::new(false));
    let count = Arc::new(AtomicU64::new(0));
    let mut threads = Vec::new();
    for _ in 0..a.pairs.max(1) {
        let (halt, done) = (stop.clone(), count.clone());
        let mut c = prot.client(&qm.dir, "bench-put1")?;
        threads.push(std::thread::spawn(move || -> Result<(), String> {
            let payload = vec![0x42u8; size];
            while !halt.load(Ordering::Relaxed) {
                let mut md = Md {
                    persistence: Persistence::of(persistent),
                    ..Md::default()
                };
                c.put1("BENCH.PUT1", &mut md, &payload, true)
                    .map_err(|e| e.to_string())?;
                c.commit().map_err(|e| e.to_string())?;
                done.fetch_add(1, Ordering::Relaxed);
            }
            Ok(())
        }));
    }
    let m = measure(qm, prot, a.seconds, &count, 1);
    stop.store(true, Ordering::Relaxed);
    join_all(threads)?;
    // Leave the queue empty for the next run.
    mqsc(&qm.dir, "CLEAR QLOCAL(BENCH.PUT1)")?;
    Ok(m)
}

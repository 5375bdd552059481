//! `sealmq bench mover-rr|stream|partner`: the channel workloads of the reports (seed 000),
//! between throw-away queue managers on loopback, each run with fresh queue managers so that
//! runs are independent and side by side in one invocation.
//!
//! - `mover-rr`: request/reply, 32 KB non-persistent, over a channel pair, per `--config`
//!   (unprotected, end-to-end, interception), `--qop`, `--tls` with `--sslrkeyc` values.
//! - `stream`: persistent messages one way (10 KB and 1 MB unless `--size`), rate delivered.
//! - `partner`: an unprotected partner puts 2 KB non-persistent at `--rate` per second into a
//!   protected island whose receiver applies the target queue's policy (SPLPROT(ASPOLICY));
//!   the achieved rate and the partner's transmission-queue depth per QoP and key reuse.
//!
//! Every scenario takes `--adapters` and `--dispatchers` lists (the channel initiator's
//! CHIADAPS and CHIDISPS): one row per value, to show that more adapters never cost throughput.

use super::app::{join_all, open_q, put_plain, request_reply};
use super::common::{BenchArgs, Protection, cpu_seconds};
use crate::CliResult;
use sealmq_client::Client;
use sealmq_engine::mqi::{GetOptions, OpenOptions};
use sealmq_engine::{Md, MsgType, Persistence};
use sealmq_protect::KeyReuse;
use sealmq_types::ReasonCode;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::net::{Net, free_port};

fn list<T: std::str::FromStr>(s: &str, what: &str) -> CliResult<Vec<T>> {
    s.split(',')
        .map(|v| {
            v.trim()
                .parse()
                .map_err(|_| format!("--{what}: '{v}' is not a number").into())
        })
        .collect()
}

/// One row of a channel benchmark.
struct Row {
    label: String,
    rate: f64,
    unit: &'static str,
    qm_us: f64,
    app_us: f64,
    extra: Vec<(&'static str, String)>,
}

pub fn run(a: &BenchArgs) -> CliResult {
    let work = std::env::temp_dir().join(format!("sealmq-bench-ks-{}", std::process::id()));
    std::fs::create_dir_all(&work).map_err(|e| e.to_string())?;
    let r = run_all(a, &work);
    let _ = std::fs::remove_dir_all(&work);
    r
}

fn run_all(a: &BenchArgs, work: &Path) -> CliResult {
    let runs = plan(a)?;
    let mut all: Vec<(String, f64)> = Vec::new();
    for round in 0..a.rounds.max(1) {
        if a.rounds > 1 && !a.json {
            println!("round {}/{}", round + 1, a.rounds);
        }
        run_round(a, work, &runs, &mut all)?;
    }
    super::common::print_medians(a, &all);
    Ok(())
}

/// One run of the matrix the options ask for.
struct Planned<'a> {
    qop: &'a str,
    key: &'a str,
    reuse: KeyReuse,
    config: &'a str,
    t: Tuning,
}

/// Every combination of the lists given, less the ones that would repeat a run: key types and
/// key reuse only matter under protection (key reuse only under Confidentiality), configurations
/// only to mover-rr, and stream runs without protection.
fn plan<'a>(a: &'a BenchArgs) -> CliResult<Vec<Planned<'a>>> {
    let adapters: Vec<u32> = list(&a.adapters, "adapters")?;
    let dispatchers: Vec<u32> = list(&a.dispatchers, "dispatchers")?;
    let rkeyc: Vec<u64> = list(&a.sslrkeyc, "sslrkeyc")?;
    let reuses: Vec<KeyReuse> = a
        .key_reuse
        .split(',')
        .map(|r| KeyReuse::parse(r.trim()).map_err(|e| e.to_string().into()))
        .collect::<CliResult<_>>()?;
    let split = |s: &'a str| -> Vec<&'a str> { s.split(',').map(str::trim).collect() };
    let (mut qops, keys, configs) = (split(&a.qop), split(&a.key), split(&a.config));
    let stream = a.scenario == "stream";
    if stream {
        qops.truncate(1);
    }
    let mut runs = Vec::new();
    for &qop in &qops {
        let keys = if qop == "none" || stream {
            &keys[..1]
        } else {
            &keys[..]
        };
        let reuses = if qop == "confidentiality" && !stream {
            &reuses[..]
        } else {
            &reuses[..1]
        };
        let configs = if a.scenario == "mover-rr" {
            &configs[..]
        } else {
            &configs[..1]
        };
        for &key in keys {
            for &reuse in reuses {
                for &config in configs {
                    for &rkeyc in &rkeyc {
                        for &adapters in &adapters {
                            for &dispatchers in &dispatchers {
                                runs.push(Planned {
                                    qop,
                                    key,
                                    reuse,
                                    config,
                                    t: Tuning {
                                        adapters,
                                        dispatchers,
                                        tls: a.tls,
                                        rkeyc,
                                    },
                                });
                            }
                        }
                    }
                }
            }
        }
    }
    Ok(runs)
}

fn run_round(
    a: &BenchArgs,
    work: &Path,
    runs: &[Planned<'_>],
    all: &mut Vec<(String, f64)>,
) -> CliResult {
    let mut first: Option<f64> = None;
    let mut header = true;
    for p in runs {
        let prot = Protection::new(p.qop, p.key, p.reuse, work)?;
        let rows = match a.scenario.as_str() {
            "mover-rr" => vec![mover_rr(a, &prot, p.config, &p.t)?],
            "stream" => stream(a, &p.t)?,
            _ => vec![partner(a, &prot, &p.t)?],
        };
        for mut r in rows {
            let key = if prot.qop == "none" { "-" } else { &prot.key };
            all.push((
                format!(
                    "{} {} {key} {} adapters={} dispatchers={}",
                    r.label, prot.qop, prot.reuse, p.t.adapters, p.t.dispatchers
                ),
                r.rate,
            ));
            let base = *first.get_or_insert(r.rate);
            r.extra.push(("vs first", format!("{:.2}x", r.rate / base)));
            print_row(a, &prot, &p.t, &r, header);
            header = false;
        }
    }
    Ok(())
}

#[derive(Clone, Copy)]
struct Tuning {
    adapters: u32,
    dispatchers: u32,
    tls: bool,
    rkeyc: u64,
}

impl Tuning {
    fn qmgr(&self) -> String {
        format!(
            "ALTER QMGR CHIADAPS({}) CHIDISPS({})\n",
            self.adapters, self.dispatchers
        )
    }

    fn sdr(&self) -> String {
        if self.tls {
            format!("SSLCIPH(ANY) SSLRKEYC({})", self.rkeyc)
        } else {
            String::new()
        }
    }

    fn rcvr(&self) -> &'static str {
        if self.tls { "SSLCIPH(ANY)" } else { "" }
    }
}

fn print_row(a: &BenchArgs, p: &Protection, t: &Tuning, r: &Row, header: bool) {
    let key = if p.qop == "none" { "-" } else { &p.key };
    if a.json {
        let mut o = serde_json::json!({
            "scenario": a.scenario,
            "run": r.label,
            "qop": p.qop,
            "key": key,
            "key_reuse": p.reuse.to_string(),
            "rate_per_s": r.rate,
            "unit": r.unit,
            "qm_cpu_us_per_txn": r.qm_us,
            "app_cpu_us_per_txn": r.app_us,
            "adapters": t.adapters,
            "dispatchers": t.dispatchers,
            "tls": t.tls,
            "sslrkeyc": t.rkeyc,
        });
        for (k, v) in &r.extra {
            o[k.replace(' ', "_")] = serde_json::Value::String(v.clone());
        }
        println!("{o}");
        return;
    }
    if header {
        println!(
            "{:<28} {:<16} {:<6} {:<9} {:>4} {:>4} {:>10} {:>9} {:>9}  more",
            a.scenario, "qop", "key", "reuse", "adap", "disp", "rate/s", "QM us", "app us"
        );
    }
    let more: Vec<String> = r.extra.iter().map(|(k, v)| format!("{k} {v}")).collect();
    println!(
        "{:<28} {:<16} {:<6} {:<9} {:>4} {:>4} {:>10.0} {:>9.1} {:>9.1}  {}",
        r.label,
        p.qop,
        key,
        p.reuse.to_string(),
        t.adapters,
        t.dispatchers,
        r.rate,
        r.qm_us,
        r.app_us,
        more.join(", ")
    );
    let _ = r.unit;
}

/// Starts two queue managers BENCH.A and BENCH.B with channels both ways.
fn pair(t: &Tuning, a_identity: Option<&Path>, a_rcvr: &str, a_sdr: &str) -> CliResult<Net> {
    let mut net = Net::new("net")?;
    net.create("BENCH.A", a_identity)?;
    net.create("BENCH.B", None)?;
    if t.tls {
        net.trust_each_other("BENCH.A", "BENCH.B")?;
    }
    let (pa, pb) = (free_port()?, free_port()?);
    for (qm, port) in [("BENCH.A", pa), ("BENCH.B", pb)] {
        net.start(qm, port, t.tls)?;
        net.mqsc(qm, &t.qmgr())?;
        // The channel initiator sizes its tasks at start.
        net.stop(qm)?;
        net.start(qm, port, t.tls)?;
    }
    net.channel(
        "BENCH.A",
        "BENCH.B",
        pb,
        &format!("{} {a_sdr}", t.sdr()),
        t.rcvr(),
    )?;
    net.channel(
        "BENCH.B",
        "BENCH.A",
        pa,
        &t.sdr(),
        &format!("{} {a_rcvr}", t.rcvr()),
    )?;
    Ok(net)
}

fn mover_rr(a: &BenchArgs, prot: &Protection, config: &str, t: &Tuning) -> CliResult<Row> {
    let size = a.size.unwrap_or(32 * 1024);
    let protected = prot.policy.is_some();
    let (net, req_prot, rsp_prot) = match config {
        "unprotected" => (pair(t, None, "", "")?, false, false),
        "end-to-end" => (pair(t, None, "", "")?, protected, protected),
        "interception" => {
            let id = prot.keystore.as_deref();
            (
                pair(t, id, "SPLPROT(ASPOLICY)", "SPLPROT(REMOVE)")?,
                protected,
                false,
            )
        }
        other => {
            return Err(format!(
                "unknown --config '{other}': unprotected, end-to-end or interception"
            )
            .into());
        }
    };
    let mut sa = String::new();
    let mut sb = String::new();
    let mut pa = Vec::new();
    let mut pb = Vec::new();
    for i in 0..a.pairs {
        sa.push_str(&format!(
            "DEFINE QREMOTE(BENCH.REQ.{i}) RNAME(BENCH.REQ.{i}) RQMNAME(BENCH.B) XMITQ(BENCH.B)\n\
             DEFINE QLOCAL(BENCH.REP.{i})\n"
        ));
        sb.push_str(&format!("DEFINE QLOCAL(BENCH.REQ.{i})\n"));
        pa.push(format!("BENCH.REQ.{i}"));
        pa.push(format!("BENCH.REP.{i}"));
        pb.push(format!("BENCH.REQ.{i}"));
        pb.push(format!("BENCH.REP.{i}"));
    }
    if req_prot {
        if config == "interception" {
            pa.push("BENCH.B".into());
        }
        sa.push_str(&prot.script(&pa));
    }
    if rsp_prot {
        sb.push_str(&prot.script(&pb));
    }
    net.mqsc("BENCH.A", &sa)?;
    net.mqsc("BENCH.B", &sb)?;
    let none = Protection::new("none", "rsa2048", KeyReuse::Disabled, Path::new("."))?;
    let stop = Arc::new(AtomicBool::new(false));
    let halt_rsp = Arc::new(AtomicBool::new(false));
    let count = Arc::new(AtomicU64::new(0));
    let mut threads = Vec::new();
    let mut responders = Vec::new();
    for i in 0..a.pairs {
        let mut rsp =
            if rsp_prot { prot } else { &none }.client(&net.dir("BENCH.B"), "bench-rsp")?;
        let halt = halt_rsp.clone();
        responders.push(std::thread::spawn(move || -> Result<(), String> {
            let q = open_q(&mut rsp, &format!("BENCH.REQ.{i}"), OpenOptions::input())?;
            let mut back: Option<u32> = None;
            let gmo = GetOptions {
                wait: Some(Duration::from_millis(200)),
                ..Default::default()
            };
            while !halt.load(Ordering::Relaxed) {
                let m = match rsp.get(q, &gmo) {
                    Ok(m) => m,
                    Err(e) if e.reason == ReasonCode::NoMsgAvailable => continue,
                    Err(e) => return Err(e.to_string()),
                };
                let h = match back {
                    Some(h) => h,
                    None => {
                        let (h, _) = rsp
                            .open_at(&m.md.reply_to_q, &m.md.reply_to_qmgr, OpenOptions::output())
                            .map_err(|e| e.to_string())?;
                        back = Some(h);
                        h
                    }
                };
                let mut md = Md {
                    correl_id: m.md.msg_id,
                    msg_type: MsgType::Reply,
                    persistence: Persistence::NotPersistent,
                    ..Md::default()
                };
                rsp.put(h, &mut md, &m.payload, false)
                    .map_err(|e| e.to_string())?;
            }
            Ok(())
        }));
        let mut req =
            if req_prot { prot } else { &none }.client(&net.dir("BENCH.A"), "bench-req")?;
        let (halt, done) = (stop.clone(), count.clone());
        threads.push(std::thread::spawn(move || -> Result<(), String> {
            let q = open_q(&mut req, &format!("BENCH.REQ.{i}"), OpenOptions::output())?;
            let r = open_q(&mut req, &format!("BENCH.REP.{i}"), OpenOptions::input())?;
            let payload = vec![0x5au8; size];
            while !halt.load(Ordering::Relaxed) {
                let md = Md {
                    msg_type: MsgType::Request,
                    persistence: Persistence::NotPersistent,
                    reply_to_q: format!("BENCH.REP.{i}"),
                    ..Md::default()
                };
                let wait = Duration::from_secs(30);
                request_reply(&mut req, (q, r), md, &payload, wait, None)?;
                done.fetch_add(1, Ordering::Relaxed);
            }
            Ok(())
        }));
    }
    // A second of warm-up (key reuse caches, connections), then the measurement.
    std::thread::sleep(Duration::from_secs(1));
    let (m, qm_cpu, app_cpu) = window(&net, a.seconds, &count);
    stop.store(true, Ordering::Relaxed);
    join_all(threads)?;
    halt_rsp.store(true, Ordering::Relaxed);
    join_all(responders)?;
    let label = if t.tls {
        format!("{config} tls rkeyc={}", t.rkeyc)
    } else {
        config.to_string()
    };
    Ok(Row {
        label,
        rate: m.0 as f64 / m.1,
        unit: "round trips",
        qm_us: per(qm_cpu, m.0),
        app_us: per(app_cpu, m.0),
        extra: vec![("msg B", size.to_string())],
    })
}

fn per(cpu: f64, n: u64) -> f64 {
    if n == 0 { 0.0 } else { cpu * 1e6 / n as f64 }
}

/// Measures `secs`: (count, elapsed), QM CPU, this process's CPU.
fn window(net: &Net, secs: u64, count: &AtomicU64) -> ((u64, f64), f64, f64) {
    let (q0, a0, t0, c0) = (
        net.qm_cpu(),
        cpu_seconds("self"),
        Instant::now(),
        count.load(Ordering::Relaxed),
    );
    std::thread::sleep(Duration::from_secs(secs));
    let (q1, a1, el, c1) = (
        net.qm_cpu(),
        cpu_seconds("self"),
        t0.elapsed().as_secs_f64(),
        count.load(Ordering::Relaxed),
    );
    ((c1 - c0, el), q1 - q0, a1 - a0)
}

fn stream(a: &BenchArgs, t: &Tuning) -> CliResult<Vec<Row>> {
    let sizes = match a.size {
        Some(s) => vec![s],
        None => vec![10 * 1024, 1024 * 1024],
    };
    let mut rows = Vec::new();
    for size in sizes {
        let net = pair(t, None, "", "")?;
        net.mqsc(
            "BENCH.A",
            "DEFINE QREMOTE(BENCH.STREAM) RNAME(BENCH.STREAM) RQMNAME(BENCH.B) XMITQ(BENCH.B)\n",
        )?;
        net.mqsc(
            "BENCH.B",
            "DEFINE QLOCAL(BENCH.STREAM) MAXDEPTH(999999999)\n",
        )?;
        // Commit every 10 messages of 10 KB, every message of 1 MB.
        let per_commit = if size >= 256 * 1024 { 1 } else { 10 };
        let stop = Arc::new(AtomicBool::new(false));
        let count = Arc::new(AtomicU64::new(0));
        let mut threads = Vec::new();
        for _ in 0..a.pairs {
            let halt = stop.clone();
            let mut c = Client::connect_local(&net.dir("BENCH.A"), "bench-stream-put")
                .map_err(|e| e.to_string())?;
            threads.push(std::thread::spawn(move || -> Result<(), String> {
                let h = open_q(&mut c, "BENCH.STREAM", OpenOptions::output())?;
                let payload = vec![0x33u8; size];
                let mut n = 0u64;
                while !halt.load(Ordering::Relaxed) {
                    put_plain(&mut c, h, Persistence::Persistent, &payload, true)?;
                    n += 1;
                    if n.is_multiple_of(per_commit) {
                        c.commit().map_err(|e| e.to_string())?;
                    }
                }
                c.commit().map_err(|e| e.to_string())
            }));
            let (halt, done) = (stop.clone(), count.clone());
            let mut g = Client::connect_local(&net.dir("BENCH.B"), "bench-stream-get")
                .map_err(|e| e.to_string())?;
            threads.push(std::thread::spawn(move || -> Result<(), String> {
                let h = open_q(&mut g, "BENCH.STREAM", OpenOptions::input())?;
                let gmo = GetOptions {
                    syncpoint: true,
                    wait: Some(Duration::from_millis(200)),
                    ..Default::default()
                };
                let mut n = 0u64;
                while !halt.load(Ordering::Relaxed) {
                    match g.get(h, &gmo) {
                        Ok(_) => {
                            n += 1;
                            if n.is_multiple_of(per_commit) {
                                g.commit().map_err(|e| e.to_string())?;
                                done.fetch_add(per_commit, Ordering::Relaxed);
                            }
                        }
                        Err(e) if e.reason == ReasonCode::NoMsgAvailable => {}
                        Err(e) => return Err(e.to_string()),
                    }
                }
                g.commit().map_err(|e| e.to_string())
            }));
        }
        std::thread::sleep(Duration::from_secs(1));
        let (m, qm_cpu, app_cpu) = window(&net, a.seconds, &count);
        stop.store(true, Ordering::Relaxed);
        join_all(threads)?;
        let rate = m.0 as f64 / m.1;
        rows.push(Row {
            label: format!("persistent {size} B"),
            rate,
            unit: "messages",
            qm_us: per(qm_cpu, m.0),
            app_us: per(app_cpu, m.0),
            extra: vec![("MB/s", format!("{:.1}", rate * size as f64 / 1e6))],
        });
    }
    Ok(rows)
}

fn partner(a: &BenchArgs, prot: &Protection, t: &Tuning) -> CliResult<Row> {
    let size = a.size.unwrap_or(2048);
    // The partner (BENCH.A) is plain; the island (BENCH.B) protects on arrival with its own
    // identity (the bench keystore), which is also the policy's signer and recipient.
    let mut net = Net::new("partner")?;
    net.create("BENCH.A", None)?;
    net.create("BENCH.B", prot.keystore.as_deref())?;
    let (pa, pb) = (free_port()?, free_port()?);
    for (qm, port) in [("BENCH.A", pa), ("BENCH.B", pb)] {
        net.start(qm, port, false)?;
        net.mqsc(qm, &t.qmgr())?;
        net.stop(qm)?;
        net.start(qm, port, false)?;
    }
    net.mqsc(
        "BENCH.A",
        "DEFINE QREMOTE(BENCH.IN) RNAME(BENCH.IN) RQMNAME(BENCH.B) XMITQ(BENCH.B)\n",
    )?;
    net.mqsc(
        "BENCH.B",
        &format!(
            "DEFINE QLOCAL(BENCH.IN) MAXDEPTH(999999999)\n{}",
            prot.script(&["BENCH.IN".to_string()])
        ),
    )?;
    net.channel("BENCH.A", "BENCH.B", pb, "", "SPLPROT(ASPOLICY)")?;
    let stop = Arc::new(AtomicBool::new(false));
    let count = Arc::new(AtomicU64::new(0));
    let put_count = Arc::new(AtomicU64::new(0));
    let target = a.rate.max(1);
    let (halt, puts) = (stop.clone(), put_count.clone());
    let mut p =
        Client::connect_local(&net.dir("BENCH.A"), "bench-partner").map_err(|e| e.to_string())?;
    let putter = std::thread::spawn(move || -> Result<(), String> {
        let h = open_q(&mut p, "BENCH.IN", OpenOptions::output())?;
        let payload = vec![0x11u8; size];
        let t0 = Instant::now();
        let mut n = 0u64;
        while !halt.load(Ordering::Relaxed) {
            // Paced: never ahead of the target rate.
            let due = t0 + Duration::from_secs_f64(n as f64 / target as f64);
            let now = Instant::now();
            if due > now {
                std::thread::sleep(due - now);
            }
            put_plain(&mut p, h, Persistence::NotPersistent, &payload, false)?;
            n += 1;
            puts.store(n, Ordering::Relaxed);
        }
        Ok(())
    });
    let (halt, done) = (stop.clone(), count.clone());
    let mut g = prot.client(&net.dir("BENCH.B"), "bench-island")?;
    let getter = std::thread::spawn(move || -> Result<(), String> {
        let h = open_q(&mut g, "BENCH.IN", OpenOptions::input())?;
        let gmo = GetOptions {
            wait: Some(Duration::from_millis(200)),
            ..Default::default()
        };
        while !halt.load(Ordering::Relaxed) {
            match g.get(h, &gmo) {
                Ok(_) => {
                    done.fetch_add(1, Ordering::Relaxed);
                }
                Err(e) if e.reason == ReasonCode::NoMsgAvailable => {}
                Err(e) => return Err(e.to_string()),
            }
        }
        Ok(())
    });
    std::thread::sleep(Duration::from_secs(1));
    let (m, qm_cpu, app_cpu) = window(&net, a.seconds, &count);
    let xmitq_depth = net.depth("BENCH.A", "BENCH.B");
    let put = put_count.load(Ordering::Relaxed);
    stop.store(true, Ordering::Relaxed);
    putter
        .join()
        .map_err(|_| "a bench thread panicked".to_string())??;
    getter
        .join()
        .map_err(|_| "a bench thread panicked".to_string())??;
    let rate = m.0 as f64 / m.1;
    Ok(Row {
        label: format!("target {target}/s {size} B"),
        rate,
        unit: "messages",
        qm_us: per(qm_cpu, m.0),
        app_us: per(app_cpu, m.0),
        extra: vec![
            ("xmitq depth", xmitq_depth.to_string()),
            ("put", put.to_string()),
            (
                "sustained",
                if rate >= 0.97 * target as f64 && xmitq_depth < target {
                    "yes"
                } else {
                    "no"
                }
                .to_string(),
            ),
        ],
    })
}

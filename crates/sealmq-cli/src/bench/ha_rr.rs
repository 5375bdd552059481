//! `sealmq bench ha --tls`: IBM's Native HA workload — persistent request/reply of 2 KiB
//! messages, the applications over TLS (an SVRCONN channel with SSLCIPH) and the instances
//! replicating over their mutual-TLS links — on a replicated queue manager (three instances on
//! this machine) and on a single queue manager, side by side in one run, medians of
//! interleaved rounds (docs/benchmarks.md).
//!
//! Each of `--pairs` pairs has its own request and reply queue: the requester puts a persistent
//! request outside syncpoint (durable before the put returns) and gets its reply by correlation
//! id, outside syncpoint; the responder gets the request and puts the reply in one unit of work.
//! A round trip is thus three log forces: the request's put, the responder's commit, the
//! reply's get.

use super::app::{join_all, open_q, request_reply, respond};
use super::common::BenchArgs;
use super::ha::{Bed, HA, NAMES, SINGLE, median, qm_cpu, setup};
use crate::CliResult;
use sealmq_client::Client;
use sealmq_engine::mqi::{GetOptions, OpenOptions};
use sealmq_engine::{Md, MsgType, Persistence};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

const CHANNEL: &str = "BENCH.TLS";
const APP_DN: &str = "CN=bench-app,O=sealmq bench";

/// The channel, the application's authority and the pairs' queues on one queue manager.
fn define(bed: &Bed, who: &str, qm: &str, pairs: usize) -> CliResult {
    let mut script = format!(
        "DEFINE CHANNEL({CHANNEL}) CHLTYPE(SVRCONN) SSLCIPH(ANY) REPLACE\n\
         SET CHLAUTH('{CHANNEL}') TYPE(SSLPEERMAP) SSLPEER('{APP_DN}') USERSRC(MAP) MCAUSER('benchapp')\n\
         SET AUTHREC OBJTYPE(QMGR) PRINCIPAL('benchapp') AUTHADD(CONNECT)\n\
         SET AUTHREC PROFILE('BENCH.**') OBJTYPE(QUEUE) PRINCIPAL('benchapp') AUTHADD(GET,PUT,INQ)\n"
    );
    for i in 0..pairs {
        script.push_str(&format!(
            "DEFINE QLOCAL(BENCH.REQ.{i}) DEFPSIST(YES) MAXDEPTH(999999999) REPLACE\n\
             DEFINE QLOCAL(BENCH.REP.{i}) DEFPSIST(YES) MAXDEPTH(999999999) REPLACE\n"
        ));
    }
    bed.sealmq(who, &["mqsc", qm], Some(&script)).map(|_| ())
}

/// One run: round trips per second, and the CPU every queue manager process involved spent
/// per round trip (µs).
struct Rate {
    per_s: f64,
    cpu_us: f64,
}

/// `pairs` requesters and responders over TLS to `addr` for `secs`; `procs` are the
/// directories of every process whose CPU counts.
fn rr_rate(addr: &str, app: &Path, procs: &[PathBuf], a: &BenchArgs) -> CliResult<Rate> {
    let size = a.size.unwrap_or(2048);
    let connect = |appl: &str| {
        Client::connect_tls_channel(addr, app, None, CHANNEL, appl).map_err(|e| e.to_string())
    };
    let stop = Arc::new(AtomicBool::new(false));
    let stop_responders = Arc::new(AtomicBool::new(false));
    let count = Arc::new(AtomicU64::new(0));
    let (mut requesters, mut responders) = (Vec::new(), Vec::new());
    for i in 0..a.pairs.max(1) {
        let mut c = connect("bench-ha-responder")?;
        let halt = stop_responders.clone();
        responders.push(std::thread::spawn(move || -> Result<(), String> {
            let gmo = GetOptions {
                wait: Some(Duration::from_millis(200)),
                syncpoint: true,
                ..Default::default()
            };
            respond(&mut c, i, &gmo, Persistence::Persistent, &halt)
        }));
        let mut c = connect("bench-ha-requester")?;
        let (halt, done) = (stop.clone(), count.clone());
        requesters.push(std::thread::spawn(move || -> Result<(), String> {
            let req = open_q(&mut c, &format!("BENCH.REQ.{i}"), OpenOptions::output())?;
            let rep = open_q(&mut c, &format!("BENCH.REP.{i}"), OpenOptions::input())?;
            let payload = vec![0x52u8; size];
            while !halt.load(Ordering::Relaxed) {
                let md = Md {
                    msg_type: MsgType::Request,
                    persistence: Persistence::Persistent,
                    ..Md::default()
                };
                let wait = Duration::from_secs(30);
                request_reply(&mut c, (req, rep), md, &payload, wait, None)?;
                done.fetch_add(1, Ordering::Relaxed);
            }
            Ok(())
        }));
    }
    let (t, n0, cpu0) = (Instant::now(), count.load(Ordering::Relaxed), qm_cpu(procs));
    std::thread::sleep(Duration::from_secs(a.seconds.max(1)));
    let n = count.load(Ordering::Relaxed) - n0;
    let el = t.elapsed().as_secs_f64();
    let cpu = qm_cpu(procs) - cpu0;
    stop.store(true, Ordering::Relaxed);
    join_all(requesters)?;
    stop_responders.store(true, Ordering::Relaxed);
    join_all(responders)?;
    Ok(Rate {
        per_s: n as f64 / el,
        cpu_us: cpu * 1e6 / (n.max(1) as f64),
    })
}

pub(super) fn run(a: &BenchArgs) -> CliResult {
    let bed = setup(true)?;
    let ports = bed
        .tls_ports
        .ok_or_else(|| "bench: no TLS listeners".to_string())?;
    let ca = bed.root.join("ca");
    let app = bed.root.join("app");
    let (ca_s, app_s) = (ca.to_string_lossy(), app.to_string_lossy());
    bed.sealmq(
        "ca",
        &["keystore", "init", &app_s, "--dn", APP_DN, "--ca", &ca_s],
        None,
    )?;
    let ca_cert = ca.join("identity.pem");
    bed.sealmq(
        "ca",
        &["keystore", "trust", &app_s, &ca_cert.to_string_lossy()],
        None,
    )?;
    let pairs = a.pairs.max(1);
    define(&bed, "single", SINGLE, pairs)?;
    let act = bed
        .active()
        .ok_or_else(|| "bench: no active instance".to_string())?;
    define(&bed, act, HA, pairs)?;
    let single_dir = bed.qm_dir("single", SINGLE);
    let instances: Vec<PathBuf> = NAMES.iter().map(|n| bed.qm_dir(n, HA)).collect();
    let single_addr = format!("127.0.0.1:{}", ports[3]);
    let (mut single, mut ha, mut single_cpu, mut ha_cpu) = (vec![], vec![], vec![], vec![]);
    for _ in 0..a.rounds.max(1) {
        let r = rr_rate(&single_addr, &app, std::slice::from_ref(&single_dir), a)?;
        single.push(r.per_s);
        single_cpu.push(r.cpu_us);
        let act = bed
            .active()
            .ok_or_else(|| "bench: no active instance".to_string())?;
        let i = NAMES.iter().position(|n| *n == act).unwrap_or(0);
        let r = rr_rate(&format!("127.0.0.1:{}", ports[i]), &app, &instances, a)?;
        ha.push(r.per_s);
        ha_cpu.push(r.cpu_us);
    }
    let (s, h) = (median(&mut single), median(&mut ha));
    let (sc, hc) = (median(&mut single_cpu), median(&mut ha_cpu));
    let ratio = h / s.max(1e-9);
    let size = a.size.unwrap_or(2048);
    println!(
        "persistent request/reply of {size} B over TLS, {pairs} pair(s): single {s:.0}/s, \
         replicated {h:.0}/s, ratio {ratio:.2}; queue manager CPU per round trip: single \
         {sc:.0} µs, three instances {hc:.0} µs"
    );
    if a.json {
        let report = serde_json::json!({
            "scenario": "ha-rr", "tls": true, "pairs": pairs, "message_bytes": size,
            "rr_single_per_s": s, "rr_replicated_per_s": h, "rr_ratio": ratio,
            "rr_single_cpu_us": sc, "rr_replicated_cpu_us": hc,
        });
        println!("{report}");
    }
    Ok(())
}

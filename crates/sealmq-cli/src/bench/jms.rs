//! `sealmq bench jms --messages N --size BYTES --producers 1,16 [--rounds R] [--json]`: the same
//! JMS application (benches/jms/JmsBench.java) on IBM MQ classes for JMS over MQ's client
//! protocol and on Apache Qpid JMS over AMQP, next to sealmq's native client over TCP, against
//! one queue manager, side by side in one run (interleaved rounds, medians).
//!
//! - put: PRODUCERS applications, each its own connection, send persistent messages outside a
//!   transaction, each stored (durably) before the send returns.
//! - rr: PRODUCERS requesters send non-persistent requests one at a time and wait for each
//!   reply (JMS: a temporary reply queue each; native: a reply queue per pair); PRODUCERS
//!   responders answer them.
//!
//! The Java programs need the client libraries `./test` fetches (target/ibm-mq-lib,
//! target/jms-lib) and `javac`; the program is compiled into a temporary directory.

use super::app::per_second;
use super::common::{BenchArgs, mqsc};
use crate::CliResult;
use sealmq_client::Client;
use sealmq_engine::mqi::{GetOptions, OpenOptions};
use sealmq_engine::{Md, Persistence};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const CHANNEL: &str = "BENCH.JMS.SVRCONN";
const AMQP: &str = "BENCH.JMS.AMQP";
const QUEUE: &str = "BENCH.JMS.Q";
const REQUESTS: &str = "BENCH.JMS.REQ";
const USER: &str = "benchapp";

/// The repository's root (the Java program and the client libraries are found from it).
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Compiles JmsBench.java against both JMS clients; the class directory.
fn compile(work: &Path) -> CliResult<PathBuf> {
    let (ibm, qpid) = (
        root().join("target/ibm-mq-lib"),
        root().join("target/jms-lib"),
    );
    for (lib, what) in [(&ibm, "IBM MQ classes for JMS"), (&qpid, "Qpid JMS")] {
        if !lib.is_dir() {
            return Err(format!(
                "{what} is not in {} (./test --install-only fetches it)",
                lib.display()
            )
            .into());
        }
    }
    let classes = work.join("classes");
    std::fs::create_dir_all(&classes).map_err(|e| e.to_string())?;
    let out = std::process::Command::new("javac")
        .arg("-d")
        .arg(&classes)
        .arg("-cp")
        .arg(format!("{}/*:{}/*", ibm.display(), qpid.display()))
        .arg(root().join("benches/jms/JmsBench.java"))
        .output()
        .map_err(|e| format!("javac: {e}"))?;
    if !out.status.success() {
        return Err(format!("javac: {}", String::from_utf8_lossy(&out.stderr)).into());
    }
    Ok(classes)
}

/// One run of the Java program: its rate.
fn java(
    classes: &Path,
    provider: &str,
    to: &[&str],
    mode: &str,
    p: usize,
    n: u64,
    size: usize,
) -> CliResult<f64> {
    let lib = if provider == "ibm" {
        "ibm-mq-lib"
    } else {
        "jms-lib"
    };
    let cp = format!(
        "{}:{}/*",
        classes.display(),
        root().join("target").join(lib).display()
    );
    let out = std::process::Command::new("java")
        .current_dir(classes)
        .args(["-cp", &cp, "JmsBench", provider])
        .args(to)
        .args([mode, &p.to_string(), &n.to_string(), &size.to_string()])
        .output()
        .map_err(|e| format!("java: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let v: serde_json::Value = text
        .lines()
        .last()
        .and_then(|l| serde_json::from_str(l).ok())
        .ok_or_else(|| {
            format!(
                "{provider} {mode}: {text}{}",
                String::from_utf8_lossy(&out.stderr)
            )
        })?;
    Ok(v["rate"].as_f64().unwrap_or(0.0))
}

/// Native persistent puts: `p` clients over TCP, `n` messages in all.
fn native_put(addr: &str, p: usize, n: u64, size: usize) -> CliResult<f64> {
    let each = (n / p as u64).max(1);
    let clients = (0..p)
        .map(|_| {
            let mut c = Client::connect_tcp_channel(addr, CHANNEL, "bench-native")?;
            let (h, _) = c.open(QUEUE, OpenOptions::output())?;
            Ok((c, h))
        })
        .collect::<Result<Vec<_>, sealmq_client::ClientError>>()
        .map_err(|e| e.to_string())?;
    let payload = vec![0x61_u8; size];
    let t = Instant::now();
    std::thread::scope(|s| {
        let runs: Vec<_> = clients
            .into_iter()
            .map(|(mut c, h)| {
                let payload = &payload;
                s.spawn(move || {
                    for _ in 0..each {
                        let mut md = Md {
                            persistence: Persistence::Persistent,
                            ..Md::default()
                        };
                        c.put(h, &mut md, payload, false)?;
                    }
                    Ok::<(), sealmq_client::ClientError>(())
                })
            })
            .collect();
        runs.into_iter().try_for_each(|r| {
            r.join()
                .map_err(|_| "a producer panicked".to_string())?
                .map_err(|e| e.to_string())
        })
    })?;
    Ok(per_second(each * p as u64, t))
}

/// Native request/reply: `p` requester/responder pairs, each pair its request and reply
/// queues, non-persistent, `n` round trips in all.
fn native_rr(addr: &str, p: usize, n: u64, size: usize) -> CliResult<f64> {
    let each = (n / p as u64).max(1);
    let wait = GetOptions {
        wait: Some(Duration::from_secs(30)),
        ..Default::default()
    };
    let payload = vec![0x61_u8; size];
    let t = Instant::now();
    std::thread::scope(|s| {
        let mut runs = Vec::new();
        for i in 0..p {
            let (req, rpl) = (format!("BENCH.JMS.REQ.{i}"), format!("BENCH.JMS.RPL.{i}"));
            let (wait, payload) = (&wait, &payload);
            let pair = |mine_in: String, mine_out: String, first: bool| {
                move || -> Result<(), sealmq_client::ClientError> {
                    let mut c = Client::connect_tcp_channel(addr, CHANNEL, "bench-native")?;
                    let (o, _) = c.open(&mine_out, OpenOptions::output())?;
                    let (g, _) = c.open(&mine_in, OpenOptions::input())?;
                    for _ in 0..each {
                        if first {
                            c.put(o, &mut Md::default(), payload, false)?;
                            c.get(g, wait)?;
                        } else {
                            c.get(g, wait)?;
                            c.put(o, &mut Md::default(), payload, false)?;
                        }
                    }
                    Ok(())
                }
            };
            runs.push(s.spawn(pair(rpl.clone(), req.clone(), true)));
            runs.push(s.spawn(pair(req, rpl, false)));
        }
        runs.into_iter().try_for_each(|r| {
            r.join()
                .map_err(|_| "a pair panicked".to_string())?
                .map_err(|e| e.to_string())
        })
    })?;
    Ok(per_second(each * p as u64, t))
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

pub(super) fn run(a: &BenchArgs, dir: &Path) -> CliResult {
    let n = a.messages.unwrap_or(5000);
    let size = a.size.unwrap_or(1024);
    let producers: Vec<usize> = a
        .producers
        .split(',')
        .map(|p| {
            p.trim()
                .parse::<usize>()
                .map_err(|e| format!("--producers: {e}"))
        })
        .collect::<Result<_, _>>()?;
    let work = std::env::temp_dir().join(format!("sealmq-bench-jms-{}", std::process::id()));
    let classes = compile(&work)?;
    let (port, amqp) = (super::net::free_port()?, super::net::free_port()?);
    let most = producers.iter().copied().max().unwrap_or(1);
    let mut script = format!(
        "DEFINE QLOCAL({QUEUE}) MAXDEPTH(999999999) REPLACE\n\
         DEFINE QLOCAL({REQUESTS}) MAXDEPTH(999999999) REPLACE\n\
         DEFINE CHANNEL({CHANNEL}) CHLTYPE(SVRCONN) MCAUSER('{USER}') SHARECNV(10) REPLACE\n\
         DEFINE CHANNEL({AMQP}) CHLTYPE(AMQP) PORT({amqp}) IPADDR(127.0.0.1) MCAUSER('{USER}') REPLACE\n\
         DEFINE LISTENER(BENCH.JMS.LSR) TRPTYPE(TCP) PORT({port}) IPADDR(127.0.0.1) CONTROL(MANUAL) REPLACE\n\
         SET AUTHREC OBJTYPE(QMGR) PRINCIPAL('{USER}') AUTHADD(CONNECT,INQ)\n\
         SET AUTHREC PROFILE('BENCH.**') OBJTYPE(QUEUE) PRINCIPAL('{USER}') AUTHADD(PUT,GET,BROWSE,INQ)\n\
         SET AUTHREC PROFILE('SYSTEM.DEFAULT.MODEL.QUEUE') OBJTYPE(QUEUE) PRINCIPAL('{USER}') AUTHADD(PUT,GET,BROWSE,INQ,DSP)\n\
         SET AUTHREC PROFILE('AMQ.**') OBJTYPE(QUEUE) PRINCIPAL('{USER}') AUTHADD(PUT,GET,BROWSE,INQ)\n\
         SET AUTHREC PROFILE('AMQP.**') OBJTYPE(QUEUE) PRINCIPAL('{USER}') AUTHADD(PUT,GET,BROWSE,INQ)\n\
         START LISTENER(BENCH.JMS.LSR)\nSTART CHANNEL({AMQP})\n"
    );
    for i in 0..most {
        script.push_str(&format!(
            "DEFINE QLOCAL(BENCH.JMS.REQ.{i}) REPLACE\nDEFINE QLOCAL(BENCH.JMS.RPL.{i}) REPLACE\n"
        ));
    }
    mqsc(dir, &script)?;
    let addr = format!("127.0.0.1:{port}");
    let url = format!("amqp://127.0.0.1:{amqp}");
    let ibm_to = [port.to_string(), CHANNEL.to_string()];
    let ibm_to: Vec<&str> = ibm_to.iter().map(String::as_str).collect();
    let qpid_to = [url.as_str(), "-"];
    let rounds = a.rounds.max(1);
    // [producers][mode][which] -> rates: which 0 native, 1 IBM JMS (MQ), 2 Qpid JMS (AMQP).
    let mut f = vec![
        [
            [Vec::new(), Vec::new(), Vec::new()],
            [Vec::new(), Vec::new(), Vec::new()]
        ];
        producers.len()
    ];
    for round in 0..rounds {
        for (k, &p) in producers.iter().enumerate() {
            for (m, mode) in ["put", "rr"].iter().enumerate() {
                let rr = *mode == "rr";
                let nat = if rr {
                    native_rr(&addr, p, n, size)?
                } else {
                    native_put(&addr, p, n, size)?
                };
                let ibm = java(&classes, "ibm", &ibm_to, mode, p, n, size)?;
                let qpid = java(&classes, "qpid", &qpid_to, mode, p, n, size)?;
                f[k][m][0].push(nat);
                f[k][m][1].push(ibm);
                f[k][m][2].push(qpid);
                if a.json {
                    println!(
                        "{}",
                        serde_json::json!({"scenario": "jms", "round": round + 1, "mode": mode,
                            "producers": p, "messages": n, "size": size, "native_per_s": nat,
                            "ibm_jms_mq_per_s": ibm, "qpid_jms_amqp_per_s": qpid})
                    );
                }
            }
        }
        // The put queue grows each round: emptied between rounds.
        mqsc(dir, &format!("CLEAR QLOCAL({QUEUE})\n"))?;
    }
    let _ = std::fs::remove_dir_all(&work);
    println!(
        "jms: {n} messages of {size} bytes per run, {rounds} round(s) (medians); put persistent, \
         request/reply non-persistent"
    );
    println!(
        "{:<16} {:>12} {:>14} {:>14} {:>10} {:>10}",
        "", "native", "IBM JMS (MQ)", "Qpid JMS", "MQ/AMQP", "MQ/native"
    );
    for (k, p) in producers.iter().enumerate() {
        for (m, mode) in ["put", "request/reply"].iter().enumerate() {
            let (nat, ibm, qpid) = (
                median(&f[k][m][0]),
                median(&f[k][m][1]),
                median(&f[k][m][2]),
            );
            println!(
                "{:<16} {:>10.0}/s {:>12.0}/s {:>12.0}/s {:>9.2}x {:>9.2}x",
                format!("{mode}, {p} prod."),
                nat,
                ibm,
                qpid,
                ibm / qpid.max(1e-9),
                ibm / nat.max(1e-9)
            );
        }
    }
    Ok(())
}

//! `sealmq bench SCENARIO`: the workloads of the reports against a real queue manager process,
//! with the rate and the CPU per transaction of the queue manager and of the applications
//! measured separately (SPEC §9).
//!
//! - `local-rr`: request/reply, 2 KB non-persistent, N requester/server pairs, each pair its
//!   own request and reply queues; a transaction is one round trip.
//! - `put1`: 1 KB put1 + commit loop (persistent unless `--nonpersistent`); a transaction is
//!   one put1 and its commit.
//!
//! Without `--qm`, a throw-away queue manager is created and started in a temporary home.

use crate::CliResult;
use clap::Args;
use sealmq_client::Client;
use sealmq_engine::mqi::{GetOptions, OpenOptions};
use sealmq_engine::{Match, Md, MsgType, Persistence};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

#[derive(Args)]
pub struct BenchArgs {
    /// local-rr or put1.
    pub scenario: String,
    /// Use this existing, running queue manager instead of a throw-away one.
    #[arg(long)]
    pub qm: Option<String>,
    #[arg(long, default_value_t = 10)]
    pub seconds: u64,
    /// Requester/server pairs (local-rr) or putters (put1).
    #[arg(long, default_value_t = 1)]
    pub pairs: usize,
    /// Message size in bytes (default: 2048 for local-rr, 1024 for put1).
    #[arg(long)]
    pub size: Option<usize>,
    /// put1: non-persistent messages.
    #[arg(long)]
    pub nonpersistent: bool,
    /// Print one JSON object per run.
    #[arg(long)]
    pub json: bool,
}

/// CPU seconds (user + system) of a process, from /proc.
fn cpu_seconds(pid: &str) -> f64 {
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            let after = s.rsplit_once(')')?.1;
            let f: Vec<&str> = after.split_whitespace().collect();
            Some((f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?) / ticks)
        })
        .unwrap_or(0.0)
}

struct Qm {
    dir: PathBuf,
    pid: String,
    _home: Option<tempfile_dir::TempHome>,
}

mod tempfile_dir {
    /// A temporary SEALMQ_HOME removed (after stopping its queue manager) on drop.
    pub struct TempHome(pub std::path::PathBuf);
    impl Drop for TempHome {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

fn prepare(a: &BenchArgs) -> CliResult<Qm> {
    if let Some(name) = &a.qm {
        let dir = crate::qm_cmd::qm_dir(name);
        let pid = std::fs::read_to_string(dir.join("qm.pid"))
            .map_err(|_| format!("queue manager '{name}' is not running"))?;
        return Ok(Qm {
            dir,
            pid: pid.trim().to_string(),
            _home: None,
        });
    }
    let home = std::env::temp_dir().join(format!("sealmq-bench-{}", std::process::id()));
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    for args in [
        vec!["create", "BENCH.QM"],
        vec!["start", "BENCH.QM", "--background"],
    ] {
        let out = std::process::Command::new(&exe)
            .args(&args)
            .env("SEALMQ_HOME", &home)
            .output()
            .map_err(|e| e.to_string())?;
        if !out.status.success() {
            return Err(format!(
                "bench: sealmq {} failed: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr)
            )
            .into());
        }
    }
    let dir = home.join("qmgrs").join("BENCH.QM");
    let pid = std::fs::read_to_string(dir.join("qm.pid")).map_err(|e| e.to_string())?;
    Ok(Qm {
        dir,
        pid: pid.trim().to_string(),
        _home: Some(tempfile_dir::TempHome(home)),
    })
}

fn stop_temp(qm: &Qm) {
    if qm._home.is_some()
        && let Ok(mut c) = Client::connect_local(&qm.dir, "bench-stop")
    {
        let _ = c.stop(true);
        drop(c);
        let deadline = Instant::now() + Duration::from_secs(30);
        while crate::qm_cmd::running(&qm.dir) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

fn mqsc(dir: &Path, script: &str) -> CliResult {
    let mut c = Client::connect_local(dir, "bench-setup").map_err(|e| e.to_string())?;
    let (out, failed) = c.mqsc(script, false).map_err(|e| e.to_string())?;
    if failed > 0 {
        return Err(format!("bench setup failed:\n{out}").into());
    }
    Ok(())
}

pub fn run(a: BenchArgs) -> CliResult {
    let qm = prepare(&a)?;
    let r = match a.scenario.as_str() {
        "local-rr" => local_rr(&a, &qm),
        "put1" => put1(&a, &qm),
        other => Err(format!("unknown scenario '{other}': use local-rr or put1").into()),
    };
    stop_temp(&qm);
    r
}

/// What one run measured.
struct Measured {
    txns: u64,
    elapsed: f64,
    qm_cpu: f64,
    app_cpu: f64,
}

fn report(a: &BenchArgs, scenario: &str, m: Measured, size: usize, persistent: bool) {
    let Measured {
        txns,
        elapsed,
        qm_cpu,
        app_cpu,
    } = m;
    let rate = txns as f64 / elapsed;
    let per = |cpu: f64| {
        if txns > 0 {
            cpu * 1e6 / txns as f64
        } else {
            0.0
        }
    };
    if a.json {
        println!(
            "{}",
            serde_json::json!({
                "scenario": scenario,
                "rate_per_s": rate,
                "qm_cpu_us_per_txn": per(qm_cpu),
                "app_cpu_us_per_txn": per(app_cpu),
                "transactions": txns,
                "seconds": elapsed,
                "pairs": a.pairs,
                "message_bytes": size,
                "persistent": persistent,
            })
        );
    } else {
        println!(
            "scenario   pairs  msg bytes  persistent  rate/s      QM CPU us/txn  app CPU us/txn"
        );
        println!(
            "{scenario:<10} {:>5}  {size:>9}  {:>10}  {rate:>10.0}  {:>13.1}  {:>14.1}",
            a.pairs,
            if persistent { "yes" } else { "no" },
            per(qm_cpu),
            per(app_cpu)
        );
    }
}

fn local_rr(a: &BenchArgs, qm: &Qm) -> CliResult {
    let size = a.size.unwrap_or(2048);
    let mut script = String::new();
    for i in 0..a.pairs {
        script.push_str(&format!(
            "DEFINE QLOCAL(BENCH.REQ.{i}) REPLACE\nDEFINE QLOCAL(BENCH.REP.{i}) REPLACE\n"
        ));
    }
    mqsc(&qm.dir, &script)?;
    let stop = Arc::new(AtomicBool::new(false));
    // Responders stop only after every requester has: a request in flight always gets its reply.
    let stop_responders = Arc::new(AtomicBool::new(false));
    let count = Arc::new(AtomicU64::new(0));
    let mut threads = Vec::new();
    let mut responders = Vec::new();
    for i in 0..a.pairs {
        let (dir, halt) = (qm.dir.clone(), stop_responders.clone());
        responders.push(std::thread::spawn(move || -> Result<(), String> {
            let stop = halt;
            let mut c = Client::connect_local(&dir, "bench-server").map_err(|e| e.to_string())?;
            let (req, _) = c
                .open(&format!("BENCH.REQ.{i}"), OpenOptions::input())
                .map_err(|e| e.to_string())?;
            let (rep, _) = c
                .open(&format!("BENCH.REP.{i}"), OpenOptions::output())
                .map_err(|e| e.to_string())?;
            let gmo = GetOptions {
                wait: Some(Duration::from_millis(200)),
                ..Default::default()
            };
            while !stop.load(Ordering::Relaxed) {
                match c.get(req, &gmo) {
                    Ok(m) => {
                        let mut md = Md {
                            correl_id: m.md.msg_id,
                            msg_type: MsgType::Reply,
                            persistence: Persistence::NotPersistent,
                            ..Md::default()
                        };
                        c.put(rep, &mut md, &m.payload, false)
                            .map_err(|e| e.to_string())?;
                    }
                    Err(e) if e.reason == 2033 => {}
                    Err(e) => return Err(e.to_string()),
                }
            }
            Ok(())
        }));
        let (dir, halt, done) = (qm.dir.clone(), stop.clone(), count.clone());
        threads.push(std::thread::spawn(move || -> Result<(), String> {
            let (stop, count) = (halt, done);
            let mut c =
                Client::connect_local(&dir, "bench-requester").map_err(|e| e.to_string())?;
            let (req, _) = c
                .open(&format!("BENCH.REQ.{i}"), OpenOptions::output())
                .map_err(|e| e.to_string())?;
            let (rep, _) = c
                .open(&format!("BENCH.REP.{i}"), OpenOptions::input())
                .map_err(|e| e.to_string())?;
            let payload = vec![0x42u8; size];
            while !stop.load(Ordering::Relaxed) {
                let mut md = Md {
                    msg_type: MsgType::Request,
                    persistence: Persistence::NotPersistent,
                    ..Md::default()
                };
                c.put(req, &mut md, &payload, false)
                    .map_err(|e| e.to_string())?;
                let gmo = GetOptions {
                    wait: Some(Duration::from_secs(10)),
                    matching: Match {
                        correl_id: Some(md.msg_id),
                        msg_id: None,
                    },
                    ..Default::default()
                };
                c.get(rep, &gmo).map_err(|e| e.to_string())?;
                count.fetch_add(1, Ordering::Relaxed);
            }
            Ok(())
        }));
    }
    let (q0, a0, t0, c0) = (
        cpu_seconds(&qm.pid),
        cpu_seconds("self"),
        Instant::now(),
        count.load(Ordering::Relaxed),
    );
    std::thread::sleep(Duration::from_secs(a.seconds));
    let (q1, a1, el, c1) = (
        cpu_seconds(&qm.pid),
        cpu_seconds("self"),
        t0.elapsed().as_secs_f64(),
        count.load(Ordering::Relaxed),
    );
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        t.join()
            .map_err(|_| "a bench thread panicked".to_string())??;
    }
    stop_responders.store(true, Ordering::Relaxed);
    for t in responders {
        t.join()
            .map_err(|_| "a bench thread panicked".to_string())??;
    }
    let m = Measured {
        txns: c1 - c0,
        elapsed: el,
        qm_cpu: q1 - q0,
        app_cpu: a1 - a0,
    };
    report(a, "local-rr", m, size, false);
    Ok(())
}

fn put1(a: &BenchArgs, qm: &Qm) -> CliResult {
    let size = a.size.unwrap_or(1024);
    mqsc(
        &qm.dir,
        "DEFINE QLOCAL(BENCH.PUT1) REPLACE MAXDEPTH(999999999)\nCLEAR QLOCAL(BENCH.PUT1)",
    )?;
    let persistent = !a.nonpersistent;
    let stop = Arc::new(AtomicBool::new(false));
    let count = Arc::new(AtomicU64::new(0));
    let threads: Vec<_> = (0..a.pairs.max(1))
        .map(|_| {
            let (dir, stop, count) = (qm.dir.clone(), stop.clone(), count.clone());
            std::thread::spawn(move || -> Result<(), String> {
                let mut c = Client::connect_local(&dir, "bench-put1").map_err(|e| e.to_string())?;
                let payload = vec![0x42u8; size];
                while !stop.load(Ordering::Relaxed) {
                    let mut md = Md {
                        persistence: if persistent {
                            Persistence::Persistent
                        } else {
                            Persistence::NotPersistent
                        },
                        ..Md::default()
                    };
                    c.put1("BENCH.PUT1", &mut md, &payload, true)
                        .map_err(|e| e.to_string())?;
                    c.commit().map_err(|e| e.to_string())?;
                    count.fetch_add(1, Ordering::Relaxed);
                }
                Ok(())
            })
        })
        .collect();
    let (q0, a0, t0, c0) = (
        cpu_seconds(&qm.pid),
        cpu_seconds("self"),
        Instant::now(),
        count.load(Ordering::Relaxed),
    );
    std::thread::sleep(Duration::from_secs(a.seconds));
    let (q1, a1, el, c1) = (
        cpu_seconds(&qm.pid),
        cpu_seconds("self"),
        t0.elapsed().as_secs_f64(),
        count.load(Ordering::Relaxed),
    );
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        t.join()
            .map_err(|_| "a bench thread panicked".to_string())??;
    }
    let m = Measured {
        txns: c1 - c0,
        elapsed: el,
        qm_cpu: q1 - q0,
        app_cpu: a1 - a0,
    };
    report(a, "put1", m, size, persistent);
    Ok(())
}

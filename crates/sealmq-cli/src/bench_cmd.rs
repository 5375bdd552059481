//! `sealmq bench SCENARIO`: the workloads of the reports against a real queue manager process,
//! with the rate and the CPU per transaction of the queue manager and of the applications
//! measured separately (SPEC §9), under each quality of protection asked for.
//!
//! - `local-rr`: request/reply, 2 KB non-persistent (or `--persistent`), N requester/server
//!   pairs, each pair its own request and reply queues (or `--queues N` pairs of queues shared,
//!   the report's single- and 21-queue tests); a transaction is one round trip (two messages).
//! - `put1`: 1 KB put1 + commit loop (persistent unless `--nonpersistent`); a transaction is
//!   one put1 and its commit.
//!
//! `--qop` and `--key` take comma-separated lists; every combination runs in the same
//! invocation, side by side, and the table shows each rate against the first row's.
//! Without `--qm`, a throw-away queue manager is created and started in a temporary home.

#![allow(unsafe_code)]

use crate::CliResult;
use crate::bench_app::{join_all, open_q, request_reply};
use clap::Args;
use sealmq_client::Client;
use sealmq_engine::mqi::{GetOptions, OpenOptions};
use sealmq_engine::{Md, MsgType, Persistence};
use sealmq_protect::identity::IdentitySpec;
use sealmq_protect::{
    Dn, EncAlg, KeyKind, KeyReuse, Keystore, Options, Original, Policy, Protector, SignAlg,
};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

#[derive(Args)]
pub struct BenchArgs {
    /// local-rr, put1, mover-rr, stream, partner, deep, drain, amqp, ha, connections, fanout or
    /// servers.
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
    /// local-rr: persistent requests and replies (the report's single/multiple queue tests).
    #[arg(long)]
    pub persistent: bool,
    /// local-rr: request/reply queue pairs the pairs share (pair i uses pair i mod N); 1 is
    /// the report's single-queue test, 21 its multiple-queue one. Default: one per pair.
    #[arg(long)]
    pub queues: Option<usize>,
    /// local-rr: the applications' get buffer in bytes (default: large enough). A buffer
    /// smaller than a protected message's envelope costs a unit of work per get.
    #[arg(long)]
    pub buffer: Option<usize>,
    /// Qualities of protection: none, integrity, privacy, confidentiality (comma-separated).
    #[arg(long, default_value = "none")]
    pub qop: String,
    /// Key reuse for confidentiality: a count, disabled or unlimited.
    #[arg(long, default_value = "32")]
    pub key_reuse: String,
    /// Key types: rsa1024, rsa2048, rsa4096, p256, p384 (comma-separated).
    #[arg(long, default_value = "rsa2048")]
    pub key: String,
    /// Print one JSON object per run.
    #[arg(long)]
    pub json: bool,
    /// mover-rr: configurations, comma-separated: unprotected (no policies), end-to-end (the
    /// applications protect), interception (the requester's queue manager is a protected
    /// island: SPLPROT REMOVE on its sender, ASPOLICY on its receiver; the server side is plain).
    #[arg(long, default_value = "end-to-end")]
    pub config: String,
    /// mover-rr, stream: run the channels over TLS.
    #[arg(long)]
    pub tls: bool,
    /// With --tls: SSLRKEYC values to compare, comma-separated bytes (0: never).
    #[arg(long, default_value = "0")]
    pub sslrkeyc: String,
    /// Channel-initiator adapter counts to compare (CHIADAPS), comma-separated.
    #[arg(long, default_value = "8")]
    pub adapters: String,
    /// Channel-initiator dispatcher counts to compare (CHIDISPS), comma-separated.
    #[arg(long, default_value = "5")]
    pub dispatchers: String,
    /// partner: the partner's target put rate per second.
    #[arg(long, default_value_t = 10_000)]
    pub rate: u64,
    /// Repeat the whole set of runs this many times, interleaved,
    /// and end with the median of each (shared machines are noisy; ratios of medians of
    /// interleaved runs are what to compare).
    #[arg(long, default_value_t = 1)]
    pub rounds: usize,
    /// local-rr, put1: the throw-away queue manager encrypts its log at rest (a fresh master
    /// key in the environment of this run).
    #[arg(long)]
    pub dse: bool,
    /// deep, drain, amqp: how many messages fill the queue (amqp: put and got per way);
    /// fanout: deliveries per run (publications × subscribers).
    #[arg(long)]
    pub messages: Option<u64>,
    /// amqp: also measure this AMQP 1.0 broker (HOST:PORT, SASL ANONYMOUS, queue
    /// BENCH.AMQP.Q) with the same client in the same rounds (benches/artemis-amqp.sh).
    #[arg(long)]
    pub peer: Option<String>,
    /// ha: how many times the active instance is killed for the failover figures.
    #[arg(long)]
    pub kills: Option<usize>,
    /// drain: consumers draining the queue at once; fanout: subscribers (default 1, 10, 100).
    #[arg(long, default_value_t = 1)]
    pub consumers: usize,
    /// drain: asynchronous consume's window (messages pushed ahead).
    #[arg(long, default_value_t = 1000)]
    pub window: u32,
    /// fanout: subscriber counts to run, comma-separated (a `--consumers` above 1 overrides).
    #[arg(long, default_value = "1,10,100")]
    pub subscribers: String,
    /// fanout: subscribers take their messages by asynchronous consume (read-ahead) instead
    /// of one get request per message.
    #[arg(long)]
    pub consume: bool,
    /// connections: idle client connections held beside the busy pairs.
    #[arg(long, default_value_t = 10_000)]
    pub connections: usize,
}

/// A field of a process's /proc status, in its unit (kB for memory; 0 when unknown).
pub(crate) fn proc_status(pid: &str, key: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))
                .and_then(|v| v.split_whitespace().next()?.parse().ok())
        })
        .unwrap_or(0)
}

/// CPU seconds (user + system) of a process, from /proc.
pub(crate) fn cpu_seconds(pid: &str) -> f64 {
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

/// The queue manager a run uses; a throw-away one is stopped and removed on drop.
pub(crate) struct Qm {
    pub(crate) dir: PathBuf,
    pub(crate) pid: String,
    temp_home: Option<PathBuf>,
}

impl Drop for Qm {
    fn drop(&mut self) {
        let Some(home) = &self.temp_home else { return };
        if let Ok(mut c) = Client::connect_local(&self.dir, "bench-stop") {
            let _ = c.stop(true);
            drop(c);
            let deadline = Instant::now() + Duration::from_secs(30);
            while crate::qm_cmd::running(&self.dir) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        let _ = std::fs::remove_dir_all(home);
    }
}

pub(crate) fn prepare(a: &BenchArgs) -> CliResult<Qm> {
    if let Some(name) = &a.qm {
        let dir = crate::qm_cmd::qm_dir(name);
        let pid = std::fs::read_to_string(dir.join("qm.pid"))
            .map_err(|_| format!("queue manager '{name}' is not running"))?;
        return Ok(Qm {
            dir,
            pid: pid.trim().to_string(),
            temp_home: None,
        });
    }
    let home = std::env::temp_dir().join(format!("sealmq-bench-{}", std::process::id()));
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let dir = home.join("qmgrs").join("BENCH.QM");
    let mut qm = Qm {
        dir: dir.clone(),
        pid: String::new(),
        temp_home: Some(home.clone()),
    };
    let key = sealmq_storage::dse::new_master_hex()?;
    let mut create = vec!["create", "BENCH.QM"];
    if a.dse {
        create.extend(["--dse", "env:SEALMQ_BENCH_DSE_KEY"]);
    }
    for args in [create, vec!["start", "BENCH.QM", "--background"]] {
        let mut cmd = std::process::Command::new(&exe);
        cmd.env("SEALMQ_HOME", &home)
            .env("SEALMQ_BENCH_DSE_KEY", key.as_str());
        crate::bench_app::run_sealmq(&mut cmd, &args)?;
    }
    qm.pid = std::fs::read_to_string(dir.join("qm.pid"))
        .map_err(|e| e.to_string())?
        .trim()
        .to_string();
    Ok(qm)
}

/// A queue that takes as many messages of `size` bytes as a benchmark puts.
pub(crate) fn define_deep_queue(dir: &Path, queue: &str, size: usize) -> CliResult {
    mqsc(
        dir,
        &format!(
            "DEFINE QLOCAL({queue}) MAXDEPTH(999999999) MAXMSGL({}) REPLACE\n",
            size.max(4096)
        ),
    )
}

pub(crate) fn mqsc(dir: &Path, script: &str) -> CliResult {
    let mut c = Client::connect_local(dir, "bench-setup").map_err(|e| e.to_string())?;
    let (out, failed) = c.mqsc(script, false).map_err(|e| e.to_string())?;
    if failed > 0 {
        return Err(format!("bench setup failed:\n{out}").into());
    }
    Ok(())
}

/// One quality of protection with one key type: the keystore the applications use and the
/// policy their queues get.
pub(crate) struct Protection {
    pub(crate) qop: String,
    pub(crate) key: String,
    pub(crate) reuse: KeyReuse,
    pub(crate) keystore: Option<PathBuf>,
    opts: Options,
    pub(crate) policy: Option<Policy>,
}

impl Protection {
    pub(crate) fn new(qop: &str, key: &str, reuse: KeyReuse, work: &Path) -> CliResult<Protection> {
        let kind = KeyKind::parse(key)?;
        let opts = Options {
            insecure_rsa1024: kind == KeyKind::Rsa(1024),
            ..Options::default()
        };
        let (sign, enc) = match qop {
            "none" => (SignAlg::None, EncAlg::None),
            "integrity" => (SignAlg::Sha256, EncAlg::None),
            "privacy" => (SignAlg::Sha256, EncAlg::Aes256),
            "confidentiality" => (SignAlg::None, EncAlg::Aes256),
            other => {
                return Err(format!(
                    "unknown --qop '{other}': none, integrity, privacy or confidentiality"
                )
                .into());
            }
        };
        if qop == "none" {
            return Ok(Protection {
                qop: qop.into(),
                key: key.into(),
                reuse: KeyReuse::Disabled,
                keystore: None,
                opts,
                policy: None,
            });
        }
        let dn = Dn::parse(&format!("CN=bench-{key},O=sealmq"))?;
        let dir = work.join(format!("ks-{key}"));
        if !dir.join("keystore.toml").exists() {
            let mut spec = IdentitySpec::new(dn.clone(), kind, 30);
            spec.insecure_rsa1024 = opts.insecure_rsa1024;
            Keystore::init(&dir, &spec, None)?;
        }
        let mut p = Policy::none("BENCH");
        p.sign_alg = if sign != SignAlg::None && kind == KeyKind::P384 {
            SignAlg::Sha384
        } else {
            sign
        };
        p.enc_alg = enc;
        if enc != EncAlg::None {
            p.recipients = vec![dn];
        }
        let reuse = if qop == "confidentiality" {
            reuse
        } else {
            KeyReuse::Disabled
        };
        p.key_reuse = reuse;
        Ok(Protection {
            qop: qop.into(),
            key: key.into(),
            reuse,
            keystore: Some(dir),
            opts,
            policy: Some(p),
        })
    }

    /// MQSC that sets (or removes) the policy of each queue.
    pub(crate) fn script(&self, queues: &[String]) -> String {
        let mut s = String::new();
        for q in queues {
            match &self.policy {
                Some(p) => {
                    let mut p = p.clone();
                    p.name = q.clone();
                    s.push_str(&sealmq_mqsc::exec::policy_command(&p));
                }
                None => s.push_str(&format!("SET POLICY({q}) SIGNALG(NONE) ENCALG(NONE)")),
            }
            s.push('\n');
        }
        s
    }

    pub(crate) fn client(&self, dir: &Path, appl: &str) -> Result<Client, String> {
        let mut c = Client::connect_local(dir, appl).map_err(|e| e.to_string())?;
        if let Some(ks) = &self.keystore {
            c.set_keystore_with(ks, self.opts.clone())
                .map_err(|e| e.to_string())?;
        }
        Ok(c)
    }

    /// Private- plus public-key operations so far in this process for this keystore.
    pub(crate) fn asym_ops(&self, dir: &Path) -> u64 {
        let Some(_) = &self.keystore else { return 0 };
        self.client(dir, "bench-counters")
            .ok()
            .and_then(|c| c.protection_counters())
            .map(|s| s.private_key_ops() + s.public_key_ops())
            .unwrap_or(0)
    }

    /// Size of a message of `size` bytes as stored under this protection.
    pub(crate) fn stored_bytes(&self, size: usize) -> CliResult<usize> {
        match (&self.keystore, &self.policy) {
            (Some(ks), Some(p)) => {
                let prot = Protector::with_options(Keystore::load(ks)?, self.opts.clone());
                Ok(prot
                    .protect(p, &vec![0x42u8; size], Original::default())?
                    .len())
            }
            _ => Ok(size),
        }
    }
}

/// What one run measured.
struct Measured {
    txns: u64,
    msgs: u64,
    elapsed: f64,
    qm_cpu: f64,
    app_cpu: f64,
    asym: u64,
}

fn measure(
    qm: &Qm,
    prot: &Protection,
    secs: u64,
    count: &AtomicU64,
    per_txn_msgs: u64,
) -> Measured {
    let (q0, a0, t0, c0, o0) = (
        cpu_seconds(&qm.pid),
        cpu_seconds("self"),
        Instant::now(),
        count.load(Ordering::Relaxed),
        prot.asym_ops(&qm.dir),
    );
    std::thread::sleep(Duration::from_secs(secs));
    let (q1, a1, el, c1, o1) = (
        cpu_seconds(&qm.pid),
        cpu_seconds("self"),
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
        asym: o1 - o0,
    }
}

pub fn run(a: BenchArgs) -> CliResult {
    if matches!(a.scenario.as_str(), "mover-rr" | "stream" | "partner") {
        return crate::bench_chl::run(&a);
    }
    if a.scenario == "ha" {
        return crate::bench_ha::run(&a);
    }
    if a.scenario == "connections" {
        return crate::bench_conns::run(&a);
    }
    if a.scenario == "servers" {
        return crate::bench_servers::run(&a);
    }
    if matches!(a.scenario.as_str(), "deep" | "drain" | "amqp" | "fanout") {
        let qm = prepare(&a)?;
        let r = if a.scenario == "fanout" {
            crate::bench_fanout::run(&a, &qm.dir, &qm.pid)
        } else if a.scenario == "deep" {
            crate::bench_deep::run(&a, &qm.dir, &qm.pid)
        } else if a.scenario == "amqp" {
            crate::bench_amqp::run(&a, &qm.dir)
        } else {
            crate::bench_drain::run(&a, &qm.dir, &qm.pid)
        };
        drop(qm);
        return r;
    }
    let qm = prepare(&a)?;
    let work = std::env::temp_dir().join(format!("sealmq-bench-ks-{}", std::process::id()));
    std::fs::create_dir_all(&work).map_err(|e| e.to_string())?;
    let reuse = KeyReuse::parse(&a.key_reuse)?;
    let mut all: Vec<(String, f64)> = Vec::new();
    let r = (|| -> CliResult {
        for round in 0..a.rounds.max(1) {
            if a.rounds > 1 && !a.json {
                println!("round {}/{}", round + 1, a.rounds);
            }
            run_round(&a, &qm, &work, reuse, &mut all)?;
        }
        print_medians(&a, &all);
        Ok(())
    })();
    let _ = std::fs::remove_dir_all(&work);
    drop(qm);
    r
}

/// With `--rounds` above 1: the median rate of each run over the rounds, against the first
/// run's median (shared machines are noisy; these are the figures to compare).
pub(crate) fn print_medians(a: &BenchArgs, all: &[(String, f64)]) {
    if a.rounds <= 1 {
        return;
    }
    let mut keys: Vec<&String> = Vec::new();
    for (k, _) in all {
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    let median = |k: &String| {
        let mut v: Vec<f64> = all
            .iter()
            .filter(|(x, _)| x == k)
            .map(|(_, r)| *r)
            .collect();
        v.sort_by(|a, b| a.total_cmp(b));
        v.get(v.len() / 2).copied().unwrap_or(0.0)
    };
    let base = keys.first().map(|k| median(k)).unwrap_or(1.0);
    if a.json {
        for k in &keys {
            let m = median(k);
            println!(
                "{}",
                serde_json::json!({"median_of": k.as_str(), "rounds": a.rounds, "rate_per_s": m, "vs_first": m / base})
            );
        }
    } else {
        println!("median of {} rounds:", a.rounds);
        for k in &keys {
            let m = median(k);
            println!("  {k:<80} {m:>10.0}/s  {:.3}x", m / base);
        }
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
                report(a, &prot, &m, size, persistent, stored, rate / base, first);
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

#[allow(clippy::too_many_arguments)]
fn report(
    a: &BenchArgs,
    p: &Protection,
    m: &Measured,
    size: usize,
    persistent: bool,
    stored: usize,
    vs_first: f64,
    header: bool,
) {
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
            "qop              key      reuse      rate/s  vs first  QM us/txn  app us/txn  asym ops/msg  stored B"
        );
    }
    println!(
        "{:<16} {:<8} {:<9} {:>8.0}  {:>7.2}x  {:>9.1}  {:>10.1}  {:>12.3}  {:>8}",
        p.qop,
        key,
        p.reuse.to_string(),
        rate,
        vs_first,
        per(m.qm_cpu),
        per(m.app_cpu),
        asym,
        stored
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
            let req = open_q(&mut c, &format!("BENCH.REQ.{i}"), OpenOptions::input())?;
            let rep = open_q(&mut c, &format!("BENCH.REP.{i}"), OpenOptions::output())?;
            let gmo = GetOptions {
                wait: Some(Duration::from_millis(200)),
                buffer,
                ..Default::default()
            };
            while !halt.load(Ordering::Relaxed) {
                match c.get(req, &gmo) {
                    Ok(m) => {
                        let mut md = Md {
                            correl_id: m.md.msg_id,
                            msg_type: MsgType::Reply,
                            persistence,
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

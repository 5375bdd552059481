//! What the benchmark scenarios share: `sealmq bench`'s arguments, the queue manager under
//! test (a throw-away one unless `--qm`), CPU and memory readings of a process, MQSC, the
//! protection a run is measured under, and the medians over rounds.

#![allow(unsafe_code)]

use crate::CliResult;
use clap::Args;
use sealmq_client::Client;
use sealmq_protect::identity::IdentitySpec;
use sealmq_protect::{
    Dn, EncAlg, KeyKind, KeyReuse, Keystore, Options, Original, Policy, Protector, SignAlg,
};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

#[derive(Args)]
pub struct BenchArgs {
    /// local-rr, put1, mover-rr, stream, partner, deep, drain, amqp, jms, ha, connections, reprotect,
    /// fanout or servers.
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
    /// Key types: rsa1024, rsa2048, rsa4096, p256, p384, ml-dsa-44/65/87, ml-kem-512/768/1024 (comma-separated; ML-KEM cannot sign: confidentiality only; an ML-DSA signer reads with an ML-KEM-768 key).
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
    /// mover-rr, stream: run the channels over TLS. ha: IBM's Native HA workload instead
    /// (persistent request/reply, 2 KiB by default, of `--pairs` pairs of applications over
    /// TLS, single against replicated)
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
    /// `servers`: the `sealmq` executable of the build to compare with (e.g. an older
    /// release's `target/release/sealmq`); its queue manager runs beside this build's.
    #[arg(long, value_name = "PATH")]
    pub baseline: Option<std::path::PathBuf>,
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
    /// jms: producer counts to run, comma-separated (each count: that many producers, and as
    /// many requesters and responders).
    #[arg(long, default_value = "1,16")]
    pub producers: String,
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
    cpu_split(pid).map_or(0.0, |(user, system)| user + system)
}

/// CPU seconds of a process in user space and in the kernel, from /proc.
pub(crate) fn cpu_split(pid: &str) -> Option<(f64, f64)> {
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = s.rsplit_once(')')?.1;
    let f: Vec<&str> = after.split_whitespace().collect();
    let user = f.get(11)?.parse::<f64>().ok()?;
    let system = f.get(12)?.parse::<f64>().ok()?;
    Some((user / ticks, system / ticks))
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
            while crate::home::running(&self.dir) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        let _ = std::fs::remove_dir_all(home);
    }
}

pub(crate) fn prepare(a: &BenchArgs) -> CliResult<Qm> {
    if let Some(name) = &a.qm {
        let dir = crate::home::qm_dir(name);
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
        super::app::run_sealmq(&mut cmd, &args)?;
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
            // Post-quantum keys are issued by a CA of the bench's own: ML-KEM cannot sign its
            // certificate, and an ML-DSA signer reads with an added ML-KEM-768 key.
            let pq = matches!(kind, KeyKind::MlKem(_) | KeyKind::MlDsa(_));
            let ca = pq.then(|| work.join("ks-ca"));
            if let Some(ca) = &ca
                && !ca.join("keystore.toml").exists()
            {
                let mut ca_spec =
                    IdentitySpec::new(Dn::parse("CN=bench-ca,O=sealmq")?, KeyKind::P256, 30);
                ca_spec.authority = true;
                Keystore::init(ca, &ca_spec, None)?;
            }
            let mut ks = Keystore::init(&dir, &spec, ca.as_deref())?;
            if let (KeyKind::MlDsa(_), Some(ca)) = (kind, &ca) {
                ks.add_key(KeyKind::MlKem(768), 30, ca)?;
            }
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

//! `sealmq bench ha`: a replicated queue manager (three instances on loopback) against a
//! single one, side by side in one run (docs/benchmarks.md):
//!
//! - persistent put rate, each put its own unit of work (acknowledged only once durable: on
//!   one disk for the single queue manager, on a majority of the group for the replicated
//!   one), with 1 and 16 producers, medians of interleaved rounds and their ratio;
//! - failover: the active instance killed with `kill -9` `--kills` times, the time until
//!   another instance accepts applications (median and worst);
//! - catch-up: an instance stopped while `--messages` persistent messages of `--size` bytes
//!   (1 KiB by default) are put, then started: the time until it holds the whole log again;
//! - rebuild: that instance's disk wiped (identity and group kept), then started: the time
//!   until it holds the group's whole log again (the active instance never purged its log);
//! - snapshot rejoin: the active role moved to the third instance, whose Raft log was purged
//!   behind its snapshots, and the wiped one started again: the time until it is in sync,
//!   having installed a snapshot and the log after it.

use super::app::{join_all, open_q};
use super::common::BenchArgs;
use crate::CliResult;
use sealmq_client::Client;
use sealmq_engine::{Md, OpenOptions, Persistence};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

pub(super) const SINGLE: &str = "BENCH.SINGLE";
pub(super) const HA: &str = "BENCH.HA";
pub(super) const NAMES: [&str; 3] = ["a", "b", "c"];

pub(super) struct Bed {
    pub(super) root: PathBuf,
    exe: PathBuf,
    /// With TLS client listeners (`bench ha --tls`): each instance's port, then the single
    /// queue manager's.
    pub(super) tls_ports: Option<[u16; 4]>,
}

impl Bed {
    fn home(&self, who: &str) -> PathBuf {
        self.root.join(who)
    }

    pub(super) fn qm_dir(&self, who: &str, qm: &str) -> PathBuf {
        self.home(who).join("qmgrs").join(qm)
    }

    pub(super) fn sealmq(
        &self,
        who: &str,
        args: &[&str],
        stdin: Option<&str>,
    ) -> CliResult<String> {
        use std::io::Write;
        let mut c = Command::new(&self.exe);
        c.args(args)
            .env("SEALMQ_HOME", self.home(who))
            .env_remove("SEALMQ_KEYSTORE")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let mut child = c.spawn().map_err(|e| e.to_string())?;
        if let (Some(s), Some(mut i)) = (stdin, child.stdin.take()) {
            let _ = i.write_all(s.as_bytes());
        }
        let out = child.wait_with_output().map_err(|e| e.to_string())?;
        if !out.status.success() {
            return Err(format!(
                "bench: sealmq {} failed: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr)
            )
            .into());
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// The instance of the group that serves applications now.
    pub(super) fn active(&self) -> Option<&'static str> {
        NAMES
            .into_iter()
            .find(|n| Client::connect_local(&self.qm_dir(n, HA), "bench-probe").is_ok())
    }

    fn wait<T>(
        &self,
        what: &str,
        limit: Duration,
        mut f: impl FnMut() -> Option<T>,
    ) -> CliResult<T> {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(t) = f() {
                return Ok(t);
            }
            if Instant::now() > deadline {
                return Err(format!("bench: timed out waiting for {what}").into());
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn in_sync(&self) -> CliResult {
        self.wait("every instance in sync", Duration::from_secs(900), || {
            let a = self.active()?;
            let st = self.sealmq(a, &["status", HA], None).ok()?;
            st.contains("QUORUM(3/3)").then_some(())
        })
    }

    fn start_instance(&self, n: &str) -> CliResult {
        self.start(n, HA)
    }

    /// Starts `qm` of `who`, with its TLS client listener when the bed has them.
    fn start(&self, who: &str, qm: &str) -> CliResult {
        let listen = self.tls_ports.map(|p| {
            let i = NAMES.iter().position(|n| *n == who).unwrap_or(3);
            format!("127.0.0.1:{}", p[i])
        });
        let mut args = vec!["start", qm, "--background"];
        if let Some(l) = &listen {
            args.extend(["--tls", "--listen", l]);
        }
        self.sealmq(who, &args, None).map(|_| ())
    }
}

impl Drop for Bed {
    fn drop(&mut self) {
        let _ = self.sealmq("single", &["stop", SINGLE, "--immediate"], None);
        for n in NAMES {
            let _ = self.sealmq(n, &["stop", HA, "--immediate"], None);
        }
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// Three instances of a replicated queue manager and a single queue manager, their identities
/// signed by one CA (`<root>/ca`); with `tls`, each also listens for TLS clients.
pub(super) fn setup(tls: bool) -> CliResult<Bed> {
    let root = std::env::temp_dir().join(format!("sealmq-bench-ha-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).map_err(|e| e.to_string())?;
    let mut ports = [0u16; 4];
    for p in &mut ports {
        *p = super::net::free_port()?;
    }
    let bed = Bed {
        root,
        exe: std::env::current_exe().map_err(|e| e.to_string())?,
        tls_ports: tls.then_some(ports),
    };
    let ca = bed.root.join("ca");
    let ca = ca.to_string_lossy().into_owned();
    bed.sealmq(
        "ca",
        &[
            "keystore",
            "init",
            &ca,
            "--dn",
            "CN=BENCH CA",
            "--authority",
        ],
        None,
    )?;
    let mut spec = Vec::new();
    for n in NAMES {
        spec.push(format!("{n}@127.0.0.1:{}", super::net::free_port()?));
    }
    let spec = spec.join(",");
    for n in NAMES {
        bed.sealmq(
            n,
            &["create", HA, "--ha", &spec, "--instance", n, "--ca", &ca],
            None,
        )?;
        bed.start_instance(n)?;
    }
    bed.sealmq("single", &["create", SINGLE, "--ca", &ca], None)?;
    bed.start("single", SINGLE)?;
    let define = "DEFINE QLOCAL(BENCH.Q) DEFPSIST(YES) MAXDEPTH(999999999)\n";
    bed.sealmq("single", &["mqsc", SINGLE], Some(define))?;
    let a = bed.wait("an active instance", Duration::from_secs(60), || {
        bed.active()
    })?;
    bed.sealmq(a, &["mqsc", HA], Some(define))?;
    bed.in_sync()?;
    Ok(bed)
}

/// CPU seconds of the queue manager processes running in `dirs` (each one's `qm.pid`).
pub(super) fn qm_cpu(dirs: &[PathBuf]) -> f64 {
    dirs.iter()
        .filter_map(|d| std::fs::read_to_string(d.join("qm.pid")).ok())
        .map(|pid| super::common::cpu_seconds(pid.trim()))
        .sum()
}

/// One run of [`put_rate`]: puts per second, and the CPU every queue manager process
/// involved spent per put (µs).
struct Rate {
    per_s: f64,
    cpu_us: f64,
}

/// Persistent puts of 1 KiB, each committed, by `producers` for `secs` on the queue manager in
/// `dir`; `procs` are the directories of every process whose CPU counts (the instances).
fn put_rate(dir: &Path, procs: &[PathBuf], producers: usize, secs: f64) -> CliResult<Rate> {
    let stop = Arc::new(AtomicBool::new(false));
    let count = Arc::new(AtomicU64::new(0));
    let mut threads = Vec::new();
    for _ in 0..producers {
        let mut c = Client::connect_local(dir, "bench-ha").map_err(|e| e.to_string())?;
        let (stop, count) = (stop.clone(), count.clone());
        threads.push(std::thread::spawn(move || -> Result<(), String> {
            let h = open_q(&mut c, "BENCH.Q", OpenOptions::output())?;
            let payload = vec![0x48u8; 1024];
            while !stop.load(Ordering::Relaxed) {
                let mut md = Md {
                    persistence: Persistence::Persistent,
                    ..Md::default()
                };
                c.put(h, &mut md, &payload, true)
                    .map_err(|e| e.to_string())?;
                c.commit().map_err(|e| e.to_string())?;
                count.fetch_add(1, Ordering::Relaxed);
            }
            Ok(())
        }));
    }
    let (t, n0, cpu0) = (Instant::now(), count.load(Ordering::Relaxed), qm_cpu(procs));
    std::thread::sleep(Duration::from_secs_f64(secs));
    let n = count.load(Ordering::Relaxed) - n0;
    let el = t.elapsed().as_secs_f64();
    let cpu = qm_cpu(procs) - cpu0;
    stop.store(true, Ordering::Relaxed);
    join_all(threads)?;
    let mut c = Client::connect_local(dir, "bench-ha").map_err(|e| e.to_string())?;
    let _ = c.mqsc("CLEAR QLOCAL(BENCH.Q)\n", false);
    Ok(Rate {
        per_s: n as f64 / el,
        cpu_us: cpu * 1e6 / (n.max(1) as f64),
    })
}

/// An instance's data gone, its identity and group kept (as a lost disk rebuilt).
fn wipe(dir: &Path) {
    for d in ["log", "ha", "checkpoint", "queues", "policy.key"] {
        let p = dir.join(d);
        let _ = std::fs::remove_dir_all(&p);
        let _ = std::fs::remove_file(&p);
    }
}

pub(super) fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

pub fn run(a: &BenchArgs) -> CliResult {
    let bed = setup(false)?;
    let secs = a.seconds.max(1) as f64;
    let mut report = serde_json::Map::new();
    let single_dir = bed.qm_dir("single", SINGLE);
    let instances: Vec<PathBuf> = NAMES.iter().map(|n| bed.qm_dir(n, HA)).collect();
    for producers in [1usize, 16] {
        let (mut single, mut ha) = (Vec::new(), Vec::new());
        let (mut single_cpu, mut ha_cpu) = (Vec::new(), Vec::new());
        for _ in 0..a.rounds.max(1) {
            let r = put_rate(
                &single_dir,
                std::slice::from_ref(&single_dir),
                producers,
                secs,
            )?;
            single.push(r.per_s);
            single_cpu.push(r.cpu_us);
            let act = bed
                .active()
                .ok_or_else(|| "bench: no active instance".to_string())?;
            let r = put_rate(&bed.qm_dir(act, HA), &instances, producers, secs)?;
            ha.push(r.per_s);
            ha_cpu.push(r.cpu_us);
        }
        let (s, h) = (median(&mut single), median(&mut ha));
        let (sc, hc) = (median(&mut single_cpu), median(&mut ha_cpu));
        println!(
            "persistent put, {producers} producer(s): single {s:.0}/s, replicated {h:.0}/s, ratio {:.2}; \
             queue manager CPU per put: single {sc:.0} µs, three instances {hc:.0} µs",
            h / s.max(1e-9)
        );
        report.insert(format!("put_{producers}_single"), s.into());
        report.insert(format!("put_{producers}_replicated"), h.into());
        report.insert(format!("put_{producers}_ratio"), (h / s.max(1e-9)).into());
        report.insert(format!("put_{producers}_single_cpu_us"), sc.into());
        report.insert(format!("put_{producers}_replicated_cpu_us"), hc.into());
    }
    let kills = a.kills.unwrap_or(10);
    let mut gaps = Vec::new();
    for _ in 0..kills {
        let act = bed
            .active()
            .ok_or_else(|| "bench: no active instance".to_string())?;
        let pid = std::fs::read_to_string(bed.qm_dir(act, HA).join("qm.pid"))
            .map_err(|e| e.to_string())?;
        let killed = Instant::now();
        let ok = Command::new("kill")
            .args(["-9", pid.trim()])
            .status()
            .map_err(|e| e.to_string())?;
        if !ok.success() {
            return Err(format!("bench: cannot kill pid {}", pid.trim()).into());
        }
        bed.wait("another active instance", Duration::from_secs(60), || {
            bed.active().filter(|n| *n != act)
        })?;
        gaps.push(killed.elapsed().as_secs_f64());
        bed.wait(
            "the killed instance's lock",
            Duration::from_secs(20),
            || (!crate::home::running(&bed.qm_dir(act, HA))).then_some(()),
        )?;
        bed.start_instance(act)?;
        bed.in_sync()?;
    }
    if !gaps.is_empty() {
        let worst = gaps.iter().copied().fold(0.0, f64::max);
        let med = median(&mut gaps);
        println!("failover over {kills} kill -9: median {med:.2} s, worst {worst:.2} s");
        report.insert("failover_median_s".into(), med.into());
        report.insert("failover_worst_s".into(), worst.into());
    }
    let messages = a.messages.unwrap_or(20_000);
    let size = a.size.unwrap_or(1024);
    let act = bed
        .active()
        .ok_or_else(|| "bench: no active instance".to_string())?;
    let behind = NAMES.into_iter().find(|n| *n != act).unwrap_or("a");
    bed.sealmq(behind, &["stop", HA], None)?;
    let (n, sz) = (messages.to_string(), size.to_string());
    bed.sealmq(
        act,
        &[
            "put",
            HA,
            "BENCH.Q",
            "--size",
            &sz,
            "--count",
            &n,
            "--persistent",
            "--syncpoint",
            "100",
        ],
        None,
    )?;
    let mib = (messages * size as u64) >> 20;
    let t = Instant::now();
    bed.start_instance(behind)?;
    bed.in_sync()?;
    let catch = t.elapsed().as_secs_f64();
    println!(
        "catch-up of an instance {mib} MiB behind ({messages} messages of {size} B): {catch:.2} s"
    );
    report.insert("catch_up_s".into(), catch.into());
    report.insert("catch_up_messages".into(), messages.into());
    report.insert("catch_up_mib".into(), mib.into());
    // The same instance with its disk wiped (identity and group kept) is rebuilt from the
    // group's log: the whole history, not only what it missed.
    bed.sealmq(behind, &["stop", HA], None)?;
    let dir = bed.qm_dir(behind, HA);
    wipe(&dir);
    let t = Instant::now();
    bed.start_instance(behind)?;
    bed.in_sync()?;
    let rebuilt = t.elapsed().as_secs_f64();
    println!(
        "rebuild of a wiped instance from the group's log (over {mib} MiB of history): {rebuilt:.2} s"
    );
    report.insert("rebuild_s".into(), rebuilt.into());
    // The active role moves to the instance that was a replica all along: its Raft log was
    // purged behind its snapshots, so a wiped instance is sent a snapshot.
    let other = NAMES
        .into_iter()
        .find(|n| *n != act && *n != behind)
        .unwrap_or("c");
    bed.sealmq(act, &["ha", "switch", HA, "--to", other], None)?;
    bed.wait("the switch", Duration::from_secs(60), || {
        (bed.active() == Some(other)).then_some(())
    })?;
    bed.in_sync()?;
    bed.sealmq(behind, &["stop", HA], None)?;
    wipe(&dir);
    let t = Instant::now();
    bed.start_instance(behind)?;
    bed.in_sync()?;
    let rejoined = t.elapsed().as_secs_f64();
    let errlog =
        std::fs::read_to_string(dir.join("errors").join("SEALMQ01.LOG")).unwrap_or_default();
    let by_snapshot = errlog
        .lines()
        .any(|l| l.contains("snapshot") && l.contains("installed"));
    let snap_mib = std::fs::metadata(bed.qm_dir(other, HA).join("ha/snapshot/state"))
        .map_or(0, |m| m.len() >> 20);
    println!(
        "rejoin of a wiped instance {} ({snap_mib} MiB snapshot, then the log after it): {rejoined:.2} s",
        if by_snapshot {
            "by snapshot"
        } else {
            "from the log (no snapshot was sent)"
        }
    );
    report.insert("snapshot_rejoin_s".into(), rejoined.into());
    report.insert("snapshot_mib".into(), snap_mib.into());
    report.insert("snapshot_used".into(), by_snapshot.into());
    if a.json {
        println!("{}", serde_json::Value::Object(report));
    }
    Ok(())
}

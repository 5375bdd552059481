//! Interval statistics (SPEC §8, docs/statistics.md): every STATINT seconds — read again each
//! interval, so `ALTER QMGR STATINT(n)` applies from the next one — and once more when the
//! queue manager stops, one JSON file under `<QM dir>/stats/`: per queue (puts, gets, browses,
//! bytes, depth and its high-water mark), per channel (messages, bytes, batches, average batch
//! size), the channel initiator's adapter and dispatcher tasks, and the queue manager's own
//! protection work (SPLPROT, QM-side interception) per primitive with key-reuse hits and misses,
//! and publish/subscribe (publications, copies delivered, fan-out, subscriptions).
//! The newest [`KEEP`] files are kept.

use crate::auth::security::Security;
use crate::chinit::Initiator;
use sealmq_engine::QueueManager;
use sealmq_engine::stats::QueueCounters;
use sealmq_protect::counters::Snapshot;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Version of the statistics file format (docs/statistics.md).
pub const FORMAT_VERSION: u32 = 1;
/// Statistics files kept; older ones are removed.
pub const KEEP: usize = 96;

/// What the previous interval ended with, to report deltas.
#[derive(Default)]
struct Previous {
    queues: HashMap<String, QueueCounters>,
    /// Per channel: messages, bytes sent, bytes received, batches of its current instance.
    channels: HashMap<String, [u64; 4]>,
    /// The protector the crypto counters came from (a refresh replaces it) and its counters.
    crypto: Option<(usize, Snapshot)>,
    /// Per channel-initiator task: requests, CPU ns, elapsed ns.
    tasks: HashMap<String, (u64, u64, u64)>,
    /// Publications and copies delivered, since the start.
    pubsub: (u64, u64),
}

/// The statistics writer of one queue manager.
pub struct Writer {
    qm: Arc<QueueManager>,
    dir: PathBuf,
    security: Arc<Security>,
    chinit: Arc<Initiator>,
    prev: Previous,
    started_ms: u128,
}

/// Milliseconds since the Unix epoch (0 if the clock is before it).
pub(crate) fn now_ms() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0)
}

fn delta(now: &Snapshot, before: &Snapshot) -> Snapshot {
    let d = |a: u64, b: u64| a.saturating_sub(b);
    Snapshot {
        sign: d(now.sign, before.sign),
        verify: d(now.verify, before.verify),
        key_wrap: d(now.key_wrap, before.key_wrap),
        key_unwrap: d(now.key_unwrap, before.key_unwrap),
        encrypt: d(now.encrypt, before.encrypt),
        decrypt: d(now.decrypt, before.decrypt),
        sign_nanos: d(now.sign_nanos, before.sign_nanos),
        verify_nanos: d(now.verify_nanos, before.verify_nanos),
        key_wrap_nanos: d(now.key_wrap_nanos, before.key_wrap_nanos),
        key_unwrap_nanos: d(now.key_unwrap_nanos, before.key_unwrap_nanos),
        encrypt_nanos: d(now.encrypt_nanos, before.encrypt_nanos),
        decrypt_nanos: d(now.decrypt_nanos, before.decrypt_nanos),
        sym_bytes: d(now.sym_bytes, before.sym_bytes),
        put_reuse_hits: d(now.put_reuse_hits, before.put_reuse_hits),
        put_reuse_misses: d(now.put_reuse_misses, before.put_reuse_misses),
        get_reuse_hits: d(now.get_reuse_hits, before.get_reuse_hits),
        get_reuse_misses: d(now.get_reuse_misses, before.get_reuse_misses),
    }
}

fn op(count: u64, nanos: u64) -> Value {
    json!({"count": count, "us": nanos / 1000})
}

impl Writer {
    pub fn new(
        qm: Arc<QueueManager>,
        dir: PathBuf,
        security: Arc<Security>,
        chinit: Arc<Initiator>,
    ) -> Writer {
        Writer {
            qm,
            dir,
            security,
            chinit,
            prev: Previous::default(),
            started_ms: now_ms(),
        }
    }

    /// Runs until `stop`, writing an interval every STATINT seconds and a last one at the end.
    pub fn spawn(mut self, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<()> {
        std::thread::spawn(move || {
            let mut began = Instant::now();
            loop {
                let interval = Duration::from_secs(self.qm.qmgr().stat_int.max(1) as u64);
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                if began.elapsed() >= interval {
                    began = Instant::now();
                    self.write_interval();
                }
                std::thread::sleep(Duration::from_millis(100).min(interval));
            }
            self.write_interval();
        })
    }

    /// Collects one interval and writes its file; failures are reported on stderr (statistics
    /// never stop the queue manager).
    pub fn write_interval(&mut self) {
        let v = self.collect();
        // collect() moved the interval start to this interval's end.
        let end = self.started_ms;
        if let Err(e) = write_file(&self.dir.join("stats"), end, &v) {
            tracing::error!("cannot write statistics under {}: {e}", self.dir.display());
        }
    }

    fn collect(&mut self) -> Value {
        let start = self.started_ms;
        let end = now_ms();
        self.started_ms = end;
        let queues: Vec<Value> = self
            .qm
            .queue_intervals()
            .into_iter()
            .filter_map(|q| {
                let before = self.prev.queues.insert(q.queue.clone(), q.total);
                let b = before.unwrap_or_default();
                let t = q.total;
                let active = t != b || q.depth > 0;
                active.then(|| {
                    json!({
                        "name": q.queue,
                        "depth": q.depth,
                        "hi_depth": q.hi_depth,
                        "puts": t.puts - b.puts,
                        "put_bytes": t.put_bytes - b.put_bytes,
                        "gets": t.gets - b.gets,
                        "get_bytes": t.get_bytes - b.get_bytes,
                        "browses": t.browses - b.browses,
                    })
                })
            })
            .collect();
        let channels = self.channels();
        let crypto = self.crypto();
        let pubsub = self.pubsub();
        json!({
            "version": FORMAT_VERSION,
            "qmgr": self.qm.name(),
            "interval_start_ms": start as u64,
            "interval_end_ms": end as u64,
            "queues": queues,
            "channels": channels,
            "chinit_tasks": self.tasks(end.saturating_sub(start)),
            "crypto": crypto,
            "pubsub": pubsub,
        })
    }

    /// Publish/subscribe over the interval: publications, the copies they delivered and the
    /// average fan-out; the subscriptions (durable ones apart) at its end.
    fn pubsub(&mut self) -> Value {
        let (p, d) = self.qm.publication_totals();
        let (bp, bd) = std::mem::replace(&mut self.prev.pubsub, (p, d));
        let (p, d) = (p.saturating_sub(bp), d.saturating_sub(bd));
        let subs = self.qm.subs();
        let durable = subs.iter().filter(|s| s.durable).count();
        json!({
            "publications": p,
            "deliveries": d,
            "avg_fanout": if p == 0 { 0.0 } else { (d as f64 / p as f64 * 100.0).round() / 100.0 },
            "subscriptions": subs.len(),
            "durable_subscriptions": durable,
        })
    }

    /// The dispatcher and adapter task slots over the interval: requests, average CPU and
    /// elapsed µs per request, and % of the interval busy.
    fn tasks(&mut self, interval_ms: u128) -> Value {
        let wall_ns = (interval_ms.max(1) * 1_000_000) as f64;
        let rows: Vec<Value> = self
            .chinit
            .adapters
            .totals()
            .into_iter()
            .map(|(task, r, c, e)| {
                let (r0, c0, e0) = self
                    .prev
                    .tasks
                    .insert(task.clone(), (r, c, e))
                    .unwrap_or_default();
                let (dr, dc, de) = (
                    r.saturating_sub(r0),
                    c.saturating_sub(c0),
                    e.saturating_sub(e0),
                );
                let per = |v: u64| {
                    if dr == 0 {
                        0.0
                    } else {
                        v as f64 / dr as f64 / 1000.0
                    }
                };
                json!({
                    "task": task,
                    "requests": dr,
                    "avg_cpu_us": per(dc),
                    "avg_elapsed_us": per(de),
                    "busy_pct": (de as f64 / wall_ns * 100.0).min(100.0),
                })
            })
            .collect();
        Value::Array(rows)
    }

    fn channels(&mut self) -> Vec<Value> {
        let mut out = Vec::new();
        for (run, s) in self.chinit.statuses("*") {
            let now = [s.msgs, s.bytes_sent, s.bytes_rcvd, s.batches];
            let before = self
                .prev
                .channels
                .insert(run.name.clone(), now)
                .unwrap_or([0; 4]);
            // A new instance starts its counts again: then all of it is this interval's.
            let before = if now.iter().zip(&before).any(|(n, b)| n < b) {
                [0; 4]
            } else {
                before
            };
            let d: Vec<u64> = now.iter().zip(&before).map(|(n, b)| n - b).collect();
            if d.iter().all(|x| *x == 0) {
                continue;
            }
            out.push(json!({
                "name": run.name,
                "status": s.state.name(),
                "msgs": d[0],
                "bytes_sent": d[1],
                "bytes_received": d[2],
                "batches": d[3],
                "avg_batch_size": if d[3] > 0 { d[0] as f64 / d[3] as f64 } else { 0.0 },
            }));
        }
        out
    }

    fn crypto(&mut self) -> Value {
        let Some(p) = self.security.protector() else {
            return Value::Null;
        };
        let id = Arc::as_ptr(&p) as usize;
        let now = p.counters();
        let before = match &self.prev.crypto {
            Some((pid, s)) if *pid == id => *s,
            _ => Snapshot::default(),
        };
        self.prev.crypto = Some((id, now));
        let d = delta(&now, &before);
        json!({
            "sign": op(d.sign, d.sign_nanos),
            "verify": op(d.verify, d.verify_nanos),
            "key_wrap": op(d.key_wrap, d.key_wrap_nanos),
            "key_unwrap": op(d.key_unwrap, d.key_unwrap_nanos),
            "encrypt": op(d.encrypt, d.encrypt_nanos),
            "decrypt": op(d.decrypt, d.decrypt_nanos),
            "sym_bytes": d.sym_bytes,
            "key_reuse": {
                "put_hits": d.put_reuse_hits,
                "put_misses": d.put_reuse_misses,
                "get_hits": d.get_reuse_hits,
                "get_misses": d.get_reuse_misses,
            },
        })
    }
}

/// Writes `<dir>/<interval end, ms since the epoch>.json` (through a temporary name, so a
/// reader never sees half a file) and removes all but the newest [`KEEP`].
fn write_file(dir: &Path, end_ms: u128, v: &Value) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let name = format!("{end_ms:015}.json");
    let tmp = dir.join(format!(".{name}.tmp"));
    std::fs::write(&tmp, format!("{v:#}\n"))?;
    std::fs::rename(&tmp, dir.join(&name))?;
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    let extra = files.len().saturating_sub(KEEP);
    for old in files.into_iter().take(extra) {
        let _ = std::fs::remove_file(old);
    }
    Ok(())
}

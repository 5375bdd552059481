//! MQI accounting (SPEC §8, docs/statistics.md): with `ALTER QMGR ACCTMQI(ON)`, each
//! application connection made afterwards counts its MQI calls — how many of each, the
//! queue manager's CPU µs spent on them (the connection thread's CPU clock around each call),
//! and the message bytes put and got as stored (the envelope when the application or QM-side
//! interception protects them) — and writes one JSON line when it disconnects, and
//! every ACCTINT seconds while it stays connected, to `<QM dir>/accounting/<UTC date>.jsonl`.
//! With ACCTMQI(OFF), the default, a call costs one branch more.

use crate::observe::stats::now_ms;
use crate::os::thread_cpu_ns;
use sealmq_types::sync::lock;
use sealmq_wire::{Request, Response};
use serde_json::{Map, Value, json};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Version of the accounting record format.
pub const FORMAT_VERSION: u32 = 1;

/// The MQI operations an accounting record counts, in the order it lists them.
const OPS: [&str; 11] = [
    "open",
    "close",
    "put",
    "put1",
    "get",
    "browse",
    "commit",
    "backout",
    "publish",
    "subscribe",
    "other",
];

fn op_of(req: &Request) -> usize {
    match req {
        Request::Open { .. } | Request::OpenAt { .. } | Request::OpenTopic { .. } => 0,
        Request::Close { .. } => 1,
        Request::Put { .. } => 2,
        Request::Put1 { .. } | Request::Put1At { .. } => 3,
        Request::Get(g) if g.browse == 1 || g.browse == 2 => 5,
        Request::Get(_) => 4,
        Request::Commit => 6,
        Request::Backout => 7,
        Request::Publish { .. } => 8,
        Request::Subscribe { .. } | Request::SubscribeWith { .. } | Request::Unsubscribe { .. } => {
            9
        }
        _ => 10,
    }
}

/// One call being timed: which operation, its bytes in, and the thread's CPU clock at start.
pub struct Call {
    op: usize,
    bytes_in: u64,
    cpu0: u64,
}

/// A connection's accounting.
pub struct Accounting {
    dir: PathBuf,
    interval: Duration,
    head: Map<String, Value>,
    since: Instant,
    start_ms: u128,
    count: [u64; OPS.len()],
    cpu_ns: [u64; OPS.len()],
    failed: u64,
    put_bytes: u64,
    get_bytes: u64,
    max_msg: u64,
}

/// `YYYYMMDD` (UTC) of a time in milliseconds since the epoch.
fn utc_date(ms: u128) -> String {
    let (y, m, d) = sealmq_types::time::civil((ms / 86_400_000) as i64);
    format!("{y:04}{m:02}{d:02}")
}

impl Accounting {
    /// Accounting for a connection, when the queue manager's ACCTMQI is ON.
    pub fn start(
        qm: &sealmq_engine::QueueManager,
        qm_dir: &Path,
        conn_id: u64,
        user: &str,
        appl: &str,
    ) -> Option<Accounting> {
        let q = qm.qmgr();
        if !q.acct_mqi {
            return None;
        }
        let mut head = Map::new();
        head.insert("version".into(), json!(FORMAT_VERSION));
        head.insert("qmgr".into(), json!(q.name));
        head.insert("conn".into(), json!(conn_id));
        head.insert("user".into(), json!(user));
        head.insert("appl".into(), json!(appl));
        Some(Accounting {
            dir: qm_dir.join("accounting"),
            interval: Duration::from_secs(q.acct_int.max(1) as u64),
            head,
            since: Instant::now(),
            start_ms: now_ms(),
            count: [0; OPS.len()],
            cpu_ns: [0; OPS.len()],
            failed: 0,
            put_bytes: 0,
            get_bytes: 0,
            max_msg: 0,
        })
    }

    /// Starts timing a call (before the request is handled).
    pub fn begin(req: &Request) -> Call {
        let bytes_in = match req {
            Request::Put { payload, .. }
            | Request::Put1 { payload, .. }
            | Request::Put1At { payload, .. }
            | Request::Publish { payload, .. } => payload.len() as u64,
            _ => 0,
        };
        Call {
            op: op_of(req),
            bytes_in,
            cpu0: thread_cpu_ns(),
        }
    }

    /// Ends timing a call with its answer; writes an interim record every ACCTINT. `stored`:
    /// the message's stored size when QM-side interception protected or unprotected it.
    pub fn end(&mut self, call: Call, resp: Option<&Response>, stored: Option<u64>) {
        let cpu = thread_cpu_ns().saturating_sub(call.cpu0);
        self.count[call.op] += 1;
        self.cpu_ns[call.op] += cpu;
        match resp {
            Some(Response::Err { .. }) => self.failed += 1,
            Some(Response::Got { payload, .. }) => {
                let n = stored.unwrap_or(payload.len() as u64);
                self.get_bytes += n;
                self.max_msg = self.max_msg.max(n);
            }
            Some(Response::Put { .. }) => {
                let n = stored.unwrap_or(call.bytes_in);
                self.put_bytes += n;
                self.max_msg = self.max_msg.max(n);
            }
            _ => {}
        }
        if self.since.elapsed() >= self.interval {
            self.write(false);
        }
    }

    /// One call counted by its operation's name (AMQP links, which make no wire requests):
    /// `bytes`, the message's stored size, counts as put or got bytes.
    pub fn note(&mut self, op: &str, ok: bool, bytes: u64, cpu_ns: u64) {
        let i = OPS.iter().position(|o| *o == op).unwrap_or(OPS.len() - 1);
        self.count[i] += 1;
        self.cpu_ns[i] += cpu_ns;
        if !ok {
            self.failed += 1;
        } else if bytes > 0 {
            if matches!(op, "put" | "put1") {
                self.put_bytes += bytes;
            } else {
                self.get_bytes += bytes;
            }
            self.max_msg = self.max_msg.max(bytes);
        }
        if self.since.elapsed() >= self.interval {
            self.write(false);
        }
    }

    /// The record of the calls since the last one; `last` when the connection ends.
    fn write(&mut self, last: bool) {
        let end = now_ms();
        let mut rec = self.head.clone();
        rec.insert("start_ms".into(), json!(self.start_ms as u64));
        rec.insert("end_ms".into(), json!(end as u64));
        rec.insert("final".into(), json!(last));
        let mut calls = Map::new();
        for (i, name) in OPS.iter().enumerate() {
            if self.count[i] > 0 {
                calls.insert(
                    (*name).into(),
                    json!({"count": self.count[i], "cpu_us": self.cpu_ns[i] / 1000}),
                );
            }
        }
        rec.insert("calls".into(), Value::Object(calls));
        rec.insert("failed".into(), json!(self.failed));
        rec.insert("put_bytes".into(), json!(self.put_bytes));
        rec.insert("get_bytes".into(), json!(self.get_bytes));
        rec.insert("max_msg_bytes".into(), json!(self.max_msg));
        let line = format!("{}\n", Value::Object(rec));
        let r = std::fs::create_dir_all(&self.dir).and_then(|_| {
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(self.dir.join(format!("{}.jsonl", utc_date(end))))
                .and_then(|mut f| f.write_all(line.as_bytes()))
        });
        if let Err(e) = r {
            tracing::error!("cannot write accounting under {}: {e}", self.dir.display());
        }
        self.since = Instant::now();
        self.start_ms = end;
        self.count = [0; OPS.len()];
        self.cpu_ns = [0; OPS.len()];
        self.failed = 0;
        self.put_bytes = 0;
        self.get_bytes = 0;
        self.max_msg = 0;
    }

    /// The connection ended: its last record.
    pub fn finish(mut self) {
        self.write(true);
    }
}

/// An AMQP connection's accounting: shared by its links, its last record written when the
/// last of them lets go.
pub struct AmqpTally(std::sync::Mutex<Option<Accounting>>);

impl AmqpTally {
    pub fn new(a: Accounting) -> AmqpTally {
        AmqpTally(std::sync::Mutex::new(Some(a)))
    }
}

impl sealmq_amqp::status::Tally for AmqpTally {
    fn clock(&self) -> u64 {
        thread_cpu_ns()
    }

    fn call(&self, op: &'static str, ok: bool, bytes: u64, cpu_ns: u64) {
        if let Some(a) = lock(&self.0).as_mut() {
            a.note(op, ok, bytes, cpu_ns);
        }
    }
}

impl Drop for AmqpTally {
    fn drop(&mut self) {
        if let Some(a) = lock(&self.0).take() {
            a.finish();
        }
    }
}

/// MQI accounting for AMQP connections (ACCTMQI, read when each connects), as for every other
/// connection: what the channel initiator gives each AMQP channel it starts.
pub(crate) fn amqp_accounts(
    qm: &std::sync::Arc<sealmq_engine::QueueManager>,
) -> sealmq_amqp::status::Accounts {
    let qm = qm.clone();
    std::sync::Arc::new(move |id: u64, user: &str, appl: &str| {
        let a = Accounting::start(&qm, qm.data_dir(), id, user, appl)?;
        let t: std::sync::Arc<dyn sealmq_amqp::status::Tally> =
            std::sync::Arc::new(AmqpTally::new(a));
        Some(t)
    })
}

#[cfg(test)]
mod tests {
    use super::utc_date;

    #[test]
    fn utc_dates() {
        assert_eq!(utc_date(0), "19700101");
        assert_eq!(utc_date(951_782_400_000), "20000229");
        assert_eq!(utc_date(1_795_320_619_735), "20261122");
        assert_eq!(utc_date(4_102_444_800_000 - 1), "20991231");
    }
}

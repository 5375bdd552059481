//! The channel initiator's tasks (SPEC §6): the queue and protection work of every channel
//! (assembling a sender's batch, SPLPROT REMOVE; delivering a receiver's batch, SPLPROT
//! ASPOLICY, the commit) runs in one of CHIADAPS adapter slots, and its network work (framing,
//! TLS, reading and writing a batch once data is there) in one of CHIDISPS dispatcher slots.
//!
//! A channel's own thread runs the job in a free slot, waiting when all are taken: the slots
//! bound how much of that work runs at once, and the work is never handed from one thread to
//! another (a first version did hand jobs to adapter threads: two thread switches per batch,
//! which on two cores cost 7-15% of mover-rr throughput as adapters were added). Free slots are
//! a stack, so the most recently used slot (and its statistics) is reused first. No lock is held
//! while a job runs, and nothing is partitioned: more slots can only let more work run at once,
//! never make a channel wait on another's lock (the reports show MQ losing throughput to exactly
//! such lock waits as adapters were added).
//!
//! Per slot the pool counts requests, CPU and elapsed time per request and how busy it was;
//! DISPLAY CHINIT shows them.

#![allow(unsafe_code)]

use sealmq_engine::channels::Attrs;
use sealmq_types::attrs;
use sealmq_types::sync::lock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Instant;

#[derive(Default)]
pub struct TaskStats {
    pub requests: AtomicU64,
    pub cpu_ns: AtomicU64,
    pub elapsed_ns: AtomicU64,
}

impl TaskStats {
    pub fn record(&self, cpu_ns: u64, elapsed_ns: u64) {
        self.requests.fetch_add(1, Ordering::Relaxed);
        self.cpu_ns.fetch_add(cpu_ns, Ordering::Relaxed);
        self.elapsed_ns.fetch_add(elapsed_ns, Ordering::Relaxed);
    }

    fn row(&self, task: String, since: Instant) -> Attrs {
        let n = self.requests.load(Ordering::Relaxed);
        let cpu = self.cpu_ns.load(Ordering::Relaxed);
        let el = self.elapsed_ns.load(Ordering::Relaxed);
        let wall = since.elapsed().as_nanos().max(1) as u64;
        let per = |v: u64| {
            if n == 0 {
                "0.0".to_string()
            } else {
                format!("{:.1}", v as f64 / n as f64 / 1000.0)
            }
        };
        attrs![
            "TASK" => task, "REQUESTS" => n, "AVGCPU" => per(cpu), "AVGELAPSED" => per(el),
            "BUSY" => format!("{:.1}", (el as f64 / wall as f64 * 100.0).min(100.0)),
        ]
    }
}

pub use crate::os::thread_cpu_ns;

/// Times one request on the calling thread into `stats`.
pub fn timed<T>(stats: &TaskStats, f: impl FnOnce() -> T) -> T {
    let (c0, t0) = (thread_cpu_ns(), Instant::now());
    let r = f();
    stats.record(
        thread_cpu_ns().saturating_sub(c0),
        t0.elapsed().as_nanos() as u64,
    );
    r
}

/// A set of task slots: free ones on a stack (most recently freed last), each with statistics.
struct Slots {
    free: Mutex<Vec<usize>>,
    cv: Condvar,
    stats: Vec<TaskStats>,
}

impl Slots {
    fn new(n: usize) -> Slots {
        let n = n.max(1);
        Slots {
            free: Mutex::new((0..n).rev().collect()),
            cv: Condvar::new(),
            stats: (0..n).map(|_| TaskStats::default()).collect(),
        }
    }

    fn run<T>(&self, f: impl FnOnce() -> T) -> Option<T> {
        let slot = {
            let mut free = lock(&self.free);
            loop {
                if let Some(s) = free.pop() {
                    break s;
                }
                free = self.cv.wait(free).unwrap_or_else(|p| p.into_inner());
            }
        };
        let r = timed(&self.stats[slot], || {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).ok()
        });
        lock(&self.free).push(slot);
        self.cv.notify_one();
        r
    }
}

struct Inner {
    adapters: Slots,
    dispatchers: Slots,
    since: Instant,
}

#[derive(Clone)]
pub struct Pool {
    inner: Arc<Inner>,
}

impl Pool {
    /// CHIADAPS adapter slots and CHIDISPS dispatcher slots.
    pub fn new(adapters: usize, dispatchers: usize) -> Pool {
        Pool {
            inner: Arc::new(Inner {
                adapters: Slots::new(adapters),
                dispatchers: Slots::new(dispatchers),
                since: Instant::now(),
            }),
        }
    }

    /// Runs queue or protection work `f` in an adapter slot (waiting for one) and returns its
    /// result (`None` if it panicked: the slot is freed and the caller reports the failure).
    pub fn run<T>(&self, f: impl FnOnce() -> T) -> Option<T> {
        self.inner.adapters.run(f)
    }

    /// Runs network work `f` (framing, TLS, socket reads and writes of data that has arrived or
    /// is ready to go) in a dispatcher slot. A channel waits for its socket to become readable
    /// outside any slot, so an idle channel holds none.
    pub fn net<T>(&self, f: impl FnOnce() -> T) -> Option<T> {
        self.inner.dispatchers.run(f)
    }

    /// When the slots began counting.
    pub fn since(&self) -> Instant {
        self.inner.since
    }

    /// Each task slot's running totals: name, requests, CPU ns, elapsed ns (interval
    /// statistics take differences of these).
    pub fn totals(&self) -> Vec<(String, u64, u64, u64)> {
        let i = &self.inner;
        let load = |s: &TaskStats| {
            (
                s.requests.load(Ordering::Relaxed),
                s.cpu_ns.load(Ordering::Relaxed),
                s.elapsed_ns.load(Ordering::Relaxed),
            )
        };
        let named = |kind: &'static str, slots: &'_ Slots| {
            slots
                .stats
                .iter()
                .enumerate()
                .map(move |(n, s)| {
                    let (r, c, e) = load(s);
                    (format!("{kind}.{}", n + 1), r, c, e)
                })
                .collect::<Vec<_>>()
        };
        let mut out = named("DISPATCHER", &i.dispatchers);
        out.extend(named("ADAPTER", &i.adapters));
        out
    }

    pub fn stats(&self) -> Vec<Attrs> {
        let i = &self.inner;
        let mut rows: Vec<Attrs> = i
            .dispatchers
            .stats
            .iter()
            .enumerate()
            .map(|(n, s)| s.row(format!("DISPATCHER.{}", n + 1), i.since))
            .collect();
        rows.extend(
            i.adapters
                .stats
                .iter()
                .enumerate()
                .map(|(n, s)| s.row(format!("ADAPTER.{}", n + 1), i.since)),
        );
        rows
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jobs_run_and_are_counted() {
        let p = Pool::new(3, 2);
        let total: u64 = (0..30u64).map(|i| p.run(move || i * 2).unwrap()).sum();
        assert_eq!(total, 870);
        // A job is counted just after its answer is sent: poll until all are.
        let deadline = Instant::now() + std::time::Duration::from_secs(10);
        let served = |rows: &[Attrs]| -> u64 {
            rows.iter()
                .filter(|r| r[0].1.starts_with("ADAPTER"))
                .map(|r| r[1].1.parse::<u64>().unwrap())
                .sum()
        };
        let mut rows = p.stats();
        while served(&rows) < 30 && Instant::now() < deadline {
            std::thread::yield_now();
            rows = p.stats();
        }
        assert_eq!(rows.len(), 5);
        let served = served(&rows);
        assert_eq!(served, 30);
    }

    #[test]
    fn no_more_jobs_run_at_once_than_there_are_adapters() {
        use std::sync::atomic::AtomicUsize;
        let p = Pool::new(2, 1);
        let (now, max) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let threads: Vec<_> = (0..6)
            .map(|_| {
                let (p, now, max) = (p.clone(), now.clone(), max.clone());
                std::thread::spawn(move || {
                    for _ in 0..20 {
                        p.run(|| {
                            let n = now.fetch_add(1, Ordering::SeqCst) + 1;
                            max.fetch_max(n, Ordering::SeqCst);
                            std::thread::yield_now();
                            now.fetch_sub(1, Ordering::SeqCst);
                        });
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert!(max.load(Ordering::SeqCst) <= 2);
        // A job that panics frees its slot.
        assert!(p.run(|| panic!("boom")).is_none());
        assert_eq!(p.run(|| 7), Some(7));
    }
}

//! The channel initiator's adapter tasks (SPEC §6, CHIADAPS): a pool of threads that do the
//! queue and protection work of every channel (delivering a received batch, removing or
//! applying protection), while each channel's own thread does its network I/O.
//!
//! A job goes straight to the adapter that became idle most recently (a stack of idle
//! adapters, each with its own slot), or waits in one backlog when all are busy. So adding
//! adapters only adds threads that stay asleep when there is no more work: the busy ones keep
//! their caches warm, nothing is partitioned, and no lock is held while a job runs (the reports
//! show MQ losing throughput to exactly such lock waits as adapters were added).
//!
//! Per task the pool counts requests, CPU and elapsed time per request and how busy it was;
//! DISPLAY CHINIT shows them.

use sealmq_engine::channels::Attrs;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, mpsc};
use std::time::Instant;

type Job = Box<dyn FnOnce() + Send>;

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
        vec![
            ("TASK".into(), task),
            ("REQUESTS".into(), n.to_string()),
            ("AVGCPU".into(), per(cpu)),
            ("AVGELAPSED".into(), per(el)),
            (
                "BUSY".into(),
                format!("{:.1}", (el as f64 / wall as f64 * 100.0).min(100.0)),
            ),
        ]
    }
}

/// CPU time of the calling thread, in nanoseconds.
pub fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec we own.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return 0;
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

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

/// Idle adapters (most recent last) and the jobs no adapter was free for.
#[derive(Default)]
struct Queue {
    idle: Vec<usize>,
    backlog: VecDeque<Job>,
}

/// One adapter's hand-off slot.
#[derive(Default)]
struct Slot {
    job: Mutex<Option<Job>>,
    cv: Condvar,
}

struct Inner {
    queue: Mutex<Queue>,
    slots: Vec<Slot>,
    adapters: Vec<TaskStats>,
    /// The channels' own (network) tasks, by dispatcher slot.
    dispatchers: Vec<TaskStats>,
    since: Instant,
}

#[derive(Clone)]
pub struct Pool {
    inner: Arc<Inner>,
}

impl Pool {
    /// Starts `adapters` adapter threads; `dispatchers` slots account the channels' network work.
    pub fn new(adapters: usize, dispatchers: usize) -> Pool {
        let n = adapters.max(1);
        let inner = Arc::new(Inner {
            queue: Mutex::new(Queue::default()),
            slots: (0..n).map(|_| Slot::default()).collect(),
            adapters: (0..n).map(|_| TaskStats::default()).collect(),
            dispatchers: (0..dispatchers.max(1))
                .map(|_| TaskStats::default())
                .collect(),
            since: Instant::now(),
        });
        for i in 0..n {
            let inner = inner.clone();
            std::thread::Builder::new()
                .name(format!("sealmq-adapter-{}", i + 1))
                .spawn(move || adapter(inner, i))
                .ok();
        }
        Pool { inner }
    }

    /// Runs `f` on an adapter and waits for its result (`None` if the job panicked).
    pub fn run<T: Send + 'static>(&self, f: impl FnOnce() -> T + Send + 'static) -> Option<T> {
        let (tx, rx) = mpsc::sync_channel(1);
        let job: Job = Box::new(move || {
            let _ = tx.send(f());
        });
        let i = &self.inner;
        let mut q = i.queue.lock().unwrap_or_else(|p| p.into_inner());
        match q.idle.pop() {
            Some(a) => {
                drop(q);
                let slot = &i.slots[a];
                *slot.job.lock().unwrap_or_else(|p| p.into_inner()) = Some(job);
                slot.cv.notify_one();
            }
            None => {
                q.backlog.push_back(job);
                drop(q);
            }
        }
        rx.recv().ok()
    }

    /// The statistics slot of dispatcher `i` (channels are spread over the slots).
    pub fn dispatcher(&self, i: usize) -> &TaskStats {
        &self.inner.dispatchers[i % self.inner.dispatchers.len()]
    }

    pub fn dispatcher_count(&self) -> usize {
        self.inner.dispatchers.len()
    }

    pub fn stats(&self) -> Vec<Attrs> {
        let i = &self.inner;
        let mut rows: Vec<Attrs> = i
            .dispatchers
            .iter()
            .enumerate()
            .map(|(n, s)| s.row(format!("DISPATCHER.{}", n + 1), i.since))
            .collect();
        rows.extend(
            i.adapters
                .iter()
                .enumerate()
                .map(|(n, s)| s.row(format!("ADAPTER.{}", n + 1), i.since)),
        );
        rows
    }
}

fn adapter(inner: Arc<Inner>, i: usize) {
    let slot = &inner.slots[i];
    loop {
        let backlog = {
            let mut q = inner.queue.lock().unwrap_or_else(|p| p.into_inner());
            let j = q.backlog.pop_front();
            if j.is_none() {
                q.idle.push(i);
            }
            j
        };
        let job = match backlog {
            Some(j) => j,
            None => {
                let mut g = slot.job.lock().unwrap_or_else(|p| p.into_inner());
                loop {
                    if let Some(j) = g.take() {
                        break j;
                    }
                    g = slot.cv.wait(g).unwrap_or_else(|p| p.into_inner());
                }
            }
        };
        // A job that panics loses its answer (the caller sees None); the adapter goes on.
        timed(&inner.adapters[i], || {
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
        });
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
}

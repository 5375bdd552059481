//! Bounds on connections: the descriptor budget (MAXCHL's cap), MAXCHL counted over
//! connections that sent their first frame, the separate budget of sockets still waiting for
//! it, and how a connection refused before its Hello is answered (docs/wire.md).

use sealmq_types::sync::lock;
use sealmq_wire::Response;
use std::collections::VecDeque;
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// After a failed accept (out of descriptors, say): log it and wait a little, instead of
/// spinning on accept while the failure lasts.
pub(crate) fn accept_failed(what: &str, e: &std::io::Error) {
    tracing::warn!("accept on {what} failed: {e}");
    std::thread::sleep(Duration::from_millis(50));
}

/// Connections counted against MAXCHL (client connections that said Hello, channels, AMQP
/// connections), and the cap the process's descriptors put on MAXCHL.
pub(crate) struct Limit {
    count: AtomicU32,
    /// How many connections the descriptors allow (see [`Budget`]); MAXCHL above it is
    /// capped to it.
    cap: AtomicU32,
    /// Refusals not yet logged, and when the last log line was written (rate-limited).
    refused: Mutex<(u64, Option<Instant>)>,
}

impl Default for Limit {
    fn default() -> Limit {
        Limit {
            count: AtomicU32::new(0),
            cap: AtomicU32::new(u32::MAX),
            refused: Mutex::new((0, None)),
        }
    }
}

/// One counted connection; dropping it uncounts it.
pub(crate) struct LimitSlot(Arc<Limit>);

impl Drop for LimitSlot {
    fn drop(&mut self) {
        self.0.count.fetch_sub(1, Ordering::AcqRel);
    }
}

/// At most one log line per second about refused connections; the rest are counted in it.
const REFUSAL_LOG_EVERY: Duration = Duration::from_secs(1);

impl Limit {
    /// MAXCHL as the descriptors allow it.
    pub(crate) fn effective(&self, maxchl: u32) -> u32 {
        maxchl.min(self.cap.load(Ordering::Relaxed))
    }

    pub(crate) fn set_cap(&self, cap: u32) {
        self.cap.store(cap, Ordering::Relaxed);
    }

    /// Whether `maxchl` connections (as capped) are counted already.
    pub(crate) fn full(&self, maxchl: u32) -> bool {
        self.count.load(Ordering::Acquire) >= self.effective(maxchl)
    }

    /// The line to log for a refusal of `who`, if one is due (at most one a second, saying
    /// how many were refused since the last).
    pub(crate) fn refusal_line(&self, who: &str, maxchl: u32) -> Option<String> {
        let mut r = lock(&self.refused);
        r.0 += 1;
        let due = r.1.is_none_or(|t| t.elapsed() >= REFUSAL_LOG_EVERY);
        if !due {
            return None;
        }
        let n = std::mem::take(&mut r.0);
        r.1 = Some(Instant::now());
        let cap = self.effective(maxchl);
        let why = if cap < maxchl {
            format!("MAXCHL({maxchl}), capped to {cap} by the open-file limit,")
        } else {
            format!("MAXCHL({maxchl})")
        };
        Some(if n > 1 {
            format!(
                "{who} refused (2537): {why} connections are served ({n} refused since the last such line)"
            )
        } else {
            format!("{who} refused (2537): {why} connections are served")
        })
    }
}

pub(crate) trait TakeSlot {
    fn take(&self, max: u32) -> Option<LimitSlot>;
}

impl TakeSlot for Arc<Limit> {
    /// A slot unless `max` connections (capped by the descriptors) are counted already.
    fn take(&self, max: u32) -> Option<LimitSlot> {
        let max = self.effective(max);
        self.count
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < max).then_some(n + 1)
            })
            .ok()
            .map(|_| LimitSlot(self.clone()))
    }
}

/// How the process's descriptors are shared out (issue 27): a reserve for what must never be
/// starved (the local administrator, the channel initiator and AMQP channels, log, queue and
/// checkpoint files, the TLS and keystore files), a small budget for sockets that have not
/// sent their first frame yet, and the rest for connections, which caps MAXCHL.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Budget {
    /// Descriptors the process may hold (its open-file limit, raised to the hard one).
    pub fds: u64,
    /// Kept for everything but client connections.
    pub reserve: u64,
    /// Sockets accepted and waiting for their first frame, at most; and per address.
    pub pending: usize,
    pub pending_per_addr: usize,
    /// Connections (MAXCHL's cap).
    pub connections: u32,
}

/// On the event loop: the socket alone.
pub(crate) const FDS_PER_CONNECTION: u64 = 1;

impl Budget {
    #[cfg(test)]
    pub(crate) fn of(fds: u64) -> Budget {
        Budget::with(fds, FDS_PER_CONNECTION)
    }

    /// The budget when each connection holds `per` descriptors.
    pub(crate) fn with(fds: u64, per: u64) -> Budget {
        let per = per.max(1);
        let reserve = (fds / 4).clamp(128, 4096).min(fds / 2);
        let rest = fds.saturating_sub(reserve);
        // A quarter of the rest for sockets before their first frame, at most 256.
        let pending = (rest / 4 / per).clamp(4, 256) as usize;
        let connections = rest.saturating_sub(pending as u64 * per) / per;
        Budget {
            fds,
            reserve,
            pending,
            pending_per_addr: (pending / 4).max(2),
            connections: connections.min(u64::from(u32::MAX)) as u32,
        }
    }
}

/// Sockets accepted whose first frame has not arrived: a budget of their own, so that silent,
/// half-open or trickling sockets hold no MAXCHL slot and a bounded number of descriptors and
/// threads. Past the budget the oldest is closed first — the oldest of the same address when
/// that address holds its share already — so a flood churns its own sockets while a client
/// that sends its Hello at once gets through.
pub(crate) struct Pending {
    inner: Mutex<PendingInner>,
    max: usize,
    per_addr: usize,
}

struct PendingInner {
    next: u64,
    queue: VecDeque<(u64, String, Closer)>,
    /// Sockets closed to make room, since the last log line.
    closed: u64,
    logged: Option<Instant>,
}

/// Closes a socket waiting for its first frame (to make room).
pub(crate) type Closer = Box<dyn FnOnce() + Send>;

/// One socket waiting for its first frame; dropping it (the frame came, or the connection
/// ended) takes it off the list.
pub(crate) struct PendingSlot {
    of: Arc<Pending>,
    id: u64,
}

impl Drop for PendingSlot {
    fn drop(&mut self) {
        let mut i = lock(&self.of.inner);
        if let Some(at) = i.queue.iter().position(|(id, _, _)| *id == self.id) {
            i.queue.remove(at);
        }
    }
}

impl Pending {
    pub(crate) fn new(max: usize, per_addr: usize) -> Arc<Pending> {
        Arc::new(Pending {
            inner: Mutex::new(PendingInner {
                next: 1,
                queue: VecDeque::new(),
                closed: 0,
                logged: None,
            }),
            max: max.max(1),
            per_addr: per_addr.max(1),
        })
    }

    /// Counts `sock` (from `addr`, an IP address) as waiting for its first frame, closing
    /// the oldest waiting socket of that address, or else the oldest of all, when the budget
    /// is spent. Returns the slot and, at most once a second, a line for the log.
    pub(crate) fn admit(
        self: &Arc<Self>,
        addr: &str,
        close: Closer,
    ) -> (PendingSlot, Option<String>) {
        let mut victims = Vec::new();
        let mut i = lock(&self.inner);
        let same = i.queue.iter().filter(|(_, a, _)| a == addr).count();
        if same >= self.per_addr
            && let Some(at) = i.queue.iter().position(|(_, a, _)| a == addr)
            && let Some(v) = i.queue.remove(at)
        {
            victims.push(v);
        }
        while i.queue.len() >= self.max {
            match i.queue.pop_front() {
                Some(v) => victims.push(v),
                None => break,
            }
        }
        let id = i.next;
        i.next += 1;
        i.queue.push_back((id, addr.to_string(), close));
        i.closed += victims.len() as u64;
        let line = (i.closed > 0 && i.logged.is_none_or(|t| t.elapsed() >= REFUSAL_LOG_EVERY))
            .then(|| {
                let n = std::mem::take(&mut i.closed);
                i.logged = Some(Instant::now());
                format!(
                    "{n} connection(s) that had sent no first frame closed to make room (at most \
                     {} wait for theirs, {} per address; the last from {})",
                    self.max,
                    self.per_addr,
                    victims.last().map_or(addr, |v| v.1.as_str())
                )
            });
        drop(i);
        for (_, _, close) in victims {
            close();
        }
        (
            PendingSlot {
                of: self.clone(),
                id,
            },
            line,
        )
    }
}

/// A socket a connection arrived on, as far as refusing it early needs.
pub(crate) trait EarlySock {
    fn set_write_timeout_ms(&self, ms: u64);
    fn set_read_timeout_ms(&self, ms: u64);
    fn close(&self);
}

macro_rules! early_sock {
    ($($t:ty),*) => {$(
        impl EarlySock for $t {
            fn set_write_timeout_ms(&self, ms: u64) {
                let _ = self.set_write_timeout(Some(Duration::from_millis(ms)));
            }
            fn set_read_timeout_ms(&self, ms: u64) {
                let _ = self.set_read_timeout(Some(Duration::from_millis(ms)));
            }
            fn close(&self) {
                let _ = self.shutdown(std::net::Shutdown::Both);
            }
        }
    )*};
}
early_sock!(TcpStream, UnixStream);

/// [`refuse_early`] on the event loop.
pub(crate) async fn refuse_early_async<S: tokio::io::AsyncWrite + Unpin>(
    mut s: S,
    reason: u32,
    detail: &str,
) {
    use tokio::io::AsyncWriteExt;
    let mut b = Vec::new();
    let _ = sealmq_wire::write_response(
        &mut b,
        0,
        &Response::Err {
            reason,
            detail: detail.into(),
        },
    );
    let _ = tokio::time::timeout(Duration::from_millis(200), async {
        s.write_all(&b).await?;
        s.shutdown().await
    })
    .await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::net::TcpListener;

    #[test]
    fn the_budget_keeps_a_reserve_and_caps_connections() {
        let b = Budget::of(1024);
        assert_eq!(b.reserve, 256);
        assert!(b.pending >= 4 && b.pending_per_addr >= 2);
        let used = b.reserve + (b.pending as u64 + u64::from(b.connections)) * FDS_PER_CONNECTION;
        assert!(used <= 1024, "{b:?}");
        assert!(b.connections >= 500, "{b:?}");
        // A tiny limit still leaves the administrator half of it.
        let b = Budget::of(64);
        assert!(b.reserve >= 32, "{b:?}");
        // A large one is not held back by the reserve's ceiling.
        let b = Budget::of(1 << 20);
        assert_eq!(b.reserve, 4096);
        assert_eq!(b.pending, 256);
        assert!(b.connections > 150_000);
    }

    #[test]
    fn limit_is_capped_by_the_descriptors_and_logs_refusals_once_a_second() {
        let l = Arc::new(Limit::default());
        l.set_cap(2);
        let a = l.take(1000).unwrap();
        let _b = l.take(1000).unwrap();
        assert!(l.take(1000).is_none() && l.full(1000));
        drop(a);
        assert!(!l.full(1000) && l.full(1));
        let first = l.refusal_line("x", 1000).unwrap();
        assert!(first.contains("capped to 2"), "{first}");
        assert!(l.refusal_line("x", 1000).is_none());
    }

    /// Three sockets connected to a throw-away listener: (ours, the far end).
    fn closer(s: &TcpStream) -> Closer {
        let s = s.try_clone().unwrap();
        Box::new(move || {
            let _ = s.shutdown(std::net::Shutdown::Both);
        })
    }

    fn pairs(n: usize) -> Vec<(TcpStream, TcpStream)> {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        (0..n)
            .map(|_| {
                let c = TcpStream::connect(addr).unwrap();
                let (s, _) = l.accept().unwrap();
                (s, c)
            })
            .collect()
    }

    fn closed(far: &mut TcpStream) -> bool {
        far.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut b = [0u8; 1];
        matches!(far.read(&mut b), Ok(0) | Err(_))
    }

    #[test]
    fn the_oldest_waiting_socket_of_a_crowded_address_is_closed_first() {
        let p = Pending::new(3, 2);
        let mut socks = pairs(5);
        let mut slots = Vec::new();
        // Two from the flooding address, one from another.
        for (i, addr) in ["10.0.0.9", "10.0.0.9", "10.0.0.1"].iter().enumerate() {
            let (slot, line) = p.admit(addr, closer(&socks[i].0));
            assert!(line.is_none());
            slots.push(slot);
        }
        // A third from the flooding address closes its own oldest, not the other's.
        let (slot, line) = p.admit("10.0.0.9", closer(&socks[3].0));
        slots.push(slot);
        assert!(line.unwrap().contains("10.0.0.9"));
        assert!(closed(&mut socks[0].1));
        // A new address when the budget is spent: the oldest of all goes (the flood's).
        let (slot, _) = p.admit("10.0.0.2", closer(&socks[4].0));
        slots.push(slot);
        assert!(closed(&mut socks[1].1));
        // The other address's socket was never touched.
        socks[2]
            .1
            .set_read_timeout(Some(Duration::from_millis(100)))
            .unwrap();
        let mut b = [0u8; 1];
        assert!(
            matches!(socks[2].1.read(&mut b), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock || e.kind() == std::io::ErrorKind::TimedOut)
        );
        // A slot dropped (its first frame came) frees its place.
        drop(slots.remove(2));
        let i = lock(&p.inner);
        assert_eq!(i.queue.len(), 2);
    }
}

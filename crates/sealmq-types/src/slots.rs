//! The connection table of a listener whose connections authenticate after they are accepted
//! (the REST API and console, `/metrics`, the replication port of a highly available queue
//! manager): at most `max` connections, at most `per_addr` from one address. A connection is *idle* until a
//! request of it is authenticated (the TLS handshake, headers or a login body still arriving,
//! a kept-alive connection between requests, an unauthenticated request); when the table or
//! an address's share is full, a new connection closes the oldest idle one — of its own
//! address first — instead of being refused. So sockets that never send, trickle, or re-open
//! as fast as they are closed churn among themselves, and a client that sends its request at
//! once still gets in (issue 42). Only when every place holds a request being served is a new
//! connection refused. Refusals and evictions are told at most once a second, counted: the
//! line [`Table::admit`] returns is for the listener's log.

use crate::sync::lock;
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// At most one log line a second about a listener's refusals and evictions.
const LOG_EVERY: Duration = Duration::from_secs(1);

/// What closes a connection the table takes the place of (called at most once, outside the
/// table's lock).
pub type Closer = Box<dyn FnOnce() + Send>;

/// One connection's state as the table sees it (`Default`: a connection no table holds).
#[derive(Default)]
pub struct ConnState {
    /// An authenticated request is being served: not to be closed to make room.
    busy: AtomicBool,
    close: Mutex<Option<Closer>>,
}

impl ConnState {
    pub fn set_busy(&self, busy: bool) {
        self.busy.store(busy, Ordering::Release);
    }

    fn is_busy(&self) -> bool {
        self.busy.load(Ordering::Acquire)
    }

    fn close(&self) {
        if let Some(c) = lock(&self.close).take() {
            c();
        }
    }
}

struct Entry {
    id: u64,
    ip: IpAddr,
    state: Arc<ConnState>,
}

#[derive(Default)]
struct Inner {
    next: u64,
    conns: Vec<Entry>,
    evicted: u64,
    refused: u64,
    logged: Option<Instant>,
}

/// A listener's connection table.
pub struct Table {
    name: &'static str,
    max: usize,
    per_addr: usize,
    inner: Mutex<Inner>,
}

/// A connection's place; dropping it frees the place.
pub struct Slot {
    table: Arc<Table>,
    id: u64,
    pub state: Arc<ConnState>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut i = lock(&self.table.inner);
        if let Some(at) = i.conns.iter().position(|e| e.id == self.id) {
            i.conns.swap_remove(at);
        }
    }
}

impl Table {
    pub fn new(name: &'static str, max: usize, per_addr: usize) -> Arc<Table> {
        Arc::new(Table {
            name,
            max: max.max(1),
            per_addr: per_addr.max(1),
            inner: Mutex::default(),
        })
    }

    /// Connections held now.
    pub fn len(&self) -> usize {
        lock(&self.inner).conns.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A place for a connection from `ip` (which `close` closes), made by closing the oldest
    /// idle connection (of `ip` when it holds its share, else of the address holding the most)
    /// when needed; `None` when every place that could be freed serves a request. With, at
    /// most once a second, a line for the log.
    pub fn admit(self: &Arc<Self>, ip: IpAddr, close: Closer) -> (Option<Slot>, Option<String>) {
        let mut evicted = Vec::new();
        let mut i = lock(&self.inner);
        let same = i.conns.iter().filter(|e| e.ip == ip).count();
        let room = (same < self.per_addr || Self::evict(&mut i, Some(ip), &mut evicted))
            && (i.conns.len() < self.max || Self::evict(&mut i, None, &mut evicted));
        let slot = room.then(|| {
            let id = i.next;
            i.next += 1;
            let state = Arc::new(ConnState {
                busy: AtomicBool::new(false),
                close: Mutex::new(Some(close)),
            });
            i.conns.push(Entry {
                id,
                ip,
                state: state.clone(),
            });
            Slot {
                table: self.clone(),
                id,
                state,
            }
        });
        if slot.is_none() {
            i.refused += 1;
        }
        let line = self.line(&mut i, ip);
        drop(i);
        for e in evicted {
            e.close();
        }
        (slot, line)
    }

    /// Takes the oldest idle connection of `ip`, or when none is given of the address that
    /// holds the most idle connections (a flood from some addresses churns its own sockets,
    /// not the one of a client still in its handshake), off the table into `out` (to be
    /// closed). The entries are in the order they came (a removal keeps the order of the
    /// rest).
    fn evict(i: &mut Inner, ip: Option<IpAddr>, out: &mut Vec<Arc<ConnState>>) -> bool {
        let ip = ip.or_else(|| {
            let mut idle: Vec<(IpAddr, usize)> = Vec::new();
            for e in i.conns.iter().filter(|e| !e.state.is_busy()) {
                match idle.iter_mut().find(|(a, _)| *a == e.ip) {
                    Some((_, n)) => *n += 1,
                    None => idle.push((e.ip, 1)),
                }
            }
            idle.into_iter().max_by_key(|(_, n)| *n).map(|(a, _)| a)
        });
        let at = i
            .conns
            .iter()
            .position(|e| ip.is_none_or(|ip| e.ip == ip) && !e.state.is_busy());
        let Some(at) = at else { return false };
        out.push(i.conns.remove(at).state);
        i.evicted += 1;
        true
    }

    fn line(&self, i: &mut Inner, ip: IpAddr) -> Option<String> {
        if i.evicted + i.refused == 0 || i.logged.is_some_and(|t| t.elapsed() < LOG_EVERY) {
            return None;
        }
        i.logged = Some(Instant::now());
        Some(format!(
            "{}: {} idle connection(s) closed to make room and {} refused since the last such \
             line (at most {} connections, {} per address; the last from {ip})",
            self.name,
            std::mem::take(&mut i.evicted),
            std::mem::take(&mut i.refused),
            self.max,
            self.per_addr
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    fn ip(n: u8) -> IpAddr {
        IpAddr::from([127, 0, 0, n])
    }

    /// A closer that counts into `n`.
    fn counted(n: &Arc<AtomicUsize>) -> Closer {
        let n = n.clone();
        Box::new(move || {
            n.fetch_add(1, Ordering::SeqCst);
        })
    }

    #[test]
    fn idle_connections_make_room_and_busy_ones_do_not() {
        let closed = Arc::new(AtomicUsize::new(0));
        let t = Table::new("test", 4, 2);
        let admit = |n| t.admit(ip(n), counted(&closed)).0;
        let a1 = admit(1).unwrap();
        let a2 = admit(1).unwrap();
        // Address 1 holds its share: its oldest idle one goes, and the log is told.
        let (a3, line) = t.admit(ip(1), counted(&closed));
        let a3 = a3.unwrap();
        assert!(line.is_some_and(|l| l.contains("1 idle connection(s) closed")));
        assert_eq!((t.len(), closed.load(Ordering::SeqCst)), (2, 1));
        drop(a1); // already evicted: nothing else is removed
        assert_eq!(t.len(), 2);
        let b1 = admit(2).unwrap();
        let b2 = admit(2).unwrap();
        // Full: a newcomer from elsewhere closes the oldest idle one of the address holding
        // the most idle ones (address 1: a2 and a3 idle; address 2: b1 busy, b2 idle).
        b1.state.set_busy(true);
        let c1 = admit(3).unwrap();
        assert_eq!(t.len(), 4);
        assert_eq!(
            lock(&t.inner)
                .conns
                .iter()
                .filter(|e| e.ip == ip(1))
                .count(),
            1
        );
        // Everything busy: refused, and said so (once a second).
        for s in [&a3, &b1, &b2, &c1] {
            s.state.set_busy(true);
        }
        let (none, line) = t.admit(ip(4), counted(&closed));
        assert!(none.is_none());
        assert!(line.is_none(), "a line a second at most");
        // A second later the next refusal's line counts both.
        lock(&t.inner).logged = None;
        let (none, line) = t.admit(ip(2), counted(&closed));
        assert!(none.is_none());
        assert!(
            line.as_deref().is_some_and(|l| l.contains("2 refused")),
            "{line:?}"
        );
        drop((a2, a3, b1, b2, c1));
        assert!(t.is_empty());
    }
}

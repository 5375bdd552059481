//! The event-driven server (docs/wire.md, "the server"): every application connection — TCP,
//! TLS and the local socket — is a task on one of a few single-threaded tokio runtimes (one
//! per core), not a thread. An idle or half-open connection holds its socket, a 4 KiB read
//! buffer and its task. Each request is one call of the connection's `Session::serve`
//! (`session/`): puts, gets and commits run on the loop, waiting for a log force or a message
//! without a thread; what must block (admission with PAM, MQSC, open and close, QM-side
//! protection) runs on bounded blocking pools. A channel arriving on a listener is handed to
//! a thread of the channel initiator as before.

mod conn;
mod frames;
mod mq;
mod out;

use crate::admit::limits::refuse_early_async;
use crate::peer::{Peer, TlsPeer};
use crate::{Ctx, MAXCHL_REFUSAL, Sock};
use sealmq_engine::QueueManager;
use sealmq_types::ReasonCode;
use std::io::{Read, Write};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::Notify;

/// Threads of the blocking pools at most, all loops together: requests that may block and
/// admissions. Independent of how many connections there are; `SEALMQ_BLOCKING_THREADS`
/// (8 to 1,024) sets it otherwise.
const BLOCKING_THREADS: usize = 64;

fn blocking_threads() -> usize {
    std::env::var("SEALMQ_BLOCKING_THREADS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .map_or(BLOCKING_THREADS, |n| n.clamp(8, 1024))
}

/// The event loops: one single-threaded tokio runtime per core (2 to 8), each on a thread of
/// its own with its own epoll, so a connection's readiness wakes the thread that serves it
/// (no work stealing, no hand-off between workers). Connections are spread over them in
/// turn; the listeners accept on the first.
pub(crate) struct Net {
    loops: Vec<Loop>,
    next: std::sync::atomic::AtomicUsize,
}

struct Loop {
    handle: tokio::runtime::Handle,
    /// Taken at stop: the loop's thread ends its runtime and returns.
    ends: std::sync::Mutex<
        Option<(
            tokio::sync::oneshot::Sender<()>,
            std::thread::JoinHandle<()>,
        )>,
    >,
}

impl Net {
    pub(crate) fn new() -> Result<Arc<Net>, String> {
        let n = std::env::var("SEALMQ_NET_THREADS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| {
                std::thread::available_parallelism()
                    .map(|n| n.get())
                    .unwrap_or(2)
                    .clamp(2, 8)
            })
            .max(1);
        let blocking = blocking_threads();
        let mut loops = Vec::with_capacity(n);
        for i in 0..n {
            let rt = tokio::runtime::Builder::new_current_thread()
                .max_blocking_threads((blocking / n).max(4))
                .thread_name("sealmq-net-pool")
                .enable_io()
                .enable_time()
                .build()
                .map_err(|e| format!("cannot start the event loop: {e}"))?;
            let handle = rt.handle().clone();
            let (tx, rx) = tokio::sync::oneshot::channel::<()>();
            let thread = std::thread::Builder::new()
                .name(format!("sealmq-net-{i}"))
                .spawn(move || {
                    // Until the server stops (or drops its Net).
                    let _ = rt.block_on(rx);
                    // Connections still here end (their units of work back out); requests in
                    // the blocking pool get a moment to finish.
                    rt.shutdown_timeout(std::time::Duration::from_secs(2));
                })
                .map_err(|e| format!("cannot start the event loop: {e}"))?;
            loops.push(Loop {
                handle,
                ends: std::sync::Mutex::new(Some((tx, thread))),
            });
        }
        Ok(Arc::new(Net {
            loops,
            next: std::sync::atomic::AtomicUsize::new(0),
        }))
    }

    /// The first loop (listeners accept there).
    pub(crate) fn handle(&self) -> &tokio::runtime::Handle {
        &self.loops[0].handle
    }

    /// The loop the next connection goes to.
    fn place(&self) -> &tokio::runtime::Handle {
        let i = self.next.fetch_add(1, Ordering::Relaxed) % self.loops.len();
        &self.loops[i].handle
    }

    /// Ends every connection still on the loops and waits for them (not from a loop's own
    /// thread).
    pub(crate) fn stop(&self) {
        let ends: Vec<_> = self
            .loops
            .iter()
            .filter_map(|l| sealmq_types::sync::lock(&l.ends).take())
            .collect();
        let threads: Vec<_> = ends
            .into_iter()
            .map(|(tx, t)| {
                let _ = tx.send(());
                t
            })
            .collect();
        for t in threads {
            let _ = t.join();
        }
    }
}

/// A connection's stream on the event loop.
pub(crate) trait Stream: AsyncRead + AsyncWrite + Unpin + Send + 'static {
    /// The connection as a blocking reader and writer, for a channel that arrived on it.
    fn into_blocking(self) -> Option<Blocking>;
}

/// A connection handed to a blocking thread.
pub(crate) struct Blocking {
    pub(crate) r: Box<dyn Read + Send>,
    pub(crate) w: Box<dyn Write + Send>,
    pub(crate) sock: Option<std::net::TcpStream>,
}

fn blocking_tcp(s: tokio::net::TcpStream) -> Option<std::net::TcpStream> {
    let s = s.into_std().ok()?;
    s.set_nonblocking(false).ok()?;
    Some(s)
}

impl Stream for tokio::net::TcpStream {
    fn into_blocking(self) -> Option<Blocking> {
        let s = blocking_tcp(self)?;
        Some(Blocking {
            r: Box::new(s.try_clone().ok()?),
            w: Box::new(s.try_clone().ok()?),
            sock: Some(s),
        })
    }
}

impl Stream for tokio_rustls::server::TlsStream<tokio::net::TcpStream> {
    fn into_blocking(self) -> Option<Blocking> {
        let (s, conn) = self.into_inner();
        let s = blocking_tcp(s)?;
        let raw = s.try_clone().ok();
        let duplex = sealmq_wire::duplex::Duplex::new(conn, s);
        Some(Blocking {
            r: Box::new(duplex.handle().ok()?),
            w: Box::new(duplex),
            sock: raw,
        })
    }
}

impl Stream for tokio::net::UnixStream {
    fn into_blocking(self) -> Option<Blocking> {
        None
    }
}

/// Accepts TCP connections on `l` until the task is aborted or the queue manager stops.
pub(crate) async fn accept_tcp(
    l: tokio::net::TcpListener,
    qm: Arc<QueueManager>,
    ctx: Ctx,
    net: Arc<Net>,
) {
    loop {
        let (s, addr) = match l.accept().await {
            Ok(x) => x,
            Err(e) => {
                crate::admit::limits::accept_failed("a TCP listener", &e);
                // Out of descriptors: give what holds them a moment instead of spinning.
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                continue;
            }
        };
        if ctx.stop.load(Ordering::Relaxed) {
            break;
        }
        let _ = s.set_nodelay(true);
        let addr = addr.to_string();
        let ip = crate::admit::ip_of(&addr);
        // A blocked address is refused before anything else: no task, no TLS, no password.
        if let Some(why) = qm.address_blocked(&ip) {
            ctx.security
                .events
                .log(&format!("connection from {addr} refused (2035): {why}"));
            if ctx.security.tls().is_none() {
                tokio::spawn(refuse_early_async(
                    s,
                    ReasonCode::NotAuthorized.code(),
                    crate::admit::NOT_AUTHORIZED,
                ));
            }
            continue;
        }
        // MAXCHL connections served: refused now, before any buffer is given.
        let maxchl = qm.qmgr().maxchl;
        if ctx.limit.full(maxchl) {
            ctx.refused(&format!("connection from {addr}"), maxchl);
            if ctx.security.tls().is_none() {
                tokio::spawn(refuse_early_async(
                    s,
                    ReasonCode::ChannelNotAvailable.code(),
                    MAXCHL_REFUSAL,
                ));
            }
            continue;
        }
        // Until its first frame the socket counts among those waiting (a budget of their own,
        // the oldest closed first), not against MAXCHL.
        let ended = Arc::new(Notify::new());
        let end = ended.clone();
        let (pending, line) = ctx.pending.admit(&ip, Box::new(move || end.notify_one()));
        if let Some(line) = line {
            ctx.security.events.log(&line);
        }
        // The configuration in use now: REFRESH SECURITY TYPE(SSL) may replace it.
        let tls = ctx.security.tls();
        let (qm, ctx) = (qm.clone(), ctx.clone());
        // Served on a loop of its own choosing, registered with that loop's epoll.
        let Ok(s) = s.into_std() else { continue };
        net.place().spawn(async move {
            let Ok(s) = tokio::net::TcpStream::from_std(s) else {
                return;
            };
            let id = ctx.register(Sock(ended.clone()));
            match tls {
                None => {
                    let peer = Peer::Tcp { tls: None, addr };
                    conn::serve(qm, ctx.clone(), s, peer, Some(pending), ended).await;
                }
                Some(cfg) => {
                    if let Some((s, peer)) = handshake(s, cfg, &ctx, addr, &ended).await {
                        conn::serve(qm, ctx.clone(), s, peer, Some(pending), ended).await;
                    }
                }
            }
            ctx.unregister(id);
        });
        // The connections just placed read their first frame before the next accept: a burst
        // of clients that send their Hello at once never crowds the sockets waiting for one.
        tokio::task::yield_now().await;
    }
}

/// The TLS handshake of a new connection, within the first frame's time; the principal from
/// the client certificate.
async fn handshake(
    s: tokio::net::TcpStream,
    cfg: Arc<rustls::ServerConfig>,
    ctx: &Ctx,
    addr: String,
    ended: &Notify,
) -> Option<(tokio_rustls::server::TlsStream<tokio::net::TcpStream>, Peer)> {
    let accept = tokio_rustls::TlsAcceptor::from(cfg).accept(s);
    let s = tokio::select! {
        r = tokio::time::timeout(crate::net::welcome::FIRST_FRAME_TOTAL, accept) => match r {
            Ok(Ok(s)) => s,
            // Untrusted or broken peer: the alert rustls prepared was sent.
            Ok(Err(_)) => return None,
            Err(_) => {
                ctx.security.events.log(&format!(
                    "{addr} did not finish its TLS handshake within {} s: closed",
                    crate::net::welcome::FIRST_FRAME_TOTAL.as_secs()
                ));
                return None;
            }
        },
        _ = ended.notified() => return None,
    };
    let (_, conn) = s.get_ref();
    let dn = sealmq_wire::tls::principal(conn.peer_certificates())?;
    let suite = conn
        .negotiated_cipher_suite()
        .map(|c| format!("{:?}", c.suite()))
        .unwrap_or_default();
    let negotiated = sealmq_wire::tls::negotiated(conn);
    let peer = Peer::Tcp {
        tls: Some(TlsPeer {
            dn,
            suite,
            negotiated,
        }),
        addr,
    };
    Some((s, peer))
}

/// Accepts connections on the local socket: the administrator always gets in; other local
/// users count as MAXCHL does.
pub(crate) async fn accept_local(
    l: tokio::net::UnixListener,
    qm: Arc<QueueManager>,
    ctx: Ctx,
    me_uid: u32,
    net: Arc<Net>,
) {
    loop {
        let s = match l.accept().await {
            Ok((s, _)) => s,
            Err(e) => {
                crate::admit::limits::accept_failed("the local socket", &e);
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                continue;
            }
        };
        if ctx.stop.load(Ordering::Relaxed) {
            break;
        }
        let (uid, pid) = s
            .peer_cred()
            .map(|c| (c.uid(), c.pid().unwrap_or(0) as u32))
            .unwrap_or((u32::MAX, 0));
        let (user, admin) = (crate::user_name(uid), uid == me_uid);
        // Another local user's socket (a member of the queue manager's group) waits for its
        // first frame among the sockets that have not sent one, as a TCP socket does, and
        // counts against MAXCHL only from then on (issue 42: 576 silent sockets of one local
        // user held every MAXCHL place); the administrator's counts against neither.
        let ended = Arc::new(Notify::new());
        let pending = if admin {
            None
        } else {
            let maxchl = qm.qmgr().maxchl;
            if ctx.limit.full(maxchl) {
                ctx.refused(&format!("local connection of {user}"), maxchl);
                tokio::spawn(refuse_early_async(
                    s,
                    ReasonCode::ChannelNotAvailable.code(),
                    MAXCHL_REFUSAL,
                ));
                continue;
            }
            let end = ended.clone();
            let who = format!("local:{user}");
            let (pending, line) = ctx.pending.admit(&who, Box::new(move || end.notify_one()));
            if let Some(line) = line {
                ctx.security.events.log(&line);
            }
            Some(pending)
        };
        let (qm, ctx) = (qm.clone(), ctx.clone());
        let Ok(s) = s.into_std() else { continue };
        net.place().spawn(async move {
            let Ok(s) = tokio::net::UnixStream::from_std(s) else {
                return;
            };
            let id = ctx.register(Sock(ended.clone()));
            let peer = Peer::Local { user, admin, pid };
            conn::serve(qm, ctx.clone(), s, peer, pending, ended).await;
            ctx.unregister(id);
        });
    }
}

//! Serving one application connection: the TLS handshake, Hello and admission, then requests
//! until the connection ends (its unit of work backed out, its handles closed).

use crate::admit::limits::PendingSlot;
use crate::peer::{Peer, TlsPeer};
use crate::session::{Flow, Negotiated, Session, protocol_error};
use crate::wiremap::err;
use crate::{Ctx, HANDSHAKE, admit, chinit};
use sealmq_engine::Connection;
use sealmq_engine::QueueManager;
use sealmq_types::ReasonCode;
use sealmq_wire::{Request, Response, WireError};
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// Completes the TLS handshake, takes the principal from the client certificate, and serves.
pub(crate) fn serve_tls(
    qm: &Arc<QueueManager>,
    sock: TcpStream,
    cfg: Arc<rustls::ServerConfig>,
    ctx: &Ctx,
    addr: String,
    pending: Option<PendingSlot>,
) {
    let raw = sock.try_clone().ok();
    let Ok(conn) = rustls::ServerConnection::new(cfg) else {
        return;
    };
    let mut stream = rustls::StreamOwned::new(conn, sock);
    let began = std::time::Instant::now();
    while stream.conn.is_handshaking() {
        if began.elapsed() > FIRST_FRAME_TOTAL {
            ctx.security.events.log(&format!(
                "{addr} did not finish its TLS handshake within {} s: closed",
                FIRST_FRAME_TOTAL.as_secs()
            ));
            return;
        }
        if stream.conn.complete_io(&mut stream.sock).is_err() {
            // Untrusted or broken peer: send the alert rustls prepared, so the client learns
            // it was a TLS failure, then close.
            while stream.conn.wants_write() {
                if stream.conn.write_tls(&mut stream.sock).is_err() {
                    break;
                }
            }
            return;
        }
    }
    let Some(dn) = sealmq_wire::tls::principal(stream.conn.peer_certificates()) else {
        return;
    };
    let suite = stream
        .conn
        .negotiated_cipher_suite()
        .map(|c| format!("{:?}", c.suite()))
        .unwrap_or_default();
    // Read by this thread while a pusher writes (asynchronous consume): the TLS connection
    // is locked only to move bytes through it, never while waiting for the client.
    let rustls::StreamOwned { conn, sock } = stream;
    let duplex = sealmq_wire::duplex::Duplex::new(conn, sock);
    let Ok(reader) = duplex.handle() else {
        return;
    };
    let peer = Peer::Tcp {
        tls: Some(TlsPeer { dn, suite }),
        addr,
        sock: raw,
    };
    let (r, first) = TimedRead::first_frame(reader);
    serve(
        qm,
        BufReader::new(r),
        BufWriter::new(duplex),
        &peer,
        ctx,
        &first,
        pending,
    );
}

/// The whole time a new connection has for its TLS handshake and first frame, however it
/// trickles its bytes (each read also times out after [`HANDSHAKE`] of silence).
pub(crate) const FIRST_FRAME_TOTAL: std::time::Duration = std::time::Duration::from_secs(20);

/// A reader that fails with `TimedOut` once a deadline (ms since the epoch; 0: none) has
/// passed: the first frame cannot be trickled in forever.
pub(crate) struct TimedRead<R> {
    inner: R,
    until: Arc<std::sync::atomic::AtomicU64>,
}

impl<R> TimedRead<R> {
    /// `inner` with the first-frame deadline from now; the returned handle lifts it.
    pub(crate) fn first_frame(inner: R) -> (TimedRead<R>, Arc<std::sync::atomic::AtomicU64>) {
        let until = Arc::new(std::sync::atomic::AtomicU64::new(
            sealmq_engine::md::now_ms() as u64 + FIRST_FRAME_TOTAL.as_millis() as u64,
        ));
        (
            TimedRead {
                inner,
                until: until.clone(),
            },
            until,
        )
    }
}

impl<R: std::io::Read> std::io::Read for TimedRead<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let until = self.until.load(Ordering::Relaxed);
        if until != 0 && sealmq_engine::md::now_ms() as u64 > until {
            return Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "the first frame did not arrive in time",
            ));
        }
        self.inner.read(buf)
    }
}

/// Waits until a request's first byte is readable (`Some(true)`), the peer closed
/// (`Some(false)`), or the connection failed or the server stops (`None`). Read timeouts while
/// idle are only the deadline's ticks.
///
/// With an idle limit (a SVRCONN's DISCINT), a client silent that long since `since` is ended:
/// `None`, as for a stop.
pub(crate) fn wait_readable(
    r: &mut impl BufRead,
    ctx: &Ctx,
    idle: Option<(std::time::Instant, Duration)>,
) -> Option<bool> {
    loop {
        match r.fill_buf() {
            Ok([]) => return Some(false),
            Ok(_) => return Some(true),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock
                        | std::io::ErrorKind::TimedOut
                        | std::io::ErrorKind::Interrupted
                ) =>
            {
                if ctx.stop.load(Ordering::Relaxed) && ctx.immediate.load(Ordering::Relaxed) {
                    return None;
                }
                if idle.is_some_and(|(since, limit)| since.elapsed() >= limit) {
                    return None;
                }
            }
            Err(_) => return None,
        }
    }
}

/// A SVRCONN channel's DISCINT, when it has one: how long a client may stay silent.
pub(crate) fn svrconn_discint(qm: &QueueManager, channel: &str) -> Option<Duration> {
    if channel.is_empty() {
        return None;
    }
    qm.channel(channel)
        .filter(|c| c.chltype == sealmq_engine::channels::ChlType::Svrconn && c.discint > 0)
        .map(|c| Duration::from_secs(c.discint.into()))
}

/// Logs a read that ended at the deadline (not a peer that simply went away).
pub(crate) fn missed_deadline(e: &std::io::Error, ctx: &Ctx, peer: &Peer, what: &str) {
    if matches!(
        e.kind(),
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
    ) {
        ctx.security.events.log(&format!(
            "{} {what} within {} s: closed",
            peer.describe(),
            HANDSHAKE.as_secs()
        ));
    }
}

/// Counts a connection while it is served.
pub(crate) struct Active(Arc<std::sync::atomic::AtomicUsize>);

impl Active {
    /// Counts one more connection served, until dropped.
    pub(crate) fn count(ctx: &Ctx) -> Active {
        ctx.active.fetch_add(1, Ordering::Relaxed);
        Active(ctx.active.clone())
    }
}

impl Drop for Active {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Serves a connection without TLS: `r` and `w` are the same socket, read with the first
/// frame's deadline.
/// `pending`: a TCP socket's place among those waiting for their first frame; once the frame
/// is here it gives way to a MAXCHL slot (the local socket counts at accept instead).
pub(crate) fn serve_plain(
    qm: &Arc<QueueManager>,
    r: impl std::io::Read + Send + 'static,
    w: impl Write + Send + 'static,
    peer: &Peer,
    ctx: &Ctx,
    pending: Option<PendingSlot>,
) {
    let (r, first) = TimedRead::first_frame(r);
    serve(
        qm,
        BufReader::new(r),
        BufWriter::new(w),
        peer,
        ctx,
        &first,
        pending,
    );
}

/// Serves one connection until it ends. Dropping the engine connection backs out.
pub(crate) fn serve(
    qm: &Arc<QueueManager>,
    mut r: impl BufRead + Send + 'static,
    mut w: impl Write + Send + 'static,
    peer: &Peer,
    ctx: &Ctx,
    first: &std::sync::atomic::AtomicU64,
    pending: Option<PendingSlot>,
) {
    let _active = Active::count(ctx);
    // Hello first (or a channel's Start).
    let frame = sealmq_wire::read_first(&mut r, sealmq_wire::HELLO_MAX).inspect(|_| {
        first.store(0, Ordering::Relaxed);
    });
    // The first frame is here: the socket leaves those waiting and counts against MAXCHL
    // from now on, or is refused with 2537.
    let _slot = match (pending, &frame) {
        (Some(p), Ok(Some(f))) => {
            drop(p);
            match ctx.slot(qm, &format!("connection from {}", peer.describe())) {
                Some(s) => Some(s),
                None => {
                    let id = match f {
                        sealmq_wire::First::Request(id, _) => *id,
                        sealmq_wire::First::Channel(_) => 0,
                    };
                    let _ = sealmq_wire::write_response(
                        &mut w,
                        id,
                        &Response::Err {
                            reason: ReasonCode::ChannelNotAvailable.code(),
                            detail: crate::MAXCHL_REFUSAL.into(),
                        },
                    );
                    return;
                }
            }
        }
        _ => None,
    };
    let (id, hello) = match frame {
        Ok(Some(sealmq_wire::First::Channel(start))) => {
            let Peer::Tcp { tls, addr, sock } = peer else {
                return;
            };
            // Channels keep their own deadlines (heartbeats).
            if let Some(s) = sock {
                let _ = s.set_read_timeout(None);
            }
            let info = chinit::receiver::PeerInfo {
                tls: tls.as_ref().map(|t| (t.dn.clone(), t.suite.clone())),
                addr: addr.clone(),
                sock: sock.as_ref().and_then(|s| s.try_clone().ok()),
            };
            if matches!(start, sealmq_wire::chl::ChlFrame::Request { .. }) {
                chinit::requester::serve_request(
                    &ctx.chinit,
                    start,
                    Box::new(r),
                    Box::new(w),
                    info,
                );
            } else {
                chinit::receiver::serve(&ctx.chinit, start, r, w, info);
            }
            return;
        }
        Ok(Some(sealmq_wire::First::Request(id, Request::Hello(hello)))) => (id, hello),
        Ok(Some(sealmq_wire::First::Request(id, _))) => {
            let _ = sealmq_wire::write_response(
                &mut w,
                id,
                &Response::Err {
                    reason: ReasonCode::UnexpectedError.code(),
                    detail: "the first request must be Hello".into(),
                },
            );
            return;
        }
        Err(WireError::Protocol(m)) => {
            // docs/wire.md: a protocol error before the handshake answers Err 2195.
            ctx.security.events.log(&format!(
                "protocol error before the handshake from {}: {m}",
                peer.describe()
            ));
            let _ = sealmq_wire::write_response(
                &mut w,
                0,
                &Response::Err {
                    reason: ReasonCode::UnexpectedError.code(),
                    detail: format!("protocol error: {m}; closing the connection"),
                },
            );
            return;
        }
        Err(WireError::Io(e)) => {
            missed_deadline(&e, ctx, peer, "sent no complete first frame");
            return;
        }
        Ok(None) => return,
    };
    let (conn, a, ok) = match welcome(qm, ctx, peer, hello) {
        Ok(x) => x,
        Err(resp) => {
            let _ = sealmq_wire::write_response(&mut w, id, &resp);
            return;
        }
    };
    peer.limit_write_stall(a.hbint);
    if let Some((every, alive)) = peer.liveness(a.hbint) {
        conn.set_liveness(every, alive);
    }
    if sealmq_wire::write_response(&mut w, id, &ok).is_err() {
        return;
    }
    // From here on the connection's pushers (asynchronous consume) write too. A write that
    // fails ends the connection (docs/wire.md, write stall).
    let w = crate::peer::EndOnFailure {
        w,
        end: peer.shutter(),
    };
    let out: crate::consume::Out = Arc::new(std::sync::Mutex::new(Box::new(w)));
    let n = a.negotiated();
    serve_session(
        Session::new(qm, conn, ctx, a.admin, &n, Ok(out)),
        r,
        peer,
        &n,
    );
}

/// What a connection's Hello settled once admitted.
pub(crate) struct Admitted {
    pub(crate) admin: bool,
    pub(crate) intercept: bool,
    pub(crate) user: String,
    pub(crate) appl: String,
    pub(crate) channel: String,
    pub(crate) version: u16,
    pub(crate) max_frame: usize,
    /// The SVRCONN's heartbeat interval (a dead client is looked for that often).
    pub(crate) hbint: Option<u32>,
}

impl Admitted {
    pub(crate) fn negotiated(&self) -> Negotiated<'_> {
        Negotiated {
            version: self.version,
            max_frame: self.max_frame,
            intercept: self.intercept,
            channel: &self.channel,
            appl: &self.appl,
            user: &self.user,
        }
    }
}

/// A Hello answered: a version both speak, the principal admitted (authentication, CHLAUTH,
/// MAXINST...: may block on PAM) and connected. `Ok`: the connection and the HelloOk to send;
/// `Err`: the refusal to send before closing.
#[allow(clippy::result_large_err)] // once per connection
pub(crate) fn welcome(
    qm: &Arc<QueueManager>,
    ctx: &Ctx,
    peer: &Peer,
    hello: sealmq_wire::Hello,
) -> Result<(Connection, Admitted, Response), Response> {
    let sealmq_wire::Hello {
        versions,
        max_msg: client_max,
        appl,
        channel,
        user: asserted,
        password,
    } = hello;
    if !versions.iter().any(|v| sealmq_wire::VERSIONS.contains(v)) {
        return Err(Response::Err {
            reason: ReasonCode::UnexpectedError.code(),
            detail: format!(
                "no common protocol version (server speaks {:?}, client {:?})",
                sealmq_wire::VERSIONS,
                versions
            ),
        });
    }
    let version = versions
        .iter()
        .copied()
        .filter(|v| sealmq_wire::VERSIONS.contains(v))
        .max()
        .unwrap_or(1);
    let hello = admit::Hello {
        appl: &appl,
        channel: &channel,
        user: &asserted,
        password: password.expose(),
    };
    let admitted = admit::admit(qm, &ctx.security, &ctx.instances, peer, &hello)
        .map_err(|(reason, detail)| Response::Err { reason, detail })?;
    drop(password);
    let user = admitted.user;
    let conn = Connection::connect(qm, &user, &appl).map_err(err)?;
    conn.set_origin(peer.origin(&channel));
    // A get that waits notices within HBINT an application that went away (its unit of
    // work is then backed out as the connection ends).
    let hbint = qm
        .channel(if channel.is_empty() {
            sealmq_engine::channels::DEFAULT_SVRCONN
        } else {
            &channel
        })
        .map(|c| c.hbint);
    let max_msg = client_max.min(qm.qmgr().max_msg_len).max(1024);
    let ok = Response::HelloOk {
        version,
        max_msg,
        qmgr: qm.name(),
        user: user.clone(),
    };
    Ok((
        conn,
        Admitted {
            admin: admitted.admin,
            intercept: admitted.intercept,
            user,
            appl,
            channel,
            version,
            max_frame: max_msg as usize + sealmq_wire::FRAME_OVERHEAD,
            hbint,
        },
        ok,
    ))
}

/// Serves requests read by this thread until the client disconnects, the connection
/// fails or the queue manager stops; then ends the connection.
pub(crate) fn serve_session(mut s: Session, mut r: impl BufRead, peer: &Peer, n: &Negotiated<'_>) {
    let (qm, ctx) = (s.qm.clone(), s.ctx.clone());
    let channel = n.channel;
    // Waiting for a request may take forever (an idle application) unless the SVRCONN has a
    // DISCINT; once its first byte is here, the rest must follow within HANDSHAKE (the
    // socket's read timeout, shorter when DISCINT is).
    let idle_limit = svrconn_discint(&qm, channel);
    if let (Some(limit), Peer::Tcp { sock: Some(s), .. }) = (idle_limit, peer) {
        let _ = s.set_read_timeout(Some(limit.min(HANDSHAKE)));
    }
    let mut last = std::time::Instant::now();
    loop {
        match wait_readable(&mut r, &ctx, idle_limit.map(|l| (last, l))) {
            Some(true) => {}
            Some(false) => break,
            None => {
                if let Some(l) = idle_limit.filter(|l| last.elapsed() >= *l) {
                    discint_ended(channel, &peer.describe(), l);
                }
                break;
            }
        }
        let (id, req) = match sealmq_wire::read_request(&mut r, n.max_frame) {
            Ok(Some(x)) => x,
            Ok(None) => break,
            Err(WireError::Io(e)) => {
                missed_deadline(&e, &ctx, peer, "stopped in the middle of a frame");
                break;
            }
            Err(WireError::Protocol(m)) => {
                let _ = s.write(0, &protocol_error(&m));
                break;
            }
        };
        match s.request(id, req) {
            Flow::Reply(resp) => {
                if s.write(id, &resp).is_err() {
                    break;
                }
            }
            Flow::Silent => {}
            Flow::End => {
                let _ = s.write(id, &Response::Ok);
                break;
            }
            // This connection's own thread waits for room (a send that fails: the
            // pushers' writer ended, and so does the connection).
            Flow::Behind(resp) => match s.behind(id, &resp) {
                Some((tx, frame)) => {
                    if !tx.blocking_send_answer(frame) {
                        break;
                    }
                }
                None => {
                    if s.write(id, &resp).is_err() {
                        break;
                    }
                }
            },
        }
        last = std::time::Instant::now();
    }
    s.end();
}

/// Logs a client ended for its SVRCONN's DISCINT.
pub(crate) fn discint_ended(channel: &str, peer: &str, limit: std::time::Duration) {
    tracing::info!(
        channel = %channel,
        peer = %peer,
        "client idle for DISCINT({}) seconds: connection ended",
        limit.as_secs()
    );
}

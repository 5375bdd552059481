//! One connection on the event loop, from its first frame to its end: a task that holds the
//! socket and a small read buffer and no thread. Admission (which may ask PAM) runs on the
//! blocking pool; each request is one call of [`Session::serve`], which decides itself what
//! must leave the loop.

use super::frames::{self, Waited};
use super::out::Writer;
use super::{Blocking, Stream};
use crate::admit::limits::{LimitSlot, PendingSlot};
use crate::net::welcome::{
    FIRST_FRAME_TOTAL, discint_ended, missed_deadline, svrconn_discint, welcome,
};
use crate::peer::Peer;
use crate::session::{Client, Flow, Session, protocol_error};
use crate::{Ctx, HANDSHAKE, MAXCHL_REFUSAL, chinit};
use sealmq_engine::QueueManager;
use sealmq_types::ReasonCode;
use sealmq_wire::chl::ChlFrame;
use sealmq_wire::{First, Request, Response, WireError};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, BufReader};
use tokio::sync::Notify;

/// The read buffer of a connection (requests larger than it are read straight into their
/// own buffer): what an idle connection costs beside its socket and task.
const READ_BUF: usize = 4096;
/// A client's write stall limit on the Unix socket (no heartbeat interval of its own).
const LOCAL_WRITE_STALL: Duration = Duration::from_secs(60);
/// The least write stall limit on TCP.
const WRITE_STALL_MIN: Duration = Duration::from_secs(5);

/// Serves a connection until it ends. `ended` is notified to end it from outside (a stop,
/// a pending socket closed to make room, a write that failed).
pub(crate) async fn serve<S: Stream>(
    qm: Arc<QueueManager>,
    ctx: Ctx,
    s: S,
    peer: Peer,
    pending: Option<PendingSlot>,
    ended: Arc<Notify>,
) {
    let _active = crate::net::welcome::Active::count(&ctx);
    let (rd, wr) = tokio::io::split(s);
    let mut rd = BufReader::with_capacity(READ_BUF, rd);
    let first = match first_frame(&mut rd, &ended).await {
        Some(Opening::Native(f)) => f,
        Some(Opening::Mq(prefix)) => {
            // MQ's client protocol: it counts against MAXCHL from its first segment on.
            drop(pending);
            let Some(slot) = ctx.slot(
                &qm,
                &format!("MQ client connection from {}", peer.describe()),
            ) else {
                return;
            };
            let socket = super::mq::Accepted {
                rd,
                wr,
                prefix,
                peer,
                slot,
                ended,
            };
            let mq = super::mq::serve(qm, ctx.clone(), socket);
            return Box::pin(mq).await;
        }
        None => return,
    };
    // The first frame is here: the socket leaves those waiting and counts against MAXCHL
    // from now on, or is refused with 2537.
    let slot = match (pending, &first) {
        (Some(p), Ok(Some(f))) => {
            drop(p);
            match ctx.slot(&qm, &format!("connection from {}", peer.describe())) {
                Some(s) => Some(s),
                None => {
                    let id = match f {
                        First::Request(id, _) => *id,
                        First::Channel(_) => 0,
                    };
                    let refusal = Response::Err {
                        reason: ReasonCode::ChannelNotAvailable.code(),
                        detail: MAXCHL_REFUSAL.into(),
                    };
                    return refuse(wr, &ended, id, refusal).await;
                }
            }
        }
        _ => None,
    };
    let (id, hello) = match first {
        Ok(Some(First::Channel(start))) => {
            let leftover = rd.buffer().to_vec();
            let s = rd.into_inner().unsplit(wr);
            return hand_to_channel(&ctx, s, &peer, start, leftover, slot);
        }
        Ok(Some(First::Request(id, Request::Hello(hello)))) => (id, hello),
        Ok(Some(First::Request(id, _))) => {
            let refusal = Response::Err {
                reason: ReasonCode::UnexpectedError.code(),
                detail: "the first request must be Hello".into(),
            };
            return refuse(wr, &ended, id, refusal).await;
        }
        Err(WireError::Protocol(m)) => {
            // docs/wire.md: a protocol error before the handshake answers Err 2195.
            ctx.security.events.log(&format!(
                "protocol error before the handshake from {}: {m}",
                peer.describe()
            ));
            return refuse(wr, &ended, 0, protocol_error(&m)).await;
        }
        Err(WireError::Io(e)) => {
            missed_deadline(&e, &ctx, &peer, "sent no complete first frame");
            return;
        }
        Ok(None) => return,
    };
    let _slot = slot;
    let Some((welcomed, peer)) = admit(&qm, &ctx, peer, hello).await else {
        return;
    };
    let (conn, a, ok) = match welcomed {
        Ok(x) => x,
        Err(resp) => return refuse(wr, &ended, id, resp).await,
    };
    let w = Writer::new(wr, write_stall(&peer, a.hbint), ended.clone());
    if w.write(&frames::encode(id, &ok)).await.is_err() {
        return;
    }
    let n = a.negotiated();
    let rt = tokio::runtime::Handle::current();
    let pushers = w.clone();
    let make_out: crate::session::MakeOut = Box::new(move || pushers.for_pushers(&rt));
    let session = Session::new(&qm, conn, &ctx, a.admin, &n, make_out);
    let idle = svrconn_discint(&qm, &a.channel);
    let mut l = Loop {
        session,
        rd,
        w,
        ended,
        max_frame: a.max_frame,
    };
    l.run(idle, &a.channel, &peer).await;
    // Closing handles may wait for the log: on the blocking pool.
    let s = l.session;
    let _ = tokio::task::spawn_blocking(move || s.end()).await;
}

/// The Hello answered and the connection admitted. Admission may ask PAM: on the blocking
/// pool — except the administrator's on the local socket (no password, no PAM), which never
/// waits behind others' logins. `None`: the pool is gone (the server is ending).
async fn admit(
    qm: &Arc<QueueManager>,
    ctx: &Ctx,
    peer: Peer,
    hello: sealmq_wire::Hello,
) -> Option<(Welcomed, Peer)> {
    if matches!(peer, Peer::Local { admin: true, .. }) {
        return Some((welcome(qm, ctx, &peer, hello), peer));
    }
    let (q, c) = (qm.clone(), ctx.clone());
    tokio::task::spawn_blocking(move || (welcome(&q, &c, &peer, hello), peer))
        .await
        .ok()
}

/// What [`welcome`] answers: the engine connection, what was admitted and the Hello's answer,
/// or the refusal.
type Welcomed = Result<
    (
        sealmq_engine::Connection,
        crate::net::welcome::Admitted,
        Response,
    ),
    Response,
>;

/// How a connection opens: the native protocol's first frame, or MQ's client protocol (the
/// first four bytes are a segment header's id, which no native frame's length can be: it
/// would claim over 500 MB).
#[allow(clippy::large_enum_variant)] // once per connection, moved once
enum Opening {
    Native(Result<Option<First>, WireError>),
    Mq([u8; 4]),
}

/// The connection's first frame, within [`FIRST_FRAME_TOTAL`] however it trickles (each read
/// within [`HANDSHAKE`]); `None` when the connection is told to end first.
async fn first_frame<R: AsyncRead + Unpin>(
    rd: &mut BufReader<R>,
    ended: &Notify,
) -> Option<Opening> {
    let read = async {
        let Some(len) = frames::read_len(rd, HANDSHAKE).await? else {
            return Ok(Opening::Native(Ok(None)));
        };
        if sealmq_fap::tsh::Kind::from_id(&len).is_some() {
            return Ok(Opening::Mq(len));
        }
        let b = frames::read_after(rd, len, sealmq_wire::HELLO_MAX, HANDSHAKE).await?;
        Ok(Opening::Native(sealmq_wire::read_first(
            &mut &b[..],
            sealmq_wire::HELLO_MAX,
        )))
    };
    let first = tokio::select! {
        r = tokio::time::timeout(FIRST_FRAME_TOTAL, read) => match r {
            Ok(r) => r,
            Err(_) => Err(WireError::Io(std::io::ErrorKind::TimedOut.into())),
        },
        _ = ended.notified() => return None,
    };
    Some(first.unwrap_or_else(|e| Opening::Native(Err(e))))
}

/// A channel's connection, handed to the channel initiator: channels run on threads of their
/// own (chinit/), with their own heartbeats — not the blocking pool, which serves short
/// requests — and keep the connection's MAXCHL slot while they run.
fn hand_to_channel<S: Stream>(
    ctx: &Ctx,
    s: S,
    peer: &Peer,
    start: ChlFrame,
    leftover: Vec<u8>,
    slot: Option<LimitSlot>,
) {
    if let (Some(b), Peer::Tcp { tls, addr, .. }) = (s.into_blocking(), peer) {
        let info = chinit::receiver::PeerInfo {
            tls: tls.as_ref().map(|t| (t.dn.clone(), t.suite.clone())),
            negotiated: tls
                .as_ref()
                .map(|t| t.negotiated.clone())
                .unwrap_or_default(),
            addr: addr.clone(),
            sock: b.sock.as_ref().and_then(|s| s.try_clone().ok()),
        };
        let ci = ctx.chinit.clone();
        let _ = std::thread::Builder::new()
            .name("channel".into())
            .spawn(move || {
                let _slot = slot;
                channel(&ci, start, b, leftover, info)
            });
    }
}

/// How long a write to the client may make no progress before the connection ends: the
/// SVRCONN's heartbeat interval (at least 5 s; none with HBINT(0)), 60 s on the Unix socket.
fn write_stall(peer: &Peer, hbint: Option<u32>) -> Duration {
    match peer {
        Peer::Local { .. } => LOCAL_WRITE_STALL,
        Peer::Tcp { .. } => hbint
            .filter(|h| *h > 0)
            .map_or(Duration::from_secs(3600 * 24 * 365), |h| {
                Duration::from_secs(h.into()).max(WRITE_STALL_MIN)
            }),
    }
}

/// Refuses a connection before its session: one frame, then close.
async fn refuse<S: Stream>(
    wr: tokio::io::WriteHalf<S>,
    ended: &Arc<Notify>,
    id: u32,
    resp: Response,
) {
    let w = Writer::new(wr, Duration::from_millis(500), ended.clone());
    let _ = w.write(&frames::encode(id, &resp)).await;
}

/// A channel's first frame arrived on a client listener: served as a channel is, on this
/// (blocking) thread.
fn channel(
    ci: &Arc<chinit::Initiator>,
    start: sealmq_wire::chl::ChlFrame,
    b: Blocking,
    leftover: Vec<u8>,
    info: chinit::receiver::PeerInfo,
) {
    use std::io::Read;
    // Buffered as the threaded server's were: a frame leaves in one write.
    let r = std::io::BufReader::new(std::io::Cursor::new(leftover).chain(b.r));
    let w = Box::new(std::io::BufWriter::new(b.w));
    if matches!(start, sealmq_wire::chl::ChlFrame::Request { .. }) {
        chinit::requester::serve_request(ci, start, Box::new(r), w, info);
    } else {
        chinit::receiver::serve(ci, start, r, w, info);
    }
}

/// The request loop of an admitted connection.
struct Loop<S> {
    session: Session,
    rd: BufReader<tokio::io::ReadHalf<S>>,
    w: Arc<Writer<S>>,
    ended: Arc<Notify>,
    max_frame: usize,
}

impl<S: Stream> Loop<S> {
    async fn run(&mut self, idle: Option<Duration>, channel: &str, peer: &Peer) {
        loop {
            // The next request: as long as it takes (an idle application) unless the SVRCONN
            // has a DISCINT; once its first byte is here, the rest within HANDSHAKE.
            let waited = tokio::select! {
                w = frames::first_byte(&mut self.rd) => w,
                _ = sleep_or_forever(idle) => {
                    if let Some(l) = idle {
                        discint_ended(channel, &peer.describe(), l);
                    }
                    return;
                }
                _ = self.ended.notified() => return,
            };
            if !matches!(waited, Waited::Ready) {
                return;
            }
            let frame = tokio::select! {
                f = frames::read(&mut self.rd, self.max_frame, HANDSHAKE) => f,
                _ = self.ended.notified() => return,
            };
            let decoded = frame.and_then(|f| match f {
                Some(b) => sealmq_wire::read_request(&mut &b[..], self.max_frame),
                None => Ok(None),
            });
            let (id, req) = match decoded {
                Ok(Some(x)) => x,
                Ok(None) => return,
                Err(WireError::Io(e)) => {
                    let ctx = &self.session.ctx;
                    missed_deadline(&e, ctx, peer, "stopped in the middle of a frame");
                    return;
                }
                Err(WireError::Protocol(m)) => {
                    let _ = self.w.write(&frames::encode(0, &protocol_error(&m))).await;
                    return;
                }
            };
            let mut client = Client::new(&mut self.rd, &self.ended);
            let flow = self.session.serve(id, req, &mut client).await;
            let (resp, end) = match flow {
                Flow::Reply(r) => (r, false),
                Flow::Silent => continue,
                Flow::End => (Response::Ok, true),
                Flow::Behind(r) => {
                    let behind = self.session.behind(id, &r);
                    match behind {
                        // This task waits for room, holding no thread; the connection's end
                        // (a write that stalled) ends the wait.
                        Some((tx, frame)) => {
                            let sent = tokio::select! {
                                sent = tx.send_answer(frame) => sent,
                                _ = self.ended.notified() => false,
                            };
                            if !sent {
                                return;
                            }
                            continue;
                        }
                        None => (r, false),
                    }
                }
            };
            if self.w.write(&frames::encode(id, &resp)).await.is_err() || end {
                return;
            }
        }
    }
}

async fn sleep_or_forever(d: Option<Duration>) {
    match d {
        Some(d) => tokio::time::sleep(d).await,
        None => std::future::pending().await,
    }
}

//! IBM MQ's client protocol on the listeners (docs/fap.md, docs/mq-clients.md): a connection
//! whose first bytes are a transmission segment header is served here, on the event loop,
//! instead of by the native protocol. One task reads the socket's segments: the initial data
//! exchange, heartbeats and socket actions on the socket itself, and each conversation's flows
//! to that conversation's task (`conv.rs`), which serves them through a `Session` as a native
//! connection's requests are served (`flows.rs`). Every segment is checked before it costs
//! anything: its length against the transmission size agreed, a message's segments against
//! MAXMSGL, conversations against SHARECNV; a segment that breaks the protocol closes the
//! socket, logged with the peer's address.

mod amspolicy;
mod consume;
mod consumers;
mod conv;
mod flows;
mod handles;
mod inq;
mod msg;
mod sub;

use super::Stream;
use super::out::{Writer, within};
use crate::admit::limits::LimitSlot;
use crate::peer::Peer;
use crate::{Ctx, HANDSHAKE};
use sealmq_engine::QueueManager;
use sealmq_fap::bytes::Order;
use sealmq_fap::id::{self, Granted, Limits};
use sealmq_fap::sockact::{self, SocketAction};
use sealmq_fap::tsh::{self, Kind, Peek, Tsh, flags, seg};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, BufReader, ReadHalf, WriteHalf};
use tokio::sync::{Notify, mpsc};

/// The largest initial-data segment read (the ID structure is 240 bytes).
const INITIAL_MAX: usize = 4096;
/// The transmission size sealmq offers (MQ's default, which IBM's clients ask for).
const MAX_TRANSMISSION: u32 = 32_748;
/// The flows a conversation may have waiting while it serves one (clients send one at a time).
const CONV_QUEUE: usize = 8;
/// A message's segments together may exceed MAXMSGL by the structures around the data.
const MSG_OVERHEAD: usize = 64 * 1024;

/// A whole flow of a conversation: its first segment's header and the structures after it
/// (a message's further segments appended).
pub(super) struct Flow {
    pub(super) tsh: Tsh,
    pub(super) body: Vec<u8>,
}

/// What every conversation of a socket shares: where it writes and what was negotiated.
pub(super) struct Socket<S> {
    pub(super) w: Arc<Writer<S>>,
    pub(super) order: Order,
    pub(super) ccsid: u16,
    pub(super) granted: Granted,
    pub(super) channel: String,
    pub(super) peer: Peer,
    /// The client's own user (USERID_DATA) until a conversation names one.
    pub(super) ended: Arc<Notify>,
}

impl<S: Stream> Socket<S> {
    /// Sends one flow, split into segments of the agreed transmission size.
    pub(super) async fn send(
        &self,
        kind: Kind,
        seg_type: u8,
        conv: u32,
        req: u32,
        body: &[u8],
    ) -> bool {
        let room = (self.granted.max_transmission as usize)
            .saturating_sub(kind.header_len())
            .max(1);
        let mut out = Vec::with_capacity(body.len() + 64);
        let parts: Vec<&[u8]> = if body.is_empty() {
            vec![&[][..]]
        } else {
            body.chunks(room).collect()
        };
        let n = parts.len();
        for (i, part) in parts.into_iter().enumerate() {
            let mut h = Tsh::answer(kind, seg_type, conv, req, self.ccsid);
            h.order = self.order;
            h.flags1 =
                if i == 0 { flags::FIRST } else { 0 } | if i + 1 == n { flags::LAST } else { 0 };
            out.extend_from_slice(&h.frame(part));
        }
        self.w.write(&out).await.is_ok()
    }
}

/// Why the socket ends.
enum End {
    /// The peer closed, or the connection was ended from here.
    Quiet,
    /// Not MQ's protocol, or a limit broken: logged.
    Refused(String),
    /// Refused with a segment that tells the client why (STATUS_DATA), then logged.
    Told(Vec<u8>, String),
}

/// STATUS_DATA's code for a channel the queue manager does not have (the client's 2540); the
/// segment flagged ERROR and CLOSE_CHANNEL, as IBM's client reads a refusal.
const STATUS_NO_CHANNEL: u32 = 1;
/// ...and for a channel of another type.
const STATUS_CHANNEL_WRONG_TYPE: u32 = 2;

/// A socket the listener took whose first four bytes (`prefix`) were read as a segment
/// header's id; `slot` is its MAXCHL place, `ended` notified to end it from outside.
pub(crate) struct Accepted<S> {
    pub(crate) rd: BufReader<ReadHalf<S>>,
    pub(crate) wr: WriteHalf<S>,
    pub(crate) prefix: [u8; 4],
    pub(crate) peer: Peer,
    pub(crate) slot: LimitSlot,
    pub(crate) ended: Arc<Notify>,
}

/// Serves an MQ client's socket until it ends.
pub(crate) async fn serve<S: Stream>(qm: Arc<QueueManager>, ctx: Ctx, a: Accepted<S>) {
    let Accepted {
        mut rd,
        mut wr,
        prefix,
        peer,
        slot: _slot,
        ended,
    } = a;
    let first = read_segment(&mut rd, Some(prefix), INITIAL_MAX).await;
    let (h, asked, def) = match first.and_then(|s| channel_asked(&qm, &s)) {
        Ok(x) => x,
        Err(End::Quiet) => return,
        Err(End::Refused(why)) => return refused(&ctx, &peer, &why),
        Err(End::Told(segment, why)) => {
            refused(&ctx, &peer, &why);
            return tell_and_close(&mut rd, &mut wr, &segment).await;
        }
    };
    let (sock, answer) = initial(&qm, h, &asked, &def, &peer, &ended, wr);
    if sock.w.write(&answer).await.is_err() {
        return;
    }
    let sock = Arc::new(sock);
    let end = run(&qm, &ctx, &mut rd, &sock).await;
    sock.ended.notify_waiters();
    if let End::Refused(why) = end {
        refused(&ctx, &peer, &why);
    }
}

/// Sends the segment that says why the socket is refused, then lets the client read it: what
/// it sends meanwhile is read and dropped until it closes, for [`HANDSHAKE`] at most.
async fn tell_and_close<S: Stream>(
    rd: &mut BufReader<ReadHalf<S>>,
    wr: &mut WriteHalf<S>,
    segment: &[u8],
) {
    use tokio::io::AsyncWriteExt;
    let told = async {
        wr.write_all(segment).await?;
        wr.flush().await?;
        let mut sink = [0u8; 1024];
        while rd.read(&mut sink).await? > 0 {}
        std::io::Result::Ok(())
    };
    let _ = tokio::time::timeout(HANDSHAKE, told).await;
}

fn refused(ctx: &Ctx, peer: &Peer, why: &str) {
    ctx.security.events.log(&format!(
        "MQ client connection from {} closed: {why}",
        peer.describe()
    ));
}

/// The client's `ID  ` read and its channel looked up: a channel this queue manager does not
/// have as a SVRCONN is told (STATUS_DATA), as MQ tells it.
fn channel_asked(
    qm: &QueueManager,
    seg: &[u8],
) -> Result<(Tsh, id::Asked, sealmq_engine::channels::ChannelDef), End> {
    let h = tsh::parse(seg).map_err(|e| End::Refused(e.0))?;
    if h.kind != Kind::Tsh || h.seg_type != seg::INITIAL_DATA {
        return Err(End::Refused(
            "the first segment must be the initial data".into(),
        ));
    }
    let asked = id::parse(&seg[h.header_len()..], h.order).map_err(|e| End::Refused(e.0))?;
    let channel = asked.channel.clone();
    match qm.channel(&channel) {
        Some(c) if c.chltype == sealmq_engine::channels::ChlType::Svrconn => Ok((h, asked, c)),
        found => {
            let (code, what) = match found {
                None => (
                    STATUS_NO_CHANNEL,
                    "is not a channel of this queue manager (the client's 2540)",
                ),
                Some(_) => (
                    STATUS_CHANNEL_WRONG_TYPE,
                    "is not a SVRCONN channel (the client's 2539)",
                ),
            };
            let mut t = Tsh::answer(Kind::Tsh, seg::STATUS_DATA, 0, 0, h.ccsid);
            t.order = h.order;
            t.flags1 |= flags::ERROR | flags::CLOSE_CHANNEL;
            let told = t.frame(&sockact::status(code, h.order));
            Err(End::Told(told, format!("channel '{channel}' {what}")))
        }
    }
}

/// The initial data exchange answered: what is granted, and the socket's writer.
fn initial<S: Stream>(
    qm: &QueueManager,
    h: Tsh,
    asked: &id::Asked,
    def: &sealmq_engine::channels::ChannelDef,
    peer: &Peer,
    ended: &Arc<Notify>,
    wr: WriteHalf<S>,
) -> (Socket<S>, Vec<u8>) {
    let channel = asked.channel.clone();
    let limits = Limits {
        max_transmission: MAX_TRANSMISSION,
        maxmsgl: def.max_msg_len.min(qm.qmgr().max_msg_len).max(1024),
        hbint: def.hbint,
        sharecnv: def.sharecnv(),
    };
    let mut nonce = [0u8; 12];
    let _ = getrandom(&mut nonce);
    let name = qm.name();
    let granted = Granted::negotiate(asked, &name, &qmid(&name), limits, nonce);
    let body = granted.encode(asked, h.order);
    let mut answer = Tsh::answer(Kind::Tsh, seg::INITIAL_DATA, 0, 0, h.ccsid);
    answer.order = h.order;
    let frame = answer.frame(&body);
    let stall = Duration::from_secs(u64::from(granted.hbint.max(5)) * 2);
    let w = Writer::new(wr, stall, ended.clone());
    (
        Socket {
            w,
            order: h.order,
            ccsid: h.ccsid,
            granted,
            channel,
            peer: peer.clone(),
            ended: ended.clone(),
        },
        frame,
    )
}

/// The queue manager's identifier as the MQ client sees it.
pub(super) fn qmid(name: &str) -> String {
    format!("{name}_SEALMQ")
}

fn getrandom(b: &mut [u8]) -> Result<(), ()> {
    aws_lc_rs::rand::fill(b).map_err(|_| ())
}

/// The socket's segments until it ends: heartbeats and socket actions here, each
/// conversation's flows to its task.
async fn run<S: Stream>(
    qm: &Arc<QueueManager>,
    ctx: &Ctx,
    rd: &mut BufReader<ReadHalf<S>>,
    sock: &Arc<Socket<S>>,
) -> End {
    let max_seg = sock.granted.max_transmission as usize;
    let max_msg = sock.granted.max_msg as usize + MSG_OVERHEAD;
    let mut convs: HashMap<u32, mpsc::Sender<Flow>> = HashMap::new();
    let mut partial: HashMap<u32, Flow> = HashMap::new();
    // Conversation 1 begins with the socket.
    convs.insert(1, conv::start(qm, ctx, sock, 1));
    let idle = crate::net::welcome::svrconn_discint(qm, &sock.channel);
    let hb = (sock.granted.hbint > 0).then(|| Duration::from_secs(sock.granted.hbint.into()));
    let mut beat_sent = false;
    loop {
        let silence = match (hb, idle) {
            (Some(h), Some(i)) => Some(h.min(i)),
            (h, i) => h.or(i),
        };
        let waited = tokio::select! {
            r = rd.fill_buf_ready() => r,
            _ = sleep_or_forever(silence) => {
                // A heartbeat asked once the client has been silent for HBINT; silent for
                // another, it is gone (as MQ ends a channel whose partner stopped answering).
                if let Some(h) = hb && !beat_sent && idle.is_none_or(|i| i > h) {
                    beat_sent = true;
                    let mut t = Tsh::answer(Kind::Common, seg::HEARTBEAT, 0, 0, sock.ccsid);
                    t.order = sock.order;
                    t.flags1 |= flags::CONFIRM_REQUEST;
                    if sock.w.write(&t.frame(&[])).await.is_err() {
                        return End::Quiet;
                    }
                    continue;
                }
                return End::Refused(if beat_sent {
                    "the client answered no heartbeat within HBINT".into()
                } else {
                    "idle for the channel's DISCINT".into()
                });
            }
            _ = sock.ended.notified() => return End::Quiet,
        };
        if !waited {
            return End::Quiet;
        }
        beat_sent = false;
        let s = match read_segment(rd, None, max_seg).await {
            Ok(s) => s,
            Err(e) => return e,
        };
        let h = match tsh::parse(&s) {
            Ok(h) => h,
            Err(e) => return End::Refused(e.0),
        };
        let body = s[h.header_len()..].to_vec();
        let closing = h.flags1 & flags::CLOSE_CHANNEL != 0;
        match h.kind {
            Kind::Common | Kind::Tsh => match common(sock, &h, &body, &mut convs, qm, ctx).await {
                Ok(true) => {}
                Ok(false) => return End::Quiet,
                Err(why) => return End::Refused(why),
            },
            Kind::Multiplexed => {
                let Some(tx) = convs.get(&h.conv) else {
                    return End::Refused(format!(
                        "a segment for conversation {} that was never started",
                        h.conv
                    ));
                };
                let whole = match assemble(&mut partial, h, body, max_msg) {
                    Ok(Some(f)) => f,
                    Ok(None) => continue,
                    Err(why) => return End::Refused(why),
                };
                let conv = whole.tsh.conv;
                if tx.send(whole).await.is_err() {
                    // The conversation ended (MQDISC answered, or it failed): its further
                    // flows have no one to serve them.
                    convs.remove(&conv);
                }
            }
        }
        if closing {
            return End::Quiet;
        }
    }
}

/// A message's segments gathered into one flow (`None` until its last segment), bounded by
/// MAXMSGL and the structures around the data.
fn assemble(
    partial: &mut HashMap<u32, Flow>,
    h: Tsh,
    body: Vec<u8>,
    max: usize,
) -> Result<Option<Flow>, String> {
    let first = h.flags1 & flags::FIRST != 0;
    let last = h.flags1 & flags::LAST != 0;
    let conv = h.conv;
    let mut flow = match (first, partial.remove(&conv)) {
        (true, None) => Flow { tsh: h, body },
        (false, Some(mut f)) => {
            f.body.extend_from_slice(&body);
            f
        }
        (true, Some(_)) => {
            return Err(format!(
                "conversation {conv} began a flow before it ended the last"
            ));
        }
        (false, None) => {
            return Err(format!(
                "a middle segment on conversation {conv} with no first"
            ));
        }
    };
    if flow.body.len() > max {
        return Err(format!(
            "a flow of more than {max} bytes (MAXMSGL and its structures)"
        ));
    }
    if last {
        flow.tsh.flags1 |= flags::LAST;
        return Ok(Some(flow));
    }
    partial.insert(conv, flow);
    Ok(None)
}

/// A segment of the socket as a whole: a heartbeat answered, a conversation started or ended.
/// `Ok(false)`: the client closes the socket.
async fn common<S: Stream>(
    sock: &Arc<Socket<S>>,
    h: &Tsh,
    body: &[u8],
    convs: &mut HashMap<u32, mpsc::Sender<Flow>>,
    qm: &Arc<QueueManager>,
    ctx: &Ctx,
) -> Result<bool, String> {
    match h.seg_type {
        seg::HEARTBEAT => {
            if h.flags1 & flags::CONFIRM_REQUEST != 0 {
                let mut t = Tsh::answer(h.kind, seg::HEARTBEAT, 0, 0, sock.ccsid);
                t.order = sock.order;
                return Ok(sock.w.write(&t.frame(body)).await.is_ok());
            }
            Ok(true)
        }
        seg::SOCKET_ACTION => {
            let a = SocketAction::parse(body, h.order).map_err(|e| e.0)?;
            match a.kind {
                sockact::kind::START_CONV => {
                    if convs.contains_key(&a.conv) || a.conv == 0 {
                        return Err(format!("conversation {} started twice", a.conv));
                    }
                    if convs.len() as u32 >= sock.granted.sharecnv {
                        return Err(format!(
                            "a conversation beyond the SHARECNV({}) agreed",
                            sock.granted.sharecnv
                        ));
                    }
                    convs.insert(a.conv, conv::start(qm, ctx, sock, a.conv));
                    let ok = a.accepted().encode(h.order);
                    Ok(sock
                        .send(Kind::Multiplexed, seg::SOCKET_ACTION, a.conv, a.req, &ok)
                        .await)
                }
                sockact::kind::END_CONV => {
                    // The conversation's task ends its session when its queue closes.
                    convs.remove(&a.conv);
                    Ok(true)
                }
                _ => Ok(true),
            }
        }
        t if h.flags1 & flags::CLOSE_CHANNEL != 0 => {
            let _ = t;
            Ok(false)
        }
        t => Err(format!(
            "segment type 0x{t:02x} is not served on the socket"
        )),
    }
}

/// Reads one segment: its header's id (already read as `prefix`, or read now), its length
/// checked against `max` before anything is allocated, then the rest within [`HANDSHAKE`].
async fn read_segment<R: AsyncRead + Unpin>(
    rd: &mut BufReader<R>,
    prefix: Option<[u8; 4]>,
    max: usize,
) -> Result<Vec<u8>, End> {
    let gather = async {
        let mut head = [0u8; 8];
        let at = match prefix {
            Some(p) => {
                head[..4].copy_from_slice(&p);
                4
            }
            None => 0,
        };
        rd.read_exact(&mut head[at..]).await?;
        let total = match tsh::peek(&head, max) {
            Ok(Peek::Segment { total }) => total,
            Ok(_) => return Ok(Err("not MQ's protocol".to_string())),
            Err(e) => return Ok(Err(e.0)),
        };
        // Grown as bytes arrive, not allocated from the length a peer claims.
        let mut buf = Vec::with_capacity(total.min(64 * 1024));
        buf.extend_from_slice(&head);
        (&mut *rd)
            .take((total - 8) as u64)
            .read_to_end(&mut buf)
            .await?;
        if buf.len() != total {
            return Err(std::io::Error::from(std::io::ErrorKind::UnexpectedEof));
        }
        Ok::<_, std::io::Error>(Ok(buf))
    };
    match within(HANDSHAKE, gather).await {
        Some(Ok(Ok(b))) => Ok(b),
        Some(Ok(Err(why))) => Err(End::Refused(why)),
        Some(Err(e)) if e.kind() == std::io::ErrorKind::UnexpectedEof => Err(End::Quiet),
        Some(Err(_)) => Err(End::Quiet),
        None => Err(End::Refused(format!(
            "a segment did not arrive whole within {} s",
            HANDSHAKE.as_secs()
        ))),
    }
}

async fn sleep_or_forever(d: Option<Duration>) {
    match d {
        Some(d) => tokio::time::sleep(d).await,
        None => std::future::pending().await,
    }
}

/// Waiting for a segment's first byte without consuming it.
trait FillReady {
    /// `true` when a byte is readable, `false` when the peer closed or the socket failed.
    async fn fill_buf_ready(&mut self) -> bool;
}

impl<R: AsyncRead + Unpin> FillReady for BufReader<R> {
    async fn fill_buf_ready(&mut self) -> bool {
        use tokio::io::AsyncBufReadExt;
        matches!(self.fill_buf().await, Ok(b) if !b.is_empty())
    }
}

/// The reason of a response (0 for anything but an error).
pub(super) fn rc_of(r: &sealmq_wire::Response) -> u32 {
    match r {
        sealmq_wire::Response::Err { reason, .. } => *reason,
        _ => 0,
    }
}

//! # sealmq-wire: the protocol between applications and a queue manager (versions 1 to 7)
//!
//! Documented in `docs/wire.md`. A frame is `length u32` (of what follows), `kind u8`,
//! `request id u32`, then the body; all integers little-endian. The client opens with
//! [`Request::Hello`]; the server answers [`Response::HelloOk`] with the version and the largest
//! frame both accept. Every request gets exactly one response with the same id, except Credit
//! (none); version 2 adds asynchronous consume, whose pushed frames carry id 0 ([`consume`]),
//! version 3 message properties, version 4 publish/subscribe, version 5 topics opened to
//! publish and subscription options, 6 MQMD's report fields, 7 policies read once for put1
//! ([`VERSIONS`]).
//! Malformed frames are answered with an error and the connection is closed.

pub mod chl;
pub mod consume;
pub mod duplex;
pub mod tls;

pub use consume::{ConsumeReq, Delivery};

use sealmq_mqi::Md;
use sealmq_types::codec::{Dec, DecodeError, Enc, Field};
use sealmq_types::coded_enum;
use std::io::{self, Read, Write};

/// Protocol versions this build speaks.
pub const VERSIONS: &[u16] = &[1, 2, 3, 4, 5, 6, 7, 8];
/// The first version with asynchronous consume (requests 16-19, responses 136-138).
pub const V_CONSUME: u16 = 2;
/// The first version whose descriptors may carry message properties (docs/wire.md).
pub const V_PROPERTIES: u16 = 3;
/// The first version with publish/subscribe (requests 20-22).
pub const V_PUBSUB: u16 = 4;
/// The first version with topics opened for output and subscriptions' options (requests
/// 23-24).
pub const V_TOPIC_OPEN: u16 = 5;
/// The first version whose descriptors may carry MQMD's report options and feedback
/// (docs/wire.md).
pub const V_MD_MORE: u16 = 6;
/// The first version in which a policy comes with the queue manager's policy epoch
/// ([`Response::PolicyAt`]) and a put1 may carry the epoch its policy was read at
/// ([`Request::Put1At`], refused with 2041 when policies changed since): an application reads a
/// queue's policy once, not before every put1.
pub const V_POLICY_EPOCH: u16 = 7;
/// The first version with `sealmq reprotect` ([`Request::Reprotect`], request 26, response 140).
pub const V_REPROTECT: u16 = 8;
/// Request 13 (Policy) for a topic string rather than a queue name: `topic://STRING`.
pub const TOPIC_PREFIX: &str = "topic://";
/// Largest frame accepted before Hello negotiates a larger one.
pub const HELLO_MAX: usize = 64 * 1024;
/// Overhead allowed above the message size in a frame.
pub const FRAME_OVERHEAD: usize = 64 * 1024;

/// A queue's DEFREADA in an Opened answer (version 2).
pub mod read_ahead {
    pub const NO: u8 = 0;
    pub const YES: u8 = 1;
    pub const DISABLED: u8 = 2;
}

/// Open options on the wire.
pub mod open {
    pub const INPUT_SHARED: u8 = 1;
    pub const INPUT_EXCLUSIVE: u8 = 2;
    pub const BROWSE: u8 = 4;
    pub const OUTPUT: u8 = 8;
    pub const INQUIRE: u8 = 16;
    pub const SET: u8 = 32;
    /// MQOO_INPUT_AS_Q_DEF (shared or exclusive as the queue's DEFSOPT says); added in wire
    /// version 2 without a version change: an older server refuses it as no input option.
    pub const INPUT_AS_Q_DEF: u8 = 64;
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GetReq {
    pub hobj: u32,
    pub syncpoint: bool,
    /// Milliseconds to wait; negative: do not wait.
    pub wait_ms: i64,
    /// 0 none, 1 first, 2 next, 3 message under cursor.
    pub browse: u8,
    pub match_msg_id: Option<[u8; 24]>,
    pub match_correl_id: Option<[u8; 24]>,
    pub accept_truncated: bool,
    /// Largest payload taken; negative: unlimited.
    pub buffer: i64,
    /// MQGMO_SYNCPOINT_IF_PERSISTENT (IBM's JMS client; sealmq's clients leave it false): a
    /// trailing byte on the wire, present only when set.
    pub if_persistent: bool,
}

impl GetReq {
    /// The wire form of a get's options on handle `hobj`.
    pub fn from_options(hobj: u32, gmo: &sealmq_mqi::GetOptions) -> GetReq {
        use sealmq_mqi::Browse;
        GetReq {
            hobj,
            syncpoint: gmo.syncpoint,
            wait_ms: gmo.wait.map_or(-1, |w| w.as_millis() as i64),
            browse: match gmo.browse {
                Browse::None => 0,
                Browse::First => 1,
                Browse::Next => 2,
                Browse::MsgUnderCursor => 3,
            },
            match_msg_id: gmo.matching.msg_id,
            match_correl_id: gmo.matching.correl_id,
            accept_truncated: gmo.accept_truncated,
            buffer: gmo.buffer.map_or(-1, |b| b as i64),
            if_persistent: gmo.syncpoint_if_persistent,
        }
    }
}

/// A password on its way: never printed (Debug shows its length only), wiped when dropped.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Secret(pub zeroize::Zeroizing<String>);

impl Secret {
    pub fn new(s: &str) -> Secret {
        Secret(zeroize::Zeroizing::new(s.to_string()))
    }

    pub fn expose(&self) -> &str {
        &self.0
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Secret({} bytes)", self.0.len())
    }
}

/// An application's first request. `channel`: the SVRCONN channel to use on TCP (empty:
/// SYSTEM.DEF.SVRCONN). `user`/`password`: connection authentication (CONNAUTH), both empty
/// when not given; on the wire only when given (docs/wire.md), so older peers read the frame
/// unchanged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hello {
    pub versions: Vec<u16>,
    pub max_msg: u32,
    pub appl: String,
    pub channel: String,
    pub user: String,
    pub password: Secret,
}

impl Field for Hello {
    fn put(&self, e: &mut Enc) {
        self.versions.put(e);
        e.u32(self.max_msg).str(&self.appl).str(&self.channel);
        if !self.user.is_empty() || !self.password.is_empty() {
            e.str(&self.user).str(self.password.expose());
        }
    }

    fn take(d: &mut Dec<'_>) -> sealmq_types::codec::Result<Hello> {
        let mut h = Hello {
            versions: Field::take(d)?,
            max_msg: d.u32()?,
            appl: d.str()?,
            channel: d.str()?,
            user: String::new(),
            password: Secret::default(),
        };
        if !d.is_empty() {
            h.user = d.str()?;
            h.password = Secret(zeroize::Zeroizing::new(d.str()?));
        }
        Ok(h)
    }
}

/// The answer to an open. `policy`: the encoded security policy of the name opened (empty:
/// none); `intercepted`: the queue manager protects and unprotects for this connection
/// (QM-side interception).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Opened {
    pub hobj: u32,
    pub resolved: String,
    pub policy: Vec<u8>,
    pub intercepted: bool,
    /// Version 2 only (absent on the wire for version 1): the DEFREADA of the name opened —
    /// [`read_ahead`] values.
    pub read_ahead: Option<u8>,
}

impl Field for Opened {
    fn put(&self, e: &mut Enc) {
        e.u32(self.hobj)
            .str(&self.resolved)
            .bytes(&self.policy)
            .bool(self.intercepted);
        if let Some(r) = self.read_ahead {
            e.u8(r);
        }
    }

    fn take(d: &mut Dec<'_>) -> sealmq_types::codec::Result<Opened> {
        Ok(Opened {
            hobj: d.u32()?,
            resolved: d.str()?,
            policy: d.bytes()?.to_vec(),
            intercepted: d.bool()?,
            read_ahead: if d.is_empty() { None } else { Some(d.u8()?) },
        })
    }
}

impl Field for GetReq {
    fn put(&self, e: &mut Enc) {
        e.u32(self.hobj).bool(self.syncpoint);
        self.wait_ms.put(e);
        e.u8(self.browse);
        self.match_msg_id.put(e);
        self.match_correl_id.put(e);
        e.bool(self.accept_truncated);
        self.buffer.put(e);
        // Absent unless set: a server that predates it reads the get as before.
        if self.if_persistent {
            e.u8(1);
        }
    }

    fn take(d: &mut Dec<'_>) -> sealmq_types::codec::Result<GetReq> {
        Ok(GetReq {
            hobj: d.u32()?,
            syncpoint: d.bool()?,
            wait_ms: Field::take(d)?,
            browse: d.u8()?,
            match_msg_id: Field::take(d)?,
            match_correl_id: Field::take(d)?,
            accept_truncated: d.bool()?,
            buffer: Field::take(d)?,
            if_persistent: !d.is_empty() && d.u8()? == 1,
        })
    }
}

impl Field for Secret {
    fn put(&self, e: &mut Enc) {
        e.str(self.expose());
    }
    fn take(d: &mut Dec<'_>) -> sealmq_types::codec::Result<Secret> {
        Ok(Secret(zeroize::Zeroizing::new(d.str()?)))
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    /// Opens a connection ([`Hello`]).
    Hello(Hello),
    Open {
        name: String,
        options: u8,
        dyn_name: String,
    },
    Close {
        hobj: u32,
    },
    Put {
        hobj: u32,
        md: Md,
        payload: Vec<u8>,
        syncpoint: bool,
    },
    Put1 {
        name: String,
        md: Md,
        payload: Vec<u8>,
        syncpoint: bool,
    },
    Get(GetReq),
    Commit,
    Backout,
    Mqsc {
        script: String,
        json: bool,
    },
    Stop {
        immediate: bool,
    },
    Heartbeat,
    Disconnect,
    /// MQOPEN of a queue on another queue manager (output): the queue manager resolves the
    /// transmission queue (kind 15).
    OpenAt {
        name: String,
        qmgr: String,
        options: u8,
    },
    /// The security policy of a queue name (for put1 with client-side protection).
    Policy {
        name: String,
    },
    /// A message got through `hobj` failed a protection check in the application: the queue
    /// manager moves it to the protection error queue with a dead-letter header.
    ProtectionError {
        hobj: u32,
        md: Md,
        payload: Vec<u8>,
        check: String,
        detail: String,
        signer: String,
        syncpoint: bool,
    },
    /// Version 2: starts pushing a handle's messages (asynchronous consume).
    Consume(ConsumeReq),
    /// Version 2: `n` more messages may be pushed to consumer `tag` (no response).
    Credit {
        tag: u32,
        n: u32,
    },
    /// Version 2: commits (or backs out) a pushed batch; answered by `Settled`.
    Settle {
        tag: u32,
        batch: u32,
        commit: bool,
    },
    /// Version 2: stops a consumer; answered Ok once nothing more will be pushed for it.
    ConsumeStop {
        tag: u32,
    },
    /// Version 4: MQPUT to a topic string: a publication, answered `Put`; `retain`: kept as
    /// the topic string's retained publication (MQPMO_RETAIN).
    Publish {
        topic: String,
        md: Md,
        payload: Vec<u8>,
        syncpoint: bool,
        retain: bool,
    },
    /// Version 4: MQSUB with a managed queue: makes (or with `resume`, resumes) subscription
    /// `name` (blank, non-durable: the queue manager names it) to `topic`; answered `Opened`,
    /// the subscription's queue opened for input.
    Subscribe {
        name: String,
        topic: String,
        durable: bool,
        selector: String,
        resume: bool,
    },
    /// Version 4: MQCLOSE with MQCO_REMOVE_SUB: ends subscription `name`; answered Ok.
    Unsubscribe {
        name: String,
    },
    /// Version 5: MQOPEN of a topic for output (MQOT_TOPIC): topic object `object` and/or
    /// topic string `topic`; answered `Opened` (`resolved`: the full topic string, `policy`:
    /// the topic's). A `Put` through the handle is a publication; `Close` ends it.
    OpenTopic {
        object: String,
        topic: String,
    },
    /// Version 5: `Subscribe` with MQSUB's further options: `new_only`
    /// (MQSO_NEW_PUBLICATIONS_ONLY: a new subscription is not given the retained
    /// publications) and `dest` (a queue of the subscriber's for the copies instead of a
    /// managed one; blank: managed).
    SubscribeWith {
        name: String,
        topic: String,
        durable: bool,
        selector: String,
        resume: bool,
        new_only: bool,
        dest: String,
    },
    /// Version 7: a put1 whose payload was protected (or not) by the policies of `epoch`;
    /// refused with 2041 (MQRC_OBJECT_CHANGED), nothing put, when the queue manager's
    /// policies changed since.
    Put1At {
        name: String,
        md: Md,
        payload: Vec<u8>,
        syncpoint: bool,
        epoch: u64,
    },
    /// Version 8: re-protects up to `batch` messages of `queue`, from the first (`start`) or
    /// after the position (`rank`, `seq`) an earlier answer gave, for the queue's policy's
    /// current recipients, unwrapping with the keys of the keystore in directory `keystore`
    /// (which the queue manager reads; no key crosses the connection). `dry_run`: counts only.
    /// Answered `Reprotected`; the queue manager's own user only.
    Reprotect {
        queue: String,
        keystore: String,
        start: bool,
        rank: u8,
        seq: u64,
        batch: u32,
        dry_run: bool,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Response {
    HelloOk {
        version: u16,
        max_msg: u32,
        qmgr: String,
        user: String,
    },
    Ok,
    /// A handle opened ([`Opened`]).
    Opened(Opened),
    /// Answer to [`Request::Policy`] (empty: none).
    Policy {
        policy: Vec<u8>,
    },
    /// Version 7's answer to Policy: the policy (empty: none) and the epoch it holds in.
    PolicyAt {
        policy: Vec<u8>,
        epoch: u64,
    },
    Put {
        md: Md,
    },
    Got {
        md: Md,
        payload: Vec<u8>,
        data_len: u64,
        warning: u32,
    },
    Mqsc {
        text: String,
        failed: u32,
    },
    Err {
        reason: u32,
        detail: String,
    },
    /// Version 2: a pushed message (request id 0).
    Delivery(Delivery),
    /// Version 2: the last message of batch `batch` (`count` messages) was pushed.
    BatchEnd {
        tag: u32,
        batch: u32,
        count: u32,
    },
    /// Version 2: a batch was settled (reason 0) or could not be (the reason).
    Settled {
        tag: u32,
        batch: u32,
        reason: u32,
        detail: String,
    },
    /// Version 8's answer to Reprotect: messages looked at, rewritten (or, in a dry run, to be
    /// rewritten), already current, not encrypted (or IBM's envelope), and failed (`detail`:
    /// the first failure's reason); `more`: the next batch starts after (`rank`, `seq`);
    /// `depth`: the queue's depth; `unwraps`: private-key operations so far.
    Reprotected {
        scanned: u32,
        rewritten: u32,
        current: u32,
        other: u32,
        failed: u32,
        detail: String,
        more: bool,
        rank: u8,
        seq: u64,
        depth: u64,
        unwraps: u64,
    },
}

/// A wire error: I/O, or a frame that breaks the protocol.
#[derive(Debug)]
pub enum WireError {
    Io(io::Error),
    /// The peer sent something that is not protocol: say what, then close.
    Protocol(String),
}

impl std::fmt::Display for WireError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WireError::Io(e) => write!(f, "connection error: {e}"),
            WireError::Protocol(m) => write!(f, "protocol error: {m}"),
        }
    }
}

impl std::error::Error for WireError {}

impl From<io::Error> for WireError {
    fn from(e: io::Error) -> Self {
        WireError::Io(e)
    }
}

fn perr(e: DecodeError) -> WireError {
    WireError::Protocol(e.to_string())
}

coded_enum!(Request, "request" {
    1 => Hello(h),
    2 => Open { name, options, dyn_name },
    3 => Close { hobj },
    4 => Put { hobj, md, payload, syncpoint },
    5 => Put1 { name, md, payload, syncpoint },
    6 => Get(g),
    7 => Commit,
    8 => Backout,
    9 => Mqsc { script, json },
    10 => Stop { immediate },
    11 => Heartbeat,
    12 => Disconnect,
    13 => Policy { name },
    14 => ProtectionError { hobj, md, payload, check, detail, signer, syncpoint },
    15 => OpenAt { name, qmgr, options },
    16 => Consume(c),
    17 => Credit { tag, n },
    18 => Settle { tag, batch, commit },
    19 => ConsumeStop { tag },
    20 => Publish { topic, md, payload, syncpoint, retain },
    21 => Subscribe { name, topic, durable, selector, resume },
    22 => Unsubscribe { name },
    23 => OpenTopic { object, topic },
    24 => SubscribeWith { name, topic, durable, selector, resume, new_only, dest },
    25 => Put1At { name, md, payload, syncpoint, epoch },
    26 => Reprotect { queue, keystore, start, rank, seq, batch, dry_run },
});

coded_enum!(Response, "response" {
    128 => Ok,
    129 => Err { reason, detail },
    130 => HelloOk { version, max_msg, qmgr, user },
    131 => Opened(o),
    132 => Put { md },
    133 => Got { md, payload, data_len, warning },
    134 => Mqsc { text, failed },
    135 => Policy { policy },
    136 => Delivery(dl),
    137 => BatchEnd { tag, batch, count },
    138 => Settled { tag, batch, reason, detail },
    139 => PolicyAt { policy, epoch },
    140 => Reprotected { scanned, rewritten, current, other, failed, detail, more, rank, seq, depth, unwraps },
});

/// Decodes a whole frame body of kind `kind` as `T`: nothing may be left over.
fn decode_all<T>(
    body: &[u8],
    what: &'static str,
    take: impl FnOnce(&mut Dec<'_>) -> sealmq_types::codec::Result<T>,
) -> Result<T, WireError> {
    let mut d = Dec::new(body, what);
    let v = take(&mut d).map_err(perr)?;
    d.finish().map_err(perr)?;
    Ok(v)
}

impl Request {
    fn decode(kind: u8, body: &[u8]) -> Result<Request, WireError> {
        decode_all(body, "request", |d| Request::take_body(kind, d))
    }
}

impl Response {
    fn decode(kind: u8, body: &[u8]) -> Result<Response, WireError> {
        decode_all(body, "response", |d| Response::take_body(kind, d))
    }
}

#[cfg(test)]
fn write_frame(w: &mut impl Write, kind: u8, id: u32, body: &[u8]) -> io::Result<()> {
    write_unflushed(w, kind, id, |e| e.buf.extend_from_slice(body))?;
    w.flush()
}

/// Writes one frame whose body `body` encodes straight after the frame header, in one buffer
/// (no second copy of a message payload), not flushed.
fn write_unflushed(
    w: &mut impl Write,
    kind: u8,
    id: u32,
    body: impl FnOnce(&mut Enc),
) -> io::Result<()> {
    let mut e = Enc::with_capacity(512);
    e.buf.extend_from_slice(&[0u8; 4]);
    e.buf.push(kind);
    e.buf.extend_from_slice(&id.to_le_bytes());
    body(&mut e);
    let len = u32::try_from(e.buf.len() - 4)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "frame larger than 4 GiB"))?;
    e.buf[..4].copy_from_slice(&len.to_le_bytes());
    w.write_all(&e.buf)
}

/// Reads one frame: (kind, id, body). `Ok(None)` at a clean end of stream.
fn read_frame(r: &mut impl Read, max: usize) -> Result<Option<(u8, u32, Vec<u8>)>, WireError> {
    let mut len = [0u8; 4];
    match r.read_exact(&mut len) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e.into()),
    }
    let len = u32::from_le_bytes(len) as usize;
    if len < 5 {
        return Err(WireError::Protocol(format!(
            "frame length {len} is shorter than a frame header"
        )));
    }
    if len > max {
        return Err(WireError::Protocol(format!(
            "frame of {len} bytes exceeds the negotiated {max}"
        )));
    }
    let mut head = [0u8; 5];
    r.read_exact(&mut head)?;
    let kind = head[0];
    let id = u32::from_le_bytes([head[1], head[2], head[3], head[4]]);
    // Grown as bytes arrive, not allocated from the length a peer claims: a lying length
    // costs the liar, not the queue manager's memory.
    let want = len - 5;
    let mut buf = Vec::with_capacity(want.min(64 * 1024));
    r.take(want as u64).read_to_end(&mut buf)?;
    if buf.len() != want {
        return Err(WireError::Io(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            format!("the frame ended after {} of {want} bytes", buf.len()),
        )));
    }
    Ok(Some((kind, id, buf)))
}

pub fn write_request(w: &mut impl Write, id: u32, r: &Request) -> io::Result<()> {
    write_unflushed(w, r.kind(), id, |e| r.put_body(e))?;
    w.flush()
}

pub fn write_response(w: &mut impl Write, id: u32, r: &Response) -> io::Result<()> {
    write_response_unflushed(w, id, r)?;
    w.flush()
}

/// [`write_response`] without the flush: pushed messages of one batch go out together.
pub fn write_response_unflushed(w: &mut impl Write, id: u32, r: &Response) -> io::Result<()> {
    write_unflushed(w, r.kind(), id, |e| r.put_body(e))
}

pub fn read_request(r: &mut impl Read, max: usize) -> Result<Option<(u32, Request)>, WireError> {
    match read_frame(r, max)? {
        None => Ok(None),
        Some((kind, id, body)) => Ok(Some((id, Request::decode(kind, &body)?))),
    }
}

/// The first frame on a connection: an application's Hello or a channel's Start.
#[allow(clippy::large_enum_variant)] // one per connection
pub enum First {
    Request(u32, Request),
    Channel(chl::ChlFrame),
}

/// Reads the first frame of a connection, which decides the protocol.
pub fn read_first(r: &mut impl Read, max: usize) -> Result<Option<First>, WireError> {
    match read_frame(r, max)? {
        None => Ok(None),
        Some((kind, _, body)) if chl::ChlFrame::is_channel_kind(kind) => {
            Ok(Some(First::Channel(chl::ChlFrame::decode(kind, &body)?)))
        }
        Some((kind, id, body)) => Ok(Some(First::Request(id, Request::decode(kind, &body)?))),
    }
}

pub fn read_response(r: &mut impl Read, max: usize) -> Result<Option<(u32, Response)>, WireError> {
    match read_frame(r, max)? {
        None => Ok(None),
        Some((kind, id, body)) => Ok(Some((id, Response::decode(kind, &body)?))),
    }
}

#[cfg(test)]
mod tests;

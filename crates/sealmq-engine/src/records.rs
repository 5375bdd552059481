//! Log records and checkpoint frames of the queue manager (format in docs/storage.md).

use crate::authinfo::AuthInfoDef;
use crate::authority::AuthRec;
use crate::channels::ChannelDef;
use crate::chlauth::ChlAuthRec;
use crate::md::Message;
use crate::objects::{QmgrDef, QueueDef};
use crate::queue::TxId;
use crate::services::{ListenerDef, ProcessDef, ServiceDef};
use crate::subs::SubDef;
use crate::topics::TopicDef;
use sealmq_storage::Result;
use sealmq_storage::codec::{Dec, Enc, Field};
use sealmq_types::coded_enum;

/// One log record.
#[derive(Debug, Clone, PartialEq)]
pub enum Record {
    Qmgr(QmgrDef),
    Define(QueueDef),
    Delete(String),
    /// A persistent message put. `auto`: outside a unit of work (committed by itself).
    Put {
        tx: TxId,
        auto: bool,
        queue: String,
        seq: u64,
        msg: Message,
    },
    /// A persistent message got (removed when `tx` commits; at once when `auto`).
    Get {
        tx: TxId,
        auto: bool,
        queue: String,
        seq: u64,
    },
    Commit(TxId),
    Backout(TxId),
    /// Unit of work `from` became part of `into`: its records commit or back out with `into`'s
    /// (an AMQP transaction's deliveries, each got in a unit of work of its own).
    Join {
        from: TxId,
        into: TxId,
    },
    /// A message moved by the queue manager (backout requeue), with its backout count.
    Move {
        from: String,
        to: String,
        seq: u64,
        backout_count: u32,
    },
    /// A message moved by the queue manager (backout requeue) with the message itself, so
    /// replay does not need the source queue's files (which a DELETE may have removed).
    MoveMsg {
        from: String,
        to: String,
        seq: u64,
        backout_count: u32,
        msg: Message,
    },
    /// Every message of a queue removed (CLEAR QLOCAL).
    Clear(String),
    /// An authority record set (replacing one with the same profile, type and principal).
    SetAuth(AuthRec),
    /// An authority record removed.
    DeleteAuth(AuthRec),
    /// A channel defined or altered.
    DefineChannel(ChannelDef),
    /// A channel deleted.
    DeleteChannel(String),
    /// A channel authentication record set (replacing one with the same key).
    SetChlAuth(ChlAuthRec),
    /// A channel authentication record removed (by key).
    DeleteChlAuth(ChlAuthRec),
    /// An AUTHINFO object defined or altered.
    DefineAuthInfo(AuthInfoDef),
    /// An AUTHINFO object deleted.
    DeleteAuthInfo(String),
    /// A LISTENER defined or altered, and deleted.
    DefineListener(ListenerDef),
    DeleteListener(String),
    /// A PROCESS defined or altered, and deleted.
    DefineProcess(ProcessDef),
    DeleteProcess(String),
    /// A SERVICE defined or altered, and deleted.
    DefineService(ServiceDef),
    DeleteService(String),
    /// A TOPIC object defined or altered, and deleted (issue 28).
    DefineTopic(TopicDef),
    DeleteTopic(String),
    /// A durable subscription made or altered, and deleted (issue 28).
    DefineSub(SubDef),
    DeleteSub(String),
}

coded_enum!(Record, "log record" {
    1 => Qmgr(q),
    2 => Define(q),
    3 => Delete(n),
    4 => Put { tx, auto, queue, seq, msg },
    5 => Get { tx, auto, queue, seq },
    6 => Commit(tx),
    7 => Backout(tx),
    8 => Move { from, to, seq, backout_count },
    9 => Clear(n),
    10 => SetAuth(a),
    11 => DeleteAuth(a),
    12 => DefineChannel(c),
    13 => DeleteChannel(n),
    14 => SetChlAuth(r),
    15 => DeleteChlAuth(r),
    16 => DefineAuthInfo(a),
    17 => DeleteAuthInfo(n),
    18 => DefineListener(l),
    19 => DeleteListener(n),
    20 => DefineProcess(p),
    21 => DeleteProcess(n),
    22 => DefineService(s),
    23 => DeleteService(n),
    24 => MoveMsg { from, to, seq, backout_count, msg },
    25 => Join { from, into },
    26 => DefineTopic(t),
    27 => DeleteTopic(n),
    28 => DefineSub(s),
    29 => DeleteSub(n),
});

/// The definitions records and frames carry, each with its own versioned encoding.
macro_rules! fields_by_methods {
    ($($t:ty),*) => {$(
        impl Field for $t {
            fn put(&self, e: &mut Enc) {
                self.encode(e)
            }
            fn take(d: &mut Dec<'_>) -> sealmq_storage::codec::Result<Self> {
                <$t>::decode(d)
            }
        }
    )*};
}
fields_by_methods!(
    QmgrDef,
    QueueDef,
    AuthRec,
    ChannelDef,
    ChlAuthRec,
    AuthInfoDef,
    ListenerDef,
    ProcessDef,
    ServiceDef,
    TopicDef,
    SubDef
);

impl Record {
    pub const PUT_KIND: u8 = 4;

    /// The payload of a `Put` record, encoded from a borrowed message (no copy of it first).
    pub fn encode_put(tx: TxId, auto: bool, queue: &str, seq: u64, msg: &Message) -> Vec<u8> {
        let mut e = Enc::with_capacity(msg.payload.len() + 256);
        e.u64(tx).bool(auto).str(queue).u64(seq);
        msg.encode(&mut e);
        e.buf
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut e = Enc::with_capacity(64);
        self.put_body(&mut e);
        e.buf
    }

    pub fn decode(kind: u8, payload: &[u8]) -> Result<Record> {
        let mut d = Dec::new(payload, "log record");
        let r = Record::take_body(kind, &mut d)?;
        d.finish()?;
        Ok(r)
    }
}

/// One checkpoint frame.
#[derive(Debug, Clone, PartialEq)]
pub enum Frame {
    Meta {
        next_seq: u64,
        next_tx: u64,
        replay_from: u64,
    },
    Qmgr(QmgrDef),
    Queue(QueueDef),
    Message {
        queue: String,
        seq: u64,
        backout_count: u32,
        msg: Message,
    },
    /// A unit of work active at the checkpoint: its records are replayed from the log.
    Active(TxId),
    Auth(AuthRec),
    Channel(ChannelDef),
    ChlAuth(ChlAuthRec),
    AuthInfo(AuthInfoDef),
    Listener(ListenerDef),
    Process(ProcessDef),
    Service(ServiceDef),
    Topic(TopicDef),
    Sub(SubDef),
    /// The version of the frames (absent before 2: messages were MESSAGE frames then).
    Format(u32),
    /// Version 3: where a queue's index journal ended once this checkpoint's batches were
    /// durable (damage before it is corruption, not a torn tail).
    QueueIndex {
        queue: String,
        file: u32,
        len: u64,
    },
}

coded_enum!(Frame, "checkpoint frame" {
    1 => Meta { next_seq, next_tx, replay_from },
    2 => Qmgr(q),
    3 => Queue(q),
    4 => Message { queue, seq, backout_count, msg },
    5 => Active(tx),
    6 => Auth(a),
    7 => Channel(c),
    8 => ChlAuth(r),
    9 => AuthInfo(a),
    10 => Listener(l),
    11 => Process(p),
    12 => Service(s),
    13 => Format(v),
    14 => QueueIndex { queue, file, len },
    15 => Topic(t),
    16 => Sub(s),
});

impl Frame {
    /// The kind byte, then the body.
    pub fn encode(&self) -> Vec<u8> {
        let mut e = Enc::with_capacity(64);
        e.u8(self.kind());
        self.put_body(&mut e);
        e.buf
    }

    pub fn decode(bytes: &[u8]) -> Result<Frame> {
        let mut d = Dec::new(bytes, "checkpoint frame");
        let kind = d.u8()?;
        let f = Frame::take_body(kind, &mut d)?;
        d.finish()?;
        Ok(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::md::Md;
    use proptest::prelude::*;

    /// One record and one frame of every kind, as the log and checkpoints hold them: their
    /// bytes are those of the hand-written codec they replaced (docs/storage.md, unchanged).
    #[test]
    fn every_kind_encodes_as_before() {
        use crate::authority::AuthObj;
        use crate::channels::ChlType;
        use crate::chlauth::RuleType;
        use crate::objects::QType;
        let msg = Message {
            md: Md::default(),
            payload: vec![1, 2, 3],
            expires_at_ms: Some(77),
        };
        let auth = AuthRec {
            profile: "APP.*".into(),
            objtype: AuthObj::Queue,
            principal: "app".into(),
            auths: 0x1234,
            group: true,
        };
        let chlauth = ChlAuthRec::new("APP.*", RuleType::BlockAddr);
        let (q, qm) = (QueueDef::new("Q", QType::Local), QmgrDef::new("QM"));
        let chl = ChannelDef::new("A.TO.B", ChlType::Sdr);
        let records = [
            Record::Qmgr(qm.clone()),
            Record::Define(q.clone()),
            Record::Delete("Q".into()),
            Record::Put {
                tx: 5,
                auto: false,
                queue: "Q".into(),
                seq: 9,
                msg: msg.clone(),
            },
            Record::Get {
                tx: 5,
                auto: true,
                queue: "Q".into(),
                seq: 9,
            },
            Record::Commit(5),
            Record::Backout(6),
            Record::Move {
                from: "A".into(),
                to: "B".into(),
                seq: 1,
                backout_count: 3,
            },
            Record::Clear("Q".into()),
            Record::SetAuth(auth.clone()),
            Record::DeleteAuth(auth.clone()),
            Record::DefineChannel(chl.clone()),
            Record::DeleteChannel("A.TO.B".into()),
            Record::SetChlAuth(chlauth.clone()),
            Record::DeleteChlAuth(chlauth.clone()),
            Record::DefineAuthInfo(AuthInfoDef::new("AI")),
            Record::DeleteAuthInfo("AI".into()),
            Record::DefineListener(ListenerDef::new("L")),
            Record::DeleteListener("L".into()),
            Record::DefineProcess(ProcessDef::new("P")),
            Record::DeleteProcess("P".into()),
            Record::DefineService(ServiceDef::new("S")),
            Record::DeleteService("S".into()),
            Record::MoveMsg {
                from: "A".into(),
                to: "B".into(),
                seq: 1,
                backout_count: 3,
                msg: msg.clone(),
            },
            Record::Join { from: 5, into: 7 },
        ];
        let frames = [
            Frame::Meta {
                next_seq: 1,
                next_tx: 2,
                replay_from: 3,
            },
            Frame::Qmgr(qm),
            Frame::Queue(q),
            Frame::Message {
                queue: "Q".into(),
                seq: 4,
                backout_count: 1,
                msg,
            },
            Frame::Active(8),
            Frame::Auth(auth),
            Frame::Channel(chl),
            Frame::ChlAuth(chlauth),
            Frame::AuthInfo(AuthInfoDef::new("AI")),
            Frame::Listener(ListenerDef::new("L")),
            Frame::Process(ProcessDef::new("P")),
            Frame::Service(ServiceDef::new("S")),
            Frame::Format(3),
            Frame::QueueIndex {
                queue: "Q".into(),
                file: 2,
                len: 99,
            },
        ];
        let mut all = Vec::new();
        for r in &records {
            let b = r.encode();
            assert_eq!(&Record::decode(r.kind(), &b).unwrap(), r);
            all.push(r.kind());
            all.extend_from_slice(&b);
        }
        for f in &frames {
            let b = f.encode();
            assert_eq!(&Frame::decode(&b).unwrap(), f);
            all.extend_from_slice(&b);
        }
        let fnv = all.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &x| {
            (h ^ x as u64).wrapping_mul(0x0100_0000_01b3)
        });
        assert_eq!((all.len(), fnv), (1724, 0xe207_f8ec_416a_3827), "{fnv:#x}");
    }

    proptest! {
        /// Every record kind, so every definition's decoder (queue, channel, AUTHINFO, ...).
        #[test]
        fn garbage_never_panics(kind in 0u8..26, bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = Record::decode(kind, &bytes);
            let _ = Frame::decode(&bytes);
        }
    }
}

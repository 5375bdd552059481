//! Log records and checkpoint frames of the queue manager (format in docs/storage.md).

use crate::authinfo::AuthInfoDef;
use crate::authority::AuthRec;
use crate::channels::ChannelDef;
use crate::chlauth::ChlAuthRec;
use crate::md::Message;
use crate::objects::{QmgrDef, QueueDef};
use crate::queue::TxId;
use crate::services::{ListenerDef, ProcessDef, ServiceDef};
use sealmq_storage::codec::{Dec, Enc};
use sealmq_storage::{Result, StorageError};

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
}

impl Record {
    pub fn kind(&self) -> u8 {
        match self {
            Record::Qmgr(_) => 1,
            Record::Define(_) => 2,
            Record::Delete(_) => 3,
            Record::Put { .. } => 4,
            Record::Get { .. } => 5,
            Record::Commit(_) => 6,
            Record::Backout(_) => 7,
            Record::Move { .. } => 8,
            Record::Clear(_) => 9,
            Record::SetAuth(_) => 10,
            Record::DeleteAuth(_) => 11,
            Record::DefineChannel(_) => 12,
            Record::DeleteChannel(_) => 13,
            Record::SetChlAuth(_) => 14,
            Record::DeleteChlAuth(_) => 15,
            Record::DefineAuthInfo(_) => 16,
            Record::DeleteAuthInfo(_) => 17,
            Record::DefineListener(_) => 18,
            Record::DeleteListener(_) => 19,
            Record::DefineProcess(_) => 20,
            Record::DeleteProcess(_) => 21,
            Record::DefineService(_) => 22,
            Record::DeleteService(_) => 23,
            Record::MoveMsg { .. } => 24,
            Record::Join { .. } => 25,
        }
    }

    /// The payload of a `Put` record, encoded from a borrowed message (no copy of it first).
    pub fn encode_put(tx: TxId, auto: bool, queue: &str, seq: u64, msg: &Message) -> Vec<u8> {
        let mut e = Enc::with_capacity(msg.payload.len() + 256);
        e.u64(tx).bool(auto).str(queue).u64(seq);
        msg.encode(&mut e);
        e.buf
    }

    pub const PUT_KIND: u8 = 4;

    pub fn encode(&self) -> Vec<u8> {
        let mut e = Enc::with_capacity(64);
        match self {
            Record::Qmgr(q) => q.encode(&mut e),
            Record::Define(d) => d.encode(&mut e),
            Record::SetAuth(a) | Record::DeleteAuth(a) => a.encode(&mut e),
            Record::DefineChannel(c) => c.encode(&mut e),
            Record::DefineListener(l) => l.encode(&mut e),
            Record::DefineProcess(p) => p.encode(&mut e),
            Record::DefineService(s) => s.encode(&mut e),
            Record::DeleteChannel(n)
            | Record::DeleteAuthInfo(n)
            | Record::DeleteListener(n)
            | Record::DeleteProcess(n)
            | Record::DeleteService(n) => {
                e.str(n);
            }
            Record::SetChlAuth(r) | Record::DeleteChlAuth(r) => r.encode(&mut e),
            Record::DefineAuthInfo(a) => a.encode(&mut e),
            Record::Delete(n) | Record::Clear(n) => {
                e.str(n);
            }
            Record::Put {
                tx,
                auto,
                queue,
                seq,
                msg,
            } => {
                e.u64(*tx).bool(*auto).str(queue).u64(*seq);
                msg.encode(&mut e);
            }
            Record::Get {
                tx,
                auto,
                queue,
                seq,
            } => {
                e.u64(*tx).bool(*auto).str(queue).u64(*seq);
            }
            Record::Commit(tx) | Record::Backout(tx) => {
                e.u64(*tx);
            }
            Record::Join { from, into } => {
                e.u64(*from).u64(*into);
            }
            Record::Move {
                from,
                to,
                seq,
                backout_count,
            } => {
                e.str(from).str(to).u64(*seq).u32(*backout_count);
            }
            Record::MoveMsg {
                from,
                to,
                seq,
                backout_count,
                msg,
            } => {
                e.str(from).str(to).u64(*seq).u32(*backout_count);
                msg.encode(&mut e);
            }
        }
        e.buf
    }

    pub fn decode(kind: u8, payload: &[u8]) -> Result<Record> {
        let mut d = Dec::new(payload, "log record");
        let r = match kind {
            1 => Record::Qmgr(QmgrDef::decode(&mut d)?),
            2 => Record::Define(QueueDef::decode(&mut d)?),
            3 => Record::Delete(d.str()?),
            4 => Record::Put {
                tx: d.u64()?,
                auto: d.bool()?,
                queue: d.str()?,
                seq: d.u64()?,
                msg: Message::decode(&mut d)?,
            },
            5 => Record::Get {
                tx: d.u64()?,
                auto: d.bool()?,
                queue: d.str()?,
                seq: d.u64()?,
            },
            6 => Record::Commit(d.u64()?),
            7 => Record::Backout(d.u64()?),
            8 => Record::Move {
                from: d.str()?,
                to: d.str()?,
                seq: d.u64()?,
                backout_count: d.u32()?,
            },
            9 => Record::Clear(d.str()?),
            10 => Record::SetAuth(AuthRec::decode(&mut d)?),
            11 => Record::DeleteAuth(AuthRec::decode(&mut d)?),
            12 => Record::DefineChannel(ChannelDef::decode(&mut d)?),
            13 => Record::DeleteChannel(d.str()?),
            14 => Record::SetChlAuth(ChlAuthRec::decode(&mut d)?),
            15 => Record::DeleteChlAuth(ChlAuthRec::decode(&mut d)?),
            16 => Record::DefineAuthInfo(AuthInfoDef::decode(&mut d)?),
            17 => Record::DeleteAuthInfo(d.str()?),
            18 => Record::DefineListener(ListenerDef::decode(&mut d)?),
            19 => Record::DeleteListener(d.str()?),
            20 => Record::DefineProcess(ProcessDef::decode(&mut d)?),
            21 => Record::DeleteProcess(d.str()?),
            22 => Record::DefineService(ServiceDef::decode(&mut d)?),
            23 => Record::DeleteService(d.str()?),
            24 => Record::MoveMsg {
                from: d.str()?,
                to: d.str()?,
                seq: d.u64()?,
                backout_count: d.u32()?,
                msg: Message::decode(&mut d)?,
            },
            25 => Record::Join {
                from: d.u64()?,
                into: d.u64()?,
            },
            k => return Err(StorageError::Decode(format!("unknown log record kind {k}"))),
        };
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

impl Frame {
    pub fn encode(&self) -> Vec<u8> {
        let mut e = Enc::with_capacity(64);
        match self {
            Frame::Meta {
                next_seq,
                next_tx,
                replay_from,
            } => {
                e.u8(1).u64(*next_seq).u64(*next_tx).u64(*replay_from);
            }
            Frame::Qmgr(q) => {
                e.u8(2);
                q.encode(&mut e);
            }
            Frame::Queue(q) => {
                e.u8(3);
                q.encode(&mut e);
            }
            Frame::Message {
                queue,
                seq,
                backout_count,
                msg,
            } => {
                e.u8(4).str(queue).u64(*seq).u32(*backout_count);
                msg.encode(&mut e);
            }
            Frame::Active(tx) => {
                e.u8(5).u64(*tx);
            }
            Frame::Auth(a) => {
                e.u8(6);
                a.encode(&mut e);
            }
            Frame::Channel(c) => {
                e.u8(7);
                c.encode(&mut e);
            }
            Frame::ChlAuth(r) => {
                e.u8(8);
                r.encode(&mut e);
            }
            Frame::AuthInfo(a) => {
                e.u8(9);
                a.encode(&mut e);
            }
            Frame::Listener(l) => {
                e.u8(10);
                l.encode(&mut e);
            }
            Frame::Process(p) => {
                e.u8(11);
                p.encode(&mut e);
            }
            Frame::Service(s) => {
                e.u8(12);
                s.encode(&mut e);
            }
            Frame::Format(v) => {
                e.u8(13).u32(*v);
            }
            Frame::QueueIndex { queue, file, len } => {
                e.u8(14).str(queue).u32(*file).u64(*len);
            }
        }
        e.buf
    }

    pub fn decode(bytes: &[u8]) -> Result<Frame> {
        let mut d = Dec::new(bytes, "checkpoint frame");
        let f = match d.u8()? {
            1 => Frame::Meta {
                next_seq: d.u64()?,
                next_tx: d.u64()?,
                replay_from: d.u64()?,
            },
            2 => Frame::Qmgr(QmgrDef::decode(&mut d)?),
            3 => Frame::Queue(QueueDef::decode(&mut d)?),
            4 => Frame::Message {
                queue: d.str()?,
                seq: d.u64()?,
                backout_count: d.u32()?,
                msg: Message::decode(&mut d)?,
            },
            5 => Frame::Active(d.u64()?),
            6 => Frame::Auth(AuthRec::decode(&mut d)?),
            7 => Frame::Channel(ChannelDef::decode(&mut d)?),
            8 => Frame::ChlAuth(ChlAuthRec::decode(&mut d)?),
            9 => Frame::AuthInfo(AuthInfoDef::decode(&mut d)?),
            10 => Frame::Listener(ListenerDef::decode(&mut d)?),
            11 => Frame::Process(ProcessDef::decode(&mut d)?),
            12 => Frame::Service(ServiceDef::decode(&mut d)?),
            13 => Frame::Format(d.u32()?),
            14 => Frame::QueueIndex {
                queue: d.str()?,
                file: d.u32()?,
                len: d.u64()?,
            },
            k => {
                return Err(StorageError::Decode(format!(
                    "unknown checkpoint frame {k}"
                )));
            }
        };
        d.finish()?;
        Ok(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::md::Md;
    use proptest::prelude::*;

    #[test]
    fn records_round_trip() {
        let msg = Message {
            md: Md::default(),
            payload: vec![1, 2, 3],
            expires_at_ms: None,
        };
        for r in [
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
            Record::Join { from: 5, into: 7 },
            Record::Move {
                from: "A".into(),
                to: "B".into(),
                seq: 1,
                backout_count: 3,
            },
            Record::MoveMsg {
                from: "A".into(),
                to: "B".into(),
                seq: 1,
                backout_count: 3,
                msg: msg.clone(),
            },
        ] {
            assert_eq!(Record::decode(r.kind(), &r.encode()).unwrap(), r);
        }
    }

    proptest! {
        #[test]
        fn garbage_never_panics(kind in 0u8..26, bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = Record::decode(kind, &bytes);
            let _ = Frame::decode(&bytes);
        }
    }
}

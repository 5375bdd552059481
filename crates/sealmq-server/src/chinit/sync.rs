//! Channel synchronisation records (SPEC §6, docs/storage.md "SMQSYNC"): one persistent message
//! per channel end on SYSTEM.CHANNEL.SYNCQ, correlation id `S:`/`R:` + channel name, replaced
//! in the same unit of work as the batch it describes. They are how a restarted channel knows
//! what it committed, and how a sender settles a batch it sent but never heard confirmed.

use sealmq_engine::md::MsgId;
use sealmq_engine::objects::CHANNEL_SYNC_Q;
use sealmq_engine::{
    Connection, GetOptions, Hobj, Match, Md, MqResult, OpenOptions, Persistence, PutOptions,
};
use sealmq_types::ReasonCode;
use sealmq_types::codec::{Dec, DecodeError, Enc};
use sealmq_wire::chl::BatchId;

pub const FORMAT: &str = "SMQSYNC";
const VERSION: u8 = 1;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Sender,
    Receiver,
}

/// A batch the sender sent and has not heard confirmed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InDoubt {
    pub batch: BatchId,
    pub last_seq: u64,
    /// The batch's messages: their positions on the transmission queue.
    pub xmitq_seqs: Vec<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SyncRec {
    /// Sender: the last sequence number it committed. Receiver: the last it committed.
    pub seq: u64,
    /// The last batch committed.
    pub batch: BatchId,
    pub indoubt: Option<InDoubt>,
    /// STOP CHANNEL: not restarted when the queue manager starts.
    pub stopped: bool,
    /// RESET CHANNEL asked for this sequence number; the sender passes it on at the next start.
    pub reset: Option<u64>,
}

impl SyncRec {
    pub fn encode(&self) -> Vec<u8> {
        let mut e = Enc::new();
        e.u8(VERSION).u64(self.seq).fixed(&self.batch);
        match &self.indoubt {
            Some(d) => {
                e.u8(1).fixed(&d.batch).u64(d.last_seq);
                e.u32(d.xmitq_seqs.len() as u32);
                for s in &d.xmitq_seqs {
                    e.u64(*s);
                }
            }
            None => {
                e.u8(0);
            }
        }
        e.bool(self.stopped);
        match self.reset {
            Some(s) => e.u8(1).u64(s),
            None => e.u8(0),
        };
        e.buf
    }

    pub fn decode(b: &[u8]) -> sealmq_types::codec::Result<SyncRec> {
        let mut d = Dec::new(b, "channel sync record");
        let v = d.u8()?;
        if v != VERSION {
            return Err(DecodeError(format!(
                "channel sync record version {v} (this build reads {VERSION})"
            )));
        }
        let seq = d.u64()?;
        let batch = d.fixed()?;
        let indoubt = match d.u8()? {
            0 => None,
            _ => {
                let batch = d.fixed()?;
                let last_seq = d.u64()?;
                let n = d.u32()? as usize;
                let mut xmitq_seqs = Vec::with_capacity(n.min(10_000));
                for _ in 0..n {
                    xmitq_seqs.push(d.u64()?);
                }
                Some(InDoubt {
                    batch,
                    last_seq,
                    xmitq_seqs,
                })
            }
        };
        let stopped = d.bool()?;
        let reset = match d.u8()? {
            0 => None,
            _ => Some(d.u64()?),
        };
        d.finish()?;
        Ok(SyncRec {
            seq,
            batch,
            indoubt,
            stopped,
            reset,
        })
    }
}

fn correl(role: Role, channel: &str) -> MsgId {
    let mut id = [0u8; 24];
    id[0] = match role {
        Role::Sender => b'S',
        Role::Receiver => b'R',
    };
    id[1] = b':';
    for (i, b) in channel.bytes().take(22).enumerate() {
        id[2 + i] = b;
    }
    id
}

/// The sync queue, open for one channel end.
pub struct SyncQ {
    role: Role,
    channel: String,
    h: Hobj,
}

impl SyncQ {
    pub fn open(conn: &Connection, role: Role, channel: &str) -> MqResult<SyncQ> {
        let h = conn.open(
            CHANNEL_SYNC_Q,
            OpenOptions {
                input_shared: true,
                output: true,
                browse: true,
                ..Default::default()
            },
        )?;
        Ok(SyncQ {
            role,
            channel: channel.to_string(),
            h,
        })
    }

    fn matching(&self) -> Match {
        Match {
            msg_id: None,
            correl_id: Some(correl(self.role, &self.channel)),
            selector: None,
        }
    }

    /// The channel end's record (the default when it has never run).
    pub fn load(&self, conn: &Connection) -> MqResult<SyncRec> {
        self.load_opt(conn).map(|r| r.unwrap_or_default())
    }

    /// The channel end's record, `None` when it has never run.
    pub fn load_opt(&self, conn: &Connection) -> MqResult<Option<SyncRec>> {
        let gmo = GetOptions {
            browse: sealmq_engine::Browse::First,
            matching: self.matching(),
            ..Default::default()
        };
        match conn.get(&self.h, gmo) {
            Ok(g) => SyncRec::decode(&g.payload).map(Some).map_err(|e| {
                sealmq_engine::MqError::new(
                    ReasonCode::UnexpectedError,
                    format!("channel {}: {e}", self.channel),
                )
            }),
            Err(e) if e.reason == ReasonCode::NoMsgAvailable => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Replaces the record in the connection's unit of work (the caller commits).
    pub fn replace(&self, conn: &Connection, rec: &SyncRec) -> MqResult<()> {
        let gmo = GetOptions {
            syncpoint: true,
            matching: self.matching(),
            ..Default::default()
        };
        match conn.get(&self.h, gmo) {
            Ok(_) => {}
            Err(e) if e.reason == ReasonCode::NoMsgAvailable => {}
            Err(e) => return Err(e),
        }
        let mut md = Md {
            correl_id: correl(self.role, &self.channel),
            persistence: Persistence::Persistent,
            format: FORMAT.into(),
            ..Default::default()
        };
        conn.put(
            &self.h,
            &mut md,
            &rec.encode(),
            PutOptions {
                syncpoint: true,
                ..Default::default()
            },
        )
    }

    /// Replaces the record and commits at once (durable when this returns).
    pub fn store(&self, conn: &Connection, rec: &SyncRec) -> MqResult<()> {
        match self.replace(conn, rec).and_then(|_| conn.commit()) {
            Ok(()) => Ok(()),
            Err(e) => {
                let _ = conn.backout();
                Err(e)
            }
        }
    }

    pub fn close(&self, conn: &Connection) {
        let _ = conn.close(&self.h);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn records_round_trip() {
        let r = SyncRec {
            seq: 42,
            batch: [5; 24],
            indoubt: Some(InDoubt {
                batch: [6; 24],
                last_seq: 50,
                xmitq_seqs: vec![1, 9, 77],
            }),
            stopped: true,
            reset: Some(3),
        };
        assert_eq!(SyncRec::decode(&r.encode()).unwrap(), r);
        assert_eq!(
            SyncRec::decode(&SyncRec::default().encode()).unwrap(),
            SyncRec::default()
        );
    }

    proptest! {
        #[test]
        fn garbage_never_panics(b in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = SyncRec::decode(&b);
        }
    }
}

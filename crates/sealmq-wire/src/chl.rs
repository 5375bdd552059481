//! The message-channel protocol between queue managers (SPEC §6; docs/wire.md "Channels").
//!
//! Same framing as the application protocol (`length u32`, `kind u8`, `id u32`, body) with
//! kinds from 64 up, so one listener serves both: a connection whose first frame is
//! [`ChlFrame::Start`] is a channel. The sending end opens with `Start` (its committed
//! sequence number and any in-doubt batch); the receiving end answers `StartOk` with the
//! last batch it committed, from which the sender settles the in-doubt batch. Then `Msg`
//! frames, each batch closed by `EndBatch`, confirmed by `BatchOk` once the receiver's unit
//! of work is committed.

use crate::{WireError, perr, read_frame};
use sealmq_types::codec::{Dec, DecodeError, Enc};
use std::io::{self, Read, Write};

/// Versions of the channel protocol this build speaks.
pub const CHL_VERSIONS: &[u16] = &[1];

/// A batch id: unique per batch, recorded at both ends.
pub type BatchId = [u8; 24];

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChlFrame {
    /// Sending end → receiving end: the first frame.
    Start {
        versions: Vec<u16>,
        channel: String,
        /// The sending queue manager.
        qmgr: String,
        batchsz: u32,
        max_msg: u32,
        hbint: u32,
        /// The sequence number of the last batch the sender committed.
        committed_seq: u64,
        /// The batch the sender sent and has not heard confirmed.
        indoubt: Option<BatchId>,
        /// RESET CHANNEL: the receiver takes this as its last sequence number.
        reset_seq: Option<u64>,
    },
    StartOk {
        version: u16,
        qmgr: String,
        batchsz: u32,
        max_msg: u32,
        hbint: u32,
        /// The receiver's last committed sequence number and batch.
        last_seq: u64,
        last_batch: BatchId,
    },
    /// Either end refuses or ends the channel: MQ reason and what to do.
    Refused {
        reason: u32,
        detail: String,
    },
    /// A message: its channel sequence number and the transmission-queue message (header and
    /// payload). `persistent`: it must survive; otherwise NPMSPEED(FAST) lets the receiver put
    /// it at once, outside the batch.
    Msg {
        seq: u64,
        persistent: bool,
        data: Vec<u8>,
    },
    EndBatch {
        batch: BatchId,
        last_seq: u64,
        /// The batch holds persistent messages: the receiver records it durably.
        persistent: bool,
    },
    BatchOk {
        last_seq: u64,
    },
    Heartbeat,
    HeartbeatOk,
    /// Orderly end (STOP CHANNEL or queue manager ending).
    Close,
    /// A requester (RQSTR) → its server (SVR): the first frame; the server then sends `Start`
    /// on this connection and the two go on as sender and receiver.
    Request {
        versions: Vec<u16>,
        channel: String,
        qmgr: String,
    },
}

impl ChlFrame {
    pub fn kind(&self) -> u8 {
        match self {
            ChlFrame::Start { .. } => 64,
            ChlFrame::StartOk { .. } => 65,
            ChlFrame::Refused { .. } => 66,
            ChlFrame::Msg { .. } => 67,
            ChlFrame::EndBatch { .. } => 68,
            ChlFrame::BatchOk { .. } => 69,
            ChlFrame::Heartbeat => 70,
            ChlFrame::HeartbeatOk => 71,
            ChlFrame::Close => 72,
            ChlFrame::Request { .. } => 73,
        }
    }

    /// Whether a frame kind belongs to this protocol.
    pub fn is_channel_kind(kind: u8) -> bool {
        (64..=73).contains(&kind)
    }

    fn body(&self, e: &mut Enc) {
        match self {
            ChlFrame::Start {
                versions,
                channel,
                qmgr,
                batchsz,
                max_msg,
                hbint,
                committed_seq,
                indoubt,
                reset_seq,
            } => {
                e.u16(versions.len() as u16);
                for v in versions {
                    e.u16(*v);
                }
                e.str(channel)
                    .str(qmgr)
                    .u32(*batchsz)
                    .u32(*max_msg)
                    .u32(*hbint)
                    .u64(*committed_seq);
                match indoubt {
                    Some(b) => e.u8(1).fixed(b),
                    None => e.u8(0),
                };
                match reset_seq {
                    Some(s) => e.u8(1).u64(*s),
                    None => e.u8(0),
                };
            }
            ChlFrame::StartOk {
                version,
                qmgr,
                batchsz,
                max_msg,
                hbint,
                last_seq,
                last_batch,
            } => {
                e.u16(*version)
                    .str(qmgr)
                    .u32(*batchsz)
                    .u32(*max_msg)
                    .u32(*hbint)
                    .u64(*last_seq)
                    .fixed(last_batch);
            }
            ChlFrame::Refused { reason, detail } => {
                e.u32(*reason).str(detail);
            }
            ChlFrame::Msg {
                seq,
                persistent,
                data,
            } => {
                e.u64(*seq).bool(*persistent).bytes(data);
            }
            ChlFrame::EndBatch {
                batch,
                last_seq,
                persistent,
            } => {
                e.fixed(batch).u64(*last_seq).bool(*persistent);
            }
            ChlFrame::BatchOk { last_seq } => {
                e.u64(*last_seq);
            }
            ChlFrame::Heartbeat | ChlFrame::HeartbeatOk | ChlFrame::Close => {}
            ChlFrame::Request {
                versions,
                channel,
                qmgr,
            } => {
                e.u16(versions.len() as u16);
                for v in versions {
                    e.u16(*v);
                }
                e.str(channel).str(qmgr);
            }
        }
    }

    pub fn decode(kind: u8, body: &[u8]) -> Result<ChlFrame, WireError> {
        let mut d = Dec::new(body, "channel frame");
        let f = (|| -> sealmq_types::codec::Result<ChlFrame> {
            Ok(match kind {
                64 => {
                    let n = d.u16()? as usize;
                    let mut versions = Vec::with_capacity(n.min(16));
                    for _ in 0..n {
                        versions.push(d.u16()?);
                    }
                    ChlFrame::Start {
                        versions,
                        channel: d.str()?,
                        qmgr: d.str()?,
                        batchsz: d.u32()?,
                        max_msg: d.u32()?,
                        hbint: d.u32()?,
                        committed_seq: d.u64()?,
                        indoubt: match d.u8()? {
                            0 => None,
                            _ => Some(d.fixed()?),
                        },
                        reset_seq: match d.u8()? {
                            0 => None,
                            _ => Some(d.u64()?),
                        },
                    }
                }
                65 => ChlFrame::StartOk {
                    version: d.u16()?,
                    qmgr: d.str()?,
                    batchsz: d.u32()?,
                    max_msg: d.u32()?,
                    hbint: d.u32()?,
                    last_seq: d.u64()?,
                    last_batch: d.fixed()?,
                },
                66 => ChlFrame::Refused {
                    reason: d.u32()?,
                    detail: d.str()?,
                },
                67 => ChlFrame::Msg {
                    seq: d.u64()?,
                    persistent: d.bool()?,
                    data: d.bytes()?.to_vec(),
                },
                68 => ChlFrame::EndBatch {
                    batch: d.fixed()?,
                    last_seq: d.u64()?,
                    persistent: d.bool()?,
                },
                69 => ChlFrame::BatchOk { last_seq: d.u64()? },
                70 => ChlFrame::Heartbeat,
                71 => ChlFrame::HeartbeatOk,
                72 => ChlFrame::Close,
                73 => {
                    let n = d.u16()? as usize;
                    let mut versions = Vec::with_capacity(n.min(16));
                    for _ in 0..n {
                        versions.push(d.u16()?);
                    }
                    ChlFrame::Request {
                        versions,
                        channel: d.str()?,
                        qmgr: d.str()?,
                    }
                }
                k => {
                    return Err(DecodeError(format!("unknown channel frame kind {k}")));
                }
            })
        })()
        .map_err(perr)?;
        d.finish().map_err(perr)?;
        Ok(f)
    }
}

/// Writes one channel frame, not flushed: a batch's frames go out together when the caller
/// flushes after EndBatch (every exchange that waits for an answer flushes first).
pub fn write_chl(w: &mut impl Write, f: &ChlFrame) -> io::Result<()> {
    if let ChlFrame::Msg {
        seq,
        persistent,
        data,
    } = f
    {
        return write_msg(w, *seq, *persistent, data);
    }
    let mut e = Enc::with_capacity(64);
    f.body(&mut e);
    write_head(w, f.kind(), e.buf.len())?;
    w.write_all(&e.buf)
}

/// Writes a Msg frame from borrowed data (no copy of the message into a frame first).
pub fn write_msg(w: &mut impl Write, seq: u64, persistent: bool, data: &[u8]) -> io::Result<()> {
    let mut head = Enc::with_capacity(13);
    head.u64(seq).bool(persistent).u32(data.len() as u32);
    write_head(w, 67, head.buf.len() + data.len())?;
    w.write_all(&head.buf)?;
    w.write_all(data)
}

/// The frame header of the application protocol (`length`, `kind`, id 0) for a body of `len`.
fn write_head(w: &mut impl Write, kind: u8, len: usize) -> io::Result<()> {
    let mut h = [0u8; 9];
    h[..4].copy_from_slice(&((len + 5) as u32).to_le_bytes());
    h[4] = kind;
    w.write_all(&h)
}

/// Reads one channel frame; `Ok(None)` at a clean end of stream.
pub fn read_chl(r: &mut impl Read, max: usize) -> Result<Option<ChlFrame>, WireError> {
    match read_frame(r, max)? {
        None => Ok(None),
        Some((kind, _, body)) => Ok(Some(ChlFrame::decode(kind, &body)?)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn frames_round_trip() {
        let frames = vec![
            ChlFrame::Start {
                versions: vec![1],
                channel: "A.TO.B".into(),
                qmgr: "A".into(),
                batchsz: 50,
                max_msg: 4 << 20,
                hbint: 300,
                committed_seq: 17,
                indoubt: Some([7; 24]),
                reset_seq: None,
            },
            ChlFrame::StartOk {
                version: 1,
                qmgr: "B".into(),
                batchsz: 10,
                max_msg: 1 << 20,
                hbint: 60,
                last_seq: 17,
                last_batch: [3; 24],
            },
            ChlFrame::Refused {
                reason: 2540,
                detail: "no".into(),
            },
            ChlFrame::Msg {
                seq: 18,
                persistent: true,
                data: vec![1, 2, 3],
            },
            ChlFrame::EndBatch {
                batch: [9; 24],
                last_seq: 18,
                persistent: true,
            },
            ChlFrame::BatchOk { last_seq: 18 },
            ChlFrame::Heartbeat,
            ChlFrame::HeartbeatOk,
            ChlFrame::Close,
            ChlFrame::Request {
                versions: vec![1],
                channel: "B.TO.A".into(),
                qmgr: "A".into(),
            },
        ];
        let mut buf = Vec::new();
        for f in &frames {
            write_chl(&mut buf, f).unwrap();
        }
        let mut r = &buf[..];
        for f in &frames {
            assert!(ChlFrame::is_channel_kind(f.kind()));
            assert_eq!(&read_chl(&mut r, 1 << 20).unwrap().unwrap(), f);
        }
        assert!(read_chl(&mut r, 1 << 20).unwrap().is_none());
        // A Msg from borrowed data is the same frame.
        let (mut a, mut b) = (Vec::new(), Vec::new());
        write_msg(&mut a, 5, true, b"xyz").unwrap();
        write_chl(
            &mut b,
            &ChlFrame::Msg {
                seq: 5,
                persistent: true,
                data: b"xyz".to_vec(),
            },
        )
        .unwrap();
        assert_eq!(a, b);
    }

    proptest! {
        #[test]
        fn arbitrary_frames_never_panic(kind in 60u8..80, body in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = ChlFrame::decode(kind, &body);
        }
    }
}

//! The message-channel protocol between queue managers (SPEC §6; docs/wire.md "Channels").
//!
//! Same framing as the application protocol (`length u32`, `kind u8`, `id u32`, body) with
//! kinds from 64 up, so one listener serves both: a connection whose first frame is
//! [`ChlFrame::Start`] is a channel. The sending end opens with `Start` (its committed
//! sequence number and any in-doubt batch); the receiving end answers `StartOk` with the
//! last batch it committed, from which the sender settles the in-doubt batch. Then `Msg`
//! frames, each batch closed by `EndBatch`, confirmed by `BatchOk` once the receiver's unit
//! of work is committed.

use crate::{WireError, decode_all, read_frame};
use sealmq_types::codec::Enc;
use sealmq_types::coded_enum;
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

coded_enum!(ChlFrame, "channel frame" {
    64 => Start { versions, channel, qmgr, batchsz, max_msg, hbint, committed_seq, indoubt, reset_seq },
    65 => StartOk { version, qmgr, batchsz, max_msg, hbint, last_seq, last_batch },
    66 => Refused { reason, detail },
    67 => Msg { seq, persistent, data },
    68 => EndBatch { batch, last_seq, persistent },
    69 => BatchOk { last_seq },
    70 => Heartbeat,
    71 => HeartbeatOk,
    72 => Close,
    73 => Request { versions, channel, qmgr },
});

impl ChlFrame {
    /// Whether a frame kind belongs to this protocol.
    pub fn is_channel_kind(kind: u8) -> bool {
        (64..=73).contains(&kind)
    }

    pub fn decode(kind: u8, body: &[u8]) -> Result<ChlFrame, WireError> {
        decode_all(body, "channel frame", |d| ChlFrame::take_body(kind, d))
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
    f.put_body(&mut e);
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

/// Reads the answer to a channel's first frame. A replica of a replicated queue manager
/// answers every connection with an application's error response (2059 and where the active
/// instance is, docs/ha.md): that is read as [`ChlFrame::Refused`] with its reason.
pub fn read_answer(r: &mut impl Read, max: usize) -> Result<Option<ChlFrame>, WireError> {
    match read_frame(r, max)? {
        None => Ok(None),
        Some((kind, _, body)) if ChlFrame::is_channel_kind(kind) => {
            Ok(Some(ChlFrame::decode(kind, &body)?))
        }
        Some((kind, _, body)) => match crate::Response::decode(kind, &body)? {
            crate::Response::Err { reason, detail } => {
                Ok(Some(ChlFrame::Refused { reason, detail }))
            }
            _ => Err(WireError::Protocol(format!(
                "a channel's partner answered with an application's frame of kind {kind}"
            ))),
        },
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
        // The bytes of the hand-written codec these replaced (channel protocol 1 unchanged).
        let fnv = buf.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &x| {
            (h ^ x as u64).wrapping_mul(0x0100_0000_01b3)
        });
        assert_eq!((buf.len(), fnv), (GOLDEN_LEN, GOLDEN_FNV), "{fnv:#x}");
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

    const GOLDEN_LEN: usize = 292;
    const GOLDEN_FNV: u64 = 0xa291_189c_2c68_8663;

    #[test]
    fn a_replicas_refusal_reads_as_a_channel_refusal() {
        let mut buf = Vec::new();
        crate::write_response(
            &mut buf,
            0,
            &crate::Response::Err {
                reason: 2059,
                detail: "replica; the active instance is b".into(),
            },
        )
        .unwrap();
        match read_answer(&mut &buf[..], 4096).unwrap() {
            Some(ChlFrame::Refused { reason, detail }) => {
                assert_eq!(reason, 2059);
                assert!(detail.contains("active instance is b"));
            }
            other => panic!("{other:?}"),
        }
        let mut buf = Vec::new();
        write_chl(&mut buf, &ChlFrame::Heartbeat).unwrap();
        assert_eq!(
            read_answer(&mut &buf[..], 4096).unwrap(),
            Some(ChlFrame::Heartbeat)
        );
        // Any other application frame is a protocol error, not a frame.
        let mut buf = Vec::new();
        crate::write_response(&mut buf, 0, &crate::Response::Ok).unwrap();
        assert!(read_answer(&mut &buf[..], 4096).is_err());
    }

    proptest! {
        #[test]
        fn arbitrary_frames_never_panic(kind in 60u8..80, body in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = ChlFrame::decode(kind, &body);
        }
    }
}

//! Asynchronous consume (a `MessageListener`, MQCB/MQCTL): the client keeps its callbacks to
//! itself and tells the queue manager only what to send. `NOTIFICATION` segments say the
//! connection started or stopped and a consumer's state; `REQUEST_MSGS` asks for messages of a
//! handle (its get options and selection, how many bytes it has received and how many more it
//! wants); the queue manager answers with `ASYNC_MESSAGE` segments, each a message with a
//! short header, its MQMD and its data. Layouts: docs/fap.md "Asynchronous consume".

use crate::bytes::{Fields, Order, Out};
use crate::{Result, err};

/// NOTIFICATION codes.
pub mod notify {
    pub const GET_INHIBITED: u32 = 1;
    pub const GET_ALLOWED: u32 = 2;
    pub const CONN_STATE: u32 = 3;
    pub const CONN_STATE_REPLY: u32 = 4;
    pub const Q_STATE: u32 = 5;
    pub const Q_STATE_REPLY: u32 = 6;
    pub const QM_QUIESCING: u32 = 7;
    pub const TXN_ALLOWED: u32 = 8;
    pub const TXN_REVOKE: u32 = 9;
    pub const TXN_REVOKE_REPLY: u32 = 10;
    pub const CHECK_MSG: u32 = 11;
    pub const BROWSE_FIRST: u32 = 12;
    pub const MESSAGE_TOO_LARGE: u32 = 13;
    pub const STREAMING_FAILURE: u32 = 14;
    pub const CLIENT_ASYNC_EMPTY: u32 = 15;
    /// The handle of a notification about the whole connection.
    pub const ALL_HANDLES: u32 = u32::MAX;
}

/// REQUEST_MSGS flags (as observed: the Java client's listener asks 0x11, then 0x01 after each
/// message; its synchronous receive with read-ahead 0x18, then 0x0A once its own wait ended).
pub mod rqst {
    /// The client's wait ended with nothing in its buffer (a flush): answered by a
    /// NOTIFICATION CLIENT_ASYNC_EMPTY once nothing more is on its way.
    pub const CHECK: u32 = 0x02;
    /// The request carries a selection (MQMD version, CCSID, encoding, match options).
    pub const SELECTION: u32 = 0x10;
}

/// A NOTIFICATION's body: 16 bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Notification {
    pub hobj: u32,
    pub code: u32,
    pub value: u32,
}

pub const NOTIFICATION_LEN: usize = 16;

impl Notification {
    pub fn parse(b: &[u8], order: Order) -> Result<Notification> {
        let f = Fields::new(b, order);
        Ok(Notification {
            hobj: f.u32(4)?,
            code: f.u32(8)?,
            value: f.u32(12)?,
        })
    }

    pub fn encode(&self, order: Order) -> Vec<u8> {
        let mut o = Out::new(order);
        o.u32(1).u32(self.hobj).u32(self.code).u32(self.value);
        o.buf
    }
}

/// What a REQUEST_MSGS asks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestMsgs {
    pub hobj: u32,
    /// Bytes of this handle's messages the client has received so far.
    pub received: u32,
    /// Bytes the client wants sent beyond what it received (read-ahead's window; 1: one
    /// message at a time).
    pub requested: u32,
    /// The largest message the client takes (0xFFFFFFFF: any).
    pub max_msg_len: u32,
    /// MQGMO options of the gets.
    pub gmo_options: u32,
    pub wait: i32,
    pub flags: u32,
    pub global_index: u32,
    pub selection: Option<Selection>,
}

/// A REQUEST_MSGS's selection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selection {
    pub index: u16,
    pub md_version: u16,
    pub ccsid: u32,
    pub encoding: u32,
    pub match_options: u32,
    pub msg_id: Option<[u8; 24]>,
    pub correl_id: Option<[u8; 24]>,
}

/// The request without a selection.
pub const REQUEST_FIXED_LEN: usize = 40;
/// The selection's fixed part.
const SELECTION_FIXED_LEN: usize = 24;

const MATCH_MSG_ID: u32 = 0x01;
const MATCH_CORREL_ID: u32 = 0x02;
const MATCH_GROUP_ID: u32 = 0x04;
const MATCH_MSG_TOKEN: u32 = 0x20;

impl RequestMsgs {
    pub fn parse(b: &[u8], order: Order) -> Result<RequestMsgs> {
        let f = Fields::new(b, order);
        let flags = f.u32(32)?;
        let selection = if flags & rqst::SELECTION != 0 {
            Some(Self::selection(&f)?)
        } else {
            None
        };
        Ok(RequestMsgs {
            hobj: f.u32(4)?,
            received: f.u32(8)?,
            requested: f.u32(12)?,
            max_msg_len: f.u32(16)?,
            gmo_options: f.u32(20)?,
            wait: f.i32(24)?,
            flags,
            global_index: f.u32(36)?,
            selection,
        })
    }

    fn selection(f: &Fields<'_>) -> Result<Selection> {
        let at = REQUEST_FIXED_LEN;
        let match_options = f.u32(at + 20)?;
        let mut next = at + SELECTION_FIXED_LEN;
        let mut id = |set: bool, n: usize| -> Result<Option<[u8; 24]>> {
            if !set {
                return Ok(None);
            }
            let b = f.bytes(next, n)?;
            next += n;
            let mut v = [0u8; 24];
            v[..n].copy_from_slice(b);
            // MQMI_NONE and MQCI_NONE match any message.
            Ok((v != [0u8; 24]).then_some(v))
        };
        let msg_id = id(match_options & MATCH_MSG_ID != 0, 24)?;
        let correl_id = id(match_options & MATCH_CORREL_ID != 0, 24)?;
        // Group ids and message tokens are read past (not served: the match is refused).
        id(match_options & MATCH_GROUP_ID != 0, 24)?;
        id(match_options & MATCH_MSG_TOKEN != 0, 16)?;
        if match_options & !(MATCH_MSG_ID | MATCH_CORREL_ID) != 0 {
            return err(format!(
                "a REQUEST_MSGS matching options 0x{match_options:x} (group ids, sequence \
                 numbers, offsets and tokens are not served)"
            ));
        }
        Ok(Selection {
            index: f.u16(at)?,
            md_version: f.u16(at + 2)?,
            ccsid: f.u32(at + 4)?,
            encoding: f.u32(at + 8)?,
            match_options,
            msg_id,
            correl_id,
        })
    }
}

/// The header of an ASYNC_MESSAGE carrying one whole message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AsyncMessage {
    pub hobj: u32,
    /// This message's number among the handle's (from 1).
    pub index: u32,
    /// Its number among the conversation's.
    pub global_index: u32,
    pub selection_index: u16,
    pub reason: u32,
    /// The MQMD's and the data's length together.
    pub total_len: u32,
    /// The data's length (as MQGET's DataLength).
    pub actual_len: u32,
    pub token: [u8; 16],
    pub resolved_q: String,
}

/// Where the resolved queue name's length is.
const NAME_AT: usize = 54;

impl AsyncMessage {
    /// The header's bytes; `segment_len`: how many bytes of the message (MQMD and data) this
    /// segment carries after the header.
    pub fn encode(&self, segment_len: u32, order: Order) -> Vec<u8> {
        let name = self.resolved_q.trim_end().as_bytes();
        let name = &name[..name.len().min(48)];
        let mut o = Out::new(order);
        o.u32(1)
            .u32(self.hobj)
            .u32(self.index)
            .u32(self.global_index)
            .u32(segment_len)
            .u16(0)
            .u16(self.selection_index)
            .u32(self.reason)
            .u32(self.total_len)
            .u32(self.actual_len)
            .raw(&self.token)
            .u16(0)
            .raw(&[name.len() as u8])
            .raw(name);
        let pad = (4 - (NAME_AT + 1 + name.len()) % 4) % 4;
        o.raw(&[0u8; 3][..pad]);
        o.buf
    }

    /// The header's length for a resolved queue name of `name_len` bytes.
    pub fn header_len(name_len: usize) -> usize {
        let n = NAME_AT + 1 + name_len.min(48);
        n + (4 - n % 4) % 4
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// REQUEST_MSGS as IBM's Java client sent it for a MessageListener (tshark).
    const OBSERVED: &str = concat!(
        "00000001000000010000000000000001ffffffff0200300000000000000000000000001100000000",
        "00010002000004b800000111000000000000000000000000"
    );

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    #[test]
    fn the_java_clients_request_reads() {
        let r = RequestMsgs::parse(&hex(OBSERVED), Order::Big).unwrap();
        assert_eq!((r.hobj, r.received, r.requested), (1, 0, 1));
        assert_eq!(r.max_msg_len, u32::MAX);
        assert_eq!(r.gmo_options, 0x0200_3000);
        let s = r.selection.unwrap();
        assert_eq!(
            (s.index, s.md_version, s.ccsid, s.encoding),
            (1, 2, 1208, 273)
        );
        assert_eq!((s.msg_id, s.correl_id), (None, None));
    }

    #[test]
    fn a_correlation_id_selection_reads_and_a_token_match_is_refused() {
        let mut b = hex(OBSERVED);
        b[60..64].copy_from_slice(&2u32.to_be_bytes());
        b.extend_from_slice(&[7u8; 24]);
        let s = RequestMsgs::parse(&b, Order::Big)
            .unwrap()
            .selection
            .unwrap();
        assert_eq!(s.correl_id, Some([7u8; 24]));
        // Ids of zeros (MQMI_NONE, MQCI_NONE), as the Java client sends them, match anything.
        let mut any = b.clone();
        any[60..64].copy_from_slice(&3u32.to_be_bytes());
        any.truncate(64);
        any.extend_from_slice(&[0u8; 48]);
        let s = RequestMsgs::parse(&any, Order::Big)
            .unwrap()
            .selection
            .unwrap();
        assert_eq!((s.msg_id, s.correl_id), (None, None));
        b[60..64].copy_from_slice(&0x20u32.to_be_bytes());
        assert!(RequestMsgs::parse(&b, Order::Big).is_err());
    }

    #[test]
    fn an_async_message_header_pads_its_queue_name_to_four_bytes() {
        let m = AsyncMessage {
            hobj: 1,
            index: 1,
            global_index: 1,
            selection_index: 1,
            reason: 0,
            total_len: 5,
            actual_len: 5,
            token: [0; 16],
            resolved_q: "Q1".into(),
        };
        let b = m.encode(100, Order::Big);
        assert_eq!(b.len(), AsyncMessage::header_len(2));
        assert_eq!(b.len() % 4, 0);
        assert_eq!(b[NAME_AT], 2);
        assert_eq!(&b[NAME_AT + 1..NAME_AT + 3], b"Q1");
    }

    #[test]
    fn a_notification_round_trips() {
        let n = Notification {
            hobj: notify::ALL_HANDLES,
            code: notify::CONN_STATE,
            value: 2,
        };
        let b = n.encode(Order::Little);
        assert_eq!(b.len(), NOTIFICATION_LEN);
        assert_eq!(Notification::parse(&b, Order::Little).unwrap(), n);
    }

    proptest! {
        #[test]
        fn any_bytes_are_read_or_refused(b in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = RequestMsgs::parse(&b, Order::Big);
            let _ = Notification::parse(&b, Order::Little);
        }
    }
}

//! The transmission segment header that begins every segment of MQ's client protocol
//! (docs/fap.md, "Segments"): `TSH ` (28 bytes, the initial data exchange), `TSHM` (36 bytes,
//! with a conversation id and a request id: every flow of a conversation once conversations
//! are shared) and `TSHC` (28 bytes, flows of the socket as a whole).

use crate::bytes::{Fields, Order, Out};
use crate::{Result, err};

/// The header kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `TSH `: the initial data exchange.
    Tsh,
    /// `TSHM`: a conversation's flow.
    Multiplexed,
    /// `TSHC`: the socket's own flow (socket actions, heartbeats).
    Common,
}

impl Kind {
    pub fn id(self) -> &'static [u8; 4] {
        match self {
            Kind::Tsh => b"TSH ",
            Kind::Multiplexed => b"TSHM",
            Kind::Common => b"TSHC",
        }
    }

    /// The header's size in bytes.
    pub fn header_len(self) -> usize {
        match self {
            Kind::Multiplexed => 36,
            Kind::Tsh | Kind::Common => 28,
        }
    }

    pub fn from_id(b: &[u8]) -> Option<Kind> {
        match b {
            b"TSH " => Some(Kind::Tsh),
            b"TSHM" => Some(Kind::Multiplexed),
            b"TSHC" => Some(Kind::Common),
            _ => None,
        }
    }
}

/// Segment types (docs/fap.md).
pub mod seg {
    pub const INITIAL_DATA: u8 = 0x01;
    pub const STATUS_DATA: u8 = 0x05;
    pub const PING_DATA: u8 = 0x07;
    pub const USERID_DATA: u8 = 0x08;
    pub const HEARTBEAT: u8 = 0x09;
    pub const CONAUTH_INFO: u8 = 0x0A;
    pub const SOCKET_ACTION: u8 = 0x0C;
    pub const ASYNC_MESSAGE: u8 = 0x0D;
    pub const REQUEST_MSGS: u8 = 0x0E;
    pub const NOTIFICATION: u8 = 0x0F;
    pub const MQCONN: u8 = 0x81;
    pub const MQDISC: u8 = 0x82;
    pub const MQOPEN: u8 = 0x83;
    pub const MQCLOSE: u8 = 0x84;
    pub const MQGET: u8 = 0x85;
    pub const MQPUT: u8 = 0x86;
    pub const MQPUT1: u8 = 0x87;
    pub const MQSET: u8 = 0x88;
    pub const MQINQ: u8 = 0x89;
    pub const MQCMIT: u8 = 0x8A;
    pub const MQBACK: u8 = 0x8B;
    pub const SPI: u8 = 0x8C;
    pub const MQSTAT: u8 = 0x8D;
    pub const MQSUB: u8 = 0x8E;
    pub const MQSUBRQ: u8 = 0x8F;
    /// A request's reply is its type plus this.
    pub const REPLY: u8 = 0x10;
}

/// Control flags 1.
pub mod flags {
    pub const CONFIRM_REQUEST: u8 = 0x01;
    pub const ERROR: u8 = 0x02;
    pub const REQUEST_CLOSE: u8 = 0x04;
    pub const CLOSE_CHANNEL: u8 = 0x08;
    pub const FIRST: u8 = 0x10;
    pub const LAST: u8 = 0x20;
    /// A whole segment: first and last.
    pub const WHOLE: u8 = FIRST | LAST;
}

/// The encoding sealmq answers with: MQENC_NORMAL (big-endian integers).
pub const ENCODING_NORMAL: u32 = 273;

/// A segment's header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tsh {
    pub kind: Kind,
    /// The whole segment's length, header included.
    pub len: u32,
    /// `TSHM` only (0 otherwise).
    pub conv: u32,
    pub req: u32,
    pub order: Order,
    pub seg_type: u8,
    pub flags1: u8,
    pub flags2: u8,
    pub luw: [u8; 8],
    pub encoding: u32,
    pub ccsid: u16,
}

impl Tsh {
    /// A header for an answer: `kind`, `seg_type`, a whole segment, big-endian, CCSID `ccsid`;
    /// the length is set by [`Tsh::frame`].
    pub fn answer(kind: Kind, seg_type: u8, conv: u32, req: u32, ccsid: u16) -> Tsh {
        Tsh {
            kind,
            len: 0,
            conv,
            req,
            order: Order::Big,
            seg_type,
            flags1: flags::WHOLE,
            flags2: 0,
            luw: [0; 8],
            encoding: ENCODING_NORMAL,
            ccsid,
        }
    }

    /// The header's size.
    pub fn header_len(&self) -> usize {
        self.kind.header_len()
    }

    /// This header and `body` as one segment, its length set.
    pub fn frame(&self, body: &[u8]) -> Vec<u8> {
        let total = (self.kind.header_len() + body.len()) as u32;
        let mut o = Out::new(self.order);
        o.raw(self.kind.id()).raw(&total.to_be_bytes());
        if self.kind == Kind::Multiplexed {
            o.raw(&self.conv.to_be_bytes()).raw(&self.req.to_be_bytes());
        }
        o.raw(&[
            self.order.tsh_value(),
            self.seg_type,
            self.flags1,
            self.flags2,
        ])
        .raw(&self.luw)
        .u32(self.encoding)
        .u16(self.ccsid)
        .u16(0)
        .raw(body);
        o.buf
    }
}

/// What the first bytes of a segment say: not MQ's protocol, not yet enough bytes to tell,
/// or a segment of `total` bytes.
#[derive(Debug, PartialEq, Eq)]
pub enum Peek {
    NotMq,
    NeedMore,
    Segment { total: usize },
}

/// Looks at the first bytes received: `TSH`'s struct id and the length, checked against the
/// header's own size and `max` (the transmission size agreed, or the initial data's limit).
pub fn peek(b: &[u8], max: usize) -> Result<Peek> {
    if b.len() < 4 {
        let n = b.len().min(3);
        return Ok(if b[..n] == b"TSH"[..n] {
            Peek::NeedMore
        } else {
            Peek::NotMq
        });
    }
    if &b[..3] != b"TSH" {
        return Ok(Peek::NotMq);
    }
    let Some(kind) = Kind::from_id(&b[..4]) else {
        return err(format!(
            "segment header {:?} is not TSH, TSHM or TSHC",
            String::from_utf8_lossy(&b[..4])
        ));
    };
    if b.len() < 8 {
        return Ok(Peek::NeedMore);
    }
    let total = u32::from_be_bytes([b[4], b[5], b[6], b[7]]) as usize;
    if total < kind.header_len() {
        return err(format!(
            "segment length {total} is shorter than its {}-byte header",
            kind.header_len()
        ));
    }
    if total > max {
        return err(format!(
            "segment length {total} is over the {max} bytes agreed for a segment"
        ));
    }
    Ok(Peek::Segment { total })
}

/// Reads a whole segment's header (the segment is `seg`, exactly its declared length).
pub fn parse(seg: &[u8]) -> Result<Tsh> {
    let kind = match seg.get(..4).and_then(Kind::from_id) {
        Some(k) => k,
        None => return err("a segment must begin with TSH, TSHM or TSHC"),
    };
    let h = kind.header_len();
    if seg.len() < h {
        return err(format!(
            "a {}-byte segment cannot hold its {h}-byte header",
            seg.len()
        ));
    }
    let len = u32::from_be_bytes([seg[4], seg[5], seg[6], seg[7]]);
    if len as usize != seg.len() {
        return err(format!(
            "segment length {len} is not the {} bytes given",
            seg.len()
        ));
    }
    let (conv, req, at) = if kind == Kind::Multiplexed {
        let f = Fields::new(seg, Order::Big);
        (f.u32(8)?, f.u32(12)?, 16)
    } else {
        (0, 0, 8)
    };
    let Some(order) = Order::from_tsh(seg[at]) else {
        return err(format!("byte order {} is neither 1 nor 2", seg[at]));
    };
    let f = Fields::new(seg, order);
    let mut luw = [0u8; 8];
    luw.copy_from_slice(f.bytes(at + 4, 8)?);
    Ok(Tsh {
        kind,
        len,
        conv,
        req,
        order,
        seg_type: seg[at + 1],
        flags1: seg[at + 2],
        flags2: seg[at + 3],
        luw,
        encoding: f.u32(at + 12)?,
        ccsid: f.u16(at + 16)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The first segment IBM's Java client (9.4.4.0) sent, its header only (docs/fap.md).
    const JAVA_FIRST: [u8; 28] = [
        0x54, 0x53, 0x48, 0x20, 0x00, 0x00, 0x01, 0x0c, 0x01, 0x01, 0x31, 0x00, 0, 0, 0, 0, 0, 0,
        0, 0, 0x00, 0x00, 0x01, 0x11, 0x03, 0x33, 0x00, 0x00,
    ];

    #[test]
    fn reads_the_java_clients_first_header() {
        assert_eq!(peek(&JAVA_FIRST, 4096), Ok(Peek::Segment { total: 268 }));
        let mut seg = JAVA_FIRST.to_vec();
        seg.resize(268, 0);
        let t = parse(&seg).unwrap();
        assert_eq!(t.kind, Kind::Tsh);
        assert_eq!(t.order, Order::Big);
        assert_eq!(t.seg_type, seg::INITIAL_DATA);
        assert_eq!(t.flags1, flags::CONFIRM_REQUEST | flags::WHOLE);
        assert_eq!((t.encoding, t.ccsid), (273, 819));
    }

    #[test]
    fn a_multiplexed_header_round_trips() {
        let t = Tsh::answer(Kind::Multiplexed, seg::MQCONN | seg::REPLY, 3, 7, 819);
        let seg = t.frame(b"body");
        assert_eq!(seg.len(), 40);
        let back = parse(&seg).unwrap();
        assert_eq!((back.conv, back.req, back.len), (3, 7, 40));
        assert_eq!(&seg[36..], b"body");
    }

    #[test]
    fn lies_and_strangers_are_refused() {
        assert_eq!(peek(b"GET / HTTP/1.1", 4096), Ok(Peek::NotMq));
        assert_eq!(peek(b"TS", 4096), Ok(Peek::NeedMore));
        assert_eq!(
            peek(&[9, 0, 0, 0, 1], 4096),
            Ok(Peek::NotMq),
            "a native frame"
        );
        assert!(
            peek(b"TSHX\0\0\0\x40", 4096).is_err(),
            "an unknown header kind"
        );
        assert!(
            peek(b"TSHM\0\0\0\x10", 4096).is_err(),
            "shorter than its header"
        );
        assert!(
            peek(b"TSH \x7f\xff\xff\xff", 4096).is_err(),
            "a 2 GiB claim past the agreed size"
        );
        let mut seg = JAVA_FIRST.to_vec();
        seg.resize(100, 0);
        assert!(parse(&seg).is_err(), "the length says 268, 100 came");
        let mut bad_order = JAVA_FIRST.to_vec();
        bad_order[4..8].copy_from_slice(&28u32.to_be_bytes());
        bad_order[8] = 7;
        assert!(parse(&bad_order).is_err(), "byte order 7");
    }

    proptest! {
        #[test]
        fn parsers_never_panic(b in proptest::collection::vec(any::<u8>(), 0..80)) {
            let _ = peek(&b, 1 << 20);
            let _ = parse(&b);
        }

        #[test]
        fn frame_and_parse_agree(conv in any::<u32>(), req in any::<u32>(), t in any::<u8>(),
                                 f in any::<u8>(), body in proptest::collection::vec(any::<u8>(), 0..64),
                                 little in any::<bool>()) {
            let mut h = Tsh::answer(Kind::Multiplexed, t, conv, req, 1208);
            h.flags1 = f;
            h.order = if little { Order::Little } else { Order::Big };
            let seg = h.frame(&body);
            prop_assert_eq!(peek(&seg, 1 << 20).unwrap(), Peek::Segment { total: seg.len() });
            let back = parse(&seg).unwrap();
            h.len = seg.len() as u32;
            prop_assert_eq!(back, h);
        }
    }
}

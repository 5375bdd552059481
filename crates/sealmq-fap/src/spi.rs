//! The SPI flow (segment 0x8C): a verb header (verb, version, length) and structures with a
//! 12-byte header of their own. sealmq answers QUERY (which verbs it has: none) and OPEN
//! (IBM's Java client opens queues with it: `SPOU`, `SPOI` holding an `LPOO` and an MQOD).

use crate::bytes::{Fields, Order, Out};
use crate::od::{Defaults, Od};
use crate::{Result, err};

pub const VERB_QUERY: u32 = 1;
pub const VERB_OPEN: u32 = 12;

/// An SPI request's verb.
pub fn verb(b: &[u8], order: Order) -> Result<u32> {
    Fields::new(b, order).u32(0)
}

/// The answer to QUERY: no SPI verbs offered.
pub fn query_reply(order: Order) -> Vec<u8> {
    let mut o = Out::new(order);
    o.u32(VERB_QUERY).u32(1).u32(12 + 12 + 16);
    o.raw(b"SPQU").u32(1).u32(12);
    o.raw(b"SPQO").u32(1).u32(16).u32(0);
    o.buf
}

/// What an SPI OPEN asks: the object, its MQOO options and where the LPOO sits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Open {
    pub od: Od,
    pub options: u32,
    lpoo_at: usize,
}

/// Where the LPOO begins: after the verb header (12), the `SPOU` (12) and the `SPOI`'s
/// header (12).
const LPOO_AT: usize = 36;
const LPOO_LEN: usize = 32;

pub fn parse_open(b: &[u8], order: Order) -> Result<Open> {
    let f = Fields::new(b, order);
    if f.bytes(12, 4)? != b"SPOU" || f.bytes(24, 4)? != b"SPOI" || f.bytes(LPOO_AT, 4)? != b"LPOO" {
        return err("an SPI OPEN must hold SPOU, SPOI and LPOO");
    }
    let options = f.u32(LPOO_AT + 8)?;
    let od = Od::parse(
        f.bytes(
            LPOO_AT + LPOO_LEN,
            b.len().saturating_sub(LPOO_AT + LPOO_LEN),
        )?,
        order,
    )?;
    Ok(Open {
        od,
        options,
        lpoo_at: LPOO_AT,
    })
}

/// The answer to an SPI OPEN: the request with `SPOO` for `SPOI` and the object's defaults in
/// the LPOO.
pub fn open_reply(request: &[u8], open: &Open, d: Defaults, order: Order) -> Vec<u8> {
    let end = (open.lpoo_at + LPOO_LEN + open.od.wire_len).min(request.len());
    let mut b = request[..end].to_vec();
    b[24..28].copy_from_slice(b"SPOO");
    let mut o = Out::new(order);
    o.i32(d.persistence)
        .i32(d.put_response)
        .i32(d.read_ahead)
        .i32(d.prop_ctl);
    b[open.lpoo_at + 16..open.lpoo_at + 32].copy_from_slice(&o.buf);
    b
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn open_bytes() -> Vec<u8> {
        let mut o = Out::new(Order::Big);
        o.u32(VERB_OPEN).u32(1).u32(244);
        o.raw(b"SPOU").u32(1).u32(12);
        o.raw(b"SPOI").u32(1).u32(244);
        o.raw(b"LPOO")
            .u32(1)
            .u32(0x2010)
            .u32(0)
            .i32(-1)
            .i32(-1)
            .i32(-1)
            .i32(-1);
        o.raw(b"OD  ")
            .u32(2)
            .u32(1)
            .name("Q1", 48)
            .name("", 48)
            .name("AMQ.*", 48)
            .name("", 12);
        o.buf.resize(36 + 32 + 200, 0);
        o.buf
    }

    #[test]
    fn open_read_and_answered_with_the_queue_defaults() {
        let b = open_bytes();
        assert_eq!(verb(&b, Order::Big).unwrap(), VERB_OPEN);
        let op = parse_open(&b, Order::Big).unwrap();
        assert_eq!((op.od.name.as_str(), op.options), ("Q1", 0x2010));
        let d = Defaults {
            persistence: 1,
            put_response: 1,
            read_ahead: 0,
            prop_ctl: 0,
        };
        let r = open_reply(&b, &op, d, Order::Big);
        assert_eq!(&r[24..28], b"SPOO");
        assert_eq!(&r[52..56], &1i32.to_be_bytes());
        assert_eq!(r.len(), b.len());
        assert!(parse_open(&b[..100], Order::Big).is_err());
        assert_eq!(query_reply(Order::Big).len(), 40);
    }

    proptest! {
        #[test]
        fn never_panics(cut in 0usize..268, junk in proptest::collection::vec(any::<u8>(), 0..300)) {
            let b = open_bytes();
            let _ = parse_open(&b[..cut], Order::Big);
            let _ = parse_open(&junk, Order::Big);
        }
    }
}

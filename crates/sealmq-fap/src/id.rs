//! The initial data exchange (`ID  `, docs/fap.md "Opening a socket"): the client says what it
//! can (FAP level, sizes, heartbeat, conversations per socket, the channel and queue manager it
//! wants); the queue manager answers the same structure with what it grants.

use crate::bytes::{Fields, Order, Out};
use crate::{Result, err};

/// The FAP level sealmq answers: at 12 the client sends a CONAUTH_INFO password as text, so
/// CONNAUTH can check it (docs/fap.md, "The password on the wire").
pub const FAP_LEVEL: u8 = 12;
/// The size of the ID the Java client sends at FAP 11 and above, and that sealmq answers.
pub const ID_LEN: usize = 240;
/// The least an ID may be to name a channel and a queue manager (FAP 4 and above).
pub const ID_MIN: usize = 102;

/// Capability flags 1 sealmq grants: conversion capable (0x02), split messages (0x04),
/// MQ requests (0x20).
pub const CAP1: u8 = 0x02 | 0x04 | 0x20;
/// Capability flags 2 sealmq grants: none of distribution lists, XA or SPI requests beyond
/// what the SPI QUERY answer lists.
pub const CAP2: u8 = 0x00;

/// What a client's initial data asks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Asked {
    pub fap: u8,
    pub cap1: u8,
    pub max_transmission: u32,
    pub max_msg: u32,
    pub channel: String,
    pub ccsid: u16,
    pub qmgr: String,
    pub hbint: u32,
    /// Conversations on one socket (FAP 10 and above; 0 when the ID is shorter).
    pub sharecnv: u32,
    pub process_id: u32,
    pub product: String,
    /// The ID as received: the answer keeps the fields sealmq does not set.
    pub raw: Vec<u8>,
}

/// Reads a client's `ID  ` (the segment's body after its TSH).
pub fn parse(body: &[u8], order: Order) -> Result<Asked> {
    if body.get(..4) != Some(b"ID  ") {
        return err("initial data must begin with the ID structure");
    }
    if body.len() < ID_MIN {
        return err(format!(
            "initial data of {} bytes is shorter than the {ID_MIN} a client channel needs",
            body.len()
        ));
    }
    let f = Fields::new(body, order);
    let long = body.len() >= 160;
    Ok(Asked {
        fap: f.u8(4)?,
        cap1: f.u8(5)?,
        max_transmission: f.u32(12)?,
        max_msg: f.u32(16)?,
        channel: f.name(24, 20)?,
        ccsid: f.u16(46)?,
        qmgr: f.name(48, 48)?,
        hbint: f.u32(96)?,
        sharecnv: if long { f.u32(128)? } else { 0 },
        process_id: if long { f.u32(136)? } else { 0 },
        product: if long {
            f.name(148, 12)?
        } else {
            String::new()
        },
        raw: body[..body.len().min(ID_LEN)].to_vec(),
    })
}

/// What the queue manager grants.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Granted {
    pub fap: u8,
    pub max_transmission: u32,
    pub max_msg: u32,
    pub qmgr: String,
    pub hbint: u32,
    pub sharecnv: u32,
    /// The queue manager's identifier (QMID).
    pub qmid: String,
    /// 12 random bytes: the client refuses an answer whose last field is all zero.
    pub nonce: [u8; 12],
}

impl Granted {
    /// The queue manager's side of the exchange: the least of each limit both sides name,
    /// the larger heartbeat interval (as MQ negotiates HBINT), sealmq's FAP level.
    pub fn negotiate(
        a: &Asked,
        qmgr: &str,
        qmid: &str,
        limits: Limits,
        nonce: [u8; 12],
    ) -> Granted {
        let min_nonzero = |x: u32, y: u32| if x == 0 { y } else { x.min(y) };
        Granted {
            fap: a.fap.min(FAP_LEVEL),
            max_transmission: min_nonzero(a.max_transmission, limits.max_transmission),
            max_msg: min_nonzero(a.max_msg, limits.maxmsgl),
            qmgr: qmgr.to_string(),
            hbint: a.hbint.max(limits.hbint),
            sharecnv: a.sharecnv.clamp(1, limits.sharecnv.max(1)),
            qmid: qmid.to_string(),
            nonce,
        }
    }

    /// The answer's `ID  ` structure: the client's own with sealmq's values written in.
    pub fn encode(&self, a: &Asked, order: Order) -> Vec<u8> {
        let mut id = a.raw.clone();
        id.resize(ID_LEN, 0);
        let mut o = Out::new(order);
        o.u32(self.max_transmission).u32(self.max_msg).u32(0); // sequence wrap: no message channel here
        let sizes = o.buf;
        let mut o = Out::new(order);
        o.u16(a.ccsid).name(&self.qmgr, 48).u32(self.hbint);
        let middle = o.buf;
        id[4] = self.fap;
        id[5] = a.cap1 & CAP1;
        id[6] = 0;
        id[7] = 0; // no field in error
        id[12..24].copy_from_slice(&sizes);
        id[44] &= CAP2;
        id[45] = 0;
        id[46..100].copy_from_slice(&middle);
        id[102] = 0;
        let mut o = Out::new(order);
        o.u32(self.sharecnv);
        id[128..132].copy_from_slice(&o.buf);
        id[132] = 0;
        id[133] = 0;
        let mut o = Out::new(order);
        o.u32(std::process::id())
            .u32(0)
            .u32(0)
            .name("SEALMQ000100", 12)
            .name(&self.qmid, 48);
        id[136..208].copy_from_slice(&o.buf);
        // The trailing field: one entry, as the client sends it, and a nonce of sealmq's.
        id[208..212].copy_from_slice(&[0, 1, 0, 0]);
        id[212..228].fill(0xff);
        id[228..240].copy_from_slice(&self.nonce);
        id
    }
}

/// The queue manager's limits for the exchange: the SVRCONN's and the queue manager's.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub max_transmission: u32,
    pub maxmsgl: u32,
    pub hbint: u32,
    pub sharecnv: u32,
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The ID IBM's Java client 9.4.4.0 sent (docs/fap.md), its nonce zeroed.
    fn java_id() -> Vec<u8> {
        let mut o = Out::new(Order::Big);
        o.raw(b"ID  ")
            .raw(&[17, 0x26, 0, 0, 0, 0, 0, 0])
            .u32(32748)
            .u32(104_857_600)
            .u32(0)
            .name("SYSTEM.DEF.SVRCONN", 20)
            .raw(&[0x51, 0])
            .u16(819)
            .name("QM1", 48)
            .u32(1)
            .u16(138)
            .raw(&[0, 0, 0, 0xff, 0])
            .raw(&[0xff; 15])
            .raw(&[0, 0, 0, 0, 0, 0])
            .u32(999_999_999)
            .raw(&[0x28, 0, 0, 0])
            .u32(7458)
            .u32(1)
            .u32(1)
            .name("MQJM09040400", 12)
            .name("CANNED_DATA", 48)
            .raw(&[0, 1, 0, 0])
            .raw(&[0xff; 16])
            .raw(&[0; 12]);
        o.buf
    }

    fn limits() -> Limits {
        Limits {
            max_transmission: 32768,
            maxmsgl: 4 * 1024 * 1024,
            hbint: 300,
            sharecnv: 10,
        }
    }

    #[test]
    fn reads_what_the_java_client_asks() {
        let id = java_id();
        assert_eq!(id.len(), ID_LEN);
        let a = parse(&id, Order::Big).unwrap();
        assert_eq!(a.fap, 17);
        assert_eq!(a.channel, "SYSTEM.DEF.SVRCONN");
        assert_eq!(a.qmgr, "QM1");
        assert_eq!((a.max_transmission, a.max_msg), (32748, 104_857_600));
        assert_eq!((a.hbint, a.sharecnv, a.ccsid), (1, 999_999_999, 819));
        assert_eq!(a.product, "MQJM09040400");
    }

    #[test]
    fn grants_the_least_of_each_limit_and_fap_12() {
        let a = parse(&java_id(), Order::Big).unwrap();
        let g = Granted::negotiate(&a, "QM1", "QM1_1", limits(), [7; 12]);
        assert_eq!(g.fap, FAP_LEVEL);
        assert_eq!(g.max_transmission, 32748);
        assert_eq!(g.max_msg, 4 * 1024 * 1024);
        assert_eq!((g.hbint, g.sharecnv), (300, 10));
        let answer = g.encode(&a, Order::Big);
        assert_eq!(answer.len(), ID_LEN);
        let back = parse(&answer, Order::Big).unwrap();
        assert_eq!((back.fap, back.sharecnv, back.hbint), (12, 10, 300));
        assert_eq!(back.max_msg, 4 * 1024 * 1024);
        assert_eq!(back.qmgr, "QM1");
        assert_eq!(&answer[228..], &[7; 12], "the nonce is sealmq's");
        assert_eq!(answer[7], 0, "no field in error");
    }

    #[test]
    fn short_or_foreign_initial_data_is_refused() {
        assert!(parse(b"ID  ", Order::Big).is_err());
        assert!(parse(&[b'X'; 240], Order::Big).is_err());
        let id = java_id();
        assert!(parse(&id[..101], Order::Big).is_err());
        let short = parse(&id[..120], Order::Big).unwrap();
        assert_eq!(
            short.sharecnv, 0,
            "an ID without the conversations field asks none"
        );
        let g = Granted::negotiate(&short, "QM1", "QM1_1", limits(), [1; 12]);
        assert_eq!(g.sharecnv, 1, "at least the one conversation");
    }

    proptest! {
        #[test]
        fn any_bytes_parse_or_fail_cleanly(b in proptest::collection::vec(any::<u8>(), 0..300)) {
            let mut with_id = b"ID  ".to_vec();
            with_id.extend_from_slice(&b);
            for x in [&b, &with_id] {
                if let Ok(a) = parse(x, Order::Little) {
                    let g = Granted::negotiate(&a, "QM", "QMID", limits(), [3; 12]);
                    prop_assert_eq!(g.encode(&a, Order::Little).len(), ID_LEN);
                }
            }
        }
    }
}

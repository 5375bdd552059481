//! The API header every MQI request and reply begins with, and the MQCONN flow
//! (docs/fap.md "MQI flows").

use crate::bytes::{Fields, Order, Out};
use crate::{Result, err};

/// The API header's length.
pub const API_LEN: usize = 16;

/// Reply length (the most the client takes back; the server's own segment length in a
/// reply), completion code, reason code and object handle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ApiHeader {
    pub reply_len: u32,
    pub cc: i32,
    pub rc: i32,
    pub hobj: u32,
}

impl ApiHeader {
    pub fn parse(body: &[u8], order: Order) -> Result<ApiHeader> {
        if body.len() < API_LEN {
            return err(format!(
                "an MQI flow of {} bytes has no whole API header",
                body.len()
            ));
        }
        let f = Fields::new(body, order);
        Ok(ApiHeader {
            reply_len: f.u32(0)?,
            cc: f.i32(4)?,
            rc: f.i32(8)?,
            hobj: f.u32(12)?,
        })
    }

    /// The header of a reply: `len` is the whole segment's length, `rc` 0 completes OK, a
    /// warning (2079...) completes with warning 1, anything else fails (2).
    pub fn reply(len: u32, rc: u32, hobj: u32, order: Order) -> Vec<u8> {
        let cc = completion(rc);
        let mut o = Out::new(order);
        o.u32(len).i32(cc).u32(rc).u32(hobj);
        o.buf
    }
}

/// MQ's completion code for reason `rc`: 0 OK, 1 warning, 2 failed.
pub fn completion(rc: u32) -> i32 {
    match rc {
        0 => 0,
        // Warnings sealmq returns with data: truncated message accepted, an
        // MQOPEN option changed, a signal raised (MQRC_*).
        2079 | 2110 | 2041 | 2104 | 2190 => 1,
        _ => 2,
    }
}

/// What an MQCONN asks (docs/fap.md): the queue manager name, the application's name and type,
/// and where the connect options (`FCNO`) begin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conn {
    pub qmgr: String,
    pub appl: String,
    pub appl_type: i32,
}

/// MQCONN's fixed part before its options: queue manager 48, application name 28,
/// application type 4, accounting token 32, options 4, extended options 4.
pub const CONN_FIXED: usize = 120;

pub fn parse_conn(body: &[u8], order: Order) -> Result<Conn> {
    if body.len() < CONN_FIXED {
        return err(format!(
            "an MQCONN of {} bytes is shorter than its {CONN_FIXED} fixed bytes",
            body.len()
        ));
    }
    let f = Fields::new(body, order);
    Ok(Conn {
        qmgr: f.name(0, 48)?,
        appl: f.name(48, 28)?,
        appl_type: f.i32(76)?,
    })
}

/// MQCONN's reply body: the request's bytes with the queue manager's name in place (the
/// client reads back its FCNO).
pub fn conn_reply(request: &[u8], qmgr: &str) -> Vec<u8> {
    let mut b = request.to_vec();
    if b.len() >= 48 {
        let mut o = Out::new(Order::Big);
        o.name(qmgr, 48);
        b[..48].copy_from_slice(&o.buf);
    }
    b
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn header_round_trip_and_completion_codes() {
        let h = ApiHeader::reply(52, 2033, 3, Order::Big);
        let p = ApiHeader::parse(&h, Order::Big).unwrap();
        assert_eq!((p.reply_len, p.cc, p.rc, p.hobj), (52, 2, 2033, 3));
        assert_eq!(completion(0), 0);
        assert_eq!(completion(2079), 1);
        assert!(ApiHeader::parse(&h[..15], Order::Big).is_err());
    }

    #[test]
    fn conn_names_read_and_reply_names_the_qmgr() {
        let mut b = Out::new(Order::Big);
        b.name("", 48).name("MyJmsApp", 28).i32(28).raw(&[0; 40]);
        let c = parse_conn(&b.buf, Order::Big).unwrap();
        assert_eq!(
            (c.qmgr.as_str(), c.appl.as_str(), c.appl_type),
            ("", "MyJmsApp", 28)
        );
        let r = conn_reply(&b.buf, "QM1");
        assert_eq!(&r[..4], b"QM1 ");
        assert!(parse_conn(&b.buf[..100], Order::Big).is_err());
    }

    proptest! {
        #[test]
        fn never_panics(b in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = ApiHeader::parse(&b, Order::Little);
            let _ = parse_conn(&b, Order::Big);
        }
    }
}

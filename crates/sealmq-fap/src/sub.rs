//! SPI SUBSCRIBE (verb 7): how IBM's Java client subscribes (MQSUB) — `SPBU`, then `SPBI`
//! holding options, an `LSD ` (196 bytes: the subscription's queue and its open options) and
//! MQ's documented MQSD with its strings (MQCHARV: offset from the MQSD's start, length, CCSID).
//! The answer is the request with `SPBO` for `SPBI`, the subscription's queue handle in the API
//! header. Observed layout: docs/fap.md "Subscriptions".

use crate::bytes::{Fields, Order, Out};
use crate::{Result, err};

pub const VERB_SUBSCRIBE: u32 = 7;

/// MQSO_* options.
pub mod so {
    /// Alters (so resumes) the subscription named: with CREATE, JMS's create-or-resume.
    pub const ALTER: u32 = 0x01;
    pub const CREATE: u32 = 0x02;
    pub const RESUME: u32 = 0x04;
    pub const DURABLE: u32 = 0x08;
    pub const MANAGED: u32 = 0x20;
    pub const NEW_PUBLICATIONS_ONLY: u32 = 0x1000;
    pub const WILDCARD_CHAR: u32 = 0x10_0000;
}

/// Where the LSD begins: the verb header, `SPBU` and `SPBI`'s header (12 each), 4 bytes of
/// options.
const LSD_AT: usize = 40;
const LSD_LEN: usize = 196;
/// In the LSD: where the subscription handle is answered, the queue's open options, its name
/// and its queue manager's.
const LSD_HSUB: usize = 8;
const LSD_QUEUE: usize = 64;
const LSD_QMGR: usize = 112;
/// In the MQSD.
const SD_OPTIONS: usize = 8;
const SD_OBJECT: usize = 12;
const SD_OBJECT_STRING: usize = 116;
const SD_SUB_NAME: usize = 136;
const SD_SELECTION: usize = 268;
/// The longest string an MQSD may carry here (MQ's topic strings are at most 10,240 bytes).
const MAX_STRING: usize = 10_240;

/// What an SPI SUBSCRIBE asks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subscribe {
    /// MQSO_* options.
    pub options: u32,
    /// The topic object named (blank: none).
    pub object: String,
    /// The topic string (below the object's).
    pub topic: String,
    /// The subscription's name (a durable one's; JMS: `JMS:QM:client id:name`).
    pub name: String,
    pub selector: String,
    /// The queue for the publications when not managed.
    pub dest_queue: String,
    pub dest_qmgr: String,
    /// The request's structures' end.
    end: usize,
}

/// An MQCHARV at `at` of the structure at `base`: its string.
fn charv(f: &Fields<'_>, base: usize, at: usize) -> Result<String> {
    let offset = f.u32(base + at + 4)? as usize;
    let len = f.u32(base + at + 12)? as usize;
    if len == 0 {
        return Ok(String::new());
    }
    if len > MAX_STRING {
        return err(format!("an MQSD string of {len} bytes is refused"));
    }
    let b = f.bytes(base + offset, len)?;
    match std::str::from_utf8(b) {
        Ok(s) => Ok(s.to_string()),
        Err(_) => err("an MQSD string that is not UTF-8"),
    }
}

pub fn parse_subscribe(b: &[u8], order: Order) -> Result<Subscribe> {
    let f = Fields::new(b, order);
    let sd = LSD_AT + LSD_LEN;
    if f.bytes(12, 4)? != b"SPBU"
        || f.bytes(24, 4)? != b"SPBI"
        || f.bytes(LSD_AT, 4)? != b"LSD "
        || f.bytes(sd, 4)? != b"SD  "
    {
        return err("an SPI SUBSCRIBE must hold SPBU, SPBI, LSD and SD");
    }
    let s = Subscribe {
        options: f.u32(sd + SD_OPTIONS)?,
        object: f.name(sd + SD_OBJECT, 48)?,
        topic: charv(&f, sd, SD_OBJECT_STRING)?,
        name: charv(&f, sd, SD_SUB_NAME)?,
        selector: charv(&f, sd, SD_SELECTION)?,
        dest_queue: f.name(LSD_AT + LSD_QUEUE, 48)?,
        dest_qmgr: f.name(LSD_AT + LSD_QMGR, 48)?,
        end: b.len(),
    };
    // Neither a topic object nor a string: a resume by name (JMS's unsubscribe).
    Ok(s)
}

/// The answer: the request with `SPBO` for `SPBI` and the subscription handle `hsub` in the
/// LSD (the queue's handle goes in the API header).
pub fn subscribe_reply(request: &[u8], s: &Subscribe, hsub: u32, order: Order) -> Vec<u8> {
    let mut b = request[..s.end.min(request.len())].to_vec();
    if b.len() >= LSD_AT + LSD_HSUB + 4 {
        b[24..28].copy_from_slice(b"SPBO");
        let mut o = Out::new(order);
        o.u32(hsub);
        b[36..40].copy_from_slice(&o.buf);
    }
    b
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The SPI SUBSCRIBE IBM's Java client sent for a non-durable subscriber to
    /// `prices/eur` (tshark), from the verb header on.
    fn observed() -> Vec<u8> {
        let mut o = Out::new(Order::Big);
        o.u32(VERB_SUBSCRIBE).u32(1).u32(536);
        o.raw(b"SPBU").u32(1).u32(12);
        o.raw(b"SPBI").u32(1).u32(536);
        o.u32(0);
        // LSD: version, handle, an empty MQCHARV, open options, queue and its manager.
        o.raw(b"LSD ").u32(1).u32(0);
        o.u32(0).u32(196).u32(0).u32(0).u32(1208);
        o.raw(&[0; 28]).u32(0x2029).name("", 48).name("", 48);
        o.raw(&[0; 24]).u32(3).u32(0).u32(1);
        // SD
        let sd = o.buf.len();
        o.raw(b"SD  ")
            .u32(1)
            .u32(0x0020_2022)
            .name("", 48)
            .name("", 12);
        o.raw(&[0; 40]).i32(-1);
        o.u32(0).u32(312).u32(10240).u32(10).u32(1208);
        o.u32(0).u32(324).u32(0).u32(0).u32(1208);
        o.u32(0).u32(324).u32(0).u32(0).u32(1208);
        o.raw(&[0; 24]).i32(-3).raw(&[0; 32]).name("", 32);
        o.u32(0).u32(324).u32(10240).u32(0).u32(1208);
        o.u32(1);
        o.u32(0).u32(324).u32(10240).u32(0).u32(1208);
        assert_eq!(o.buf.len() - sd, 312);
        o.raw(b"prices/eur\0\0");
        o.buf
    }

    #[test]
    fn the_java_clients_subscribe_reads_and_is_answered() {
        let b = observed();
        assert_eq!(b.len() - 24, 536, "SPBI's length holds it all");
        let s = parse_subscribe(&b, Order::Big).unwrap();
        assert_eq!(s.topic, "prices/eur");
        assert_eq!(s.options & so::MANAGED, so::MANAGED);
        assert_eq!(s.options & so::DURABLE, 0);
        assert_eq!((s.name.as_str(), s.object.as_str()), ("", ""));
        let r = subscribe_reply(&b, &s, 0x7000_0005, Order::Big);
        assert_eq!(&r[24..28], b"SPBO");
        assert_eq!(&r[36..40], &0x7000_0005u32.to_be_bytes());
        assert_eq!(r.len(), b.len());
    }

    #[test]
    fn a_string_past_the_end_or_too_long_is_refused() {
        let mut b = observed();
        let sd = LSD_AT + LSD_LEN;
        b[sd + SD_OBJECT_STRING + 12..sd + SD_OBJECT_STRING + 16]
            .copy_from_slice(&400u32.to_be_bytes());
        assert!(parse_subscribe(&b, Order::Big).is_err());
        b[sd + SD_OBJECT_STRING + 12..sd + SD_OBJECT_STRING + 16]
            .copy_from_slice(&u32::MAX.to_be_bytes());
        assert!(parse_subscribe(&b, Order::Big).is_err());
    }

    proptest! {
        #[test]
        fn never_panics(cut in 0usize..560, junk in proptest::collection::vec(any::<u8>(), 0..600)) {
            let b = observed();
            let _ = parse_subscribe(&b[..cut.min(b.len())], Order::Big);
            let _ = parse_subscribe(&junk, Order::Big);
        }
    }
}

//! MQOD, the object descriptor (versions 1 to 4), and what MQOPEN carries beside it: its
//! options and the `FOPA` the queue manager fills with the object's defaults; the SPI open's
//! `LPOO` (docs/fap.md "MQI flows", "SPI").

use crate::bytes::{Fields, Order, Out};
use crate::{Result, err};

/// MQOD's length by version.
pub fn od_len(version: u32) -> Option<usize> {
    match version {
        1 => Some(168),
        2 => Some(200),
        3 => Some(336),
        4 => Some(400),
        _ => None,
    }
}

/// MQOT_*: the object types sealmq opens.
pub mod objtype {
    pub const Q: u32 = 1;
    pub const Q_MGR: u32 = 5;
    pub const TOPIC: u32 = 8;
}

/// MQOD's fields that name what is opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Od {
    pub version: u32,
    pub obj_type: u32,
    pub name: String,
    pub qmgr: String,
    pub dyn_name: String,
    pub alt_user: String,
    /// Version 4: the object (topic) string, when it has one.
    pub object_string: String,
    /// The descriptor's bytes on the wire (its fixed part and any string it carries).
    pub wire_len: usize,
}

impl Od {
    /// The descriptor at the start of `b`.
    pub fn parse(b: &[u8], order: Order) -> Result<Od> {
        if b.get(..4) != Some(b"OD  ") {
            return err("an MQOD was expected (struct id 'OD  ')");
        }
        let f = Fields::new(b, order);
        let version = f.u32(4)?;
        let Some(len) = od_len(version) else {
            return err(format!("MQOD version {version} is not one of 1 to 4"));
        };
        if b.len() < len {
            return err(format!(
                "an MQOD version {version} of {} bytes is cut short",
                b.len()
            ));
        }
        let mut od = Od {
            version,
            obj_type: f.u32(8)?,
            name: f.name(12, 48)?,
            qmgr: f.name(60, 48)?,
            dyn_name: f.name(108, 48)?,
            alt_user: f.name(156, 12)?,
            object_string: String::new(),
            wire_len: len,
        };
        if version >= 4 {
            // ObjectString, an MQCHARV (pointer, offset, buffer size, length, CCSID); its
            // characters follow the descriptor on the wire.
            let n = f.i32(336 + 12)?;
            if n > 0 {
                let n = n as usize;
                if n > 10_240 {
                    return err(format!(
                        "an object string of {n} bytes is refused (MQ's limit is 10240)"
                    ));
                }
                od.object_string = String::from_utf8_lossy(f.bytes(len, n)?).into_owned();
                od.wire_len = len + n;
            }
        }
        Ok(od)
    }

    /// The descriptor sent back: the client's bytes with, from version 3, the resolved queue
    /// and queue manager names filled in.
    pub fn reply(request: &[u8], od: &Od, resolved: &str, qmgr: &str, order: Order) -> Vec<u8> {
        let mut b = request[..od.wire_len.min(request.len())].to_vec();
        if od.version >= 3 && b.len() >= 336 {
            let mut o = Out::new(order);
            o.name(resolved, 48).name(qmgr, 48);
            b[240..336].copy_from_slice(&o.buf);
        }
        b
    }
}

/// MQOO_* bits the MQ front end reads.
pub mod oo {
    pub const INPUT_AS_Q_DEF: u32 = 0x1;
    pub const INPUT_SHARED: u32 = 0x2;
    pub const INPUT_EXCLUSIVE: u32 = 0x4;
    pub const BROWSE: u32 = 0x8;
    pub const OUTPUT: u32 = 0x10;
    pub const INQUIRE: u32 = 0x20;
    pub const SET: u32 = 0x40;
}

/// The `FOPA` an MQOPEN carries after its options (28 bytes): the object's default
/// persistence, put response, read-ahead and property control, filled in by the queue
/// manager.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Defaults {
    pub persistence: i32,
    pub put_response: i32,
    pub read_ahead: i32,
    pub prop_ctl: i32,
}

pub const FOPA_LEN: usize = 28;

pub fn fopa(d: Defaults, order: Order) -> Vec<u8> {
    let mut o = Out::new(order);
    o.raw(b"FOPA")
        .u32(1)
        .u32(FOPA_LEN as u32)
        .i32(d.persistence)
        .i32(d.put_response)
        .i32(d.read_ahead)
        .i32(d.prop_ctl);
    o.buf
}

/// An MQOPEN request: the descriptor, then the options (then a `FOPA`, rebuilt in the reply).
pub fn parse_open(b: &[u8], order: Order) -> Result<(Od, u32)> {
    let od = Od::parse(b, order)?;
    let opts = Fields::new(b, order).u32(od.wire_len)?;
    Ok((od, opts))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    pub(crate) fn od_bytes(version: u32, t: u32, name: &str, s: &str) -> Vec<u8> {
        let mut o = Out::new(Order::Big);
        o.raw(b"OD  ")
            .u32(version)
            .u32(t)
            .name(name, 48)
            .name("", 48)
            .name("AMQ.*", 48)
            .name("", 12);
        o.buf.resize(od_len(version).unwrap(), 0);
        if version >= 4 {
            o.buf[348..352].copy_from_slice(&(s.len() as u32).to_be_bytes());
            o.raw(s.as_bytes());
        }
        o.u32(oo::OUTPUT);
        o.buf
    }

    #[test]
    fn descriptors_of_each_version() {
        for v in 1..=4 {
            let b = od_bytes(v, objtype::Q, "Q1", "");
            let (od, opts) = parse_open(&b, Order::Big).unwrap();
            assert_eq!(
                (od.name.as_str(), od.dyn_name.as_str(), opts),
                ("Q1", "AMQ.*", oo::OUTPUT)
            );
            let r = Od::reply(&b, &od, "Q1", "QM1", Order::Big);
            if v >= 3 {
                assert_eq!(&r[240..243], b"Q1 ");
                assert_eq!(&r[288..292], b"QM1 ");
            }
        }
        let t = od_bytes(4, objtype::TOPIC, "", "price/fruit");
        let (od, opts) = parse_open(&t, Order::Big).unwrap();
        assert_eq!(
            (od.object_string.as_str(), opts),
            ("price/fruit", oo::OUTPUT)
        );
        assert!(Od::parse(&t[..399], Order::Big).is_err());
    }

    proptest! {
        #[test]
        fn never_panics(mut b in proptest::collection::vec(any::<u8>(), 0..500), v in 0u8..6) {
            if b.len() >= 8 {
                b[..4].copy_from_slice(b"OD  ");
                b[7] = v;
            }
            let _ = parse_open(&b, Order::Big);
        }
    }
}

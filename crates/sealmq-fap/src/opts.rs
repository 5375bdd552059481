//! MQPMO and MQGMO, the put and get options (each read by its version, echoed back with what
//! the queue manager fills in), and the bodies of the MQPUT, MQPUT1 and MQGET flows.

use crate::bytes::{Fields, Order, Out};
use crate::md::Mqmd;
use crate::od::Od;
use crate::{Result, err};

/// MQPMO_* bits the MQ front end reads.
pub mod pmo {
    pub const SYNCPOINT: u32 = 0x2;
    pub const NO_SYNCPOINT: u32 = 0x4;
    pub const NEW_MSG_ID: u32 = 0x40;
    pub const NEW_CORREL_ID: u32 = 0x80;
    pub const RETAIN: u32 = 0x20_0000;
}

/// MQGMO_* bits the MQ front end reads.
pub mod gmo {
    pub const WAIT: u32 = 0x1;
    pub const SYNCPOINT: u32 = 0x2;
    pub const BROWSE_FIRST: u32 = 0x10;
    pub const BROWSE_NEXT: u32 = 0x20;
    pub const ACCEPT_TRUNCATED_MSG: u32 = 0x40;
    pub const MSG_UNDER_CURSOR: u32 = 0x100;
    pub const BROWSE_MSG_UNDER_CURSOR: u32 = 0x800;
    pub const SYNCPOINT_IF_PERSISTENT: u32 = 0x1000;
    pub const PROPERTIES_FORCE_MQRFH2: u32 = 0x200_0000;
    pub const NO_PROPERTIES: u32 = 0x400_0000;
    pub const PROPERTIES_IN_HANDLE: u32 = 0x800_0000;
    pub const PROPERTIES_COMPATIBILITY: u32 = 0x1000_0000;
    /// MQMO_*: the match options (version 2).
    pub const MATCH_MSG_ID: u32 = 0x1;
    pub const MATCH_CORREL_ID: u32 = 0x2;
    /// MQWI_UNLIMITED.
    pub const WAIT_UNLIMITED: i32 = -1;
}

fn pmo_len(v: u32) -> Option<usize> {
    match v {
        1 => Some(128),
        2 => Some(152),
        3 => Some(176),
        _ => None,
    }
}

fn gmo_len(v: u32) -> Option<usize> {
    match v {
        1 => Some(72),
        2 => Some(80),
        3 => Some(100),
        4 => Some(112),
        _ => None,
    }
}

/// Options read from an MQPMO or MQGMO, with their bytes for the reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Opts {
    pub version: u32,
    pub options: u32,
    /// MQGMO: the wait interval in milliseconds (-1 unlimited); MQPMO: its timeout.
    pub wait: i32,
    /// MQGMO version 2: the match options (MQMO_*); MQMO_MATCH_MSG_ID|CORREL_ID before it.
    pub match_options: u32,
    pub raw: Vec<u8>,
}

fn parse_opts(
    b: &[u8],
    order: Order,
    id: &[u8; 4],
    len_of: fn(u32) -> Option<usize>,
) -> Result<Opts> {
    let what = String::from_utf8_lossy(id).trim().to_string();
    if b.get(..4) != Some(id) {
        return err(format!("an MQ{what} was expected"));
    }
    let f = Fields::new(b, order);
    let version = f.u32(4)?;
    let Some(len) = len_of(version) else {
        return err(format!("MQ{what} version {version} is not known"));
    };
    let raw = f.bytes(0, len)?.to_vec();
    let is_gmo = id == b"GMO ";
    Ok(Opts {
        version,
        options: f.u32(8)?,
        wait: f.i32(12)?,
        match_options: if is_gmo && version >= 2 {
            f.u32(72)?
        } else {
            3
        },
        raw,
    })
}

/// An MQPUT: the descriptor (and its version), the put options, the message data.
#[derive(Debug, Clone)]
pub struct Put {
    pub md: Mqmd,
    pub pmo: Opts,
    pub data: Vec<u8>,
}

/// Reads an MQPUT body (after the API header); `od` first for an MQPUT1.
pub fn parse_put(b: &[u8], order: Order, put1: bool) -> Result<(Option<Od>, Put)> {
    let (od, at) = if put1 {
        let od = Od::parse(b, order)?;
        let n = od.wire_len;
        (Some(od), n)
    } else {
        (None, 0)
    };
    let rest = b.get(at..).unwrap_or_default();
    let (md, md_len) = Mqmd::parse(rest, order)?;
    let after = rest.get(md_len..).unwrap_or_default();
    let pmo = parse_opts(after, order, b"PMO ", pmo_len)?;
    let f = Fields::new(after, order);
    let n = f.u32(pmo.raw.len())? as usize;
    let data = f.bytes(pmo.raw.len() + 4, n)?.to_vec();
    Ok((od, Put { md, pmo, data }))
}

/// The reply of an MQPUT: the descriptor as put and the put options, the resolved names
/// filled in.
pub fn put_reply(md: &Mqmd, pmo: &Opts, queue: &str, qmgr: &str, order: Order) -> Vec<u8> {
    let mut b = md.encode(md.version, order);
    let mut p = pmo.raw.clone();
    if p.len() >= 128 {
        let mut o = Out::new(order);
        o.name(queue, 48).name(qmgr, 48);
        p[32..128].copy_from_slice(&o.buf);
    }
    b.extend_from_slice(&p);
    b
}

/// An MQGET: the descriptor (its match fields), the get options, the buffer length.
#[derive(Debug, Clone)]
pub struct Get {
    pub md: Mqmd,
    pub gmo: Opts,
    pub buffer: u32,
}

pub fn parse_get(b: &[u8], order: Order) -> Result<Get> {
    let (md, md_len) = Mqmd::parse(b, order)?;
    let after = b.get(md_len..).unwrap_or_default();
    let gmo = parse_opts(after, order, b"GMO ", gmo_len)?;
    let buffer = Fields::new(after, order).u32(gmo.raw.len())?;
    Ok(Get { md, gmo, buffer })
}

/// The body of an MQGET reply: the message's descriptor in the version asked, the get
/// options with the resolved queue name (and, from version 3, the returned length), the data
/// length and the data.
pub fn get_reply(
    md: &Mqmd,
    gmo: &Opts,
    queue: &str,
    data_len: u32,
    data: &[u8],
    order: Order,
) -> Vec<u8> {
    let mut b = md.encode(md.version, order);
    let mut g = gmo.raw.clone();
    if g.len() >= 72 {
        let mut o = Out::new(order);
        o.name(queue, 48);
        g[24..72].copy_from_slice(&o.buf);
    }
    if g.len() >= 100 {
        let mut o = Out::new(order);
        o.u32(data_len);
        g[96..100].copy_from_slice(&o.buf);
    }
    b.extend_from_slice(&g);
    let mut o = Out::new(order);
    o.u32(data.len() as u32);
    b.extend_from_slice(&o.buf);
    b.extend_from_slice(data);
    b
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use proptest::prelude::*;

    pub(crate) fn opts_bytes(
        id: &[u8; 4],
        version: u32,
        options: u32,
        wait: i32,
        len: usize,
    ) -> Vec<u8> {
        let mut o = Out::new(Order::Big);
        o.raw(id).u32(version).u32(options).i32(wait);
        o.buf.resize(len, 0);
        o.buf
    }

    #[test]
    fn put_and_get_bodies_read_and_answered() {
        let md = Mqmd {
            format: "MQSTR".into(),
            ..Mqmd::default()
        };
        let mut b = md.encode(1, Order::Big);
        b.extend(opts_bytes(
            b"PMO ",
            2,
            pmo::NO_SYNCPOINT | pmo::NEW_MSG_ID,
            0,
            152,
        ));
        b.extend(5u32.to_be_bytes());
        b.extend(b"hello");
        let (_, p) = parse_put(&b, Order::Big, false).unwrap();
        assert_eq!(
            (p.md.format.as_str(), p.pmo.options, p.data.as_slice()),
            ("MQSTR", 0x44, &b"hello"[..])
        );
        let r = put_reply(&p.md, &p.pmo, "Q1", "QM1", Order::Big);
        assert_eq!(r.len(), 324 + 152);
        assert_eq!(&r[324 + 32..324 + 35], b"Q1 ");
        let mut short = b.clone();
        short.truncate(b.len() - 1);
        assert!(
            parse_put(&short, Order::Big, false).is_err(),
            "data shorter than its length"
        );

        let mut g = Mqmd {
            version: 2,
            ..Mqmd::default()
        }
        .encode(2, Order::Big);
        g.extend(opts_bytes(
            b"GMO ",
            3,
            gmo::WAIT | gmo::SYNCPOINT_IF_PERSISTENT,
            2000,
            100,
        ));
        g.extend(4096u32.to_be_bytes());
        let get = parse_get(&g, Order::Big).unwrap();
        assert_eq!((get.gmo.wait, get.buffer, get.md.version), (2000, 4096, 2));
        let r = get_reply(&get.md, &get.gmo, "Q1", 5, b"hello", Order::Big);
        assert_eq!(r.len(), 364 + 100 + 4 + 5);
        assert_eq!(&r[364 + 96..364 + 100], &5u32.to_be_bytes());
    }

    proptest! {
        #[test]
        fn never_panics(b in proptest::collection::vec(any::<u8>(), 0..700), put1 in any::<bool>()) {
            let _ = parse_put(&b, Order::Big, put1);
            let _ = parse_get(&b, Order::Little);
        }

        #[test]
        fn lying_data_lengths_are_errors(n in 6u32..u32::MAX) {
            let mut b = Mqmd::default().encode(1, Order::Big);
            b.extend(opts_bytes(b"PMO ", 1, 0, 0, 128));
            b.extend(n.to_be_bytes());
            b.extend(b"hello");
            prop_assert!(parse_put(&b, Order::Big, false).is_err());
        }
    }
}

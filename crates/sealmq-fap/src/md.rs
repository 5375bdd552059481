//! MQMD, the message descriptor, as it crosses MQ's client protocol: version 1 (324 bytes) and
//! version 2 (364 bytes, with the group and segment fields), read by its own version and
//! written back in the version the client sent.

use crate::bytes::{Fields, Order, Out};
use crate::{Result, err};

pub const MD_V1: usize = 324;
pub const MD_V2: usize = 364;

/// MQMD's fields (IBM's names; strings without their padding).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mqmd {
    pub version: u32,
    pub report: u32,
    /// MQMT_*: 1 request, 2 reply, 4 report, 8 datagram.
    pub msg_type: u32,
    /// Tenths of a second; -1 unlimited.
    pub expiry: i32,
    pub feedback: u32,
    pub encoding: u32,
    pub ccsid: i32,
    pub format: String,
    pub priority: i32,
    /// MQPER_*: 0 not persistent, 1 persistent, 2 as the queue's default.
    pub persistence: u32,
    pub msg_id: [u8; 24],
    pub correl_id: [u8; 24],
    pub backout_count: u32,
    pub reply_to_q: String,
    pub reply_to_qmgr: String,
    pub user_id: String,
    pub accounting_token: [u8; 32],
    pub appl_identity: String,
    pub put_appl_type: i32,
    pub put_appl_name: String,
    /// `YYYYMMDD` and `HHMMSSTH`, UTC.
    pub put_date: String,
    pub put_time: String,
    pub appl_origin: String,
    pub group_id: [u8; 24],
    pub msg_seq_number: u32,
    pub offset: u32,
    pub msg_flags: u32,
    pub original_length: i32,
}

impl Default for Mqmd {
    /// MQMD_DEFAULT.
    fn default() -> Self {
        Mqmd {
            version: 1,
            report: 0,
            msg_type: 8,
            expiry: -1,
            feedback: 0,
            encoding: 273,
            ccsid: 0,
            format: String::new(),
            priority: -1,
            persistence: 2,
            msg_id: [0; 24],
            correl_id: [0; 24],
            backout_count: 0,
            reply_to_q: String::new(),
            reply_to_qmgr: String::new(),
            user_id: String::new(),
            accounting_token: [0; 32],
            appl_identity: String::new(),
            put_appl_type: 0,
            put_appl_name: String::new(),
            put_date: String::new(),
            put_time: String::new(),
            appl_origin: String::new(),
            group_id: [0; 24],
            msg_seq_number: 1,
            offset: 0,
            msg_flags: 0,
            original_length: -1,
        }
    }
}

fn id<const N: usize>(f: &Fields<'_>, at: usize) -> Result<[u8; N]> {
    let mut a = [0u8; N];
    a.copy_from_slice(f.bytes(at, N)?);
    Ok(a)
}

impl Mqmd {
    /// The descriptor at the start of `b` and its length (by its version).
    pub fn parse(b: &[u8], order: Order) -> Result<(Mqmd, usize)> {
        if b.get(..4) != Some(b"MD  ") {
            return err("an MQMD was expected (struct id 'MD  ')");
        }
        let f = Fields::new(b, order);
        let version = f.u32(4)?;
        let len = match version {
            1 => MD_V1,
            2 => MD_V2,
            v => return err(format!("MQMD version {v} is not one of 1 and 2")),
        };
        if b.len() < len {
            return err(format!(
                "an MQMD version {version} of {} bytes is cut short",
                b.len()
            ));
        }
        let mut md = Mqmd {
            version,
            report: f.u32(8)?,
            msg_type: f.u32(12)?,
            expiry: f.i32(16)?,
            feedback: f.u32(20)?,
            encoding: f.u32(24)?,
            ccsid: f.i32(28)?,
            format: f.name(32, 8)?,
            priority: f.i32(40)?,
            persistence: f.u32(44)?,
            msg_id: id(&f, 48)?,
            correl_id: id(&f, 72)?,
            backout_count: f.u32(96)?,
            reply_to_q: f.name(100, 48)?,
            reply_to_qmgr: f.name(148, 48)?,
            user_id: f.name(196, 12)?,
            accounting_token: id(&f, 208)?,
            appl_identity: f.name(240, 32)?,
            put_appl_type: f.i32(272)?,
            put_appl_name: f.name(276, 28)?,
            put_date: f.name(304, 8)?,
            put_time: f.name(312, 8)?,
            appl_origin: f.name(320, 4)?,
            ..Mqmd::default()
        };
        if version >= 2 {
            md.group_id = id(&f, 324)?;
            md.msg_seq_number = f.u32(348)?;
            md.offset = f.u32(352)?;
            md.msg_flags = f.u32(356)?;
            md.original_length = f.i32(360)?;
        }
        Ok((md, len))
    }

    /// The descriptor in version `version` (1 or 2).
    pub fn encode(&self, version: u32, order: Order) -> Vec<u8> {
        let mut o = Out::new(order);
        o.raw(b"MD  ")
            .u32(version.clamp(1, 2))
            .u32(self.report)
            .u32(self.msg_type)
            .i32(self.expiry)
            .u32(self.feedback)
            .u32(self.encoding)
            .i32(self.ccsid)
            .name(&self.format, 8)
            .i32(self.priority)
            .u32(self.persistence)
            .raw(&self.msg_id)
            .raw(&self.correl_id)
            .u32(self.backout_count)
            .name(&self.reply_to_q, 48)
            .name(&self.reply_to_qmgr, 48)
            .name(&self.user_id, 12)
            .raw(&self.accounting_token)
            .name(&self.appl_identity, 32)
            .i32(self.put_appl_type)
            .name(&self.put_appl_name, 28)
            .name(&self.put_date, 8)
            .name(&self.put_time, 8)
            .name(&self.appl_origin, 4);
        if version >= 2 {
            o.raw(&self.group_id)
                .u32(self.msg_seq_number)
                .u32(self.offset)
                .u32(self.msg_flags)
                .i32(self.original_length);
        }
        o.buf
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn both_versions_round_trip() {
        let md = Mqmd {
            version: 2,
            msg_type: 1,
            format: "MQSTR".into(),
            msg_id: [7; 24],
            reply_to_q: "REPLY.Q".into(),
            put_date: "20261129".into(),
            put_time: "10203040".into(),
            msg_seq_number: 3,
            ..Mqmd::default()
        };
        let b = md.encode(2, Order::Big);
        assert_eq!(b.len(), MD_V2);
        assert_eq!(Mqmd::parse(&b, Order::Big).unwrap(), (md.clone(), MD_V2));
        let b1 = md.encode(1, Order::Little);
        assert_eq!(b1.len(), MD_V1);
        let (p, n) = Mqmd::parse(&b1, Order::Little).unwrap();
        assert_eq!(
            (n, p.reply_to_q.as_str(), p.msg_seq_number),
            (MD_V1, "REPLY.Q", 1)
        );
        assert!(Mqmd::parse(&b[..300], Order::Big).is_err());
        let mut v9 = b.clone();
        v9[7] = 9;
        assert!(Mqmd::parse(&v9, Order::Big).is_err());
    }

    proptest! {
        #[test]
        fn never_panics(mut b in proptest::collection::vec(any::<u8>(), 0..400), v in 0u8..4) {
            if b.len() >= 8 {
                b[..4].copy_from_slice(b"MD  ");
                b[7] = v;
            }
            let _ = Mqmd::parse(&b, Order::Big);
        }
    }
}

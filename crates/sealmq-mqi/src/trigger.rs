//! Trigger messages (MQ's MQTM, format `MQTRIG  `) and the character form a trigger monitor
//! passes to the program it starts (MQTMC2), laid out byte for byte as MQ's: a program written
//! for MQ's runmqtrm reads them unchanged (docs/triggering.md). A trigger monitor is an application: it reads these with this crate.

use sealmq_types::codec::{DecodeError, Result};

/// MQ's default initiation queue.
pub const DEFAULT_INITIATION_Q: &str = "SYSTEM.DEFAULT.INITIATION.QUEUE";

pub const FORMAT: &str = "MQTRIG  ";

/// Whether `md` is that of a trigger message the queue manager made (its own origin user and
/// the trigger format); otherwise why not, naming the message's origin. Only such messages
/// start programs or channels (SECURITY.md, "Triggering").
pub fn from_queue_manager(md: &crate::Md) -> std::result::Result<(), String> {
    if md.user_id.trim() == crate::md::QMGR_USER && md.format.trim_end() == FORMAT.trim_end() {
        return Ok(());
    }
    Err(format!(
        "a message not made by the queue manager (user '{}', application '{}', format '{}') is \
         skipped: only the queue manager's trigger messages start programs or channels",
        md.user_id.trim(),
        md.put_appl_name.trim(),
        md.format.trim_end()
    ))
}
/// Length of MQTM version 1.
pub const MQTM_LEN: usize = 684;
/// Length of MQTMC2.
pub const MQTMC2_LEN: usize = 732;

/// One trigger message.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TriggerMsg {
    pub queue: String,
    pub process: String,
    pub trig_data: String,
    pub appl_type: u32,
    pub appl_id: String,
    pub env_data: String,
    pub user_data: String,
}

/// MQAT_* for an APPLTYPE keyword (a number is taken as it is; UNIX and DEF are 6 here).
pub fn appl_type_number(t: &str) -> u32 {
    match t {
        "CICS" => 1,
        "MVS" | "ZOS" => 2,
        "IMS" => 3,
        "OS2" => 4,
        "DOS" => 5,
        "UNIX" | "DEF" => 6,
        "OS400" => 8,
        "WINDOWS" => 9,
        "WINDOWSNT" => 11,
        "NSK" => 13,
        n => n.parse().unwrap_or(6),
    }
}

fn field(out: &mut Vec<u8>, v: &str, len: usize) {
    let b = v.as_bytes();
    let n = b.len().min(len);
    out.extend_from_slice(&b[..n]);
    out.resize(out.len() + (len - n), b' ');
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b)
        .trim_end_matches([' ', '\0'])
        .to_string()
}

impl TriggerMsg {
    /// MQTM version 1: integers in this machine's byte order, as MQ writes them.
    pub fn encode(&self) -> Vec<u8> {
        let mut o = Vec::with_capacity(MQTM_LEN);
        o.extend_from_slice(b"TM  ");
        o.extend_from_slice(&1u32.to_ne_bytes());
        field(&mut o, &self.queue, 48);
        field(&mut o, &self.process, 48);
        field(&mut o, &self.trig_data, 64);
        o.extend_from_slice(&self.appl_type.to_ne_bytes());
        field(&mut o, &self.appl_id, 256);
        field(&mut o, &self.env_data, 128);
        field(&mut o, &self.user_data, 128);
        o
    }

    pub fn decode(b: &[u8]) -> Result<TriggerMsg> {
        if b.len() < MQTM_LEN || &b[..4] != b"TM  " {
            return Err(DecodeError(format!(
                "not a trigger message (MQTM): {} bytes, structure id {:?}",
                b.len(),
                String::from_utf8_lossy(&b[..b.len().min(4)])
            )));
        }
        let u32_at = |i: usize| u32::from_ne_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        Ok(TriggerMsg {
            queue: text(&b[8..56]),
            process: text(&b[56..104]),
            trig_data: text(&b[104..168]),
            appl_type: u32_at(168),
            appl_id: text(&b[172..428]),
            env_data: text(&b[428..556]),
            user_data: text(&b[556..684]),
        })
    }

    /// MQTMC2: every field as characters, the queue manager's name last.
    pub fn tmc2(&self, qmgr: &str) -> String {
        let mut o = Vec::with_capacity(MQTMC2_LEN);
        o.extend_from_slice(b"TMC    2");
        field(&mut o, &self.queue, 48);
        field(&mut o, &self.process, 48);
        field(&mut o, &self.trig_data, 64);
        field(&mut o, &format!("{:>4}", self.appl_type), 4);
        field(&mut o, &self.appl_id, 256);
        field(&mut o, &self.env_data, 128);
        field(&mut o, &self.user_data, 128);
        field(&mut o, qmgr, 48);
        String::from_utf8_lossy(&o).into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn layout_is_mqs() {
        let t = TriggerMsg {
            queue: "APP.IN".into(),
            process: "APP.PROC".into(),
            trig_data: "TO.QM2".into(),
            appl_type: 6,
            appl_id: "/usr/bin/app".into(),
            env_data: "&".into(),
            user_data: "u".into(),
        };
        let b = t.encode();
        assert_eq!(b.len(), MQTM_LEN);
        assert_eq!(&b[8..14], b"APP.IN");
        assert_eq!(TriggerMsg::decode(&b).unwrap(), t);
        let c = t.tmc2("QM1");
        assert_eq!(c.len(), MQTMC2_LEN);
        assert!(c.starts_with("TMC    2APP.IN"));
        assert_eq!(&c[168..172], "   6");
        assert!(c.ends_with(&format!("QM1{}", " ".repeat(45))));
        assert!(TriggerMsg::decode(&b[..100]).is_err());
    }

    proptest! {
        #[test]
        fn garbage_never_panics(b in proptest::collection::vec(any::<u8>(), 0..800)) {
            let _ = TriggerMsg::decode(&b);
        }
    }
}

//! The message descriptor (SPEC §1) and messages.

use crate::props::{self, Property};
use sealmq_types::ReasonCode;
use sealmq_types::codec::{Dec, Enc, Result};

/// Set in the persistence byte of an encoded descriptor when properties follow its last
/// field (docs/storage.md "Message descriptor"); descriptors without properties encode as
/// they always did, so stored and older data reads unchanged.
const HAS_PROPERTIES: u8 = 0x80;
/// Set in the persistence byte when the fields added in issue 44 (report, feedback) follow the
/// sequence number.
const HAS_MORE: u8 = 0x40;

pub type MsgId = [u8; 24];
pub const NONE_ID: MsgId = [0u8; 24];

/// The user id in the origin context of messages the queue manager puts itself (trigger
/// messages, dead letters, reports). No application's put carries it: the queue manager fills
/// in the origin of every application put with the application's own user.
pub const QMGR_USER: &str = "SYSTEM";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Persistence {
    #[default]
    NotPersistent,
    Persistent,
    /// Use the queue's DEFPSIST.
    AsQueueDef,
}

impl Persistence {
    /// Persistent or not, as a flag says.
    pub fn of(persistent: bool) -> Persistence {
        if persistent {
            Persistence::Persistent
        } else {
            Persistence::NotPersistent
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MsgType {
    Request,
    Reply,
    Report,
    #[default]
    Datagram,
}

/// Message descriptor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Md {
    pub msg_id: MsgId,
    pub correl_id: MsgId,
    pub persistence: Persistence,
    /// 0-9, or -1 for the queue's DEFPRTY.
    pub priority: i32,
    /// Tenths of a second; -1 = unlimited.
    pub expiry: i32,
    pub format: String,
    pub ccsid: u32,
    pub encoding: u32,
    pub msg_type: MsgType,
    pub reply_to_q: String,
    pub reply_to_qmgr: String,
    pub user_id: String,
    pub put_appl_name: String,
    /// Milliseconds since the UNIX epoch.
    pub put_time_ms: i64,
    pub backout_count: u32,
    pub group_id: MsgId,
    pub msg_seq_number: u32,
    /// MQ's MQRO_* report options, kept for the application that reads the message.
    pub report: u32,
    /// MQ's MQFB_* feedback code (of a report or a reply).
    pub feedback: u32,
    /// Message properties (typed name/value pairs; [`crate::props`]).
    pub properties: Vec<Property>,
}

impl Default for Md {
    fn default() -> Self {
        Md {
            msg_id: NONE_ID,
            correl_id: NONE_ID,
            persistence: Persistence::AsQueueDef,
            priority: -1,
            expiry: -1,
            format: String::new(),
            ccsid: 1208,
            encoding: 546,
            msg_type: MsgType::Datagram,
            reply_to_q: String::new(),
            reply_to_qmgr: String::new(),
            user_id: String::new(),
            put_appl_name: String::new(),
            put_time_ms: 0,
            backout_count: 0,
            group_id: NONE_ID,
            msg_seq_number: 1,
            report: 0,
            feedback: 0,
            properties: Vec::new(),
        }
    }
}

/// A message on a queue: its descriptor, payload and when it expires.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    pub md: Md,
    pub payload: Vec<u8>,
    /// Wall-clock expiry in ms since the epoch, or `None`.
    pub expires_at_ms: Option<i64>,
}

fn pers_byte(p: Persistence) -> u8 {
    match p {
        Persistence::NotPersistent => 0,
        Persistence::Persistent => 1,
        Persistence::AsQueueDef => 2,
    }
}

fn type_byte(t: MsgType) -> u8 {
    match t {
        MsgType::Request => 1,
        MsgType::Reply => 2,
        MsgType::Report => 4,
        MsgType::Datagram => 8,
    }
}

impl Md {
    /// The descriptor fields a protected message keeps inside its envelope (SPEC §5.3).
    pub fn protection_original(&self) -> sealmq_protect::Original {
        let mut o = sealmq_protect::Original::with_format(&self.format);
        o.ccsid = self.ccsid;
        o.encoding = self.encoding;
        o
    }

    /// Puts back the fields an envelope kept (after unprotecting).
    /// A CCSID or encoding of 0 keeps the descriptor's (IBM MQ AMS's envelope keeps them
    /// there, not in its header).
    pub fn restore_original(&mut self, o: &sealmq_protect::Original) {
        self.format = o.format_str();
        if o.ccsid != 0 {
            self.ccsid = o.ccsid;
        }
        if o.encoding != 0 {
            self.encoding = o.encoding;
        }
    }

    /// Whether a field added after the first format (report, feedback) holds other than its
    /// default: only then are they encoded (docs/storage.md, "Message descriptor").
    fn has_more(&self) -> bool {
        self.report != 0 || self.feedback != 0
    }

    /// Resets the fields a peer of wire version 5 or older does not read.
    pub fn clear_more(&mut self) {
        self.report = 0;
        self.feedback = 0;
    }

    pub fn encode(&self, e: &mut Enc) {
        let mut flags = if self.properties.is_empty() {
            0
        } else {
            HAS_PROPERTIES
        };
        if self.has_more() {
            flags |= HAS_MORE;
        }
        e.fixed(&self.msg_id)
            .fixed(&self.correl_id)
            .u8(pers_byte(self.persistence) | flags)
            .u32(self.priority as u32)
            .u32(self.expiry as u32)
            .str(&self.format)
            .u32(self.ccsid)
            .u32(self.encoding)
            .u8(type_byte(self.msg_type))
            .str(&self.reply_to_q)
            .str(&self.reply_to_qmgr)
            .str(&self.user_id)
            .str(&self.put_appl_name)
            .i64(self.put_time_ms)
            .u32(self.backout_count)
            .fixed(&self.group_id)
            .u32(self.msg_seq_number);
        if flags & HAS_MORE != 0 {
            e.u32(self.report).u32(self.feedback);
        }
        if !self.properties.is_empty() {
            props::encode(&self.properties, e);
        }
    }

    pub fn decode(d: &mut Dec<'_>) -> Result<Md> {
        let msg_id = d.fixed()?;
        let correl_id = d.fixed()?;
        let pers = d.u8()?;
        let persistence = match pers & !(HAS_PROPERTIES | HAS_MORE) {
            0 => Persistence::NotPersistent,
            1 => Persistence::Persistent,
            _ => Persistence::AsQueueDef,
        };
        let priority = d.u32()? as i32;
        let expiry = d.u32()? as i32;
        let format = d.str()?;
        let ccsid = d.u32()?;
        let encoding = d.u32()?;
        let msg_type = match d.u8()? {
            1 => MsgType::Request,
            2 => MsgType::Reply,
            4 => MsgType::Report,
            _ => MsgType::Datagram,
        };
        let mut md = Md {
            msg_id,
            correl_id,
            persistence,
            priority,
            expiry,
            format,
            ccsid,
            encoding,
            msg_type,
            reply_to_q: d.str()?,
            reply_to_qmgr: d.str()?,
            user_id: d.str()?,
            put_appl_name: d.str()?,
            put_time_ms: d.i64()?,
            backout_count: d.u32()?,
            group_id: d.fixed()?,
            msg_seq_number: d.u32()?,
            ..Md::default()
        };
        if pers & HAS_MORE != 0 {
            md.report = d.u32()?;
            md.feedback = d.u32()?;
        }
        if pers & HAS_PROPERTIES != 0 {
            md.properties = props::decode(d)?;
        }
        Ok(md)
    }
}

impl Md {
    /// Sets property `name` (replacing a value it had), refused for a reserved or bad name.
    pub fn set_property(
        &mut self,
        name: &str,
        value: props::PropValue,
    ) -> std::result::Result<(), (ReasonCode, String)> {
        props::check_name(name)?;
        props::set(&mut self.properties, name, value);
        Ok(())
    }

    /// The value of property `name`, if the message has one.
    pub fn property(&self, name: &str) -> Option<&props::PropValue> {
        props::get(&self.properties, name)
    }
}

impl sealmq_types::codec::Field for Md {
    fn put(&self, e: &mut Enc) {
        self.encode(e)
    }
    fn take(d: &mut Dec<'_>) -> Result<Md> {
        Md::decode(d)
    }
}

impl sealmq_types::codec::Field for Message {
    fn put(&self, e: &mut Enc) {
        self.encode(e)
    }
    fn take(d: &mut Dec<'_>) -> Result<Message> {
        Message::decode(d)
    }
}

impl Message {
    pub fn encode(&self, e: &mut Enc) {
        self.md.encode(e);
        e.i64(self.expires_at_ms.unwrap_or(i64::MIN))
            .bytes(&self.payload);
    }

    pub fn decode(d: &mut Dec<'_>) -> Result<Message> {
        let md = Md::decode(d)?;
        let exp = d.i64()?;
        let payload = d.bytes()?.to_vec();
        Ok(Message {
            md,
            payload,
            expires_at_ms: (exp != i64::MIN).then_some(exp),
        })
    }

    pub fn is_persistent(&self) -> bool {
        self.md.persistence == Persistence::Persistent
    }
}

/// Milliseconds since the UNIX epoch.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::props::PropValue;
    use proptest::prelude::*;

    #[test]
    fn a_property_set_twice_holds_the_second_value_and_reserved_names_are_refused() {
        let mut md = Md::default();
        md.set_property("a", PropValue::Int(1)).unwrap();
        md.set_property("a", PropValue::Int(2)).unwrap();
        assert_eq!(md.property("a"), Some(&PropValue::Int(2)));
        assert!(md.set_property("mqx", PropValue::Null).is_err());
    }

    #[test]
    fn round_trip() {
        let m = Message {
            md: Md {
                msg_id: [1; 24],
                correl_id: [2; 24],
                persistence: Persistence::Persistent,
                priority: 7,
                format: "MQSTR".into(),
                reply_to_q: "REPLY".into(),
                backout_count: 3,
                ..Md::default()
            },
            payload: b"hello".to_vec(),
            expires_at_ms: Some(123),
        };
        let mut e = Enc::new();
        m.encode(&mut e);
        let plain = e.buf.clone();
        let mut d = Dec::new(&e.buf, "message");
        assert_eq!(Message::decode(&mut d).unwrap(), m);
        d.finish().unwrap();

        // With properties: every type survives; without, the bytes are as before.
        let mut p = m.clone();
        for (n, v) in [
            ("b", PropValue::Bool(true)),
            ("i8", PropValue::Byte(-3)),
            ("i16", PropValue::Short(-300)),
            ("i32", PropValue::Int(70000)),
            ("i64", PropValue::Long(-1 << 40)),
            ("f32", PropValue::Float(1.5)),
            ("f64", PropValue::Double(f64::NAN)),
            ("s", PropValue::String("ünï".into())),
            ("x", PropValue::Bytes(vec![0, 255])),
            ("n", PropValue::Null),
        ] {
            crate::props::set(&mut p.md.properties, n, v);
        }
        let mut e = Enc::new();
        p.encode(&mut e);
        assert!(e.buf.len() > plain.len());
        let mut d = Dec::new(&e.buf, "message");
        assert_eq!(Message::decode(&mut d).unwrap(), p);
        d.finish().unwrap();
        assert_eq!(p.md.persistence, Persistence::Persistent);
    }

    /// Report options and feedback travel only when set (flag 0x40), so a descriptor without
    /// them encodes byte for byte as before they existed, and one with them round-trips.
    #[test]
    fn report_and_feedback_round_trip_and_leave_older_encodings_alone() {
        let plain = Md {
            priority: 4,
            ..Md::default()
        };
        let mut e = Enc::new();
        plain.encode(&mut e);
        let old = e.buf.clone();
        assert_eq!(old[48] & 0x40, 0, "no flag without the fields");
        let mut more = plain.clone();
        more.report = 0x0100_0040;
        more.feedback = 65543;
        more.set_property("p", PropValue::Int(1)).unwrap();
        let mut e = Enc::new();
        more.encode(&mut e);
        assert_eq!(e.buf[48] & 0xc0, 0xc0);
        let back = Md::decode(&mut Dec::new(&e.buf, "md")).unwrap();
        assert_eq!(back, more);
        let mut cleared = back;
        cleared.clear_more();
        cleared.properties.clear();
        let mut e = Enc::new();
        cleared.encode(&mut e);
        assert_eq!(e.buf, old, "cleared for an older peer: the older encoding");
    }

    proptest! {
        #[test]
        fn garbage_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = Message::decode(&mut Dec::new(&bytes, "message"));
        }
    }
}

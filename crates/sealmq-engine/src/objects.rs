//! Object definitions with MQ's attributes and defaults (SPEC §2.2).

use crate::error::{MqResult, mqerr};
use sealmq_storage::codec::{Dec, DecodeError, Enc, Field, Result};
use sealmq_types::{named_enum, put_fields, take_fields};

named_enum! {
    pub enum QType("queue type") {
        Local = 1 "QLOCAL", Alias = 2 "QALIAS", Remote = 3 "QREMOTE", Model = 4 "QMODEL"
    }
    pub enum Usage("USAGE") { Normal = 0 "NORMAL", Xmitq = 1 "XMITQ" }
    pub enum MsgDlvSq("MSGDLVSQ") { Priority = 0 "PRIORITY", Fifo = 1 "FIFO" }
    /// TRIGTYPE: when a message arriving on a triggered queue makes a trigger message.
    pub enum TrigType("TRIGTYPE") {
        None = 0 "NONE", First = 1 "FIRST", Every = 2 "EVERY", Depth = 3 "DEPTH"
    }
    /// How a local queue came to be.
    pub enum DefType("DEFTYPE") {
        Predefined = 0 "PREDEFINED", PermanentDynamic = 1 "PERMDYN",
        TemporaryDynamic = 2 "TEMPDYN"
    }
}

/// A queue definition. Attributes not meaningful for a type keep their defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueDef {
    pub name: String,
    pub qtype: QType,
    pub descr: String,
    pub put_enabled: bool,
    pub get_enabled: bool,
    pub max_depth: u32,
    pub max_msg_len: u32,
    pub def_persistent: bool,
    pub def_priority: u8,
    pub msg_dlv_seq: MsgDlvSq,
    pub usage: Usage,
    pub backout_threshold: u32,
    pub backout_requeue_q: String,
    /// QALIAS: the queue it names.
    pub target: String,
    /// QREMOTE: RNAME, RQMNAME, XMITQ.
    pub remote_name: String,
    pub remote_qmgr: String,
    pub xmitq: String,
    /// QMODEL: the kind of dynamic queue it makes; local queues: how they were made.
    pub def_type: DefType,
    /// SHARE: several handles may get at once; NOSHARE makes every input open exclusive.
    pub share: bool,
    /// DEFSOPT(EXCL): an open for input "as the queue defines" is exclusive.
    pub defsopt_exclusive: bool,
    /// HARDENBO: kept as set; sealmq always logs backout counts (they survive restarts).
    pub harden_bo: bool,
    /// Triggering (TRIGGER, TRIGTYPE, TRIGDPTH, TRIGMPRI, TRIGDATA, INITQ, PROCESS).
    pub trigger: bool,
    pub trig_type: TrigType,
    pub trig_depth: u32,
    pub trig_msg_pri: u8,
    pub trig_data: String,
    pub init_q: String,
    pub process: String,
    /// Attributes accepted without effect, shown by DISPLAY and kept by dump.
    pub noted: crate::noted::Noted,
}

impl QueueDef {
    /// A definition with MQ's defaults.
    pub fn new(name: &str, qtype: QType) -> QueueDef {
        QueueDef {
            name: name.to_string(),
            qtype,
            descr: String::new(),
            put_enabled: true,
            get_enabled: true,
            max_depth: 5000,
            max_msg_len: 4_194_304,
            def_persistent: false,
            def_priority: 0,
            msg_dlv_seq: MsgDlvSq::Priority,
            usage: Usage::Normal,
            backout_threshold: 0,
            backout_requeue_q: String::new(),
            target: String::new(),
            remote_name: String::new(),
            remote_qmgr: String::new(),
            xmitq: String::new(),
            def_type: if qtype == QType::Model {
                DefType::TemporaryDynamic
            } else {
                DefType::Predefined
            },
            share: true,
            defsopt_exclusive: false,
            harden_bo: false,
            trigger: false,
            trig_type: TrigType::First,
            trig_depth: 1,
            trig_msg_pri: 0,
            trig_data: String::new(),
            init_q: String::new(),
            process: String::new(),
            noted: Default::default(),
        }
    }

    /// Checks the definition's own rules.
    pub fn validate(&self) -> MqResult<()> {
        validate_name(&self.name)?;
        if self.def_priority > 9 {
            return mqerr!(OptionsError, "DEFPRTY({}) must be 0-9", self.def_priority);
        }
        if self.max_msg_len > 100 * 1024 * 1024 {
            return mqerr!(
                OptionsError,
                "MAXMSGL({}) exceeds 104857600",
                self.max_msg_len
            );
        }
        if self.trig_msg_pri > 9 {
            return mqerr!(OptionsError, "TRIGMPRI({}) must be 0-9", self.trig_msg_pri);
        }
        if self.trig_depth == 0 {
            return mqerr!(OptionsError, "TRIGDPTH must be 1 or more");
        }
        if self.trig_data.len() > 64 {
            return mqerr!(OptionsError, "TRIGDATA is longer than 64 characters");
        }
        // The default objects are templates: MQ defines them with a blank TARGET / RQMNAME.
        if is_default_object(&self.name) {
            return Ok(());
        }
        match self.qtype {
            QType::Alias if self.target.is_empty() => {
                mqerr!(OptionsError, "QALIAS({}) needs TARGET", self.name)
            }
            QType::Remote if self.remote_qmgr.is_empty() => {
                mqerr!(OptionsError, "QREMOTE({}) needs RQMNAME", self.name)
            }
            _ => Ok(()),
        }
    }

    /// The fields of the first block, in their order (docs/storage.md).
    pub fn encode(&self, e: &mut Enc) {
        put_fields!(e, self: name, qtype, descr, put_enabled, get_enabled, max_depth, max_msg_len,
            def_persistent, def_priority, msg_dlv_seq, usage, backout_threshold,
            backout_requeue_q, target, remote_name, remote_qmgr, xmitq, def_type);
        // Extension block (docs/storage.md), version 1: sharing, triggering and the attributes
        // kept without effect. Records written before it decode with MQ's defaults.
        e.u8(1);
        put_fields!(e, self: share, defsopt_exclusive, harden_bo, trigger, trig_type,
            trig_depth, trig_msg_pri, trig_data, init_q, process, noted);
    }

    pub fn decode(d: &mut Dec<'_>) -> Result<QueueDef> {
        let name = d.str()?;
        let mut q = QueueDef::new(&name, Field::take(d)?);
        take_fields!(d, q: descr, put_enabled, get_enabled, max_depth, max_msg_len,
            def_persistent, def_priority, msg_dlv_seq, usage, backout_threshold,
            backout_requeue_q, target, remote_name, remote_qmgr, xmitq, def_type);
        if !d.is_empty() {
            let v = d.u8()?;
            if v != 1 {
                return Err(DecodeError(format!(
                    "queue {name}: extension version {v} is not one this build reads (1)"
                )));
            }
            take_fields!(d, q: share, defsopt_exclusive, harden_bo, trigger, trig_type,
                trig_depth, trig_msg_pri, trig_data, init_q, process, noted);
        }
        Ok(q)
    }
}

/// Queue manager attributes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QmgrDef {
    pub name: String,
    pub descr: String,
    pub dead_letter_q: String,
    pub max_msg_len: u32,
    pub chiadaps: u32,
    pub chidisps: u32,
    pub stat_int: u32,
    /// The transmission queue for queue managers no other definition names (DEFXMITQ).
    pub def_xmitq: String,
    /// ACCTMQI: accounting of each connection's MQI calls (taken up by new connections).
    pub acct_mqi: bool,
    /// ACCTINT: seconds between accounting records of a long-lived connection.
    pub acct_int: u32,
    /// CHLAUTH(ENABLED): channel authentication records are applied.
    pub chlauth_enabled: bool,
    /// CONNAUTH: the AUTHINFO object of connection authentication (blank: none).
    pub connauth: String,
    /// MAXCHL: connections over the network (applications and channels) served at once; the
    /// queue manager's own user on the local socket is never refused.
    pub maxchl: u32,
    /// Attributes accepted without effect.
    pub noted: crate::noted::Noted,
}

/// MQ's default MAXHANDS: handles one connection may hold open at once.
pub const DEFAULT_MAXHANDS: u32 = 256;

impl QmgrDef {
    /// MAXHANDS (kept with the noted attributes; MQ's default 256).
    /// PSMODE (kept with the noted attributes; MQ's default ENABLED): DISABLED refuses
    /// publishing and subscribing (2531); COMPAT is taken as ENABLED (no queued interface).
    pub fn pubsub_enabled(&self) -> bool {
        !self
            .noted
            .get("PSMODE")
            .is_some_and(|m| m.eq_ignore_ascii_case("DISABLED"))
    }

    pub fn max_handles(&self) -> u32 {
        crate::noted::num::<u32>(&self.noted, "MAXHANDS").unwrap_or(DEFAULT_MAXHANDS)
    }

    /// MAXUMSGS (kept with the noted attributes; MQ's default 10,000): operations one unit of
    /// work may hold uncommitted, and messages one asynchronous consumer may hold unsettled.
    pub fn max_uncommitted(&self) -> usize {
        crate::noted::num::<usize>(&self.noted, "MAXUMSGS").unwrap_or(MAX_UNCOMMITTED)
    }
}

/// MQ's default TRIGINT: in practice, never re-trigger.
pub const DEFAULT_TRIGINT: u64 = 999_999_999;

/// MQ's default MAXFSIZE, MB (what DEFAULT and -1 stand for).
pub const DEFAULT_MAXFSIZE_MB: u64 = 2_088_960;

impl QueueDef {
    /// MAXFSIZE in bytes: how large the queue's files may grow (MQ's attribute, in MB; kept
    /// with the noted attributes, DEFAULT or -1 for MQ's default).
    pub fn max_file_bytes(&self) -> u64 {
        crate::noted::num::<u64>(&self.noted, "MAXFSIZE").unwrap_or(DEFAULT_MAXFSIZE_MB) << 20
    }
}

/// MQ's DEFREADA: whether client applications' gets read ahead by default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadAhead {
    No,
    Yes,
    Disabled,
}

/// MQ's PROPCTL: how a get that names none of the MQGMO_PROPERTIES_* options (MQ's
/// MQGMO_PROPERTIES_AS_Q_DEF) over MQ's client protocol is given a message's properties.
/// Applications that take properties as properties (sealmq's clients, AMQP, an MQI message
/// handle) always get them, as in MQ.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PropCtl {
    /// In an MQRFH2 when the message has properties of MQ's JMS and user folders (MQ's default).
    #[default]
    Compat,
    /// Removed.
    None,
    /// In an MQRFH2.
    All,
    /// In an MQRFH2, even to a get that asks for a message handle.
    Force,
    /// In the MQRFH2 as put.
    V6Compat,
}

impl PropCtl {
    /// The MQSC values, in MQ's order of MQPROP_* numbers (0..=4).
    pub const NAMES: [&'static str; 5] = ["COMPAT", "NONE", "ALL", "FORCE", "V6COMPAT"];

    pub fn name(self) -> &'static str {
        Self::NAMES[self.number() as usize]
    }

    /// MQ's MQPROP_* number (MQINQ's MQIA_PROPERTY_CONTROL).
    pub fn number(self) -> u32 {
        match self {
            PropCtl::Compat => 0,
            PropCtl::None => 1,
            PropCtl::All => 2,
            PropCtl::Force => 3,
            PropCtl::V6Compat => 4,
        }
    }
}

impl QueueDef {
    /// PROPCTL (kept with the noted attributes; COMPAT when not set).
    pub fn prop_ctl(&self) -> PropCtl {
        match self
            .noted
            .get("PROPCTL")
            .map(|v| v.trim().to_ascii_uppercase())
        {
            Some(v) if v == "NONE" => PropCtl::None,
            Some(v) if v == "ALL" => PropCtl::All,
            Some(v) if v == "FORCE" => PropCtl::Force,
            Some(v) if v == "V6COMPAT" => PropCtl::V6Compat,
            _ => PropCtl::Compat,
        }
    }

    /// DEFREADA (kept with the noted attributes; NO when not set).
    pub fn def_read_ahead(&self) -> ReadAhead {
        match self
            .noted
            .get("DEFREADA")
            .map(|v| v.trim().to_ascii_uppercase())
        {
            Some(v) if v == "YES" => ReadAhead::Yes,
            Some(v) if v == "DISABLED" => ReadAhead::Disabled,
            _ => ReadAhead::No,
        }
    }
}

/// The message cache's default size, MiB (MSGCACHE).
pub const DEFAULT_MSGCACHE_MB: u64 = 256;

impl QmgrDef {
    /// MSGCACHE in bytes: the memory all queues' message payloads may take; the rest wait in
    /// queue files. Kept with the noted attributes (MiB), so no format changed.
    pub fn msg_cache_bytes(&self) -> u64 {
        crate::noted::num::<u64>(&self.noted, "MSGCACHE").unwrap_or(DEFAULT_MSGCACHE_MB) << 20
    }

    /// TRIGINT in milliseconds: how long after a FIRST trigger message a message arriving on a
    /// queue that is still not empty makes another. Kept with the noted attributes (where
    /// older queue managers stored it), so no format changed.
    pub fn trig_int_ms(&self) -> u64 {
        crate::noted::num(&self.noted, "TRIGINT").unwrap_or(DEFAULT_TRIGINT)
    }

    pub fn new(name: &str) -> QmgrDef {
        QmgrDef {
            name: name.to_string(),
            descr: String::new(),
            dead_letter_q: DEAD_LETTER_Q.to_string(),
            max_msg_len: 4_194_304,
            chiadaps: 8,
            chidisps: 5,
            stat_int: 1800,
            def_xmitq: String::new(),
            acct_mqi: false,
            acct_int: 1800,
            chlauth_enabled: true,
            connauth: DEFAULT_IDPWOS.to_string(),
            maxchl: 1000,
            noted: Default::default(),
        }
    }

    pub fn encode(&self, e: &mut Enc) {
        put_fields!(e, self: name, descr, dead_letter_q, max_msg_len, chiadaps, chidisps,
            stat_int);
        // Extension block (docs/storage.md), version 5: the version-2 fields, then the
        // version-3 ones, the version-4 ones and the noted attributes (5). Absent in records
        // written by version 1, which decode with the defaults; an older block decodes with
        // the later versions' defaults.
        e.u8(5);
        put_fields!(e, self: def_xmitq, acct_mqi, acct_int, chlauth_enabled, connauth, maxchl,
            noted);
    }

    pub fn decode(d: &mut Dec<'_>) -> Result<QmgrDef> {
        let mut q = QmgrDef::new(&d.str()?);
        take_fields!(d, q: descr, dead_letter_q, max_msg_len, chiadaps, chidisps, stat_int);
        if !d.is_empty() {
            let v = d.u8()?;
            if !(2..=5).contains(&v) {
                return Err(DecodeError(format!(
                    "queue manager attributes: extension version {v} is newer than this build reads (5)"
                )));
            }
            take_fields!(d, q: def_xmitq);
            if v >= 3 {
                take_fields!(d, q: acct_mqi, acct_int);
            }
            if v >= 4 {
                take_fields!(d, q: chlauth_enabled, connauth, maxchl);
            }
            if v >= 5 {
                take_fields!(d, q: noted);
            }
        }
        Ok(q)
    }
}

pub const DEAD_LETTER_Q: &str = "SYSTEM.DEAD.LETTER.QUEUE";
pub const POLICY_Q: &str = "SYSTEM.PROTECTION.POLICY.QUEUE";
pub const PROTECTION_ERROR_Q: &str = "SYSTEM.PROTECTION.ERROR.QUEUE";
pub const DEFAULT_MODEL_Q: &str = "SYSTEM.DEFAULT.MODEL.QUEUE";
pub const CHANNEL_SYNC_Q: &str = "SYSTEM.CHANNEL.SYNCQ";
pub const CHANNEL_INITQ: &str = "SYSTEM.CHANNEL.INITQ";
pub const DEFAULT_LOCAL_Q: &str = "SYSTEM.DEFAULT.LOCAL.QUEUE";
pub const DEFAULT_ALIAS_Q: &str = "SYSTEM.DEFAULT.ALIAS.QUEUE";
pub const DEFAULT_REMOTE_Q: &str = "SYSTEM.DEFAULT.REMOTE.QUEUE";
pub use sealmq_mqi::trigger::DEFAULT_INITIATION_Q;

/// The default object a DEFINE without LIKE copies, as MQ does.
pub fn default_queue_name(t: QType) -> &'static str {
    match t {
        QType::Local => DEFAULT_LOCAL_Q,
        QType::Alias => DEFAULT_ALIAS_Q,
        QType::Remote => DEFAULT_REMOTE_Q,
        QType::Model => DEFAULT_MODEL_Q,
    }
}

/// Whether a queue is one of the default (template) objects.
pub fn is_default_object(name: &str) -> bool {
    [
        DEFAULT_LOCAL_Q,
        DEFAULT_ALIAS_Q,
        DEFAULT_REMOTE_Q,
        DEFAULT_MODEL_Q,
    ]
    .contains(&name)
}

const DEEP: u32 = 999_999_999;

/// The system objects a new queue manager is created with: name, type, description, MAXDEPTH
/// (0: the default) and DEFPSIST.
#[rustfmt::skip]
/// The model queues of managed durable and non-durable subscriptions (issue 28).
pub const DURABLE_MODEL: &str = "SYSTEM.DURABLE.MODEL.QUEUE";
pub const NDURABLE_MODEL: &str = "SYSTEM.NDURABLE.MODEL.QUEUE";
/// Where retained publications are kept, one per topic string (issue 28, MQ's name).
pub const RETAINED_Q: &str = "SYSTEM.RETAINED.PUB.QUEUE";

const SYSTEM_QUEUES: &[(&str, QType, &str, u32, bool)] = &[
    (DEAD_LETTER_Q, QType::Local, "dead-letter queue", DEEP, true),
    (POLICY_Q, QType::Local, "security policies", 0, true),
    (
        PROTECTION_ERROR_Q,
        QType::Local,
        "messages that failed a protection check",
        DEEP,
        true,
    ),
    (
        DEFAULT_MODEL_Q,
        QType::Model,
        "default model for dynamic queues",
        0,
        false,
    ),
    (
        CHANNEL_SYNC_Q,
        QType::Local,
        "channel synchronisation store",
        DEEP,
        true,
    ),
    (
        DEFAULT_LOCAL_Q,
        QType::Local,
        "default local queue: DEFINE QLOCAL without LIKE copies it",
        0,
        false,
    ),
    (
        DEFAULT_ALIAS_Q,
        QType::Alias,
        "default alias queue",
        0,
        false,
    ),
    (
        DEFAULT_REMOTE_Q,
        QType::Remote,
        "default remote queue",
        0,
        false,
    ),
    (
        CHANNEL_INITQ,
        QType::Local,
        "channel initiation queue: trigger messages that start channels",
        1000,
        false,
    ),
    (
        DEFAULT_INITIATION_Q,
        QType::Local,
        "default initiation queue",
        0,
        false,
    ),
    (
        RETAINED_Q,
        QType::Local,
        "retained publications, one per topic string",
        DEEP,
        true,
    ),
    (
        DURABLE_MODEL,
        QType::Model,
        "model of managed durable subscriptions' queues",
        0,
        false,
    ),
    (
        NDURABLE_MODEL,
        QType::Model,
        "model of managed non-durable subscriptions' queues",
        0,
        false,
    ),
];

/// The system objects a new queue manager is created with.
pub fn system_queues() -> Vec<QueueDef> {
    SYSTEM_QUEUES
        .iter()
        .map(|&(name, qtype, descr, max_depth, persistent)| {
            let mut q = QueueDef::new(name, qtype);
            q.descr = descr.into();
            if max_depth > 0 {
                q.max_depth = max_depth;
            }
            q.def_persistent = persistent;
            if name == DURABLE_MODEL {
                q.def_type = DefType::PermanentDynamic;
            }
            q
        })
        .collect()
}

/// The default AUTHINFO every queue manager has, as MQ's: a new queue manager's CONNAUTH.
pub const DEFAULT_IDPWOS: &str = "SYSTEM.DEFAULT.AUTHINFO.IDPWOS";

/// Uncommitted operations a connection may hold (MQ's MAXUMSGS default).
pub const MAX_UNCOMMITTED: usize = 10_000;

/// Object names: 1-48 characters of `A-Z a-z 0-9 . _ / %`.
pub fn validate_name(name: &str) -> MqResult<()> {
    let ok = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '/' | '%');
    if name.is_empty() || name.len() > 48 || !name.chars().all(ok) {
        return mqerr!(
            ObjectNameError,
            "name '{name}' must be 1-48 characters of A-Z a-z 0-9 . _ / %"
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qmgr_records_of_every_extension_version_read() {
        let mut q = QmgrDef::new("QM1");
        q.def_xmitq = "GW".into();
        q.acct_mqi = true;
        q.acct_int = 60;
        let mut e = Enc::new();
        q.encode(&mut e);
        let v3 = e.buf;
        assert_eq!(QmgrDef::decode(&mut Dec::new(&v3, "qmgr")).unwrap(), q);
        // Version 1 wrote no extension block: everything after STATINT takes its default.
        let mut v1 = Enc::new();
        v1.str("QM1")
            .str("")
            .str(DEAD_LETTER_Q)
            .u32(4_194_304)
            .u32(8)
            .u32(5)
            .u32(1800);
        let old = QmgrDef::decode(&mut Dec::new(&v1.buf, "qmgr")).unwrap();
        assert_eq!(old, QmgrDef::new("QM1"));
        // Version 2: DEFXMITQ, and the accounting defaults.
        let mut v2 = Enc::new();
        v2.buf.extend_from_slice(&v1.buf);
        v2.u8(2).str("GW");
        let old = QmgrDef::decode(&mut Dec::new(&v2.buf, "qmgr")).unwrap();
        assert_eq!(
            (old.def_xmitq.as_str(), old.acct_mqi, old.acct_int),
            ("GW", false, 1800)
        );
        // A version this build does not know is refused, not misread.
        let mut v9 = v1.buf.clone();
        v9.push(9);
        assert!(QmgrDef::decode(&mut Dec::new(&v9, "qmgr")).is_err());
    }

    #[test]
    fn defaults_are_mqs_and_round_trip() {
        let q = QueueDef::new("APP.Q", QType::Local);
        assert_eq!(q.max_depth, 5000);
        assert_eq!(q.max_msg_len, 4_194_304);
        assert!(!q.def_persistent);
        let mut e = Enc::new();
        q.encode(&mut e);
        assert_eq!(QueueDef::decode(&mut Dec::new(&e.buf, "q")).unwrap(), q);
        assert!(validate_name("BAD NAME").is_err());
        assert!(validate_name(&"X".repeat(49)).is_err());
        let a = QueueDef::new("A", QType::Alias);
        assert_eq!(a.validate().unwrap_err().reason.code(), 2046);
    }

    #[test]
    fn queue_records_before_the_extension_read_with_mqs_defaults() {
        let mut q = QueueDef::new("XQ", QType::Local);
        q.trigger = true;
        q.trig_type = TrigType::Every;
        q.init_q = "SYSTEM.CHANNEL.INITQ".into();
        q.noted.insert("QDEPTHHI".into(), "75".into());
        let mut e = Enc::new();
        q.encode(&mut e);
        assert_eq!(QueueDef::decode(&mut Dec::new(&e.buf, "q")).unwrap(), q);
        // An old record ends after DEFTYPE: everything added takes MQ's default.
        let mut old = Enc::new();
        QueueDef::new("XQ", QType::Local).encode(&mut old);
        let ext = 1 + 4 + 1 + 4 + 1 + 3 * 4 + 4;
        let cut = &old.buf[..old.buf.len() - ext];
        let back = QueueDef::decode(&mut Dec::new(cut, "q")).unwrap();
        assert_eq!(back, QueueDef::new("XQ", QType::Local));
        // A newer extension is refused, not misread.
        let mut newer = cut.to_vec();
        newer.push(2);
        assert!(QueueDef::decode(&mut Dec::new(&newer, "q")).is_err());
    }
}

//! MQINQ's answers: what IBM's JMS client asks of the queue manager (command level,
//! platform, CCSID, name, identifier, dead-letter queue) and of a queue (depth, type, its
//! limits), from the queue manager's own definitions.

use sealmq_engine::QueueManager;
use sealmq_types::ReasonCode;

/// MQ's command level sealmq answers (what IBM MQ 9.4 reports: the JMS client checks it).
pub(super) const COMMAND_LEVEL: i32 = 940;
/// MQPL_UNIX.
const PLATFORM: i32 = 3;

/// What an inquiry is about.
pub(super) enum About<'a> {
    Qmgr,
    Queue(&'a str),
}

/// One selector's answer: an integer, or characters in MQ's width for it.
pub(super) enum Answer {
    Int(i32),
    Chars(String, usize),
}

/// The answer to `selector`, or the reason it has none (2067: not a selector of that object).
pub(super) fn answer(qm: &QueueManager, about: &About<'_>, selector: i32) -> Result<Answer, u32> {
    use Answer::{Chars, Int};
    let q = qm.qmgr();
    let r = match (about, selector) {
        (_, 2) => Int(1208),                                    // MQIA_CODED_CHAR_SET_ID
        (About::Qmgr, 31) => Int(COMMAND_LEVEL),                // MQIA_COMMAND_LEVEL
        (About::Qmgr, 32) => Int(PLATFORM),                     // MQIA_PLATFORM
        (About::Qmgr, 273) => Int(1), // MQIA_ADVANCED_CAPABILITY: MQCAP_SUPPORTED
        (About::Qmgr, 13) => Int(q.max_msg_len as i32), // MQIA_MAX_MSG_LENGTH
        (About::Qmgr, 33) => Int(999_999_999), // MQIA_MAX_UNCOMMITTED_MSGS
        (About::Qmgr, 2015) => Chars(q.name.clone(), 48), // MQCA_Q_MGR_NAME
        (About::Qmgr, 2032) => Chars(super::qmid(&q.name), 48), // MQCA_Q_MGR_IDENTIFIER
        (About::Qmgr, 2006) => Chars(q.dead_letter_q.clone(), 48), // MQCA_DEAD_LETTER_Q_NAME
        (About::Qmgr, 2014) => Chars(q.descr.clone(), 64), // MQCA_Q_MGR_DESC
        (About::Queue(name), s) => return queue(qm, name, s),
        _ => return Err(ReasonCode::SelectorError.code()),
    };
    Ok(r)
}

fn queue(qm: &QueueManager, name: &str, selector: i32) -> Result<Answer, u32> {
    use Answer::{Chars, Int};
    use sealmq_engine::objects::{DefType, MsgDlvSq, ReadAhead, Usage};
    let d = qm.queue_def(name).map_err(|e| e.reason.code())?;
    Ok(match selector {
        3 => Int(qm.depth(name).unwrap_or(0) as i32), // MQIA_CURRENT_Q_DEPTH
        15 => Int(d.max_depth as i32),                // MQIA_MAX_Q_DEPTH
        13 => Int(d.max_msg_len as i32),              // MQIA_MAX_MSG_LENGTH
        5 => Int(i32::from(d.def_persistent)),        // MQIA_DEF_PERSISTENCE
        6 => Int(i32::from(d.def_priority)),          // MQIA_DEF_PRIORITY
        20 => Int(qtype(&d)),                         // MQIA_Q_TYPE
        22 => Int(d.backout_threshold as i32),        // MQIA_BACKOUT_THRESHOLD
        9 => Int(i32::from(!d.get_enabled)),          // MQIA_INHIBIT_GET
        10 => Int(i32::from(!d.put_enabled)),         // MQIA_INHIBIT_PUT
        7 => Int(match d.def_type {
            // MQIA_DEFINITION_TYPE: MQQDT_PREDEFINED, PERMANENT_DYNAMIC, TEMPORARY_DYNAMIC
            DefType::Predefined => 1,
            DefType::PermanentDynamic => 2,
            DefType::TemporaryDynamic => 3,
        }),
        4 => Int(if d.defsopt_exclusive { 4 } else { 2 }), // MQIA_DEF_INPUT_OPEN_OPTION
        12 => Int(i32::from(d.usage == Usage::Xmitq)),     // MQIA_USAGE
        16 => Int(i32::from(d.msg_dlv_seq == MsgDlvSq::Fifo)), // MQIA_MSG_DELIVERY_SEQUENCE
        23 => Int(i32::from(d.share)),                     // MQIA_SHAREABILITY
        17 | 18 => Int(0), // MQIA_OPEN_INPUT_COUNT / OUTPUT_COUNT: not counted per queue
        188 => Int(match d.def_read_ahead() {
            // MQIA_DEF_READ_AHEAD: MQREADA_*
            ReadAhead::No => 0,
            ReadAhead::Yes => 1,
            ReadAhead::Disabled => 2,
        }),
        190 => Int(d.prop_ctl().number() as i32), // MQIA_PROPERTY_CONTROL: MQPROP_*
        2002 => Chars(d.target.clone(), 48),      // MQCA_BASE_OBJECT_NAME
        2016 => Chars(d.name.clone(), 48),        // MQCA_Q_NAME
        2013 => Chars(d.descr.clone(), 64),       // MQCA_Q_DESC
        2019 => Chars(d.backout_requeue_q.clone(), 48), // MQCA_BACKOUT_REQ_Q_NAME
        _ => return Err(ReasonCode::SelectorError.code()),
    })
}

/// MQQT_*: local 1, model 2, alias 3, remote 6.
fn qtype(d: &sealmq_engine::objects::QueueDef) -> i32 {
    use sealmq_engine::objects::QType;
    match d.qtype {
        QType::Local => 1,
        QType::Model => 2,
        QType::Alias => 3,
        QType::Remote => 6,
    }
}

//! The options of the MQI calls and what a get returns (SPEC §3).

use crate::md::{Md, Message, MsgId, NONE_ID};
use sealmq_types::ReasonCode;
use std::time::Duration;

/// MQOPEN options.
#[derive(Debug, Clone, Copy, Default)]
pub struct OpenOptions {
    pub input_shared: bool,
    pub input_exclusive: bool,
    /// MQOO_INPUT_AS_Q_DEF: shared or exclusive as the queue's DEFSOPT says.
    pub input_as_q_def: bool,
    pub browse: bool,
    pub output: bool,
    pub inquire: bool,
    pub set: bool,
    /// MQOO_READ_AHEAD (`Some(true)`), MQOO_NO_READ_AHEAD (`Some(false)`), or as the queue's
    /// DEFREADA says (`None`, MQOO_READ_AHEAD_AS_Q_DEF): non-persistent messages sent ahead
    /// of a client application's gets. The client library does it; the engine ignores it.
    pub read_ahead: Option<bool>,
}

impl OpenOptions {
    pub fn output() -> Self {
        OpenOptions {
            output: true,
            ..Default::default()
        }
    }
    pub fn input() -> Self {
        OpenOptions {
            input_shared: true,
            ..Default::default()
        }
    }
    pub fn browse() -> Self {
        OpenOptions {
            browse: true,
            ..Default::default()
        }
    }
    /// Opened for input in any mode.
    pub fn input_any(&self) -> bool {
        self.input_shared || self.input_exclusive || self.input_as_q_def
    }
}

/// MQPUT options.
#[derive(Debug, Clone, Copy, Default)]
pub struct PutOptions {
    pub syncpoint: bool,
    /// Keep the descriptor's identity and origin context (message id, user, application,
    /// put time) as given: a channel delivering a message from another queue manager.
    pub pass_context: bool,
}

/// Browse position of a get.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Browse {
    #[default]
    None,
    First,
    Next,
    /// Get (destructively) the message under the browse cursor.
    MsgUnderCursor,
}

/// MQGET options.
#[derive(Debug, Clone, Default)]
pub struct GetOptions {
    pub syncpoint: bool,
    /// MQGMO_SYNCPOINT_IF_PERSISTENT: in the unit of work when the message got is persistent
    /// (IBM's JMS client gets so), outside it otherwise.
    pub syncpoint_if_persistent: bool,
    /// Wait this long for a message; `None` returns 2033 at once.
    pub wait: Option<Duration>,
    pub browse: Browse,
    pub matching: Match,
    /// Return as much as fits in `buffer` with 2079 instead of failing with 2080.
    pub accept_truncated: bool,
    /// Largest payload the caller takes; `None` is unlimited.
    pub buffer: Option<usize>,
    /// Bytes a front end puts before the payload of the message got (MQ's client protocol:
    /// the MQRFH2 carrying its properties), counted against `buffer` with the payload.
    pub header_len: Option<HeaderLen>,
}

/// How many bytes a front end puts before a message's payload, given its descriptor.
#[derive(Clone, Copy)]
pub struct HeaderLen(pub fn(&crate::Md) -> usize);

impl std::fmt::Debug for HeaderLen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("HeaderLen")
    }
}

/// A message returned by get.
#[derive(Debug, Clone)]
pub struct Got {
    pub md: Md,
    pub payload: Vec<u8>,
    /// Full length of the message data (more than `payload` when truncated).
    pub data_len: usize,
    /// 2079 when the payload was truncated and accepted.
    pub warning: Option<ReasonCode>,
    /// The message's position on its queue (stable across restarts): a channel names the
    /// messages of an in-doubt batch by it.
    pub seq: u64,
}

/// What a get matches on.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Match {
    pub msg_id: Option<MsgId>,
    pub correl_id: Option<MsgId>,
    /// Only messages this selector selects (a JMS selector; AMQP links use it).
    pub selector: Option<std::sync::Arc<crate::selector::Selector>>,
}

impl Match {
    pub fn accepts(&self, m: &Message) -> bool {
        self.msg_id.is_none_or(|id| id == m.md.msg_id)
            && self.correl_id.is_none_or(|id| id == m.md.correl_id)
            && self.selector.as_ref().is_none_or(|s| s.matches(&m.md))
    }

    /// Whether only the ids are matched (the queue's fingerprints decide alone).
    pub fn is_any(&self) -> bool {
        self.msg_id.is_none() && self.correl_id.is_none() && self.selector.is_none()
    }

    pub fn is_specific(&self) -> bool {
        self.msg_id.is_some_and(|i| i != NONE_ID) || self.correl_id.is_some_and(|i| i != NONE_ID)
    }
}

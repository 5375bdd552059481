//! The native protocol's requests and answers as the MQI takes and gives them: a request's
//! open and get option bits as [`OpenOptions`] and [`GetOptions`], an [`MqError`] as the
//! error answer. A leaf shared by the session, interception and the event loop.

use sealmq_engine::mqi::{Browse, GetOptions, OpenOptions};
use sealmq_engine::{Match, MqError};
use sealmq_wire::{GetReq, Response, open};
use std::time::Duration;

/// An MQ error as the answer the client gets: its reason code and detail.
pub(crate) fn err(e: MqError) -> Response {
    Response::Err {
        reason: e.reason.code(),
        detail: e.detail,
    }
}

pub(crate) fn open_options(bits: u8) -> OpenOptions {
    OpenOptions {
        input_shared: bits & open::INPUT_SHARED != 0,
        input_exclusive: bits & open::INPUT_EXCLUSIVE != 0,
        input_as_q_def: bits & open::INPUT_AS_Q_DEF != 0,
        browse: bits & open::BROWSE != 0,
        output: bits & open::OUTPUT != 0,
        inquire: bits & open::INQUIRE != 0,
        set: bits & open::SET != 0,
        read_ahead: None,
    }
}

pub(crate) fn get_options(g: &GetReq) -> GetOptions {
    GetOptions {
        syncpoint: g.syncpoint,
        syncpoint_if_persistent: g.if_persistent,
        wait: (g.wait_ms >= 0).then(|| Duration::from_millis(g.wait_ms as u64)),
        browse: match g.browse {
            1 => Browse::First,
            2 => Browse::Next,
            3 => Browse::MsgUnderCursor,
            _ => Browse::None,
        },
        matching: Match {
            msg_id: g.match_msg_id,
            correl_id: g.match_correl_id,
            selector: None,
        },
        accept_truncated: g.accept_truncated,
        buffer: (g.buffer >= 0).then_some(g.buffer as usize),
        header_len: None,
    }
}

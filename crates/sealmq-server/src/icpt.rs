//! QM-side interception (SPEC §5.5.2): on a SVRCONN channel with INTERCEPT(YES) the queue
//! manager protects puts and unprotects gets with its own identity for the applications on it.

use crate::wiremap::{err, get_options};
use sealmq_engine::mqi::Browse;
use sealmq_engine::{Connection, Hobj, intercept};
use sealmq_types::ReasonCode;
use sealmq_wire::{GetReq, Response};

/// A message an intercepted get took on the event loop once its wait ended (no thread held
/// meanwhile), for the blocking pool to unprotect.
pub(crate) struct Taken {
    pub(crate) got: sealmq_engine::Got,
    /// Taken in a unit of work of the get's own (the application's get was outside one).
    pub(crate) own_uow: bool,
}

/// How an intercepted get takes its message: whole (the application's buffer applies to the
/// unprotected message), and under syncpoint when the application's get is outside one, so
/// that a message failing its checks moves to the error queue in the same unit of work. With
/// whether that unit of work is the get's own.
pub(crate) fn take_options(conn: &Connection, g: &GetReq) -> (sealmq_engine::GetOptions, bool) {
    let gmo = get_options(g);
    let browsing = matches!(gmo.browse, Browse::First | Browse::Next);
    let own_uow = !browsing && !gmo.syncpoint && !conn.in_uow();
    let opts = sealmq_engine::GetOptions {
        syncpoint: gmo.syncpoint || own_uow,
        buffer: None,
        ..gmo
    };
    (opts, own_uow)
}

pub(crate) fn security(detail: String) -> Response {
    Response::Err {
        reason: ReasonCode::SecurityError.code(),
        detail,
    }
}

/// A get under `policy` (the queue's, or for a subscription's handle its topic's),
/// unprotected for the application with the queue manager's `protector`; a message failing a
/// check moves to the error queue in the same unit of work and the application gets 2063.
/// `taken`: the message, already taken on the event loop after the get's wait
/// (`take_options`).
pub(crate) fn unprotected_get(
    conn: &Connection,
    protector: Option<&sealmq_protect::Protector>,
    h: &Hobj,
    g: &GetReq,
    policy: &sealmq_protect::Policy,
    taken: Taken,
) -> Response {
    if protector.is_none() {
        if taken.own_uow {
            let _ = conn.backout();
        }
        return security(
            "the queue manager has no keystore to protect with (<QM dir>/keystore)".into(),
        );
    }
    let gmo = get_options(g);
    let browsing = matches!(gmo.browse, Browse::First | Browse::Next);
    let Taken { got, own_uow } = taken;
    let syncpoint = gmo.syncpoint || own_uow;
    let unprotected =
        intercept::unprotect(conn, protector, policy, &h.name, &got, browsing, syncpoint);
    match unprotected {
        Ok((md, mut payload)) => {
            let data_len = payload.len();
            let mut warning = 0;
            if let Some(b) = gmo.buffer
                && b < data_len
            {
                if !gmo.accept_truncated && !browsing {
                    if own_uow {
                        let _ = conn.backout();
                    }
                    return Response::Err {
                        reason: ReasonCode::TruncatedMsgFailed.code(),
                        detail: format!(
                            "message of {data_len} bytes does not fit the {b}-byte buffer"
                        ),
                    };
                }
                payload.truncate(b);
                warning = ReasonCode::TruncatedMsgAccepted.code();
            }
            if own_uow && let Err(e) = conn.commit() {
                return err(e);
            }
            Response::Got {
                md,
                payload,
                data_len: data_len as u64,
                warning,
            }
        }
        Err(e) => {
            if own_uow {
                let _ = conn.commit();
            }
            security(e)
        }
    }
}

/// Messages each handle got lately (digests of message id and stored bytes), and those its
/// consumers were pushed: a protection error may be reported only for one of them.
#[derive(Default)]
pub(crate) struct RecentGets {
    got: std::collections::HashMap<u32, std::collections::VecDeque<[u8; 32]>>,
    pushed: std::collections::HashMap<u32, std::collections::VecDeque<[u8; 32]>>,
    /// Handles of subscriptions to protected topics (their queue has no policy of its own).
    pub(crate) protected: std::collections::HashSet<u32>,
}

/// How many gets of a handle are remembered for a protection-error report.
const RECENT: usize = 8;
/// How many pushed messages of a handle are (a consumer's window holds at most MAXUMSGS,
/// 10,000 by default; the client reports a failure when the application reaches it).
const PUSHED: usize = 10_000;

fn remember(q: &mut std::collections::VecDeque<[u8; 32]>, most: usize, d: [u8; 32]) {
    if q.len() == most {
        q.pop_front();
    }
    q.push_back(d);
}

fn got_digest(msg_id: &[u8], payload: &[u8]) -> [u8; 32] {
    let mut c = aws_lc_rs::digest::Context::new(&aws_lc_rs::digest::SHA256);
    c.update(msg_id);
    c.update(payload);
    let mut out = [0u8; 32];
    out.copy_from_slice(c.finish().as_ref());
    out
}

impl RecentGets {
    pub(crate) fn got(&mut self, hobj: u32, msg_id: &[u8], payload: &[u8]) {
        remember(
            self.got.entry(hobj).or_default(),
            RECENT,
            got_digest(msg_id, payload),
        );
    }

    /// A consumer of `hobj` was pushed this message (destructively).
    pub(crate) fn pushed(&mut self, hobj: u32, msg_id: &[u8], payload: &[u8]) {
        remember(
            self.pushed.entry(hobj).or_default(),
            PUSHED,
            got_digest(msg_id, payload),
        );
    }

    /// Whether `hobj` got or was pushed this message (and forgets it: one report each).
    pub(crate) fn take(&mut self, hobj: u32, msg_id: &[u8], payload: &[u8]) -> bool {
        let d = got_digest(msg_id, payload);
        [&mut self.got, &mut self.pushed].into_iter().any(|m| {
            m.get_mut(&hobj)
                .and_then(|q| q.iter().position(|x| *x == d).map(|i| q.remove(i)))
                .is_some()
        })
    }

    pub(crate) fn closed(&mut self, hobj: u32) {
        self.got.remove(&hobj);
        self.pushed.remove(&hobj);
        self.protected.remove(&hobj);
    }
}

//! The administrator's requests on the local socket: MQSC and stop, for the queue manager's
//! own OS user only, each on a thread of its own so that a full blocking pool never holds up
//! the one who can fix it.

use super::Session;
use crate::signal_stop;
use sealmq_types::ReasonCode;
use sealmq_wire::Response;
use std::sync::atomic::Ordering;

impl Session {
    /// MQSC, for the queue manager's own user.
    pub(super) async fn mqsc(&mut self, script: String, json: bool) -> Response {
        if !self.admin {
            return Response::Err {
                reason: ReasonCode::NotAuthorized.code(),
                detail: "MQSC needs the queue manager's own user".into(),
            };
        }
        let qm = self.qm.clone();
        self.on_own_thread(move || {
            let r = sealmq_mqsc::run(&qm, &script);
            let failed = r.iter().filter(|x| !x.ok).count() as u32;
            let text = if json {
                sealmq_mqsc::render_json(&r)
            } else {
                sealmq_mqsc::render_text(&r)
            };
            Response::Mqsc { text, failed }
        })
        .await
    }

    /// Stops the queue manager, for its own user.
    pub(super) async fn stop(&mut self, immediate: bool) -> Response {
        if !self.admin {
            return Response::Err {
                reason: ReasonCode::NotAuthorized.code(),
                detail: "stopping the queue manager needs its own user".into(),
            };
        }
        let (ctx, qm) = (self.ctx.clone(), self.qm.clone());
        self.on_own_thread(move || {
            ctx.immediate.store(immediate, Ordering::Relaxed);
            signal_stop(&ctx.stop, &ctx.stopped, &qm);
            Response::Ok
        })
        .await
    }
}

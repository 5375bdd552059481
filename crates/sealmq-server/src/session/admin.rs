//! Administrative requests, each on a thread of its own so that a full blocking pool never
//! holds up the one who can fix it: MQSC — for the queue manager's own OS user on the local
//! socket without checks, for anyone else (a client through a SVRCONN channel, MQ's
//! `runmqsc -c`) with the authority MQ's command server asks of them (sealmq-mqsc's `authz`)
//! — and stop, for the queue manager's own user only.

use super::Session;
use crate::signal_stop;
use sealmq_types::ReasonCode;
use sealmq_wire::Response;
use std::sync::atomic::Ordering;

impl Session {
    /// MQSC: each command's answer as runmqsc prints it (the caller echoes and counts).
    pub(super) async fn mqsc(&mut self, script: String, json: bool) -> Response {
        let qm = self.qm.clone();
        let principal = (!self.admin).then(|| self.conn.user.clone());
        let remote = principal.is_some();
        let job = move || {
            let r = sealmq_mqsc::run_as(&qm, &script, principal.as_deref());
            if let Some(p) = &principal {
                for x in r
                    .iter()
                    .filter(|x| !x.command.to_ascii_uppercase().starts_with("DIS"))
                {
                    tracing::info!(principal = %p, ok = x.ok, "remote MQSC: {}", x.command);
                }
            }
            let failed = r.iter().filter(|x| !x.ok).count() as u32;
            let text = if json {
                sealmq_mqsc::render_json(&r)
            } else {
                r.iter().map(sealmq_mqsc::render_reply).collect()
            };
            Response::Mqsc { text, failed }
        };
        // The administrator's lifeline is a thread of its own; anyone else's MQSC waits on
        // the blocking pool like any request, so a flood of it cannot make threads.
        if remote {
            self.on_pool(job).await
        } else {
            self.on_own_thread(job).await
        }
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

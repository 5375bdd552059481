//! MQGET and browse on the event loop: a get that waits awaits its queue's wake-up, its
//! deadline, or its client going away, holding no thread; a persistent get outside a unit of
//! work awaits its log force. Under QM-side interception the message is taken here and
//! unprotected on the blocking pool (a message failing its checks moves to the error queue in
//! the same unit of work).

use super::client::{Client, Seen};
use super::{Session, no_handle};
use crate::icpt::{RecentGets, Taken, take_options, unprotected_get};
use crate::wiremap::{err, get_options};
use sealmq_engine::mqi::GetStep;
use sealmq_engine::{Connection, GetOptions, Got, Hobj, MqResult, QueueManager};
use sealmq_types::ReasonCode;
use sealmq_types::sync::lock;
use sealmq_wire::{GetReq, Response};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::AsyncRead;

/// How long a get waits before it also watches its client's socket.
const WATCH_AFTER: Duration = Duration::from_millis(500);

impl Session {
    /// MQGET (unprotected under QM-side interception when the queue has a policy).
    pub(super) async fn get<R: AsyncRead + Unpin>(
        &mut self,
        g: &GetReq,
        client: &mut Client<'_, R>,
    ) -> Response {
        let Some(h) = self.handles.get(&g.hobj).cloned() else {
            if self.publishers.contains_key(&g.hobj) {
                return Response::Err {
                    reason: ReasonCode::NotOpenForInput.code(),
                    detail: format!("handle {} is a topic opened to publish", g.hobj),
                };
            }
            return no_handle(g.hobj);
        };
        if self.intercept
            && let Some(policy) = self.intercept_policy(g.hobj)
        {
            return self.get_unprotected(h, g, policy, client).await;
        }
        let mut gmo = get_options(g);
        gmo.header_len = self.get_header;
        let got = wait_get(&self.qm, &self.conn, &h, gmo, client).await;
        got_answer(&self.qm, &self.recent, &h, g, got)
    }

    /// An intercepted get: the message taken here as `icpt::take_options` says (whole, in a
    /// unit of work), then unprotected on the pool.
    async fn get_unprotected<R: AsyncRead + Unpin>(
        &mut self,
        h: Arc<Hobj>,
        g: &GetReq,
        policy: sealmq_protect::Policy,
        client: &mut Client<'_, R>,
    ) -> Response {
        let (opts, own_uow) = take_options(&self.conn, g);
        let got = match wait_get(&self.qm, &self.conn, &h, opts, client).await {
            Ok(got) => got,
            Err(e) => return err(e),
        };
        // Accounting reports the size of the message as stored.
        self.stored = Some(got.payload.len() as u64);
        let taken = Taken { got, own_uow };
        let (conn, protector, g) = (self.conn.clone(), self.protector.clone(), g.clone());
        let answered = self
            .pool(move || unprotected_get(&conn, protector.as_deref(), &h, &g, &policy, taken))
            .await;
        match answered {
            Ok(r) => r,
            Err(refused) => {
                // The message goes back to its queue.
                if own_uow {
                    let _ = self.conn.backout();
                }
                refused
            }
        }
    }
}

/// The answer to a get through `h`; what it took from a queue with a policy is remembered
/// (a protection error may be reported for it).
fn got_answer(
    qm: &QueueManager,
    recent: &std::sync::Mutex<RecentGets>,
    h: &Hobj,
    g: &GetReq,
    got: MqResult<Got>,
) -> Response {
    let got = match got {
        Ok(got) => got,
        Err(e) => return err(e),
    };
    // Protection errors are reported for queues with a policy only, and subscription queues
    // of protected topics: the digest is taken there, not on every get.
    if g.browse == 0 || g.browse == 3 {
        if qm.has_policy(&h.name) {
            lock(recent).got(g.hobj, &got.md.msg_id, &got.payload);
        } else if h.name.starts_with(sealmq_engine::subs::MANAGED_PREFIX) {
            let mut r = lock(recent);
            if r.protected.contains(&g.hobj) {
                r.got(g.hobj, &got.md.msg_id, &got.payload);
            }
        }
    }
    Response::Got {
        md: got.md,
        payload: got.payload,
        data_len: got.data_len as u64,
        warning: got.warning.map(|w| w.code()).unwrap_or(0),
    }
}

/// MQGET with the engine's options on the event loop: a wait holds no thread, and ends early
/// when the client goes away (its socket closes or fails) or the connection is ended.
async fn wait_get<R: AsyncRead + Unpin>(
    qm: &QueueManager,
    conn: &Connection,
    h: &Hobj,
    gmo: GetOptions,
    client: &mut Client<'_, R>,
) -> MqResult<Got> {
    let deadline = gmo.wait.map(|w| Instant::now() + w);
    let mut step = conn.get_step(h, &gmo, deadline);
    loop {
        step = match step {
            GetStep::Done(r) => return r,
            GetStep::Durable(d) => {
                let waited = qm.durable(d.ticket()).await;
                return conn.get_durable(d, waited);
            }
            GetStep::Wait(w) => {
                let until = deadline.unwrap_or_else(Instant::now);
                let (woken, gone) = wait_once(&w, until, client).await;
                match conn.get_resume(h, &gmo, w, woken, deadline, gone) {
                    Some(next) => next,
                    None => conn.get_step(h, &gmo, deadline),
                }
            }
        };
    }
}

/// One wait of a get, until `until`: (woken, the client gone). Most waits end within
/// milliseconds (request/reply): the socket is watched only once a wait has lasted
/// [`WATCH_AFTER`], which saves each short wait a read and a registration; a client gone is
/// still noticed within that.
async fn wait_once<R: AsyncRead + Unpin>(
    w: &sealmq_engine::mqi::GetWait,
    until: Instant,
    client: &mut Client<'_, R>,
) -> (bool, bool) {
    let watch_from = (Instant::now() + WATCH_AFTER).min(until);
    let ended = client.ended();
    loop {
        let watch = !client.sent_more() && Instant::now() >= watch_from;
        let wake_at = if watch { until } else { watch_from };
        tokio::select! {
            _ = w.waiter.woken() => return (true, false),
            _ = tokio::time::sleep_until(wake_at.into()) => {
                if Instant::now() >= until {
                    return (false, false);
                }
            }
            seen = client.seen(), if watch => {
                if let Seen::Gone = seen {
                    return (false, true);
                }
            }
            _ = ended.notified(), if !watch => return (false, true),
        }
    }
}

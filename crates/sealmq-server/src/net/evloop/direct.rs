//! Puts and gets served on the event loop itself: the engine's steps never block, a
//! persistent one awaits its log force, and a get that waits awaits its queue's wake-up, its
//! deadline, or its client going away — no thread is held meanwhile.

use crate::session::dispatch::no_handle;
use crate::session::{Flow, Session};
use crate::wiremap::{err, get_options};
use sealmq_engine::intercept::check_as_sent;
use sealmq_engine::mqi::{GetStep, PutOptions, PutStep};
use sealmq_engine::{Connection, Hobj, QueueManager};
use sealmq_types::ReasonCode;
use sealmq_wire::{GetReq, Request, Response};
use std::time::Instant;
use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};
use tokio::sync::Notify;

/// Serves `req` here when it is a put, a get, a publication, a heartbeat or a credit the event
/// loop can serve; `Err` hands it back for the blocking pool (everything else, puts and gets
/// that QM-side interception protects, publications that may wait for the log).
#[allow(clippy::result_large_err)] // the request handed back, moved once
pub(crate) async fn try_serve<R: AsyncRead + Unpin>(
    s: &mut Session,
    req: Request,
    rd: &mut BufReader<R>,
    ended: &Notify,
) -> Result<Flow, Request> {
    match &req {
        // Neither answers behind the pushers (the id is for those that do); the caller
        // writes a heartbeat's answer with its id.
        Request::Heartbeat | Request::Credit { .. } => return Ok(s.request(0, req)),
        Request::Put { hobj, .. } if !s.intercept && !s.publishers.contains_key(hobj) => {}
        Request::Put1 { .. } if !s.intercept => {}
        Request::Get(g) if !intercepted(s, g.hobj) && !s.publishers.contains_key(&g.hobj) => {}
        // An intercepted get that may wait: the wait is here, holding no thread; the pool
        // unprotects the message taken once it ends.
        Request::Get(g) if g.wait_ms > 0 && s.handles.contains_key(&g.hobj) => {
            return wait_then_unprotect(s, req, rd, ended).await;
        }
        // A publication that cannot wait for the log (non-persistent, or under syncpoint):
        // its copies are put here, as a put is.
        Request::Publish {
            topic,
            md,
            syncpoint,
            retain,
            ..
        } if s.version >= sealmq_wire::V_PUBSUB
            && !s.intercept
            && !s.conn.publish_may_block(topic, md, *syncpoint, *retain) => {}
        _ => return Err(req),
    }
    if s.qm.is_quiescing() {
        return Ok(Flow::Reply(Response::Err {
            reason: ReasonCode::QMgrQuiescing.code(),
            detail: format!("queue manager {} is ending", s.qm.name()),
        }));
    }
    let call = s.begin(&req);
    let resp = match req {
        Request::Put {
            hobj,
            mut md,
            payload,
            syncpoint,
        } => match s.handles.get(&hobj) {
            // Plaintext to a protected queue is refused (issue 42), as on the blocking pool.
            Some(h) => match check_as_sent(&s.qm, &h.name, &payload) {
                Err(detail) => crate::icpt::security(detail),
                Ok(()) => {
                    let step = s.conn.put_step(h, &mut md, &payload, pmo(syncpoint));
                    put_done(&s.qm, &s.conn, step, md).await
                }
            },
            None => no_handle(hobj),
        },
        Request::Put1 {
            name,
            mut md,
            payload,
            syncpoint,
        } => match check_as_sent(&s.qm, &name, &payload) {
            Err(detail) => crate::icpt::security(detail),
            Ok(()) => {
                let step = s.conn.put1_step(&name, &mut md, &payload, pmo(syncpoint));
                put_done(&s.qm, &s.conn, step, md).await
            }
        },
        Request::Publish {
            topic,
            md,
            payload,
            syncpoint,
            retain,
        } => {
            let icpt = crate::icpt::Icpt {
                on: false,
                protector: None,
                stored: std::cell::Cell::new(None),
            };
            s.publish(&topic, md, payload, syncpoint, retain, &icpt)
        }
        Request::Get(g) => match s.handles.get(&g.hobj).cloned() {
            Some(h) => {
                let got = get(&s.qm, &s.conn, &h, &g, rd, ended).await;
                crate::session::dispatch::got_answer(&s.qm, &s.recent, &h, &g, got)
            }
            None => no_handle(g.hobj),
        },
        other => return Err(other),
    };
    Ok(Flow::Reply(s.answered(call, resp, None)))
}

/// Gets through `hobj` are protected or unprotected by the queue manager (QM-side
/// interception): the blocking pool serves them.
fn intercepted(s: &Session, hobj: u32) -> bool {
    s.intercept && s.intercept_policy(hobj).is_some()
}

fn pmo(syncpoint: bool) -> PutOptions {
    PutOptions {
        syncpoint,
        ..Default::default()
    }
}

async fn put_done(
    qm: &QueueManager,
    conn: &Connection,
    step: sealmq_engine::MqResult<PutStep>,
    md: sealmq_engine::Md,
) -> Response {
    let done = match step {
        Ok(PutStep::Done) => Ok(()),
        Ok(PutStep::Durable(d)) => {
            let waited = qm.durable(d.ticket()).await;
            conn.put_durable(d, waited)
        }
        Err(e) => Err(e),
    };
    match done {
        Ok(()) => Response::Put { md },
        Err(e) => err(e),
    }
}

/// An intercepted get with a wait (QM-side interception): waits on the loop and takes the
/// message as `icpt::take_options` says; `Err` hands the request, with the message taken,
/// to the blocking pool, which unprotects it. A get that ends without a message is answered
/// here.
#[allow(clippy::result_large_err)] // the request handed back, moved once
async fn wait_then_unprotect<R: AsyncRead + Unpin>(
    s: &mut Session,
    req: Request,
    rd: &mut BufReader<R>,
    ended: &Notify,
) -> Result<Flow, Request> {
    let Request::Get(g) = &req else {
        return Err(req);
    };
    let Some(h) = s.handles.get(&g.hobj).cloned() else {
        return Err(req);
    };
    if s.qm.is_quiescing() {
        return Err(req);
    }
    let call = s.begin(&req);
    let (opts, own_uow) = crate::icpt::take_options(&s.conn, g);
    match get_with(&s.qm, &s.conn, &h, opts, rd, ended).await {
        Ok(got) => {
            s.taken = Some(crate::icpt::Taken {
                hobj: g.hobj,
                got,
                own_uow,
            });
            Err(req)
        }
        Err(e) => Ok(Flow::Reply(s.answered(call, err(e), None))),
    }
}

/// How long a get waits before it also watches its client's socket.
const WATCH_AFTER: std::time::Duration = std::time::Duration::from_millis(500);

/// MQGET on the event loop: a wait holds no thread, and ends early when the client goes
/// away (its socket closes or fails) or the connection is ended.
async fn get<R: AsyncRead + Unpin>(
    qm: &QueueManager,
    conn: &Connection,
    h: &Hobj,
    g: &GetReq,
    rd: &mut BufReader<R>,
    ended: &Notify,
) -> sealmq_engine::MqResult<sealmq_engine::Got> {
    get_with(qm, conn, h, get_options(g), rd, ended).await
}

/// As `get`, with the engine's get options.
async fn get_with<R: AsyncRead + Unpin>(
    qm: &QueueManager,
    conn: &Connection,
    h: &Hobj,
    gmo: sealmq_engine::GetOptions,
    rd: &mut BufReader<R>,
    ended: &Notify,
) -> sealmq_engine::MqResult<sealmq_engine::Got> {
    let deadline = gmo.wait.map(|w| Instant::now() + w);
    let mut step = conn.get_step(h, &gmo, deadline);
    // The client sent more while its get waits: it is alive, and its bytes stay buffered.
    let mut more = false;
    loop {
        step = match step {
            GetStep::Done(r) => return r,
            GetStep::Durable(d) => {
                let waited = qm.durable(d.ticket()).await;
                return conn.get_durable(d, waited);
            }
            GetStep::Wait(w) => {
                let until = deadline.unwrap_or_else(Instant::now);
                // Most waits end within milliseconds (request/reply): the socket is watched
                // only once a wait has lasted WATCH_AFTER, which saves each short wait a read
                // and a registration; a client gone is still noticed within that.
                let watch_from = (Instant::now() + WATCH_AFTER).min(until);
                let (woken, gone) = loop {
                    let watch = !more && Instant::now() >= watch_from;
                    tokio::select! {
                        _ = w.waiter.woken() => break (true, false),
                        _ = tokio::time::sleep_until(if watch { until } else { watch_from }.into()) => {
                            if Instant::now() >= until {
                                break (false, false);
                            }
                        }
                        r = rd.fill_buf(), if watch => match r {
                            Ok([]) | Err(_) => break (false, true),
                            Ok(_) => more = true,
                        },
                        _ = ended.notified() => break (false, true),
                    }
                };
                match conn.get_resume(h, &gmo, w, woken, deadline, gone) {
                    Some(next) => next,
                    None => conn.get_step(h, &gmo, deadline),
                }
            }
        };
    }
}

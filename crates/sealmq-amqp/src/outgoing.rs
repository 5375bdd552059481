//! A link the application receives on: each message is got from the source queue in a unit of
//! work of its own and sent; the application's outcome settles it: accepted commits, released
//! and modified back out (the backout count is the next delivery-count), rejected moves the
//! message to the dead-letter queue. A source with `distribution-mode copy` browses instead
//! (copies, nothing to settle); a JMS selector filter gets only the messages it selects.
//!
//! Deliveries are pipelined within the link's credit: up to [`MAX_UNSETTLED`] messages are out
//! at once, each got by a unit-of-work twin of the connection of its own, so outcomes may
//! come in any order. A delivery accepted in a transaction has its unit of work joined into
//! the transaction's when it commits (`txn`), and comes back `modified` when it rolls back. A
//! link or connection that ends backs out what it had not settled.
//!
//! With interception (INTERCEPT(YES)) a message from a queue with a policy is unprotected by
//! the queue manager before it is sent; one that fails a check is moved to the protection
//! error queue in its unit of work (a browse leaves it) and never sent.

use crate::link::{
    Ctx, Intercept, Opened, address, amqp_error, blocking, lock, open_queue, selector_of,
};
use crate::mapping;
use crate::status::timed;
use fe2o3_amqp::Sender;
use fe2o3_amqp::types::definitions::{AmqpError, Error};
use fe2o3_amqp::types::messaging::{DistributionMode, Outcome};
use sealmq_engine::mqi::{Browse, GetOptions, Got, OpenOptions};
use sealmq_engine::{Connection, Match, MqError, intercept};
use sealmq_types::ReasonCode;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A get that may wait (`gmo.wait`), holding no thread while it does: the engine's steps,
/// awaiting the queue's wake-up or the deadline (an idle receiving link costs its task, not
/// a thread of the blocking pool).
///
/// Woken with no room left on the connection ([`crate::held`]), it takes nothing: the wake-up
/// goes to the queue's next waiter, and the link waits for room before it gets again.
async fn get_waiting(
    c: &Connection,
    h: &sealmq_engine::Hobj,
    gmo: &GetOptions,
    held: &crate::held::Held,
) -> sealmq_engine::MqResult<Got> {
    use sealmq_engine::mqi::GetStep;
    let deadline = gmo.wait.map(|w| std::time::Instant::now() + w);
    let mut step = c.get_step(h, gmo, deadline);
    loop {
        step = match step {
            GetStep::Done(r) => return r,
            GetStep::Durable(d) => {
                let waited = c.qm().durable(d.ticket()).await;
                return c.get_durable(d, waited);
            }
            GetStep::Wait(w) => {
                let until = deadline.unwrap_or_else(std::time::Instant::now);
                let woken = tokio::select! {
                    _ = w.waiter.woken() => true,
                    _ = tokio::time::sleep_until(until.into()) => false,
                };
                if woken && !held.room() {
                    drop(w);
                    return Err(MqError::new(
                        ReasonCode::NoMsgAvailable,
                        "no room on the connection".to_string(),
                    ));
                }
                match c.get_resume(h, gmo, w, woken, deadline, false) {
                    Some(next) => next,
                    None => c.get_step(h, gmo, deadline),
                }
            }
        };
    }
}

/// How long a get waits before it looks whether the link is still there.
const GET_WAIT: Duration = Duration::from_millis(500);
/// Deliveries one link has out and not settled at most (each holds a unit of work).
pub const MAX_UNSETTLED: u32 = 256;
/// How long a link that ends waits for its deliveries' outcomes before backing them out.
const DRAIN_WAIT: Duration = Duration::from_secs(10);

/// What the application said of a delivery.
enum Settle {
    Commit,
    Backout,
    DeadLetter,
}

/// Twins with no unit of work open, for the next deliveries.
type Pool = Arc<Mutex<Vec<Arc<Connection>>>>;

/// Serves a receiving link until it or its connection ends; `topic` is the topic string of
/// a subscription's link (under interception its messages are unprotected under the topic's
/// policy).
pub async fn outgoing(ctx: Ctx, mut s: Sender, opened: Option<Opened>, topic: Option<String>) {
    let (name, h, copy, gmo) = match link_source(&ctx, &s, opened).await {
        Ok(x) => x,
        Err(refused) => {
            if let Some(e) = refused {
                let _ = s.close_with_error(e).await;
            }
            return;
        }
    };
    let _shown = ctx
        .client
        .link(format!("{}:{name}", if copy { "BROWSE" } else { "GET" }));
    let link = Link {
        link_name: s.name().to_string(),
        ctx,
        name,
        h,
        copy,
        gmo,
        topic,
        pool: Pool::default(),
        unsettled: Arc::new(tokio::sync::Semaphore::new(MAX_UNSETTLED as usize)),
    };
    let failed = link.run(&mut s).await;
    let _ = match failed {
        Some(e) => s.close_with_error(e).await,
        None => s.close().await,
    };
    // Outcomes still to come end with the link; what they held is backed out.
    let all = link.unsettled.acquire_many(MAX_UNSETTLED);
    let _ = tokio::time::timeout(DRAIN_WAIT, all).await;
    let (c, h) = (link.ctx.mq.clone(), link.h.clone());
    blocking(move || c.close(&h)).await;
}

/// The link's source opened: the queue's name and handle, whether the link browses copies,
/// and the get options of its deliveries; `Err`: the error to close the link with, if any.
async fn link_source(
    ctx: &Ctx,
    s: &Sender,
    opened: Option<Opened>,
) -> Result<(String, Arc<sealmq_engine::Hobj>, bool, GetOptions), Option<Error>> {
    // A filter is never ignored: delivering what it would have left out is worse than
    // refusing the link. A JMS selector is applied; any other filter refuses the link.
    let selector = match s.source().as_ref().and_then(|src| src.filter.as_ref()) {
        None => None,
        Some(f) => match selector_of(f) {
            Ok(sel) => sel.map(Arc::new),
            Err(e) => return Err(Some(e)),
        },
    };
    let source = address(s.source().as_ref().and_then(|t| t.address.as_ref()));
    let copy = s
        .source()
        .as_ref()
        .is_some_and(|src| src.distribution_mode == Some(DistributionMode::Copy));
    // A queue opened when the attach was read; else this link's own temporary queue.
    let made = match opened {
        Some(_) => None,
        None => source.as_ref().and_then(|n| lock(&ctx.dynamic).remove(n)),
    };
    let opts = if copy {
        OpenOptions::browse()
    } else {
        OpenOptions::input()
    };
    let missing = (AmqpError::InvalidField, "the source must name a queue");
    let opened = match (opened, made, source) {
        (Some(o), _, _) => Ok(o),
        (None, Some(h), Some(n)) => Ok((n, Arc::new(h))),
        (None, _, None) => Err(Some(crate::link::no_queue(&ctx.refused, missing))),
        (None, _, source) => open_queue(&ctx.mq, source, opts, missing).await,
    };
    let (name, h) = opened?;
    // A topic subscriber asks for copies (JMS does): its subscription's queue is its own, and
    // its messages are taken, not browsed.
    let copy = copy && h.opened_for_browse();
    let gmo = GetOptions {
        syncpoint: !copy,
        wait: Some(GET_WAIT),
        browse: if copy { Browse::Next } else { Browse::None },
        matching: Match {
            selector,
            ..Match::default()
        },
        ..Default::default()
    };
    Ok((name, h, copy, gmo))
}

/// A receiving link being served.
struct Link {
    ctx: Ctx,
    /// The source queue's name and handle.
    name: String,
    h: Arc<sealmq_engine::Hobj>,
    /// Browsing copies (nothing to settle).
    copy: bool,
    gmo: GetOptions,
    topic: Option<String>,
    link_name: String,
    pool: Pool,
    /// One permit per delivery out and not settled.
    unsettled: Arc<tokio::sync::Semaphore>,
}

/// What one get of the link came to.
#[allow(clippy::large_enum_variant)] // one at a time, moved once
enum Next {
    Got(Got),
    /// Nothing within the wait (or no room on the connection): get again.
    Empty,
    /// The link went while the get waited (what it took went back).
    Detached,
    Failed(Error),
}

impl Link {
    /// Delivers until the link ends; the error to close it with, if any.
    async fn run(&self, s: &mut Sender) -> Option<Error> {
        loop {
            let Ok(permit) = self.unsettled.clone().acquire_owned().await else {
                return None;
            };
            // Room on the connection for one more message (crate::held): a client that does
            // not settle stops its links getting.
            if !self.ctx.held.room() {
                tokio::select! {
                    _ = self.ctx.held.wait_room() => {}
                    _ = s.on_detach() => return None,
                }
            }
            let twin = lock(&self.pool)
                .pop()
                .unwrap_or_else(|| Arc::new(self.ctx.mq.uow_twin()));
            let got = match self.next(s, &twin).await {
                Next::Got(g) => g,
                Next::Empty => {
                    lock(&self.pool).push(twin);
                    continue;
                }
                Next::Detached => return None,
                Next::Failed(e) => return Some(e),
            };
            let size = got.payload.len() as u64;
            let plain = match &self.ctx.icpt {
                Some(i) => tokio::task::block_in_place(|| {
                    unprotect(
                        &twin,
                        i,
                        &self.h.name,
                        self.topic.as_deref(),
                        &got,
                        self.copy,
                    )
                }),
                None => Some((got.md.clone(), got.payload.clone())),
            };
            let Some((md, payload)) = plain else {
                self.ctx.held.give(size);
                // Moved to the protection error queue in this unit of work (a copy: left).
                if !self.copy {
                    let t = twin.clone();
                    blocking(move || t.commit()).await;
                }
                lock(&self.pool).push(twin);
                continue;
            };
            let msg = mapping::to_amqp(&md, payload);
            let fut = match s.send_batchable(msg).await {
                Ok(f) => {
                    self.ctx.client.sent();
                    f
                }
                Err(_) => {
                    self.ctx.held.give(size);
                    blocking(move || twin.backout()).await;
                    return None;
                }
            };
            if self.copy {
                // A copy has nothing to settle in the queue manager; the library holds it
                // until the client settles it (or the link ends).
                lock(&self.pool).push(twin);
                let held = self.ctx.held.clone();
                tokio::spawn(async move {
                    let _ = fut.await;
                    held.give(size);
                });
                continue;
            }
            // Held where a transaction committing it can take its unit of work.
            let key = (self.link_name.clone(), fut.delivery_tag().to_vec());
            self.ctx.txns.hold(key.clone(), twin.clone());
            let outcome = async move {
                let o = fut.await;
                match o {
                    Ok(Outcome::Accepted(_)) => Settle::Commit,
                    Ok(Outcome::Rejected(_)) => Settle::DeadLetter,
                    _ => Settle::Backout,
                }
            };
            self.settle_later(outcome, key, twin, got, permit);
        }
    }

    /// One get: a message there now is got in place (no hand-over to another thread); an
    /// empty queue is waited for here, holding no thread, while the link's end is watched.
    async fn next(&self, s: &mut Sender, twin: &Arc<Connection>) -> Next {
        let now = GetOptions {
            wait: None,
            ..self.gmo.clone()
        };
        let tally = self.ctx.tally.as_ref();
        // In place, as the native Session gets: a get under syncpoint or a browse appends to
        // the log at most, never waits for it (block_in_place here handed this worker's core
        // to another thread per delivery).
        let (got, cpu) = timed(tally, || twin.get(&self.h, now));
        let got = match got {
            Err(e) if e.reason == ReasonCode::NoMsgAvailable => None,
            other => Some(other),
        };
        let (t, h2, g) = (twin.clone(), self.h.clone(), self.gmo.clone());
        let held = self.ctx.held.clone();
        let job = async move {
            match got {
                Some(r) => r,
                None => get_waiting(&t, &h2, &g, &held).await,
            }
        };
        tokio::pin!(job);
        let got = tokio::select! {
            r = &mut job => r,
            _ = s.on_detach() => {
                // The link went while a get waited: whatever it took goes back.
                let _ = job.await;
                let t = twin.clone();
                blocking(move || t.backout()).await;
                return Next::Detached;
            }
        };
        match got {
            Ok(g) => {
                // Accounting counts the messages got (not the empty polls of a waiting link).
                if let Some(t) = tally {
                    let op = if self.copy { "browse" } else { "get" };
                    t.call(op, true, g.payload.len() as u64, cpu);
                }
                self.ctx.held.take(g.payload.len() as u64);
                Next::Got(g)
            }
            Err(e) if e.reason == ReasonCode::NoMsgAvailable => Next::Empty,
            Err(e) => Next::Failed(amqp_error(&e)),
        }
    }

    /// Settles the delivery's unit of work once the application's outcome arrives, on a
    /// task of its own (outcomes may come in any order); its permit and the bytes it held
    /// are given back then.
    fn settle_later(
        &self,
        outcome: impl std::future::Future<Output = Settle> + Send + 'static,
        key: (String, Vec<u8>),
        twin: Arc<Connection>,
        got: Got,
        permit: tokio::sync::OwnedSemaphorePermit,
    ) {
        let (pool, q) = (self.pool.clone(), self.name.clone());
        let (tally, txns) = (self.ctx.tally.clone(), self.ctx.txns.clone());
        let held = self.ctx.held.clone();
        tokio::spawn(async move {
            let how = outcome.await;
            txns.release(&key);
            let size = got.payload.len() as u64;
            // A commit appends its record in place and awaits the log's force holding no
            // thread (the deliveries a disposition settles share forces); a backout or a move
            // to the dead-letter queue of a persistent message runs on a blocking thread.
            let persistent = got.md.persistence == sealmq_engine::Persistence::Persistent;
            match how {
                Settle::Commit => {
                    if let Err(e) = crate::status::commit(&twin, tally.as_ref()).await {
                        tracing::warn!(queue = %q, "AMQP delivery not settled: {e}");
                    }
                }
                how if persistent => {
                    let t = twin.clone();
                    blocking(move || settle(&t, how, &q, &got, tally.as_ref())).await;
                }
                how => tokio::task::block_in_place(|| settle(&twin, how, &q, &got, tally.as_ref())),
            }
            lock(&pool).push(twin);
            held.give(size);
            drop(permit);
        });
    }
}

/// What the application gets of a message under interception: unprotected when its queue (or
/// a subscription's topic) has a policy; `None` when it failed a check (moved aside unless
/// `copy`; logged).
fn unprotect(
    twin: &Connection,
    icpt: &Intercept,
    queue: &str,
    topic: Option<&str>,
    got: &Got,
    copy: bool,
) -> Option<(sealmq_engine::Md, Vec<u8>)> {
    let Some(policy) = intercept::get_policy(twin.qm(), queue, topic) else {
        return Some((got.md.clone(), got.payload.clone()));
    };
    match intercept::unprotect(twin, icpt.0.as_deref(), &policy, queue, got, copy, !copy) {
        Ok(x) => Some(x),
        Err(e) => {
            tracing::error!(
                %queue,
                "MQRC 2063 SECURITY_ERROR: a message failed its protection check and was not \
                 delivered to the AMQP application{}: {e}",
                if copy { "" } else { " (moved to the protection error queue)" }
            );
            None
        }
    }
}

/// Settles one delivery's unit of work as the application's outcome says.
fn settle(
    t: &Connection,
    how: Settle,
    q: &str,
    got: &Got,
    tally: Option<&Arc<dyn crate::status::Tally>>,
) {
    let op = match how {
        Settle::Backout => "backout",
        Settle::Commit | Settle::DeadLetter => "commit",
    };
    let (r, cpu) = timed(tally, || match how {
        Settle::Commit => t.commit(),
        Settle::Backout => t.backout(),
        Settle::DeadLetter => {
            // The dead-letter header's reason: the consumer refused it.
            let why = MqError::new(
                ReasonCode::BackedOut,
                "rejected by the AMQP application".to_string(),
            );
            match t.put_dead_letter(&why, q, "", &got.md, &got.payload, true) {
                Ok(()) => t.commit(),
                Err(e) => {
                    // No dead-letter queue: the message stays where it was.
                    let _ = t.backout();
                    Err(e)
                }
            }
        }
    });
    if let Some(tl) = tally {
        tl.call(op, r.is_ok(), 0, cpu);
    }
    if let Err(e) = r {
        tracing::warn!(queue = %q, "AMQP delivery not settled: {e}");
    }
}

//! A link the application sends on: each transfer is put to the target queue and accepted
//! once the put is done — durable, for a durable message. A put that fails is rejected with
//! the reason. With interception, a message to a queue with a policy is protected by the queue
//! manager first; one it cannot protect is rejected with 2063.
//!
//! A transfer a transaction posted reaches the link when the transaction commits; it is put
//! into the transaction's unit of work (`txn`), which the discharge commits.
//!
//! Group commit: the puts go into a unit of work (of a twin of the connection) that is
//! committed while the next transfers are put into another, so one log force makes a whole
//! batch durable (an application with many transfers unsettled, such as a JMS producer sending
//! asynchronously, gets them accepted together). A lone message is committed at once.

use crate::link::{
    Ctx, Intercept, Opened, address, amqp_error, blocking, open_queue, security_error,
};
use crate::mapping;
use crate::status::timed;
use fe2o3_amqp::Receiver;
use fe2o3_amqp::link::delivery::{Delivery, DeliveryInfo};
use fe2o3_amqp::types::definitions::{AmqpError, Error};
use fe2o3_amqp::types::messaging::Body;
use fe2o3_amqp::types::primitives::Value;
use sealmq_engine::mqi::{OpenOptions, PutOptions};
use sealmq_engine::{Connection, Hobj, Md, intercept};
use sealmq_types::sync::lock;
use std::sync::Arc;

/// Transfers one unit of work holds at most before the next must wait for a commit.
const MAX_BATCH: usize = 256;

/// Puts made and not yet committed: their unit of work's connection and deliveries.
struct Batch {
    twin: Arc<Connection>,
    deliveries: Vec<DeliveryInfo>,
    /// Whether a put in it was persistent (its commit forces the log).
    persistent: bool,
}

impl Batch {
    fn new(mq: &Connection) -> Batch {
        Batch {
            twin: Arc::new(mq.uow_twin()),
            deliveries: Vec::new(),
            persistent: false,
        }
    }
}

type Committed = (Batch, Result<(), sealmq_engine::MqError>);

/// Serves a sending link until it or its connection ends.
pub async fn incoming(ctx: Ctx, mut r: Receiver, opened: Option<Opened>) {
    let target = address(r.target().as_ref().and_then(|t| t.address.as_ref()));
    // A dynamic target's temporary queue lives while its creating handle (the anchor) is
    // open: this link keeps it and puts through a handle of its own.
    let anchor = target.as_ref().and_then(|n| lock(&ctx.dynamic).remove(n));
    let missing = (AmqpError::InvalidField, "the target must name a queue");
    let opened = match opened {
        Some(o) => Ok(o),
        None if target.is_none() => Err(Some(crate::link::no_queue(&ctx.refused, missing))),
        None => open_queue(&ctx.mq, target, OpenOptions::output(), missing).await,
    };
    let (h, _shown) = match opened {
        Ok((name, h)) => (h, ctx.client.link(format!("PUT:{name}"))),
        Err(e) => {
            if let Some(e) = e {
                let _ = r.close_with_error(e).await;
            }
            if let Some(a) = anchor {
                let c = ctx.mq.clone();
                blocking(move || c.close(&a)).await;
            }
            return;
        }
    };
    // A temporary queue lives only as long as its link: a durable message sent to one is
    // kept as non-persistent (MQ refuses persistent messages on temporary queues).
    let temporary = ctx
        .mq
        .qm()
        .queue_def(&h.resolved)
        .is_ok_and(|d| d.def_type == sealmq_engine::objects::DefType::TemporaryDynamic);
    let link = Putting { ctx, h, temporary };
    link.run(&mut r).await;
    let _ = r.close().await;
    let (c, h) = (link.ctx.mq.clone(), link.h.clone());
    blocking(move || {
        let _ = c.close(&h);
        if let Some(a) = anchor {
            let _ = c.close(&a);
        }
    })
    .await;
}

/// A sending link being served: the queue it puts to.
struct Putting {
    ctx: Ctx,
    h: Arc<Hobj>,
    /// A temporary dynamic queue: messages are kept non-persistent.
    temporary: bool,
}

impl Putting {
    /// Puts what arrives, in batches of up to [`MAX_BATCH`] committed together (one
    /// committing while the next fills), until the link ends; then commits what is left.
    async fn run(&self, r: &mut Receiver) {
        let mut open = Batch::new(&self.ctx.mq);
        let mut inflight: Option<tokio::task::JoinHandle<Committed>> = None;
        loop {
            let room = open.deliveries.len() < MAX_BATCH;
            tokio::select! {
                d = r.recv::<Body<Value>>(), if room => {
                    let Ok(d) = d else { break };
                    self.transfer(r, d, &mut open).await;
                }
                done = async {
                    match inflight.as_mut() {
                        Some(j) => j.await,
                        None => std::future::pending().await,
                    }
                } => {
                    inflight = None;
                    if let Ok(done) = done {
                        settle(r, &self.ctx.client, done).await;
                    }
                }
            }
            if inflight.is_none() && !open.deliveries.is_empty() {
                let batch = std::mem::replace(&mut open, Batch::new(&self.ctx.mq));
                inflight = self.commit_batch(r, batch).await;
            }
        }
        // The link ended: what was put is committed (a transfer the application settled
        // itself expects no outcome), what was in flight finishes.
        if let Some(j) = inflight.take()
            && let Ok(done) = j.await
        {
            settle(r, &self.ctx.client, done).await;
        }
        if !open.deliveries.is_empty() {
            let res = crate::status::commit(&open.twin, self.ctx.tally.as_ref()).await;
            settle(r, &self.ctx.client, (open, res)).await;
        }
    }

    /// One transfer put: into the open batch, or into the unit of work of the transaction
    /// that posted it (settled by its discharge); a transfer that cannot be read or put is
    /// rejected.
    async fn transfer(&self, r: &Receiver, d: Delivery<Body<Value>>, open: &mut Batch) {
        let ctx = &self.ctx;
        let posted = ctx.txns.posted(*d.delivery_id());
        let (mut md, payload) = match mapping::to_mq(d.message()) {
            Ok(x) => x,
            Err(why) => {
                if let Some(p) = posted {
                    p.done(Err(format!("a transfer could not be read: {why}")));
                }
                let e = Error::new(AmqpError::DecodeError, why, None);
                let _ = r.reject(&d, e).await;
                return;
            }
        };
        if self.temporary {
            md.persistence = sealmq_engine::Persistence::NotPersistent;
        }
        let uow = posted.as_ref().map_or(&open.twin, |p| &p.uow);
        // A put under syncpoint appends to the log at most, never waits for it: in place, as
        // the native Session puts. Protecting under interception is cryptography (a signature
        // can take a millisecond): this worker's other tasks move to another thread for it.
        let mut put_now = || {
            timed(ctx.tally.as_ref(), || {
                put(uow, &self.h, ctx.icpt.as_ref(), &mut md, &payload)
            })
        };
        let (put, cpu) = match ctx.icpt {
            Some(_) => tokio::task::block_in_place(put_now),
            None => put_now(),
        };
        if let Some(t) = &ctx.tally {
            t.call("put", put.is_ok(), *put.as_ref().unwrap_or(&0), cpu);
        }
        if let Some(p) = posted {
            // Settled by the transaction's discharge: nothing to wait for here.
            match put {
                Ok(_) => {
                    p.done(Ok(()));
                    ctx.client.received();
                    let _ = r.accept(&d).await;
                }
                Err(e) => {
                    let why = e.description.as_deref().unwrap_or("?");
                    p.done(Err(format!("a transfer could not be put: {why}")));
                    let _ = r.reject(&d, e).await;
                }
            }
            return;
        }
        match put {
            Ok(_) => {
                open.persistent |= md.persistence == sealmq_engine::Persistence::Persistent;
                open.deliveries.push(DeliveryInfo::from(&d));
            }
            Err(e) => {
                let _ = r.reject(&d, e).await;
            }
        }
    }

    /// A full or idle batch committed: one with persistent messages awaits the log's force
    /// on a task of its own while the next batch fills (its handle is returned); one without
    /// commits in place, holding no thread apart, and is settled now.
    async fn commit_batch(
        &self,
        r: &Receiver,
        batch: Batch,
    ) -> Option<tokio::task::JoinHandle<Committed>> {
        if batch.persistent {
            let t = self.ctx.tally.clone();
            return Some(tokio::spawn(async move {
                let r = crate::status::commit(&batch.twin, t.as_ref()).await;
                (batch, r)
            }));
        }
        // Nothing to force: the commit applies the puts in place.
        let res = crate::status::commit(&batch.twin, self.ctx.tally.as_ref()).await;
        settle(r, &self.ctx.client, (batch, res)).await;
        None
    }
}

/// One put into the twin's unit of work, protected first under interception; the size of
/// the message as stored.
fn put(
    twin: &Connection,
    h: &Hobj,
    icpt: Option<&Intercept>,
    md: &mut Md,
    payload: &[u8],
) -> Result<u64, Error> {
    let stored = match icpt {
        Some(Intercept(p)) => intercept::protect(twin.qm(), p.as_deref(), &h.name, md, payload)
            .map_err(security_error)?,
        // Sent as it is: plaintext to a protected queue is refused (issue 42).
        None => {
            intercept::check_as_sent(twin.qm(), &h.name, payload).map_err(security_error)?;
            None
        }
    };
    let bytes = stored.as_deref().unwrap_or(payload);
    let opts = PutOptions {
        syncpoint: true,
        ..Default::default()
    };
    twin.put(h, md, bytes, opts)
        .map(|_| bytes.len() as u64)
        .map_err(|e| amqp_error(&e))
}

/// Accepts a committed batch's transfers, or rejects them all when the commit failed.
async fn settle(r: &Receiver, client: &crate::status::Client, (batch, res): Committed) {
    match res {
        Ok(()) => {
            for _ in &batch.deliveries {
                client.received();
            }
            let _ = r.accept_all(batch.deliveries).await;
        }
        Err(e) => {
            tracing::warn!("AMQP puts backed out, commit failed: {e}");
            let e = amqp_error(&e);
            for d in batch.deliveries {
                let _ = r.reject(d, e.clone()).await;
            }
        }
    }
}

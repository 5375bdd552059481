//! One AMQP session of an admitted connection. Each attach is read first: a topic, a queue the
//! principal may not open (or that does not exist), a bad selector are refused before the
//! attach is answered, and a topic subscriber's subscription is made before it is; then each
//! link is served on a task of its own (incoming, outgoing, publishing, unsubscribing) until
//! the session ends, when its temporary queues no link took are closed.

use crate::link::{self, Opened};
use crate::subscribe::SubEnd;
use fe2o3_amqp::acceptor::{LinkAcceptor, LinkEndpoint, ListenerSessionHandle};
use fe2o3_amqp::types::definitions::{AmqpError, Error};
use fe2o3_amqp::types::messaging::{Source, Target};
use fe2o3_amqp::types::performatives::Attach;
use sealmq_engine::Connection;
use sealmq_types::sync::lock;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The session's link acceptor, its dynamic-terminus hooks boxed so that it can be named.
type SourceFn = Box<dyn Fn(Source) -> Option<Source> + Send + Sync>;
type TargetFn = Box<dyn Fn(Target) -> Option<Target> + Send + Sync>;
type Acceptor = LinkAcceptor<SourceFn, TargetFn>;

/// How long a refused link waits for the client's detach before it goes.
const REFUSED_LINK: std::time::Duration = std::time::Duration::from_secs(5);

/// Links a connection has now (MAXHANDS bounds them: each holds, or may hold, a handle);
/// one counted link gives its place back when its task ends.
#[derive(Clone, Default)]
pub(crate) struct Links(Arc<AtomicUsize>);

pub(crate) struct LinkPlace(Arc<AtomicUsize>);

impl Drop for LinkPlace {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Links {
    pub(crate) fn take(&self, max: usize) -> Option<LinkPlace> {
        self.0
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < max).then_some(n + 1)
            })
            .ok()
            .map(|_| LinkPlace(self.0.clone()))
    }
}

/// What every session of one connection shares.
#[derive(Clone)]
pub(crate) struct Shared {
    /// The connection to the queue manager, as the connection's principal.
    pub(crate) mq: Arc<Connection>,
    /// QM-side interception (INTERCEPT(YES)).
    pub(crate) icpt: Option<link::Intercept>,
    /// Its figures for DISPLAY CHSTATUS.
    pub(crate) client: Arc<crate::status::Client>,
    /// MQI accounting, when ACCTMQI is ON.
    pub(crate) tally: Option<Arc<dyn crate::status::Tally>>,
    /// Transfers held for transactions not yet discharged.
    pub(crate) held: Arc<crate::held::Held>,
    /// Messages still arriving, all links together.
    pub(crate) partial: Arc<fe2o3_amqp::partial::PartialBudget>,
    /// The channel's MAXMSGL (0: as large as the queue manager allows).
    pub(crate) max: u64,
    /// MAXHANDS: links the connection may have at once.
    pub(crate) max_links: usize,
    pub(crate) links_open: Links,
    /// TMPMODEL and TMPQPRFX: the model and name prefix of temporary queues.
    pub(crate) model: String,
    pub(crate) prefix: String,
}

/// Serves `session` until it ends.
pub(crate) async fn serve(
    mut session: ListenerSessionHandle,
    sh: Shared,
    txns: Arc<crate::txn::Txns>,
) {
    let dynamic = link::Dynamic::default();
    let temp_topics = crate::temptopic::Pending::default();
    let refused = link::Refused::default();
    let links = link_acceptor(&sh, (&dynamic, &refused), &temp_topics);
    let ctx = link::Ctx {
        mq: sh.mq.clone(),
        dynamic: dynamic.clone(),
        refused,
        icpt: sh.icpt.clone(),
        client: sh.client.clone(),
        tally: sh.tally.clone(),
        txns,
        held: sh.held.clone(),
    };
    while let Some(attach) = session.next_incoming_attach().await {
        let Some(place) = sh.links_open.take(sh.max_links) else {
            // Past handle-max (which was advertised): the session ends with the error.
            let e = Error::new(
                AmqpError::ResourceLimitExceeded,
                format!(
                    "a connection has at most MAXHANDS({}) links: detach some",
                    sh.max_links
                ),
                None,
            );
            let _ = session.end_with_error(e).await;
            break;
        };
        let go_on = attach_one(&mut session, &links, &ctx, &temp_topics, attach, place).await;
        // A temporary topic made for this attach and not taken by its link (the attach
        // failed) goes at once: none piles up in a session that keeps failing them.
        lock(&temp_topics).clear();
        if !go_on {
            break;
        }
    }
    lock(&temp_topics).clear();
    // Temporary queues no link took go with the session.
    let left: Vec<_> = lock(&dynamic).drain().map(|(_, h)| h).collect();
    for h in left {
        let _ = sh.mq.close(&h);
    }
    let _ = session.on_end().await;
}

/// The session's link acceptor: dynamic sources and targets made temporary queues or topics,
/// MAXMSGL and the connection's budget of messages arriving.
fn link_acceptor(
    sh: &Shared,
    (dynamic, refused): (&link::Dynamic, &link::Refused),
    temp_topics: &crate::temptopic::Pending,
) -> Acceptor {
    let temps = link::Temporaries {
        mq: sh.mq.clone(),
        dynamic: dynamic.clone(),
        refused: refused.clone(),
        model: sh.model.clone(),
        prefix: sh.prefix.clone(),
    };
    let t2 = temps.clone();
    let (made_topics, mq2) = (temp_topics.clone(), sh.mq.clone());
    let mut links = LinkAcceptor::builder()
        // A dynamic source for a temporary topic was refused with its attach.
        .on_dynamic_source(Box::new(move |mut src: Source| {
            if !crate::temptopic::is_temporary(src.capabilities.as_ref()) {
                src.address = Some(temps.make()?);
            }
            Some(src)
        }) as SourceFn)
        // A dynamic target: a temporary topic (JMS createTemporaryTopic) or queue.
        .on_dynamic_target(Box::new(move |mut t: Target| {
            if crate::temptopic::is_temporary(t.capabilities.as_ref()) {
                let made = crate::temptopic::TempTopic::make(&mq2);
                t.address = Some(made.topic.clone());
                lock(&made_topics).insert(made.topic.clone(), made);
            } else {
                t.address = Some(t2.make()?);
            }
            Some(t)
        }) as TargetFn);
    if sh.max > 0 {
        links = links.max_message_size(sh.max);
    }
    links.partial_budget(sh.partial.clone()).build()
}

/// What an attach was found to be before it is answered.
struct Checked {
    /// The queue opened for it, or the error to refuse it with.
    early: Result<Option<Opened>, Error>,
    /// A non-durable subscription made for it (it ends with the link).
    sub_end: Option<SubEnd>,
    sub_topic: Option<String>,
    /// The topic a sending link publishes to.
    publish_to: Option<String>,
    /// A JMS unsubscribe: the durable subscription its link names.
    unsub: Option<crate::unsub::Lookup>,
}

/// Reads an attach before it is answered: refusals, the queue opened, the subscription made.
async fn check(mq: &Arc<Connection>, attach: &mut Attach, client_id: &str) -> Checked {
    let mut sub_end = None;
    let mut sub_topic = None;
    let publish_to = link::attach_publish_topic(attach);
    // A JMS unsubscribe looks its durable subscription up by the link's name (after any
    // removal of that subscription still under way).
    crate::unsub::settled(mq, attach, client_id).await;
    let unsub = crate::unsub::lookup(mq, attach, client_id);
    let early = match link::attach_topic(mq, attach) {
        _ if unsub.is_some() => Ok(None),
        Some(e) => Err(e),
        None if publish_to.is_some() => {
            let t = publish_to.clone().unwrap_or_default();
            link::publish_early(mq, &t).map(|()| None)
        }
        None => match crate::subscribe::subscribe_early(mq, attach, client_id).await {
            Ok(Some((opened, end, topic))) => {
                sub_end = end;
                sub_topic = Some(topic);
                Ok(Some(opened))
            }
            Ok(None) => link::open_early(mq, attach).await,
            Err(e) => Err(e),
        },
    };
    if early.is_err() {
        // Answered with no terminus (AMQP's refusal of an attach), the error follows in the
        // detach: clients report it where the link is made (JMS: at createProducer or
        // createConsumer).
        match attach.role {
            fe2o3_amqp::types::definitions::Role::Sender => attach.target = None,
            fe2o3_amqp::types::definitions::Role::Receiver => attach.source = None,
        }
    }
    Checked {
        early,
        sub_end,
        sub_topic,
        publish_to,
        unsub,
    }
}

/// Checks, answers and serves one attach; `false` once the session has stopped.
async fn attach_one(
    session: &mut ListenerSessionHandle,
    links: &Acceptor,
    ctx: &link::Ctx,
    temp_topics: &crate::temptopic::Pending,
    mut attach: Attach,
    place: LinkPlace,
) -> bool {
    let c = check(&ctx.mq, &mut attach, ctx.client.client_id()).await;
    let accepted = match (links.accept_incoming_attach(attach, session).await, c.unsub) {
        (Ok(LinkEndpoint::Sender(s)), Some(l)) => {
            let mq = ctx.mq.clone();
            tokio::spawn(async move {
                crate::unsub::serve(mq, s, l).await;
                drop(place);
            });
            return true;
        }
        (a, _) => a,
    };
    // A refused link waits a while for the client's detach, then goes; its queue handle (if
    // one was opened) is closed as it drops.
    match (accepted, c.early) {
        (Ok(LinkEndpoint::Receiver(r)), Err(e)) => {
            tokio::spawn(async move {
                let _ = tokio::time::timeout(REFUSED_LINK, r.close_with_error(e)).await;
                drop(place);
            });
        }
        (Ok(LinkEndpoint::Sender(s)), Err(e)) => {
            tokio::spawn(async move {
                let _ = tokio::time::timeout(REFUSED_LINK, s.close_with_error(e)).await;
                drop(place);
            });
        }
        (Ok(LinkEndpoint::Receiver(r)), Ok(opened)) => {
            let ctx = ctx.clone();
            // The link a temporary topic was made for keeps it while it lives.
            let made = r
                .target()
                .as_ref()
                .and_then(|t| t.address.as_ref())
                .and_then(|a| lock(temp_topics).remove(a));
            let publish_to = c.publish_to;
            tokio::spawn(async move {
                use crate::publish::incoming_topic;
                match (publish_to, made) {
                    (Some(t), m) => incoming_topic(ctx, r, t, m).await,
                    (None, Some(m)) => {
                        let t = m.topic.clone();
                        incoming_topic(ctx, r, t, Some(m)).await
                    }
                    (None, None) => crate::incoming::incoming(ctx, r, opened).await,
                }
                drop(place);
            });
        }
        (Ok(LinkEndpoint::Sender(s)), Ok(opened)) => {
            let ctx = ctx.clone();
            let (sub_topic, sub_end) = (c.sub_topic, c.sub_end);
            tokio::spawn(async move {
                crate::outgoing::outgoing(ctx, s, opened, sub_topic).await;
                // A non-durable subscription ends with its link, after its queue was closed.
                drop(sub_end);
                drop(place);
            });
        }
        (Err(fe2o3_amqp::acceptor::error::AcceptorAttachError::SessionStopped(_)), _) => {
            return false;
        }
        // One attach that could not be taken (a second link of one name and one direction in
        // the session): the session serves its other links.
        (Err(e), _) => tracing::warn!("an AMQP link was not attached: {e:?}"),
    }
    true
}

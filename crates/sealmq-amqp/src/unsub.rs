//! JMS `Session.unsubscribe(name)` over AMQP, as Qpid JMS does it: a link the application
//! receives on, named as the durable subscription and attached with no source. The attach is
//! answered with the subscription's source when the principal has one of that name (else with
//! none: the client reports that no such subscription exists), and the client's closing detach
//! (`closed=true`) removes it with its managed queue.
//!
//! The session answers that detach as it arrives, before the removal is done, so the client's
//! `unsubscribe` may return first: a removal is noted as pending from the lookup on, and the
//! next attach of a link for that subscription (another lookup, a subscriber made again) waits
//! for it to be done.

use crate::link::blocking;
use fe2o3_amqp::link::DetachError;
use fe2o3_amqp::types::definitions::{AmqpError, Error, Role};
use fe2o3_amqp::types::messaging::{Source, TargetArchetype, TerminusDurability};
use fe2o3_amqp::types::performatives::Attach;
use fe2o3_amqp::types::primitives::Symbol;
use sealmq_engine::Connection;
use sealmq_types::sync::lock;
use std::collections::HashSet;
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Duration;
use tokio::sync::Notify;

/// Removals looked up and not yet done, as `<queue manager>/<subscription>`.
static PENDING: LazyLock<Mutex<HashSet<String>>> = LazyLock::new(Default::default);
/// Signalled when a pending removal is done (or dropped).
static DONE: LazyLock<Notify> = LazyLock::new(Notify::new);

fn key(mq: &Connection, name: &str) -> String {
    format!("{}/{name}", mq.qm().name())
}

/// Waits (up to the detach wait) while a removal of the subscription a receiving link's
/// attach names is pending.
pub async fn settled(mq: &Connection, attach: &Attach, container: &str) {
    if attach.role != Role::Receiver {
        return;
    }
    let k = key(
        mq,
        &crate::subscribe::subscription_name(container, &attach.name),
    );
    let _ = tokio::time::timeout(DETACH_WAIT, async {
        loop {
            let done = DONE.notified();
            tokio::pin!(done);
            done.as_mut().enable();
            if !lock(&PENDING).contains(&k) {
                return;
            }
            done.await;
        }
    })
    .await;
}

/// How long a lookup link waits for the client's detach.
const DETACH_WAIT: Duration = Duration::from_secs(30);

/// A lookup of a durable subscription by the name of the link that asks.
pub struct Lookup {
    /// The subscription's name: `<container id>:<link name>`.
    pub name: String,
    pub found: bool,
}

/// Whether `attach` looks a durable subscription up (a receiving link with a target and no
/// source); when it does, the answer's source is the subscription's when the principal owns
/// one of that name.
pub fn lookup(mq: &Connection, attach: &mut Attach, container: &str) -> Option<Lookup> {
    if attach.role != Role::Receiver
        || attach.source.is_some()
        || !matches!(attach.target.as_deref(), Some(TargetArchetype::Target(_)))
    {
        return None;
    }
    let name = crate::subscribe::subscription_name(container, &attach.name);
    let sub = mq.qm().sub(&name).filter(|s| {
        s.durable && (s.subuser == mq.user || mq.qm().admin() == Some(mq.user.as_str()))
    });
    let found = sub.is_some();
    if let Some(s) = sub {
        lock(&PENDING).insert(key(mq, &name));
        let topic: Symbol = Symbol::from("topic");
        let src = Source::builder()
            .address(format!("topic://{}", s.topicstr))
            .durable(TerminusDurability::UnsettledState)
            .capabilities(vec![topic])
            .build();
        attach.source = Some(Box::new(src));
    }
    Some(Lookup { name, found })
}

/// Waits for the client's detach of a lookup link: a closing one removes the subscription
/// found (the client's unsubscribe); any other leaves it. A lookup that found nothing is
/// closed with `amqp:not-found` (JMS: InvalidDestinationException).
pub async fn serve(mq: Arc<Connection>, mut link: fe2o3_amqp::Sender, l: Lookup) {
    if !l.found {
        let e = Error::new(
            AmqpError::NotFound,
            format!(
                "MQRC 2428 NO_SUBSCRIPTION: no durable subscription '{}' of this client",
                l.name
            ),
            None,
        );
        let _ = tokio::time::timeout(DETACH_WAIT, link.close_with_error(e)).await;
        return;
    }
    let detach = tokio::time::timeout(DETACH_WAIT, link.on_detach()).await;
    let k = key(&mq, &l.name);
    if matches!(detach, Ok(DetachError::ClosedByRemote)) {
        let name = l.name.clone();
        match blocking(move || mq.unsubscribe(&name)).await {
            Some(Ok(())) => tracing::info!("subscription {} removed by its JMS client", l.name),
            Some(Err(e)) => tracing::warn!("subscription {} was not removed: {e}", l.name),
            None => {}
        }
    }
    lock(&PENDING).remove(&k);
    DONE.notify_waiters();
    let _ = link.close().await;
}

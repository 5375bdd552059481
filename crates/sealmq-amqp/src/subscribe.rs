//! A link the application receives on from a topic (a JMS subscriber, issue 28): its
//! subscription is made before the attach is answered, and ends with the link unless durable.
//!
//! JMS's four kinds map as Qpid JMS attaches them:
//! - non-durable (`createConsumer(topic)`): a subscription the queue manager names, ended
//!   when the link is done;
//! - durable (`createDurableSubscriber`, `createSharedDurableConsumer`): named as
//!   [`subscription_name`] says, kept until `Session.unsubscribe` (crate::unsub);
//! - shared non-durable (`createSharedConsumer(topic, name)`, source capability `shared`,
//!   durability none): one subscription named `<scope>:<name>|volatile`, which every link of
//!   that name takes messages from, each message once; it ends when its last link does.
//!   JMS keeps shared non-durable and durable subscriptions' names apart: so does the
//!   `|volatile` ending (no durable subscription's name has a `|`).

use crate::link::{amqp_error, blocking, filters_of, lock};
use fe2o3_amqp::types::definitions::{AmqpError, Error};
use sealmq_engine::mqi::SubOpen;
use sealmq_engine::{Connection, MqError};
use sealmq_types::ReasonCode;
use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};

/// The links taking messages from each shared non-durable subscription, as
/// `<queue manager>/<subscription>`. Making, joining and leaving one happen under this lock,
/// so that a link arriving as the last one leaves either joins it or makes it anew.
static SHARED: LazyLock<Mutex<HashMap<String, usize>>> = LazyLock::new(Default::default);

fn shared_key(mq: &Connection, name: &str) -> String {
    format!("{}/{name}", mq.qm().name())
}

/// What of a link's subscription ends with the link: a non-durable one, or a link's place in a
/// shared non-durable one (the last link to leave ends it); for a durable one, only its
/// skipping the connection's own publications (JMS noLocal).
pub struct SubEnd {
    pub mq: Arc<Connection>,
    pub name: String,
    pub shared: bool,
    /// The subscription outlives the link (durable): only `not_own` is undone.
    pub durable: bool,
    /// It skips the connection's own publications (JMS noLocal) while the link lives.
    pub not_own: bool,
}

impl Drop for SubEnd {
    fn drop(&mut self) {
        let (mq, name, shared) = (self.mq.clone(), std::mem::take(&mut self.name), self.shared);
        let (durable, not_own) = (self.durable, self.not_own);
        let end = move || {
            if durable {
                if not_own {
                    mq.not_own_pubs(&name, false);
                }
                return;
            }
            let unsubscribe = |mq: &Connection| {
                if let Err(e) = mq.unsubscribe(&name) {
                    tracing::warn!("subscription {name} of an AMQP link did not end: {e}");
                }
            };
            if !shared {
                return unsubscribe(&mq);
            }
            let mut links = lock(&SHARED);
            let key = shared_key(&mq, &name);
            match links.get_mut(&key) {
                Some(n) if *n > 1 => *n -= 1,
                _ => {
                    links.remove(&key);
                    unsubscribe(&mq);
                }
            }
        };
        match tokio::runtime::Handle::try_current() {
            Ok(rt) => {
                rt.spawn_blocking(end);
            }
            Err(_) => end(),
        }
    }
}

/// The subscription a JMS durable subscriber's link names (Qpid JMS's link names, `|` ending
/// the subscription's name): `<container id>:<name>` — `name`, or `name|2`, `name|3` for the
/// further consumers of a shared one — or `global:<name>` for a shared subscription of
/// connections without a client id (`name|global`, `name|global2`, ...), which all share it.
/// Shared non-durable links (`name|volatile1`, `name|global-volatile1`) name theirs the same
/// way, ended `|volatile` by [`subscribe_early`].
pub fn subscription_name(container: &str, link: &str) -> String {
    match link.split_once('|') {
        Some((name, rest)) if rest.starts_with("global") => format!("global:{name}"),
        Some((name, _)) => format!("{container}:{name}"),
        None => format!("{container}:{link}"),
    }
}

/// A link the application receives on from a topic (a JMS subscriber): its subscription made
/// or joined before the attach is answered (2035 without SUB, as a refusal of the attach), as
/// the module's head says. `Ok(None)`: the source is not a topic.
pub async fn subscribe_early(
    mq: &Arc<Connection>,
    attach: &fe2o3_amqp::types::performatives::Attach,
    container: &str,
) -> Result<Option<(crate::link::Opened, Option<SubEnd>, String)>, Error> {
    use fe2o3_amqp::types::definitions::Role;
    use fe2o3_amqp::types::messaging::TerminusDurability;
    if attach.role != Role::Receiver {
        return Ok(None);
    }
    let Some(src) = attach.source.as_deref() else {
        return Ok(None);
    };
    let Some(topic) = crate::link::topic_of(src.capabilities.as_ref(), src.address.as_deref())
    else {
        return Ok(None);
    };
    let filters = match &src.filter {
        Some(f) => filters_of(f)?,
        None => Default::default(),
    };
    let selector = filters
        .selector
        .map(|s| s.text().to_string())
        .unwrap_or_default();
    let no_local = filters.no_local;
    let durable = src.durable != TerminusDurability::None;
    let shared = !durable
        && src
            .capabilities
            .as_ref()
            .is_some_and(|c| c.iter().any(|c| c.as_str() == "shared"));
    let name = match (durable, shared) {
        (true, _) => subscription_name(container, &attach.name),
        (false, true) => format!("{}|volatile", subscription_name(container, &attach.name)),
        (false, false) => String::new(),
    };
    let c = mq.clone();
    let made = blocking(move || {
        let made = match shared {
            true => join_shared(&c, &name, &topic, &selector),
            false => c.subscribe(&name, &topic, durable, &selector, SubOpen::CreateOrResume),
        };
        if let Ok((sub, _)) = &made {
            c.not_own_pubs(&sub.name, no_local);
        }
        made
    })
    .await;
    match made {
        Some(Ok((sub, h))) => {
            let end = (!sub.durable || no_local).then(|| SubEnd {
                mq: mq.clone(),
                name: sub.name.clone(),
                shared,
                durable: sub.durable,
                not_own: no_local,
            });
            Ok(Some(((sub.dest, Arc::new(h)), end, sub.topicstr)))
        }
        Some(Err(e)) => Err(amqp_error(&e)),
        None => Err(Error::new(
            AmqpError::InternalError,
            "the channel is ending".to_string(),
            None,
        )),
    }
}

/// Makes shared non-durable subscription `name`, or joins it when links already take from
/// it: then with the same topic and selector only (JMS: 2429 while it is in use with others),
/// and as the user who made it (2035 otherwise: another user's subscription is not lent).
fn join_shared(
    c: &Connection,
    name: &str,
    topic: &str,
    selector: &str,
) -> Result<(sealmq_engine::subs::SubDef, sealmq_engine::Hobj), MqError> {
    let mut links = lock(&SHARED);
    let key = shared_key(c, name);
    let joining = links.get(&key).copied().unwrap_or(0);
    let how = match (joining, c.qm().sub(name)) {
        (0, _) | (_, None) => SubOpen::Create,
        (_, Some(s)) if s.topicstr != topic || s.selector != selector => {
            return Err(MqError::new(
                ReasonCode::SubscriptionInUse,
                format!(
                    "shared subscription '{name}' is in use on topic '{}' with selector \
                     '{}': close its consumers first, or use another name",
                    s.topicstr, s.selector
                ),
            ));
        }
        (_, Some(_)) => SubOpen::Resume,
    };
    let made = c.subscribe(name, topic, false, selector, how)?;
    // Every link counted, even those of a subscription an administrator removed under them:
    // each leaves once.
    links.insert(key, joining + 1);
    Ok(made)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count(c: &Connection, name: &str) -> usize {
        lock(&SHARED)
            .get(&shared_key(c, name))
            .copied()
            .unwrap_or(0)
    }

    fn leave(c: &Arc<Connection>, name: &str) {
        drop(SubEnd {
            mq: c.clone(),
            name: name.to_string(),
            shared: true,
            durable: false,
            not_own: false,
        });
    }

    /// Links join one shared non-durable subscription; one asking another selector, or of
    /// another user, is refused and counted nowhere; the last to leave ends it.
    #[test]
    fn a_shared_subscription_lives_from_its_first_link_to_its_last() {
        let (_d, qm) = sealmq_testkit::running("QSHARE", "");
        let c = |u: &str| Arc::new(Connection::connect(&qm, u, "t").expect("connects"));
        let (a, b, other) = (c("app"), c("app"), c("intruder"));
        let name = "global:PRICES|volatile";
        let (s1, _h1) = join_shared(&a, name, "prices", "").expect("made");
        let (s2, _h2) = join_shared(&b, name, "prices", "").expect("joined");
        assert_eq!(
            (s1.name.as_str(), s2.dest.as_str()),
            (name, s1.dest.as_str())
        );
        assert!(!s1.durable);
        assert_eq!(count(&a, name), 2);
        let e = join_shared(&b, name, "prices", "colour = 'red'").unwrap_err();
        assert_eq!(e.reason, ReasonCode::SubscriptionInUse, "{e}");
        let e = join_shared(&other, name, "prices", "").unwrap_err();
        assert_eq!(e.reason, ReasonCode::NotAuthorized, "{e}");
        assert_eq!(count(&a, name), 2, "refusals hold no place");
        leave(&a, name);
        assert!(qm.sub(name).is_some(), "one link still takes from it");
        leave(&b, name);
        assert!(qm.sub(name).is_none(), "ended with its last link");
        assert_eq!(count(&a, name), 0);
        // Made anew, with another selector, once nobody takes from it.
        let (s3, _h3) = join_shared(&a, name, "prices", "colour = 'red'").expect("made again");
        assert_eq!(s3.selector, "colour = 'red'");
        leave(&a, name);
        assert!(qm.sub(name).is_none());
    }
}

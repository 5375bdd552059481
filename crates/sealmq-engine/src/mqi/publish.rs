//! Publishing (issue 28): an MQPUT to a topic string puts one copy to the destination queue of
//! every subscription it reaches, all in one unit of work — the publisher's own when it
//! publishes under syncpoint (delivered at its commit, or not at all), else one of the queue
//! manager's, committed before the publish returns. PMSGDLV and NPMSGDLV decide what a copy
//! that cannot be put (a full or put-inhibited queue) does to the others.

use super::*;
use crate::md::{Md, NONE_ID, Persistence};
use crate::subs::{DestClass, PRTY_ASPUB, SubDef};
use crate::topics::Delivery;

impl Connection {
    /// MQOPEN of a topic for output (MQOT_TOPIC): the topic string publications through the
    /// handle go to — topic object `object`'s TOPICSTR and `string` joined by `/` (either may
    /// be blank, not both). Checked now as MQ checks at open: the object exists (2085), the
    /// string has no wildcard (2425), publications are not inhibited (2051) and the user has
    /// PUB authority (2035). Each publication through the handle is checked again.
    pub fn open_topic(&self, object: &str, string: &str) -> MqResult<String> {
        self.check_running()?;
        self.qm.check_pubsub_enabled()?;
        let object_str = match object.trim() {
            "" => String::new(),
            o => match self.qm.object::<crate::topics::TopicDef>(o) {
                Some(t) => t.topicstr,
                None => return mqerr!(UnknownObjectName, "topic object '{o}' is not defined"),
            },
        };
        let topic = crate::subs::full_topic(&object_str, string);
        self.may_publish(&topic, "open it to publish")?;
        Ok(topic)
    }

    /// Whether this connection may publish on `topic` (doing what `doing` says, for the
    /// error): a topic string without wildcards, publications not inhibited, PUB authority.
    fn may_publish(&self, topic: &str, doing: &str) -> MqResult<crate::topics::Effective> {
        if topic.is_empty()
            || topic.len() > crate::topics::TOPIC_STR_MAX
            || crate::topics::has_wildcard(topic)
        {
            return mqerr!(
                TopicStringError,
                "'{topic}': cannot {doing}: a topic string of 1 to {} characters without \
                 wildcard levels (# or +)",
                crate::topics::TOPIC_STR_MAX
            );
        }
        let e = self.qm.topic_effective(topic);
        if !e.publish {
            return mqerr!(
                PutInhibited,
                "publications on '{topic}' are inhibited (PUB(DISABLED) on topic {})",
                e.admin
            );
        }
        if !self.internal {
            self.qm
                .check_topic_authority(&self.user, topic, crate::authority::auth::PUB)?;
        }
        Ok(e)
    }

    /// Publishes on `topic`: returns how many subscriptions received a copy. The descriptor
    /// is filled as a put fills it (persistence and priority from the topic's DEFPSIST and
    /// DEFPRTY when left to the definition; a new message id; the context).
    pub fn publish(
        &self,
        topic: &str,
        md: &mut Md,
        payload: &[u8],
        pmo: PutOptions,
        retain: bool,
    ) -> MqResult<usize> {
        self.check_running()?;
        self.qm.check_pubsub_enabled()?;
        let e = self.may_publish(topic, "publish on it")?;
        self.fill_defaults(md, e.persistent, e.priority, &pmo);
        self.qm.count_publication();
        // Subscriptions that take no publication of this connection (JMS noLocal).
        let skip: Vec<String> = sealmq_types::sync::lock(&self.qm.not_own)
            .iter()
            .filter(|(_, id)| **id == self.id)
            .map(|(name, _)| name.clone())
            .collect();
        let subs: Vec<SubDef> = self
            .qm
            .subs_for(topic)
            .into_iter()
            .filter(|s| !skip.contains(&s.name) && selected(s, md))
            .collect();
        if subs.is_empty() && !retain {
            self.qm.count_on_topic(topic, 0);
            return Ok(0);
        }
        let persistent = md.persistence == Persistence::Persistent;
        let dlv = if persistent { e.pmsgdlv } else { e.npmsgdlv };
        let d = Connection::connect_internal(&self.qm)?;
        if retain && let Err(err) = d.retain(topic, Some((md, payload))) {
            let _ = d.backout();
            return Err(err);
        }
        let mut delivered = Vec::new();
        for s in &subs {
            let mut copy = md.clone();
            // Each copy is a message of its own; a managed queue's copies carry the SUBID
            // (MQ's), which is how a subscriber tells its subscriptions apart.
            copy.msg_id = self.qm.unique_id();
            if s.destclas == DestClass::Managed {
                copy.correl_id = subid_bytes(&s.subid);
            }
            if s.pubprty != PRTY_ASPUB {
                copy.priority = i32::from(s.pubprty);
            }
            match deliver(&d, s, &mut copy, payload) {
                Ok(()) => delivered.push(s.name.clone()),
                Err(err) => {
                    let spare = match dlv {
                        Delivery::AllAvail => true,
                        Delivery::AllDur | Delivery::AsParent => !s.durable,
                        Delivery::All => false,
                    };
                    if !spare {
                        let _ = d.backout();
                        return mqerr!(
                            PublicationFailure,
                            "publication on '{topic}' could not reach subscription {} ({err}); \
                             nothing was delivered ({}MSGDLV {} of topic {})",
                            s.name,
                            if persistent { "P" } else { "NP" },
                            dlv.name(),
                            e.admin
                        );
                    }
                    tracing::warn!(
                        "publication on '{topic}' not delivered to subscription {}: {err}",
                        s.name
                    );
                }
            }
        }
        if pmo.syncpoint {
            if let Err(err) = self.join(&d) {
                let _ = d.backout();
                return Err(err);
            }
        } else {
            d.commit()?;
        }
        for n in &delivered {
            self.qm.count_delivery(n);
        }
        self.qm.count_on_topic(topic, delivered.len());
        Ok(delivered.len())
    }
}

impl Connection {
    /// Whether [`Connection::publish`] may wait for the log: a persistent publication outside a
    /// unit of work (its copies are committed durably before it returns) or a retained one.
    /// The rest never block, and the event-driven server serves them on its loop.
    pub fn publish_may_block(&self, topic: &str, md: &Md, syncpoint: bool, retain: bool) -> bool {
        let persistent = match md.persistence {
            Persistence::Persistent => true,
            Persistence::NotPersistent => false,
            Persistence::AsQueueDef => self.qm.topic_effective(topic).persistent,
        };
        retain || (persistent && !syncpoint)
    }
}

/// Whether the subscription's SELECTOR (if any) selects the publication.
pub(crate) fn selected(s: &SubDef, md: &Md) -> bool {
    s.selector.is_empty()
        || sealmq_mqi::selector::Selector::parse(&s.selector).is_ok_and(|sel| sel.matches(md))
}

fn deliver(d: &Connection, s: &SubDef, md: &mut Md, payload: &[u8]) -> MqResult<()> {
    // DESTQMGR: through the transmission queue that reaches that queue manager.
    let h = if s.destqmgr.is_empty() {
        d.open(&s.dest, OpenOptions::output())?
    } else {
        d.open_at(&s.dest, &s.destqmgr, OpenOptions::output())?
    };
    let pmo = PutOptions {
        syncpoint: true,
        pass_context: true,
    };
    let r = d.put(&h, md, payload, pmo);
    let c = d.close(&h);
    r.and(c)
}

/// A SUBID's 24 bytes from its hex.
pub(crate) fn subid_bytes(hex: &str) -> crate::md::MsgId {
    let mut id = NONE_ID;
    for (i, b) in id.iter_mut().enumerate() {
        *b = hex
            .get(2 * i..2 * i + 2)
            .and_then(|h| u8::from_str_radix(h, 16).ok())
            .unwrap_or(0);
    }
    id
}

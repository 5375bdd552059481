//! Subscriptions on the queue manager (issue 28): making, altering and deleting them with
//! MQ's checks (SUB and DURSUB of the topic, the destination, the subscriber's authority),
//! which subscriptions a publication reaches, and topic authority up the tree.

use super::*;
use crate::authority::{AuthObj, auth};
use crate::subs::{DestClass, SubDef};
use sealmq_types::sync::{read, write};

/// What DISPLAY SBSTATUS counts for one subscription since this start.
#[derive(Debug, Clone, Default)]
pub struct SubStats {
    /// Publications delivered (NUMMSGS).
    pub delivered: u64,
    /// When the last one was delivered (ms since the epoch; 0: none).
    pub last_ms: u64,
}

/// What one topic string saw since the start: publications on it, copies of them delivered to
/// subscriptions, and when the last of each happened (ms since the epoch; 0: none).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TopicStats {
    pub published: u64,
    pub received: u64,
    pub last_published_ms: u64,
    pub last_received_ms: u64,
}

/// Topic strings whose figures are kept: past this many, publications on a new topic string are
/// counted in the totals only (a publisher inventing topic strings cannot grow memory).
pub const TOPICS_KEPT: usize = 10_000;

impl QueueManager {
    /// The figures of each topic string published on since the start.
    pub fn topic_stats(&self) -> Vec<(String, TopicStats)> {
        let mut v: Vec<_> = lock(&self.topic_stats)
            .iter()
            .map(|(k, s)| (k.clone(), s.clone()))
            .collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    }

    /// Counts one publication on `topic` and `copies` delivered from it.
    pub(crate) fn count_on_topic(&self, topic: &str, copies: usize) {
        let now = u64::try_from(crate::md::now_ms()).unwrap_or(0);
        let mut all = lock(&self.topic_stats);
        // The topic string is copied only the first time it is seen.
        if !all.contains_key(topic) {
            if all.len() >= TOPICS_KEPT {
                return;
            }
            all.insert(topic.to_string(), TopicStats::default());
        }
        let Some(t) = all.get_mut(topic) else { return };
        t.published += 1;
        t.last_published_ms = now;
        if copies > 0 {
            t.received += copies as u64;
            t.last_received_ms = now;
        }
    }

    /// 2531 while ALTER QMGR PSMODE(DISABLED) is in force.
    pub fn check_pubsub_enabled(&self) -> MqResult<()> {
        if read(&self.qmgr).pubsub_enabled() {
            return Ok(());
        }
        mqerr!(
            PubsubInhibited,
            "publish/subscribe is disabled on queue manager {} (ALTER QMGR PSMODE(ENABLED) \
             enables it)",
            self.name()
        )
    }

    /// 2035 unless `user` holds `needed` (PUB, SUB, RESUME) on a topic object at or above
    /// `topic`: as MQ's, a grant on any administrative node up the tree counts.
    pub fn check_topic_authority(&self, user: &str, topic: &str, needed: u32) -> MqResult<()> {
        if self.cfg.admin.as_deref() == Some(user) || self.cfg.admin.is_none() {
            return Ok(());
        }
        let objects: Vec<String> = self
            .topic_path(topic)
            .into_iter()
            .filter_map(|(_, o)| o.map(|t| t.name))
            .collect();
        let mut has = 0;
        for o in &objects {
            has |= self.authorities_of(user, AuthObj::Topic, o);
        }
        if has & needed == needed {
            return Ok(());
        }
        let what = auth::names(needed & !has).join(",");
        let at = objects
            .first()
            .map_or(crate::topics::BASE_TOPIC, |s| s.as_str());
        mqerr!(
            NotAuthorized,
            "'{user}' is not authorized to {what} on topic '{topic}' (no topic object from {at} \
             up grants it: SET AUTHREC PROFILE('{at}') OBJTYPE(TOPIC) PRINCIPAL('{user}') \
             AUTHADD({what}))"
        )
    }

    /// The protection policy covering publications on `topic` (issue 28, docs/pubsub.md): at
    /// the closest node at or above it that has one, a policy named for the node's topic
    /// object, or for the node's topic string itself. Wildcard levels are not resolved: a
    /// subscription's `price/#` is covered by what covers `price`.
    pub fn topic_policy(&self, topic: &str) -> Option<sealmq_protect::Policy> {
        self.topic_path(topic).into_iter().find_map(|(node, o)| {
            o.and_then(|t| self.policy(&t.name))
                .or_else(|| (!node.is_empty()).then(|| self.policy(&node)).flatten())
        })
    }

    /// Makes or replaces a subscription after MQ's checks: the topic takes subscriptions
    /// (2503) and, for a durable one, durable ones (2436 in MQ; 2503 here, naming DURSUB);
    /// a given destination exists on this queue manager (2085), or with DESTQMGR a route to
    /// that queue manager does (2087); a new one gets a SUBID.
    /// Durable ones are logged; a non-durable one is kept in memory only.
    pub fn define_sub(&self, mut s: SubDef, replace: bool) -> MqResult<()> {
        self.check_pubsub_enabled()?;
        let old = read(&self.svc).subs.get(&s.name).cloned();
        s.subid = match &old {
            Some(o) => o.subid.clone(),
            None => hex(&self.unique_id()),
        };
        if s.destclas == DestClass::Managed && s.dest.is_empty() {
            s.dest = match &old {
                Some(o) if o.destclas == DestClass::Managed => o.dest.clone(),
                _ => String::new(),
            };
        }
        // DESTQMGR: copies go to DEST on another queue manager, through the transmission
        // queue that reaches it (as a put to QUEUE@QMGR); the route must exist now.
        if s.destqmgr.trim() == self.name() {
            s.destqmgr.clear();
        }
        s.destqmgr = s.destqmgr.trim().to_string();
        if !s.destqmgr.is_empty() {
            if s.destclas == DestClass::Managed {
                return mqerr!(
                    OptionsError,
                    "subscription {}: DESTQMGR({}) needs a DEST queue (DESTCLAS(PROVIDED)): a \
                     managed queue is always this queue manager's",
                    s.name,
                    s.destqmgr
                );
            }
            if self.route(&s.destqmgr)?.is_none() {
                s.destqmgr.clear();
            }
        }
        let e = self.topic_effective(&s.topicstr);
        if !e.subscribe {
            return mqerr!(
                SubInhibited,
                "subscriptions to '{}' are inhibited (SUB(DISABLED) on topic {})",
                s.topicstr,
                e.admin
            );
        }
        if s.durable && !e.durable_allowed {
            return mqerr!(
                SubInhibited,
                "durable subscriptions to '{}' are inhibited (DURSUB(NO) on topic {})",
                s.topicstr,
                e.admin
            );
        }
        match &old {
            Some(_) if !replace => {
                return mqerr!(
                    SubAlreadyExists,
                    "subscription '{}' already exists (use REPLACE or ALTER)",
                    s.name
                );
            }
            Some(o) if o.durable != s.durable => {
                return mqerr!(
                    OptionsError,
                    "subscription '{}' is {}durable: durability cannot be altered",
                    s.name,
                    if o.durable { "" } else { "not " }
                );
            }
            _ => {}
        }
        if s.destclas == DestClass::Managed && s.dest.is_empty() {
            // Everything but the queue is checked before the queue is made.
            SubDef {
                dest: "-".into(),
                ..s.clone()
            }
            .validate()?;
            s.dest = self.managed_queue(&s, &e)?;
        }
        s.validate()?;
        if s.destclas == DestClass::Provided && s.destqmgr.is_empty() {
            self.queue_def(&s.dest)?;
        }
        if s.durable {
            self.log_durable(&Record::DefineSub(s.clone()))?;
        }
        write(&self.svc).subs.insert(s.name.clone(), s);
        Ok(())
    }

    /// Deletes a subscription; a managed one's queue goes with it (when it is empty, as MQ's
    /// permanent dynamic queues; otherwise it is kept and the log says so).
    pub fn delete_sub(&self, name: &str) -> MqResult<SubDef> {
        let Some(s) = read(&self.svc).subs.get(name).cloned() else {
            return mqerr!(NoSubscription, "subscription '{name}' does not exist");
        };
        if s.durable {
            self.log_durable(&Record::DeleteSub(name.to_string()))?;
        }
        write(&self.svc).subs.remove(name);
        lock(&self.sub_stats).remove(name);
        lock(&self.not_own).remove(name);
        if s.destclas == DestClass::Managed && self.delete(&s.dest).is_err() {
            tracing::info!(
                "subscription {name} deleted; its managed queue {} holds messages and is kept",
                s.dest
            );
        }
        Ok(s)
    }

    /// A managed subscription's queue, made from the topic's MDURMDL or MNDURMDL model
    /// (SYSTEM.MANAGED.DURABLE.<id> or SYSTEM.MANAGED.NDURABLE.<id>). It is a permanent
    /// dynamic queue either way, so that persistent publications keep their persistence; a
    /// non-durable subscription's goes when the subscription ends.
    fn managed_queue(&self, s: &SubDef, e: &crate::topics::Effective) -> MqResult<String> {
        let model = if s.durable { &e.mdurmdl } else { &e.mndurmdl };
        let m = self.queue_def(model)?;
        if m.qtype != crate::objects::QType::Model {
            return mqerr!(
                UnknownObjectName,
                "'{model}' (the topic's model for managed subscriptions) is not a model queue"
            );
        }
        let kind = if s.durable { "DURABLE" } else { "NDURABLE" };
        let name = format!(
            "SYSTEM.MANAGED.{kind}.{}",
            &s.subid[s.subid.len().saturating_sub(24)..]
        );
        let mut q = m.clone();
        q.name = name.clone();
        q.qtype = crate::objects::QType::Local;
        q.def_type = crate::objects::DefType::PermanentDynamic;
        q.descr = format!("managed queue of subscription {}", s.name);
        self.define(q, false)?;
        Ok(name)
    }

    pub fn sub(&self, name: &str) -> Option<SubDef> {
        read(&self.svc).subs.get(name).cloned()
    }

    /// Every subscription, by name.
    pub fn subs(&self) -> Vec<SubDef> {
        let mut v: Vec<SubDef> = read(&self.svc).subs.values().cloned().collect();
        v.sort_by(|a, b| a.name.cmp(&b.name));
        v
    }

    /// The subscriptions a publication on `topic` reaches.
    pub fn subs_for(&self, topic: &str) -> Vec<SubDef> {
        // Topic nodes at or above the topic with WILDCARD(BLOCK) (looked for only when some
        // topic object has it).
        let any_block = read(&self.svc)
            .topics
            .values()
            .any(|t| t.wildcard == crate::topics::Wildcard::Block);
        let blocks: Vec<String> = if any_block {
            self.topic_path(topic)
                .into_iter()
                .filter(|(_, t)| {
                    t.as_ref()
                        .is_some_and(|t| t.wildcard == crate::topics::Wildcard::Block)
                })
                .map(|(node, _)| node)
                .collect()
        } else {
            Vec::new()
        };
        let mut v: Vec<SubDef> = read(&self.svc)
            .subs
            .values()
            .filter(|s| s.covers(topic) && !blocks.iter().any(|b| s.blocked_by(b)))
            .cloned()
            .collect();
        v.sort_by(|a, b| a.name.cmp(&b.name));
        v
    }

    pub fn sub_stats(&self, name: &str) -> SubStats {
        lock(&self.sub_stats).get(name).cloned().unwrap_or_default()
    }

    /// Publications since the start, and copies delivered (all subscriptions).
    pub fn publication_totals(&self) -> (u64, u64) {
        let delivered = lock(&self.sub_stats).values().map(|s| s.delivered).sum();
        (
            self.publications.load(std::sync::atomic::Ordering::Relaxed),
            delivered,
        )
    }

    pub(crate) fn count_publication(&self) {
        self.publications
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    pub(crate) fn count_delivery(&self, name: &str) {
        let mut st = lock(&self.sub_stats);
        let e = st.entry(name.to_string()).or_default();
        e.delivered += 1;
        e.last_ms = u64::try_from(crate::md::now_ms()).unwrap_or(0);
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02X}")).collect()
}

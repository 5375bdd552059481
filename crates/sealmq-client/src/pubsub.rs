//! Publish and subscribe (protocol version 4, issue 28): MQPUT to a topic string, MQSUB with
//! a managed queue (then MQGET through the handle it gives), MQCLOSE with MQCO_REMOVE_SUB.

use crate::{Client, ClientError, Result};
use sealmq_mqi::Md;
use sealmq_types::ReasonCode;
use sealmq_wire::{Request, Response};

/// What to subscribe to ([`Client::subscribe`]).
#[derive(Debug, Clone, Default)]
pub struct Subscription {
    /// The subscription's name: required for a durable one; blank for a non-durable one
    /// (the queue manager names it).
    pub name: String,
    /// The topic string, with `#` and `+` wildcard levels.
    pub topic: String,
    /// Kept when the application disconnects, and resumed by name.
    pub durable: bool,
    /// A message selector on the publications' properties (blank: every publication).
    pub selector: String,
    /// Resume an existing durable subscription instead of making one.
    pub resume: bool,
    /// MQSO_NEW_PUBLICATIONS_ONLY: a new subscription is not given the retained
    /// publications, only what is published from now on (protocol version 5).
    pub new_only: bool,
    /// A queue of the application's for the copies (MQSUB without MQSO_MANAGED: it needs
    /// PUT and GET there); blank: a managed queue (protocol version 5 when given).
    pub dest: String,
}

impl Client {
    fn check_pubsub(&self) -> Result<()> {
        if self.version >= sealmq_wire::V_PUBSUB {
            return Ok(());
        }
        Err(ClientError {
            reason: ReasonCode::UnexpectedError,
            detail: format!(
                "the queue manager speaks protocol version {}, which has no publish/subscribe; \
                 upgrade it",
                self.version
            ),
        })
    }

    /// Publishes on `topic` (MQPUT to a topic); `md` comes back as the queue manager filled it.
    pub fn publish(
        &mut self,
        topic: &str,
        md: &mut Md,
        payload: &[u8],
        syncpoint: bool,
    ) -> Result<()> {
        self.publish_with(topic, md, payload, syncpoint, false)
    }

    /// Publishes on `topic`; with `retain`, the publication is kept for subscriptions made
    /// later (MQPMO_RETAIN), replacing the topic string's last retained one.
    pub fn publish_with(
        &mut self,
        topic: &str,
        md: &mut Md,
        payload: &[u8],
        syncpoint: bool,
        retain: bool,
    ) -> Result<()> {
        self.check_pubsub()?;
        // A protected topic: protected here, once, for the policy's recipients; every
        // subscriber's copy is that envelope.
        let stored = if self.icpt.raw || self.icpt.protector.is_none() {
            payload.to_vec()
        } else {
            match self.call(Request::Policy {
                name: format!("{}{topic}", sealmq_wire::TOPIC_PREFIX),
            })? {
                Response::Policy { policy } if !policy.is_empty() => {
                    let p = std::sync::Arc::new(
                        sealmq_mqi::policy::decode(&policy)
                            .map_err(|e| crate::intercept::security(e.to_string()))?,
                    );
                    let stored = self.protect_for(&p, md, payload)?;
                    self.icpt.next_key = Some(p);
                    stored
                }
                _ => payload.to_vec(),
            }
        };
        let req = Request::Publish {
            topic: topic.to_string(),
            md: self.for_peer(md),
            payload: stored,
            syncpoint,
            retain,
        };
        self.call_put(req, md)?;
        self.icpt.in_uow |= syncpoint;
        Ok(())
    }

    /// MQSUB with a managed queue: returns the handle to get publications through and the
    /// queue's name.
    pub fn subscribe(&mut self, s: &Subscription) -> Result<(u32, String)> {
        self.check_pubsub()?;
        let req = if s.new_only || !s.dest.is_empty() {
            self.check_version(
                sealmq_wire::V_TOPIC_OPEN,
                "a subscription for new publications only or to a given queue",
            )?;
            Request::SubscribeWith {
                name: s.name.clone(),
                topic: s.topic.clone(),
                durable: s.durable,
                selector: s.selector.clone(),
                resume: s.resume,
                new_only: s.new_only,
                dest: s.dest.clone(),
            }
        } else {
            Request::Subscribe {
                name: s.name.clone(),
                topic: s.topic.clone(),
                durable: s.durable,
                selector: s.selector.clone(),
                resume: s.resume,
            }
        };
        let r = self.call(req)?;
        self.opened(r)
    }

    /// MQOPEN of a topic for output (MQOT_TOPIC): topic object `object` (blank: none) and
    /// topic string `topic`, joined by `/` as MQ joins them. Returns the handle — a put
    /// through it is a publication, protected first when the topic has a policy — and the
    /// full topic string. PUB authority is checked now (2035), and at each publication.
    pub fn open_topic(&mut self, object: &str, topic: &str) -> Result<(u32, String)> {
        self.check_pubsub()?;
        self.check_version(sealmq_wire::V_TOPIC_OPEN, "opening a topic")?;
        let r = self.call(Request::OpenTopic {
            object: object.to_string(),
            topic: topic.to_string(),
        })?;
        self.opened(r)
    }

    fn check_version(&self, need: u16, what: &str) -> Result<()> {
        if self.version >= need {
            return Ok(());
        }
        Err(ClientError {
            reason: ReasonCode::UnexpectedError,
            detail: format!(
                "{what} needs protocol version {need}; the queue manager speaks {}: upgrade it",
                self.version
            ),
        })
    }

    /// Ends subscription `name` (a durable one is removed; MQ's MQCO_REMOVE_SUB).
    pub fn unsubscribe(&mut self, name: &str) -> Result<()> {
        self.check_pubsub()?;
        self.call(Request::Unsubscribe {
            name: name.to_string(),
        })
        .map(|_| ())
    }
}

//! Publish and subscribe requests (wire version 4, issue 28): a publication is the engine's
//! [`Connection::publish`](sealmq_engine::Connection::publish); a subscription made here has
//! a managed queue, opened for input on this connection
//! ([`Connection::subscribe`](sealmq_engine::Connection::subscribe)). A non-durable one ends
//! when its handle is closed or the connection ends.

use crate::icpt::Icpt;
use crate::session::Session;
use crate::wiremap::err;
use sealmq_engine::mqi::SubOpen;
use sealmq_engine::{Md, PutOptions};
use sealmq_types::ReasonCode;
use sealmq_wire::{Request, Response};

/// Non-durable subscriptions one connection may hold at once (each has a queue and a handle;
/// MAXHANDS bounds the handles too).
pub(crate) const MAX_NONDURABLE: usize = 256;
/// Topics one connection may hold open to publish at once (each a topic string of up to
/// 10,240 bytes, held by the session rather than the engine's handle table).
pub(crate) const MAX_PUBLISHERS: usize = 256;

impl Session {
    /// MQPUT to a topic string (protected first, once for every subscriber, under QM-side
    /// interception when the topic has a policy).
    pub(crate) fn publish(
        &self,
        topic: &str,
        mut md: Md,
        payload: Vec<u8>,
        syncpoint: bool,
        retain: bool,
        icpt: &Icpt<'_>,
    ) -> Response {
        let pmo = PutOptions {
            syncpoint,
            ..Default::default()
        };
        let payload = match icpt.protect_topic(&self.qm, topic, &md, payload) {
            Ok(p) => p,
            Err(detail) => return crate::icpt::security(detail),
        };
        match self.conn.publish(topic, &mut md, &payload, pmo, retain) {
            Ok(_) => Response::Put { md },
            Err(e) => err(e),
        }
    }

    /// MQOPEN of a topic for output (wire version 5): checked now (object, wildcards, PUB
    /// authority); puts through the handle publish on the full topic string.
    pub(crate) fn open_topic(&mut self, object: &str, topic: &str, icpt: &Icpt<'_>) -> Response {
        if self.publishers.len() >= MAX_PUBLISHERS
            || self.handles.len() + self.publishers.len()
                >= usize::try_from(self.qm.qmgr().max_handles()).unwrap_or(usize::MAX)
        {
            return Response::Err {
                reason: ReasonCode::HandleNotAvailable.code(),
                detail: format!(
                    "at most {MAX_PUBLISHERS} topics open to publish per connection, and \
                     MAXHANDS handles in all: close one first"
                ),
            };
        }
        let full = match self.conn.open_topic(object, topic) {
            Ok(t) => t,
            Err(e) => return err(e),
        };
        let id = self.next_h;
        self.next_h += 1;
        let policy = self
            .qm
            .topic_policy(&full)
            .map(|p| sealmq_engine::policies::encode(&p))
            .unwrap_or_default();
        self.publishers.insert(id, full.clone());
        Response::Opened(sealmq_wire::Opened {
            hobj: id,
            resolved: full,
            policy,
            intercepted: icpt.on,
            read_ahead: None,
        })
    }

    /// MQSUB with a managed queue, or the subscriber's own (`o.dest`), made or resumed by
    /// name when durable; `o.new_only`: MQSO_NEW_PUBLICATIONS_ONLY.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn subscribe(
        &mut self,
        name: &str,
        topic: &str,
        durable: bool,
        selector: &str,
        resume: bool,
        o: sealmq_engine::mqi::SubOptions,
        icpt: &Icpt<'_>,
    ) -> Response {
        if !durable && !resume && self.nondurable.len() >= MAX_NONDURABLE {
            return Response::Err {
                reason: ReasonCode::HandleNotAvailable.code(),
                detail: format!(
                    "at most {MAX_NONDURABLE} non-durable subscriptions per connection"
                ),
            };
        }
        let how = if resume {
            SubOpen::Resume
        } else {
            SubOpen::Create
        };
        let (sub, h) = match self
            .conn
            .subscribe_with(name, topic, durable, selector, how, o)
        {
            Ok(x) => x,
            Err(e) => return err(e),
        };
        let resp = self.opened(
            Ok(h),
            &format!("{}{}", sealmq_wire::TOPIC_PREFIX, sub.topicstr),
            icpt,
        );
        if let Response::Opened(o) = &resp {
            if !o.policy.is_empty() {
                sealmq_types::sync::lock(&self.recent)
                    .protected
                    .insert(o.hobj);
            }
            self.topics.insert(o.hobj, sub.topicstr.clone());
            if !sub.durable {
                self.nondurable.push((o.hobj, sub.name));
            }
        }
        resp
    }

    /// MQCLOSE with MQCO_REMOVE_SUB, by name: the subscriber's own (or any, for the
    /// administrator).
    pub(crate) fn unsubscribe(&mut self, name: &str) -> Response {
        // Its queue, if this connection has it open, is closed first so that it can go.
        if let Some(s) = self.qm.sub(name) {
            let open: Vec<u32> = self
                .handles
                .iter()
                .filter(|(_, h)| h.resolved == s.dest)
                .map(|(k, _)| *k)
                .collect();
            if s.subuser == self.conn.user || self.admin {
                for h in open {
                    self.topics.remove(&h);
                    if let Some(h) = self.handles.remove(&h) {
                        let _ = self.conn.close(&h);
                    }
                }
            }
        }
        self.nondurable.retain(|(_, n)| n != name);
        match self.conn.unsubscribe(name) {
            Ok(()) => Response::Ok,
            Err(e) => err(e),
        }
    }

    /// A handle was closed: a non-durable subscription on it ends (MQ's MQCO_NONE on a
    /// non-durable subscription's handle).
    pub(crate) fn closed_subscription(&mut self, hobj: u32) {
        let (ended, kept): (Vec<_>, Vec<_>) =
            self.nondurable.drain(..).partition(|(h, _)| *h == hobj);
        self.nondurable = kept;
        for (_, n) in ended {
            let _ = self.qm.delete_sub(&n);
        }
    }
}

impl Session {
    /// A publish/subscribe request (MQOPEN of a topic, MQSUB, MQPUT to a topic, unsubscribe),
    /// refused to a connection whose protocol version does not have it.
    pub(crate) fn pubsub_request(&mut self, req: Request, icpt: &Icpt<'_>) -> Response {
        match req {
            Request::OpenTopic { .. } | Request::SubscribeWith { .. }
                if self.version < sealmq_wire::V_TOPIC_OPEN =>
            {
                Response::Err {
                    reason: ReasonCode::UnexpectedError.code(),
                    detail: format!(
                        "opening a topic and subscription options need protocol version {}; \
                     this connection speaks {}",
                        sealmq_wire::V_TOPIC_OPEN,
                        self.version
                    ),
                }
            }
            Request::Publish { .. } | Request::Subscribe { .. } | Request::Unsubscribe { .. }
                if self.version < sealmq_wire::V_PUBSUB =>
            {
                Response::Err {
                    reason: ReasonCode::UnexpectedError.code(),
                    detail: format!(
                        "publish/subscribe needs protocol version {}; this connection speaks {}",
                        sealmq_wire::V_PUBSUB,
                        self.version
                    ),
                }
            }
            Request::Publish {
                topic,
                md,
                payload,
                syncpoint,
                retain,
            } => self.publish(&topic, md, payload, syncpoint, retain, icpt),
            Request::Subscribe {
                name,
                topic,
                durable,
                selector,
                resume,
            } => self.subscribe(
                &name,
                &topic,
                durable,
                &selector,
                resume,
                Default::default(),
                icpt,
            ),
            Request::SubscribeWith {
                name,
                topic,
                durable,
                selector,
                resume,
                new_only,
                dest,
            } => {
                let o = sealmq_engine::mqi::SubOptions { new_only, dest };
                self.subscribe(&name, &topic, durable, &selector, resume, o, icpt)
            }
            Request::OpenTopic { object, topic } => self.open_topic(&object, &topic, icpt),
            Request::Unsubscribe { name } => self.unsubscribe(&name),
            other => Response::Err {
                reason: ReasonCode::UnexpectedError.code(),
                detail: format!("{other:?} is not a publish/subscribe request"),
            },
        }
    }
}

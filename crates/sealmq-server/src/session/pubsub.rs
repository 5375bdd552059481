//! Publish and subscribe requests (wire version 4, issue 28): a publication is the engine's
//! [`Connection::publish`](sealmq_engine::Connection::publish); a subscription made here has
//! a managed queue, opened for input on this connection
//! ([`Connection::subscribe`](sealmq_engine::Connection::subscribe)). A non-durable one ends
//! when its handle is closed or the connection ends.

use crate::session::Session;
use crate::wiremap::err;
use sealmq_engine::mqi::SubOpen;
use sealmq_engine::{Connection, Md, PutOptions, QueueManager, intercept};
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
    /// interception when the topic has a policy). On the loop unless it may wait for the log
    /// (persistent outside a unit of work, or retained) or is protected: then on the pool.
    pub(crate) async fn publish(
        &mut self,
        topic: String,
        md: Md,
        payload: Vec<u8>,
        syncpoint: bool,
        retain: bool,
    ) -> Response {
        let pmo = PutOptions {
            syncpoint,
            ..Default::default()
        };
        if !self.intercept && !self.conn.publish_may_block(&topic, &md, syncpoint, retain) {
            return publish_as_sent(&self.qm, &self.conn, &topic, md, &payload, pmo, retain);
        }
        let (qm, conn, protector, intercept) = (
            self.qm.clone(),
            self.conn.clone(),
            self.protector.clone(),
            self.intercept,
        );
        let answered = self
            .pool(move || {
                if !intercept {
                    return (
                        publish_as_sent(&qm, &conn, &topic, md, &payload, pmo, retain),
                        None,
                    );
                }
                let stored = match intercept::protect_topic(
                    &qm,
                    protector.as_deref(),
                    &topic,
                    &md,
                    &payload,
                ) {
                    Ok(Some(p)) => p,
                    Ok(None) => payload,
                    Err(detail) => return (crate::icpt::security(detail), None),
                };
                let len = stored.len() as u64;
                let mut md = md;
                let r = match conn.publish(&topic, &mut md, &stored, pmo, retain) {
                    Ok(_) => Response::Put { md },
                    Err(e) => err(e),
                };
                (r, Some(len))
            })
            .await;
        match answered {
            Ok((r, stored)) => {
                self.stored = stored;
                r
            }
            Err(refused) => refused,
        }
    }

    /// MQOPEN of a topic for output (wire version 5): checked now (object, wildcards, PUB
    /// authority); puts through the handle publish on the full topic string.
    fn open_topic(&mut self, object: &str, topic: &str) -> Response {
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
            intercepted: self.intercept,
            read_ahead: None,
        })
    }

    /// MQSUB with a managed queue, or the subscriber's own (`o.dest`), made or resumed by
    /// name when durable; `o.new_only`: MQSO_NEW_PUBLICATIONS_ONLY.
    /// The subscription is made (a durable one by a durable record) on the pool.
    async fn subscribe(&mut self, r: Sub) -> Response {
        let Sub {
            name,
            topic,
            durable,
            selector,
            resume,
            o,
        } = r;
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
        let conn = self.conn.clone();
        let made = self
            .pool(move || conn.subscribe_with(&name, &topic, durable, &selector, how, o))
            .await;
        let (sub, h) = match made {
            Ok(Ok(x)) => x,
            Ok(Err(e)) => return err(e),
            Err(refused) => return refused,
        };
        let resp = self.opened(
            Ok(h),
            &format!("{}{}", sealmq_wire::TOPIC_PREFIX, sub.topicstr),
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
    /// administrator). Its deletion is a durable record: on the pool.
    async fn unsubscribe(&mut self, name: String) -> Response {
        // Its queue, if this connection has it open, is closed first so that it can go.
        let mut closing = Vec::new();
        if let Some(s) = self.qm.sub(&name)
            && (s.subuser == self.conn.user || self.admin)
        {
            let open: Vec<u32> = self
                .handles
                .iter()
                .filter(|(_, h)| h.resolved == s.dest)
                .map(|(k, _)| *k)
                .collect();
            for h in open {
                self.topics.remove(&h);
                closing.extend(self.handles.remove(&h));
            }
        }
        self.nondurable.retain(|(_, n)| *n != name);
        let conn = self.conn.clone();
        self.on_pool(move || {
            for h in closing {
                let _ = conn.close(&h);
            }
            match conn.unsubscribe(&name) {
                Ok(()) => Response::Ok,
                Err(e) => err(e),
            }
        })
        .await
    }
}

/// A subscription asked for (MQSUB): with a managed queue, or the subscriber's own
/// (`o.dest`), made or resumed by name when durable; `o.new_only`:
/// MQSO_NEW_PUBLICATIONS_ONLY.
struct Sub {
    name: String,
    topic: String,
    durable: bool,
    selector: String,
    resume: bool,
    o: sealmq_engine::mqi::SubOptions,
}

impl Sub {
    /// The subscription a Subscribe or SubscribeWith asks for (`None`: neither).
    fn of(r: Request) -> Option<Sub> {
        let (name, topic, durable, selector, resume, o) = match r {
            Request::Subscribe {
                name,
                topic,
                durable,
                selector,
                resume,
            } => (name, topic, durable, selector, resume, Default::default()),
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
                (name, topic, durable, selector, resume, o)
            }
            _ => return None,
        };
        Some(Sub {
            name,
            topic,
            durable,
            selector,
            resume,
            o,
        })
    }
}

/// A publication sent as it is: a protected topic accepts it only protected (issue 42).
fn publish_as_sent(
    qm: &QueueManager,
    conn: &Connection,
    topic: &str,
    mut md: Md,
    payload: &[u8],
    pmo: PutOptions,
    retain: bool,
) -> Response {
    if let Err(detail) = intercept::check_topic_as_sent(qm, topic, payload) {
        return crate::icpt::security(detail);
    }
    match conn.publish(topic, &mut md, payload, pmo, retain) {
        Ok(_) => Response::Put { md },
        Err(e) => err(e),
    }
}

impl Session {
    /// A publish/subscribe request (MQOPEN of a topic, MQSUB, MQPUT to a topic, unsubscribe),
    /// refused to a connection whose protocol version does not have it.
    pub(super) async fn pubsub_request(&mut self, req: Request) -> Response {
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
            } => self.publish(topic, md, payload, syncpoint, retain).await,
            r @ (Request::Subscribe { .. } | Request::SubscribeWith { .. }) => match Sub::of(r) {
                Some(r) => self.subscribe(r).await,
                None => Response::Err {
                    reason: ReasonCode::UnexpectedError.code(),
                    detail: "not a subscription request".into(),
                },
            },
            Request::OpenTopic { object, topic } => self.open_topic(&object, &topic),
            Request::Unsubscribe { name } => self.unsubscribe(name).await,
            other => Response::Err {
                reason: ReasonCode::UnexpectedError.code(),
                detail: format!("{other:?} is not a publish/subscribe request"),
            },
        }
    }
}

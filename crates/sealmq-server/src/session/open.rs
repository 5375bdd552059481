//! MQOPEN and MQCLOSE: handles to queues (a model queue's makes a dynamic queue), to a queue
//! on another queue manager, and their close (a non-durable subscription's handle ends its
//! subscription). Both run on the event loop, but for the two that write a durable record,
//! on the blocking pool: a model queue's open (it defines the dynamic queue) and the end of a
//! non-durable subscription.

use super::{Flow, Session, no_handle};
use crate::wiremap::{err, open_options};
use sealmq_engine::Hobj;
use sealmq_types::sync::lock;
use sealmq_wire::{Request, Response};
use std::sync::Arc;

impl Session {
    /// MQOPEN of a queue (`dyn_name`: the dynamic queue a model makes, `AMQ.*` when empty),
    /// or of a queue on another queue manager (output). On the loop, but for a model queue's
    /// open, which defines a dynamic queue (a durable record): on the pool.
    pub(super) async fn open_request(&mut self, req: Request) -> Response {
        let conn = self.conn.clone();
        let (name, r) = match req {
            Request::Open {
                name,
                options,
                dyn_name,
            } => {
                let dn = if dyn_name.is_empty() {
                    "AMQ.*".to_string()
                } else {
                    dyn_name
                };
                let model = self
                    .qm
                    .queue_def(&name)
                    .is_ok_and(|d| d.qtype == sealmq_engine::objects::QType::Model);
                let r = if model {
                    let n = name.clone();
                    self.pool(move || conn.open_dynamic(&n, open_options(options), &dn))
                        .await
                } else {
                    Ok(conn.open_dynamic(&name, open_options(options), &dn))
                };
                (name, r)
            }
            Request::OpenAt {
                name,
                qmgr,
                options,
            } => {
                let r = conn.open_at(&name, &qmgr, open_options(options));
                (name, Ok(r))
            }
            other => {
                return Response::Err {
                    reason: sealmq_types::ReasonCode::UnexpectedError.code(),
                    detail: format!("{other:?} is not an open"),
                };
            }
        };
        match r {
            Ok(r) => self.opened(r, &name),
            Err(refused) => refused,
        }
    }

    /// The reply to an open: the handle registered, and the policy of the name opened.
    pub(crate) fn opened(&mut self, r: sealmq_engine::MqResult<Hobj>, name: &str) -> Response {
        let h = match r {
            Ok(h) => h,
            Err(e) => return err(e),
        };
        let id = self.next_h;
        self.next_h += 1;
        let qm = &self.qm;
        let resolved = h.resolved.clone();
        // The policy binds to the name opened (an alias without one sees envelopes); a
        // subscription's queue has its topic's (`topic://STRING`).
        let policy = match name.strip_prefix(sealmq_wire::TOPIC_PREFIX) {
            Some(topic) => qm.topic_policy(topic),
            None => qm.policy(name),
        }
        .map(|p| sealmq_engine::policies::encode(&p))
        .unwrap_or_default();
        let read_ahead = qm
            .queue_def(name)
            .or_else(|_| qm.queue_def(&resolved))
            .map(|d| match d.def_read_ahead() {
                sealmq_engine::objects::ReadAhead::No => sealmq_wire::read_ahead::NO,
                sealmq_engine::objects::ReadAhead::Yes => sealmq_wire::read_ahead::YES,
                sealmq_engine::objects::ReadAhead::Disabled => sealmq_wire::read_ahead::DISABLED,
            })
            .unwrap_or(sealmq_wire::read_ahead::NO);
        self.handles.insert(id, Arc::new(h));
        Response::Opened(sealmq_wire::Opened {
            hobj: id,
            resolved,
            policy,
            intercepted: self.intercept,
            // Version 1 peers do not read it: the session drops it for them.
            read_ahead: Some(read_ahead),
        })
    }

    /// MQCLOSE. Its consumers stop first: the close's answer then follows what they pushed,
    /// so that no push for them arrives after it.
    pub(super) async fn close(&mut self, hobj: u32) -> Flow {
        let (behind, ends) = self.consumers.close_handle(hobj);
        if !ends.is_empty() {
            // A pusher may be waiting for room in this connection's channel, which only this
            // loop empties: their ends are waited for on the pool.
            let _ = self
                .pool(move || {
                    for e in ends {
                        e.wait();
                    }
                })
                .await;
        }
        let resp = self.close_handle(hobj).await;
        if behind {
            self.behind_pushes(resp)
        } else {
            Flow::Reply(resp)
        }
    }

    async fn close_handle(&mut self, hobj: u32) -> Response {
        self.topics.remove(&hobj);
        if self.publishers.remove(&hobj).is_some() {
            return Response::Ok;
        }
        let Some(h) = self.handles.remove(&hobj) else {
            return no_handle(hobj);
        };
        lock(&self.recent).closed(hobj);
        // A non-durable subscription on the handle ends with it (MQ's MQCO_NONE).
        let (ended, kept): (Vec<_>, Vec<_>) =
            self.nondurable.drain(..).partition(|(h, _)| *h == hobj);
        self.nondurable = kept;
        let r = self
            .conn
            .close(&h)
            .map(|_| Response::Ok)
            .unwrap_or_else(err);
        if ended.is_empty() {
            return r;
        }
        // A shared subscription (JMS 2.0) another connection still consumes from stays: the
        // last consumer's close ends it.
        if super::shared_still(&self.qm, &h.name) {
            return r;
        }
        // Deleting the subscription is a durable record: on the pool.
        let qm = self.qm.clone();
        let deleted = self.on_pool(move || {
            for (_, n) in ended {
                let _ = qm.delete_sub(&n);
            }
            Response::Ok
        });
        deleted.await;
        r
    }

    /// The policy a get through `hobj` is unprotected under when the queue manager
    /// intercepts: its queue's, or for a subscription's queue its topic's (with a quality of
    /// protection).
    pub(crate) fn intercept_policy(&self, hobj: u32) -> Option<sealmq_protect::Policy> {
        let queue = &self.handles.get(&hobj)?.name;
        let topic = self.topics.get(&hobj).map(String::as_str);
        sealmq_engine::intercept::get_policy(&self.qm, queue, topic)
    }
}

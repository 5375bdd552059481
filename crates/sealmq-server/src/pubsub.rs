//! Publish and subscribe requests (wire version 4, issue 28): a publication is the engine's
//! [`Connection::publish`](sealmq_engine::Connection::publish); a subscription made here has
//! a managed queue, opened for input on this connection. A non-durable one ends when its
//! handle is closed or the connection ends.

use crate::dispatch::err;
use crate::icpt::Icpt;
use crate::session::Session;
use sealmq_engine::authority::auth;
use sealmq_engine::subs::{DestClass, SubDef, SubType};
use sealmq_engine::{Md, PutOptions};
use sealmq_types::ReasonCode;
use sealmq_wire::Response;

/// Non-durable subscriptions one connection may hold at once (each has a queue and a handle;
/// MAXHANDS bounds the handles too).
pub(crate) const MAX_NONDURABLE: usize = 256;

impl Session {
    /// MQPUT to a topic string.
    pub(crate) fn publish(
        &self,
        topic: &str,
        mut md: Md,
        payload: Vec<u8>,
        syncpoint: bool,
        retain: bool,
    ) -> Response {
        let pmo = PutOptions {
            syncpoint,
            ..Default::default()
        };
        match self.conn.publish(topic, &mut md, &payload, pmo, retain) {
            Ok(_) => Response::Put { md },
            Err(e) => err(e),
        }
    }

    /// MQSUB with a managed queue (made, or resumed by name when durable).
    pub(crate) fn subscribe(
        &mut self,
        name: &str,
        topic: &str,
        durable: bool,
        selector: &str,
        resume: bool,
        icpt: &Icpt<'_>,
    ) -> Response {
        let user = self.conn.user.clone();
        let existing = (!name.is_empty()).then(|| self.qm.sub(name)).flatten();
        let sub = match (resume, existing) {
            (true, None) => {
                return refuse(
                    ReasonCode::NoSubscription,
                    format!("subscription '{name}' does not exist to resume"),
                );
            }
            (true, Some(s)) => {
                if let Err(e) = self.qm.check_topic_authority(&user, &s.topicstr, auth::SUB) {
                    return err(e);
                }
                if s.destclas != DestClass::Managed || (s.subuser != user && !self.admin) {
                    return refuse(
                        ReasonCode::NotAuthorized,
                        format!("subscription '{name}' is not '{user}''s to resume"),
                    );
                }
                s
            }
            (false, Some(_)) => {
                return refuse(
                    ReasonCode::SubAlreadyExists,
                    format!("subscription '{name}' already exists: resume it"),
                );
            }
            (false, None) => {
                if let Err(e) = self.qm.check_topic_authority(&user, topic, auth::SUB) {
                    return err(e);
                }
                if !durable && self.nondurable.len() >= MAX_NONDURABLE {
                    return refuse(
                        ReasonCode::HandleNotAvailable,
                        format!(
                            "at most {MAX_NONDURABLE} non-durable subscriptions per connection"
                        ),
                    );
                }
                let name = if name.is_empty() {
                    if durable {
                        return refuse(
                            ReasonCode::ObjectNameError,
                            "a durable subscription needs a name".into(),
                        );
                    }
                    format!("{}.{}.{}", self.qm.name(), self.conn.id, self.next_h)
                } else {
                    name.to_string()
                };
                let s = SubDef {
                    topicstr: topic.to_string(),
                    destclas: DestClass::Managed,
                    durable,
                    subtype: SubType::Api,
                    subuser: user.clone(),
                    selector: selector.to_string(),
                    ..SubDef::new(&name)
                };
                if let Err(e) = self.qm.define_sub(s, false) {
                    return err(e);
                }
                let Some(s) = self.qm.sub(&name) else {
                    return refuse(ReasonCode::NoSubscription, name);
                };
                // A new subscription gets the retained publications it matches.
                if let Err(e) = self.conn.deliver_retained(&s) {
                    let _ = self.qm.delete_sub(&name);
                    return err(e);
                }
                s
            }
        };
        let r = self.conn.open_subscription(&sub);
        let resp = self.opened(r, &sub.dest, icpt);
        match (&resp, sub.durable) {
            (Response::Opened(o), false) => self.nondurable.push((o.hobj, sub.name)),
            (Response::Opened(_), true) => {}
            // Not opened: a subscription made just now goes again.
            (_, false) => {
                let _ = self.qm.delete_sub(&sub.name);
            }
            (_, true) => {}
        }
        resp
    }

    /// MQCLOSE with MQCO_REMOVE_SUB, by name: the subscriber's own (or any, for the
    /// administrator).
    pub(crate) fn unsubscribe(&mut self, name: &str) -> Response {
        let Some(s) = self.qm.sub(name) else {
            return refuse(
                ReasonCode::NoSubscription,
                format!("subscription '{name}' does not exist"),
            );
        };
        if s.subuser != self.conn.user && !self.admin {
            return refuse(
                ReasonCode::NotAuthorized,
                format!("subscription '{name}' is not '{}''s", self.conn.user),
            );
        }
        // Its queue, if this connection has it open, is closed first so that it can go.
        let open: Vec<u32> = self
            .handles
            .iter()
            .filter(|(_, h)| h.resolved == s.dest)
            .map(|(k, _)| *k)
            .collect();
        for h in open {
            if let Some(h) = self.handles.remove(&h) {
                let _ = self.conn.close(&h);
            }
        }
        self.nondurable.retain(|(_, n)| n != name);
        match self.qm.delete_sub(name) {
            Ok(_) => Response::Ok,
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

fn refuse(reason: ReasonCode, detail: String) -> Response {
    Response::Err {
        reason: reason.code(),
        detail,
    }
}

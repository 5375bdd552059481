//! One request of an application connection, dispatched to the engine: open, put, put1, get,
//! commit, backout, close, MQSC, stop, and the protection the connection's channel asks for.

use crate::icpt::{Icpt, RecentGets, security};
use crate::session::Session;
use crate::signal_stop;
use crate::wiremap::open_options;
pub(crate) use crate::wiremap::{err, get_options};
use sealmq_engine::mqi::PutOptions;
use sealmq_engine::{Hobj, QueueManager};
use sealmq_types::ReasonCode;
use sealmq_types::sync::lock;
use sealmq_wire::{GetReq, Request, Response};
use std::sync::Arc;
use std::sync::atomic::Ordering;

/// The answer to a put or put1 of `stored` (the payload, protected first under interception;
/// a protection failure is a 2063): the descriptor as the queue manager filled it.
fn put_answer(
    stored: Result<Vec<u8>, String>,
    mut md: sealmq_engine::Md,
    syncpoint: bool,
    put: impl FnOnce(&mut sealmq_engine::Md, &[u8], PutOptions) -> sealmq_engine::MqResult<()>,
) -> Response {
    let stored = match stored {
        Ok(b) => b,
        Err(e) => return security(e),
    };
    let pmo = PutOptions {
        syncpoint,
        ..Default::default()
    };
    put(&mut md, &stored, pmo)
        .map(|_| Response::Put { md })
        .unwrap_or_else(err)
}

/// The answer to a get through `h`; what it took from a queue with a policy is remembered
/// (a protection error may be reported for it).
pub(crate) fn got_answer(
    qm: &QueueManager,
    recent: &std::sync::Mutex<RecentGets>,
    h: &Hobj,
    g: &GetReq,
    got: sealmq_engine::MqResult<sealmq_engine::Got>,
) -> Response {
    match got {
        Ok(got) => {
            // Protection errors are reported for queues with a policy only, and subscription
            // queues of protected topics: the digest is taken there, not on every get.
            if g.browse == 0 || g.browse == 3 {
                if qm.has_policy(&h.name) {
                    lock(recent).got(g.hobj, &got.md.msg_id, &got.payload);
                } else if h.name.starts_with(sealmq_engine::subs::MANAGED_PREFIX) {
                    let mut r = lock(recent);
                    if r.protected.contains(&g.hobj) {
                        r.got(g.hobj, &got.md.msg_id, &got.payload);
                    }
                }
            }
            Response::Got {
                md: got.md,
                payload: got.payload,
                data_len: got.data_len as u64,
                warning: got.warning.map(|w| w.code()).unwrap_or(0),
            }
        }
        Err(e) => err(e),
    }
}

impl Session {
    /// Answers one request (`None`: the client disconnects): one method per request kind.
    pub(crate) fn handle(&mut self, req: Request, icpt: &Icpt<'_>) -> Option<Response> {
        // A get whose message the event loop took already (interception) is finished, not
        // refused: the message is in a unit of work of the application's connection.
        if self.qm.is_quiescing()
            && self.taken.is_none()
            && !matches!(
                req,
                Request::Commit | Request::Backout | Request::Close { .. } | Request::Disconnect
            )
        {
            return Some(Response::Err {
                reason: ReasonCode::QMgrQuiescing.code(),
                detail: format!("queue manager {} is ending", self.qm.name()),
            });
        }
        Some(match req {
            Request::Hello { .. } => Response::Err {
                reason: ReasonCode::UnexpectedError.code(),
                detail: "already connected".into(),
            },
            Request::Open {
                name,
                options,
                dyn_name,
            } => self.open(&name, options, dyn_name, icpt),
            Request::OpenAt {
                name,
                qmgr,
                options,
            } => self.open_at(&name, &qmgr, options, icpt),
            Request::Close { hobj } => self.close(hobj),
            Request::Put {
                hobj,
                md,
                payload,
                syncpoint,
            } => self.put(hobj, md, payload, syncpoint, icpt),
            Request::Put1 {
                name,
                md,
                payload,
                syncpoint,
            } => self.put1(&name, md, payload, syncpoint, icpt),
            Request::Get(g) => self.get(&g, icpt),
            Request::Commit => self.conn.commit().map(|_| Response::Ok).unwrap_or_else(err),
            Request::Backout => self
                .conn
                .backout()
                .map(|_| Response::Ok)
                .unwrap_or_else(err),
            Request::Mqsc { script, json } => self.mqsc(&script, json),
            Request::Stop { immediate } => self.stop(immediate),
            Request::Heartbeat => Response::Ok,
            Request::Policy { name } => self.policy(&name),
            Request::ProtectionError {
                hobj,
                md,
                payload,
                check,
                detail,
                signer,
                syncpoint,
            } => {
                let failure = sealmq_engine::dlh::ProtectionFailure {
                    check,
                    detail,
                    signer,
                };
                self.protection_error(hobj, failure, &md, &payload, syncpoint)
            }
            Request::Disconnect => return None,
            r @ (Request::OpenTopic { .. }
            | Request::SubscribeWith { .. }
            | Request::Publish { .. }
            | Request::Subscribe { .. }
            | Request::Unsubscribe { .. }) => self.pubsub_request(r, icpt),
            Request::Consume(_)
            | Request::Credit { .. }
            | Request::Settle { .. }
            | Request::ConsumeStop { .. } => Response::Err {
                reason: ReasonCode::UnexpectedError.code(),
                detail: "asynchronous consume is not served here".into(),
            },
        })
    }

    /// MQOPEN (a model queue makes a dynamic queue named after `dyn_name`, `AMQ.*` when empty).
    fn open(&mut self, name: &str, options: u8, dyn_name: String, icpt: &Icpt<'_>) -> Response {
        let dn = if dyn_name.is_empty() {
            "AMQ.*".to_string()
        } else {
            dyn_name
        };
        let r = self.conn.open_dynamic(name, open_options(options), &dn);
        self.opened(r, name, icpt)
    }

    /// MQOPEN of a queue on another queue manager (output).
    fn open_at(&mut self, name: &str, qmgr: &str, options: u8, icpt: &Icpt<'_>) -> Response {
        let r = self.conn.open_at(name, qmgr, open_options(options));
        self.opened(r, name, icpt)
    }

    /// The policy a get through `hobj` is unprotected under when the queue manager
    /// intercepts: its queue's, or for a subscription's queue its topic's (with a quality of
    /// protection).
    pub(crate) fn intercept_policy(&self, hobj: u32) -> Option<sealmq_protect::Policy> {
        let queue = &self.handles.get(&hobj)?.name;
        let topic = self.topics.get(&hobj).map(String::as_str);
        sealmq_engine::intercept::get_policy(&self.qm, queue, topic)
    }

    /// MQCLOSE.
    fn close(&mut self, hobj: u32) -> Response {
        self.topics.remove(&hobj);
        if self.publishers.remove(&hobj).is_some() {
            return Response::Ok;
        }
        match self.handles.remove(&hobj) {
            Some(h) => {
                lock(&self.recent).closed(hobj);
                let r = self
                    .conn
                    .close(&h)
                    .map(|_| Response::Ok)
                    .unwrap_or_else(err);
                self.closed_subscription(hobj);
                r
            }
            None => no_handle(hobj),
        }
    }

    /// MQPUT (protected first under QM-side interception).
    fn put(
        &self,
        hobj: u32,
        md: sealmq_engine::Md,
        payload: Vec<u8>,
        syncpoint: bool,
        icpt: &Icpt<'_>,
    ) -> Response {
        // A topic opened for output: a put through it is a publication.
        if let Some(topic) = self.publishers.get(&hobj) {
            return self.publish(topic, md, payload, syncpoint, false, icpt);
        }
        match self.handles.get(&hobj) {
            Some(h) => {
                let stored = icpt.protect(&self.qm, &h.name, &md, payload);
                put_answer(stored, md, syncpoint, |md, b, pmo| {
                    self.conn.put(h, md, b, pmo)
                })
            }
            None => no_handle(hobj),
        }
    }

    /// MQPUT1 (protected first under QM-side interception).
    fn put1(
        &self,
        name: &str,
        md: sealmq_engine::Md,
        payload: Vec<u8>,
        syncpoint: bool,
        icpt: &Icpt<'_>,
    ) -> Response {
        let stored = icpt.protect(&self.qm, name, &md, payload);
        put_answer(stored, md, syncpoint, |md, b, pmo| {
            self.conn.put1(name, md, b, pmo)
        })
    }

    /// MQGET (unprotected under QM-side interception when the queue has a policy).
    fn get(&mut self, g: &GetReq, icpt: &Icpt<'_>) -> Response {
        // A message the event loop took for this get once its wait ended (interception).
        let taken = self.taken.take().filter(|t| t.hobj == g.hobj);
        let Some(h) = self.handles.get(&g.hobj) else {
            if self.publishers.contains_key(&g.hobj) {
                return Response::Err {
                    reason: ReasonCode::NotOpenForInput.code(),
                    detail: format!("handle {} is a topic opened to publish", g.hobj),
                };
            }
            return no_handle(g.hobj);
        };
        if icpt.on
            && let Some(policy) = self.intercept_policy(g.hobj)
        {
            return icpt.get(&self.conn, h, g, &policy, taken);
        }
        let got = self.conn.get(h, get_options(g));
        got_answer(&self.qm, &self.recent, h, g, got)
    }

    /// MQSC, for the queue manager's own user.
    fn mqsc(&self, script: &str, json: bool) -> Response {
        if !self.admin {
            return Response::Err {
                reason: ReasonCode::NotAuthorized.code(),
                detail: "MQSC needs the queue manager's own user".into(),
            };
        }
        let r = sealmq_mqsc::run(&self.qm, script);
        let failed = r.iter().filter(|x| !x.ok).count() as u32;
        let text = if json {
            sealmq_mqsc::render_json(&r)
        } else {
            sealmq_mqsc::render_text(&r)
        };
        Response::Mqsc { text, failed }
    }

    /// Stops the queue manager, for its own user.
    fn stop(&self, immediate: bool) -> Response {
        if !self.admin {
            return Response::Err {
                reason: ReasonCode::NotAuthorized.code(),
                detail: "stopping the queue manager needs its own user".into(),
            };
        }
        self.ctx.immediate.store(immediate, Ordering::Relaxed);
        signal_stop(&self.ctx.stop, &self.ctx.stopped, &self.qm);
        Response::Ok
    }

    /// A policy names its recipients and signers: told only to a principal that may inquire
    /// on the queue, or put to it (put1 learns the policy this way).
    fn policy(&self, name: &str) -> Response {
        use sealmq_engine::authority::{AuthObj, auth};
        // A topic's (version 4: `topic://STRING`): told to a principal that may publish or
        // subscribe there.
        if let Some(topic) = name.strip_prefix(sealmq_wire::TOPIC_PREFIX) {
            let may = |a| {
                self.qm
                    .check_topic_authority(&self.conn.user, topic, a)
                    .is_ok()
            };
            if !may(auth::PUB) && !may(auth::SUB) {
                return Response::Err {
                    reason: ReasonCode::NotAuthorized.code(),
                    detail: format!(
                        "'{}' may not read the policy of topic '{topic}': it needs PUB or SUB",
                        self.conn.user
                    ),
                };
            }
            return Response::Policy {
                policy: self
                    .qm
                    .topic_policy(topic)
                    .map(|p| sealmq_engine::policies::encode(&p))
                    .unwrap_or_default(),
            };
        }
        let may = |a| {
            self.qm
                .check_authority(&self.conn.user, AuthObj::Queue, name, a)
                .is_ok()
        };
        if !may(auth::INQ) && !may(auth::PUT) {
            return Response::Err {
                reason: ReasonCode::NotAuthorized.code(),
                detail: format!(
                    "'{}' may not read the policy of '{name}': it needs INQ or PUT on it",
                    self.conn.user
                ),
            };
        }
        Response::Policy {
            policy: self
                .qm
                .policy(name)
                .map(|p| sealmq_engine::policies::encode(&p))
                .unwrap_or_default(),
        }
    }

    /// A message got through `hobj` failed a protection check in the application: moved to
    /// the protection error queue — only for a message this handle really got, so nobody puts
    /// forged entries there.
    fn protection_error(
        &self,
        hobj: u32,
        failure: sealmq_engine::dlh::ProtectionFailure,
        md: &sealmq_engine::Md,
        payload: &[u8],
        syncpoint: bool,
    ) -> Response {
        let Some(h) = self.handles.get(&hobj) else {
            return no_handle(hobj);
        };
        if !lock(&self.recent).take(hobj, &md.msg_id, payload) {
            return Response::Err {
                reason: ReasonCode::NotAuthorized.code(),
                detail: format!(
                    "a protection error may be reported only for a message handle {hobj} got"
                ),
            };
        }
        self.conn
            .put_protection_error(&h.name, failure, md, payload, syncpoint)
            .map(|_| Response::Ok)
            .unwrap_or_else(err)
    }

    /// The reply to an open: the handle registered, and the policy of the name opened.
    pub(crate) fn opened(
        &mut self,
        r: sealmq_engine::MqResult<Hobj>,
        name: &str,
        icpt: &Icpt<'_>,
    ) -> Response {
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
            intercepted: icpt.on,
            // Version 1 peers do not read it: the session drops it for them.
            read_ahead: Some(read_ahead),
        })
    }
}

/// The answer for a handle this connection does not have open.
pub(crate) fn no_handle(h: u32) -> Response {
    Response::Err {
        reason: ReasonCode::HobjError.code(),
        detail: format!("object handle {h} is not open"),
    }
}

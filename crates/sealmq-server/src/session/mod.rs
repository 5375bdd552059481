//! An admitted application connection (a [`Session`]): its engine connection, open handles,
//! consumers and accounting, and the one path every request takes ([`Session::request`]),
//! whichever server reads it (the event loop, `evloop/`, or a thread of its own, `conn.rs`).
//! Each request itself is answered by `dispatch.rs`.

pub(crate) mod dispatch;
pub(crate) mod pubsub;

use crate::consume::Consumers;
use crate::icpt::Icpt;
use crate::icpt::RecentGets;
use crate::{Ctx, observe::acct};
use sealmq_engine::{Connection, Hobj, QueueManager};
use sealmq_types::ReasonCode;
use sealmq_wire::{Request, Response};
use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

/// One application connection once admitted: its engine connection, what its requests work
/// on (open handles, what they got) and what the Hello settled.
pub(crate) struct Session {
    pub(crate) qm: Arc<QueueManager>,
    pub(crate) conn: Connection,
    pub(crate) ctx: Ctx,
    /// The queue manager's own OS user on the local socket (MQSC, stop).
    pub(crate) admin: bool,
    pub(crate) handles: HashMap<u32, Arc<Hobj>>,
    /// Shared with the connection's consumers, which record what they push.
    pub(crate) recent: Arc<Mutex<RecentGets>>,
    pub(crate) next_h: u32,
    /// The protocol version both speak.
    pub(crate) version: u16,
    /// QM-side interception, with the keystore in use when the connection began.
    pub(crate) intercept: bool,
    pub(crate) protector: Option<Arc<sealmq_protect::Protector>>,
    /// Where asynchronous consume's pushers send their frames: made when the first consumer
    /// starts (`make_out` on the event loop, a forwarder of `out` otherwise).
    pushes: Option<crate::consume::PushTx>,
    make_out: Option<MakeOut>,
    consumers: Consumers,
    acct: Option<acct::Accounting>,
    /// Non-durable subscriptions made on this connection, with the handle of their queue:
    /// they end with the handle or the connection.
    pub(crate) nondurable: Vec<(u32, String)>,
    /// The topic string of each handle that is a subscription's queue: under QM-side
    /// interception its gets are unprotected under the topic's policy.
    pub(crate) topics: HashMap<u32, String>,
    /// Topics opened to publish (wire version 5): handle to full topic string.
    pub(crate) publishers: HashMap<u32, String>,
    /// A message the event loop took for the intercepted get it hands to the pool.
    pub(crate) taken: Option<crate::icpt::Taken>,
}

/// What the Hello settled for the rest of the connection.
pub(crate) struct Negotiated<'a> {
    /// The protocol version both speak.
    pub(crate) version: u16,
    /// QM-side interception for this connection's principal.
    pub(crate) intercept: bool,
    pub(crate) appl: &'a str,
    pub(crate) user: &'a str,
}

/// Makes the channel of a connection's pushers (on the event loop, to a writing task).
pub(crate) type MakeOut = Box<dyn FnOnce() -> crate::consume::PushTx + Send>;

/// What becomes of a request.
#[allow(clippy::large_enum_variant)] // one at a time, moved once
pub(crate) enum Flow {
    /// Answer it.
    Reply(Response),
    /// No answer (Credit).
    Silent,
    /// The client disconnects: answer Ok and end.
    End,
    /// Answer it after everything the connection's pushers sent so far: through their
    /// channel (`Session::behind`), never beside it.
    Behind(Response),
}

impl Session {
    pub(crate) fn new(
        qm: &Arc<QueueManager>,
        conn: Connection,
        ctx: &Ctx,
        admin: bool,
        n: &Negotiated<'_>,
        make_out: MakeOut,
    ) -> Self {
        let conn_no = ctx.conns.fetch_add(1, Ordering::Relaxed) + 1;
        Session {
            acct: acct::Accounting::start(qm, &ctx.dir, conn_no, n.user, n.appl),
            qm: qm.clone(),
            conn,
            ctx: ctx.clone(),
            admin,
            handles: HashMap::new(),
            recent: Arc::default(),
            next_h: 1,
            version: n.version,
            intercept: n.intercept,
            protector: ctx.security.protector(),
            pushes: None,
            make_out: Some(make_out),
            consumers: Consumers::default(),
            nondurable: Vec::new(),
            topics: HashMap::new(),
            publishers: HashMap::new(),
            taken: None,
        }
    }

    /// The channel the connection's pushers send through.
    fn pushes(&mut self) -> Result<crate::consume::PushTx, String> {
        if let Some(t) = &self.pushes {
            return Ok(t.clone());
        }
        let make = self
            .make_out
            .take()
            .ok_or_else(|| "the connection's writer has gone".to_string())?;
        let t = make();
        self.pushes = Some(t.clone());
        Ok(t)
    }

    /// Answers request `id`: asynchronous consume's here, the rest in `dispatch.rs`, with
    /// accounting and what an older protocol version cannot carry left out.
    pub(crate) fn request(&mut self, id: u32, req: Request) -> Flow {
        let req = match self.consume_request(id, req) {
            Ok(flow) => return flow,
            Err(req) => req,
        };
        // Closing a handle stops its consumers first: the close's answer then follows what
        // they pushed, so that no push for them arrives after it.
        let mut behind = false;
        if let Request::Close { hobj } = &req {
            behind = self.consumers.close_handle(*hobj);
        }
        let protector = self.protector.clone();
        let icpt = Icpt {
            on: self.intercept,
            protector: protector.as_deref(),
            stored: std::cell::Cell::new(None),
        };
        let call = self.acct.as_ref().map(|_| acct::Accounting::begin(&req));
        let resp = self.handle(req, &icpt);
        match resp {
            Some(r) => {
                let r = self.answered(call, r, icpt.stored.get());
                if behind {
                    self.behind_pushes(r)
                } else {
                    Flow::Reply(r)
                }
            }
            None => Flow::End,
        }
    }

    /// An answer that promises nothing more is pushed before it (docs/wire.md: ConsumeStop,
    /// the Close of a handle with consumers) goes behind the pushes when there are any.
    fn behind_pushes(&self, resp: Response) -> Flow {
        if self.pushes.is_some() {
            Flow::Behind(resp)
        } else {
            Flow::Reply(resp)
        }
    }

    /// Answer `id` as a frame for the pushers' channel, with the channel (`Flow::Behind`): the
    /// channel keeps the order of what the pushers sent; the connection's own answers do not
    /// pass through it. None: no pusher ever started (answer as any other).
    pub(crate) fn behind(
        &self,
        id: u32,
        resp: &Response,
    ) -> Option<(crate::consume::PushTx, Vec<u8>)> {
        let tx = self.pushes.clone()?;
        let mut frame = Vec::new();
        sealmq_wire::write_response_unflushed(&mut frame, id, resp).ok()?;
        Some((tx, frame))
    }

    /// An answer as it leaves: accounted, and without what an older client cannot read.
    pub(crate) fn answered(
        &mut self,
        call: Option<acct::Call>,
        mut resp: Response,
        stored: Option<u64>,
    ) -> Response {
        if let (Some(a), Some(call)) = (self.acct.as_mut(), call) {
            a.end(call, Some(&resp), stored);
        }
        if self.version < sealmq_wire::V_CONSUME
            && let Response::Opened(o) = &mut resp
        {
            o.read_ahead = None;
        }
        // An older client cannot read message properties: it gets the message without.
        if self.version < sealmq_wire::V_PROPERTIES
            && let Response::Got { md, .. } = &mut resp
        {
            md.properties.clear();
        }
        resp
    }

    /// The start of a request's accounting record.
    pub(crate) fn begin(&self, req: &Request) -> Option<acct::Call> {
        self.acct.as_ref().map(|_| acct::Accounting::begin(req))
    }

    /// Asynchronous consume's requests (`Err`: not one of them).
    #[allow(clippy::result_large_err)] // the request handed back, moved once
    fn consume_request(&mut self, id: u32, req: Request) -> Result<Flow, Request> {
        let resp = match req {
            Request::Consume(_)
            | Request::Credit { .. }
            | Request::Settle { .. }
            | Request::ConsumeStop { .. }
                if self.version < sealmq_wire::V_CONSUME =>
            {
                Response::Err {
                    reason: ReasonCode::UnexpectedError.code(),
                    detail: "asynchronous consume needs protocol version 2".into(),
                }
            }
            Request::Credit { tag, n } => {
                self.consumers.credit(tag, n);
                return Ok(Flow::Silent);
            }
            Request::Consume(ref c) => match self.handles.get(&c.hobj).cloned() {
                Some(h) => {
                    let out = match self.pushes() {
                        Ok(o) => o,
                        Err(detail) => {
                            return Ok(Flow::Reply(Response::Err {
                                reason: ReasonCode::ResourceProblem.code(),
                                detail,
                            }));
                        }
                    };
                    let src = crate::consume::Source {
                        qm: &self.qm,
                        conn: &self.conn,
                        hobj: h,
                        topic: self.topics.get(&c.hobj).cloned(),
                        out,
                        intercept: if self.intercept {
                            self.protector.clone()
                        } else {
                            None
                        },
                        strip_properties: self.version < sealmq_wire::V_PROPERTIES,
                        recent: self.recent.clone(),
                    };
                    // The pusher sends the answer before its first push (docs/wire.md:
                    // answered Ok, then the pushes begin).
                    match self.consumers.start(src, c.clone(), id) {
                        Ok(()) => return Ok(Flow::Silent),
                        Err((reason, detail)) => Response::Err { reason, detail },
                    }
                }
                None => Response::Err {
                    reason: ReasonCode::HobjError.code(),
                    detail: format!("object handle {} is not open", c.hobj),
                },
            },
            Request::Settle { tag, batch, commit } => {
                let (reason, detail) = self.consumers.settle(tag, batch, commit);
                Response::Settled {
                    tag,
                    batch,
                    reason,
                    detail,
                }
            }
            Request::ConsumeStop { tag } => {
                if self.consumers.stop(tag) {
                    // Everything the consumer pushed goes before the answer.
                    return Ok(self.behind_pushes(Response::Ok));
                } else {
                    Response::Err {
                        reason: ReasonCode::UnexpectedError.code(),
                        detail: format!("no consumer {tag}"),
                    }
                }
            }
            other => return Err(other),
        };
        Ok(Flow::Reply(resp))
    }

    /// The connection ends: its pushers first (their unsettled batches are backed out), then
    /// its handles are closed (its unit of work is backed out as the engine connection drops).
    pub(crate) fn end(mut self) {
        drop(std::mem::take(&mut self.consumers));
        for (_, h) in self.handles.drain() {
            let _ = self.conn.close(&h);
        }
        for (_, n) in std::mem::take(&mut self.nondurable) {
            let _ = self.qm.delete_sub(&n);
        }
        if let Some(a) = self.acct.take() {
            a.finish();
        }
    }
}

/// The answer to a malformed frame (the connection is then closed).
pub(crate) fn protocol_error(m: &str) -> Response {
    Response::Err {
        reason: ReasonCode::UnexpectedError.code(),
        detail: format!("protocol error: {m}; closing the connection"),
    }
}

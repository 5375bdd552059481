//! An admitted application connection (a [`Session`]): its requests read one at a time
//! and answered, asynchronous consume's requests served beside them, accounting, DISCINT,
//! and the end of the connection (consumers stopped, handles closed, the unit of work backed
//! out). Each request itself is answered by `dispatch.rs`.

use crate::conn::{missed_deadline, svrconn_discint, wait_readable};
use crate::dispatch::RecentGets;
use crate::icpt::Icpt;
use crate::peer::Peer;
use crate::{Ctx, HANDSHAKE, acct};
use sealmq_engine::{Connection, Hobj, QueueManager};
use sealmq_types::ReasonCode;
use sealmq_types::sync::lock;
use sealmq_wire::{Request, Response, WireError};
use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

/// One application connection once admitted: its engine connection and what its requests
/// work on (open handles, what they got).
pub(crate) struct Session<'a> {
    pub(crate) qm: &'a Arc<QueueManager>,
    pub(crate) conn: Connection,
    pub(crate) ctx: &'a Ctx,
    /// The queue manager's own OS user on the local socket (MQSC, stop).
    pub(crate) admin: bool,
    pub(crate) handles: HashMap<u32, Arc<Hobj>>,
    /// Shared with the connection's consumers, which record what they push.
    pub(crate) recent: Arc<Mutex<RecentGets>>,
    pub(crate) next_h: u32,
}

/// What the Hello settled for the rest of the connection.
pub(crate) struct Negotiated<'a> {
    /// The protocol version both speak.
    pub(crate) version: u16,
    /// The largest frame a request may be.
    pub(crate) max_frame: usize,
    /// QM-side interception for this connection's principal.
    pub(crate) intercept: bool,
    pub(crate) channel: &'a str,
    pub(crate) appl: &'a str,
    pub(crate) user: &'a str,
}

impl<'a> Session<'a> {
    pub(crate) fn new(
        qm: &'a Arc<QueueManager>,
        conn: Connection,
        ctx: &'a Ctx,
        admin: bool,
    ) -> Self {
        Session {
            qm,
            conn,
            ctx,
            admin,
            handles: HashMap::new(),
            recent: Arc::default(),
            next_h: 1,
        }
    }

    /// Serves requests until the client disconnects, the connection fails or the queue
    /// manager stops; then ends the connection.
    pub(crate) fn serve(
        mut self,
        mut r: impl BufRead + Send + 'static,
        w: impl Write + Send + 'static,
        peer: &Peer,
        n: &Negotiated<'_>,
    ) {
        let (qm, ctx) = (self.qm, self.ctx);
        let (version, max_frame, intercept, channel, appl, user) = (
            n.version,
            n.max_frame,
            n.intercept,
            n.channel,
            n.appl,
            n.user,
        );
        // From here on the connection's pushers (asynchronous consume) write too.
        // A write that fails ends the connection (docs/wire.md, write stall).
        let w = crate::peer::EndOnFailure {
            w,
            end: peer.shutter(),
        };
        let out: crate::consume::Out = Arc::new(std::sync::Mutex::new(Box::new(w)));
        let mut consumers = crate::consume::Consumers::default();
        // QM-side interception keeps the keystore in use when the connection began.
        let protector = ctx.security.protector();
        let conn_no = ctx.conns.fetch_add(1, Ordering::Relaxed) + 1;
        let mut acct = acct::Accounting::start(qm, &ctx.dir, conn_no, user, appl);
        // Waiting for a request may take forever (an idle application) unless the SVRCONN has a
        // DISCINT; once its first byte is here, the rest must follow within HANDSHAKE (the
        // socket's read timeout, shorter when DISCINT is).
        let idle_limit = svrconn_discint(qm, channel);
        if let (Some(limit), Peer::Tcp { sock: Some(s), .. }) = (idle_limit, peer) {
            let _ = s.set_read_timeout(Some(limit.min(HANDSHAKE)));
        }
        let mut last = std::time::Instant::now();
        loop {
            match wait_readable(&mut r, ctx, idle_limit.map(|l| (last, l))) {
                Some(true) => {}
                Some(false) => break,
                None => {
                    if let Some(l) = idle_limit.filter(|l| last.elapsed() >= *l) {
                        tracing::info!(
                            channel = %channel,
                            peer = %peer.describe(),
                            "client idle for DISCINT({}) seconds: connection ended",
                            l.as_secs()
                        );
                    }
                    break;
                }
            }
            let (id, req) = match sealmq_wire::read_request(&mut r, max_frame) {
                Ok(Some(x)) => x,
                Ok(None) => break,
                Err(WireError::Io(e)) => {
                    missed_deadline(&e, ctx, peer, "stopped in the middle of a frame");
                    break;
                }
                Err(WireError::Protocol(m)) => {
                    let _ = sealmq_wire::write_response(
                        &mut *lock(&out),
                        0,
                        &Response::Err {
                            reason: ReasonCode::UnexpectedError.code(),
                            detail: format!("protocol error: {m}; closing the connection"),
                        },
                    );
                    break;
                }
            };
            last = std::time::Instant::now();
            let consume = match req {
                Request::Consume(_)
                | Request::Credit { .. }
                | Request::Settle { .. }
                | Request::ConsumeStop { .. }
                    if version < sealmq_wire::V_CONSUME =>
                {
                    Some(Response::Err {
                        reason: ReasonCode::UnexpectedError.code(),
                        detail: "asynchronous consume needs protocol version 2".into(),
                    })
                }
                Request::Credit { tag, n } => {
                    consumers.credit(tag, n);
                    continue;
                }
                Request::Consume(ref c) => Some(match self.handles.get(&c.hobj) {
                    Some(h) => {
                        let src = crate::consume::Source {
                            qm,
                            conn: &self.conn,
                            hobj: h.clone(),
                            out: out.clone(),
                            intercept: if intercept { protector.clone() } else { None },
                            strip_properties: version < sealmq_wire::V_PROPERTIES,
                            recent: self.recent.clone(),
                        };
                        match consumers.start(src, c.clone()) {
                            Ok(()) => Response::Ok,
                            Err((reason, detail)) => Response::Err { reason, detail },
                        }
                    }
                    None => Response::Err {
                        reason: ReasonCode::HobjError.code(),
                        detail: format!("object handle {} is not open", c.hobj),
                    },
                }),
                Request::Settle { tag, batch, commit } => {
                    let (reason, detail) = consumers.settle(tag, batch, commit);
                    Some(Response::Settled {
                        tag,
                        batch,
                        reason,
                        detail,
                    })
                }
                Request::ConsumeStop { tag } => Some(if consumers.stop(tag) {
                    Response::Ok
                } else {
                    Response::Err {
                        reason: ReasonCode::UnexpectedError.code(),
                        detail: format!("no consumer {tag}"),
                    }
                }),
                ref other => {
                    if let Request::Close { hobj } = other {
                        consumers.close_handle(*hobj);
                    }
                    None
                }
            };
            if let Some(resp) = consume {
                if sealmq_wire::write_response(&mut *lock(&out), id, &resp).is_err() {
                    break;
                }
                continue;
            }
            let icpt = Icpt {
                on: intercept,
                protector: protector.as_deref(),
                stored: std::cell::Cell::new(None),
            };
            let call = acct.as_ref().map(|_| acct::Accounting::begin(&req));
            let resp = self.handle(req, &icpt);
            if let (Some(a), Some(call)) = (acct.as_mut(), call) {
                a.end(call, resp.as_ref(), icpt.stored.get());
            }
            let mut resp = resp;
            if version < sealmq_wire::V_CONSUME
                && let Some(Response::Opened(o)) = resp.as_mut()
            {
                o.read_ahead = None;
            }
            // An older client cannot read message properties: it gets the message without.
            if version < sealmq_wire::V_PROPERTIES
                && let Some(Response::Got { md, .. }) = resp.as_mut()
            {
                md.properties.clear();
            }
            let done = resp.is_none();
            if let Some(resp) = resp
                && sealmq_wire::write_response(&mut *lock(&out), id, &resp).is_err()
            {
                break;
            }
            if done {
                let _ = sealmq_wire::write_response(&mut *lock(&out), id, &Response::Ok);
                break;
            }
            last = std::time::Instant::now();
        }

        // Pushers end first; their unsettled batches are backed out.
        drop(consumers);
        self.end();
        if let Some(a) = acct {
            a.finish();
        }
    }

    /// The connection ends: its handles are closed (its unit of work is backed out as the
    /// engine connection drops).
    fn end(mut self) {
        for (_, h) in self.handles.drain() {
            let _ = self.conn.close(&h);
        }
    }
}

//! An admitted application connection (a [`Session`]) and the one path every request of it
//! takes, [`Session::serve`]: whichever front end reads the frames (today the event loop's
//! native protocol, `net/evloop/`), it turns each into one `serve` call and the answer into a
//! frame. One file per request family, each an `async` method that awaits the log or a
//! queue's wake-up on the loop and moves to the blocking pool only where it must (QM-side
//! interception, MQSC, the rare request that writes a durable record):
//!
//! | file | requests |
//! |---|---|
//! | `connect.rs` | Hello after the handshake, Heartbeat, Disconnect, the connection's end |
//! | `open.rs` | MQOPEN (queues, another queue manager's), MQCLOSE |
//! | `put.rs` | MQPUT, MQPUT1 |
//! | `get.rs` | MQGET and browse, with waits that hold no thread |
//! | `uow.rs` | MQCMIT, MQBACK |
//! | `pubsub.rs` | topics opened to publish, publications, MQSUB, unsubscribe |
//! | `consume.rs` | asynchronous consume: start, credit, settle, stop |
//! | `inquire.rs` | a name's policy, a protection error reported by the application |
//! | `admin.rs` | MQSC and stop, for the queue manager's own user |
//! | `pool.rs` | the blocking pool, and the administrator's thread of its own |
//! | `client.rs` | what a waiting get watches: its client's socket and the connection's end |

mod admin;
mod client;
mod connect;
mod consume;
mod get;
mod inquire;
mod open;
mod pool;
pub(crate) mod pubsub;
mod put;
mod reprotect;
mod uow;

pub(crate) use client::Client;

use crate::consume::Consumers;
use crate::icpt::RecentGets;
use crate::{Ctx, observe::acct};
use sealmq_engine::{Connection, Hobj, QueueManager};
use sealmq_types::ReasonCode;
use sealmq_wire::{Request, Response};
use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use tokio::io::AsyncRead;

/// One application connection once admitted: its engine connection, what its requests work
/// on (open handles, what they got) and what the Hello settled.
pub(crate) struct Session {
    pub(crate) qm: Arc<QueueManager>,
    /// Shared with the blocking pool while a request of this connection is there.
    pub(crate) conn: Arc<Connection>,
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
    /// starts (`make_out`, to the event loop's writing task).
    pushes: Option<crate::consume::PushTx>,
    make_out: Option<MakeOut>,
    consumers: Consumers,
    acct: Option<acct::Accounting>,
    /// The size of the message as stored, when the request being served protected or
    /// unprotected one (accounting reports stored sizes).
    stored: Option<u64>,
    /// Non-durable subscriptions made on this connection, with the handle of their queue:
    /// they end with the handle or the connection.
    pub(crate) nondurable: Vec<(u32, String)>,
    /// What a front end puts before a got message's payload (MQ's client protocol: an
    /// MQRFH2), counted against the get's buffer: set by the front end for its next gets.
    pub(crate) get_header: Option<sealmq_mqi::HeaderLen>,
    /// The topic string of each handle that is a subscription's queue: under QM-side
    /// interception its gets are unprotected under the topic's policy.
    pub(crate) topics: HashMap<u32, String>,
    /// Topics opened to publish (wire version 5): handle to full topic string.
    pub(crate) publishers: HashMap<u32, String>,
    /// `sealmq reprotect`'s rewrapper, for the keystore directory it was made from.
    rewrapper: Option<(String, Arc<sealmq_protect::rewrap::Rewrapper>)>,
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
    /// No answer (Credit, a consumer started: its pusher answers).
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
            conn: Arc::new(conn),
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
            stored: None,
            nondurable: Vec::new(),
            get_header: None,
            topics: HashMap::new(),
            publishers: HashMap::new(),
            rewrapper: None,
        }
    }

    /// Serves request `id`, the one path of every application request: refused while the
    /// queue manager ends (except what finishes work), accounted, answered by its family's
    /// method, and cut to what the client's protocol version can read.
    pub(crate) async fn serve<R: AsyncRead + Unpin>(
        &mut self,
        id: u32,
        req: Request,
        client: &mut Client<'_, R>,
    ) -> Flow {
        // Asynchronous consume's requests are neither refused here nor accounted: a pusher
        // ends with the queue manager, and answers for itself.
        if let r @ (Request::Consume(_)
        | Request::Credit { .. }
        | Request::Settle { .. }
        | Request::ConsumeStop { .. }) = req
        {
            return Box::pin(self.consume_request(id, r)).await;
        }
        let finishing = matches!(
            req,
            Request::Commit | Request::Backout | Request::Close { .. } | Request::Disconnect
        );
        if self.qm.is_quiescing() && !finishing {
            return Flow::Reply(Response::Err {
                reason: ReasonCode::QMgrQuiescing.code(),
                detail: format!("queue manager {} is ending", self.qm.name()),
            });
        }
        let call = self.acct.as_ref().map(|_| acct::Accounting::begin(&req));
        self.stored = None;
        match self.dispatch(req, client).await {
            Flow::Reply(r) => Flow::Reply(self.answered(call, r)),
            Flow::Behind(r) => Flow::Behind(self.answered(call, r)),
            other => other,
        }
    }

    /// The request to its family's method. The families that are not on the hot path (open,
    /// publish/subscribe, inquiries, administration) are boxed: the state of every request's
    /// future is then only as large as a put's, a get's or a commit's.
    async fn dispatch<R: AsyncRead + Unpin>(
        &mut self,
        req: Request,
        client: &mut Client<'_, R>,
    ) -> Flow {
        let resp = match req {
            Request::Hello { .. } | Request::Heartbeat | Request::Disconnect => {
                return self.connection(req);
            }
            Request::Open { .. } | Request::OpenAt { .. } => Box::pin(self.open_request(req)).await,
            Request::Close { hobj } => return self.close(hobj).await,
            Request::Put {
                hobj,
                md,
                payload,
                syncpoint,
            } => self.put(hobj, md, payload, syncpoint).await,
            Request::Put1 {
                name,
                md,
                payload,
                syncpoint,
            } => self.put1(name, md, payload, syncpoint).await,
            Request::Put1At {
                name,
                md,
                payload,
                syncpoint,
                epoch,
            } => self.put1_at(name, md, payload, syncpoint, epoch).await,
            Request::Get(g) => self.get(&g, client).await,
            Request::Commit => self.commit().await,
            Request::Backout => self.backout().await,
            Request::Mqsc { script, json } => Box::pin(self.mqsc(script, json)).await,
            Request::Stop { immediate } => Box::pin(self.stop(immediate)).await,
            Request::Reprotect {
                queue,
                keystore,
                start,
                rank,
                seq,
                batch,
                dry_run,
            } => {
                let step = reprotect::Step {
                    queue,
                    keystore,
                    after: (!start).then_some((rank, seq)),
                    batch: batch.clamp(1, 10_000),
                    dry_run,
                };
                Box::pin(self.reprotect(step)).await
            }
            Request::Policy { .. } | Request::ProtectionError { .. } => {
                Box::pin(self.inquire_request(req)).await
            }
            r @ (Request::OpenTopic { .. }
            | Request::SubscribeWith { .. }
            | Request::Publish { .. }
            | Request::Subscribe { .. }
            | Request::Unsubscribe { .. }) => Box::pin(self.pubsub_request(r)).await,
            Request::Consume(_)
            | Request::Credit { .. }
            | Request::Settle { .. }
            | Request::ConsumeStop { .. } => Response::Err {
                reason: ReasonCode::UnexpectedError.code(),
                detail: "asynchronous consume is served before this".into(),
            },
        };
        Flow::Reply(resp)
    }

    /// An answer as it leaves: accounted, and without what an older client cannot read.
    fn answered(&mut self, call: Option<acct::Call>, mut resp: Response) -> Response {
        if let (Some(a), Some(call)) = (self.acct.as_mut(), call) {
            a.end(call, Some(&resp), self.stored.take());
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
        // ... nor MQMD's later fields.
        if self.version < sealmq_wire::V_MD_MORE
            && let Response::Got { md, .. } | Response::Put { md } = &mut resp
        {
            md.clear_more();
        }
        resp
    }
}

/// The answer to a malformed frame (the connection is then closed).
pub(crate) fn protocol_error(m: &str) -> Response {
    Response::Err {
        reason: ReasonCode::UnexpectedError.code(),
        detail: format!("protocol error: {m}; closing the connection"),
    }
}

/// The answer for a handle this connection does not have open.
pub(crate) fn no_handle(h: u32) -> Response {
    Response::Err {
        reason: ReasonCode::HobjError.code(),
        detail: format!("object handle {h} is not open"),
    }
}

/// Whether a non-durable subscription's queue is still open for input elsewhere once this
/// connection closed its handle: a shared subscription's other consumers.
fn shared_still(qm: &sealmq_engine::QueueManager, queue: &str) -> bool {
    qm.queue_status(queue).is_ok_and(|s| s.input_opens > 0)
}

//! One conversation of an MQ client's socket: who it is (USERID_DATA, CONAUTH_INFO), its
//! MQCONN admitted exactly as a native Hello is (`welcome`: CHLAUTH, CONNAUTH, MAXINST...),
//! then its MQI flows served one at a time through its `Session` (`flows.rs`).

use super::super::Stream;
use super::consumers::{Consumers, next_push};
use super::handles::Handles;
use super::{Flow, Socket};
use crate::Ctx;
use crate::net::welcome::welcome;
use crate::session::Session;
use sealmq_engine::QueueManager;
use sealmq_fap::api::{self, ApiHeader};
use sealmq_fap::auth;
use sealmq_fap::tsh::{Kind, seg};
use sealmq_types::ReasonCode;
use std::sync::Arc;
use tokio::sync::mpsc;

/// What the conversation's task serves next.
enum Next {
    Flow(Option<Flow>),
    Pushed(Option<(Vec<u8>, u32)>),
}

/// A conversation's state.
pub(super) struct Conv<S> {
    pub(super) id: u32,
    pub(super) sock: Arc<Socket<S>>,
    pub(super) qm: Arc<QueueManager>,
    pub(super) ctx: Ctx,
    /// The client process's user (USERID_DATA), asserted when no CAUT names one.
    uid_user: String,
    creds: Option<auth::Credentials>,
    pub(super) session: Option<Session>,
    pub(super) handles: Handles,
    pub(super) appl: String,
    pub(super) consumers: Consumers,
}

/// Starts conversation `id`'s task; its flows go to the sender returned.
pub(super) fn start<S: Stream>(
    qm: &Arc<QueueManager>,
    ctx: &Ctx,
    sock: &Arc<Socket<S>>,
    id: u32,
) -> mpsc::Sender<Flow> {
    let (tx, rx) = mpsc::channel(super::CONV_QUEUE);
    let c = Conv {
        id,
        sock: sock.clone(),
        qm: qm.clone(),
        ctx: ctx.clone(),
        uid_user: String::new(),
        creds: None,
        session: None,
        handles: Handles::default(),
        appl: String::new(),
        consumers: Consumers::default(),
    };
    tokio::spawn(c.run(rx));
    tx
}

impl<S: Stream> Conv<S> {
    async fn run(mut self, mut rx: mpsc::Receiver<Flow>) {
        loop {
            let next = tokio::select! {
                f = rx.recv() => Next::Flow(f),
                _ = self.sock.ended.notified() => Next::Flow(None),
                p = next_push(self.consumers.rx()) => Next::Pushed(p),
            };
            let go_on = match next {
                Next::Flow(Some(f)) => self.flow(f).await,
                // The socket ended, or the conversation did (END_CONV).
                Next::Flow(None) => break,
                Next::Pushed(Some((bytes, room))) => {
                    let ok = self.pushed(bytes).await;
                    if let Some(rx) = self.consumers.rx() {
                        rx.written(room);
                    }
                    ok
                }
                Next::Pushed(None) => {
                    self.consumers.rx_ended();
                    true
                }
            };
            if !go_on {
                // A conversation that broke the protocol (logged) or cannot write ends its
                // socket, as MQ ends the channel instance: the client learns it at once.
                self.sock.ended.notify_waiters();
                break;
            }
        }
        // Closing handles may wait for the log: on the blocking pool.
        if let Some(s) = self.session.take() {
            let _ = tokio::task::spawn_blocking(move || s.end()).await;
        }
    }

    /// Serves one flow; `false` ends the conversation.
    async fn flow(&mut self, f: Flow) -> bool {
        let order = f.tsh.order;
        match f.tsh.seg_type {
            seg::USERID_DATA => {
                if let Ok(u) = auth::parse_uid(&f.body, order) {
                    self.uid_user = if u.long_user.is_empty() {
                        u.user
                    } else {
                        u.long_user
                    };
                }
                true
            }
            seg::CONAUTH_INFO => match auth::parse_caut(&f.body, order) {
                Ok(c) => {
                    self.creds = Some(c);
                    let st = sealmq_fap::sockact::status(0, order);
                    self.sock
                        .send(Kind::Multiplexed, seg::STATUS_DATA, self.id, f.tsh.req, &st)
                        .await
                }
                Err(e) => self.refuse_flow(&e.0),
            },
            seg::MQCONN => self.connect(f).await,
            seg::NOTIFICATION if self.session.is_some() => self.notification(&f).await,
            seg::REQUEST_MSGS if self.session.is_some() => self.request_msgs(&f).await,
            seg::MQDISC => {
                if let Some(s) = self.session.take() {
                    let _ = tokio::task::spawn_blocking(move || s.end()).await;
                }
                self.handles = Handles::default();
                self.reply(&f, 0, 0, &[]).await
            }
            t if (seg::MQCONN..seg::MQCONN + seg::REPLY).contains(&t) => {
                if self.session.is_none() {
                    return self.reply(&f, ReasonCode::HconnError.code(), 0, &[]).await;
                }
                self.mqi(f).await
            }
            t => self.refuse_flow(&format!(
                "segment type 0x{t:02x} is not served on a conversation"
            )),
        }
    }

    /// Ends the conversation for a flow that breaks the protocol (logged).
    fn refuse_flow(&self, why: &str) -> bool {
        self.ctx.security.events.log(&format!(
            "MQ client {} conversation {}: {why}; conversation closed",
            self.sock.peer.describe(),
            self.id
        ));
        false
    }

    /// MQCONN: the principal admitted on the blocking pool (PAM may block), then a session.
    #[allow(clippy::result_large_err)] // once per conversation
    async fn connect(&mut self, f: Flow) -> bool {
        let order = f.tsh.order;
        let body = f.body.get(api::API_LEN..).unwrap_or_default();
        let conn = match api::parse_conn(body, order) {
            Ok(c) => c,
            Err(e) => return self.refuse_flow(&e.0),
        };
        if self.session.is_some() {
            return self
                .reply(&f, ReasonCode::AlreadyConnected.code(), 0, body)
                .await;
        }
        // Another queue manager's name (blank and `*`-prefixed names take this one, as MQ's
        // client channel definitions allow): 2059, as MQ answers it.
        let me = self.qm.name();
        if !conn.qmgr.is_empty() && !conn.qmgr.starts_with('*') && conn.qmgr != me {
            tracing::info!(peer = %self.sock.peer.describe(), asked = %conn.qmgr, "MQCONN for another queue manager refused (2059)");
            return self
                .reply(&f, ReasonCode::QMgrNotAvailable.code(), 0, body)
                .await;
        }
        let (user, password) = match self.creds.take() {
            Some(c) => (c.user.clone(), sealmq_wire::Secret::new(&c.password)),
            // The client process's own user (USERID_DATA) is no authenticated user: without
            // MQCSP it asserts nothing (MCAUSER, CHLAUTH and the TLS peer decide).
            None => (String::new(), sealmq_wire::Secret::default()),
        };
        let hello = sealmq_wire::Hello {
            versions: vec![*sealmq_wire::VERSIONS.last().unwrap_or(&1)],
            max_msg: self.sock.granted.max_msg,
            appl: conn.appl.clone(),
            channel: self.sock.channel.clone(),
            user,
            password,
        };
        let (qm, ctx, peer) = (self.qm.clone(), self.ctx.clone(), self.sock.peer.clone());
        let welcomed = tokio::task::spawn_blocking(move || welcome(&qm, &ctx, &peer, hello)).await;
        let (c, a) = match welcomed {
            Ok(Ok((c, a, _))) => (c, a),
            Ok(Err(sealmq_wire::Response::Err { reason, detail })) => {
                tracing::info!(peer = %self.sock.peer.describe(), channel = %self.sock.channel, "MQCONN refused ({reason}): {detail}");
                return self.reply(&f, reason, 0, body).await;
            }
            _ => {
                return self
                    .reply(&f, ReasonCode::UnexpectedError.code(), 0, body)
                    .await;
            }
        };
        let n = a.negotiated();
        // The push channel of asynchronous consume: its receiving end to this task.
        let slot = self.consumers.slot.clone();
        let make_out: crate::session::MakeOut = Box::new(move || {
            let (tx, rx) = crate::consume::pushchan::channel();
            *sealmq_types::sync::lock(&slot) = Some(rx);
            tx
        });
        self.appl = a.appl.clone();
        self.session = Some(Session::new(&self.qm, c, &self.ctx, a.admin, &n, make_out));
        let answer = api::conn_reply(body, &self.qm.name());
        self.reply(&f, 0, 0, &answer).await
    }

    /// Sends the reply of MQI flow `f`: its type + 0x10, the API header with `rc` and
    /// `hobj`, then `body`.
    pub(super) async fn reply(&mut self, f: &Flow, rc: u32, hobj: u32, body: &[u8]) -> bool {
        let kind = Kind::Multiplexed;
        let len = (kind.header_len() + api::API_LEN + body.len()) as u32;
        let mut b = ApiHeader::reply(len, rc, hobj, f.tsh.order);
        b.extend_from_slice(body);
        self.sock
            .send(kind, f.tsh.seg_type | seg::REPLY, self.id, f.tsh.req, &b)
            .await
    }
}

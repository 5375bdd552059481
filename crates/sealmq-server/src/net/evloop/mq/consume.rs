//! Asynchronous consume for an MQ client (a JMS `MessageListener`: MQCB/MQCTL on the client's
//! side). The client's REQUEST_MSGS start a consumer of the session — the same pusher a native
//! client's Consume starts (`crate::consume`) — and grant it credit; what the pusher sends
//! (native frames on the session's push channel) goes to the client as ASYNC_MESSAGE segments.
//!
//! Each push is a batch of one message in a unit of work of its own. A message the client's
//! get options take under syncpoint (MQGMO_SYNCPOINT, or SYNCPOINT_IF_PERSISTENT and
//! persistent) is sent at once and its batch held until the client's MQCMIT or MQBACK, which
//! settle it after the conversation's own unit of work; any other is settled (its removal made
//! durable) before it is sent.

use super::super::Stream;
use super::consumers::{ASYNC_REQUEST_ID, Consumer};
use super::conv::Conv;
use super::handles::Obj;
use super::{Flow, msg, rc_of};
use sealmq_fap::bytes::Order;
use sealmq_fap::consume::{AsyncMessage, Notification, RequestMsgs, notify, rqst};
use sealmq_fap::opts::gmo;
use sealmq_fap::tsh::{Kind, flags, seg};
use sealmq_types::ReasonCode;
use sealmq_wire::{ConsumeReq, Delivery, Request, Response, consume::mode};

/// CONN_STATE's value for a started connection (0: stopped).
const CONN_STARTED: u32 = 2;

/// The largest pushed frame read back (a message at MAXMSGL and its descriptor).
const MAX_PUSHED: usize = 512 << 20;

impl<S: Stream> Conv<S> {
    /// A NOTIFICATION of the client: the connection started or stopped (MQCTL), a consumer's
    /// state, a unit of work allowed. Consumers run once they ask for messages; a stopped
    /// connection's consumers stop asking.
    pub(super) async fn notification(&mut self, f: &Flow) -> bool {
        let n = match Notification::parse(&f.body, f.tsh.order) {
            Ok(n) => n,
            Err(e) => return self.protocol(&e.0),
        };
        tracing::debug!(
            conv = self.id,
            hobj = n.hobj,
            code = n.code,
            value = n.value,
            "MQ client notification"
        );
        if n.code != notify::CONN_STATE || n.value == CONN_STARTED {
            return true;
        }
        // Stopped (MQCTL STOP, the connection closing): nothing more is pushed, what was
        // pushed goes first, then the reply says so.
        if !self.stop_consumers().await {
            return false;
        }
        let reply = Notification {
            hobj: n.hobj,
            code: notify::CONN_STATE_REPLY,
            value: n.value,
        };
        self.sock
            .send(
                Kind::Multiplexed,
                seg::NOTIFICATION,
                self.id,
                f.tsh.req,
                &reply.encode(self.sock.order),
            )
            .await
    }

    /// Stops every consumer, then sends what they pushed before they stopped.
    async fn stop_consumers(&mut self) -> bool {
        let tags: Vec<u32> = self.consumers.by_hobj.values().map(|c| c.tag).collect();
        for tag in tags {
            let _ = self.serve(Request::ConsumeStop { tag }).await;
        }
        while let Some((bytes, room)) = self.consumers.rx().and_then(|rx| rx.try_recv()) {
            let ok = self.pushed(bytes).await;
            if let Some(rx) = self.consumers.rx() {
                rx.written(room);
            }
            if !ok {
                return false;
            }
        }
        self.consumers.by_hobj.clear();
        true
    }

    /// REQUEST_MSGS: the handle's consumer started with this credit, or given more.
    pub(super) async fn request_msgs(&mut self, f: &Flow) -> bool {
        let order = f.tsh.order;
        let r = match RequestMsgs::parse(&f.body, order) {
            Ok(r) => r,
            Err(e) => return self.protocol(&e.0),
        };
        let (resolved, propctl) = match self.handles.map.get(&r.hobj) {
            Some(Obj::Session { resolved, propctl }) => (resolved.clone(), *propctl),
            _ => {
                return self
                    .async_refusal(f.tsh.req, r.hobj, ReasonCode::HobjError.code())
                    .await;
            }
        };
        let confirm = f.tsh.flags1 & flags::CONFIRM_REQUEST != 0;
        if let Some(c) = self.consumers.by_hobj.get_mut(&r.hobj) {
            if !confirm {
                c.req = f.tsh.req;
            }
            let more = c.allowance <= 0 || std::mem::take(&mut c.paused);
            c.allowance = i64::from(r.requested.max(1));
            let tag = c.tag;
            let flush_now = r.flags & rqst::CHECK != 0 && {
                c.check = Some(f.tsh.req);
                c.empty && c.batch.is_empty()
            };
            if more {
                let _ = self.serve(Request::Credit { tag, n: 1 }).await;
            }
            if flush_now {
                return self.flushed(r.hobj).await;
            }
            return true;
        }
        self.consumers.last_tag = self.consumers.last_tag.wrapping_add(1).max(1);
        let tag = self.consumers.last_tag;
        let sel = r
            .selection
            .clone()
            .unwrap_or(sealmq_fap::consume::Selection {
                index: 0,
                md_version: 2,
                ccsid: 1208,
                encoding: 273,
                match_options: 0,
                msg_id: None,
                correl_id: None,
            });
        let start = ConsumeReq {
            hobj: r.hobj,
            tag,
            mode: mode::SYNCPOINT,
            window: 1,
            batch: 1,
            batch_ms: 0,
            match_msg_id: sel.msg_id,
            match_correl_id: sel.correl_id,
        };
        self.consumers.by_hobj.insert(
            r.hobj,
            Consumer {
                tag,
                // A request that asks to be confirmed is an exchange: the client takes what
                // comes with its id as the answer (the NOTIFICATION below), so messages come
                // with the id the client's async consume uses (1, as observed) instead.
                req: if confirm { ASYNC_REQUEST_ID } else { f.tsh.req },
                paused: false,
                gmo_options: r.gmo_options,
                propctl,
                md_version: u32::from(sel.md_version.clamp(1, 2)),
                selection_index: sel.index,
                sent: 0,
                allowance: i64::from(r.requested.max(1)),
                empty: false,
                check: (r.flags & rqst::CHECK != 0).then_some(f.tsh.req),
                batch: Vec::new(),
                resolved,
            },
        );
        match self.serve(Request::Consume(start)).await {
            Response::Err { reason, .. } => {
                self.consumers.by_hobj.remove(&r.hobj);
                self.async_refusal(f.tsh.req, r.hobj, reason).await
            }
            _ => true,
        }
    }

    /// What the session's pushers sent: each frame read back and answered to the client.
    pub(super) async fn pushed(&mut self, bytes: Vec<u8>) -> bool {
        let mut rest = &bytes[..];
        while !rest.is_empty() {
            let frame = match sealmq_wire::read_response(&mut rest, MAX_PUSHED) {
                Ok(Some((_, r))) => r,
                Ok(None) => break,
                Err(e) => {
                    tracing::error!(conv = self.id, "a pushed frame did not read back: {e}");
                    return false;
                }
            };
            if !self.push(frame).await {
                return false;
            }
        }
        true
    }

    async fn push(&mut self, r: Response) -> bool {
        match r {
            Response::Delivery(d) => {
                if let Some(h) = self.consumers.hobj_of(d.tag)
                    && let Some(c) = self.consumers.by_hobj.get_mut(&h)
                {
                    c.empty = false;
                    c.batch.push(d);
                }
                true
            }
            Response::BatchEnd { tag, count: 0, .. } => {
                let Some(hobj) = self.consumers.hobj_of(tag) else {
                    return true;
                };
                let checked = self.consumers.by_hobj.get_mut(&hobj).and_then(|c| {
                    c.empty = true;
                    c.check.is_some().then_some(())
                });
                match checked {
                    Some(()) => self.flushed(hobj).await,
                    None => true,
                }
            }
            Response::BatchEnd { tag, batch, count } if count > 0 => {
                self.batch_ended(tag, batch).await
            }
            Response::Settled {
                tag,
                batch: 0,
                reason,
                detail,
            } => {
                // The consumer ended (its queue deleted, get inhibited...).
                let Some(hobj) = self.consumers.hobj_of(tag) else {
                    return true;
                };
                tracing::info!(
                    conv = self.id,
                    hobj,
                    "MQ client consumer ended ({reason}): {detail}"
                );
                let req = self.consumers.by_hobj.get(&hobj).map_or(0, |c| c.req);
                self.async_refusal(req, hobj, reason).await
            }
            // A consumer's start answered, the queue empty for now: nothing to tell.
            _ => true,
        }
    }

    /// A batch pushed whole: settled first unless under syncpoint, then sent.
    async fn batch_ended(&mut self, tag: u32, batch: u32) -> bool {
        let Some(hobj) = self.consumers.hobj_of(tag) else {
            return true;
        };
        let Some(c) = self.consumers.by_hobj.get_mut(&hobj) else {
            return true;
        };
        let ds = std::mem::take(&mut c.batch);
        let syncpoint = ds.iter().any(|d| under_syncpoint(c.gmo_options, &d.md));
        if syncpoint {
            self.consumers.held.push((tag, batch));
        } else {
            let settled = self
                .serve(Request::Settle {
                    tag,
                    batch,
                    commit: true,
                })
                .await;
            if let Response::Settled { reason, .. } | Response::Err { reason, .. } = settled
                && reason != 0
            {
                return self.async_refusal(0, hobj, reason).await;
            }
        }
        for d in ds {
            if !self.send_message(hobj, &d).await {
                return false;
            }
        }
        true
    }

    /// One message to the client as an ASYNC_MESSAGE: its header, MQMD and data.
    async fn send_message(&mut self, hobj: u32, d: &Delivery) -> bool {
        let order = self.sock.order;
        self.consumers.global = self.consumers.global.wrapping_add(1);
        let global = self.consumers.global;
        let Some(c) = self.consumers.by_hobj.get_mut(&hobj) else {
            return true;
        };
        c.sent = c.sent.wrapping_add(1);
        let rfh2 = msg::wants_rfh2(c.gmo_options, c.propctl);
        let (m, data) = msg::got_message(&d.md, &d.payload, c.md_version, rfh2, order);
        let req = c.req;
        let mut body = m.encode(c.md_version, order);
        body.extend_from_slice(&data);
        // Within what the client asked: one more message may come. Not after a persistent
        // message removed before it was sent (a get outside syncpoint): as in MQ, those are
        // not read ahead, so none is lost when the client closes with a read-ahead buffer
        // it never reads; the client's next request brings the next one.
        c.allowance -= body.len() as i64;
        let settled_persistent = d.md.persistence == sealmq_mqi::Persistence::Persistent
            && !under_syncpoint(c.gmo_options, &d.md);
        c.paused = c.allowance > 0 && settled_persistent;
        let (tag, more) = (c.tag, c.allowance > 0 && !settled_persistent);
        let head = AsyncMessage {
            hobj,
            index: c.sent,
            global_index: global,
            selection_index: c.selection_index,
            reason: 0,
            total_len: body.len() as u32,
            actual_len: data.len() as u32,
            token: token(global),
            resolved_q: c.resolved.clone(),
        };
        if !self.send_async(req, &head, &body).await || !self.flushed(hobj).await {
            return false;
        }
        if more {
            let _ = self.serve(Request::Credit { tag, n: 1 }).await;
        }
        true
    }

    /// The answer to a CHECK (the client's flush, once its own wait ended): a NOTIFICATION
    /// that nothing more is on its way, sent behind any message that was.
    async fn flushed(&mut self, hobj: u32) -> bool {
        let Some(req) = self
            .consumers
            .by_hobj
            .get_mut(&hobj)
            .and_then(|c| c.check.take())
        else {
            return true;
        };
        let n = Notification {
            hobj,
            code: notify::CLIENT_ASYNC_EMPTY,
            value: 0,
        };
        let body = n.encode(self.sock.order);
        self.sock
            .send(Kind::Multiplexed, seg::NOTIFICATION, self.id, req, &body)
            .await
    }

    /// An ASYNC_MESSAGE carrying only a reason: the consumer of `hobj` cannot go on.
    async fn async_refusal(&mut self, req: u32, hobj: u32, reason: u32) -> bool {
        self.consumers.forget(hobj);
        self.reason_only(req, hobj, reason).await
    }

    async fn reason_only(&mut self, req: u32, hobj: u32, reason: u32) -> bool {
        let head = AsyncMessage {
            hobj,
            index: 0,
            global_index: 0,
            selection_index: 0,
            reason,
            total_len: 0,
            actual_len: 0,
            token: [0; 16],
            resolved_q: String::new(),
        };
        self.send_async(req, &head, &[]).await
    }

    /// Sends an ASYNC_MESSAGE: one segment when it fits the transmission size, else its first
    /// segment with the whole header and the rest each with the header's first 24 bytes and
    /// its segment index.
    async fn send_async(&mut self, req: u32, head: &AsyncMessage, data: &[u8]) -> bool {
        let order = self.sock.order;
        let kind = Kind::Multiplexed;
        let room = (self.sock.granted.max_transmission as usize).saturating_sub(kind.header_len());
        let first_head = AsyncMessage::header_len(head.resolved_q.trim_end().len());
        let first_room = room.saturating_sub(first_head).max(1);
        let first = &data[..data.len().min(first_room)];
        let mut body = head.encode(first.len() as u32, order);
        body.extend_from_slice(first);
        let last = first.len() == data.len();
        let mut out = self.segment(req, &body, true, last, order);
        let mut at = first.len();
        let mut index = 1u16;
        while at < data.len() {
            let n = (data.len() - at).min(room.saturating_sub(24).max(1));
            let mut b = head.encode(n as u32, order);
            b.truncate(24);
            b[20..22].copy_from_slice(&match order {
                Order::Big => index.to_be_bytes(),
                Order::Little => index.to_le_bytes(),
            });
            b.extend_from_slice(&data[at..at + n]);
            at += n;
            out.extend_from_slice(&self.segment(req, &b, false, at == data.len(), order));
            index = index.wrapping_add(1);
        }
        self.sock.w.write(&out).await.is_ok()
    }

    fn segment(&self, req: u32, body: &[u8], first: bool, last: bool, order: Order) -> Vec<u8> {
        let mut h = sealmq_fap::tsh::Tsh::answer(
            Kind::Multiplexed,
            seg::ASYNC_MESSAGE,
            self.id,
            req,
            self.sock.ccsid,
        );
        h.order = order;
        h.flags1 = if first { flags::FIRST } else { 0 } | if last { flags::LAST } else { 0 };
        h.frame(body)
    }

    /// MQCMIT and MQBACK: the conversation's unit of work, then the batches held for it.
    pub(super) async fn settle_held(&mut self, commit: bool) -> u32 {
        let own = if commit {
            Request::Commit
        } else {
            Request::Backout
        };
        let mut rc = rc_of(&self.serve(own).await);
        for (tag, batch) in self.consumers.take_held() {
            let r = self.serve(Request::Settle { tag, batch, commit }).await;
            if let Response::Settled { reason, .. } | Response::Err { reason, .. } = r
                && reason != 0
                && rc == 0
            {
                rc = reason;
            }
        }
        rc
    }
}

/// Whether a message the consumer got stays in the unit of work until MQCMIT.
fn under_syncpoint(options: u32, md: &sealmq_mqi::Md) -> bool {
    options & gmo::SYNCPOINT != 0
        || (options & gmo::SYNCPOINT_IF_PERSISTENT != 0
            && md.persistence == sealmq_engine::Persistence::Persistent)
}

/// A message token: the conversation's message number.
fn token(global: u32) -> [u8; 16] {
    let mut t = [0u8; 16];
    t[12..].copy_from_slice(&global.to_be_bytes());
    t
}

//! A consumer's pusher (module head: crate::consume): gets its handle's messages in batches,
//! each in a unit of work of its own, and pushes them to the client within its credit and
//! MAXUMSGS, until stopped.

use super::*;

pub(super) struct Pusher {
    pub(super) qm: Arc<QueueManager>,
    pub(super) first: Connection,
    pub(super) hobj: Arc<Hobj>,
    /// A subscription's topic string (its policy is the topic's).
    pub(super) topic: Option<String>,
    pub(super) out: PushTx,
    /// Frames gathered until the batch's end is sent.
    pub(super) buf: Vec<u8>,
    /// The Consume request this pusher answers (Ok) before anything else.
    pub(super) answer: u32,
    pub(super) intercept: Option<Arc<sealmq_protect::Protector>>,
    pub(super) strip_properties: bool,
    pub(super) strip_more: bool,
    pub(super) req: ConsumeReq,
    pub(super) shared: Arc<Shared>,
    pub(super) recent: Option<Arc<Mutex<crate::icpt::RecentGets>>>,
}

/// What one get of the pusher gave.
enum Step {
    Msg(Box<Delivery>),
    Nothing,
    /// The consumer cannot go on: (reason, detail) told to the client.
    End(u32, String),
}

impl Pusher {
    fn stopped(&self) -> bool {
        self.shared.stop.load(Ordering::Acquire) || self.qm.is_quiescing()
    }

    /// Whether a message may be pushed now: credit left, and fewer than MAXUMSGS held.
    fn may_push(&self, credit: u64) -> bool {
        credit > 0 && self.shared.held.load(Ordering::Acquire) < self.shared.most
    }

    /// Waits for credit (and room under MAXUMSGS); false when stopped. A credit or a
    /// settlement between the look and the wait leaves its notification stored: not lost.
    async fn wait_credit(&self) -> bool {
        loop {
            if self.stopped() {
                return false;
            }
            if self.may_push(*lock(&self.shared.credit)) {
                return true;
            }
            let _ = tokio::time::timeout(IDLE_WAIT, self.shared.more.notified()).await;
        }
    }

    /// Adds a frame to the batch being pushed; `flush` hands what was gathered to the
    /// connection's writer (waiting while its channel is full). False: the connection ended.
    async fn send(&mut self, r: &Response, flush: bool) -> bool {
        self.send_answer(0, r, flush).await
    }

    /// As `send`, for a frame with request id `id` (0: a push).
    async fn send_answer(&mut self, id: u32, r: &Response, flush: bool) -> bool {
        if sealmq_wire::write_response_unflushed(&mut self.buf, id, r).is_err() {
            return false;
        }
        if !flush || self.buf.is_empty() {
            return true;
        }
        let b = std::mem::take(&mut self.buf);
        self.deliver(b).await
    }

    /// Hands `b` to the connection's writer, waiting while its channel is full — once the
    /// consumer is stopped, STOP_GRACE at most. False: not handed over (the connection ended,
    /// or the consumer was stopped while its client read nothing).
    async fn deliver(&self, b: Vec<u8>) -> bool {
        let halted = async {
            loop {
                if self.shared.stop.load(Ordering::Acquire) {
                    break;
                }
                self.shared.halted.notified().await;
            }
            tokio::time::sleep(STOP_GRACE).await;
        };
        tokio::select! {
            biased;
            sent = self.out.send(b) => sent,
            () = halted => false,
        }
    }

    /// Batch `n` was never handed over: its messages go back now (a backout may write the
    /// log: on a thread let go for it).
    fn back_out(&self, n: u32) {
        let taken = lock(&self.shared.unsettled).remove(&n);
        if let Some((count, conns)) = taken {
            self.shared
                .held
                .fetch_sub(u64::from(count), Ordering::AcqRel);
            tokio::task::block_in_place(|| drop(conns));
        }
    }

    /// A twin with no unit of work open.
    fn twin(&self, spare: &mut Vec<Connection>) -> Connection {
        spare
            .pop()
            .or_else(|| lock(&self.shared.idle).pop())
            .unwrap_or_else(|| self.first.uow_twin())
    }

    async fn push(&mut self, d: Delivery) -> bool {
        if self.req.mode != mode::BROWSE {
            self.shared.held.fetch_add(1, Ordering::AcqRel);
        }
        let ok = self.send(&Response::Delivery(d), false).await;
        let mut c = lock(&self.shared.credit);
        *c = c.saturating_sub(1);
        ok
    }

    pub(super) async fn run(mut self) {
        if !self.send_answer(self.answer, &Response::Ok, true).await {
            return;
        }
        let mut b = Between {
            spare: Vec::new(),
            told_empty: false,
            carried: None,
        };
        let mut batch_no = 0u32;
        while b.carried.is_some() || self.wait_credit().await {
            batch_no = batch_no.wrapping_add(1).max(1);
            let g = self.gather(&mut b, batch_no).await;
            if g.gone || !self.end_batch(&mut b, batch_no, g.conns, g.count).await {
                break;
            }
            if let Some((reason, detail)) = g.ended {
                // Batch 0: the consumer itself ended.
                let ended = Response::Settled {
                    tag: self.req.tag,
                    batch: 0,
                    reason,
                    detail,
                };
                let _ = self.send(&ended, true).await;
                break;
            }
        }
        // A carried message not pushed goes back with its unit of work (the twin drops:
        // a backout may write the log, so on a thread let go for it).
        if b.carried.is_some() {
            tokio::task::block_in_place(|| drop(b.carried));
        }
        if !self.buf.is_empty() {
            let buf = std::mem::take(&mut self.buf);
            let _ = self.deliver(buf).await;
        }
    }

    /// One batch gathered and pushed: a message carried from the last batch alone, or
    /// messages until the batch is full (in messages or [`BATCH_BYTES`]), late, out of
    /// credit, or the queue has no more now.
    async fn gather(&mut self, b: &mut Between, batch_no: u32) -> Gathered {
        let mut g = Gathered {
            conns: Vec::new(),
            count: 0,
            ended: None,
            gone: false,
        };
        if let Some((c, mut d)) = b.carried.take() {
            d.batch = batch_no;
            g.gone = !self.push(*d).await;
            g.conns.push(c);
            g.count = 1;
            return g;
        }
        let browse = self.req.mode == mode::BROWSE;
        // Read-ahead gets each message in a unit of work of its own, so that a persistent
        // message got while a batch of non-persistent ones is open starts the next batch,
        // alone (carried), instead of joining theirs.
        let per_message = self.req.mode == mode::READAHEAD;
        if !per_message {
            g.conns.push(self.twin(&mut b.spare));
        }
        let mut began = None::<Instant>;
        loop {
            let full = g.count >= self.req.batch.max(1) || self.buf.len() >= BATCH_BYTES;
            let late = began.is_some_and(|b: Instant| {
                b.elapsed() >= Duration::from_millis(u64::from(self.req.batch_ms))
            });
            if full || late || self.stopped() || !self.may_push(*lock(&self.shared.credit)) {
                return g;
            }
            // The first message of a batch is waited for (once the client knows there is
            // none now); the rest are taken only when already there.
            let wait = (g.count == 0 && b.told_empty).then_some(IDLE_WAIT);
            let own = per_message.then(|| self.twin(&mut b.spare));
            let step = match (&own, g.conns.first()) {
                (Some(c), _) | (None, Some(c)) => self.get(c, batch_no, wait, browse).await,
                (None, None) => return g,
            };
            let d = match step {
                Step::Msg(d) => d,
                Step::Nothing if g.count == 0 => {
                    b.spare.extend(own);
                    g.gone = !self.tell_empty(&mut b.told_empty).await;
                    if g.gone {
                        return g;
                    }
                    continue;
                }
                Step::Nothing => {
                    b.spare.extend(own);
                    return g;
                }
                Step::End(reason, detail) => {
                    b.spare.extend(own);
                    g.ended = Some((reason, detail));
                    return g;
                }
            };
            b.told_empty = false;
            let persistent = d.md.persistence == sealmq_engine::Persistence::Persistent;
            if let Some(c) = own {
                if persistent && g.count > 0 {
                    b.carried = Some((c, d));
                    return g;
                }
                g.conns.push(c);
            }
            if !self.push(*d).await {
                g.gone = true;
                return g;
            }
            g.count += 1;
            began.get_or_insert_with(Instant::now);
            if persistent && per_message {
                return g;
            }
        }
    }

    /// Batch 0 with no messages: nothing for this consumer right now (a get that does not
    /// wait learns it without a round trip of its own), told once until the next push.
    /// `false`: the client is gone.
    async fn tell_empty(&mut self, told_empty: &mut bool) -> bool {
        if *told_empty {
            return true;
        }
        let none = Response::BatchEnd {
            tag: self.req.tag,
            batch: 0,
            count: 0,
        };
        *told_empty = self.send(&none, true).await;
        *told_empty
    }

    /// A batch's end told to the client; its units of work wait for the client's settle
    /// (a browse's have nothing to settle). `false`: the client is gone (the batch is backed
    /// out: it can never be settled).
    async fn end_batch(
        &mut self,
        b: &mut Between,
        batch_no: u32,
        conns: Vec<Connection>,
        count: u32,
    ) -> bool {
        if count == 0 {
            b.spare.extend(conns);
            return true;
        }
        let browse = self.req.mode == mode::BROWSE;
        let end = Response::BatchEnd {
            tag: self.req.tag,
            batch: batch_no,
            count,
        };
        if browse {
            b.spare.extend(conns);
        } else {
            lock(&self.shared.unsettled).insert(batch_no, (count, conns));
        }
        if self.send(&end, true).await {
            return true;
        }
        if !browse {
            self.back_out(batch_no);
        }
        false
    }

    async fn get(
        &self,
        conn: &Connection,
        batch: u32,
        wait: Option<Duration>,
        browse: bool,
    ) -> Step {
        let gmo = GetOptions {
            syncpoint: !browse,
            wait,
            browse: if browse { Browse::Next } else { Browse::None },
            matching: Match {
                msg_id: self.req.match_msg_id,
                correl_id: self.req.match_correl_id,
                selector: None,
            },
            accept_truncated: false,
            buffer: None,
            syncpoint_if_persistent: false,
            header_len: None,
        };
        let policy = self.intercept.as_ref().and_then(|p| {
            sealmq_engine::intercept::get_policy(&self.qm, &self.hobj.name, self.topic.as_deref())
                .map(|policy| (p, policy))
        });
        let got = match policy {
            Some((p, policy)) => {
                let g = sealmq_wire::GetReq::from_options(self.req.hobj, &gmo);
                // The wait holds no thread: the message is taken here (as the queue
                // manager's unprotecting get takes it), then unprotected on a thread let go
                // for that work alone.
                let (opts, own_uow) = crate::icpt::take_options(conn, &g);
                let taken = match self.get_plain(conn, &opts).await {
                    Ok(got) => crate::icpt::Taken { got, own_uow },
                    Err(e) if e.reason == ReasonCode::NoMsgAvailable => return Step::Nothing,
                    Err(e) => return Step::End(e.reason.code(), e.detail),
                };
                let unprotected = tokio::task::block_in_place(|| {
                    crate::icpt::unprotected_get(conn, Some(p), &self.hobj, &g, &policy, taken)
                });
                match unprotected {
                    Response::Got { md, payload, .. } => Ok((md, payload)),
                    // A message failing its checks went to the protection error queue in
                    // this batch's unit of work: nothing to deliver.
                    Response::Err { reason, .. } if reason == ReasonCode::SecurityError.code() => {
                        return Step::Nothing;
                    }
                    Response::Err { reason, detail } => Err((reason, detail)),
                    other => Err((
                        ReasonCode::UnexpectedError.code(),
                        format!("unexpected {other:?}"),
                    )),
                }
            }
            None => self
                .get_plain(conn, &gmo)
                .await
                .map(|g| (g.md, g.payload))
                .map_err(|e| (e.reason.code(), e.detail)),
        };
        match got {
            Ok((mut md, payload)) => {
                if let Some(r) = &self.recent
                    && !browse
                {
                    lock(r).pushed(self.req.hobj, &md.msg_id, &payload);
                }
                if self.strip_properties {
                    md.properties.clear();
                }
                if self.strip_more {
                    md.clear_more();
                }
                Step::Msg(Box::new(Delivery {
                    tag: self.req.tag,
                    batch,
                    md,
                    payload,
                }))
            }
            Err((reason, _)) if reason == ReasonCode::NoMsgAvailable.code() => Step::Nothing,
            Err((reason, detail)) => Step::End(reason, detail),
        }
    }

    /// A get with no interception: a wait awaits the queue's wake-up or its deadline, a
    /// persistent message got outside a unit of work its log force — no thread is held.
    async fn get_plain(
        &self,
        conn: &Connection,
        gmo: &GetOptions,
    ) -> sealmq_engine::MqResult<sealmq_engine::Got> {
        use sealmq_engine::mqi::GetStep;
        let deadline = gmo.wait.map(|w| Instant::now() + w);
        let mut step = conn.get_step(&self.hobj, gmo, deadline);
        loop {
            step = match step {
                GetStep::Done(r) => return r,
                GetStep::Durable(d) => {
                    let waited = self.qm.durable(d.ticket()).await;
                    return conn.get_durable(d, waited);
                }
                GetStep::Wait(w) => {
                    let until = deadline.unwrap_or_else(Instant::now);
                    // Credit, a settlement or a stop cuts the wait short (one last look).
                    let (woken, cut) = tokio::select! {
                        _ = w.waiter.woken() => (true, false),
                        _ = tokio::time::sleep_until(until.into()) => (false, false),
                        _ = self.shared.more.notified() => (false, true),
                    };
                    let deadline = if cut { Some(Instant::now()) } else { deadline };
                    match conn.get_resume(&self.hobj, gmo, w, woken, deadline, false) {
                        Some(next) => next,
                        None => conn.get_step(&self.hobj, gmo, deadline),
                    }
                }
            };
        }
    }
}

/// What a pusher keeps from one batch to the next.
struct Between {
    /// Twins with no unit of work open.
    spare: Vec<Connection>,
    /// Whether the client was told the queue had nothing for it (since the last push).
    told_empty: bool,
    /// A persistent message got after a batch's first (read-ahead): it starts the next.
    carried: Option<(Connection, Box<Delivery>)>,
}

/// What one batch gathered.
struct Gathered {
    /// The units of work of its messages.
    conns: Vec<Connection>,
    count: u32,
    /// The consumer ended (batch 0's Settled says why).
    ended: Option<(u32, String)>,
    /// The client is gone: the pusher stops.
    gone: bool,
}

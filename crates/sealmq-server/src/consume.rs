//! Asynchronous consume (wire version 2; docs/wire.md "Asynchronous consume"): one pusher
//! task per consumer gets the handle's messages and pushes them to the client while the
//! connection goes on serving requests (settlements, credit, commits, puts). Pushers run on
//! a runtime of their own with one thread, whatever the number of consumers: a pusher waiting
//! for credit, for a message or for its client to read holds no thread. What it pushes goes
//! through a bounded channel to the connection's writer (the event loop's writing task, or
//! on the thread-per-connection server a forwarding thread), so a client that stops reading
//! makes its pusher wait, never the queue manager.
//!
//! Each batch is got in a unit of work of its own (a twin of the application's connection:
//! same identity and handle, its own unit of work), so a batch is committed or backed out as
//! one whatever else the application does. The pusher stops when the client's credit runs
//! out; a batch ends when it is full, when `batch_ms` passed since its first message, or when
//! no further message is there at once. Unsettled batches are backed out when the consumer's
//! connection ends (dropping their connections backs them out), so a crash of the
//! application redelivers them, backout counts raised.
//!
//! Locks: `credit`, `unsettled` and `idle` are short; none is held while the engine gets a
//! message or across an await.

use crate::icpt::Icpt;
use sealmq_engine::mqi::{Browse, GetOptions};
use sealmq_engine::{Connection, Hobj, Match, QueueManager};
use sealmq_types::ReasonCode;
use sealmq_types::sync::lock;
use sealmq_wire::consume::mode;
use sealmq_wire::{ConsumeReq, Delivery, Response};
use std::collections::HashMap;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// The connection's writer (thread-per-connection server), shared by its thread and the
/// forwarder of its pushers' frames.
pub(crate) type Out = Arc<Mutex<Box<dyn Write + Send>>>;

/// Where a connection's pushers send their frames (whole frames, a batch at a time).
pub(crate) use crate::pushchan::PushTx;

/// For the thread-per-connection server: a channel whose frames a thread of the connection's
/// writes to `out`, until every sender is gone or a write fails.
pub(crate) fn forwarder(out: Out) -> Result<PushTx, String> {
    let (tx, mut rx) = crate::pushchan::channel();
    std::thread::Builder::new()
        .name("consume-out".into())
        .spawn(move || {
            while let Some((b, room)) = rx.blocking_recv() {
                let mut w = lock(&out);
                if w.write_all(&b).and_then(|_| w.flush()).is_err() {
                    break;
                }
                drop(w);
                rx.written(room);
            }
        })
        .map_err(|e| format!("cannot start the consumers' writer: {e}"))?;
    Ok(tx)
}

/// The pushers' runtime: one thread for every consumer of the process (measured against two:
/// a pusher woken per message in a trickle costs less with no second worker to wake or steal;
/// a block_in_place hands the worker's place to another thread meanwhile).
fn runtime() -> Option<&'static tokio::runtime::Runtime> {
    static RT: std::sync::OnceLock<Option<tokio::runtime::Runtime>> = std::sync::OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("sealmq-consume")
            .enable_all()
            .build()
            .map_err(|e| tracing::error!("cannot start the consumers' runtime: {e}"))
            .ok()
    })
    .as_ref()
}

/// Consumers one connection may run at once.
const MAX_CONSUMERS: usize = 32;

/// Pushers the whole process may run at once (each a task, a twin connection and what it
/// holds unsettled): past it, a new consumer is refused with 2102; existing ones go on.
pub(crate) const MAX_PUSHERS: usize = 4096;

/// Pushers running now, in this process.
static PUSHERS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// One counted pusher; dropping it (when the task ends) uncounts it.
struct PusherSlot;

impl PusherSlot {
    fn take() -> Option<PusherSlot> {
        PUSHERS
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < MAX_PUSHERS).then_some(n + 1)
            })
            .ok()
            .map(|_| PusherSlot)
    }
}

impl Drop for PusherSlot {
    fn drop(&mut self) {
        PUSHERS.fetch_sub(1, Ordering::AcqRel);
    }
}

/// How long a pusher with nothing to push waits for a message (or credit) before it looks
/// again; a stop, credit or settlement ends the wait at once.
const IDLE_WAIT: Duration = Duration::from_secs(1);

/// Bytes of frames a pusher gathers before it ends the batch (a message larger than that is a
/// batch alone); what a connection's pushers hold for a client that does not read is bounded
/// by the channel's byte budget (`pushchan::PUSHED_BYTES`), whatever its window and batch size.
const BATCH_BYTES: usize = 1 << 20;

/// How long a stopped consumer's pusher still waits for room in the connection's channel
/// before it gives up its batch (backed out): a client that stopped reading cannot hold a
/// stop — and the thread that waits for it — until the write-stall limit.
const STOP_GRACE: Duration = Duration::from_secs(1);

/// What the connection's thread and a pusher share.
struct Shared {
    stop: AtomicBool,
    /// Messages the client may still be sent; never above MAXUMSGS, whatever it grants.
    credit: Mutex<u64>,
    /// Messages pushed and not settled (not counting browsed ones); the pusher waits while
    /// MAXUMSGS of them are held, whatever credit says.
    held: std::sync::atomic::AtomicU64,
    /// MAXUMSGS when the consumer started.
    most: u64,
    /// Credit granted, a batch settled, or the consumer stopped (one waiter: the pusher).
    more: Notify,
    /// The consumer stopped (one waiter: the pusher waiting for room in the channel).
    halted: Notify,
    /// Batches pushed and not settled, with the units of work that got them (one per batch;
    /// read-ahead: one per message).
    unsettled: Mutex<HashMap<u32, (u32, Vec<Connection>)>>,
    /// Twins with no unit of work open, for the next batches.
    idle: Mutex<Vec<Connection>>,
}

impl Shared {
    fn tell_stop(&self) {
        self.stop.store(true, Ordering::Release);
        self.more.notify_one();
        self.halted.notify_one();
    }
}

struct Consumer {
    hobj: u32,
    shared: Arc<Shared>,
    /// Set when the pusher's task has ended.
    pusher: Option<Arc<Ended>>,
}

/// A pusher's end, waited for by the connection (which is not on the pushers' runtime).
#[derive(Default)]
struct Ended {
    done: Mutex<bool>,
    cv: Condvar,
}

impl Ended {
    fn set(&self) {
        *lock(&self.done) = true;
        self.cv.notify_all();
    }

    fn wait(&self) {
        let mut d = lock(&self.done);
        while !*d {
            d = self.cv.wait(d).unwrap_or_else(|p| p.into_inner());
        }
    }
}

/// A connection's consumers, by tag.
#[derive(Default)]
pub(crate) struct Consumers(HashMap<u32, Consumer>);

/// What a pusher needs of its connection.
pub(crate) struct Source<'a> {
    pub qm: &'a Arc<QueueManager>,
    pub conn: &'a Connection,
    pub hobj: Arc<Hobj>,
    /// The topic string when the handle is a subscription's queue (its policy is the topic's).
    pub topic: Option<String>,
    pub out: PushTx,
    /// QM-side interception on this connection, with the keystore to unprotect with.
    pub intercept: Option<Arc<sealmq_protect::Protector>>,
    /// The client speaks a protocol version without message properties: leave them out.
    pub strip_properties: bool,
    /// What the connection's handles got and were pushed (a protection error is accepted
    /// only for one of them).
    pub recent: Arc<Mutex<crate::dispatch::RecentGets>>,
}

impl Consumers {
    /// Starts consumer `req.tag` on the handle; refused when the tag is in use or the request
    /// makes no sense.
    /// Started, the pusher answers request `id` (Ok) through the connection's pushers'
    /// channel before its first push.
    pub(crate) fn start(
        &mut self,
        src: Source<'_>,
        req: ConsumeReq,
        id: u32,
    ) -> Result<(), (u32, String)> {
        if self.0.contains_key(&req.tag) {
            return Err((
                ReasonCode::UnexpectedError.code(),
                format!("consumer {} is already started", req.tag),
            ));
        }
        if req.mode > mode::READAHEAD {
            return Err((
                ReasonCode::UnexpectedError.code(),
                format!("unknown consume mode {}", req.mode),
            ));
        }
        // Stopped consumers whose batches are all settled are gone already (`forget_idle`).
        if self.0.values().filter(|c| c.pusher.is_some()).count() >= MAX_CONSUMERS {
            return Err((
                sealmq_types::ReasonCode::HandleNotAvailable.code(),
                format!("a connection runs at most {MAX_CONSUMERS} consumers: stop one first"),
            ));
        }
        if req.mode == mode::BROWSE && !src.hobj_browsable() {
            return Err((
                ReasonCode::NotOpenForBrowse.code(),
                "the handle was not opened for browse".into(),
            ));
        }
        // Unsettled messages count as MQ's uncommitted ones (MAXUMSGS): a window, a batch,
        // the credit granted later and the messages held unsettled are each at most that many.
        let most = u32::try_from(src.qm.qmgr().max_uncommitted()).unwrap_or(u32::MAX);
        let mut req = req;
        req.window = req.window.clamp(1, most);
        req.batch = req.batch.clamp(1, req.window);
        let Some(slot) = PusherSlot::take() else {
            return Err((
                sealmq_types::ReasonCode::ResourceProblem.code(),
                format!(
                    "the queue manager runs {MAX_PUSHERS} consumers already: try again later, \
                     or use gets"
                ),
            ));
        };
        let shared = Arc::new(Shared {
            stop: AtomicBool::new(false),
            credit: Mutex::new(u64::from(req.window)),
            held: std::sync::atomic::AtomicU64::new(0),
            most: u64::from(most),
            more: Notify::new(),
            halted: Notify::new(),
            unsettled: Mutex::new(HashMap::new()),
            idle: Mutex::new(Vec::new()),
        });
        // The client unprotects (client-side protection): it may report a pushed message
        // that fails its checks, so what is pushed is remembered.
        let protected = match &src.topic {
            Some(t) => src.qm.topic_policy(t).is_some(),
            None => src.qm.has_policy(&src.hobj.name),
        };
        let recent = (src.intercept.is_none() && protected).then_some(src.recent);
        let pusher = Pusher {
            recent,
            topic: src.topic,
            qm: src.qm.clone(),
            first: src.conn.uow_twin(),
            hobj: src.hobj,
            out: src.out,
            buf: Vec::new(),
            answer: id,
            intercept: src.intercept,
            strip_properties: src.strip_properties,
            req: req.clone(),
            shared: shared.clone(),
        };
        let Some(rt) = runtime() else {
            return Err((
                ReasonCode::ResourceProblem.code(),
                "the consumers' runtime could not start (see the error log)".into(),
            ));
        };
        let t = Arc::new(Ended::default());
        let ended = t.clone();
        rt.spawn(async move {
            let _slot = slot;
            pusher.run().await;
            ended.set();
        });
        self.0.insert(
            req.tag,
            Consumer {
                hobj: req.hobj,
                shared,
                pusher: Some(t),
            },
        );
        Ok(())
    }

    pub(crate) fn credit(&self, tag: u32, n: u32) {
        if let Some(c) = self.0.get(&tag) {
            let mut credit = lock(&c.shared.credit);
            *credit = credit.saturating_add(u64::from(n)).min(c.shared.most);
            c.shared.more.notify_one();
        }
    }

    /// Commits or backs out a pushed batch: (reason, detail), reason 0 when done.
    /// Drops consumer `tag` if it was stopped and has nothing left to settle.
    fn forget_idle(&mut self, tag: u32) {
        let idle = self
            .0
            .get(&tag)
            .is_some_and(|c| c.pusher.is_none() && lock(&c.shared.unsettled).is_empty());
        if idle {
            self.0.remove(&tag);
        }
    }

    pub(crate) fn settle(&mut self, tag: u32, batch: u32, commit: bool) -> (u32, String) {
        let r = self.settle_batch(tag, batch, commit);
        self.forget_idle(tag);
        r
    }

    fn settle_batch(&self, tag: u32, batch: u32, commit: bool) -> (u32, String) {
        let Some(c) = self.0.get(&tag) else {
            return (
                ReasonCode::UnexpectedError.code(),
                format!("no consumer {tag}"),
            );
        };
        let Some((count, conns)) = lock(&c.shared.unsettled).remove(&batch) else {
            return (
                ReasonCode::UnexpectedError.code(),
                format!("batch {batch} of consumer {tag} is not pushed or settled"),
            );
        };
        let mut r = Ok(());
        for conn in &conns {
            let done = if commit {
                conn.commit()
            } else {
                conn.backout()
            };
            if r.is_ok() {
                r = done;
            }
        }
        lock(&c.shared.idle).extend(conns);
        c.shared.held.fetch_sub(u64::from(count), Ordering::AcqRel);
        c.shared.more.notify_one();
        match r {
            Ok(()) => (0, String::new()),
            Err(e) => (e.reason.code(), e.detail),
        }
    }

    /// Stops consumer `tag` and waits until its pusher has ended: nothing more is pushed for
    /// it. Its unsettled batches stay for the client to settle.
    pub(crate) fn stop(&mut self, tag: u32) -> bool {
        match self.0.get_mut(&tag) {
            Some(c) => {
                c.halt();
                self.forget_idle(tag);
                true
            }
            None => false,
        }
    }

    /// Ends every consumer of handle `hobj` (it is being closed), backing out their unsettled
    /// batches. Whether it had any.
    pub(crate) fn close_handle(&mut self, hobj: u32) -> bool {
        let tags: Vec<u32> = self
            .0
            .iter()
            .filter(|(_, c)| c.hobj == hobj)
            .map(|(t, _)| *t)
            .collect();
        let mut ending: Vec<Consumer> = tags.iter().filter_map(|t| self.0.remove(t)).collect();
        halt_all(ending.iter_mut());
        !ending.is_empty()
    }
}

/// Stops pushers together: each is told first, then each is waited for, so that ending many
/// costs at most one pusher's wait (STOP_GRACE for one whose client reads nothing), not one each.
fn halt_all<'a>(cs: impl Iterator<Item = &'a mut Consumer>) {
    let cs: Vec<&mut Consumer> = cs.collect();
    for c in &cs {
        c.shared.tell_stop();
    }
    for c in cs {
        c.halt();
    }
}

impl Consumer {
    fn halt(&mut self) {
        self.shared.tell_stop();
        if let Some(t) = self.pusher.take() {
            t.wait();
        }
    }
}

impl Drop for Consumers {
    /// The connection ended: pushers stop; unsettled batches are backed out as their
    /// connections drop.
    fn drop(&mut self) {
        halt_all(self.0.values_mut());
    }
}

impl Source<'_> {
    fn hobj_browsable(&self) -> bool {
        self.hobj.opened_for_browse()
    }
}

struct Pusher {
    qm: Arc<QueueManager>,
    first: Connection,
    hobj: Arc<Hobj>,
    /// A subscription's topic string (its policy is the topic's).
    topic: Option<String>,
    out: PushTx,
    /// Frames gathered until the batch's end is sent.
    buf: Vec<u8>,
    /// The Consume request this pusher answers (Ok) before anything else.
    answer: u32,
    intercept: Option<Arc<sealmq_protect::Protector>>,
    strip_properties: bool,
    req: ConsumeReq,
    shared: Arc<Shared>,
    recent: Option<Arc<Mutex<crate::dispatch::RecentGets>>>,
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

    async fn run(mut self) {
        if !self.send_answer(self.answer, &Response::Ok, true).await {
            return;
        }
        let mut spare: Vec<Connection> = Vec::new();
        let mut batch_no = 0u32;
        // Whether the client was told the queue had nothing for it (since the last push).
        let mut told_empty = false;
        let browse = self.req.mode == mode::BROWSE;
        // Read-ahead gets each message in a unit of work of its own, so that a persistent
        // message got while a batch of non-persistent ones is open starts the next batch,
        // alone (carried), instead of joining theirs.
        let per_message = self.req.mode == mode::READAHEAD;
        let mut carried: Option<(Connection, Box<Delivery>)> = None;
        'batches: while carried.is_some() || self.wait_credit().await {
            batch_no = batch_no.wrapping_add(1).max(1);
            let mut conns: Vec<Connection> = Vec::new();
            let mut count = 0u32;
            let mut began = None::<Instant>;
            let mut ended = None;
            if let Some((c, mut d)) = carried.take() {
                d.batch = batch_no;
                if !self.push(*d).await {
                    break;
                }
                conns.push(c);
                count = 1;
            } else {
                if !per_message {
                    conns.push(self.twin(&mut spare));
                }
                loop {
                    // A batch also ends at BATCH_BYTES gathered: what waits for a client
                    // that reads slowly is bounded in bytes, not only in messages.
                    let full = count >= self.req.batch.max(1) || self.buf.len() >= BATCH_BYTES;
                    let late = began.is_some_and(|b: Instant| {
                        b.elapsed() >= Duration::from_millis(u64::from(self.req.batch_ms))
                    });
                    if full || late || self.stopped() || !self.may_push(*lock(&self.shared.credit))
                    {
                        break;
                    }
                    // The first message of a batch is waited for (once the client knows there
                    // is none now); the rest are taken only when already there.
                    let wait = (count == 0 && told_empty).then_some(IDLE_WAIT);
                    let own = per_message.then(|| self.twin(&mut spare));
                    let step = match (&own, conns.first()) {
                        (Some(c), _) | (None, Some(c)) => self.get(c, batch_no, wait, browse).await,
                        (None, None) => break,
                    };
                    match step {
                        Step::Msg(d) => {
                            told_empty = false;
                            let persistent =
                                d.md.persistence == sealmq_engine::Persistence::Persistent;
                            if let Some(c) = own {
                                if persistent && count > 0 {
                                    carried = Some((c, d));
                                    break;
                                }
                                conns.push(c);
                            }
                            if !self.push(*d).await {
                                break 'batches;
                            }
                            count += 1;
                            began.get_or_insert_with(Instant::now);
                            if persistent && per_message {
                                break;
                            }
                        }
                        Step::Nothing if count == 0 => {
                            spare.extend(own);
                            if !told_empty {
                                // Batch 0: nothing for this consumer right now (a get that
                                // does not wait learns it without a round trip of its own).
                                let none = Response::BatchEnd {
                                    tag: self.req.tag,
                                    batch: 0,
                                    count: 0,
                                };
                                if !self.send(&none, true).await {
                                    break 'batches;
                                }
                                told_empty = true;
                            }
                        }
                        Step::Nothing => {
                            spare.extend(own);
                            break;
                        }
                        Step::End(reason, detail) => {
                            spare.extend(own);
                            ended = Some((reason, detail));
                            break;
                        }
                    }
                }
            }
            if count > 0 {
                let end = Response::BatchEnd {
                    tag: self.req.tag,
                    batch: batch_no,
                    count,
                };
                if browse {
                    spare.extend(conns);
                } else {
                    lock(&self.shared.unsettled).insert(batch_no, (count, conns));
                }
                if !self.send(&end, true).await {
                    // The client never gets this batch: it cannot settle it.
                    if !browse {
                        self.back_out(batch_no);
                    }
                    break;
                }
            } else {
                spare.extend(conns);
            }
            if let Some((reason, detail)) = ended {
                // Batch 0: the consumer itself ended.
                let _ = self
                    .send(
                        &Response::Settled {
                            tag: self.req.tag,
                            batch: 0,
                            reason,
                            detail,
                        },
                        true,
                    )
                    .await;
                break;
            }
        }
        // A carried message not pushed goes back with its unit of work (the twin drops:
        // a backout may write the log, so on a thread let go for it).
        if carried.is_some() {
            tokio::task::block_in_place(|| drop(carried));
        }
        if !self.buf.is_empty() {
            let b = std::mem::take(&mut self.buf);
            let _ = self.deliver(b).await;
        }
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
        };
        let policy = self.intercept.as_ref().and_then(|p| {
            sealmq_engine::intercept::get_policy(&self.qm, &self.hobj.name, self.topic.as_deref())
                .map(|policy| (p, policy))
        });
        let got = match policy {
            Some((p, policy)) => {
                let icpt = Icpt {
                    on: true,
                    protector: Some(p),
                    stored: std::cell::Cell::new(None),
                };
                let g = sealmq_wire::GetReq::from_options(self.req.hobj, &gmo);
                // The wait holds no thread: the message is taken here (as the queue
                // manager's unprotecting get takes it), then unprotected on a thread let go
                // for that work alone.
                let (opts, own_uow) = crate::icpt::take_options(conn, &g);
                let taken = match self.get_plain(conn, &opts).await {
                    Ok(got) => crate::icpt::Taken {
                        hobj: self.req.hobj,
                        got,
                        own_uow,
                    },
                    Err(e) if e.reason == ReasonCode::NoMsgAvailable => return Step::Nothing,
                    Err(e) => return Step::End(e.reason.code(), e.detail),
                };
                let unprotected = tokio::task::block_in_place(|| {
                    icpt.get(conn, &self.hobj, &g, &policy, Some(taken))
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

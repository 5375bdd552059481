//! Asynchronous consume (wire version 2; docs/wire.md "Asynchronous consume"): one pusher
//! task per consumer gets the handle's messages and pushes them to the client while the
//! connection goes on serving requests (settlements, credit, commits, puts). Pushers run on
//! a runtime of their own with one thread, whatever the number of consumers: a pusher waiting
//! for credit, for a message or for its client to read holds no thread. What it pushes goes
//! through a bounded channel to the connection's writer (the event loop's writing task), so a
//! client that stops reading
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

pub(crate) mod pushchan;

mod pusher;

use pusher::Pusher;
use sealmq_engine::mqi::{Browse, GetOptions};
use sealmq_engine::{Connection, Hobj, Match, QueueManager};
use sealmq_types::ReasonCode;
use sealmq_types::sync::lock;
use sealmq_wire::consume::mode;
use sealmq_wire::{ConsumeReq, Delivery, Response};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// Where a connection's pushers send their frames (whole frames, a batch at a time).
pub(crate) use crate::consume::pushchan::PushTx;

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

/// A pusher's end, waited for by the connection (on the blocking pool: never on the
/// connection's event loop, whose writing task the pusher may be waiting on).
#[derive(Default)]
pub(crate) struct Ended {
    done: Mutex<bool>,
    cv: Condvar,
}

impl Ended {
    fn set(&self) {
        *lock(&self.done) = true;
        self.cv.notify_all();
    }

    pub(crate) fn wait(&self) {
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
    /// ... and without MQMD's report options and feedback: leave them out.
    pub strip_more: bool,
    /// What the connection's handles got and were pushed (a protection error is accepted
    /// only for one of them).
    pub recent: Arc<Mutex<crate::icpt::RecentGets>>,
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
            strip_more: src.strip_more,
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

    /// Drops consumer `tag` if it was stopped and has nothing left to settle.
    pub(crate) fn forget_idle(&mut self, tag: u32) {
        let idle = self
            .0
            .get(&tag)
            .is_some_and(|c| c.pusher.is_none() && lock(&c.shared.unsettled).is_empty());
        if idle {
            self.0.remove(&tag);
        }
    }

    /// A pushed batch taken out to be settled: its units of work, to commit or back out away
    /// from the connection's event loop (a commit awaits its log force; a backout may write
    /// a durable record), then handed back with [`Consumers::settled`].
    #[allow(clippy::type_complexity)] // the batch and its units of work, taken apart at once
    pub(crate) fn take_batch(
        &self,
        tag: u32,
        batch: u32,
    ) -> Result<(Settling, Vec<Connection>), (u32, String)> {
        let Some(c) = self.0.get(&tag) else {
            return Err((
                ReasonCode::UnexpectedError.code(),
                format!("no consumer {tag}"),
            ));
        };
        let Some((count, conns)) = lock(&c.shared.unsettled).remove(&batch) else {
            return Err((
                ReasonCode::UnexpectedError.code(),
                format!("batch {batch} of consumer {tag} is not pushed or settled"),
            ));
        };
        let s = Settling {
            shared: c.shared.clone(),
            count,
        };
        Ok((s, conns))
    }

    /// A batch settled (`r`, its units of work `conns` ended): they serve the next batches,
    /// the consumer may push again. (reason, detail), reason 0 when done. Drops consumer
    /// `tag` if it was stopped and has nothing left to settle.
    pub(crate) fn settled(
        &mut self,
        tag: u32,
        s: Settling,
        conns: Vec<Connection>,
        r: sealmq_engine::MqResult<()>,
    ) -> (u32, String) {
        lock(&s.shared.idle).extend(conns);
        s.shared
            .held
            .fetch_sub(u64::from(s.count), Ordering::AcqRel);
        s.shared.more.notify_one();
        self.forget_idle(tag);
        match r {
            Ok(()) => (0, String::new()),
            Err(e) => (e.reason.code(), e.detail),
        }
    }

    /// Tells consumer `tag` to stop: its pusher's end to wait for (on the blocking pool),
    /// then [`Consumers::forget_idle`]. Its unsettled batches stay for the client to settle.
    /// `None`: no such consumer.
    pub(crate) fn stop(&mut self, tag: u32) -> Option<Option<Arc<Ended>>> {
        let c = self.0.get_mut(&tag)?;
        c.shared.tell_stop();
        Some(c.pusher.take())
    }

    /// Ends every consumer of handle `hobj` (it is being closed; their unsettled batches back
    /// out as their units of work drop): whether it had any, and the pushers' ends to wait
    /// for (on the blocking pool) before the close is answered.
    pub(crate) fn close_handle(&mut self, hobj: u32) -> (bool, Vec<Arc<Ended>>) {
        let tags: Vec<u32> = self
            .0
            .iter()
            .filter(|(_, c)| c.hobj == hobj)
            .map(|(t, _)| *t)
            .collect();
        let mut ending: Vec<Consumer> = tags.iter().filter_map(|t| self.0.remove(t)).collect();
        for c in &ending {
            c.shared.tell_stop();
        }
        let ends = ending.iter_mut().filter_map(|c| c.pusher.take()).collect();
        (!ending.is_empty(), ends)
    }
}

/// A batch being settled: what its consumer shares with its pusher, and its message count.
pub(crate) struct Settling {
    shared: Arc<Shared>,
    count: u32,
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

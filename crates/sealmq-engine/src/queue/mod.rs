//! A local queue at run time: its messages in delivery order, their unit-of-work states, and
//! the getters waiting on it. Each queue has its own lock, so a busy queue never holds up
//! another.
//!
//! Memory holds an index entry per message ([`entries`]) and the payloads of a bounded cache
//! ([`QueueCtx`]); the rest wait in the queue's files (`sealmq_storage::qstore`), persistent
//! ones written there by checkpoints, non-persistent ones spilled when the cache is full.

mod entries;
mod store;

use crate::md::{Message, now_ms};
use crate::objects::{MsgDlvSq, QueueDef};
pub use entries::{Entries, Entry, EntryState, Key, READING, TxId};
use sealmq_storage::qstore::{IndexOp, Loc, QueueStore};
use sealmq_types::sync::lock;
use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
pub use store::{QueueCtx, StoreSnap, cost, cost_of_len, placed_of};

/// What a get matches on (shared with applications through `sealmq-mqi`).
pub use sealmq_mqi::Match;

/// A getter waiting for a message.
pub struct Waiter {
    pub matching: Match,
    pub browse: bool,
    state: Mutex<WaitState>,
    cv: Condvar,
}

/// A waiter's wake-up and who waits for it: a thread on the condition variable, or a task
/// ([`Waiter::woken`]). The condition variable is signalled only when a thread sleeps on it
/// (a signal costs a system call even when no one waits).
#[derive(Default)]
struct WaitState {
    woken: bool,
    sleeping: bool,
    waker: Option<std::task::Waker>,
}

impl Waiter {
    pub fn new(matching: Match, browse: bool) -> Arc<Waiter> {
        Arc::new(Waiter {
            matching,
            browse,
            state: Mutex::new(WaitState::default()),
            cv: Condvar::new(),
        })
    }

    pub(crate) fn wake(&self) {
        let (sleeping, waker) = {
            let mut st = lock(&self.state);
            st.woken = true;
            (st.sleeping, st.waker.take())
        };
        if sleeping {
            self.cv.notify_one();
        }
        if let Some(w) = waker {
            w.wake();
        }
    }

    /// Completes once woken (and takes the wake-up), without holding a thread: the
    /// event-driven server's get-wait.
    pub fn woken(&self) -> impl std::future::Future<Output = ()> + '_ {
        std::future::poll_fn(move |cx| {
            let mut st = lock(&self.state);
            if st.woken {
                st.woken = false;
                return std::task::Poll::Ready(());
            }
            // Stored under the same lock: a wake after the look above finds it.
            match &mut st.waker {
                Some(w) if w.will_wake(cx.waker()) => {}
                w => *w = Some(cx.waker().clone()),
            }
            std::task::Poll::Pending
        })
    }

    /// Waits until woken or `until`; returns whether it was woken.
    pub fn wait_until(&self, until: std::time::Instant) -> bool {
        let mut st = lock(&self.state);
        while !st.woken {
            let now = std::time::Instant::now();
            if now >= until {
                return false;
            }
            st.sleeping = true;
            st = self
                .cv
                .wait_timeout(st, until - now)
                .unwrap_or_else(|p| p.into_inner())
                .0;
            st.sleeping = false;
        }
        st.woken = false;
        true
    }
}

/// The state behind a queue's lock.
pub struct QueueState {
    pub def: QueueDef,
    pub entries: Entries,
    pub uncommitted_puts: usize,
    /// Messages put or got in units of work not yet ended.
    pub in_uow: usize,
    pub waiters: VecDeque<Arc<Waiter>>,
    pub open_input: u32,
    pub open_exclusive: bool,
    pub open_output: u32,
    pub open_browse: u32,
    /// Depth high-water mark since creation (statistics).
    pub high_water: usize,
    /// Puts, gets, bytes and high-water marks for RESET QSTATS and interval statistics.
    pub stats: crate::stats::QueueStats,
    /// When this queue last made a trigger message (TRIGINT counts from it).
    pub last_trigger: Option<std::time::Instant>,
    /// The queue's files, opened when first needed.
    pub(crate) store: Option<Arc<QueueStore>>,
    /// Changes to stored messages since the last checkpoint (removals, backout counts).
    pub(crate) pending: Vec<IndexOp>,
    /// Bytes of this queue's persistent messages no checkpoint stored yet (they will take
    /// room in its files: MAXFSIZE counts them).
    pub(crate) unstored: u64,
    /// Cleared since the last checkpoint: its index is rewritten.
    pub(crate) cleared: bool,
    pub(crate) ctx: Arc<QueueCtx>,
}

pub struct LocalQueue {
    pub name: String,
    state: Mutex<QueueState>,
}

impl LocalQueue {
    pub fn new(def: QueueDef, ctx: Arc<QueueCtx>) -> Arc<LocalQueue> {
        LocalQueue::with_store(def, ctx, None)
    }

    pub(crate) fn with_store(
        def: QueueDef,
        ctx: Arc<QueueCtx>,
        store: Option<Arc<QueueStore>>,
    ) -> Arc<LocalQueue> {
        Arc::new(LocalQueue {
            name: def.name.clone(),
            state: Mutex::new(QueueState {
                def,
                entries: Entries::default(),
                uncommitted_puts: 0,
                in_uow: 0,
                waiters: VecDeque::new(),
                open_input: 0,
                open_exclusive: false,
                open_output: 0,
                open_browse: 0,
                high_water: 0,
                stats: Default::default(),
                last_trigger: None,
                store,
                pending: Vec::new(),
                cleared: false,
                unstored: 0,
                ctx,
            }),
        })
    }

    pub fn lock(&self) -> MutexGuard<'_, QueueState> {
        lock(&self.state)
    }
}

impl QueueState {
    pub fn key_for(&self, priority: u8, seq: u64) -> Key {
        match self.def.msg_dlv_seq {
            MsgDlvSq::Fifo => (0, seq),
            MsgDlvSq::Priority => (9 - priority.min(9), seq),
        }
    }

    /// Bytes of the queue's files (MQ's CURFSIZE).
    pub fn file_bytes(&self) -> u64 {
        self.store.as_ref().map_or(0, |s| s.bytes())
    }

    /// Whether a message of `len` bytes fits under MAXFSIZE, counting what checkpoints
    /// will write.
    pub fn file_room(&self, len: usize) -> bool {
        let max = self.def.max_file_bytes();
        // At MQ's default (about 2 TB) the files' size is not summed on every put.
        if max >= crate::objects::DEFAULT_MAXFSIZE_MB << 20 {
            return true;
        }
        self.file_bytes() + self.unstored + cost_of_len(len) <= max
    }

    /// Committed messages (visible or being got), as MQ counts CURDEPTH, plus uncommitted puts.
    pub fn depth(&self) -> usize {
        self.entries.len()
    }

    pub(super) fn counted(&mut self, e: &Entry, sign: i64) {
        let st = e.state();
        if matches!(st, EntryState::Putting(_)) {
            self.uncommitted_puts = (self.uncommitted_puts as i64 + sign) as usize;
        }
        if st != EntryState::Visible {
            self.in_uow = (self.in_uow as i64 + sign) as usize;
        }
        if let Some(m) = &e.msg {
            self.ctx.add(&self.ctx.cached, cost(m) as i64 * sign);
            if e.persistent() && !e.stored() {
                self.ctx.add(&self.ctx.unstored, cost(m) as i64 * sign);
                self.unstored = (self.unstored as i64 + cost(m) as i64 * sign).max(0) as u64;
            }
        }
    }

    pub fn insert(
        &mut self,
        seq: u64,
        msg: Arc<Message>,
        state: EntryState,
        backout_count: u32,
    ) -> Key {
        let key = self.key_for(msg.md.priority.clamp(0, 9) as u8, seq);
        let mut e = Entry::new(seq, msg, state, backout_count);
        if !e.persistent() && self.ctx.over_budget() {
            self.spill(&mut e);
        }
        self.add_entry(key, e)
    }

    /// A stored message (at start).
    pub(crate) fn insert_placed(&mut self, p: &sealmq_storage::qstore::Placed) {
        let key = self.key_for(p.priority, p.seq);
        self.add_entry(key, Entry::placed(p));
    }

    fn add_entry(&mut self, key: Key, e: Entry) -> Key {
        self.counted(&e, 1);
        self.entries.insert(key.0, e);
        self.high_water = self.high_water.max(self.entries.len());
        self.stats.on_depth(self.entries.len());
        key
    }

    /// Takes a message out. A stored one is counted out of its file at the next checkpoint;
    /// a spilled one at once.
    pub fn remove(&mut self, seq: u64) -> Option<Entry> {
        let at = self.entries.locate(seq)?;
        let e = self.entries.take(at);
        self.counted(&e, -1);
        if let Some(loc) = e.loc() {
            if loc.spill {
                if let Some(s) = &self.store
                    && let Err(err) = s.release_spill(loc)
                {
                    tracing::warn!(queue = %self.def.name, "{err}");
                }
            } else {
                self.pending.push(IndexOp::Del { seq, loc });
                self.ctx.pending_ops.fetch_add(1, Ordering::Relaxed);
            }
        }
        Some(e)
    }

    pub fn get_mut(&mut self, seq: u64) -> Option<&mut Entry> {
        self.entries.get_mut(seq)
    }

    pub fn set_state(&mut self, seq: u64, state: EntryState) {
        let Some(at) = self.entries.locate(seq) else {
            return;
        };
        let old = self.entries.at(at).state();
        self.entries.at_mut(at).set_state(state);
        if matches!(old, EntryState::Putting(_)) && !matches!(state, EntryState::Putting(_)) {
            self.uncommitted_puts -= 1;
        }
        match (old == EntryState::Visible, state == EntryState::Visible) {
            (true, false) => self.in_uow += 1,
            (false, true) => self.in_uow -= 1,
            _ => {}
        }
    }

    /// Raises a message's backout count (a backed-out get) and makes it visible again;
    /// returns the new count.
    pub fn backed_out(&mut self, seq: u64) -> Option<u32> {
        self.set_state(seq, EntryState::Visible);
        let e = self.entries.get_mut(seq)?;
        e.backout_count += 1;
        let (count, stored) = (e.backout_count, e.stored());
        if stored {
            self.pending.push(IndexOp::Backout { seq, count });
            self.ctx.pending_ops.fetch_add(1, Ordering::Relaxed);
        }
        Some(count)
    }

    /// The message of an entry: the cached one, or read from the queue's files (an error
    /// names the file and offset of a damaged record).
    pub fn message(&self, e: &Entry) -> crate::error::MqResult<Arc<Message>> {
        if let Some(m) = &e.msg {
            return Ok(m.clone());
        }
        let (Some(loc), Some(store)) = (e.loc(), &self.store) else {
            return Err(crate::error::MqError::new(
                sealmq_types::ReasonCode::ResourceProblem,
                format!(
                    "message {} of '{}' is neither in memory nor in a queue file",
                    e.seq, self.def.name
                ),
            ));
        };
        read_message(store, e.seq, loc)
    }

    /// Where to read an entry's message from when it is not in memory: a get reads it with
    /// the queue's lock released.
    pub fn to_read(&self, e: &Entry) -> Option<(Arc<QueueStore>, Loc)> {
        if e.msg.is_some() {
            return None;
        }
        Some((self.store.clone()?, e.loc()?))
    }

    /// The message with this sequence number, if it is here and readable.
    pub fn msg_of(&self, seq: u64) -> Option<Arc<Message>> {
        let at = self.entries.locate(seq)?;
        self.message(self.entries.at(at)).ok()
    }

    fn accepts(&self, m: &Match, e: &Entry) -> bool {
        if let Some(id) = m.msg_id
            && sealmq_storage::qstore::fingerprint(&id) != e.fp_msg
        {
            return false;
        }
        if let Some(id) = m.correl_id
            && sealmq_storage::qstore::fingerprint(&id) != e.fp_correl
        {
            return false;
        }
        if m.is_any() {
            return true;
        }
        match self.message(e) {
            Ok(msg) => m.accepts(&msg),
            Err(err) => {
                tracing::error!(queue = %self.def.name, seq = e.seq, "{err}");
                false
            }
        }
    }

    /// The first visible, unexpired message after `after` that `m` accepts. Expired messages
    /// met on the way are returned in `expired` for the caller to discard.
    pub fn find(&self, m: &Match, after: Option<Key>, expired: &mut Vec<u64>) -> Option<Key> {
        let now = now_ms();
        for (k, e) in self.entries.iter_from(after) {
            if !e.is_visible() {
                continue;
            }
            if e.expired(now) {
                expired.push(k.1);
                continue;
            }
            if self.accepts(m, e) {
                return Some(k);
            }
        }
        None
    }

    /// A message became visible: wake every browsing waiter it matches and one getter, a
    /// getter matching it specifically first.
    pub fn notify(&mut self, msg: &Message) {
        let mut chosen = None;
        for (i, w) in self.waiters.iter().enumerate() {
            if !w.browse && w.matching.is_specific() && w.matching.accepts(msg) {
                chosen = Some(i);
                break;
            }
        }
        if chosen.is_none() {
            chosen = self
                .waiters
                .iter()
                .position(|w| !w.browse && w.matching.accepts(msg));
        }
        if let Some(i) = chosen
            && let Some(w) = self.waiters.remove(i)
        {
            w.wake();
        }
        let browsers: Vec<_> = self
            .waiters
            .iter()
            .filter(|w| w.browse && w.matching.accepts(msg))
            .cloned()
            .collect();
        self.waiters
            .retain(|w| !(w.browse && w.matching.accepts(msg)));
        for w in browsers {
            w.wake();
        }
    }

    /// Passes a wake-up on when a woken getter leaves without a message.
    pub fn renotify(&mut self) {
        let mut dummy = Vec::new();
        let m = Match::default();
        if let Some(k) = self.find(&m, None, &mut dummy)
            && let Some(e) = self.entries.get(k)
            && let Ok(msg) = self.message(e)
        {
            self.notify(&msg);
        }
    }

    /// Wakes every waiter (the queue manager is ending: they answer 2161).
    pub fn wake_all(&mut self) {
        for w in self.waiters.drain(..) {
            w.wake();
        }
    }

    pub fn remove_waiter(&mut self, w: &Arc<Waiter>) {
        self.waiters.retain(|x| !Arc::ptr_eq(x, w));
    }

    /// Re-keys every message after MSGDLVSQ changed.
    pub fn rekey(&mut self) {
        for e in self.entries.drain() {
            let key = self.key_for(e.priority(), e.seq);
            self.entries.insert(key.0, e);
        }
    }
}

/// Reads message `seq` from its record at `loc` (an error names the file and offset of a
/// damaged record).
pub fn read_message(
    store: &QueueStore,
    seq: u64,
    loc: Loc,
) -> crate::error::MqResult<Arc<Message>> {
    let bytes = store.read(seq, loc)?;
    let mut d = sealmq_storage::codec::Dec::new(&bytes, "queued message");
    let m = Message::decode(&mut d).map_err(sealmq_storage::StorageError::from)?;
    Ok(Arc::new(m))
}

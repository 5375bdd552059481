//! A local queue at run time: its messages in delivery order, their unit-of-work states, and
//! the getters waiting on it. Each queue has its own lock, so a busy queue never holds up
//! another.

use crate::md::{Message, now_ms};
use crate::objects::{MsgDlvSq, QueueDef};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

/// What a get matches on (shared with applications through `sealmq-mqi`).
pub use sealmq_mqi::Match;

/// Transaction (unit of work) identifier; every persistent operation has one.
pub type TxId = u64;

/// Delivery order: priority rank (0 first), then arrival sequence.
pub type Key = (u8, u64);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryState {
    /// Committed and available.
    Visible,
    /// Put under a unit of work not yet committed: invisible.
    Putting(TxId),
    /// Got under a unit of work not yet committed: hidden, restored on backout.
    Getting(TxId),
}

#[derive(Debug, Clone)]
pub struct Entry {
    pub msg: Arc<Message>,
    pub state: EntryState,
    pub backout_count: u32,
}

/// A getter waiting for a message.
pub struct Waiter {
    pub matching: Match,
    pub browse: bool,
    woken: Mutex<bool>,
    cv: Condvar,
}

impl Waiter {
    pub fn new(matching: Match, browse: bool) -> Arc<Waiter> {
        Arc::new(Waiter {
            matching,
            browse,
            woken: Mutex::new(false),
            cv: Condvar::new(),
        })
    }

    pub(crate) fn wake(&self) {
        *self.woken.lock().unwrap_or_else(|p| p.into_inner()) = true;
        self.cv.notify_one();
    }

    /// Waits until woken or `until`; returns whether it was woken.
    pub fn wait_until(&self, until: std::time::Instant) -> bool {
        let mut w = self.woken.lock().unwrap_or_else(|p| p.into_inner());
        while !*w {
            let now = std::time::Instant::now();
            if now >= until {
                return false;
            }
            w = self
                .cv
                .wait_timeout(w, until - now)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        *w = false;
        true
    }
}

/// The state behind a queue's lock.
pub struct QueueState {
    pub def: QueueDef,
    pub entries: BTreeMap<Key, Entry>,
    pub keys: HashMap<u64, Key>,
    pub uncommitted_puts: usize,
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
}

pub struct LocalQueue {
    pub name: String,
    state: Mutex<QueueState>,
}

impl LocalQueue {
    pub fn new(def: QueueDef) -> Arc<LocalQueue> {
        Arc::new(LocalQueue {
            name: def.name.clone(),
            state: Mutex::new(QueueState {
                def,
                entries: BTreeMap::new(),
                keys: HashMap::new(),
                uncommitted_puts: 0,
                waiters: VecDeque::new(),
                open_input: 0,
                open_exclusive: false,
                open_output: 0,
                open_browse: 0,
                high_water: 0,
                stats: Default::default(),
                last_trigger: None,
            }),
        })
    }

    pub fn lock(&self) -> MutexGuard<'_, QueueState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl QueueState {
    pub fn key_for(&self, priority: u8, seq: u64) -> Key {
        match self.def.msg_dlv_seq {
            MsgDlvSq::Fifo => (0, seq),
            MsgDlvSq::Priority => (9 - priority.min(9), seq),
        }
    }

    /// Committed messages (visible or being got), as MQ counts CURDEPTH, plus uncommitted puts.
    pub fn depth(&self) -> usize {
        self.entries.len()
    }

    pub fn insert(
        &mut self,
        seq: u64,
        msg: Arc<Message>,
        state: EntryState,
        backout_count: u32,
    ) -> Key {
        let key = self.key_for(msg.md.priority.clamp(0, 9) as u8, seq);
        if matches!(state, EntryState::Putting(_)) {
            self.uncommitted_puts += 1;
        }
        self.entries.insert(
            key,
            Entry {
                msg,
                state,
                backout_count,
            },
        );
        self.keys.insert(seq, key);
        self.high_water = self.high_water.max(self.entries.len());
        self.stats.on_depth(self.entries.len());
        key
    }

    pub fn remove(&mut self, seq: u64) -> Option<Entry> {
        let key = self.keys.remove(&seq)?;
        let e = self.entries.remove(&key)?;
        if matches!(e.state, EntryState::Putting(_)) {
            self.uncommitted_puts -= 1;
        }
        Some(e)
    }

    pub fn get_mut(&mut self, seq: u64) -> Option<&mut Entry> {
        let key = *self.keys.get(&seq)?;
        self.entries.get_mut(&key)
    }

    pub fn set_state(&mut self, seq: u64, state: EntryState) {
        let mut was_putting = false;
        if let Some(e) = self.get_mut(seq) {
            was_putting = matches!(e.state, EntryState::Putting(_));
            e.state = state;
        }
        if was_putting && !matches!(state, EntryState::Putting(_)) {
            self.uncommitted_puts -= 1;
        }
    }

    /// The first visible, unexpired message after `after` that `m` accepts. Expired messages
    /// met on the way are returned in `expired` for the caller to discard.
    pub fn find(&self, m: &Match, after: Option<Key>, expired: &mut Vec<u64>) -> Option<Key> {
        let now = now_ms();
        let range = match after {
            Some(k) => self
                .entries
                .range((std::ops::Bound::Excluded(k), std::ops::Bound::Unbounded)),
            None => self.entries.range(..),
        };
        for (k, e) in range {
            if e.state != EntryState::Visible {
                continue;
            }
            if e.msg.expires_at_ms.is_some_and(|t| t <= now) {
                expired.push(k.1);
                continue;
            }
            if m.accepts(&e.msg) {
                return Some(*k);
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
            && let Some(e) = self.entries.get(&k)
        {
            let msg = e.msg.clone();
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
        let old = std::mem::take(&mut self.entries);
        self.keys.clear();
        let pending = self.uncommitted_puts;
        for ((_, seq), e) in old {
            let key = self.key_for(e.msg.md.priority.clamp(0, 9) as u8, seq);
            self.keys.insert(seq, key);
            self.entries.insert(key, e);
        }
        self.uncommitted_puts = pending;
    }
}

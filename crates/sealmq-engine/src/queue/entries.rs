//! A queue's index in memory: one entry per message, ≤ 64 bytes each, in one sorted deque per
//! priority rank (FIFO queues use rank 0 only). Puts append at the back (a put whose sequence
//! number was taken a moment before another's goes in just before it); gets take from the
//! front. A message taken from elsewhere leaves a tombstone that is dropped when it reaches an
//! end, or when tombstones are half the deque.

use crate::md::Message;
use sealmq_storage::qstore::{Loc, Placed, fingerprint};
use std::collections::VecDeque;
use std::sync::Arc;

/// Transaction (unit of work) identifier; every persistent operation has one.
pub type TxId = u64;

/// The "unit of work" of a message a getter is reading from its queue file with the queue's
/// lock released: hidden from other getters meanwhile (no real unit of work has number 0).
pub const READING: TxId = 0;

/// Delivery order: priority rank (0 first), then arrival sequence.
pub type Key = (u8, u64);

pub const RANKS: usize = 10;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryState {
    /// Committed and available.
    Visible,
    /// Put under a unit of work not yet committed: invisible.
    Putting(TxId),
    /// Got under a unit of work not yet committed: hidden, restored on backout.
    Getting(TxId),
}

const TOMB: u64 = 3;
const PERSISTENT: u8 = 0x10;
const SPILL: u8 = 0x20;
/// Its message was replaced in place (`sealmq reprotect`) since a checkpoint last took it to
/// store: a checkpoint that took the message before must not name this entry's place.
const REPLACED: u8 = 0x40;

/// One queued message as memory knows it. The payload is `msg` when cached; otherwise it is
/// read from the queue's files at its place.
#[derive(Debug, Clone)]
pub struct Entry {
    pub seq: u64,
    state: u64,
    /// Milliseconds since the epoch; `i64::MIN`: never.
    pub expires_at_ms: i64,
    file: u32,
    offset: u32,
    len: u32,
    pub fp_msg: u32,
    pub fp_correl: u32,
    pub backout_count: u32,
    flags: u8,
    pub msg: Option<Arc<Message>>,
}

impl Entry {
    pub fn new(seq: u64, msg: Arc<Message>, state: EntryState, backout_count: u32) -> Entry {
        let mut e = Entry {
            seq,
            state: 0,
            expires_at_ms: msg.expires_at_ms.unwrap_or(i64::MIN),
            file: 0,
            offset: 0,
            len: 0,
            fp_msg: fingerprint(&msg.md.msg_id),
            fp_correl: fingerprint(&msg.md.correl_id),
            backout_count,
            flags: (msg.md.priority.clamp(0, 9) as u8)
                | if msg.is_persistent() { PERSISTENT } else { 0 },
            msg: Some(msg),
        };
        e.set_state(state);
        e
    }

    /// A stored persistent message, not cached.
    pub fn placed(p: &Placed) -> Entry {
        Entry {
            seq: p.seq,
            state: 0,
            expires_at_ms: p.expires_at_ms,
            file: p.loc.file,
            offset: p.loc.offset,
            len: p.loc.len,
            fp_msg: p.fp_msg,
            fp_correl: p.fp_correl,
            backout_count: p.backout,
            flags: p.priority.min(9) | PERSISTENT,
            msg: None,
        }
    }

    fn tomb(seq: u64) -> Entry {
        Entry {
            seq,
            state: TOMB,
            expires_at_ms: i64::MIN,
            file: 0,
            offset: 0,
            len: 0,
            fp_msg: 0,
            fp_correl: 0,
            backout_count: 0,
            flags: 0,
            msg: None,
        }
    }

    pub fn is_tomb(&self) -> bool {
        self.state == TOMB
    }

    pub fn state(&self) -> EntryState {
        match self.state & 3 {
            1 => EntryState::Putting(self.state >> 2),
            2 => EntryState::Getting(self.state >> 2),
            _ => EntryState::Visible,
        }
    }

    pub(crate) fn set_state(&mut self, s: EntryState) {
        self.state = match s {
            EntryState::Visible => 0,
            EntryState::Putting(tx) => (tx << 2) | 1,
            EntryState::Getting(tx) => (tx << 2) | 2,
        };
    }

    pub fn is_visible(&self) -> bool {
        self.state == 0
    }

    pub fn persistent(&self) -> bool {
        self.flags & PERSISTENT != 0
    }

    pub fn priority(&self) -> u8 {
        self.flags & 0x0f
    }

    /// Where its record is: a data file (persistent, stored at a checkpoint) or a spill file.
    pub fn loc(&self) -> Option<Loc> {
        (self.file != 0).then_some(Loc {
            file: self.file,
            offset: self.offset,
            len: self.len,
            spill: self.flags & SPILL != 0,
        })
    }

    pub(crate) fn set_loc(&mut self, loc: Loc) {
        self.file = loc.file;
        self.offset = loc.offset;
        self.len = loc.len;
        if loc.spill {
            self.flags |= SPILL;
        } else {
            self.flags &= !SPILL;
        }
    }

    /// Marks the message replaced in place (see `REPLACED`).
    pub(crate) fn mark_replaced(&mut self) {
        self.flags |= REPLACED;
    }

    /// Whether the message was replaced since a checkpoint last took it; and a checkpoint
    /// takes it now (it stores the message as it is).
    pub(crate) fn take_replaced(&mut self) -> bool {
        let was = self.flags & REPLACED != 0;
        self.flags &= !REPLACED;
        was
    }

    pub(crate) fn replaced(&self) -> bool {
        self.flags & REPLACED != 0
    }

    /// In a data file (a checkpoint stored it).
    pub fn stored(&self) -> bool {
        self.file != 0 && self.flags & SPILL == 0
    }

    pub fn expired(&self, now: i64) -> bool {
        self.expires_at_ms != i64::MIN && self.expires_at_ms <= now
    }

    /// The index journal's record of it at `loc`.
    pub fn to_placed(&self, loc: Loc) -> Placed {
        Placed {
            seq: self.seq,
            loc,
            priority: self.priority(),
            expires_at_ms: self.expires_at_ms,
            fp_msg: self.fp_msg,
            fp_correl: self.fp_correl,
            backout: self.backout_count,
        }
    }
}

/// The entries of one queue, in delivery order.
#[derive(Default)]
pub struct Entries {
    ranks: [VecDeque<Entry>; RANKS],
    dead: [usize; RANKS],
    live: usize,
}

impl Entries {
    pub fn len(&self) -> usize {
        self.live
    }

    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    fn pos(&self, rank: usize, seq: u64) -> Option<usize> {
        let d = &self.ranks[rank];
        let i = d.partition_point(|e| e.seq < seq);
        (i < d.len() && d[i].seq == seq && !d[i].is_tomb()).then_some(i)
    }

    /// Finds a message by sequence number (probing the ranks in use).
    pub fn locate(&self, seq: u64) -> Option<(usize, usize)> {
        (0..RANKS)
            .filter(|r| !self.ranks[*r].is_empty())
            .find_map(|r| self.pos(r, seq).map(|i| (r, i)))
    }

    pub fn insert(&mut self, rank: u8, e: Entry) -> Key {
        let r = usize::from(rank).min(RANKS - 1);
        let key = (r as u8, e.seq);
        let d = &mut self.ranks[r];
        if d.back().is_none_or(|b| b.seq < e.seq) {
            d.push_back(e);
        } else {
            let i = d.partition_point(|x| x.seq < e.seq);
            if i < d.len() && d[i].seq == e.seq {
                if d[i].is_tomb() {
                    self.dead[r] -= 1;
                } else {
                    self.live -= 1;
                }
                d[i] = e;
            } else {
                d.insert(i, e);
            }
        }
        self.live += 1;
        key
    }

    pub fn at(&self, (r, i): (usize, usize)) -> &Entry {
        &self.ranks[r][i]
    }

    pub fn at_mut(&mut self, (r, i): (usize, usize)) -> &mut Entry {
        &mut self.ranks[r][i]
    }

    pub fn get(&self, key: Key) -> Option<&Entry> {
        let r = usize::from(key.0).min(RANKS - 1);
        self.pos(r, key.1).map(|i| &self.ranks[r][i])
    }

    pub fn get_mut(&mut self, seq: u64) -> Option<&mut Entry> {
        let at = self.locate(seq)?;
        Some(self.at_mut(at))
    }

    /// Takes the entry out, leaving a tombstone that goes when it reaches an end.
    pub fn take(&mut self, (r, i): (usize, usize)) -> Entry {
        let d = &mut self.ranks[r];
        let seq = d[i].seq;
        let e = std::mem::replace(&mut d[i], Entry::tomb(seq));
        self.live -= 1;
        self.dead[r] += 1;
        while d.front().is_some_and(Entry::is_tomb) {
            d.pop_front();
            self.dead[r] -= 1;
        }
        while d.back().is_some_and(Entry::is_tomb) {
            d.pop_back();
            self.dead[r] -= 1;
        }
        if self.dead[r] > 64 && self.dead[r] * 2 > d.len() {
            d.retain(|e| !e.is_tomb());
            self.dead[r] = 0;
        }
        if d.is_empty() && d.capacity() > 1024 {
            d.shrink_to_fit();
        }
        e
    }

    /// Every entry after `after` (or from the first), in delivery order.
    pub fn iter_from(&self, after: Option<Key>) -> impl Iterator<Item = (Key, &Entry)> {
        let (start_rank, start_seq) = match after {
            Some((r, s)) => (usize::from(r).min(RANKS - 1), Some(s)),
            None => (0, None),
        };
        (start_rank..RANKS).flat_map(move |r| {
            let d = &self.ranks[r];
            let from = match start_seq {
                Some(s) if r == start_rank => d.partition_point(|e| e.seq <= s),
                _ => 0,
            };
            d.range(from..)
                .filter(|e| !e.is_tomb())
                .map(move |e| ((r as u8, e.seq), e))
        })
    }

    /// The committed entry put first (the lowest sequence among each priority's first
    /// visible entry): MSGAGE's message.
    pub fn oldest(&self) -> Option<&Entry> {
        self.ranks
            .iter()
            .filter_map(|d| {
                d.iter()
                    .find(|e| !e.is_tomb() && e.state() == EntryState::Visible)
            })
            .min_by_key(|e| e.seq)
    }

    pub fn iter(&self) -> impl Iterator<Item = (Key, &Entry)> {
        self.iter_from(None)
    }

    pub fn iter_mut(&mut self) -> impl Iterator<Item = &mut Entry> {
        self.ranks
            .iter_mut()
            .flat_map(|d| d.iter_mut())
            .filter(|e| !e.is_tomb())
    }

    /// Takes every entry out.
    pub fn drain(&mut self) -> Vec<Entry> {
        let mut out = Vec::with_capacity(self.live);
        for d in &mut self.ranks {
            out.extend(std::mem::take(d).into_iter().filter(|e| !e.is_tomb()));
        }
        *self = Entries::default();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::md::Md;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    fn msg(priority: i32) -> Arc<Message> {
        Arc::new(Message {
            md: Md {
                priority,
                ..Md::default()
            },
            payload: vec![1; 10],
            expires_at_ms: None,
        })
    }

    #[test]
    fn an_entry_is_at_most_64_bytes() {
        assert!(
            std::mem::size_of::<Entry>() <= 64,
            "{}",
            std::mem::size_of::<Entry>()
        );
    }

    proptest! {
        /// Inserts (in any order) and takes (from anywhere) against a sorted map.
        #[test]
        fn behaves_like_a_sorted_map(ops in proptest::collection::vec((any::<bool>(), 0u64..300, 0u8..3), 1..400)) {
            let mut e = Entries::default();
            let mut model: BTreeMap<(u8, u64), ()> = BTreeMap::new();
            for (put, seq, rank) in ops {
                if put {
                    if e.locate(seq).is_none() {
                        e.insert(rank, Entry::new(seq, msg(0), EntryState::Visible, 0));
                        model.insert((rank, seq), ());
                    }
                } else if let Some(at) = e.locate(seq) {
                    let got = e.take(at);
                    prop_assert_eq!(got.seq, seq);
                    model.retain(|k, _| k.1 != seq);
                }
                prop_assert_eq!(e.len(), model.len());
            }
            let keys: Vec<Key> = e.iter().map(|(k, _)| k).collect();
            let want: Vec<Key> = model.keys().copied().collect();
            prop_assert_eq!(&keys, &want);
            if let Some(mid) = want.get(want.len() / 2) {
                let after: Vec<Key> = e.iter_from(Some(*mid)).map(|(k, _)| k).collect();
                prop_assert_eq!(after, want[want.len() / 2 + 1..].to_vec());
            }
        }
    }
}

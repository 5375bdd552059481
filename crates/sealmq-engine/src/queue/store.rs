//! A queue's side of its files: the message cache shared by all queues, spilling a
//! non-persistent message when the cache is full, and what a checkpoint takes from a queue
//! (the persistent messages to store, the changes to stored ones) and gives back (places).

use super::{Entry, EntryState, QueueState};
use crate::md::Message;
use sealmq_storage::qstore::{IndexOp, Loc, Placed, QueueStore, StoreConfig, queue_dir};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// What a cached message costs memory: its payload and a descriptor's worth.
pub fn cost(m: &Message) -> u64 {
    cost_of_len(m.payload.len())
}

pub fn cost_of_len(len: usize) -> u64 {
    len as u64 + 512
}

/// Shared by every queue of a queue manager: where queue files live and the message cache.
pub struct QueueCtx {
    /// `<QM>/queues`: one directory per local queue.
    pub root: PathBuf,
    pub store_cfg: StoreConfig,
    /// Bytes of messages held in memory.
    pub cached: AtomicU64,
    /// Bytes of persistent messages in memory that no checkpoint stored yet.
    pub unstored: AtomicU64,
    /// Changes to stored messages waiting for the next checkpoint.
    pub pending_ops: AtomicU64,
    /// The cache's size (QMGR MSGCACHE, bytes).
    pub budget: AtomicU64,
}

impl QueueCtx {
    pub fn new(root: PathBuf, store_cfg: StoreConfig, budget: u64) -> QueueCtx {
        QueueCtx {
            root,
            store_cfg,
            cached: AtomicU64::new(0),
            unstored: AtomicU64::new(0),
            pending_ops: AtomicU64::new(0),
            budget: AtomicU64::new(budget),
        }
    }

    pub(crate) fn add(&self, c: &AtomicU64, delta: i64) {
        if delta >= 0 {
            c.fetch_add(delta as u64, Ordering::Relaxed);
        } else {
            let d = delta.unsigned_abs();
            let _ = c.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| {
                Some(v.saturating_sub(d))
            });
        }
    }

    pub fn over_budget(&self) -> bool {
        self.cached.load(Ordering::Relaxed) > self.budget.load(Ordering::Relaxed)
    }

    /// Whether a checkpoint is due for the cache's sake: half the cache holds messages only
    /// the log has, or many removals wait to be recorded.
    pub fn checkpoint_due(&self) -> bool {
        self.unstored.load(Ordering::Relaxed) > self.budget.load(Ordering::Relaxed) / 2
            || self.pending_ops.load(Ordering::Relaxed) > 500_000
    }

    pub fn dir_of(&self, queue: &str) -> PathBuf {
        queue_dir(&self.root, queue)
    }
}

/// What a checkpoint takes from one queue while updates are held.
pub struct StoreSnap {
    /// Committed persistent messages not stored yet.
    pub to_store: Vec<(u64, Arc<Message>, u32)>,
    /// Removals and backout counts of stored messages since the last checkpoint.
    pub changes: Vec<IndexOp>,
    /// Every stored message, when the index is due for a rewrite.
    pub base: Option<Vec<Placed>>,
}

impl QueueState {
    /// The queue's files, opened (and created) at first use.
    pub(crate) fn store(&mut self) -> sealmq_storage::Result<Arc<QueueStore>> {
        if let Some(s) = &self.store {
            return Ok(s.clone());
        }
        let dir = self.ctx.dir_of(&self.def.name);
        let (s, _) = QueueStore::open(&dir, self.ctx.store_cfg.clone(), u64::MAX)?;
        let s = Arc::new(s);
        self.store = Some(s.clone());
        Ok(s)
    }

    /// Writes a non-persistent message to a spill file instead of memory; on failure it
    /// stays in memory.
    pub(super) fn spill(&mut self, e: &mut Entry) {
        let Some(m) = e.msg.clone() else { return };
        let mut enc = sealmq_storage::codec::Enc::with_capacity(m.payload.len() + 256);
        m.encode(&mut enc);
        match self.store().and_then(|s| s.append(e.seq, false, &enc.buf)) {
            Ok(loc) => {
                e.set_loc(loc);
                e.msg = None;
            }
            Err(err) => tracing::warn!(queue = %self.def.name, "cannot spill a message: {err}"),
        }
    }

    /// For a checkpoint (updates held): the committed persistent messages to store and the
    /// changes since the last one; every stored message too when `rewrite`.
    pub(crate) fn snapshot(&mut self, rewrite: bool) -> StoreSnap {
        let mut to_store = Vec::new();
        let rewrite = rewrite || self.cleared;
        let mut base = rewrite.then(Vec::new);
        for e in self.entries.iter_mut() {
            if !e.persistent() || matches!(e.state(), EntryState::Putting(_)) {
                continue;
            }
            if let Some(loc) = e.loc().filter(|l| !l.spill) {
                if let Some(b) = &mut base {
                    b.push(e.to_placed(loc));
                }
            } else if let Some(m) = &e.msg {
                to_store.push((e.seq, m.clone(), e.backout_count));
                e.take_replaced();
            }
        }
        let changes = std::mem::take(&mut self.pending);
        self.cleared = false;
        self.ctx.add(&self.ctx.pending_ops, -(changes.len() as i64));
        StoreSnap {
            to_store,
            changes,
            base,
        }
    }

    /// A checkpoint failed before its index batch was written: the changes it took wait for
    /// the next one (its new messages are still unstored and are taken again).
    pub(crate) fn unsnapshot(&mut self, snap: StoreSnap) {
        let n = snap.changes.len() as i64;
        let later = std::mem::replace(&mut self.pending, snap.changes);
        self.pending.extend(later);
        self.ctx.add(&self.ctx.pending_ops, n);
        if snap.base.is_some() {
            self.cleared = true;
        }
    }

    /// A checkpoint stored message `p.seq` at `p.loc`: the entry now names its place, and
    /// drops its payload when the cache is full. A message got meanwhile is counted out at
    /// the next checkpoint, and a backout count changed meanwhile recorded then; one replaced
    /// in place meanwhile keeps its new payload for the next checkpoint to store, and what
    /// this one stored is counted out as a got one's is.
    pub(crate) fn placed(&mut self, p: &Placed) {
        let over = self.ctx.over_budget();
        let ctx = self.ctx.clone();
        match self.entries.get_mut(p.seq) {
            Some(e) if e.loc().is_none() && !e.replaced() => {
                e.set_loc(p.loc);
                if let Some(m) = &e.msg {
                    ctx.add(&ctx.unstored, -(cost(m) as i64));
                    self.unstored = self.unstored.saturating_sub(cost(m));
                    if over {
                        ctx.add(&ctx.cached, -(cost(m) as i64));
                        e.msg = None;
                    }
                }
                if e.backout_count != p.backout {
                    let count = e.backout_count;
                    self.pending.push(IndexOp::Backout { seq: p.seq, count });
                    ctx.pending_ops.fetch_add(1, Ordering::Relaxed);
                }
            }
            _ => {
                self.pending.push(IndexOp::Del {
                    seq: p.seq,
                    loc: p.loc,
                });
                ctx.pending_ops.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

impl QueueState {
    /// Takes every message out (CLEAR QLOCAL, or the queue goes); returns how many. The next
    /// checkpoint rewrites the queue's index instead of recording each removal.
    pub(crate) fn clear_all(&mut self) -> usize {
        let n = self.entries.len();
        for e in self.entries.drain() {
            self.counted(&e, -1);
        }
        self.pending.clear();
        self.cleared = true;
        if let Some(s) = &self.store
            && let Err(err) = s.drop_spill()
        {
            tracing::warn!(queue = %self.def.name, "{err}");
        }
        n
    }

    /// Removes the queue's files (the queue was deleted).
    pub(crate) fn destroy(&mut self) {
        self.clear_all();
        self.store = None;
        let dir = self.ctx.dir_of(&self.def.name);
        if dir.exists()
            && let Err(e) = std::fs::remove_dir_all(&dir)
        {
            tracing::warn!(queue = %self.def.name, "cannot remove {}: {e}", dir.display());
        }
    }
}

/// The index entry of a message stored at `loc`.
pub fn placed_of(seq: u64, m: &Message, backout: u32, loc: Loc) -> Placed {
    use sealmq_storage::qstore::fingerprint;
    Placed {
        seq,
        loc,
        priority: m.md.priority.clamp(0, 9) as u8,
        expires_at_ms: m.expires_at_ms.unwrap_or(i64::MIN),
        fp_msg: fingerprint(&m.md.msg_id),
        fp_correl: fingerprint(&m.md.correl_id),
        backout,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::md::{Md, Message, Persistence};
    use crate::objects::{QType, QueueDef};
    use crate::queue::{EntryState, LocalQueue};

    fn msg(body: &[u8]) -> Arc<Message> {
        Arc::new(Message {
            md: Md {
                persistence: Persistence::Persistent,
                ..Md::default()
            },
            payload: body.to_vec(),
            expires_at_ms: None,
        })
    }

    /// A checkpoint takes a message to store; the message is replaced in place before the
    /// checkpoint says where it stored it: the entry keeps its new payload unstored (the next
    /// checkpoint stores that), and the stored old one is counted out.
    #[test]
    fn a_message_replaced_during_a_checkpoint_keeps_its_new_payload() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = Arc::new(QueueCtx::new(
            dir.path().to_path_buf(),
            sealmq_storage::qstore::StoreConfig::new(None),
            1 << 20,
        ));
        let q = LocalQueue::new(QueueDef::new("Q", QType::Local), ctx);
        let mut st = q.lock();
        st.insert(7, msg(b"old"), EntryState::Visible, 0);
        let snap = st.snapshot(false);
        assert_eq!(snap.to_store.len(), 1);
        // Replaced as `replace_payloads` does.
        st.remove(7);
        st.insert(7, msg(b"new"), EntryState::Visible, 0);
        st.get_mut(7).unwrap().mark_replaced();
        let loc = Loc {
            file: 1,
            offset: 0,
            len: 100,
            spill: false,
        };
        st.placed(&placed_of(7, &snap.to_store[0].1, 0, loc));
        let e = st.get_mut(7).unwrap();
        assert!(
            e.loc().is_none(),
            "the old payload's place is not the new one's"
        );
        assert_eq!(st.msg_of(7).unwrap().payload, b"new");
        let next = st.snapshot(false);
        assert_eq!(next.to_store.len(), 1);
        assert_eq!(next.to_store[0].1.payload, b"new");
        assert!(matches!(next.changes[..], [IndexOp::Del { seq: 7, .. }]));
        st.placed(&placed_of(
            7,
            &next.to_store[0].1,
            0,
            Loc { offset: 100, ..loc },
        ));
        assert!(
            st.get_mut(7).unwrap().loc().is_some(),
            "the next checkpoint stores it"
        );
    }
}

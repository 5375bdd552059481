//! Checkpoints: the committed state as of one log position, so that a start replays only the
//! log after it. Definitions go to a checkpoint file; messages go to their queues' files,
//! and only what changed since the last checkpoint (messages committed since, removals,
//! backout counts), so a checkpoint costs what changed, not what is queued.
//!
//! Order: (1) with updates held (`apply` exclusive), the definitions and each queue's changes
//! are taken; (2) new messages are appended to queue files and each queue's index batch
//! written and synced, tagged with the checkpoint's log position; (3) the checkpoint file is
//! written; (4) only then are emptied queue files, replaced index files and log segments
//! released. A crash before (3) leaves batches tagged past the newest checkpoint, which the
//! next start cuts (the log still holds what they recorded).

use super::*;
use crate::queue::{StoreSnap, placed_of};
use sealmq_storage::qstore::{IndexOp, QueueStore};
use sealmq_types::sync::{lock, read, write};

/// Checkpoint frames version: 2 keeps messages in queue files (no MESSAGE frames); 3 adds
/// where each queue's index ended (QUEUEINDEX frames).
pub(crate) const FRAMES_VERSION: u32 = 3;

/// Index history (bytes) past which, and past this many bytes per queued message, a queue's
/// index is rewritten from its live entries.
const REWRITE_MIN: u64 = 64 << 20;
const REWRITE_PER_MSG: u64 = 160;
/// Log bytes written since the last checkpoint past which a disk under its low-water mark
/// has the log start a new segment (so the old one can be released).
const LOW_ROLL_MIN: u64 = 1 << 20;

impl QueueManager {
    /// Takes a checkpoint when enough log was written since the last one, or the message
    /// cache needs messages stored.
    /// While the disk is short of space, also after draining work (at most every 200 ms): its
    /// checkpoint releases the segment that filled the disk and writes the reserve again.
    pub fn maybe_checkpoint(self: &Arc<Self>) {
        let written = self.log.stats().bytes - self.bytes_at_checkpoint.load(Ordering::Relaxed);
        let short_due = self.log.space_short() && {
            let now = crate::md::now_ms() as u64;
            let last = self.short_checkpoint_ms.load(Ordering::Relaxed);
            now >= last + 200
                && self
                    .short_checkpoint_ms
                    .compare_exchange(last, now, Ordering::AcqRel, Ordering::Relaxed)
                    .is_ok()
        };
        // The disk is filling (under its low-water mark) and the log grew since the last
        // checkpoint: a new segment and a checkpoint now give the old segment's space back
        // before a put is refused for want of it.
        let low_due = written >= LOW_ROLL_MIN && self.log.space_low();
        if (written >= self.cfg.checkpoint_bytes
            || short_due
            || low_due
            || self.qctx.checkpoint_due())
            && !self.checkpointing.swap(true, Ordering::AcqRel)
        {
            let qm = self.clone();
            std::thread::spawn(move || {
                // Short of space, keep trying for a while: the gets and clears that free
                // space arrive while this runs, and skip their own triggers.
                let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
                loop {
                    if let Err(e) = qm.checkpoint() {
                        tracing::warn!("checkpoint failed: {e}");
                    }
                    if !qm.log.space_short()
                        || qm.is_quiescing()
                        || std::time::Instant::now() >= until
                    {
                        break;
                    }
                    std::thread::sleep(std::time::Duration::from_millis(250));
                }
                qm.checkpointing.store(false, Ordering::Release);
            });
        }
    }

    /// Writes what the log holds pending and syncs its open segment (a replicated queue
    /// manager's active instance does not sync each batch: a majority of the group holds it);
    /// returns the LSN through which the log is on this instance's disk.
    pub fn sync_log(&self) -> MqResult<Lsn> {
        let lsn = self.log.last_lsn();
        self.log.sync_to_disk()?;
        Ok(lsn)
    }

    /// Writes a checkpoint of the committed state and releases log segments no longer needed.
    pub fn checkpoint(&self) -> MqResult<Lsn> {
        let _one = lock(&self.checkpoint_lock);
        let bytes_now = self.log.stats().bytes;
        let grew = bytes_now.saturating_sub(self.bytes_at_checkpoint.load(Ordering::Relaxed))
            >= LOW_ROLL_MIN;
        let (lsn, replay_from, mut frames, snaps) = self.snapshot();
        let mut stores = Vec::new();
        let mut failed = None;
        for (q, snap) in snaps {
            if failed.is_some() {
                q.lock().unsnapshot(snap);
                continue;
            }
            match self.store_queue(&q, lsn, snap) {
                Ok(Some(s)) => stores.push(s),
                Ok(None) => {}
                Err(e) => failed = Some(e),
            }
        }
        if let Some(e) = failed {
            return Err(e);
        }
        self.index_ends(&mut frames);
        let ckp_key = self.write_checkpoint(lsn, replay_from, frames)?;
        self.bytes_at_checkpoint.store(bytes_now, Ordering::Relaxed);
        for s in &stores {
            if let Err(e) = s.release() {
                tracing::warn!("{e}");
            }
        }
        // Short of space, or about to be: the active segment (which fills the disk) is closed
        // so it can go.
        let short = self.log.space_short();
        if short || (grew && self.log.space_low()) {
            self.log.roll();
        }
        // Replay reads records after `replay_from`: a segment whose records are all at or
        // before it is no longer needed.
        self.log
            .release_before(replay_from + 1)
            .map_err(|e: StorageError| e)?;
        if short {
            self.log.restore_reserve();
        }
        self.prune_keys(ckp_key);
        self.compact_queues(lsn);
        Ok(lsn)
    }

    /// The committed state at one point, under the apply lock: the LSN it stands at, where
    /// replay must start (the oldest active unit of work), the frames of the definitions and
    /// the active units of work, and each queue's snapshot.
    #[allow(clippy::type_complexity)] // the four parts of one snapshot, taken apart at once
    fn snapshot(&self) -> (Lsn, Lsn, Vec<Frame>, Vec<(Arc<LocalQueue>, StoreSnap)>) {
        let _g = write(&self.apply);
        let (lsn, active) = {
            let a = lock(&self.active);
            (self.log.last_lsn(), a.clone())
        };
        let replay_from = active.values().copied().min().unwrap_or(lsn).min(lsn);
        let mut frames: Vec<Frame> = vec![Frame::Format(FRAMES_VERSION)];
        frames.push(Frame::Qmgr(read(&self.qmgr).clone()));
        for d in read(&self.defs).values() {
            // Temporary dynamic queues end with the queue manager; a model queue whose
            // DEFTYPE is TEMPDYN is a definition like any other and stays.
            if !is_temporary_queue(d) {
                frames.push(Frame::Queue(d.clone()));
            }
        }
        let locals: Vec<Arc<LocalQueue>> = read(&self.locals).values().cloned().collect();
        let mut snaps = Vec::new();
        for q in locals {
            let mut st = q.lock();
            if is_temporary_queue(&st.def) {
                continue;
            }
            let rewrite = st.store.as_ref().is_some_and(|s| {
                let b = s.index_bytes();
                // Mostly history, or an emptied queue: its index starts again, small.
                (b > REWRITE_MIN && b > st.depth() as u64 * REWRITE_PER_MSG)
                    || (st.depth() == 0 && b > 4096)
            });
            let snap = st.snapshot(rewrite);
            drop(st);
            snaps.push((q, snap));
        }
        frames.extend(active.keys().map(|t| Frame::Active(*t)));
        frames.extend(read(&self.authrecs).iter().cloned().map(Frame::Auth));
        frames.extend(read(&self.channels).values().cloned().map(Frame::Channel));
        frames.extend(read(&self.sec).frames());
        frames.extend(read(&self.svc).frames());
        (lsn, replay_from, frames, snaps)
    }

    /// Where each queue's index ends now that every index batch of this checkpoint is
    /// durable.
    fn index_ends(&self, frames: &mut Vec<Frame>) {
        for q in read(&self.locals).values() {
            let st = q.lock();
            if is_temporary_queue(&st.def) {
                continue;
            }
            if let Some(s) = &st.store {
                let end = s.index_end();
                frames.push(Frame::QueueIndex {
                    queue: q.name.clone(),
                    file: end.file,
                    len: end.len,
                });
            }
        }
    }

    /// The checkpoint file written (the log synced first); the data key it is sealed under.
    fn write_checkpoint(&self, lsn: Lsn, replay_from: Lsn, frames: Vec<Frame>) -> MqResult<u32> {
        // A log that does not sync each batch (a replicated queue manager's) is synced before
        // a checkpoint says its records up to `lsn` are on disk.
        self.log.sync_to_disk()?;
        let mut w = CheckpointWriter::create_with(
            &self.cfg.dir.join("checkpoint"),
            lsn,
            self.cfg.dse.clone(),
        )?;
        w.frame(
            &Frame::Meta {
                next_seq: self.next_seq.load(Ordering::Relaxed),
                next_tx: self.next_tx.load(Ordering::Relaxed),
                replay_from,
            }
            .encode(),
        )?;
        for f in frames {
            w.frame(&f.encode())?;
        }
        let ckp_key = w.key_id();
        w.finish()?;
        Ok(ckp_key)
    }

    /// Encryption at rest: data keys older than anything still on disk are dropped from the
    /// keyring (kept when segments are archived: archived segments need them).
    /// Only when the oldest segment on disk shows its first record's key: an empty one may
    /// be about to receive a batch sealed before the checkpoint. A failed keyring write is
    /// not the checkpoint's failure; the next checkpoint prunes again.
    fn prune_keys(&self, ckp_key: u32) {
        let (Some(d), None) = (&self.cfg.dse, &self.cfg.archive_dir) else {
            return;
        };
        // An instance of a replicated queue manager shares its keyring with its Raft log,
        // whose entries (kept until a snapshot lets them go) are sealed under keys this log
        // no longer uses: nothing is dropped (docs/ha.md, limits).
        if self.cfg.dir.join("ha.toml").exists() {
            return;
        }
        let Some(oldest) = self.log.oldest_key_id() else {
            return;
        };
        let mut keep = oldest.min(ckp_key);
        // A replicated queue manager's snapshots are sealed too, and sent from this disk.
        if let Ok(dir) = std::fs::read_dir(self.cfg.dir.join(super::replica::STATE_DIR)) {
            for f in dir.flatten() {
                if let Some(k) = super::replica::state_key_id(&f.path()) {
                    keep = keep.min(k);
                }
            }
        }
        for q in read(&self.locals).values() {
            let store = q.lock().store.clone();
            if let Some(k) = store.and_then(|s| s.min_key_id()) {
                keep = keep.min(k);
            }
        }
        let _ = d.prune_below(keep);
    }

    /// Writes one queue's part of checkpoint `lsn`: its new messages, then its index batch
    /// (or a rewritten index). Returns the store to release once the checkpoint is durable.
    fn store_queue(
        &self,
        q: &Arc<LocalQueue>,
        lsn: Lsn,
        snap: StoreSnap,
    ) -> MqResult<Option<Arc<QueueStore>>> {
        if snap.to_store.is_empty() && snap.changes.is_empty() && snap.base.is_none() {
            return Ok(None);
        }
        let store = match q.lock().store() {
            Ok(s) => s,
            Err(e) => {
                q.lock().unsnapshot(snap);
                return Err(e.into());
            }
        };
        let mut placed = Vec::with_capacity(snap.to_store.len());
        let mut write = || -> sealmq_storage::Result<()> {
            let mut buf = sealmq_storage::codec::Enc::with_capacity(4096);
            for (seq, msg, backout) in &snap.to_store {
                buf.buf.clear();
                msg.encode(&mut buf);
                let loc = store.append(*seq, true, &buf.buf)?;
                placed.push(placed_of(*seq, msg, *backout, loc));
            }
            match &snap.base {
                Some(base) => {
                    let mut all = base.clone();
                    all.extend(placed.iter().copied());
                    all.sort_unstable_by_key(|p| p.seq);
                    store.commit(lsn, &[])?;
                    store.rewrite_index(lsn, &all)
                }
                None => {
                    let mut ops = snap.changes.clone();
                    ops.extend(placed.iter().copied().map(IndexOp::Add));
                    store.commit(lsn, &ops)
                }
            }
        };
        if let Err(e) = write() {
            if let Err(r) = store.rollback() {
                tracing::warn!("{r}");
            }
            q.lock().unsnapshot(snap);
            return Err(e.into());
        }
        let mut st = q.lock();
        for p in &placed {
            st.placed(p);
        }
        Ok(Some(store))
    }
}

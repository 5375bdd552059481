//! Background compaction of sparse queue data files (issue 13; storage side in
//! `sealmq_storage::qstore::compact`). Runs on the checkpoint's thread right after a
//! checkpoint completed, so no other checkpoint writes queue files meanwhile; puts and gets go
//! on: files are read and written without the queue's lock, which is taken only to see which
//! messages are still queued and to give the moved ones their new places.

use super::*;
use sealmq_storage::qstore::{Loc, Placed, QueueStore};
use sealmq_types::sync::read;

/// Bytes of sparse data files compacted after one checkpoint (read; at most a quarter of it
/// is written again): four of the default 64 MiB files.
const BYTES_PER_CHECKPOINT: u64 = 256 << 20;

/// Queue entries looked at per hold of the queue's lock.
const PER_LOCK: usize = 4096;

impl QueueManager {
    /// Compacts up to [`BYTES_PER_CHECKPOINT`] of sparse data files, emptiest first; the moves
    /// are recorded under the tag of checkpoint `lsn`, which has completed. A failure is
    /// logged and leaves every message where the index says it is.
    pub(crate) fn compact_queues(&self, lsn: Lsn) {
        let locals: Vec<Arc<LocalQueue>> = read(&self.locals).values().cloned().collect();
        let mut budget = BYTES_PER_CHECKPOINT;
        for q in locals {
            if budget == 0 || self.is_quiescing() {
                break;
            }
            let store = {
                let st = q.lock();
                if is_temporary_queue(&st.def) {
                    continue;
                }
                st.store.clone()
            };
            let Some(store) = store else { continue };
            for (n, len) in store.sparse_files() {
                if budget == 0 {
                    break;
                }
                budget = budget.saturating_sub(len);
                match compact_file(&q, &store, n, lsn) {
                    Ok(moved) => {
                        tracing::info!(queue = %q.name, file = n, moved, "data file compacted")
                    }
                    Err(e) => {
                        tracing::warn!(queue = %q.name, file = n, "compaction stopped: {e}");
                        break;
                    }
                }
            }
        }
    }
}

/// Moves the queued messages of data file `n` of queue `q` to its file being written; returns
/// how many moved.
fn compact_file(
    q: &Arc<LocalQueue>,
    store: &Arc<QueueStore>,
    n: u32,
    lsn: Lsn,
) -> sealmq_storage::Result<usize> {
    let records = store.records(n)?;
    let mut wanted: Vec<(u64, Loc)> = Vec::new();
    for chunk in records.chunks(PER_LOCK) {
        let st = q.lock();
        wanted.extend(chunk.iter().copied().filter(|(seq, loc)| {
            st.entries
                .locate(*seq)
                .is_some_and(|at| st.entries.at(at).loc() == Some(*loc))
        }));
    }
    let copies = store.copy(&wanted)?;
    let mut moves: Vec<(Placed, Loc)> = Vec::with_capacity(wanted.len());
    let pairs: Vec<((u64, Loc), Loc)> = wanted.into_iter().zip(copies).collect();
    for chunk in pairs.chunks(PER_LOCK) {
        let mut st = q.lock();
        for ((seq, from), to) in chunk {
            match st.entries.get_mut(*seq) {
                Some(e) if e.loc() == Some(*from) => {
                    e.set_loc(*to);
                    moves.push((e.to_placed(*to), *from));
                }
                // Got while it was being copied: its removal names the old place.
                _ => store.forget(*to),
            }
        }
    }
    store.relocated(lsn, &moves)?;
    store.release()?;
    Ok(moves.len())
}

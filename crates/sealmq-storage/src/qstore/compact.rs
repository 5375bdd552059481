//! Compaction of sparse data files (issue 13): a data file whose messages were mostly got
//! (a priority queue, gets by message id, a consumer that skips) keeps its whole size while
//! one message in it is queued. Its live records are copied to the file being written, the
//! index is told their new places, and the file goes once the index no longer names it.
//!
//! The queue manager drives it (after a checkpoint, one file at a time) without holding up
//! puts and gets: [`QueueStore::records`] and [`QueueStore::copy`] read and write with the
//! file table's lock held per record only; the caller decides under its queue lock which
//! copies count (a message got meanwhile is not moved: [`QueueStore::forget`]) and then
//! records the moves with [`QueueStore::relocated`].
//!
//! Crash safety: copies are synced before the index batch naming them is written; until that
//! batch is durable the index names the old places, and the old file stays until a durable
//! batch has counted every message out of it.

use super::file::{self, HEADER, Kind, ReadErr};
use super::{IndexOp, Loc, Placed, QueueStore, index};
use crate::error::{Result, StorageError};

/// A data file is sparse when at least this share (in quarters) of its bytes is got messages.
const SPARSE_QUARTERS: u64 = 3;

impl QueueStore {
    /// Data files worth compacting, emptiest first, with their sizes: not the one being
    /// written, still holding a message, and at least three quarters got messages.
    pub fn sparse_files(&self) -> Vec<(u32, u64)> {
        let g = self.lock();
        let mut v: Vec<(u64, u32, u64)> = g
            .data
            .files
            .iter()
            .filter(|(n, f)| g.data.active != Some(**n) && f.live.n > 0)
            .filter_map(|(n, f)| {
                let body = f.len.saturating_sub(HEADER);
                let dead = body.saturating_sub(f.live.bytes);
                (body > 0 && dead * 4 >= body * SPARSE_QUARTERS).then_some((
                    f.live.bytes,
                    *n,
                    f.len,
                ))
            })
            .collect();
        v.sort_unstable();
        v.into_iter().map(|(_, n, len)| (n, len)).collect()
    }

    /// Every message record of data file `n` (queued or not): its sequence number and place.
    /// A damaged record ends with an error naming file and offset.
    pub fn records(&self, n: u32) -> Result<Vec<(u64, Loc)>> {
        let (f, path, len) = {
            let g = self.lock();
            let f = g.data.files.get(&n).ok_or_else(|| {
                StorageError::Broken(format!("data file {n} of {}", self.dir.display()))
            })?;
            (f.file.clone(), f.path.clone(), f.len)
        };
        let dse = self.cfg.dse.as_deref();
        let mut out = Vec::new();
        let mut at = HEADER;
        while at < len {
            match file::read_at(&f, &path, dse, Kind::Data, n, at, len) {
                Ok(r) => {
                    let rec_len = u32::try_from(r.end - at)
                        .map_err(|_| file::corrupt(&path, at, "a record longer than 4 GiB"))?;
                    out.push((
                        r.seq,
                        Loc {
                            file: n,
                            offset: at as u32,
                            len: rec_len,
                            spill: false,
                        },
                    ));
                    at = r.end;
                }
                Err(ReadErr::Torn(why)) => return Err(file::corrupt(&path, at, why)),
                Err(ReadErr::Bad(e)) => return Err(e),
            }
        }
        Ok(out)
    }

    /// Copies the records at `from` to the data file being written (sealed again under the
    /// current data key) and syncs them; returns their new places, in order. Nothing names
    /// the copies until [`QueueStore::relocated`].
    pub fn copy(&self, from: &[(u64, Loc)]) -> Result<Vec<Loc>> {
        let mut out = Vec::with_capacity(from.len());
        for (seq, loc) in from {
            let bytes = self.read(*seq, *loc)?;
            out.push(self.append(*seq, true, &bytes)?);
        }
        self.sync_data()?;
        Ok(out)
    }

    /// A copy that no message needs (it was got while being copied): counted out of its file.
    pub fn forget(&self, loc: Loc) {
        let mut g = self.lock();
        if let Some(f) = g.data.files.get_mut(&loc.file) {
            f.live.sub(loc.len);
            f.committed.1 = f.live;
        }
    }

    /// Records that the messages of `moves` are now at their new places (`Placed::loc`),
    /// no longer at the old ones: one index batch, tagged `tag` (the newest completed
    /// checkpoint's: the moves hold as of it), synced; the old places are counted out, so
    /// [`QueueStore::release`] removes a file nothing is left in.
    pub fn relocated(&self, tag: u64, moves: &[(Placed, Loc)]) -> Result<()> {
        if moves.is_empty() {
            return Ok(());
        }
        let ops: Vec<IndexOp> = moves.iter().map(|(p, _)| IndexOp::Add(*p)).collect();
        let mut g = self.lock();
        for chunk in ops.chunks(super::CHUNK) {
            self.write_index(&mut g, tag, index::BATCH, &index::encode(chunk))?;
        }
        for (_, old) in moves {
            if let Some(f) = g.data.files.get_mut(&old.file) {
                f.live.sub(old.len);
                f.committed.1 = f.live;
            }
        }
        Ok(())
    }

    /// Syncs the data files written since the last sync and makes them the rollback point.
    fn sync_data(&self) -> Result<()> {
        let mut g = self.lock();
        self.sync_dirty(&mut g)?;
        for f in g.data.files.values_mut() {
            f.committed = (f.len, f.live);
        }
        Ok(())
    }
}

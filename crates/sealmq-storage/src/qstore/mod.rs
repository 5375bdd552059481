//! Queue files (SPEC §4, issue 13): where a queue's messages wait when they are not in memory.
//!
//! A queue's directory holds data files of persistent messages (`D<n>.qd`, one record per
//! message, appended), an index journal (`I<n>.qi`, one record per checkpoint: the messages
//! stored, gone, or given a new backout count since the last one) and spill files of
//! non-persistent messages (`N<n>.qn`, removed at each start). Memory keeps, per message, the
//! index entry ([`Placed`]); a get of a message no longer cached reads its record.
//!
//! Durability comes from the recovery log, as before: the queue manager writes messages here
//! at a checkpoint ([`QueueStore::append`], then [`QueueStore::commit`], which syncs the data
//! files before it writes and syncs the index batch naming them). What a crash leaves past the
//! last checkpoint is replayed from the log; replaying a message already here is harmless
//! (the index is keyed by the message's sequence number).
//!
//! A data file whose messages are all gone is deleted once the index batch saying so is
//! durable; the index is rewritten from its live entries (`BASE`) when most of it is history.
//!
//! Locks: `Inner` (the file table) is held for bookkeeping only; reads take an `Arc<File>`
//! and read without it, so a get that reads from disk does not hold up puts or other gets.

mod compact;
mod file;
mod index;
mod open;

pub use index::{IndexOp, Loc, Placed, fingerprint};

use crate::dse::Dse;
use crate::error::{Result, StorageError};
use file::{HEADER, Kind, ReadErr};
use index::LiveSet;
use sealmq_types::sync::lock;
use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// How a queue store writes.
#[derive(Clone, Debug)]
pub struct StoreConfig {
    /// A data or spill file is closed and the next begun past this size.
    pub file_bytes: u64,
    pub dse: Option<Arc<Dse>>,
    /// Sync at commit (only tests and benchmarks of the non-durable path turn it off).
    pub sync: bool,
}

impl StoreConfig {
    pub fn new(dse: Option<Arc<Dse>>) -> StoreConfig {
        StoreConfig {
            file_bytes: 64 << 20,
            dse,
            sync: true,
        }
    }
}

/// Record kinds in data and spill files.
const MSG: u8 = 1;

/// Index operations per index record (a record stays far below the framing's size limit).
const CHUNK: usize = 1 << 20;

/// Messages in a file still queued: how many, and the bytes of their records.
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
struct Live {
    n: u64,
    bytes: u64,
}

impl Live {
    fn add(&mut self, len: u32) {
        self.n += 1;
        self.bytes += u64::from(len);
    }

    fn sub(&mut self, len: u32) {
        self.n = self.n.saturating_sub(1);
        self.bytes = self.bytes.saturating_sub(u64::from(len));
    }
}

struct DataFile {
    file: Arc<File>,
    path: PathBuf,
    len: u64,
    /// Messages in it still queued.
    live: Live,
    /// Written since the last sync.
    dirty: bool,
    /// Length and live messages as of the last commit (what a rollback returns to).
    committed: (u64, Live),
    /// The oldest data key sealing a record in it (0: none or clear).
    min_key: u32,
}

#[derive(Default)]
struct Files {
    files: BTreeMap<u32, DataFile>,
    active: Option<u32>,
    next: u32,
}

struct Inner {
    data: Files,
    spill: Files,
    index: DataFile,
    index_no: u32,
    /// Bytes of index records since the last BASE: the rewrite trigger.
    index_bytes: u64,
    /// Index files an index rewrite replaced: removed by [`QueueStore::release`] once the
    /// checkpoint that wrote the rewrite is durable.
    void_indexes: Vec<PathBuf>,
}

/// How far a queue's index journal reached when a checkpoint completed (its checkpoint file
/// records it): damage before that point is corruption to report, never a torn tail to cut.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IndexEnd {
    pub file: u32,
    pub len: u64,
}

/// One queue's files.
pub struct QueueStore {
    dir: PathBuf,
    cfg: StoreConfig,
    inner: Mutex<Inner>,
}

fn io(what: &'static str, p: &Path, e: std::io::Error) -> StorageError {
    StorageError::io(what, p, e)
}

fn create_file(dir: &Path, kind: Kind, n: u32) -> Result<DataFile> {
    let path = dir.join(kind.name(n));
    let f = OpenOptions::new()
        .create_new(true)
        .read(true)
        .write(true)
        .mode(0o600)
        .open(&path)
        .map_err(|e| io("cannot create", &path, e))?;
    f.write_all_at(&file::header(kind, n), 0)
        .map_err(|e| io("cannot write", &path, e))?;
    Ok(DataFile {
        file: Arc::new(f),
        path,
        len: HEADER,
        live: Live::default(),
        dirty: true,
        committed: (HEADER, Live::default()),
        min_key: 0,
    })
}

fn open_file(path: &Path, kind: Kind, n: u32) -> Result<DataFile> {
    let f = OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .map_err(|e| io("cannot open", path, e))?;
    let len = f.metadata().map_err(|e| io("cannot stat", path, e))?.len();
    file::check_header(&f, path, kind, n)?;
    Ok(DataFile {
        file: Arc::new(f),
        path: path.to_path_buf(),
        len,
        live: Live::default(),
        dirty: false,
        committed: (len, Live::default()),
        min_key: 0,
    })
}

/// Removes the files that hold no live message, except the one being written. For data files
/// the caller has made every `Del` counted so far durable.
/// The size from which an empty spill file still being written is removed.
const RETIRE_EMPTY_SPILL: u64 = 1 << 20;

fn remove_empty(files: &mut Files) -> Result<()> {
    let empty: Vec<u32> = files
        .files
        .iter()
        .filter(|(n, f)| f.live.n == 0 && files.active != Some(**n))
        .map(|(n, _)| *n)
        .collect();
    for n in empty {
        if let Some(f) = files.files.remove(&n) {
            std::fs::remove_file(&f.path).map_err(|e| io("cannot remove", &f.path, e))?;
        }
    }
    Ok(())
}

fn cut(f: &DataFile, p: &Path, at: u64) -> Result<()> {
    f.file.set_len(at).map_err(|e| io("cannot cut", p, e))?;
    f.file.sync_all().map_err(|e| io("cannot sync", p, e))
}

fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| io("cannot sync", dir, e))
}

impl QueueStore {
    /// Opens (or creates) the store in `dir` as of checkpoint `upto`: reads the index, drops
    /// what later checkpoints that never completed wrote (their index batches, and an index
    /// rewrite), cuts a torn tail of the newest index file, removes spill files and data
    /// files no entry names. Returns the stored messages in sequence order.
    pub fn open(dir: &Path, cfg: StoreConfig, upto: u64) -> Result<(QueueStore, Vec<Placed>)> {
        QueueStore::open_as_of(dir, cfg, upto, None)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        lock(&self.inner)
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Appends a message's record (a persistent one to a data file, for the next
    /// [`QueueStore::commit`]; a non-persistent one to a spill file). Not synced.
    pub fn append(&self, seq: u64, persistent: bool, bytes: &[u8]) -> Result<Loc> {
        let kind = if persistent { Kind::Data } else { Kind::Spill };
        let mut g = self.lock();
        let files = if persistent {
            &mut g.data
        } else {
            &mut g.spill
        };
        let n = match files.active {
            Some(n)
                if files
                    .files
                    .get(&n)
                    .is_some_and(|f| f.len < self.cfg.file_bytes) =>
            {
                n
            }
            _ => {
                let n = files.next.max(1);
                files.next = n + 1;
                files.files.insert(n, create_file(&self.dir, kind, n)?);
                files.active = Some(n);
                // A spill file closed now may hold nothing any more (a data file waits for
                // `release`: the removals that emptied it must be in a completed checkpoint).
                if !persistent {
                    remove_empty(files)?;
                }
                n
            }
        };
        let f = files
            .files
            .get_mut(&n)
            .ok_or_else(|| StorageError::Broken("queue file table".into()))?;
        let rec = file::frame(self.cfg.dse.as_deref(), kind, n, f.len, seq, MSG, bytes)?;
        if f.len + rec.len() as u64 > u64::from(u32::MAX) {
            return Err(StorageError::Decode(format!(
                "a message of {} bytes does not fit a queue file",
                bytes.len()
            )));
        }
        f.file
            .write_all_at(&rec, f.len)
            .map_err(|e| StorageError::Write {
                path: f.path.clone(),
                source: e,
            })?;
        let loc = Loc {
            file: n,
            offset: f.len as u32,
            len: rec.len() as u32,
            spill: !persistent,
        };
        f.len += rec.len() as u64;
        f.live.add(loc.len);
        f.dirty = true;
        if let Some(d) = &self.cfg.dse {
            let k = d.current();
            f.min_key = if f.min_key == 0 { k } else { f.min_key.min(k) };
        }
        Ok(loc)
    }

    /// Reads the message record at `loc`; an error names the file and offset (a damaged or
    /// torn record is never returned as a message).
    pub fn read(&self, seq: u64, loc: Loc) -> Result<Vec<u8>> {
        let kind = if loc.spill { Kind::Spill } else { Kind::Data };
        let (f, path, len) = {
            let g = self.lock();
            let files = if loc.spill { &g.spill } else { &g.data };
            let f = files.files.get(&loc.file).ok_or_else(|| {
                file::corrupt(
                    &self.dir.join(kind.name(loc.file)),
                    u64::from(loc.offset),
                    "the queue file holding this message is missing",
                )
            })?;
            (f.file.clone(), f.path.clone(), f.len)
        };
        let off = u64::from(loc.offset);
        let end = (off + u64::from(loc.len)).min(len);
        match file::read_at(&f, &path, self.cfg.dse.as_deref(), kind, loc.file, off, end) {
            Ok(r) if r.seq == seq && r.kind == MSG => Ok(r.payload),
            Ok(r) => Err(file::corrupt(
                &path,
                off,
                format!("holds message {} where message {seq} should be", r.seq),
            )),
            Err(ReadErr::Torn(why)) => Err(file::corrupt(&path, off, why)),
            Err(ReadErr::Bad(e)) => Err(e),
        }
    }

    /// The bytes at `loc` as they are in the file, unchecked (a damaged record is copied aside
    /// with them), with the file's path; cut at the file's end.
    pub fn raw(&self, loc: Loc) -> Result<(PathBuf, Vec<u8>)> {
        let (f, path, len) = {
            let g = self.lock();
            let files = if loc.spill { &g.spill } else { &g.data };
            match files.files.get(&loc.file) {
                Some(f) => (f.file.clone(), f.path.clone(), f.len),
                None => {
                    let kind = if loc.spill { Kind::Spill } else { Kind::Data };
                    return Ok((self.dir.join(kind.name(loc.file)), Vec::new()));
                }
            }
        };
        let off = u64::from(loc.offset).min(len);
        let end = (off + u64::from(loc.len)).min(len);
        let mut buf = vec![0u8; (end - off) as usize];
        std::os::unix::fs::FileExt::read_exact_at(&*f, &mut buf, off)
            .map_err(|e| io("cannot read", &path, e))?;
        Ok((path, buf))
    }

    /// Makes `ops` durable as part of checkpoint `tag`: syncs the data files written since
    /// the last commit, then writes and syncs one index batch. A `Del` counts its message out
    /// of its file; emptied files go at [`QueueStore::release`], once the checkpoint is durable.
    pub fn commit(&self, tag: u64, ops: &[IndexOp]) -> Result<()> {
        let mut g = self.lock();
        self.sync_dirty(&mut g)?;
        for chunk in ops.chunks(CHUNK) {
            let payload = index::encode(chunk);
            self.write_index(&mut g, tag, index::BATCH, &payload)?;
        }
        for op in ops {
            if let IndexOp::Del { loc, .. } = op
                && let Some(f) = g.data.files.get_mut(&loc.file)
            {
                f.live.sub(loc.len);
            }
        }
        for f in g.data.files.values_mut() {
            f.committed = (f.len, f.live);
        }
        Ok(())
    }

    /// A checkpoint failed before its commit: the message records appended since the last
    /// commit are cut off again (a full disk gets its space back), files begun since removed.
    pub fn rollback(&self) -> Result<()> {
        let mut g = self.lock();
        let mut gone = Vec::new();
        for (n, f) in g.data.files.iter_mut() {
            if f.len == f.committed.0 {
                continue;
            }
            if f.committed.0 <= HEADER && f.committed.1.n == 0 {
                gone.push(*n);
                continue;
            }
            f.file
                .set_len(f.committed.0)
                .map_err(|e| io("cannot cut", &f.path, e))?;
            (f.len, f.live) = f.committed;
        }
        for n in gone {
            if let Some(f) = g.data.files.remove(&n) {
                std::fs::remove_file(&f.path).map_err(|e| io("cannot remove", &f.path, e))?;
            }
            if g.data.active == Some(n) {
                g.data.active = None;
            }
        }
        Ok(())
    }

    /// After the checkpoint that committed here is durable: removes the data files with no
    /// message left (not the one being written) and the index files a rewrite replaced.
    pub fn release(&self) -> Result<()> {
        let mut g = self.lock();
        // The file being written goes too when empty (the next message begins another).
        if let Some(n) = g.data.active
            && g.data.files.get(&n).is_some_and(|f| f.live.n == 0)
        {
            g.data.active = None;
        }
        remove_empty(&mut g.data)?;
        for p in std::mem::take(&mut g.void_indexes) {
            std::fs::remove_file(&p).map_err(|e| io("cannot remove", &p, e))?;
        }
        Ok(())
    }

    /// Syncs the data files written since the last sync.
    fn sync_dirty(&self, g: &mut Inner) -> Result<()> {
        if self.cfg.sync {
            for f in g.data.files.values_mut().filter(|f| f.dirty) {
                f.file.sync_data().map_err(|e| StorageError::Write {
                    path: f.path.clone(),
                    source: e,
                })?;
                f.dirty = false;
            }
        }
        Ok(())
    }

    fn write_index(&self, g: &mut Inner, tag: u64, kind: u8, payload: &[u8]) -> Result<()> {
        let n = g.index_no;
        let rec = file::frame(
            self.cfg.dse.as_deref(),
            Kind::Index,
            n,
            g.index.len,
            tag,
            kind,
            payload,
        )?;
        let f = &mut g.index;
        let write = f.file.write_all_at(&rec, f.len).and_then(|_| {
            if self.cfg.sync {
                f.file.sync_data()
            } else {
                Ok(())
            }
        });
        if let Err(e) = write {
            // Nothing of this batch counts: cut it back so the next one follows a whole record.
            let _ = f.file.set_len(f.len);
            return Err(StorageError::Write {
                path: f.path.clone(),
                source: e,
            });
        }
        f.len += rec.len() as u64;
        if let Some(d) = &self.cfg.dse
            && f.min_key == 0
        {
            f.min_key = d.current();
        }
        g.index_bytes += rec.len() as u64;
        Ok(())
    }

    /// Counts a spilled non-persistent message out (it was got or expired); an emptied spill
    /// file that is not being written goes at once (nothing durable names it).
    pub fn release_spill(&self, loc: Loc) -> Result<()> {
        let mut g = self.lock();
        if let Some(f) = g.spill.files.get_mut(&loc.file) {
            f.live.sub(loc.len);
        }
        // The file being written goes too once it holds nothing and has grown past
        // RETIRE_EMPTY_SPILL: a drained queue gives its room back (CURFSIZE, MAXFSIZE), while
        // a queue that puts and gets one message at a time does not make a file for each.
        if let Some(a) = g.spill.active
            && g.spill
                .files
                .get(&a)
                .is_some_and(|f| f.live.n == 0 && f.len >= RETIRE_EMPTY_SPILL)
        {
            g.spill.active = None;
        }
        remove_empty(&mut g.spill)
    }

    /// Forgets every spilled message (the queue was cleared) and removes their files.
    pub fn drop_spill(&self) -> Result<()> {
        let mut g = self.lock();
        for f in g.spill.files.values_mut() {
            f.live = Live::default();
        }
        g.spill.active = None;
        remove_empty(&mut g.spill)
    }

    /// Rewrites the index for checkpoint `tag` as a BASE record (and batches after it) of
    /// `live`, every stored message as of that checkpoint, in a new file. The older files are
    /// void from then on, and removed at [`QueueStore::release`]; until the checkpoint is
    /// durable, a start ignores the new file.
    pub fn rewrite_index(&self, tag: u64, live: &[Placed]) -> Result<()> {
        let mut g = self.lock();
        let n = g.index_no + 1;
        let old: Vec<PathBuf> = file::list(&self.dir, Kind::Index)?
            .into_iter()
            .map(|(_, p)| p)
            .collect();
        let new = create_file(&self.dir, Kind::Index, n)?;
        let prev = std::mem::replace(&mut g.index, new);
        let prev_no = std::mem::replace(&mut g.index_no, n);
        let prev_bytes = std::mem::replace(&mut g.index_bytes, 0);
        let mut kind = index::BASE;
        let mut r = Ok(());
        let mut chunks = live.chunks(CHUNK).peekable();
        if chunks.peek().is_none() {
            r = self.write_index(&mut g, tag, kind, &index::encode(&[]));
        }
        for chunk in chunks {
            let ops: Vec<IndexOp> = chunk.iter().copied().map(IndexOp::Add).collect();
            r = self.write_index(&mut g, tag, kind, &index::encode(&ops));
            kind = index::BATCH;
            if r.is_err() {
                break;
            }
        }
        if let Err(e) = r.and_then(|_| sync_dir(&self.dir)) {
            let failed = std::mem::replace(&mut g.index, prev);
            g.index_no = prev_no;
            g.index_bytes = prev_bytes;
            let _ = std::fs::remove_file(&failed.path);
            return Err(e);
        }
        g.void_indexes.extend(old);
        // The base is the whole stored set: each data file's count of live messages follows.
        for f in g.data.files.values_mut() {
            f.live = Live::default();
        }
        for p in live {
            if let Some(f) = g.data.files.get_mut(&p.loc.file) {
                f.live.add(p.loc.len);
            }
        }
        for f in g.data.files.values_mut() {
            f.committed = (f.len, f.live);
        }
        Ok(())
    }

    /// Where the index journal ends now (a checkpoint records it once its batches are durable).
    pub fn index_end(&self) -> IndexEnd {
        let g = self.lock();
        IndexEnd {
            file: g.index_no,
            len: g.index.len,
        }
    }

    /// Bytes of index history since its last rewrite.
    pub fn index_bytes(&self) -> u64 {
        self.lock().index_bytes
    }

    /// Bytes of this queue's files (MQ's CURFSIZE).
    pub fn bytes(&self) -> u64 {
        let g = self.lock();
        g.data.files.values().map(|f| f.len).sum::<u64>()
            + g.spill.files.values().map(|f| f.len).sum::<u64>()
            + g.index.len
    }

    /// The oldest data key any record here is sealed with (encryption at rest keeps it).
    pub fn min_key_id(&self) -> Option<u32> {
        let g = self.lock();
        g.data
            .files
            .values()
            .chain(g.spill.files.values())
            .chain(std::iter::once(&g.index))
            .map(|f| f.min_key)
            .filter(|k| *k != 0)
            .min()
    }

    /// Removes the store (the queue was deleted).
    pub fn destroy(self) -> Result<()> {
        std::fs::remove_dir_all(&self.dir).map_err(|e| io("cannot remove", &self.dir, e))
    }
}

/// The directory of a queue's store under `root`: the queue name in hexadecimal, so that any
/// MQ name (with `/`, `%`, ...) is a file name.
pub fn queue_dir(root: &Path, queue: &str) -> PathBuf {
    let hex: String = queue.bytes().map(|b| format!("{b:02x}")).collect();
    root.join(hex)
}

#[cfg(test)]
mod tests;

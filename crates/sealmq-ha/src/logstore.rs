//! The Raft log of an instance, on its own disk (`<QM dir>/ha/raft.log`, docs/ha.md).
//!
//! One append-only file: a 16-byte header, then one frame per entry (length u32, CRC32C u32 of
//! the body, body = the entry in postcard), then zeros: space laid out ahead of the last entry
//! (a MiB at a time), so that an append's sync writes data and not the file's new size as
//! well (a second, serial I/O on ext4); a frame of length 0 is that space, the end of the log. Appends are synced (by one thread, in order, one
//! sync for every append waiting) before openraft is told they are durable; a torn tail (a frame cut short or failing its CRC at the end) is cut at open;
//! damage before the end is an error. The vote is its own file, replaced atomically. An index
//! of every entry (its place in the file and what recovery needs of it) is kept in memory;
//! entries themselves are read from the file when asked for.

use crate::types::{Change, Entry, Ha, LogId, NodeId, StorageError, sto_err};
use openraft::storage::{LogFlushed, LogState, RaftLogReader, RaftLogStorage};
use openraft::{EntryPayload, OptionalSend, Vote};
use sealmq_storage::dse::Dse;
use sealmq_types::sync::lock;
use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::ops::RangeBounds;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// Version 2: zeros may follow the last entry (space laid out ahead). A version 1 file (no
/// such zeros) is migrated at open by rewriting its magic.
const MAGIC: &[u8; 8] = b"SMQRAFT2";
const MAGIC_V1: &[u8; 8] = b"SMQRAFT1";
const HEADER: u64 = 16;
/// Largest entry accepted in the file (a batch holds records of up to 256 MiB).
const MAX_ENTRY: usize = 300 << 20;

/// What the index knows of one entry.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Meta {
    offset: u64,
    pub(crate) len: u32,
    pub(crate) log_id: LogId,
    /// A batch's last LSN.
    pub(crate) last_lsn: Option<u64>,
    pub(crate) membership: bool,
}

struct Inner {
    dir: PathBuf,
    dse: Option<Arc<Dse>>,
    file: File,
    end: u64,
    /// The file holds zeros (or entries) up to here.
    prepared: u64,
    index: BTreeMap<u64, Meta>,
    purged: Option<LogId>,
    vote: Option<Vote<NodeId>>,
}

/// The Raft log; clones share it (openraft reads through one while it appends through another).
#[derive(Clone)]
pub(crate) struct LogStore {
    inner: Arc<Mutex<Inner>>,
    /// Appends written and waiting for their sync (see [`flusher`]).
    flush: std::sync::mpsc::Sender<LogFlushed<Ha>>,
    /// How many of those the sync thread has not answered yet.
    queued: Arc<AtomicUsize>,
    /// This instance's node id: entries it did not make as leader are a replica's appends.
    me: u64,
}

/// Syncs the Raft log for the appends written before, in order, one sync for all those
/// waiting (group commit), then tells openraft they are durable. An append returns once
/// written: on the active instance the batch goes to the replicas while its own sync runs,
/// so a batch waits for the slower of the two, not for both one after the other. The file is
/// taken anew for each sync: a purge may have replaced it (by a copy synced whole).
fn flusher(
    inner: Arc<Mutex<Inner>>,
    queued: Arc<AtomicUsize>,
) -> std::sync::mpsc::Sender<LogFlushed<Ha>> {
    let (tx, rx) = std::sync::mpsc::channel::<LogFlushed<Ha>>();
    let spawned = std::thread::Builder::new()
        .name("sealmq-ha-sync".into())
        .spawn(move || {
            while let Ok(first) = rx.recv() {
                let mut waiting = vec![first];
                waiting.extend(rx.try_iter());
                let r = lock(&inner).file.try_clone().and_then(|f| f.sync_data());
                for cb in waiting {
                    cb.log_io_completed(match &r {
                        Ok(()) => Ok(()),
                        Err(e) => Err(std::io::Error::new(e.kind(), e.to_string())),
                    });
                    queued.fetch_sub(1, Ordering::AcqRel);
                }
            }
        });
    if let Err(e) = spawned {
        tracing::error!("cannot start the Raft log's sync thread: {e}");
    }
    tx
}

fn io_err(what: &str, p: &Path, e: std::io::Error) -> StorageError {
    sto_err(&format!("{what} {}", p.display()), e)
}

/// Associated data of a sealed entry: its place in the Raft log.
fn entry_aad(index: u64, key_id: u32) -> [u8; 17] {
    let mut a = [0u8; 17];
    a[..5].copy_from_slice(b"RAFT:");
    a[5..13].copy_from_slice(&index.to_le_bytes());
    a[13..].copy_from_slice(&key_id.to_le_bytes());
    a
}

/// An entry's frame: length, CRC32C of the body, body = data key id (0: not sealed), the
/// entry's index, and the entry in postcard, sealed under that key (the index and key id as
/// associated data) when the instance encrypts at rest.
fn frame(e: &Entry, dse: Option<&Dse>) -> Result<Vec<u8>, StorageError> {
    let plain = postcard::to_stdvec(e).map_err(|e| sto_err("cannot encode a log entry", e))?;
    let (key, data) = match dse {
        None => (0, plain),
        Some(d) => {
            let key = d.current();
            let sealed = d
                .seal(key, &entry_aad(e.log_id.index, key), &plain)
                .map_err(|e| sto_err("cannot seal a log entry", e))?;
            (key, sealed)
        }
    };
    let mut out = Vec::with_capacity(data.len() + 20);
    out.extend_from_slice(&((data.len() + 12) as u32).to_le_bytes());
    out.extend_from_slice(&[0u8; 4]);
    out.extend_from_slice(&key.to_le_bytes());
    out.extend_from_slice(&e.log_id.index.to_le_bytes());
    out.extend_from_slice(&data);
    let crc = crc32c::crc32c(&out[8..]);
    out[4..8].copy_from_slice(&crc.to_le_bytes());
    Ok(out)
}

/// The entry in a frame's body (its CRC checked), opened when sealed.
fn unframe(body: &[u8], dse: Option<&Dse>) -> Result<Entry, String> {
    if body.len() < 12 {
        return Err("an entry too short".into());
    }
    let key = u32::from_le_bytes([body[0], body[1], body[2], body[3]]);
    let mut idx = [0u8; 8];
    idx.copy_from_slice(&body[4..12]);
    let index = u64::from_le_bytes(idx);
    let plain;
    let bytes = if key == 0 {
        &body[12..]
    } else {
        let Some(d) = dse else {
            return Err(format!(
                "an entry is sealed under data key {key}: start the instance with its master key"
            ));
        };
        plain = d
            .open_sealed(key, &entry_aad(index, key), &body[12..])
            .ok_or("a sealed entry fails authentication (altered, moved, or another key)")?;
        &plain[..]
    };
    let e: Entry = postcard::from_bytes(bytes).map_err(|e| e.to_string())?;
    if e.log_id.index != index {
        return Err(format!(
            "entry {} stands where entry {index} should",
            e.log_id.index
        ));
    }
    Ok(e)
}

fn meta_of(e: &Entry, offset: u64, len: u32) -> Meta {
    Meta {
        offset,
        len,
        log_id: e.log_id,
        last_lsn: match &e.payload {
            EntryPayload::Normal(Change::Log(b)) => Some(b.last_lsn),
            _ => None,
        },
        membership: matches!(e.payload, EntryPayload::Membership(_)),
    }
}

/// Writes `bytes` to `name` in `dir` through a temporary file, synced, renamed, dir synced.
pub(crate) fn replace_file(dir: &Path, name: &str, bytes: &[u8]) -> Result<(), StorageError> {
    let tmp = dir.join(format!("{name}.tmp"));
    let path = dir.join(name);
    let mut f = OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .mode(0o600)
        .open(&tmp)
        .map_err(|e| io_err("cannot write", &tmp, e))?;
    f.write_all(bytes)
        .and_then(|()| f.sync_all())
        .map_err(|e| io_err("cannot write", &tmp, e))?;
    std::fs::rename(&tmp, &path).map_err(|e| io_err("cannot replace", &path, e))?;
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| io_err("cannot sync", dir, e))
}

/// A small value with its CRC, as the vote and purge files hold it.
pub(crate) fn read_small<T: serde::de::DeserializeOwned>(
    path: &Path,
) -> Result<Option<T>, StorageError> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_err("cannot read", path, e)),
    };
    let ok = bytes.len() >= 4
        && u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]])
            == crc32c::crc32c(&bytes[4..]);
    if !ok {
        return Err(sto_err(
            &format!("{} is damaged", path.display()),
            "bad CRC",
        ));
    }
    postcard::from_bytes(&bytes[4..])
        .map(Some)
        .map_err(|e| sto_err(&format!("{} is damaged", path.display()), e))
}

pub(crate) fn small_bytes<T: serde::Serialize>(v: &T) -> Result<Vec<u8>, StorageError> {
    let body = postcard::to_stdvec(v).map_err(|e| sto_err("cannot encode", e))?;
    let mut out = crc32c::crc32c(&body).to_le_bytes().to_vec();
    out.extend_from_slice(&body);
    Ok(out)
}

/// Purged bytes at the head of the Raft log past which (and past what it still holds) the
/// file is rewritten without them.
const REWRITE_MIN: u64 = 64 << 20;

/// At a clean close the zeros laid out ahead are cut off (best effort: recovery reads them as
/// the end anyway).
impl Drop for Inner {
    fn drop(&mut self) {
        if self.prepared > self.end {
            let _ = self.file.set_len(self.end);
        }
    }
}

/// Bytes of zeros laid out ahead of the last entry at a time.
const LAY_OUT: u64 = 1 << 20;

impl Inner {
    /// Zeros ahead of the end when less than half of [`LAY_OUT`] is left, before the sync
    /// that carries them (once per chunk). A failure (a full disk) only means appends grow
    /// the file again.
    fn lay_out(&mut self) {
        let from = self.prepared.max(self.end);
        if from - self.end >= LAY_OUT / 2 {
            return;
        }
        let zeros = vec![0u8; LAY_OUT as usize];
        match self.file.write_all_at(&zeros, from) {
            Ok(()) => self.prepared = from + LAY_OUT,
            Err(e) => {
                tracing::debug!("cannot lay out Raft log space: {e}");
                self.prepared = self.end;
                let _ = self.file.set_len(self.end);
            }
        }
    }

    /// Replaces the file by one holding the entries from offset `start` on (a copy written,
    /// synced and renamed over it): purged entries give their room back.
    fn rewrite(&mut self, start: u64) -> Result<(), StorageError> {
        let path = self.dir.join("raft.log");
        let tmp = self.dir.join("raft.log.tmp");
        let mut head = [0u8; HEADER as usize];
        head[..8].copy_from_slice(MAGIC);
        let copy = || -> std::io::Result<File> {
            let mut out = OpenOptions::new()
                .create(true)
                .truncate(true)
                .read(true)
                .write(true)
                .mode(0o600)
                .open(&tmp)?;
            out.write_all(&head)?;
            let mut from = self.file.try_clone()?;
            std::io::Seek::seek(&mut from, std::io::SeekFrom::Start(start))?;
            std::io::copy(&mut (&mut from).take(self.end - start), &mut out)?;
            out.sync_all()?;
            Ok(out)
        };
        let out = copy().map_err(|e| io_err("cannot rewrite", &tmp, e))?;
        std::fs::rename(&tmp, &path).map_err(|e| io_err("cannot replace", &path, e))?;
        File::open(&self.dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| io_err("cannot sync", &self.dir, e))?;
        let shift = start - HEADER;
        for m in self.index.values_mut() {
            m.offset -= shift;
        }
        self.end -= shift;
        self.prepared = self.end;
        self.file = out;
        tracing::info!("high availability: the Raft log gave back {shift} bytes of purged entries");
        Ok(())
    }
}

impl LogStore {
    /// Opens (or creates) the Raft log in `dir`, cutting a torn tail.
    pub(crate) fn open(
        dir: &Path,
        dse: Option<Arc<Dse>>,
        me: u64,
    ) -> Result<LogStore, StorageError> {
        std::fs::create_dir_all(dir).map_err(|e| io_err("cannot create", dir, e))?;
        let path = dir.join("raft.log");
        let mut file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .mode(0o600)
            .open(&path)
            .map_err(|e| io_err("cannot open", &path, e))?;
        let mut data = Vec::new();
        file.read_to_end(&mut data)
            .map_err(|e| io_err("cannot read", &path, e))?;
        if data.len() < HEADER as usize {
            let mut h = [0u8; HEADER as usize];
            h[..8].copy_from_slice(MAGIC);
            file.set_len(0)
                .and_then(|()| file.write_all_at(&h, 0))
                .and_then(|()| file.sync_all())
                .map_err(|e| io_err("cannot write", &path, e))?;
            data = h.to_vec();
        } else if &data[..8] == MAGIC_V1 {
            file.write_all_at(MAGIC, 0)
                .and_then(|()| file.sync_data())
                .map_err(|e| io_err("cannot migrate", &path, e))?;
            data[..8].copy_from_slice(MAGIC);
        } else if &data[..8] != MAGIC {
            return Err(sto_err(
                &format!("{} is not a sealmq Raft log", path.display()),
                "bad header",
            ));
        }
        let purged_read: Option<LogId> = read_small(&dir.join("purged"))?;
        let mut index = BTreeMap::new();
        let mut off = HEADER as usize;
        while off < data.len() {
            let whole = data.len() - off >= 8 && {
                let len = u32::from_le_bytes(data[off..off + 4].try_into().unwrap_or([0; 4]));
                let crc = u32::from_le_bytes(data[off + 4..off + 8].try_into().unwrap_or([0; 4]));
                let end = off + 8 + len as usize;
                // Length 0: the zeros laid out ahead (a real frame holds at least 12 bytes).
                len != 0
                    && (len as usize) <= MAX_ENTRY
                    && end <= data.len()
                    && crc32c::crc32c(&data[off + 8..end]) == crc
            };
            if !whole {
                break;
            }
            let len = u32::from_le_bytes(data[off..off + 4].try_into().unwrap_or([0; 4]));
            let body = &data[off + 8..off + 8 + len as usize];
            let e = unframe(body, dse.as_deref())
                .map_err(|e| sto_err(&format!("{} is damaged", path.display()), e))?;
            index.insert(e.log_id.index, meta_of(&e, off as u64, len));
            off += 8 + len as usize;
        }
        if off < data.len() {
            if data[off..].iter().any(|&b| b != 0) {
                tracing::warn!(
                    "{}: a torn entry at offset {off} is cut (it was never acknowledged)",
                    path.display()
                );
            }
            file.set_len(off as u64)
                .and_then(|()| file.sync_all())
                .map_err(|e| io_err("cannot cut the torn tail of", &path, e))?;
        }
        let purged = purged_read;
        if let Some(p) = purged {
            index.retain(|i, _| *i > p.index);
        }
        let inner = Arc::new(Mutex::new(Inner {
            dir: dir.to_path_buf(),
            dse,
            file,
            end: off as u64,
            prepared: off as u64,
            index,
            purged,
            vote: read_small(&dir.join("vote"))?,
        }));
        let queued = Arc::new(AtomicUsize::new(0));
        Ok(LogStore {
            flush: flusher(inner.clone(), queued.clone()),
            queued,
            me,
            inner,
        })
    }

    /// The index of every entry held (recovery of the state machine reads it).
    pub(crate) fn metas(&self) -> Vec<Meta> {
        lock(&self.inner).index.values().copied().collect()
    }

    /// The bytes of the entries after `index` (an instance's backlog): only those entries are
    /// looked at, so an in-sync instance costs nothing however long the log is.
    pub(crate) fn bytes_after(&self, index: u64) -> u64 {
        lock(&self.inner)
            .index
            .range(index.saturating_add(1)..)
            .map(|(_, m)| u64::from(m.len) + 8)
            .sum()
    }

    pub(crate) fn last_index(&self) -> Option<u64> {
        lock(&self.inner).index.keys().next_back().copied()
    }

    fn read(&self, metas: &[Meta]) -> Result<Vec<Entry>, StorageError> {
        let (file, dse) = {
            let i = lock(&self.inner);
            let f = i
                .file
                .try_clone()
                .map_err(|e| sto_err("cannot read the Raft log", e))?;
            (f, i.dse.clone())
        };
        metas
            .iter()
            .map(|m| {
                let mut body = vec![0u8; m.len as usize];
                file.read_exact_at(&mut body, m.offset + 8)
                    .map_err(|e| sto_err("cannot read the Raft log", e))?;
                unframe(&body, dse.as_deref())
                    .map_err(|e| sto_err("a Raft log entry is damaged", e))
            })
            .collect()
    }

    /// The entries in `range` (of indexes) that the log holds.
    pub(crate) fn entries<RB: RangeBounds<u64>>(
        &self,
        range: RB,
    ) -> Result<Vec<Entry>, StorageError> {
        let metas: Vec<Meta> = lock(&self.inner)
            .index
            .range(range)
            .map(|(_, m)| *m)
            .collect();
        self.read(&metas)
    }
}

impl RaftLogReader<Ha> for LogStore {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + std::fmt::Debug + OptionalSend>(
        &mut self,
        range: RB,
    ) -> Result<Vec<Entry>, StorageError> {
        self.entries(range)
    }
}

impl RaftLogStorage<Ha> for LogStore {
    type LogReader = LogStore;

    async fn get_log_state(&mut self) -> Result<LogState<Ha>, StorageError> {
        let i = lock(&self.inner);
        let last = i.index.values().next_back().map(|m| m.log_id).or(i.purged);
        Ok(LogState {
            last_purged_log_id: i.purged,
            last_log_id: last,
        })
    }

    async fn get_log_reader(&mut self) -> Self::LogReader {
        self.clone()
    }

    async fn save_vote(&mut self, vote: &Vote<NodeId>) -> Result<(), StorageError> {
        let mut i = lock(&self.inner);
        replace_file(&i.dir, "vote", &small_bytes(vote)?)?;
        i.vote = Some(*vote);
        Ok(())
    }

    async fn read_vote(&mut self) -> Result<Option<Vote<NodeId>>, StorageError> {
        Ok(lock(&self.inner).vote)
    }

    async fn append<I>(&mut self, entries: I, callback: LogFlushed<Ha>) -> Result<(), StorageError>
    where
        I: IntoIterator<Item = Entry> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let mut i = lock(&self.inner);
        let mut buf = Vec::new();
        let mut metas = Vec::new();
        let mut replica_append = true;
        for e in entries {
            replica_append &= e.log_id.leader_id.node_id != self.me;
            let f = frame(&e, i.dse.as_deref())?;
            metas.push(meta_of(&e, i.end + buf.len() as u64, (f.len() - 8) as u32));
            buf.extend_from_slice(&f);
        }
        if let Err(e) = i.file.write_all_at(&buf, i.end) {
            // Cut back so the file stays a valid prefix; openraft stops on this error.
            let _ = i.file.set_len(i.end);
            i.prepared = i.end;
            callback.log_io_completed(Err(std::io::Error::other(e.to_string())));
            return Err(sto_err("cannot append to the Raft log", e));
        }
        i.end += buf.len() as u64;
        for m in metas {
            i.index.insert(m.log_id.index, m);
        }
        i.lay_out();
        // A replica's append is answered once synced, and nothing else waits on its Raft
        // core meanwhile: it syncs here (one thread hop less each way). The active
        // instance's own append returns once written, so that the entry goes to the replicas
        // while the sync thread syncs it; so does any append while earlier ones await their
        // sync (their answers come first).
        if replica_append && !buf.is_empty() && self.queued.load(Ordering::Acquire) == 0 {
            let file = i.file.try_clone();
            drop(i);
            let r = file.and_then(|f| f.sync_data());
            return match r {
                Ok(()) => {
                    callback.log_io_completed(Ok(()));
                    Ok(())
                }
                Err(e) => {
                    callback.log_io_completed(Err(std::io::Error::new(e.kind(), e.to_string())));
                    Err(sto_err("cannot sync the Raft log", e))
                }
            };
        }
        drop(i);
        // Durable once the sync thread synced it: openraft counts it only then.
        self.queued.fetch_add(1, Ordering::AcqRel);
        if let Err(std::sync::mpsc::SendError(cb)) = self.flush.send(callback) {
            let e = std::io::Error::other("the Raft log's sync thread has ended");
            cb.log_io_completed(Err(std::io::Error::other(e.to_string())));
            return Err(sto_err("cannot sync the Raft log", e));
        }
        Ok(())
    }

    async fn truncate(&mut self, log_id: LogId) -> Result<(), StorageError> {
        let mut i = lock(&self.inner);
        let Some(cut) = i.index.range(log_id.index..).next().map(|(_, m)| m.offset) else {
            return Ok(());
        };
        i.file
            .set_len(cut)
            .and_then(|()| i.file.sync_data())
            .map_err(|e| sto_err("cannot truncate the Raft log", e))?;
        i.end = cut;
        i.prepared = cut;
        let _ = i.index.split_off(&log_id.index);
        Ok(())
    }

    async fn purge(&mut self, log_id: LogId) -> Result<(), StorageError> {
        let mut i = lock(&self.inner);
        replace_file(&i.dir, "purged", &small_bytes(&log_id)?)?;
        i.purged = Some(log_id);
        i.index.retain(|k, _| *k > log_id.index);
        let start = i.index.values().next().map_or(i.end, |m| m.offset);
        let dead = start - HEADER;
        if dead >= REWRITE_MIN && dead >= i.end - start {
            i.rewrite(start)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A version 1 Raft log is migrated at open (its magic rewritten); zeros after the last
    /// entry, the space laid out ahead, are the end of the log and are cut.
    #[test]
    fn a_version_1_raft_log_is_migrated_and_zeros_after_the_last_entry_end_it() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("raft.log");
        let mut bytes = MAGIC_V1.to_vec();
        bytes.resize(HEADER as usize + 4096, 0);
        std::fs::write(&path, &bytes).unwrap();
        let store = LogStore::open(d.path(), None, 1).unwrap();
        assert!(store.metas().is_empty());
        drop(store);
        let after = std::fs::read(&path).unwrap();
        assert_eq!(&after[..8], MAGIC);
        assert_eq!(after.len() as u64, HEADER, "the zeros were cut");
        // Anything else is refused by name.
        std::fs::write(&path, b"NOTRAFT0\0\0\0\0\0\0\0\0").unwrap();
        assert!(LogStore::open(d.path(), None, 1).is_err());
    }
}

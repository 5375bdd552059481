//! The recovery log: checksummed records in segment files, group commit, recovery.
//!
//! Writers call [`Log::append`], which copies the record into the pending batch and returns a
//! [`Ticket`]; [`Log::wait`] blocks until the batch holding it is durable (or failed). One
//! flusher thread takes the whole pending batch, writes it and syncs once: every committer
//! whose record was in the batch is released by that single `fdatasync` (group commit).
//!
//! A failed write (disk full, I/O error) fails exactly the records of its batch: the segment is
//! cut back to where the batch began, and later batches are written normally once the cause is
//! fixed. If even cutting back fails the log is marked broken until restart, when recovery cuts
//! the torn tail.
//!
//! Locks: `Shared::state` (pending batch, LSNs, flags) and `Shared::segments` (the segment list)
//! are never held together. The flusher holds neither while writing or syncing.

use crate::error::{Result, StorageError};
use sealmq_types::sync::lock;
use std::fs::{self, File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::thread::JoinHandle;

mod recover;
mod replica;
mod writer;
pub use replica::{ReplicaStatus, ReplicationStatus, Replicator, ReplicatorRef, split_batch};
use writer::{Writer, create_segment};

/// Log sequence number: strictly increasing across the log's life.
pub type Lsn = u64;

const SEG_MAGIC: [u8; 4] = *b"SMQL";
/// Version 2: zeros may follow a segment's last record (space laid out ahead, writer.rs).
/// Version 1 segments (no such zeros) are read as they are.
const SEG_VERSION: u16 = 2;
/// Segment header size.
pub const SEG_HEADER: u64 = 32;
/// Record header size: len u32, crc32c u32, lsn u64, key id u32, kind u8.
pub const RECORD_HEADER: usize = 21;
/// Largest record payload accepted.
pub const MAX_RECORD: usize = 256 << 20;

/// How the log is laid out and synced.
#[derive(Clone, Debug)]
pub struct LogConfig {
    pub dir: PathBuf,
    /// A segment is closed and a new one started past this size.
    pub segment_bytes: u64,
    /// When set, released segments are copied here (and synced) before they are deleted.
    pub archive_dir: Option<PathBuf>,
    /// Sync each batch (`fdatasync`). Only tests and benchmarks of the non-durable path turn
    /// this off.
    pub sync: bool,
    /// Fault injection for tests: while set, writes fail as on a full disk (after writing half
    /// of the batch, so the cut-back path is exercised).
    #[doc(hidden)]
    pub fail_writes: Option<Arc<AtomicBool>>,
    /// Encryption at rest: records are sealed with the current data key, and sealed records
    /// are opened on recovery.
    pub dse: Option<Arc<crate::dse::Dse>>,
    /// Bytes kept in reserve for draining a full disk (`space.rs`); 0: none.
    pub reserve_bytes: u64,
    /// A replicated queue manager's active instance: each batch counts as durable only once
    /// the replicator says a majority of the group holds it (`replica.rs`).
    pub replicator: Option<ReplicatorRef>,
    /// This log is a copy of batches already durable elsewhere (an instance of a replicated
    /// queue manager: its synced Raft log holds each batch before it is written here). A batch
    /// is written without a sync of its own; the log is synced when a segment ends, on
    /// [`Log::sync_to_disk`] (before a checkpoint) and on close, so what a power loss can take
    /// is only the last segment's unsynced tail. At open, damage in that tail is cut even when
    /// valid records follow it: the Raft log gives them again.
    pub durable_elsewhere: bool,
}

impl LogConfig {
    pub fn new(dir: impl Into<PathBuf>) -> LogConfig {
        LogConfig {
            dir: dir.into(),
            segment_bytes: 64 << 20,
            archive_dir: None,
            sync: true,
            fail_writes: None,
            dse: None,
            reserve_bytes: crate::space::DEFAULT_RESERVE,
            replicator: None,
            durable_elsewhere: false,
        }
    }
}

/// Associated data of a sealed record: its LSN (its place in the log), key id and kind.
pub fn record_aad(lsn: Lsn, key_id: u32, kind: u8) -> [u8; 17] {
    let mut a = [0u8; 17];
    a[..4].copy_from_slice(b"LOG:");
    a[4..12].copy_from_slice(&lsn.to_le_bytes());
    a[12..16].copy_from_slice(&key_id.to_le_bytes());
    a[16] = kind;
    a
}

/// What recovery found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Recovered {
    /// Records passed to the visitor.
    pub records: u64,
    /// Last valid LSN in the log (0 when empty).
    pub last_lsn: Lsn,
    /// A torn tail that was cut: the segment and the offset it was cut at.
    pub truncated: Option<(PathBuf, u64)>,
}

/// Counters for benchmarks and statistics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LogStats {
    pub records: u64,
    pub batches: u64,
    pub bytes: u64,
    /// Time to write and sync a batch (replication included), in nanoseconds: a moving
    /// average weighting the newest batch 1/8 (0 before the first).
    pub write_nanos_avg: u64,
}

/// The completion of one batch.
#[derive(Default)]
struct Batch {
    result: OnceLock<std::result::Result<(), String>>,
    /// Committers waiting on this batch (group-commit coalescing uses it).
    waiters: AtomicU64,
    /// Waiters of this batch sleep here (with `Shared::state`), so finishing a batch wakes
    /// only its own committers, not those of the next one.
    cv: Condvar,
    /// Tasks waiting for this batch without a thread ([`Log::wait_async`]); woken with `cv`.
    wakers: Mutex<Vec<std::task::Waker>>,
    /// Threads that sleep on `cv` (counted under `Shared::state`): without one, finishing
    /// the batch spares the signal's system call.
    sleepers: AtomicU64,
}

impl Batch {
    /// Sets the outcome and wakes every waiter, threads and tasks.
    fn finish(&self, r: std::result::Result<(), String>) {
        let _ = self.result.set(r);
        self.cv.notify_all();
        self.wake_tasks();
    }

    /// Wakes every waiter once the outcome was set under `Shared::state` (so a thread
    /// counted in `sleepers` is seen).
    fn finish_wake(&self) {
        if self.sleepers.load(Ordering::Acquire) > 0 {
            self.cv.notify_all();
        }
        self.wake_tasks();
    }

    fn wake_tasks(&self) {
        for w in std::mem::take(&mut *lock(&self.wakers)) {
            w.wake();
        }
    }
}

/// Proof of an appended record; wait on it for durability.
#[derive(Clone)]
pub struct Ticket {
    pub lsn: Lsn,
    batch: Arc<Batch>,
}

struct State {
    pending: Vec<u8>,
    /// The pending records framed without encryption, for the replicator, when `pending`
    /// holds them sealed (encryption at rest with a replicator).
    plain: Vec<u8>,
    pending_first: Lsn,
    pending_last: Lsn,
    batch: Arc<Batch>,
    next_lsn: Lsn,
    durable: Lsn,
    broken: Option<String>,
    closed: bool,
    /// Someone waits for durability: the flusher should write what is pending now.
    flush_wanted: bool,
    /// A new segment is wanted before the next write ([`Log::roll`]).
    roll_wanted: bool,
    /// Segments started so far (a roll waits for this to move).
    rolls: u64,
    /// A sync of the open segment is wanted ([`Log::sync_to_disk`]).
    sync_wanted: bool,
    /// Syncs asked for and done so far.
    syncs: u64,
}

/// Pending bytes past which the flusher writes even if nobody waits yet.
const EAGER_FLUSH: usize = 1 << 20;

#[derive(Clone, Debug)]
struct SegInfo {
    number: u64,
    first_lsn: Lsn,
    path: PathBuf,
}

struct Shared {
    cfg: LogConfig,
    state: Mutex<State>,
    work: Condvar,
    segments: Mutex<Vec<SegInfo>>,
    records: AtomicU64,
    batches: AtomicU64,
    bytes: AtomicU64,
    /// See [`LogStats::write_nanos_avg`] (written by the writer thread alone).
    write_nanos_avg: AtomicU64,
    /// The reserve was spent: space is short (`space.rs`).
    short: AtomicBool,
    /// The file system's free space was under its low-water mark when last looked at, and
    /// when that was (ms since the epoch).
    low: AtomicBool,
    low_checked_ms: AtomicU64,
}

/// The recovery log.
pub struct Log {
    shared: Arc<Shared>,
    flusher: Mutex<Option<JoinHandle<()>>>,
}

fn seg_path(dir: &Path, number: u64) -> PathBuf {
    dir.join(format!("S{number:010}.log"))
}

fn seg_header(number: u64, first_lsn: Lsn) -> [u8; SEG_HEADER as usize] {
    let mut h = [0u8; SEG_HEADER as usize];
    h[0..4].copy_from_slice(&SEG_MAGIC);
    h[4..6].copy_from_slice(&SEG_VERSION.to_le_bytes());
    h[8..16].copy_from_slice(&number.to_le_bytes());
    h[16..24].copy_from_slice(&first_lsn.to_le_bytes());
    let crc = crc32c::crc32c(&h[0..24]);
    h[24..28].copy_from_slice(&crc.to_le_bytes());
    h
}

/// Appends one framed record to `out`.
pub fn frame(out: &mut Vec<u8>, lsn: Lsn, key_id: u32, kind: u8, payload: &[u8]) {
    let start = out.len();
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    out.extend_from_slice(&[0u8; 4]);
    out.extend_from_slice(&lsn.to_le_bytes());
    out.extend_from_slice(&key_id.to_le_bytes());
    out.push(kind);
    out.extend_from_slice(payload);
    let crc = crc32c::crc32c(&out[start + 8..]);
    out[start + 4..start + 8].copy_from_slice(&crc.to_le_bytes());
}

/// One record read back.
pub struct RecordRef<'a> {
    pub lsn: Lsn,
    pub key_id: u32,
    pub kind: u8,
    pub payload: &'a [u8],
}

/// Parses the record at the start of `buf`; `None` when it is not a complete, valid record
/// with an LSN above `after`.
fn parse_record(buf: &[u8], after: Lsn) -> Option<(RecordRef<'_>, usize)> {
    if buf.len() < RECORD_HEADER {
        return None;
    }
    let len = u32::from_le_bytes(buf[0..4].try_into().ok()?) as usize;
    if len > MAX_RECORD || buf.len() - RECORD_HEADER < len {
        return None;
    }
    let crc = u32::from_le_bytes(buf[4..8].try_into().ok()?);
    let total = RECORD_HEADER + len;
    if crc32c::crc32c(&buf[8..total]) != crc {
        return None;
    }
    let lsn = u64::from_le_bytes(buf[8..16].try_into().ok()?);
    if lsn <= after {
        return None;
    }
    let key_id = u32::from_le_bytes(buf[16..20].try_into().ok()?);
    Some((
        RecordRef {
            lsn,
            key_id,
            kind: buf[20],
            payload: &buf[RECORD_HEADER..total],
        },
        total,
    ))
}

/// Opens a sealed record found on recovery. Its CRC held, so a failure here is a wrong or
/// missing key, or bytes altered together with their CRC: an error, never a torn tail.
fn open_record(cfg: &LogConfig, r: &RecordRef<'_>, path: &Path, off: usize) -> Result<Vec<u8>> {
    let Some(d) = &cfg.dse else {
        return Err(StorageError::Key(format!(
            "{} holds encrypted records (data key {}); start the queue manager with its master key",
            path.display(),
            r.key_id
        )));
    };
    if !d.has_key(r.key_id) {
        return Err(StorageError::Key(format!(
            "{} at offset {off}: data key {} is not in the keyring",
            path.display(),
            r.key_id
        )));
    }
    d.open_sealed(r.key_id, &record_aad(r.lsn, r.key_id, r.kind), r.payload)
        .ok_or_else(|| StorageError::Corrupt {
            path: path.to_path_buf(),
            offset: off as u64,
            detail: "an encrypted record fails authentication (altered, or moved from elsewhere)"
                .into(),
        })
}

fn list_segments(dir: &Path) -> Result<Vec<(u64, PathBuf)>> {
    let mut out = Vec::new();
    let rd =
        fs::read_dir(dir).map_err(|e| StorageError::io("cannot list the log directory", dir, e))?;
    for entry in rd {
        let entry = entry.map_err(|e| StorageError::io("cannot list the log directory", dir, e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if let Some(n) = name.strip_prefix('S').and_then(|r| r.strip_suffix(".log"))
            && let Ok(num) = n.parse::<u64>()
        {
            out.push((num, entry.path()));
        }
    }
    out.sort();
    Ok(out)
}

fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| StorageError::io("cannot sync the directory", dir, e))
}

impl Shared {
    /// [`Log::space_low`], for the flusher too.
    pub(super) fn space_low(&self) -> bool {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        let last = self.low_checked_ms.load(Ordering::Relaxed);
        if now >= last + 100
            && self
                .low_checked_ms
                .compare_exchange(last, now, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
        {
            let low = crate::space::free_space(&self.cfg.dir).is_some_and(|(free, total)| {
                free < crate::space::low_water(total, self.cfg.reserve_bytes)
            });
            self.low.store(low, Ordering::Relaxed);
        }
        self.low.load(Ordering::Relaxed)
    }
}

impl Log {
    /// Appends a record to the pending batch. Not durable until [`Log::wait`] returns Ok.
    pub fn append(&self, kind: u8, payload: &[u8]) -> Result<Ticket> {
        self.append_as(None, kind, payload)
    }

    /// Appends a record that must take LSN `at` when `at` is given (a replica's copy).
    fn append_as(&self, at: Option<Lsn>, kind: u8, payload: &[u8]) -> Result<Ticket> {
        // Sealing adds a nonce and a tag; the record must still fit MAX_RECORD on recovery.
        let overhead = if self.shared.cfg.dse.is_some() {
            crate::dse::OVERHEAD
        } else {
            0
        };
        if payload.len() + overhead > MAX_RECORD {
            return Err(StorageError::Decode(format!(
                "record of {} bytes is larger than the {} MiB limit",
                payload.len(),
                MAX_RECORD >> 20
            )));
        }
        let mut st = lock(&self.shared.state);
        if st.closed {
            return Err(StorageError::Closed);
        }
        if let Some(b) = &st.broken {
            return Err(StorageError::Broken(b.clone()));
        }
        let lsn = st.next_lsn;
        if let Some(at) = at
            && at != lsn
        {
            return Err(StorageError::Decode(format!(
                "a replicated record has LSN {at} where the log's next is {lsn}"
            )));
        }
        st.next_lsn += 1;
        if st.pending.is_empty() {
            st.pending_first = lsn;
        }
        st.pending_last = lsn;
        match &self.shared.cfg.dse {
            None => frame(&mut st.pending, lsn, 0, kind, payload),
            Some(d) => {
                let key = d.current();
                let sealed = match d.seal(key, &record_aad(lsn, key, kind), payload) {
                    Ok(s) => s,
                    Err(e) => {
                        // The LSN was taken: nothing may reuse it, so the log stops here.
                        st.broken = Some(e.to_string());
                        return Err(e);
                    }
                };
                frame(&mut st.pending, lsn, key, kind, &sealed);
                if self.shared.cfg.replicator.is_some() {
                    frame(&mut st.plain, lsn, 0, kind, payload);
                }
            }
        }
        let batch = st.batch.clone();
        // Records nobody waits for yet (a put inside a unit of work) ride along with the next
        // sync someone asks for, so a unit of work costs one sync, not one per record.
        let eager = st.pending.len() >= EAGER_FLUSH;
        drop(st);
        if eager {
            self.shared.work.notify_one();
        }
        Ok(Ticket { lsn, batch })
    }

    /// Waits until the record of `t` is durable, or its batch failed.
    pub fn wait(&self, t: &Ticket) -> Result<()> {
        let mut st = lock(&self.shared.state);
        if t.batch.result.get().is_none() {
            t.batch.waiters.fetch_add(1, Ordering::Relaxed);
            st.flush_wanted = true;
            self.shared.work.notify_one();
        }
        t.batch.sleepers.fetch_add(1, Ordering::Release);
        loop {
            if let Some(r) = t.batch.result.get() {
                return r.clone().map_err(|e| StorageError::Write {
                    path: self.shared.cfg.dir.clone(),
                    source: std::io::Error::other(e),
                });
            }
            st = t.batch.cv.wait(st).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// Waits, without holding a thread, until the record of `t` is durable or its batch
    /// failed: the event-driven server's persistent puts and gets (docs/wire.md).
    pub fn wait_async(
        &self,
        t: &Ticket,
    ) -> impl std::future::Future<Output = Result<()>> + Send + 'static {
        let (shared, batch) = (self.shared.clone(), t.batch.clone());
        let mut asked = false;
        std::future::poll_fn(move |cx| {
            if batch.result.get().is_none() {
                lock(&batch.wakers).push(cx.waker().clone());
                if !asked {
                    asked = true;
                    let mut st = lock(&shared.state);
                    if batch.result.get().is_none() {
                        batch.waiters.fetch_add(1, Ordering::Relaxed);
                        st.flush_wanted = true;
                        // Told once the lock is let go, so the flusher does not wake into it.
                        drop(st);
                        shared.work.notify_one();
                    }
                }
            }
            // Looked at again after the waker is in place: a batch that finished meanwhile
            // is not missed.
            match batch.result.get() {
                Some(r) => std::task::Poll::Ready(r.clone().map_err(|e| StorageError::Write {
                    path: shared.cfg.dir.clone(),
                    source: std::io::Error::other(e),
                })),
                None => std::task::Poll::Pending,
            }
        })
    }

    /// Appends and waits: one durable record.
    pub fn append_durable(&self, kind: u8, payload: &[u8]) -> Result<Lsn> {
        let t = self.append(kind, payload)?;
        self.wait(&t)?;
        Ok(t.lsn)
    }

    /// The highest LSN handed out so far.
    pub fn last_lsn(&self) -> Lsn {
        lock(&self.shared.state).next_lsn - 1
    }

    pub fn stats(&self) -> LogStats {
        LogStats {
            records: self.shared.records.load(Ordering::Relaxed),
            batches: self.shared.batches.load(Ordering::Relaxed),
            bytes: self.shared.bytes.load(Ordering::Relaxed),
            write_nanos_avg: self.shared.write_nanos_avg.load(Ordering::Relaxed),
        }
    }

    /// Deletes (after archiving, when configured) every closed segment whose records all have
    /// LSNs below `lsn`. Returns how many segments were released.
    pub fn release_before(&self, lsn: Lsn) -> Result<usize> {
        let victims: Vec<SegInfo> = {
            let segs = lock(&self.shared.segments);
            segs.windows(2)
                .filter(|w| w[1].first_lsn <= lsn)
                .map(|w| w[0].clone())
                .collect()
        };
        for v in &victims {
            if let Some(archive) = &self.shared.cfg.archive_dir {
                fs::create_dir_all(archive)
                    .map_err(|e| StorageError::io("cannot create archive directory", archive, e))?;
                let dest = archive.join(v.path.file_name().unwrap_or_default());
                fs::copy(&v.path, &dest)
                    .map_err(|e| StorageError::io("cannot archive segment to", &dest, e))?;
                File::open(&dest)
                    .and_then(|f| f.sync_all())
                    .map_err(|e| StorageError::io("cannot sync archived segment", &dest, e))?;
                sync_dir(archive)?;
            }
            fs::remove_file(&v.path)
                .map_err(|e| StorageError::io("cannot remove released segment", &v.path, e))?;
            lock(&self.shared.segments).retain(|s| s.number != v.number);
        }
        if !victims.is_empty() {
            sync_dir(&self.shared.cfg.dir)?;
        }
        Ok(victims.len())
    }

    /// The data key of the first record of the oldest segment (key ids never decrease along
    /// the log, so no record still on disk is sealed with an older one); `None` when that
    /// segment holds no record yet or cannot be read.
    pub fn oldest_key_id(&self) -> Option<u32> {
        let path = lock(&self.shared.segments).first()?.path.clone();
        let mut f = File::open(path).ok()?;
        let mut b = [0u8; SEG_HEADER as usize + RECORD_HEADER];
        f.read_exact(&mut b).ok()?;
        let h = SEG_HEADER as usize;
        // Zeros where the first record would be: space laid out ahead, no record yet.
        if b[h + 8..h + 16].iter().all(|&x| x == 0) {
            return None;
        }
        Some(u32::from_le_bytes(b[h + 16..h + 20].try_into().ok()?))
    }

    /// Whether the disk's reserve was spent: what fills the log should wait until a checkpoint
    /// gives space back ([`Log::restore_reserve`]).
    pub fn space_short(&self) -> bool {
        self.shared.short.load(Ordering::Acquire)
    }

    /// Whether the log's file system has less free space than its low-water mark
    /// ([`crate::space::low_water`]): time to start a new segment and checkpoint, so that the
    /// space of the old one comes back before a write is refused. Looked at most every
    /// 100 ms (a `statvfs`); between, the last answer.
    pub fn space_low(&self) -> bool {
        self.shared.space_low()
    }

    /// Writes the reserve again if it was spent; true when it is in place (space no longer
    /// short).
    pub fn restore_reserve(&self) -> bool {
        if !self.space_short() {
            return true;
        }
        let ok = crate::space::ensure(&self.shared.cfg.dir, self.shared.cfg.reserve_bytes);
        if ok {
            self.shared.short.store(false, Ordering::Release);
            tracing::warn!(
                "the log's reserve of {} bytes is back: puts of persistent messages are accepted again",
                self.shared.cfg.reserve_bytes
            );
        }
        ok
    }

    /// Starts a new segment now (before the next record), so that the current one can be
    /// released once a checkpoint covers it. Returns once the flusher has done it.
    pub fn roll(&self) {
        let mut st = lock(&self.shared.state);
        if st.closed || st.broken.is_some() {
            return;
        }
        let seen = st.rolls;
        st.roll_wanted = true;
        self.shared.work.notify_one();
        let _ = self.wait_flusher(st, std::time::Duration::from_secs(10), |st| {
            st.rolls != seen || !st.roll_wanted || st.closed
        });
    }

    /// Waits (at most `limit`) until the flusher has done what `done` looks for; returns the
    /// state and whether it was done in time.
    fn wait_flusher<'a>(
        &'a self,
        mut st: std::sync::MutexGuard<'a, State>,
        limit: std::time::Duration,
        done: impl Fn(&State) -> bool,
    ) -> (std::sync::MutexGuard<'a, State>, bool) {
        let deadline = std::time::Instant::now() + limit;
        while !done(&st) {
            let now = std::time::Instant::now();
            if now >= deadline {
                return (st, false);
            }
            st = self
                .shared
                .work
                .wait_timeout(st, deadline - now)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        (st, true)
    }

    /// Writes what is pending and syncs the open segment, for a log that does not sync each
    /// batch ([`LogConfig::durable_elsewhere`]); nothing to do for one that does.
    pub fn sync_to_disk(&self) -> Result<()> {
        if !self.shared.cfg.durable_elsewhere || !self.shared.cfg.sync {
            return Ok(());
        }
        let mut st = lock(&self.shared.state);
        let seen = st.syncs;
        st.sync_wanted = true;
        st.flush_wanted = true;
        self.shared.work.notify_all();
        let (st, _) = self.wait_flusher(st, std::time::Duration::from_secs(30), |st| {
            st.syncs != seen || st.broken.is_some() || st.closed
        });
        if st.syncs != seen {
            Ok(())
        } else if let Some(b) = &st.broken {
            Err(StorageError::Broken(b.clone()))
        } else if st.closed {
            Err(StorageError::Closed)
        } else {
            Err(StorageError::Broken(
                "the log's disk did not finish a sync within 30 s".into(),
            ))
        }
    }

    /// Number of segment files the log holds.
    pub fn segment_count(&self) -> usize {
        lock(&self.shared.segments).len()
    }

    /// Flushes what is pending and stops the flusher.
    pub fn close(&self) {
        {
            let mut st = lock(&self.shared.state);
            st.closed = true;
        }
        self.shared.work.notify_all();
        if let Some(h) = lock(&self.flusher).take() {
            let _ = h.join();
        }
        let batch = lock(&self.shared.state).batch.clone();
        batch.finish(Err(
            "the log was closed before this record was written".into()
        ));
    }
}

impl Drop for Log {
    fn drop(&mut self) {
        self.close();
    }
}

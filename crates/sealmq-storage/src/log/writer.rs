//! The flusher's side of the log: the open segment, written by the flusher thread alone, and
//! starting new segments (on size, or when a checkpoint short of space asks, [`Log::roll`]).
//!
//! Space ahead of the write position is laid out in zeros ([`PREPARE_CHUNK`] at a time, after a
//! batch's committers are released): a batch then overwrites blocks the file already has, and
//! its `fdatasync` writes the data alone, where an append also has to write the file's new size
//! (a second, serial I/O on ext4). Recovery reads zeros after the last record as the end of the
//! log; a clean close cuts them off.

use super::*;
use sealmq_types::sync::lock;
use std::os::unix::fs::FileExt;
use std::time::Duration;

/// Bytes of zeros laid out ahead of the write position at a time.
pub(super) const PREPARE_CHUNK: u64 = 1 << 20;

pub(super) fn create_segment(dir: &Path, number: u64, first_lsn: Lsn) -> Result<(File, PathBuf)> {
    let path = seg_path(dir, number);
    let mut f = OpenOptions::new()
        .create_new(true)
        .write(true)
        .mode(0o600)
        .open(&path)
        .map_err(|e| StorageError::io("cannot create log segment", &path, e))?;
    f.write_all(&seg_header(number, first_lsn))
        .and_then(|_| f.sync_all())
        .map_err(|e| StorageError::io("cannot write log segment header", &path, e))?;
    sync_dir(dir)?;
    Ok((f, path))
}

/// How the last batch went, for coalescing the next.
struct Pace {
    /// Committers the last batch released.
    last_waiters: u64,
    /// How long its write and sync took.
    last_sync: Duration,
}

/// A batch taken from the pending records.
struct Take {
    /// The records as written (sealed under encryption at rest).
    buf: Vec<u8>,
    /// The records in the clear, for replication, when `buf` is sealed (else empty).
    plain: Vec<u8>,
    first: Lsn,
    last: Lsn,
    batch: Arc<Batch>,
}

/// What the flusher found to do.
enum Taken {
    Batch(Take),
    /// A roll or a sync was done: look again.
    Again,
    /// The log closed with nothing pending.
    Closed,
}

/// The flusher's side: the open segment, written only by the flusher thread.
pub(super) struct Writer {
    pub(super) file: File,
    pub(super) path: PathBuf,
    pub(super) number: u64,
    pub(super) offset: u64,
    /// The file holds written zeros (or records) up to here: batches below it overwrite.
    pub(super) prepared: u64,
    pub(super) shared: Arc<Shared>,
}

impl Writer {
    pub(super) fn run(mut self) {
        let mut spare = Vec::with_capacity(1 << 16);
        let mut pace = Pace {
            last_waiters: 0,
            last_sync: Duration::ZERO,
        };
        loop {
            let t = match self.take(&mut spare, &pace) {
                Taken::Batch(t) => t,
                Taken::Again => continue,
                Taken::Closed => return self.cut_prepared(),
            };
            let t0 = std::time::Instant::now();
            let rolled = std::mem::take(&mut lock(&self.shared.state).roll_wanted);
            if rolled && self.offset > SEG_HEADER && self.start_segment(t.first).is_ok() {
                lock(&self.shared.state).rolls += 1;
                self.shared.work.notify_all();
            }
            let result = self.replicate_and_write(&t);
            pace.last_sync = t0.elapsed();
            pace.last_waiters = self.finish(&t, result, pace.last_sync);
            spare = t.buf;
            spare.clear();
            self.prepare_ahead();
        }
    }

    /// Lays out zeros ahead of the write position when less than half a chunk is left (never
    /// past the segment's size), without a sync of their own: the next batch's sync carries
    /// them and the file's new size, once per chunk. A log that does not sync each batch has
    /// nothing to gain. A failure (a full disk) only means later batches append.
    fn prepare_ahead(&mut self) {
        let cfg = &self.shared.cfg;
        if !cfg.sync || cfg.durable_elsewhere {
            return;
        }
        // A disk under its low-water mark gets its space back, and the log writes as it did
        // without any laid out: a full disk then fails a write, which spends the reserve
        // (space.rs) so that gets and clears go on.
        if self.shared.space_low() || self.shared.short.load(Ordering::Acquire) {
            self.cut_prepared_now();
            return;
        }
        let from = self.prepared.max(self.offset);
        if from - self.offset >= PREPARE_CHUNK / 2 || from >= cfg.segment_bytes {
            return;
        }
        let to = (from + PREPARE_CHUNK).min(cfg.segment_bytes);
        static ZEROS: [u8; 64 << 10] = [0; 64 << 10];
        let mut at = from;
        while at < to {
            let n = (to - at).min(ZEROS.len() as u64) as usize;
            if let Err(e) = self.file.write_all_at(&ZEROS[..n], at) {
                tracing::debug!("cannot lay out log space in {}: {e}", self.path.display());
                break;
            }
            at += n as u64;
        }
        self.prepared = at;
    }

    /// The next batch, taken from the pending records once there is work (a roll or a sync
    /// asked for with nothing pending is done here: `Again`); with group-commit coalescing,
    /// when the last batch released several committers the next gets a moment (a fraction
    /// of a sync) to gather as many. `Closed`: the log closed with nothing pending.
    fn take(&mut self, spare: &mut Vec<u8>, pace: &Pace) -> Taken {
        let mut st = lock(&self.shared.state);
        while !st.closed
            && !st.roll_wanted
            && !st.sync_wanted
            && (st.pending.is_empty() || (!st.flush_wanted && st.pending.len() < EAGER_FLUSH))
        {
            st = self.shared.work.wait(st).unwrap_or_else(|p| p.into_inner());
        }
        if st.roll_wanted && st.pending.is_empty() {
            st.roll_wanted = false;
            let first = st.next_lsn;
            drop(st);
            let r = self.start_segment(first);
            if r.is_ok() {
                lock(&self.shared.state).rolls += 1;
            }
            self.shared.work.notify_all();
            return Taken::Again;
        }
        if st.sync_wanted && st.pending.is_empty() {
            st.sync_wanted = false;
            drop(st);
            let r = self.file.sync_data();
            let mut st = lock(&self.shared.state);
            match r {
                Ok(()) => st.syncs += 1,
                Err(e) => st.broken = Some(format!("cannot sync {}: {e}", self.path.display())),
            }
            drop(st);
            self.shared.work.notify_all();
            return Taken::Again;
        }
        if pace.last_waiters > 1 && !st.closed {
            let until = std::time::Instant::now()
                + (pace.last_sync / 2).clamp(Duration::from_micros(20), Duration::from_millis(2));
            while st.batch.waiters.load(Ordering::Relaxed) < pace.last_waiters
                && st.pending.len() < EAGER_FLUSH
            {
                let now = std::time::Instant::now();
                if now >= until {
                    break;
                }
                st = self
                    .shared
                    .work
                    .wait_timeout(st, until - now)
                    .unwrap_or_else(|p| p.into_inner())
                    .0;
            }
        }
        if st.pending.is_empty() {
            drop(st);
            if let Err(e) = self.sync_copy() {
                tracing::warn!("cannot sync {} at close: {e}", self.path.display());
            }
            return Taken::Closed;
        }
        st.flush_wanted = false;
        Taken::Batch(Take {
            buf: std::mem::replace(&mut st.pending, std::mem::take(spare)),
            batch: std::mem::replace(&mut st.batch, Arc::new(Batch::default())),
            plain: std::mem::take(&mut st.plain),
            first: st.pending_first,
            last: st.pending_last,
        })
    }

    /// The batch replicated first when the log is (a replicated log writes a batch only
    /// once a majority holds it: what this instance's files hold was committed, whichever
    /// instance is active next), then written and synced; out of space, the reserve is
    /// spent and the write tried once more.
    fn replicate_and_write(&mut self, t: &Take) -> std::result::Result<(), WriteErr> {
        let replicated = match &self.shared.cfg.replicator {
            Some(r) => {
                let records = if t.plain.is_empty() { &t.buf } else { &t.plain };
                r.0.replicate(t.first, t.last, records)
                    .map_err(|e| Fatal(format!("the batch was not replicated: {e}")))
            }
            None => Ok(()),
        };
        let mut result = replicated.and_then(|()| self.write_batch(&t.buf, t.first));
        if matches!(&result, Err(NoSpace(_))) && crate::space::release(&self.shared.cfg.dir) {
            self.shared.short.store(true, Ordering::Release);
            tracing::error!(
                "the log's disk is full ({}): its reserve is given back so gets and \
                 clears can go on; puts of persistent messages are refused until space returns",
                self.shared.cfg.dir.display()
            );
            result = self.write_batch(&t.buf, t.first);
        }
        if matches!(&result, Err(NoSpace(_))) {
            self.shared.short.store(true, Ordering::Release);
        }
        result
    }

    /// The batch's committers told its result (durable up to its last LSN, or why not),
    /// with the log's counters; the number of committers it released.
    fn finish(&self, t: &Take, result: std::result::Result<(), WriteErr>, took: Duration) -> u64 {
        let n = t.last - t.first + 1;
        let mut st = lock(&self.shared.state);
        match &result {
            Ok(()) => {
                st.durable = t.last;
                self.shared.records.fetch_add(n, Ordering::Relaxed);
                self.shared.batches.fetch_add(1, Ordering::Relaxed);
                let took = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
                let avg = self.shared.write_nanos_avg.load(Ordering::Relaxed);
                let avg = if avg == 0 {
                    took
                } else {
                    avg - avg / 8 + took / 8
                };
                self.shared.write_nanos_avg.store(avg, Ordering::Relaxed);
                self.shared
                    .bytes
                    .fetch_add(t.buf.len() as u64, Ordering::Relaxed);
            }
            Err(Fatal(msg)) => st.broken = Some(msg.clone()),
            Err(NoSpace(_)) => {}
            Err(_) => {}
        }
        let _ = t.batch.result.set(result.map_err(|e| e.to_string()));
        let released = t.batch.waiters.load(Ordering::Relaxed);
        drop(st);
        t.batch.finish_wake();
        released
    }

    fn write_batch(&mut self, buf: &[u8], first: Lsn) -> std::result::Result<(), WriteErr> {
        let shared = self.shared.clone();
        let cfg = &shared.cfg;
        if self.offset > SEG_HEADER && self.offset + buf.len() as u64 > cfg.segment_bytes {
            // Encryption at rest: what is appended from now on goes under a new data key.
            if let Some(d) = &cfg.dse
                && let Err(e) = d.roll()
            {
                tracing::warn!("the log keeps its current data key: {e}");
            }
            self.start_segment(first)?;
        }
        let start = self.offset;
        let res = (|| -> std::io::Result<()> {
            self.file.seek(SeekFrom::Start(start))?;
            if cfg
                .fail_writes
                .as_ref()
                .is_some_and(|f| f.load(Ordering::Relaxed))
            {
                self.file.write_all(&buf[..buf.len() / 2])?;
                return Err(std::io::Error::from_raw_os_error(28)); // ENOSPC
            }
            self.file.write_all(buf)?;
            if cfg.sync && !cfg.durable_elsewhere {
                self.file.sync_data()?;
            }
            Ok(())
        })();
        match res {
            Ok(()) => {
                self.offset += buf.len() as u64;
                Ok(())
            }
            Err(e) => {
                // Cut back to where the batch began so the log stays a valid prefix.
                self.prepared = self.prepared.min(start);
                let cut = self.file.set_len(start).and_then(|_| self.file.sync_data());
                match cut {
                    Ok(()) if crate::space::is_no_space(&e) => {
                        Err(NoSpace(format!("{} ({})", e, self.path.display())))
                    }
                    Ok(()) => Err(Failed(format!("{} ({})", e, self.path.display()))),
                    Err(e2) => Err(Fatal(format!("{e}; then cutting back failed: {e2}"))),
                }
            }
        }
    }

    /// At a clean close the zeros laid out ahead are cut off: the segment ends at its last
    /// record, as it would without them.
    fn cut_prepared(&mut self) {
        if self.prepared <= self.offset {
            return;
        }
        let cut = self
            .file
            .set_len(self.offset)
            .and_then(|()| self.file.sync_all());
        match cut {
            Ok(()) => self.prepared = self.offset,
            Err(e) => tracing::warn!("cannot cut {} at close: {e}", self.path.display()),
        }
    }

    /// The zeros laid out ahead given back to the file system (no sync: recovery reads any
    /// that stay as the end).
    fn cut_prepared_now(&mut self) {
        if self.prepared > self.offset && self.file.set_len(self.offset).is_ok() {
            self.prepared = self.offset;
        }
    }

    /// A copy of batches durable elsewhere syncs its segment when it ends or the log closes,
    /// so that only the last segment's tail can be lost (`LogConfig::durable_elsewhere`).
    fn sync_copy(&self) -> std::io::Result<()> {
        let cfg = &self.shared.cfg;
        if cfg.durable_elsewhere && cfg.sync {
            self.file.sync_data()?;
        }
        Ok(())
    }

    /// Closes the current segment and starts the next, its first record `first`.
    fn start_segment(&mut self, first: Lsn) -> std::result::Result<(), WriteErr> {
        // A segment that is not the last one must be whole after a power loss.
        self.sync_copy()
            .map_err(|e| Failed(format!("cannot sync {}: {e}", self.path.display())))?;
        // The zeros laid out past its last record are cut (recovery reads them as its end
        // anyway, should this not reach the disk).
        self.cut_prepared_now();
        let cfg = &self.shared.cfg;
        let number = self.number + 1;
        let (f, path) = create_segment(&cfg.dir, number, first).map_err(|e| match &e {
            StorageError::Io { source, .. } if crate::space::is_no_space(source) => {
                NoSpace(e.to_string())
            }
            _ => Failed(e.to_string()),
        })?;
        lock(&self.shared.segments).push(SegInfo {
            number,
            first_lsn: first,
            path: path.clone(),
        });
        self.file = f;
        self.path = path;
        self.number = number;
        self.offset = SEG_HEADER;
        self.prepared = SEG_HEADER;
        Ok(())
    }
}

enum WriteErr {
    Failed(String),
    /// The file system is full: the write was cut back, the log is sound.
    NoSpace(String),
    Fatal(String),
}
use WriteErr::{Failed, Fatal, NoSpace};

impl std::fmt::Display for WriteErr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failed(s) | NoSpace(s) | Fatal(s) => f.write_str(s),
        }
    }
}

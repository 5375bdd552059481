//! The state machine of an instance: its own copy of the queue manager's recovery log.
//!
//! A committed entry's batch is appended to the instance's log at the LSNs the active instance
//! gave its records (sealed under this instance's own data key), unless an engine holds the log
//! (this instance is active: its flusher writes each batch once the group has committed it).
//! What the instance has applied is what its log holds: at open, the last entry whose batch
//! the log holds whole; a batch applied again after a crash skips the records already there.
//!
//! **Snapshots.** Once a replica has applied `snapshot_bytes` of batches since its last one, it
//! checkpoints its copy of the queue manager (so its log is released up to there) and writes
//! the state as of that checkpoint to `ha/snapshot/state` ([`StateFiles`], the engine's
//! state file), with openraft's description of it in `ha/snapshot/meta`; openraft then purges
//! the Raft log before it. An instance too far behind, or whose data was lost, is sent that
//! file in chunks and installs it: its log, checkpoint and queue files are replaced by the
//! state, sealed under its own keys. A crash while installing leaves `ha/snapshot/installing`:
//! the next start drops the instance's data and Raft log (its vote kept) and is sent the
//! snapshot again.

use crate::logstore::{LogStore, read_small, replace_file, small_bytes};
use crate::types::{Change, Entry, Ha, LogId, Membership, StorageError, sto_err};
use openraft::storage::{RaftStateMachine, Snapshot, SnapshotMeta};
use openraft::{
    BasicNode, EntryPayload, OptionalSend, Raft, RaftSnapshotBuilder, StoredMembership,
};
use sealmq_storage::log::{Log, LogConfig};
use sealmq_types::sync::lock;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// What the instance's queue manager storage does for snapshots (the process that runs the
/// instance provides it: it links the engine, which this crate does not).
pub trait StateFiles: Send + Sync {
    /// Checkpoints the replica's copy of the queue manager (its log closed meanwhile) and
    /// writes its state to `to`; returns the LSN the state stands at.
    fn write_state(&self, to: &Path) -> Result<u64, String>;
    /// Replaces the instance's log, checkpoint and queue files by the state in `from`.
    fn install_state(&self, from: &Path) -> Result<u64, String>;
}

/// Under the instance's `ha/`: the current snapshot and its description.
pub const SNAPSHOT_DIR: &str = "snapshot";
const STATE: &str = "state";
const META: &str = "meta";
const RECEIVING: &str = "receiving";
const BUILDING: &str = "building";
/// Left while a snapshot is installed: a start that finds it drops the instance's data.
pub const INSTALLING: &str = "installing";
/// Batches applied between a replica's snapshots (`SEALMQ_HA_SNAPSHOT_BYTES` overrides it).
pub const SNAPSHOT_BYTES: u64 = 256 << 20;

pub(crate) type Meta = SnapshotMeta<u64, BasicNode>;

struct Inner {
    /// The instance's recovery log while no engine holds it.
    log: Option<Log>,
    /// The engine took the log for good (this instance is active): no snapshot is made.
    released: bool,
    log_cfg: LogConfig,
    /// The queue manager's directory (its policy key is written there).
    qm_dir: PathBuf,
    applied: Option<LogId>,
    membership: Membership,
    /// Batch bytes applied since the last snapshot, and how many make the next.
    since: u64,
    every: u64,
    snapshot: Option<Meta>,
}

#[derive(Clone)]
pub(crate) struct Machine {
    inner: Arc<Mutex<Inner>>,
    /// Held while a snapshot is made or installed (the log is closed then): the engine waits
    /// for it before taking the log.
    work: Arc<Mutex<()>>,
    state: Arc<dyn StateFiles>,
    snap_dir: PathBuf,
    /// The Raft node, told when a snapshot is ready to purge its log.
    raft: Arc<OnceLock<Raft<Ha>>>,
    /// The last entry applied, for the status (read without waiting for a snapshot).
    applied_index: Arc<AtomicU64>,
}

pub(crate) fn snapshot_every() -> u64 {
    std::env::var("SEALMQ_HA_SNAPSHOT_BYTES")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|n| *n > 0)
        .unwrap_or(SNAPSHOT_BYTES)
}

/// Drops what a start found half installed: the instance's data and Raft log go (its vote
/// stays), and the active instance sends the snapshot again.
pub(crate) fn recover_interrupted_install(qm_dir: &Path, ha_dir: &Path) -> Result<(), String> {
    let snap = ha_dir.join(SNAPSHOT_DIR);
    if !snap.join(INSTALLING).exists() {
        return Ok(());
    }
    tracing::warn!(
        "high availability: a snapshot was being installed when this instance stopped; its \
         data is dropped and the snapshot will be sent again"
    );
    for d in [
        qm_dir.join("log"),
        qm_dir.join("checkpoint"),
        qm_dir.join("queues"),
        snap,
    ] {
        if let Err(e) = std::fs::remove_dir_all(&d)
            && e.kind() != std::io::ErrorKind::NotFound
        {
            return Err(format!("cannot remove {}: {e}", d.display()));
        }
    }
    for f in ["raft.log", "purged"] {
        let p = ha_dir.join(f);
        if let Err(e) = std::fs::remove_file(&p)
            && e.kind() != std::io::ErrorKind::NotFound
        {
            return Err(format!("cannot remove {}: {e}", p.display()));
        }
    }
    Ok(())
}

impl Machine {
    /// Opens the instance's log and finds what of the Raft log it holds.
    pub(crate) fn open(
        qm_dir: &Path,
        log_cfg: LogConfig,
        store: &LogStore,
        state: Arc<dyn StateFiles>,
    ) -> Result<Machine, String> {
        let snap_dir = qm_dir.join(crate::HA_DIR).join(SNAPSHOT_DIR);
        sealmq_storage::create_private_dir(&snap_dir)
            .map_err(|e| format!("cannot create {}: {e}", snap_dir.display()))?;
        let snapshot: Option<Meta> = read_small(&snap_dir.join(META)).map_err(|e| e.to_string())?;
        let (log, _) =
            Log::open(log_cfg.clone(), u64::MAX, |_| Ok(())).map_err(|e| e.to_string())?;
        let held = log.last_lsn();
        // The snapshot's entries are in the instance's checkpoint (it was made from it, or
        // installed with it).
        let mut applied = snapshot.as_ref().and_then(|s| s.last_log_id);
        let mut membership = snapshot
            .as_ref()
            .map(|s| s.last_membership.clone())
            .unwrap_or_default();
        let mut membership_at = None;
        for m in store.metas() {
            if applied.is_some_and(|a| m.log_id.index <= a.index) {
                continue;
            }
            match m.last_lsn {
                Some(l) if l > held => break,
                Some(_) => applied = Some(m.log_id),
                None if m.membership => membership_at = Some(m.log_id.index),
                None => {}
            }
        }
        if let (Some(a), Some(at)) = (applied, membership_at)
            && at <= a.index
        {
            let e = store.entries(at..=at).map_err(|e| e.to_string())?;
            if let Some(Entry {
                log_id,
                payload: EntryPayload::Membership(mem),
            }) = e.into_iter().next()
            {
                membership = StoredMembership::new(Some(log_id), mem);
            }
        }
        tracing::info!(
            "high availability: this instance's log holds LSN {held}, Raft entry {}{}",
            applied.map_or(0, |a| a.index),
            snapshot
                .as_ref()
                .map(|s| format!(" (snapshot {})", s.snapshot_id))
                .unwrap_or_default()
        );
        Ok(Machine {
            inner: Arc::new(Mutex::new(Inner {
                log: Some(log),
                released: false,
                log_cfg,
                qm_dir: qm_dir.to_path_buf(),
                applied,
                membership,
                since: 0,
                every: snapshot_every(),
                snapshot,
            })),
            work: Arc::default(),
            state,
            snap_dir,
            raft: Arc::default(),
            applied_index: Arc::new(AtomicU64::new(applied.map_or(0, |a| a.index))),
        })
    }

    /// The Raft node this machine belongs to (told when a snapshot is made).
    pub(crate) fn set_raft(&self, raft: Raft<Ha>) {
        let _ = self.raft.set(raft);
    }

    /// The engine of the now active instance takes the log: it is written through to disk
    /// and closed here (the engine reopens it). A snapshot being made finishes first.
    pub(crate) fn release_log(&self) {
        let _w = lock(&self.work);
        let mut i = lock(&self.inner);
        i.released = true;
        if let Some(log) = i.log.take() {
            log.close();
        }
    }

    /// The index of the last entry applied (0: none).
    pub(crate) fn applied_index(&self) -> u64 {
        self.applied_index.load(Ordering::Relaxed)
    }

    fn reopen(&self, i: &mut Inner) -> Result<(), StorageError> {
        let (log, _) = Log::open(i.log_cfg.clone(), u64::MAX, |_| Ok(()))
            .map_err(|e| sto_err("cannot open this instance's log again", e))?;
        i.log = Some(log);
        Ok(())
    }

    /// A replica's snapshot: its copy of the queue manager checkpointed and written out.
    fn make_snapshot(&self) -> Result<(), StorageError> {
        let _w = lock(&self.work);
        let (log, applied, membership) = {
            let mut i = lock(&self.inner);
            if i.released {
                return Ok(());
            }
            i.since = 0;
            (i.log.take(), i.applied, i.membership.clone())
        };
        if let Some(log) = log {
            log.close();
        }
        let started = std::time::Instant::now();
        let building = self.snap_dir.join(BUILDING);
        let made = self.state.write_state(&building);
        self.reopen(&mut lock(&self.inner))?;
        let lsn = match made {
            Ok(l) => l,
            Err(e) => {
                // Not the instance's failure: its copy stands; the next snapshot tries again.
                tracing::warn!("high availability: no snapshot was made: {e}");
                let _ = std::fs::remove_file(&building);
                return Ok(());
            }
        };
        let meta = Meta {
            last_log_id: applied,
            last_membership: membership,
            snapshot_id: format!("{}-{lsn}", applied.map_or(0, |a| a.index)),
        };
        self.keep(&building, meta.clone())?;
        let size = std::fs::metadata(self.snap_dir.join(STATE)).map_or(0, |m| m.len());
        tracing::info!(
            "high availability: snapshot {} made ({size} bytes, LSN {lsn}) in {} ms",
            meta.snapshot_id,
            started.elapsed().as_millis()
        );
        self.hand_to_raft();
        Ok(())
    }

    /// Makes the state file `from` the current snapshot, described by `meta`: the file, its
    /// description and what chunks are read from change together (under the state lock).
    fn keep(&self, from: &Path, meta: Meta) -> Result<(), StorageError> {
        let mut i = lock(&self.inner);
        std::fs::rename(from, self.snap_dir.join(STATE))
            .map_err(|e| sto_err("cannot keep the snapshot", e))?;
        replace_file(&self.snap_dir, META, &small_bytes(&meta)?)?;
        i.snapshot = Some(meta);
        Ok(())
    }

    /// Has openraft take up the current snapshot (and purge its log before it).
    fn hand_to_raft(&self) {
        if let Some(raft) = self.raft.get() {
            let raft = raft.clone();
            tokio::spawn(async move {
                if let Err(e) = raft.trigger().snapshot().await {
                    tracing::warn!("high availability: the snapshot was not taken up: {e}");
                }
            });
        }
    }

    /// The current snapshot's description, if there is one.
    pub(crate) fn snapshot_meta(&self) -> Option<Meta> {
        lock(&self.inner).snapshot.clone()
    }

    /// Whether the engine holds the log (this instance is active).
    pub(crate) fn is_released(&self) -> bool {
        lock(&self.inner).released
    }

    /// Up to `max` bytes of snapshot `id`'s file from `offset`, with the sealing its head
    /// names; fails when `id` is no longer the current snapshot.
    pub(crate) fn read_snapshot(
        &self,
        id: &str,
        offset: u64,
        max: usize,
    ) -> Result<(Vec<u8>, crate::snapwire::Sealing), String> {
        use std::io::{Read, Seek, SeekFrom};
        let mut f = {
            let i = lock(&self.inner);
            match &i.snapshot {
                Some(m) if m.snapshot_id == id => {}
                _ => return Err(format!("snapshot {id} is no longer this instance's")),
            }
            std::fs::File::open(self.snap_dir.join(STATE))
                .map_err(|e| format!("cannot open the snapshot: {e}"))?
        };
        let mut head = [0u8; sealmq_storage::dse::StreamHead::LEN];
        f.read_exact(&mut head)
            .map_err(|e| format!("cannot read the snapshot: {e}"))?;
        let sealing = sealmq_storage::dse::StreamHead::decode(&head)
            .ok_or("the snapshot has no head")?
            .sealed;
        let mut data = Vec::with_capacity(max.min(4 << 20));
        f.seek(SeekFrom::Start(offset))
            .and_then(|_| f.take(max as u64).read_to_end(&mut data))
            .map_err(|e| format!("cannot read the snapshot: {e}"))?;
        Ok((data, sealing))
    }

    /// On the active instance: makes `from` — a replica's snapshot, fetched and sealed as
    /// this instance's own — its current snapshot, so that openraft purges the Raft log
    /// before it. Its entries are in this instance's log (it wrote them as the active one);
    /// false when this instance has that snapshot or a later one already.
    pub(crate) fn take_up(&self, from: &Path, meta: Meta) -> Result<bool, StorageError> {
        let _w = lock(&self.work);
        {
            let i = lock(&self.inner);
            if !i.released {
                return Err(sto_err(
                    "a replica's snapshot was fetched by an instance that is not active",
                    "it makes its own",
                ));
            }
            let have = i.snapshot.as_ref().and_then(|s| s.last_log_id);
            if have.is_some_and(|h| Some(h) >= meta.last_log_id) {
                let _ = std::fs::remove_file(from);
                return Ok(false);
            }
        }
        self.keep(from, meta)?;
        self.hand_to_raft();
        Ok(true)
    }

    async fn current(&self) -> Result<Option<Snapshot<Ha>>, StorageError> {
        let Some(meta) = lock(&self.inner).snapshot.clone() else {
            return Ok(None);
        };
        let file = tokio::fs::File::open(self.snap_dir.join(STATE))
            .await
            .map_err(|e| sto_err("cannot open the snapshot", e))?;
        Ok(Some(Snapshot {
            meta,
            snapshot: Box::new(file),
        }))
    }
}

impl RaftStateMachine<Ha> for Machine {
    type SnapshotBuilder = Machine;

    async fn applied_state(&mut self) -> Result<(Option<LogId>, Membership), StorageError> {
        let i = lock(&self.inner);
        Ok((i.applied, i.membership.clone()))
    }

    async fn apply<I>(&mut self, entries: I) -> Result<Vec<()>, StorageError>
    where
        I: IntoIterator<Item = Entry> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let mut out = Vec::new();
        let due = {
            let mut i = lock(&self.inner);
            let mut last = None;
            for e in entries {
                match (&e.payload, &i.log) {
                    (EntryPayload::Normal(Change::Log(b)), Some(log)) => {
                        if let Some(t) = log
                            .append_replicated(&b.records)
                            .map_err(|e| sto_err("cannot apply a replicated batch", e))?
                        {
                            last = Some(t);
                        }
                        i.since += b.records.len() as u64;
                    }
                    (EntryPayload::Normal(Change::PolicyKey(k)), _) => {
                        replace_file(&i.qm_dir, sealmq_storage::POLICY_KEY_FILE, k)?;
                    }
                    _ => {}
                }
                if let EntryPayload::Membership(m) = &e.payload {
                    i.membership = StoredMembership::new(Some(e.log_id), m.clone());
                }
                i.applied = Some(e.log_id);
                out.push(());
            }
            self.applied_index
                .store(i.applied.map_or(0, |a| a.index), Ordering::Relaxed);
            if let (Some(t), Some(log)) = (last, &i.log) {
                log.wait(&t)
                    .map_err(|e| sto_err("cannot apply a replicated batch", e))?;
            }
            i.log.is_some() && i.since >= i.every
        };
        if due {
            // Seconds of disk work: the runtime's other tasks (heartbeats, votes) move to
            // another thread meanwhile.
            tokio::task::block_in_place(|| self.make_snapshot())?;
        }
        Ok(out)
    }

    async fn get_snapshot_builder(&mut self) -> Self::SnapshotBuilder {
        self.clone()
    }

    async fn begin_receiving_snapshot(&mut self) -> Result<Box<tokio::fs::File>, StorageError> {
        let f = tokio::fs::OpenOptions::new()
            .create(true)
            .truncate(true)
            .read(true)
            .write(true)
            .mode(0o600)
            .open(self.snap_dir.join(RECEIVING))
            .await
            .map_err(|e| sto_err("cannot receive a snapshot", e))?;
        Ok(Box::new(f))
    }

    async fn install_snapshot(
        &mut self,
        meta: &Meta,
        snapshot: Box<tokio::fs::File>,
    ) -> Result<(), StorageError> {
        snapshot
            .sync_all()
            .await
            .map_err(|e| sto_err("cannot write the snapshot received", e))?;
        drop(snapshot);
        tokio::task::block_in_place(|| {
            let _w = lock(&self.work);
            let started = std::time::Instant::now();
            // The state lock is not held meanwhile: the status reads it.
            let log = {
                let mut i = lock(&self.inner);
                if i.released {
                    return Err(sto_err(
                        "a snapshot was sent to the active instance",
                        "it holds the group's state",
                    ));
                }
                i.log.take()
            };
            if let Some(log) = log {
                log.close();
            }
            replace_file(&self.snap_dir, INSTALLING, b"")?;
            let lsn = self
                .state
                .install_state(&self.snap_dir.join(RECEIVING))
                .map_err(|e| sto_err("cannot install the snapshot received", e))?;
            self.keep(&self.snap_dir.join(RECEIVING), meta.clone())?;
            let mut i = lock(&self.inner);
            self.reopen(&mut i)?;
            i.applied = meta.last_log_id;
            i.membership = meta.last_membership.clone();
            i.since = 0;
            self.applied_index
                .store(i.applied.map_or(0, |a| a.index), Ordering::Relaxed);
            drop(i);
            std::fs::remove_file(self.snap_dir.join(INSTALLING))
                .map_err(|e| sto_err("cannot finish installing the snapshot", e))?;
            tracing::info!(
                "high availability: snapshot {} installed (LSN {lsn}) in {} ms",
                meta.snapshot_id,
                started.elapsed().as_millis()
            );
            Ok(())
        })
    }

    async fn get_current_snapshot(&mut self) -> Result<Option<Snapshot<Ha>>, StorageError> {
        self.current().await
    }
}

impl RaftSnapshotBuilder<Ha> for Machine {
    /// The snapshot a replica made from its checkpoint (openraft is told to take it up only
    /// once there is one).
    async fn build_snapshot(&mut self) -> Result<Snapshot<Ha>, StorageError> {
        self.current().await?.ok_or_else(|| {
            sto_err(
                "a snapshot was asked for",
                "none was made yet (a replica makes one every SEALMQ_HA_SNAPSHOT_BYTES)",
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct NoState;

    impl StateFiles for NoState {
        fn write_state(&self, _: &Path) -> Result<u64, String> {
            Err("no engine in this test".into())
        }

        fn install_state(&self, _: &Path) -> Result<u64, String> {
            Err("no engine in this test".into())
        }
    }

    fn meta(index: u64, lsn: u64) -> Meta {
        Meta {
            last_log_id: Some(openraft::LogId::new(
                openraft::CommittedLeaderId::new(1, 1),
                index,
            )),
            last_membership: Default::default(),
            snapshot_id: format!("{index}-{lsn}"),
        }
    }

    /// A state file as a replica's snapshot crosses the wire: a head saying "clear", then
    /// `body`.
    fn fetched(dir: &Path, body: &[u8]) -> PathBuf {
        let head = sealmq_storage::dse::StreamHead {
            magic: *b"SMQSTATE",
            version: 1,
            sealed: None,
        };
        let p = dir.join("fetching");
        let mut bytes = head.encode().to_vec();
        bytes.extend_from_slice(body);
        std::fs::write(&p, bytes).unwrap();
        p
    }

    #[test]
    fn the_active_instance_takes_up_only_later_snapshots_and_serves_only_its_current_one() {
        let tmp = tempfile::tempdir().unwrap();
        let ha = tmp.path().join(crate::HA_DIR);
        let store = LogStore::open(&ha, None, 1).unwrap();
        let m = Machine::open(
            tmp.path(),
            LogConfig::new(tmp.path().join("log")),
            &store,
            Arc::new(NoState),
        )
        .unwrap();
        let snap = ha.join(SNAPSHOT_DIR);
        assert!(m.read_snapshot("7-40", 0, 10).is_err(), "no snapshot yet");
        // A replica (the engine does not hold its log) makes its own: it takes none up.
        let p = fetched(&snap, b"replica state");
        assert!(m.take_up(&p, meta(7, 40)).is_err());
        m.release_log();
        assert!(m.take_up(&p, meta(7, 40)).unwrap());
        assert_eq!(m.snapshot_meta().unwrap().snapshot_id, "7-40");
        let (data, sealing) = m.read_snapshot("7-40", 0, 1 << 20).unwrap();
        assert_eq!(sealing, None);
        assert_eq!(
            &data[sealmq_storage::dse::StreamHead::LEN..],
            b"replica state"
        );
        let (tail, _) = m.read_snapshot("7-40", 40, 4).unwrap();
        assert_eq!(tail, b"stat", "from an offset, at most what was asked");
        assert!(m.read_snapshot("7-40", 1 << 30, 10).unwrap().0.is_empty());
        assert!(
            m.read_snapshot("6-30", 0, 10).is_err(),
            "a snapshot that is not the current one is not served"
        );
        // An older or equal snapshot is not taken up over it (and its file goes).
        let old = fetched(&snap, b"older");
        assert!(!m.take_up(&old, meta(5, 30)).unwrap());
        assert!(!old.exists());
        assert_eq!(m.snapshot_meta().unwrap().snapshot_id, "7-40");
        // A later one is, and the earlier one is no longer served.
        let later = fetched(&snap, b"later state");
        assert!(m.take_up(&later, meta(9, 70)).unwrap());
        assert!(m.read_snapshot("7-40", 0, 10).is_err());
        let (data, _) = m.read_snapshot("9-70", 0, 1 << 20).unwrap();
        assert_eq!(
            &data[sealmq_storage::dse::StreamHead::LEN..],
            b"later state"
        );
        // What a restart reads back.
        let kept: Option<Meta> = read_small(&snap.join(META)).unwrap();
        assert_eq!(kept.unwrap().snapshot_id, "9-70");
    }
}

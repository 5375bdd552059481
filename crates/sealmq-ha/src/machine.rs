//! The state machine of an instance: its own copy of the queue manager's recovery log.
//!
//! A committed entry's batch is appended to the instance's log at the LSNs the active instance
//! gave its records (sealed under this instance's own data key), unless an engine holds the log
//! (this instance is active: its flusher writes each batch once the group has committed it).
//! What the instance has applied is what its log holds: at open, the last entry whose batch
//! the log holds whole; a batch applied again after a crash skips the records already there.

use crate::logstore::LogStore;
use crate::types::{Change, Entry, Ha, LogId, Membership, StorageError, sto_err};
use openraft::storage::{RaftStateMachine, Snapshot, SnapshotMeta};
use openraft::{EntryPayload, OptionalSend, RaftSnapshotBuilder, StoredMembership};
use sealmq_storage::log::{Log, LogConfig};
use sealmq_types::sync::lock;
use std::io::Cursor;
use std::sync::{Arc, Mutex};

struct Inner {
    /// The instance's recovery log while no engine holds it.
    log: Option<Log>,
    /// The queue manager's directory (its policy key is written there).
    qm_dir: std::path::PathBuf,
    applied: Option<LogId>,
    membership: Membership,
}

#[derive(Clone)]
pub(crate) struct Machine {
    inner: Arc<Mutex<Inner>>,
}

impl Machine {
    /// Opens the instance's log and finds what of the Raft log it holds.
    pub(crate) fn open(
        qm_dir: &std::path::Path,
        log_cfg: LogConfig,
        store: &LogStore,
    ) -> Result<Machine, String> {
        let (log, _) = Log::open(log_cfg, u64::MAX, |_| Ok(())).map_err(|e| e.to_string())?;
        let held = log.last_lsn();
        let mut applied = None;
        let mut membership_at = None;
        for m in store.metas() {
            match m.last_lsn {
                Some(l) if l > held => break,
                Some(_) => applied = Some(m.log_id),
                None if m.membership => membership_at = Some(m.log_id.index),
                None => {}
            }
        }
        let mut membership = StoredMembership::default();
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
            "high availability: this instance's log holds LSN {held}, Raft entry {}",
            applied.map_or(0, |a| a.index)
        );
        Ok(Machine {
            inner: Arc::new(Mutex::new(Inner {
                log: Some(log),
                qm_dir: qm_dir.to_path_buf(),
                applied,
                membership,
            })),
        })
    }

    /// The engine of the now active instance takes the log: it is written through to disk
    /// and closed here (the engine reopens it).
    pub(crate) fn release_log(&self) {
        if let Some(log) = lock(&self.inner).log.take() {
            log.close();
        }
    }

    pub(crate) fn applied(&self) -> Option<LogId> {
        lock(&self.inner).applied
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
        let mut i = lock(&self.inner);
        let mut out = Vec::new();
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
                }
                (EntryPayload::Normal(Change::PolicyKey(k)), _) => {
                    crate::logstore::replace_file(&i.qm_dir, sealmq_storage::POLICY_KEY_FILE, k)?;
                }
                _ => {}
            }
            if let EntryPayload::Membership(m) = &e.payload {
                i.membership = StoredMembership::new(Some(e.log_id), m.clone());
            }
            i.applied = Some(e.log_id);
            out.push(());
        }
        if let (Some(t), Some(log)) = (last, &i.log) {
            log.wait(&t)
                .map_err(|e| sto_err("cannot apply a replicated batch", e))?;
        }
        Ok(out)
    }

    async fn get_snapshot_builder(&mut self) -> Self::SnapshotBuilder {
        self.clone()
    }

    async fn begin_receiving_snapshot(&mut self) -> Result<Box<Cursor<Vec<u8>>>, StorageError> {
        Ok(Box::new(Cursor::new(Vec::new())))
    }

    async fn install_snapshot(
        &mut self,
        _meta: &SnapshotMeta<u64, openraft::BasicNode>,
        _snapshot: Box<Cursor<Vec<u8>>>,
    ) -> Result<(), StorageError> {
        Err(sto_err(
            "a snapshot was offered",
            "this sealmq catches instances up from the Raft log only (docs/ha.md)",
        ))
    }

    async fn get_current_snapshot(&mut self) -> Result<Option<Snapshot<Ha>>, StorageError> {
        Ok(None)
    }
}

impl RaftSnapshotBuilder<Ha> for Machine {
    async fn build_snapshot(&mut self) -> Result<Snapshot<Ha>, StorageError> {
        Err(sto_err(
            "a snapshot was asked for",
            "this sealmq keeps the whole Raft log (docs/ha.md)",
        ))
    }
}

//! The active instance's snapshots (docs/ha.md, "Snapshots and log compaction").
//!
//! A replica snapshots its own copy of the queue manager (machine.rs); the active instance
//! cannot do so without stopping its queue manager while the whole state is written out. It
//! takes up its replicas' snapshots instead: every [`EVERY`], once its Raft log after its own
//! snapshot is half a snapshot interval, it asks the others for the description of their
//! current snapshot, and when one stands at a later Raft entry than its
//! own — and its own log is on its disk through that snapshot's LSN (it syncs it first: the
//! active instance's log is not synced per batch, the group holds each) — it fetches the state
//! file in chunks over the group's TLS ([`Network::fetch_snapshot`]), seals it under its own
//! data key as the chunks arrive, and makes it its current snapshot. openraft then purges the
//! Raft log before it, as on a replica, and sends that snapshot to an instance too far behind.
//! The fetched state's entries are in the active instance's own log already: it wrote them.

use crate::Group;
use crate::machine::{Machine, Meta};
use crate::net::Network;
use crate::snapwire::SnapSeal;
use crate::types::{Ha, NodeId};
use openraft::{Raft, ServerState};
use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// How often the active instance looks for a later snapshot among its replicas.
pub(crate) const EVERY: Duration = Duration::from_secs(5);
/// The snapshot being fetched, under `ha/snapshot/`.
const FETCHING: &str = "fetching";

/// Syncs the active engine's log; returns the LSN through which it is on this disk.
pub type LocalSync = Box<dyn Fn() -> Result<u64, String> + Send + Sync>;

/// What the take-up task works with.
pub(crate) struct TakeUp {
    pub(crate) raft: Raft<Ha>,
    pub(crate) group: Arc<Group>,
    pub(crate) asker: Network,
    pub(crate) machine: Machine,
    pub(crate) store: crate::logstore::LogStore,
    pub(crate) seal: Arc<SnapSeal>,
    pub(crate) snap_dir: PathBuf,
    /// Set once the engine serves on this instance (`Node::set_local_sync`).
    pub(crate) sync: Arc<OnceLock<LocalSync>>,
}

/// The LSN a snapshot's state stands at (its id is `<entry>-<LSN>`).
fn lsn_of(meta: &Meta) -> Option<u64> {
    meta.snapshot_id.rsplit_once('-')?.1.parse().ok()
}

fn index_of(meta: &Meta) -> u64 {
    meta.last_log_id.map_or(0, |l| l.index)
}

impl TakeUp {
    /// Runs until the runtime ends.
    pub(crate) async fn run(self) {
        loop {
            tokio::time::sleep(EVERY).await;
            let leading = self.raft.metrics().borrow().state == ServerState::Leader;
            if !leading || !self.machine.is_released() {
                continue;
            }
            let Some(sync) = self.sync.get() else {
                continue;
            };
            // The replicas are asked only once the Raft log after this instance's snapshot
            // is half a snapshot interval: an idle group makes no connections for it.
            let have = self.machine.snapshot_meta().map_or(0, |m| index_of(&m));
            if self.store.bytes_after(have) < crate::machine::snapshot_every() / 2 {
                continue;
            }
            if let Err(e) = self.once(sync, have).await {
                tracing::warn!("high availability: no replica's snapshot was taken up: {e}");
                let _ = std::fs::remove_file(self.snap_dir.join(FETCHING));
            }
        }
    }

    /// The newest snapshot among the replicas later than this instance's own (at entry
    /// `have`), if any.
    async fn newest(&self, have: u64) -> Option<(NodeId, Meta)> {
        // A snapshot past what this instance applied is not taken up (yet): openraft's
        // snapshot may not stand ahead of its state machine.
        let applied = self.machine.applied_index();
        let me = self.group.me();
        let mut best: Option<(NodeId, Meta)> = None;
        for id in (1..=self.group.instances.len() as u64).filter(|i| *i != me) {
            match self.asker.snapshot_meta(id).await {
                Ok(Some(m))
                    if index_of(&m) > have
                        && index_of(&m) <= applied
                        && lsn_of(&m).is_some()
                        && best
                            .as_ref()
                            .is_none_or(|(_, b)| index_of(&m) > index_of(b)) =>
                {
                    best = Some((id, m));
                }
                Ok(_) => {}
                Err(e) => tracing::debug!("high availability: instance {id}'s snapshot: {e}"),
            }
        }
        best
    }

    async fn once(&self, sync: &LocalSync, have: u64) -> Result<(), String> {
        let Some((from, meta)) = self.newest(have).await else {
            return Ok(());
        };
        let lsn = lsn_of(&meta).unwrap_or(u64::MAX);
        let synced = tokio::task::block_in_place(sync)?;
        if synced < lsn {
            return Err(format!(
                "this instance's log is on its disk through LSN {synced}, snapshot {} stands \
                 at LSN {lsn}",
                meta.snapshot_id
            ));
        }
        let started = std::time::Instant::now();
        let path = self.snap_dir.join(FETCHING);
        let mut file = sealmq_storage::create_private_file(&path)
            .map_err(|e| format!("cannot create {}: {e}", path.display()))?;
        let mut sealing = None;
        let bytes = self
            .asker
            .fetch_snapshot(from, &meta.snapshot_id, |offset, mut data| {
                self.seal.seal_own(&mut sealing, offset, &mut data)?;
                tokio::task::block_in_place(|| file.write_all(&data))
                    .map_err(|e| format!("cannot write {}: {e}", path.display()))
            })
            .await?;
        tokio::task::block_in_place(|| file.sync_all())
            .map_err(|e| format!("cannot sync {}: {e}", path.display()))?;
        drop(file);
        let name = self
            .group
            .instances
            .get(from as usize - 1)
            .map_or_else(|| from.to_string(), |i| i.name.clone());
        let id = meta.snapshot_id.clone();
        if self
            .machine
            .take_up(&path, meta)
            .map_err(|e| e.to_string())?
        {
            tracing::info!(
                "high availability: snapshot {id} taken up from instance {name} ({bytes} bytes \
                 in {} ms): the Raft log before it is purged",
                started.elapsed().as_millis()
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(id: &str, index: Option<u64>) -> Meta {
        Meta {
            last_log_id: index
                .map(|i| openraft::LogId::new(openraft::CommittedLeaderId::new(1, 1), i)),
            last_membership: Default::default(),
            snapshot_id: id.to_string(),
        }
    }

    #[test]
    fn a_snapshot_id_names_its_entry_and_lsn() {
        assert_eq!(lsn_of(&meta("812-40961", Some(812))), Some(40961));
        assert_eq!(index_of(&meta("812-40961", Some(812))), 812);
        assert_eq!(lsn_of(&meta("garbage", None)), None, "no LSN: not taken up");
        assert_eq!(lsn_of(&meta("3-x", None)), None);
        assert_eq!(index_of(&meta("0-0", None)), 0);
    }
}

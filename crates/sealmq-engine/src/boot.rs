//! Creating and starting a queue manager: the queue manager recovers its state from its
//! checkpoint and log (`qm/`), then reads its security policies from their queue through the
//! MQI (`policies.rs`), which sits above it.

use crate::error::MqResult;
use crate::qm::{QmConfig, QueueManager, StartReport};
use std::sync::Arc;

/// Creates a new queue manager in `cfg.dir` with its system objects and starts it.
pub fn create(cfg: QmConfig) -> MqResult<Arc<QueueManager>> {
    let qm = QueueManager::create_new(cfg)?;
    crate::policies::load(&qm)?;
    Ok(qm)
}

/// Starts an existing queue manager: recovery (what it did is in the report), then its
/// policies, each checked against the policy key before it is trusted.
pub fn start(cfg: QmConfig) -> MqResult<(Arc<QueueManager>, StartReport)> {
    let (qm, report) = QueueManager::recover(cfg)?;
    crate::policies::load(&qm)?;
    Ok((qm, report))
}

/// Starts an instance of a replicated queue manager that has become active: as [`start`], and
/// when the group's log is still empty, the queue manager is made as [`create`] makes it.
pub fn start_or_create(cfg: QmConfig) -> MqResult<(Arc<QueueManager>, StartReport)> {
    let (qm, report) = QueueManager::recover_or_make(cfg)?;
    crate::policies::load(&qm)?;
    Ok((qm, report))
}

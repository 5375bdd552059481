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

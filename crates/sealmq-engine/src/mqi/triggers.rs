//! Putting trigger messages (SPEC §6): the queue manager decides that a trigger event happened
//! and makes the trigger message (`qm/triggers.rs`); it goes to the initiation queue as any
//! message does, non-persistent as MQ's, put by the queue manager itself (origin user SYSTEM,
//! which no application put can carry: a trigger monitor trusts only those).

use super::{Connection, PutOptions};
use crate::md::{Md, Persistence};
use crate::objects::QueueDef;
use crate::qm::QueueManager;
use crate::trigger::FORMAT;
use std::sync::Arc;

/// Puts the trigger message for `def`, a queue that had a trigger event, when the queue
/// manager makes one; a put that fails is logged (the trigger event is lost, as in MQ).
pub(crate) fn fire(qm: &Arc<QueueManager>, def: &QueueDef) {
    let Some(tm) = qm.trigger_message(def) else {
        return;
    };
    let mut md = Md {
        format: FORMAT.into(),
        persistence: Persistence::NotPersistent,
        ..Default::default()
    };
    let put = Connection::connect_internal(qm)
        .and_then(|c| c.put1(&def.init_q, &mut md, &tm.encode(), PutOptions::default()));
    match put {
        Ok(()) => tracing::info!(
            "trigger message for queue {} put on {}",
            def.name,
            def.init_q
        ),
        Err(e) => tracing::warn!(
            "no trigger message for queue {}: the put to {} failed: {e}",
            def.name,
            def.init_q
        ),
    }
}

//! `sealmq ha switch`: how the active instance hands its role to another in sync. Its own
//! module because both ends use it: the node makes it, the network serves the `Switch` request
//! with it.

use crate::Group;
use crate::net::Network;
use crate::status::{Role, Status};
use crate::types::{Ha, NodeId};
use openraft::{BasicNode, Raft, RaftMetrics, ServerState};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// How the active instance hands its role over (`sealmq ha switch`): the third instance holds
/// its elections, the target stands for election until elected, and this instance steps down
/// (its process starts again as a replica that holds its own elections a while): the others'
/// leases on it run out, and the target, in sync, wins.
pub(crate) struct Handover {
    pub(crate) raft: Raft<Ha>,
    pub(crate) group: Arc<Group>,
    pub(crate) asker: Network,
    /// Set once the target stands: the orchestrator steps this instance down.
    pub(crate) handing: Arc<AtomicBool>,
    /// Set while the role is handed over: the engine's batches are refused from then on, so
    /// that the target can hold every committed entry when it stands.
    pub(crate) fence: Arc<AtomicBool>,
}

/// How long the instances that are not the target stand for no election during a switch.
pub const SWITCH_HOLD: Duration = Duration::from_secs(3);
/// The most entries a switch's target may lack when it is asked to stand.
const SWITCH_BACKLOG: u64 = 10_000;

impl Handover {
    /// The active instance's view with each other instance asked whether it is there: one
    /// that does not answer is not in sync, however much of the log it held when it went.
    pub(crate) async fn live(&self, mut v: Status) -> Status {
        for i in &mut v.instances {
            if i.name != self.group.instance
                && let Some(id) = self.group.id_of(&i.name)
                && !self.asker.ping(id).await
            {
                i.in_sync = Some(false);
                i.role = Role::Unknown;
            }
        }
        let n = v
            .instances
            .iter()
            .filter(|i| i.in_sync == Some(true))
            .count();
        v.quorum = Some(format!("{n}/{}", v.instances.len()));
        v
    }

    pub(crate) async fn run(&self, to: &str) -> Result<(), String> {
        let m = self.raft.metrics().borrow().clone();
        let me = self.group.me();
        if !(m.state == ServerState::Leader && m.current_leader == Some(me)) {
            return Err("this instance is not the active one".into());
        }
        let x = self
            .group
            .id_of(to)
            .ok_or_else(|| format!("{to} is not an instance of this group"))?;
        if x == me {
            return Ok(());
        }
        let behind = |m: &RaftMetrics<NodeId, BasicNode>| {
            let matched = m
                .replication
                .as_ref()
                .and_then(|r| r.get(&x).copied().flatten())
                .map_or(0, |l| l.index);
            m.last_log_index.unwrap_or(0).saturating_sub(matched)
        };
        if behind(&m) > SWITCH_BACKLOG {
            return Err(format!(
                "instance {to} is {} entries behind; it cannot be made active now",
                behind(&m)
            ));
        }
        // No new batch from here on; the target catches up with what was committed.
        self.fence.store(true, Ordering::Relaxed);
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        loop {
            let m = self.raft.metrics().borrow().clone();
            if behind(&m) == 0 {
                break;
            }
            if std::time::Instant::now() > deadline {
                self.fence.store(false, Ordering::Relaxed);
                return Err(format!("instance {to} did not catch up within 5 s"));
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        if let Some(third) = (1..=self.group.instances.len() as u64).find(|i| *i != me && *i != x) {
            // A third instance that is down cannot stand anyway.
            let _ = self.asker.hold(third, SWITCH_HOLD.as_millis() as u64).await;
        }
        self.asker.elect(x).await?;
        self.handing.store(true, Ordering::Relaxed);
        tracing::info!("high availability: handing the active role to {to}");
        Ok(())
    }
}

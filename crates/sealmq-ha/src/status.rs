//! What `sealmq status` and `dspmq -o nativeha` show of a replicated queue manager: each
//! instance's role, whether it is in sync, and the group's view (`<QM dir>/ha/status.json`).

use serde::{Deserialize, Serialize};

/// An instance's role, as `dspmq -o nativeha` names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Active,
    Replica,
    Unknown,
}

impl Role {
    pub fn name(self) -> &'static str {
        ["active", "replica", "unknown"][self as usize]
    }
}

/// One instance as this one sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstanceStatus {
    pub name: String,
    pub role: Role,
    /// Whether it holds every entry the active instance has (known on the active instance;
    /// left out elsewhere).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_sync: Option<bool>,
    /// Bytes of Raft log it lacks (known on the active instance; left out elsewhere).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backlog: Option<u64>,
    pub replication_address: String,
}

/// What `sealmq status` shows of a replicated queue manager (`<QM dir>/ha/status.json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Status {
    pub instance: String,
    pub role: Role,
    /// The active instance, when one is known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active: Option<String>,
    pub term: u64,
    /// The last Raft entry this instance holds, and the last it applied.
    pub log_index: u64,
    pub applied_index: u64,
    /// Instances holding every committed entry, of the group (e.g. 3/3), when active.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quorum: Option<String>,
    pub instances: Vec<InstanceStatus>,
    /// Elections this instance has seen begin (terms since it started).
    pub elections: u64,
}

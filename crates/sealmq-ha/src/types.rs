//! The Raft type configuration: what an entry carries between instances.

use serde::{Deserialize, Serialize};
use std::io::Cursor;

/// One batch of the active instance's recovery log: records framed as in a log segment
/// (unencrypted: each instance seals its own copy), LSNs `first_lsn..=last_lsn`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Batch {
    pub first_lsn: u64,
    pub last_lsn: u64,
    pub records: Vec<u8>,
}

/// What an entry of the group's log changes on every instance.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Change {
    /// A batch of the active instance's recovery log.
    Log(Batch),
    /// The queue manager's policy key (`policy.key`): the stored policies' tags verify on
    /// whichever instance is active.
    PolicyKey(Vec<u8>),
}

openraft::declare_raft_types!(
    /// sealmq's Raft types: entries carry log batches; nothing is answered but "committed".
    pub Ha:
        D = Change,
        R = (),
        NodeId = u64,
        Node = openraft::BasicNode,
        Entry = openraft::Entry<Ha>,
        SnapshotData = Cursor<Vec<u8>>,
        AsyncRuntime = openraft::TokioRuntime,
);

pub type NodeId = u64;
pub type LogId = openraft::LogId<NodeId>;
pub type Entry = openraft::Entry<Ha>;
pub type StorageError = openraft::StorageError<NodeId>;
pub type Membership = openraft::StoredMembership<NodeId, openraft::BasicNode>;

/// A storage error for openraft from an I/O or format failure.
pub fn sto_err(what: &str, e: impl std::fmt::Display) -> StorageError {
    openraft::StorageError::from_io_error(
        openraft::ErrorSubject::Store,
        openraft::ErrorVerb::Write,
        std::io::Error::other(format!("{what}: {e}")),
    )
}

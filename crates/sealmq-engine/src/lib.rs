//! # sealmq-engine: the queue manager in process
//!
//! - [`objects`]: queue and queue-manager definitions with MQ's attributes and defaults.
//! - [`md`]: message descriptors and messages.
//! - [`queue`]: a local queue at run time (delivery order, unit-of-work states, waiters).
//! - [`records`]: what the queue manager writes to the log and to checkpoints.
//! - [`qm`]: the queue manager: recovery, checkpoints, administration (every
//!   `impl QueueManager` is there).
//! - [`mqi`]: connections ([`Connection::connect`]) and the MQI calls.
//! - [`policies`], [`deadletter`], [`intercept`]: work done through the MQI.
//! - [`create`] and [`start`]: a queue manager's recovery, then its policies.
//!
//! Each module uses only those below it (`tests/layers.rs`). The concurrency design (locks,
//! their order, why a busy queue does not hold up others) is in ARCHITECTURE.md and at the top
//! of `qm/mod.rs`.

pub mod authinfo;
pub mod authority;
mod boot;
pub mod channels;
pub mod chlauth;
pub mod conns;
pub mod deadletter;
/// The headers applications read (MQDEAD, MQXMIT): in `sealmq-mqi`, named here as before.
pub use sealmq_mqi::{dlh, trigger, xqh};
pub mod error;
pub mod intercept;
/// Message descriptors and messages (shared with applications through `sealmq-mqi`).
pub use sealmq_mqi::md;
pub mod mqi;
pub mod noted;
pub mod objects;
pub mod policies;
pub mod qm;
pub mod queue;
pub mod records;
pub mod services;
pub mod stats;
pub mod subs;
pub mod topics;

pub use boot::{create, start, start_or_create};
pub use error::{MqError, MqResult};
pub use md::{Md, Message, MsgType, Persistence};
pub use mqi::{Browse, Connection, GetOptions, Got, Hobj, OpenOptions, PutOptions};
pub use objects::{QType, QmgrDef, QueueDef};
pub use qm::{
    ChlAuthAction, QmConfig, QueueManager, QueueStatus, Replaced, ServiceObject, StartReport,
};
pub use queue::Match;
pub use sealmq_storage::log::{ReplicaStatus, ReplicationStatus};

/// What the server process takes from storage beside the queue manager, named here so that
/// it reaches storage through the engine (issue 43): the data-at-rest keyring and the
/// secrets it reads, the log's replicator, free space, and files private to the queue
/// manager's user.
pub mod host {
    pub use sealmq_storage::dse::Dse;
    pub use sealmq_storage::log::ReplicatorRef;
    pub use sealmq_storage::space::free_space;
    pub use sealmq_storage::{create_private_dir, create_private_file};
}

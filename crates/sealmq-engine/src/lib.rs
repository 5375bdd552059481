//! # sealmq-engine: the queue manager in process
//!
//! - [`objects`]: queue and queue-manager definitions with MQ's attributes and defaults.
//! - [`md`]: message descriptors and messages.
//! - [`queue`]: a local queue at run time (delivery order, unit-of-work states, waiters).
//! - [`qm`]: the queue manager: start and recovery, checkpoints, administration.
//! - [`mqi`]: connections and the MQI calls.
//! - [`records`]: what the queue manager writes to the log and to checkpoints.
//!
//! The concurrency design (locks, their order, why a busy queue does not hold up others) is in
//! ARCHITECTURE.md and at the top of `qm.rs`.

pub mod authinfo;
pub mod authority;
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
pub mod routing;
pub mod services;
pub mod stats;

pub use error::{MqError, MqResult};
pub use md::{Md, Message, MsgType, Persistence};
pub use mqi::{Browse, Connection, GetOptions, Got, Hobj, OpenOptions, PutOptions};
pub use objects::{QType, QmgrDef, QueueDef};
pub use qm::{ChlAuthAction, QmConfig, QueueManager, QueueStatus, StartReport};
pub use queue::Match;

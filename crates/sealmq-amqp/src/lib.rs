//! # sealmq-amqp: AMQP 1.0 channels (issue 15)
//!
//! MQ's `CHLTYPE(AMQP)` channels: AMQP 1.0 applications (Qpid JMS, python-qpid-proton, rhea,
//! AMQP.Net Lite) connect to the channel's PORT and put to and get from queues with their
//! own clients. The protocol (framing, SASL, sessions, links, flow control) is the
//! `fe2o3-amqp` crate's acceptor; this crate maps links to queue handles and deliveries to
//! puts and gets under units of work (docs/amqp.md).

mod common;
pub mod held;
pub mod incoming;
pub mod jms;
pub mod link;
pub mod listener;
pub mod mapping;
pub mod outgoing;
pub mod publish;
mod refusals;
pub mod sasl;
mod session;
pub mod status;
pub mod subscribe;
pub mod temptopic;
pub mod txn;
pub mod unsub;

pub use listener::{AmqpChannel, Services};
pub use mapping::{to_amqp, to_mq};
pub use sasl::Verify;

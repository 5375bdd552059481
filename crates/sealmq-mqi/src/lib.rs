//! # sealmq-mqi: what an application and the queue manager share
//!
//! - [`jmsbody`]: JMS MapMessage and StreamMessage bodies as IBM MQ keeps them (XML).
//! - [`md`]: the message descriptor and messages, and their encoding.
//! - [`options`]: the options of open, put and get, what a get matches on and what it returns.
//! - [`policy`]: the binary form of a security policy.
//! - [`props`]: message properties (typed name/value pairs).
//! - [`selector`]: JMS message selectors on properties and header fields.
//!
//! An application links this crate with the client, wire and protection crates; the queue
//! manager (engine and storage) is not part of it.

pub mod dlh;
pub mod jmsbody;
pub mod md;
pub mod options;
pub mod policy;
pub mod props;
pub mod selector;
pub mod trigger;
pub mod xqh;

pub use md::{Md, Message, MsgId, MsgType, NONE_ID, Persistence, now_ms};
pub use options::{Browse, GetOptions, Got, HeaderLen, Match, OpenOptions, PutOptions};
pub use props::{PropValue, Property};

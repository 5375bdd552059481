//! # sealmq-mqsc: administration commands
//!
//! MQSC with MQ's syntax (SPEC §2.2): `VERB OBJTYPE(name) KEYWORD(value) ...`, quoted strings,
//! `+`/`-` continuation, `*` comments, case-insensitive keywords, `LIKE`, `REPLACE|NOREPLACE`,
//! generic names in DISPLAY. [`lexer`] splits and tokenises, [`parse`] builds a [`Command`],
//! [`exec`] runs it against a [`sealmq_engine::QueueManager`] and renders text or JSON. Errors
//! point at the token that is wrong. Our own message ids (`SMQnnnnI/E`).

mod args;
mod authrec;
pub(crate) mod chl;
mod chlauth;
mod chldef;
mod display;
pub mod exec;
mod kind;
mod known;
pub mod lexer;
pub mod parse;
mod policy;
mod qmgr;
mod queues;
mod services;
mod status;
mod subs;
mod topics;

pub use exec::{Response, render_json, render_text, run};
pub use parse::{Command, parse};

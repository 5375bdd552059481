//! # sealmq-mqsc: administration commands
//!
//! MQSC with MQ's syntax (SPEC §2.2): `VERB OBJTYPE(name) KEYWORD(value) ...`, quoted strings,
//! `+`/`-` continuation, `*` comments, case-insensitive keywords, `LIKE`, `REPLACE|NOREPLACE`,
//! generic names in DISPLAY. [`lexer`] splits and tokenises, [`parse`] builds a [`Command`],
//! [`exec`] runs it against a [`sealmq_engine::QueueManager`] and renders text or JSON. Errors
//! point at the token that is wrong. Answers carry MQ's message ids (`AMQ8006I: IBM MQ queue
//! created.`) where MQ has one for the answer, sealmq's (`SMQnnnnI:`) elsewhere; [`transcript`]
//! lays a script out as runmqsc does, [`run_as`] runs it with a user's authority.

mod args;
mod authrec;
mod authz;
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
pub mod transcript;

pub use exec::{
    Response, is_end, render_json, render_reply, render_text, run, run_as, syntax_error,
};
pub use parse::{Command, parse};

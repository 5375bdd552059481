//! The native protocol's front end: the listeners (TCP, TLS, the local socket) and the event
//! loop that serves their connections (`evloop`), the thread-per-connection server beside it
//! (`conn`, `SEALMQ_SERVER=threads`), and the standby instance's refusing listener (`standby`).
//! A connection is admitted by `crate::admit`, its requests served by `crate::session`, a
//! channel's connection handed to `crate::chinit`.

pub(crate) mod conn;
pub(crate) mod evloop;
pub(crate) mod listeners;
pub mod standby;

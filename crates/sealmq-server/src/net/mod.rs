//! The native protocol's front end: the listeners (TCP, TLS, the local socket), the event loop
//! that serves their connections (`evloop`), what every connection goes through before its
//! first request (`welcome`: the first frame's deadline, Hello and admission, DISCINT), and
//! the standby instance's refusing listener (`standby`). A connection is admitted by
//! `crate::admit`, its requests served by `crate::session`, a channel's connection handed to
//! `crate::chinit`.

pub(crate) mod evloop;
pub(crate) mod listeners;
pub mod standby;
pub(crate) mod welcome;

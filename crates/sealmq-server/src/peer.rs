//! Who is on the other end of a connection, and what a TCP application's SVRCONN channel makes
//! of it (principal, TLS requirements).

use std::net::TcpStream;

/// Who is on the other end of a connection.
pub(crate) enum Peer {
    /// The Unix socket: the OS user, and whether it is the queue manager's own.
    Local { user: String, admin: bool, pid: u32 },
    /// TCP, with what TLS established (if any), the peer's address and the socket.
    Tcp {
        tls: Option<TlsPeer>,
        addr: String,
        sock: Option<TcpStream>,
    },
}

impl Peer {
    /// Who, for the log.
    pub(crate) fn describe(&self) -> String {
        match self {
            Peer::Local { user, .. } => format!("local user {user}"),
            Peer::Tcp { addr, .. } => addr.clone(),
        }
    }

    /// Where the connection came from, as DISPLAY CONN shows it.
    pub(crate) fn origin(&self, channel: &str) -> sealmq_engine::conns::Origin {
        match self {
            Peer::Local { pid, .. } => sealmq_engine::conns::Origin {
                pid: (*pid != 0).then_some(*pid),
                channel: String::new(),
                conname: String::new(),
            },
            Peer::Tcp { addr, .. } => sealmq_engine::conns::Origin {
                pid: None,
                channel: if channel.is_empty() {
                    sealmq_engine::channels::DEFAULT_SVRCONN.into()
                } else {
                    channel.to_string()
                },
                conname: crate::chinit::host_port(addr),
            },
        }
    }
}

pub(crate) struct TlsPeer {
    /// The client certificate's subject DN.
    pub(crate) dn: String,
    /// The negotiated cipher suite, e.g. TLS13_AES_256_GCM_SHA384.
    pub(crate) suite: String,
}

/// `APP.*` matches names starting with `APP.`; `*` and the empty pattern match all.
pub(crate) fn generic_match(pattern: &str, name: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => pattern.is_empty() || pattern == name,
    }
}

//! Who is on the other end of a connection, and what a TCP application's SVRCONN channel makes
//! of it (principal, TLS requirements).

use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::sync::Arc;
use std::time::Duration;

/// Who is on the other end of a connection.
pub(crate) enum Peer {
    /// The Unix socket: the OS user, whether it is the queue manager's own, its process, and
    /// the socket (to notice the application going away while a get waits).
    Local {
        user: String,
        admin: bool,
        pid: u32,
        sock: Option<UnixStream>,
    },
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

/// How often a waiting get of a local application looks whether it is still there (the
/// Unix socket has no heartbeat interval of its own).
const LOCAL_LIVENESS: Duration = Duration::from_secs(5);

impl Peer {
    /// How often, and how, a get that waits asks whether the application is still there:
    /// every HBINT of its SVRCONN channel (MQ's heartbeat interval; none with HBINT(0)), or
    /// every 5 s on the Unix socket, by looking whether its socket hung up.
    pub(crate) fn liveness(
        &self,
        hbint: Option<u32>,
    ) -> Option<(Duration, Arc<dyn Fn() -> bool + Send + Sync>)> {
        use std::os::fd::{AsFd, OwnedFd};
        let (every, fd): (Duration, OwnedFd) = match self {
            Peer::Local { sock: Some(s), .. } => (LOCAL_LIVENESS, s.try_clone().ok()?.into()),
            Peer::Tcp { sock: Some(s), .. } => {
                let secs = hbint.filter(|h| *h > 0)?;
                (Duration::from_secs(secs.into()), s.try_clone().ok()?.into())
            }
            _ => return None,
        };
        Some((every, Arc::new(move || !crate::os::hung_up(fd.as_fd()))))
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

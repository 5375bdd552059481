//! Who is on the other end of a connection, and what a TCP application's SVRCONN channel makes
//! of it (principal, TLS requirements).

use crate::Sock;
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
                conname: host_port(addr),
            },
        }
    }
}

/// How often a waiting get of a local application looks whether it is still there (the
/// Unix socket has no heartbeat interval of its own).
const LOCAL_LIVENESS: Duration = Duration::from_secs(5);
/// The least time a write to a client may make no progress before the connection is ended.
const WRITE_STALL_MIN: Duration = Duration::from_secs(5);
/// On the Unix socket (no heartbeat interval of its own).
const LOCAL_WRITE_STALL: Duration = Duration::from_secs(60);

impl Peer {
    /// Another handle on the connection's socket, if it has one.
    fn sock(&self) -> Option<Sock> {
        match self {
            Peer::Local { sock: Some(s), .. } => s.try_clone().ok().map(Sock::Unix),
            Peer::Tcp { sock: Some(s), .. } => s.try_clone().ok().map(Sock::Tcp),
            _ => None,
        }
    }

    /// The channel's heartbeat interval on TCP (none with HBINT(0)), `local` on the Unix
    /// socket.
    fn interval(&self, hbint: Option<u32>, local: Duration) -> Option<Duration> {
        match self {
            Peer::Local { .. } => Some(local),
            Peer::Tcp { .. } => hbint
                .filter(|h| *h > 0)
                .map(|h| Duration::from_secs(h.into())),
        }
    }

    /// How often, and how, a get that waits asks whether the application is still there:
    /// every HBINT of its SVRCONN channel (MQ's heartbeat interval; none with HBINT(0)), or
    /// every 5 s on the Unix socket, by looking whether its socket hung up.
    pub(crate) fn liveness(
        &self,
        hbint: Option<u32>,
    ) -> Option<(Duration, Arc<dyn Fn() -> bool + Send + Sync>)> {
        let every = self.interval(hbint, LOCAL_LIVENESS)?;
        let s = self.sock()?;
        Some((every, Arc::new(move || !s.hung_up())))
    }

    /// A client that reads nothing while the queue manager has something for it (answers,
    /// asynchronous consume's pushes) is ended once a write has made no progress for its
    /// channel's heartbeat interval (at least 5 s; 60 s on the Unix socket; none with
    /// HBINT(0)) — each blocked send may end with the last bytes that fit, so the end comes
    /// after one to three such intervals: its threads and pusher are freed and its unit of
    /// work and unsettled batches backed out, instead of waiting on it forever.
    pub(crate) fn limit_write_stall(&self, hbint: Option<u32>) {
        if let (Some(stall), Some(s)) = (self.interval(hbint, LOCAL_WRITE_STALL), self.sock()) {
            s.set_write_timeout(stall.max(WRITE_STALL_MIN));
        }
    }

    /// Shuts the connection's socket down (both ways), so that its reader wakes and the
    /// connection ends: after a write failed or stalled.
    pub(crate) fn shutter(&self) -> Option<Box<dyn Fn() + Send + Sync>> {
        let s = self.sock()?;
        Some(Box::new(move || s.shutdown()))
    }
}

/// The writer of a connection: a write or flush that fails (the client stopped reading past
/// the write-stall limit, or went away) shuts the socket down, so the whole connection ends —
/// its request loop too — and what it held is backed out.
pub(crate) struct EndOnFailure<W> {
    pub(crate) w: W,
    pub(crate) end: Option<Box<dyn Fn() + Send + Sync>>,
}

impl<W: std::io::Write> std::io::Write for EndOnFailure<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.w.write(buf).inspect_err(|_| self.fail())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.w.flush().inspect_err(|_| self.fail())
    }
}

impl<W> EndOnFailure<W> {
    fn fail(&self) {
        if let Some(end) = &self.end {
            end();
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

/// A connection name as MQ shows it: `host(port)` (a peer address `h:p` converted).
pub fn host_port(c: &str) -> String {
    if c.is_empty() || c.contains('(') {
        return c.to_string();
    }
    match c.rsplit_once(':') {
        Some((h, p)) if p.chars().all(|d| d.is_ascii_digit()) => {
            format!("{}({p})", h.trim_matches(['[', ']']))
        }
        _ => c.to_string(),
    }
}

//! Who is on the other end of a connection, and what a TCP application's SVRCONN channel makes
//! of it (principal, TLS requirements).

/// Who is on the other end of a connection.
#[derive(Clone)]
pub(crate) enum Peer {
    /// The Unix socket: the OS user, whether it is the queue manager's own, and its process.
    Local { user: String, admin: bool, pid: u32 },
    /// TCP, with what TLS established (if any) and the peer's address.
    Tcp { tls: Option<TlsPeer>, addr: String },
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
                ..Default::default()
            },
            Peer::Tcp { addr, tls } => sealmq_engine::conns::Origin {
                pid: None,
                channel: if channel.is_empty() {
                    sealmq_engine::channels::DEFAULT_SVRCONN.into()
                } else {
                    channel.to_string()
                },
                conname: host_port(addr),
                secprot: tls
                    .as_ref()
                    .map(|t| t.negotiated.secprot.clone())
                    .unwrap_or_default(),
                sslgroup: tls
                    .as_ref()
                    .map(|t| t.negotiated.group.clone())
                    .unwrap_or_default(),
            },
        }
    }
}

#[derive(Clone)]
pub(crate) struct TlsPeer {
    /// The client certificate's subject DN.
    pub(crate) dn: String,
    /// The negotiated cipher suite, e.g. TLS13_AES_256_GCM_SHA384.
    pub(crate) suite: String,
    /// The protocol (SECPROT) and key-exchange group (SSLGROUP) negotiated.
    pub(crate) negotiated: sealmq_wire::tls::Agreed,
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

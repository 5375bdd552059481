//! Who is on the other end of a connection, and what a TCP application's SVRCONN channel makes
//! of it (principal, TLS requirements).

use sealmq_engine::QueueManager;
use std::net::TcpStream;

/// Who is on the other end of a connection.
pub(crate) enum Peer {
    /// The Unix socket: the OS user, and whether it is the queue manager's own.
    Local { user: String, admin: bool },
    /// TCP, with what TLS established (if any), the peer's address and the socket.
    Tcp {
        tls: Option<TlsPeer>,
        addr: String,
        sock: Option<TcpStream>,
    },
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

pub(crate) fn suite_name(s: &str) -> String {
    let u = s.to_ascii_uppercase();
    u.trim_start_matches("TLS13_")
        .trim_start_matches("TLS_")
        .to_string()
}

/// The principal of a TCP application through SVRCONN channel `name`: its channel must exist;
/// SSLCIPH requires TLS (and that suite), SSLPEER filters the certificate DN, MCAUSER replaces
/// the principal.
pub(crate) fn channel_principal(
    qm: &QueueManager,
    name: &str,
    tls: Option<&TlsPeer>,
) -> Result<(String, bool), (u32, String)> {
    use sealmq_engine::channels::{ChlType, DEFAULT_SVRCONN, sslpeer_matches};
    let name = if name.is_empty() {
        DEFAULT_SVRCONN
    } else {
        name
    };
    let fail = |reason: u32, detail: String| (reason, detail);
    let def = match qm.channel(name) {
        Some(d) if d.chltype == ChlType::Svrconn => d,
        _ => {
            return Err(fail(
                2540,
                format!("no SVRCONN channel '{name}' is defined"),
            ));
        }
    };
    if !def.sslciph.is_empty() {
        let Some(t) = tls else {
            return Err(fail(
                2393,
                format!("channel '{name}' requires TLS (SSLCIPH({}))", def.sslciph),
            ));
        };
        if !def.sslciph.eq_ignore_ascii_case("ANY")
            && suite_name(&def.sslciph) != suite_name(&t.suite)
        {
            return Err(fail(
                2393,
                format!(
                    "channel '{name}' requires cipher suite {}, the connection uses {}",
                    def.sslciph, t.suite
                ),
            ));
        }
    }
    if !def.sslpeer.is_empty() {
        let ok = tls.is_some_and(|t| sslpeer_matches(&def.sslpeer, &t.dn));
        if !ok {
            return Err(fail(
                2393,
                format!(
                    "the peer's certificate does not match SSLPEER('{}') of channel '{name}'",
                    def.sslpeer
                ),
            ));
        }
    }
    let intercept = def.intercept;
    let principal = if !def.mcauser.is_empty() {
        def.mcauser
    } else {
        tls.map(|t| t.dn.clone())
            .unwrap_or_else(|| "tcp".to_string())
    };
    Ok((principal, intercept))
}

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

fn suite_name(s: &str) -> String {
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
    use sealmq_engine::channels::{ChlType, DEFAULT_SVRCONN};
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
    tls_requirements(
        &def,
        tls.map(|t| (t.dn.as_str(), t.suite.as_str())),
        "the connection",
    )
    .map_err(|d| fail(2393, d))?;
    let intercept = def.intercept;
    let principal = if !def.mcauser.is_empty() {
        def.mcauser
    } else {
        tls.map(|t| t.dn.clone())
            .unwrap_or_else(|| "tcp".to_string())
    };
    Ok((principal, intercept))
}

/// What a channel definition asks of a connection's TLS (SVRCONN, and both ends of message
/// channels): SSLCIPH requires TLS and, unless ANY, that suite; SSLPEER filters the partner's
/// certificate DN. `tls`: the partner's DN and the negotiated suite; `who` names the other end
/// in the message.
pub(crate) fn tls_requirements(
    def: &sealmq_engine::channels::ChannelDef,
    tls: Option<(&str, &str)>,
    who: &str,
) -> Result<(), String> {
    let name = &def.name;
    if !def.sslciph.is_empty() {
        let Some((_, suite)) = tls else {
            return Err(format!(
                "channel '{name}' requires TLS (SSLCIPH({}))",
                def.sslciph
            ));
        };
        if !def.sslciph.eq_ignore_ascii_case("ANY") && suite_name(&def.sslciph) != suite_name(suite)
        {
            return Err(format!(
                "channel '{name}' requires cipher suite {}, {who} uses {suite}",
                def.sslciph
            ));
        }
    }
    if !def.sslpeer.is_empty() {
        let dn = tls.map(|t| t.0).unwrap_or("");
        if !sealmq_engine::channels::sslpeer_matches(&def.sslpeer, dn) {
            return Err(format!(
                "the certificate '{dn}' of {who} does not match SSLPEER('{}') of channel '{name}'",
                def.sslpeer
            ));
        }
    }
    Ok(())
}

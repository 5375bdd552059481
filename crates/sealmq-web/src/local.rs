//! The queue manager's private socket (`<QM dir>/web.sock`): the same REST API, in plain
//! HTTP/1.1 on a Unix socket that only the queue manager's own operating-system user can open
//! (the socket is 0600 in the queue manager's private directory, and each connection's peer
//! credentials are checked against the directory's owner). The installation's server
//! (`sealmq web`, [`crate::install`]) runs as that user: it authenticates the browser or
//! client itself and asserts the principal and roles here in `x-sealmq-*` headers, which only
//! this socket reads. The queue manager still checks the principal's authority on every
//! message, as it does for its own HTTPS listener.

use crate::auth::{Rq, Who};
use crate::{Ctx, http1, reply};
use hyper::Request;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use sealmq_types::slots::ConnState;
use std::net::SocketAddr;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::sync::Arc;
use tokio::sync::{Notify, Semaphore};

/// The socket's file name in the queue manager's directory.
pub const SOCKET: &str = "web.sock";
/// Connections served at once (the installation's server holds a few).
const CONNECTIONS: usize = 32;

/// Headers the installation's server asserts, read only on this socket.
pub const USER: &str = "x-sealmq-user";
pub const ROLES: &str = "x-sealmq-roles";
pub const VIA: &str = "x-sealmq-via";
pub const PEER: &str = "x-sealmq-peer";

/// Binds the socket at `path` (a stale one of an ended process replaced), private to this
/// user.
pub(crate) fn bind(path: &Path) -> Result<std::os::unix::net::UnixListener, String> {
    let _ = std::fs::remove_file(path);
    let l = std::os::unix::net::UnixListener::bind(path)
        .map_err(|e| format!("cannot serve REST on {}: {e}", path.display()))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
        .and_then(|()| l.set_nonblocking(true))
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(l)
}

/// Serves the socket until `stop`.
pub(crate) async fn serve(
    listener: std::os::unix::net::UnixListener,
    ctx: Arc<Ctx>,
    stop: Arc<Notify>,
) {
    let listener = match tokio::net::UnixListener::from_std(listener) {
        Ok(l) => l,
        Err(e) => {
            tracing::error!("REST socket: {e}");
            return;
        }
    };
    let owner = match std::fs::metadata(&ctx.qm_dir) {
        Ok(m) => m.uid(),
        Err(e) => {
            tracing::error!("REST socket: {}: {e}", ctx.qm_dir.display());
            return;
        }
    };
    let places = Arc::new(Semaphore::new(CONNECTIONS));
    loop {
        let stream = tokio::select! {
            _ = stop.notified() => return,
            r = listener.accept() => match r {
                Ok((s, _)) => s,
                Err(e) => {
                    tracing::warn!("REST socket: accept failed: {e}");
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                    continue;
                }
            },
        };
        match stream.peer_cred() {
            Ok(c) if c.uid() == owner => {}
            other => {
                tracing::warn!(
                    "REST socket: a connection from another user refused ({:?})",
                    other.map(|c| c.uid())
                );
                continue;
            }
        }
        let Ok(place) = places.clone().try_acquire_owned() else {
            continue;
        };
        let ctx = ctx.clone();
        tokio::spawn(async move {
            let state = Arc::new(ConnState::default());
            let svc = hyper::service::service_fn(move |rq| {
                let (ctx, state) = (ctx.clone(), state.clone());
                async move { Ok::<_, std::convert::Infallible>(handle(ctx, &state, rq).await) }
            });
            let _ = http1().serve_connection(TokioIo::new(stream), svc).await;
            drop(place);
        });
    }
}

async fn handle(
    ctx: Arc<Ctx>,
    state: &ConnState,
    rq: Request<Incoming>,
) -> hyper::Response<crate::Body> {
    let (parts, body) = rq.into_parts();
    let h = |n: &str| parts.headers.get(n).and_then(|v| v.to_str().ok());
    let who = asserted(h(USER), h(ROLES), h(VIA));
    let peer = h(PEER)
        .and_then(|p| p.parse::<std::net::IpAddr>().ok())
        .map(|ip| SocketAddr::new(ip, 0))
        .unwrap_or_else(|| SocketAddr::from(([127, 0, 0, 1], 0)));
    let Some(who) = who else {
        return reply::error(
            401,
            "MQWB0104E",
            "The request names no user.",
            "Reach the queue manager through sealmq web or its --web listener.",
            0,
        );
    };
    let mut rq = Rq::new(parts, peer, None);
    rq.asserted = Some(who);
    crate::route(&ctx, rq, body, state).await
}

/// The principal the installation's server asserts: a user id and its roles by MQ's names.
fn asserted(user: Option<&str>, roles: Option<&str>, via: Option<&str>) -> Option<Who> {
    let user = user.filter(|u| !u.is_empty() && u.len() <= 1024)?;
    let roles: Vec<&str> = roles.unwrap_or("").split(',').map(str::trim).collect();
    let has = |r: &str| roles.contains(&r);
    Some(Who {
        user: user.to_string(),
        via: match via {
            Some("basic") => "basic",
            Some("clientCertificate") => "clientCertificate",
            _ => "ltpaToken",
        },
        admin: has("MQWebAdmin"),
        readonly: has("MQWebAdmin") || has("MQWebAdminRO"),
        messaging: has("MQWebAdmin") || has("MQWebUser"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_assertion_names_a_user_and_only_the_roles_it_says() {
        assert!(asserted(None, Some("MQWebAdmin"), None).is_none());
        assert!(asserted(Some(""), None, None).is_none());
        let w = asserted(Some("ops"), Some("MQWebAdminRO"), Some("basic")).unwrap();
        assert!(w.readonly && !w.admin && !w.messaging);
        assert_eq!(w.via, "basic");
        let w = asserted(Some("app"), Some("MQWebUser, bogus"), Some("x")).unwrap();
        assert!(w.messaging && !w.readonly && !w.admin);
        assert_eq!(w.via, "ltpaToken");
        let w = asserted(Some("root"), Some("MQWebAdmin"), None).unwrap();
        assert!(w.admin && w.readonly && w.messaging);
    }
}

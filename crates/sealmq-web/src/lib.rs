//! # sealmq-web: the queue manager's HTTPS server (issue 29)
//!
//! IBM MQ runs its REST API in a separate server (mqweb); sealmq runs it in the queue manager
//! when started with `--web HOST:PORT`. HTTPS only, with the queue manager's certificate from
//! its keystore; HTTP/1.1 by the `hyper` crate. Every request is authenticated (HTTP basic, or
//! the session cookie of `POST /ibmmq/rest/v2/login`) against the queue manager's connection
//! authentication, given a role (admin, read-only, messaging: [`Roles`]), and — for messages —
//! checked against the same authority records as any other connection of that user.
//! docs/rest.md describes every shape; the web console (`console.rs`, docs/console.md) is a
//! page over the same API.
//!
//! Limits: [`MAX_CONNECTIONS`] connections at once and [`MAX_PER_ADDRESS`] from one address;
//! past them a new connection closes the oldest one not serving an authenticated request
//! (`sealmq_types::slots`), before any TLS work. [`HANDSHAKE`] for TLS, [`HEADER_TIMEOUT`] for a
//! request's headers; a body is read only once its request is authenticated (a login's within
//! [`LOGIN_BODY`] bytes), within [`BODY_DEADLINE`] and [`MAX_BODY`] bytes. Login sessions:
//! [`MAX_SESSIONS`] in all, [`SESSIONS_PER_USER`] per user (its oldest goes), each at most
//! [`auth::SESSION_LIFETIME`]; [`MAX_WAIT`] for a get's wait. `/metrics` is served by the
//! same stack on a listener of its own ([`plain`]).

// A refusal is the response itself, made once and answered at once: not worth a box.
#![allow(clippy::result_large_err)]

mod admin;
mod auth;
mod console;
mod extensions;
pub mod install;
pub mod local;
mod messaging;
mod msglist;
mod olist;
mod params;
pub mod plain;
mod proxy;
mod qadmin;
mod qattrs;
mod reply;

pub use auth::Roles;
use sealmq_types::slots::{ConnState, Table};

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::{Request, Response};
use hyper_util::rt::{TokioIo, TokioTimer};
use sealmq_engine::QueueManager;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{Notify, Semaphore};

/// Connections held at once (past it a new one closes the oldest idle one,
/// `sealmq_types::slots`).
pub const MAX_CONNECTIONS: usize = 64;
/// Connections from one address at once (so that one address cannot take them all).
pub const MAX_PER_ADDRESS: usize = 16;
/// Time for a request's body, once its request is authenticated (a login's: from its
/// headers).
pub const BODY_DEADLINE: Duration = Duration::from_secs(30);
/// Largest login body (`{"username", "password"}`), read before anyone is authenticated.
pub const LOGIN_BODY: usize = 4096;
/// Time for a TLS handshake.
pub const HANDSHAKE: Duration = Duration::from_secs(10);
/// Time for a request's headers (also an idle kept-alive connection's next request).
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// Largest request body (a message to put, a command).
pub const MAX_BODY: usize = 4 << 20;
/// Login sessions kept at once.
pub const MAX_SESSIONS: usize = 1024;
/// Login sessions of one user at once (a new one ends its oldest): one user cannot push
/// another's session out of the table.
pub const SESSIONS_PER_USER: usize = 16;
/// Gets that wait at once (each holds a blocking thread); beyond them a get does not wait.
pub const WAITING_GETS: usize = 8;
/// Longest wait a get may ask for.
pub const MAX_WAIT: Duration = Duration::from_secs(30);

/// What the server asks of the queue manager's process beyond its engine.
pub trait Host: Send + Sync {
    /// Checks a user id and password from an address (the queue manager's connection
    /// authentication, behind its gate: failures answered after the same delay). Blocks.
    fn check_password(&self, addr: &str, user: &str, password: &str) -> bool;
    /// What the queue manager protects and unprotects with (`None`: it has no keystore).
    fn protector(&self) -> Option<Arc<sealmq_protect::Protector>>;
    /// A number that changes whenever connection authentication is read again (REFRESH
    /// SECURITY TYPE(CONNAUTH)): login sessions opened before it are checked again.
    fn security_epoch(&self) -> u64;
    /// Whether `user` can still log in at all (the password file names it, or it is an
    /// operating-system user PAM checks): a session of a user removed meanwhile ends.
    fn user_known(&self, user: &str) -> bool;
}

/// What the administrator chose for the server (`sealmq start --web ...`).
#[derive(Clone, Debug, Default)]
pub struct Options {
    pub roles: Roles,
    /// `--web-client-certs`: a client certificate the keystore trusts logs its subject's CN in
    /// as a user (as mqweb maps a certificate to a user), without a password.
    pub client_certs: bool,
    /// `--web-intercept`: messages to and from queues with a policy are protected and
    /// unprotected by the queue manager's identity for REST users, as on a channel with
    /// INTERCEPT(YES); without it a put to such a queue is refused and a get returns the
    /// envelope as stored.
    pub intercept: bool,
}

/// What the server needs from the queue manager's process.
pub struct Config {
    /// The HTTPS listener (`--web`): its address (port 0: any) and TLS from the queue
    /// manager's keystore (client certificates asked for, not required).
    pub https: Option<(SocketAddr, Arc<rustls::ServerConfig>)>,
    /// The queue manager's private socket (`<QM dir>/web.sock`), through which the
    /// installation's server (`sealmq web`) reaches it ([`local`]).
    pub local: Option<std::path::PathBuf>,
    pub options: Options,
    /// The queue manager's directory (its keystore, error log and HA status).
    pub qm_dir: std::path::PathBuf,
    pub host: Arc<dyn Host>,
}

/// A running server; [`Web::stop`] ends it.
pub struct Web {
    /// The TCP address served (`None`: only the private socket).
    pub addr: Option<SocketAddr>,
    stop: Arc<Notify>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Web {
    pub fn stop(mut self) {
        self.stop.notify_one();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

pub(crate) type Body = Full<Bytes>;

/// What every request shares.
pub(crate) struct Ctx {
    pub qm: Arc<QueueManager>,
    pub host: Arc<dyn Host>,
    pub options: Options,
    pub door: auth::Door,
    pub qm_dir: std::path::PathBuf,
    /// Places for gets that wait ([`WAITING_GETS`]).
    pub waiters: Arc<Semaphore>,
}

/// Serves the HTTPS listener and the private socket that `cfg` names, on a thread of its
/// own.
pub fn start(qm: Arc<QueueManager>, cfg: Config) -> Result<Web, String> {
    let ctx = Arc::new(Ctx {
        door: auth::Door {
            host: cfg.host.clone(),
            sessions: auth::Sessions::default(),
            roles: cfg.options.roles.clone(),
            admin: qm.admin().map(str::to_string),
            qm_name: Some(qm.name().to_string()),
        },
        qm,
        host: cfg.host,
        options: cfg.options,
        qm_dir: cfg.qm_dir,
        waiters: Arc::new(Semaphore::new(WAITING_GETS)),
    });
    let https = match cfg.https {
        Some((addr, tls)) => {
            let mut tls = (*tls).clone();
            tls.alpn_protocols = vec![b"http/1.1".to_vec()];
            Some((
                bind(addr, "web")?,
                tokio_rustls::TlsAcceptor::from(Arc::new(tls)),
            ))
        }
        None => None,
    };
    let addr = https.as_ref().and_then(|(l, _)| l.local_addr().ok());
    let local = match &cfg.local {
        Some(p) => Some(local::bind(p)?),
        None => None,
    };
    // Password checks are bounded by the queue manager's gate (32 under way at most, the
    // rest refused at once), so a flood of them cannot queue the administrator's behind
    // threads that sleep off failures.
    let web = spawn_runtime("web", 48, addr, move |stop| async move {
        // Both end when the one that takes the stop signal ends.
        let tcp = async {
            match https.map(|(l, a)| (tokio::net::TcpListener::from_std(l), a)) {
                Some((Ok(l), acceptor)) => serve(l, acceptor, ctx.clone(), stop.clone()).await,
                Some((Err(e), _)) => tracing::error!("web listener: {e}"),
                None => std::future::pending().await,
            }
        };
        let unix = async {
            match local {
                Some(l) => local::serve(l, ctx.clone(), stop.clone()).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = tcp => {}
            _ = unix => {}
        }
    })?;
    if let Some(a) = web.addr {
        tracing::info!("REST API and web console on https://{a}/ibmmq/");
    }
    Ok(web)
}

/// A TCP listener bound to `addr` (port 0: any), ready for tokio.
pub(crate) fn bind(addr: SocketAddr, name: &str) -> Result<std::net::TcpListener, String> {
    let l = std::net::TcpListener::bind(addr)
        .map_err(|e| format!("cannot serve {name} on {addr}: {e}"))?;
    l.set_nonblocking(true)
        .map_err(|e| format!("{name} listener: {e}"))?;
    Ok(l)
}

/// Binds `addr` (port 0: any) and runs `serve` with the listener and the stop signal on a
/// runtime of its own ([`spawn_runtime`]): what every TCP-only HTTP listener here shares.
pub(crate) fn spawn_server<F, Fut>(
    addr: SocketAddr,
    name: &'static str,
    blocking: usize,
    serve: F,
) -> Result<Web, String>
where
    F: FnOnce(tokio::net::TcpListener, Arc<Notify>) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()>,
{
    let std_listener = bind(addr, name)?;
    let addr = std_listener
        .local_addr()
        .map_err(|e| format!("{name} listener: {e}"))?;
    spawn_runtime(name, blocking, Some(addr), move |stop| async move {
        match tokio::net::TcpListener::from_std(std_listener) {
            Ok(l) => serve(l, stop).await,
            Err(e) => tracing::error!("{name} listener on {addr}: {e}"),
        }
    })
}

/// Runs `serve` (given the stop signal) on a runtime of one worker thread and at most
/// `blocking` blocking threads, on a thread of its own named `sealmq-<name>`.
pub(crate) fn spawn_runtime<F, Fut>(
    name: &'static str,
    blocking: usize,
    addr: Option<SocketAddr>,
    serve: F,
) -> Result<Web, String>
where
    F: FnOnce(Arc<Notify>) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()>,
{
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .max_blocking_threads(blocking)
        .thread_name(format!("sealmq-{name}"))
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the {name} server's runtime: {e}"))?;
    let stop = Arc::new(Notify::new());
    let stop2 = stop.clone();
    let thread = std::thread::Builder::new()
        .name(format!("sealmq-{name}"))
        .spawn(move || {
            rt.block_on(serve(stop2));
            rt.shutdown_timeout(Duration::from_secs(2));
        })
        .map_err(|e| format!("cannot start the {name} server's thread: {e}"))?;
    Ok(Web {
        addr,
        stop,
        thread: Some(thread),
    })
}

async fn serve(
    listener: tokio::net::TcpListener,
    acceptor: tokio_rustls::TlsAcceptor,
    ctx: Arc<Ctx>,
    stop: Arc<Notify>,
) {
    let certs = ctx.options.client_certs;
    serve_tls(
        listener,
        acceptor,
        certs,
        stop,
        move |peer, cert_user, state, rq| {
            let ctx = ctx.clone();
            async move { handle(ctx, peer, cert_user, &state, rq).await }
        },
    )
    .await;
}

/// Serves HTTPS on `listener` until `stop`: connections held in a [`Table`] of
/// [`MAX_CONNECTIONS`], each handshake within [`HANDSHAKE`], each request answered by
/// `handler` with the peer, the user its client certificate names (when `client_certs`) and
/// the connection's state (busy while an authenticated request is served).
pub(crate) async fn serve_tls<H, Fut>(
    listener: tokio::net::TcpListener,
    acceptor: tokio_rustls::TlsAcceptor,
    client_certs: bool,
    stop: Arc<Notify>,
    handler: H,
) where
    H: Fn(SocketAddr, Option<Arc<str>>, Arc<ConnState>, Request<Incoming>) -> Fut
        + Clone
        + Send
        + Sync
        + 'static,
    Fut: std::future::Future<Output = Response<Body>> + Send + 'static,
{
    let table = Table::new("web", MAX_CONNECTIONS, MAX_PER_ADDRESS);
    accept(listener, table, stop, move |tcp, peer, state| {
        let (acceptor, handler) = (acceptor.clone(), handler.clone());
        async move {
            let tls = match tokio::time::timeout(HANDSHAKE, acceptor.accept(tcp)).await {
                Ok(Ok(t)) => t,
                _ => return,
            };
            let cert_user = if client_certs {
                auth::certificate_user(tls.get_ref().1.peer_certificates())
            } else {
                None
            };
            let cert_user: Option<Arc<str>> = cert_user.map(Into::into);
            let svc = hyper::service::service_fn(move |rq| {
                let (handler, cert_user, state) =
                    (handler.clone(), cert_user.clone(), state.clone());
                async move {
                    let r = handler(peer, cert_user, state.clone(), rq).await;
                    state.set_busy(false);
                    Ok::<_, std::convert::Infallible>(r)
                }
            });
            let _ = http1().serve_connection(TokioIo::new(tls), svc).await;
        }
    })
    .await;
}

/// HTTP/1.1 as every listener here serves it: headers within [`HEADER_TIMEOUT`] (and a
/// kept-alive connection's next request), 64 KiB of buffered request at most.
pub(crate) fn http1() -> hyper::server::conn::http1::Builder {
    let mut b = hyper::server::conn::http1::Builder::new();
    b.timer(TokioTimer::new())
        .header_read_timeout(HEADER_TIMEOUT)
        .max_buf_size(64 << 10);
    b
}

/// Accepts on `listener` until `stop`: each connection gets a place in `table` (or is closed
/// at once) and is served by `serve_one` until it ends or the table closes it to make room.
pub(crate) async fn accept<F, Fut>(
    listener: tokio::net::TcpListener,
    table: Arc<Table>,
    stop: Arc<Notify>,
    serve_one: F,
) where
    F: Fn(tokio::net::TcpStream, SocketAddr, Arc<ConnState>) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    loop {
        let (tcp, peer) = tokio::select! {
            _ = stop.notified() => return,
            r = listener.accept() => match r {
                Ok(x) => x,
                Err(e) => {
                    // Out of descriptors, say: wait instead of spinning on accept.
                    tracing::warn!("accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
        };
        let evicted = Arc::new(Notify::new());
        let closer = evicted.clone();
        let (slot, line) = table.admit(peer.ip(), Box::new(move || closer.notify_one()));
        if let Some(line) = line {
            tracing::warn!("{line}");
        }
        let Some(slot) = slot else {
            drop(tcp);
            continue;
        };
        let work = serve_one(tcp, peer, slot.state.clone());
        tokio::spawn(async move {
            tokio::select! {
                _ = work => {}
                _ = evicted.notified() => {}
            }
            drop(slot);
        });
    }
}

/// One request: authenticated from its headers, its body read only then (a login's is what
/// authenticates it), and answered.
async fn handle(
    ctx: Arc<Ctx>,
    peer: SocketAddr,
    cert_user: Option<Arc<str>>,
    state: &ConnState,
    rq: Request<Incoming>,
) -> Response<Body> {
    let (parts, body) = rq.into_parts();
    let rq = auth::Rq::new(parts, peer, cert_user);
    route(&ctx, rq, body, state).await
}

/// A request's body, within `max` bytes and [`BODY_DEADLINE`].
pub(crate) async fn read_body(body: Incoming, max: usize) -> Result<Bytes, Response<Body>> {
    match tokio::time::timeout(BODY_DEADLINE, Limited::new(body, max).collect()).await {
        Ok(Ok(b)) => Ok(b.to_bytes()),
        Ok(Err(_)) => Err(reply::error(
            400,
            "MQWB0901E",
            &format!("The request body is larger than {max} bytes or was cut short."),
            "Send a smaller body.",
            0,
        )),
        Err(_) => Err(reply::error(
            408,
            "MQWB0901E",
            &format!(
                "The request body did not arrive within {} s.",
                BODY_DEADLINE.as_secs()
            ),
            "Send the body with the request.",
            0,
        )),
    }
}

pub(crate) async fn route(
    ctx: &Arc<Ctx>,
    mut rq: auth::Rq,
    body: Incoming,
    state: &ConnState,
) -> Response<Body> {
    if rq.method == hyper::Method::GET
        && let Some(r) = console::file(&rq.path)
    {
        return r;
    }
    let (who, segs) = match admit(&ctx.door, &mut rq, body, state).await {
        Ok(x) => x,
        Err(r) => return r,
    };
    let segs: Vec<&str> = segs.iter().map(String::as_str).collect();
    let rest = &segs[..];
    match rest {
        ["admin", ..] => admin::route(ctx, &who, &rq, &rest[1..]).await,
        ["messaging", ..] => messaging::route(ctx, &who, &rq, &rest[1..]).await,
        _ => reply::error(
            404,
            "MQWB0902E",
            &format!("No resource at {}.", rq.path),
            "REST resources are under /ibmmq/rest/v2/admin and /ibmmq/rest/v2/messaging.",
            0,
        ),
    }
}

/// What every REST request goes through before its resource (both servers): its path under
/// `/ibmmq/rest/vN/` (its segments returned), a login answered at once (`Err`, as every
/// refusal), the principal authenticated, the body read, the CSRF header checked.
pub(crate) async fn admit(
    door: &auth::Door,
    rq: &mut auth::Rq,
    body: Incoming,
    state: &ConnState,
) -> Result<(auth::Who, Vec<String>), Response<Body>> {
    let segs = api_segments(rq)?;
    if segs == ["login"] {
        rq.body = read_body(body, LOGIN_BODY).await?;
        return Err(auth::login(door, rq).await);
    }
    let who = auth::authenticate(door, rq).await?;
    // Authenticated: this connection is no longer closed to make room for another.
    state.set_busy(true);
    rq.body = read_body(body, MAX_BODY).await?;
    auth::csrf(rq)?;
    Ok((who, segs))
}

/// The decoded segments of a request's path under `/ibmmq/rest/{v1,v2,v3}/` (the version
/// noted in `rq.api`); a 404 for any other path.
pub(crate) fn api_segments(rq: &mut auth::Rq) -> Result<Vec<String>, Response<Body>> {
    let segs: Vec<String> = rq
        .path
        .trim_matches('/')
        .split('/')
        .map(percent_decode)
        .collect();
    match segs.as_slice() {
        [a, b, v, ..]
            if a == "ibmmq" && b == "rest" && matches!(v.as_str(), "v1" | "v2" | "v3") =>
        {
            rq.api = if v == "v3" { 3 } else { 2 };
            Ok(segs[3..].to_vec())
        }
        _ => Err(reply::error(
            404,
            "MQWB0902E",
            &format!("No resource at {}.", rq.path),
            "REST resources are under /ibmmq/rest/v2/ (docs/rest.md).",
            0,
        )),
    }
}

/// `%XX` escapes of a path segment decoded (invalid ones left as they are).
pub(crate) fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%'
            && i + 2 < b.len()
            && let Some(v) = s
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            out.push(v);
            i += 3;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Runs blocking work (password checks, MQSC, gets) off the runtime's worker.
pub(crate) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Option<T> {
    tokio::task::spawn_blocking(f).await.ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_escapes_decode() {
        assert_eq!(percent_decode("A%2EB"), "A.B");
        assert_eq!(percent_decode("bad%zz"), "bad%zz");
        assert_eq!(percent_decode("end%4"), "end%4");
        assert_eq!(percent_decode("%"), "%");
    }
}

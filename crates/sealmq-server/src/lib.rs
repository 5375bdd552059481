//! # sealmq-server: a queue manager process serving applications
//!
//! Listeners: a Unix domain socket in the QM directory (`qm.sock`; the principal is the peer's
//! OS user) and optionally TCP and TLS (`--listen HOST:PORT`). Laid out by concern
//! (ARCHITECTURE.md has the table): `net/` serves connections (the event loop, `net/evloop/`),
//! `admit/` decides who may connect and how many, `auth/` authenticates, `session/` answers an
//! admitted application's requests, `consume/` pushes messages to consumers, `observe/`
//! writes statistics, accounting, metrics and the error log, `chinit/` runs channels. This
//! file starts and stops them. A lock file keeps a second process off the same queue manager.

mod admit;
pub mod auth;
pub mod chinit;
mod consume;
mod icpt;
mod net;
pub mod observe;
mod os;
mod peer;
mod session;
mod svcrun;
mod wiremap;

// The paths other crates (the command, tests) name.
pub use auth::{authgate, connauth, events, perms, security};
pub use net::standby;
pub use observe::{errlog, metrics, stats};

use admit::limits::{Limit, TakeSlot};
pub(crate) use peer::generic_match;
use sealmq_types::sync::lock;

use sealmq_engine::{QmConfig, QueueManager};
use std::collections::HashMap;
use std::fs::File;
use std::net::SocketAddr;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Where a queue manager lives and listens.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    pub name: String,
    pub dir: PathBuf,
    pub listen: Option<SocketAddr>,
    /// Require TLS with client certificates on the TCP listener (identity and trust from
    /// `<QM dir>/keystore`); the principal is the client certificate's subject DN.
    pub tls: bool,
    /// Serve Prometheus metrics over HTTP on this address (`GET /metrics`).
    pub metrics: Option<SocketAddr>,
    /// Serve the REST API over HTTPS on this address, with these roles (issue 29,
    /// docs/rest.md).
    pub web: Option<(SocketAddr, sealmq_web::Options)>,
    /// The active instance of a replicated queue manager (docs/ha.md): its log batches are
    /// durable once its group's majority holds them, and its first start makes the queue
    /// manager when the group's log is still empty.
    pub replicator: Option<sealmq_engine::host::ReplicatorRef>,
}

/// How long a new connection has to complete its TLS handshake and first frame, and how long
/// a frame may take to arrive once its first byte has (a peer that stops mid-frame is dropped).
pub const HANDSHAKE: Duration = Duration::from_secs(10);

/// The name DISPLAY LSSTATUS gives the `--listen` listener (MQ's name for runmqlsr's).
pub const CLI_LISTENER: &str = "SYSTEM.LISTENER.TCP.1";

/// Written by a server as it ends: `ok`, or `failed: <why>` when the final checkpoint failed.
pub const ENDED_FILE: &str = "qm.ended";

pub fn socket_path(dir: &Path) -> PathBuf {
    dir.join("qm.sock")
}

/// A running server.
pub struct Server {
    dir: PathBuf,
    qm: Arc<QueueManager>,
    socks: Arc<Mutex<HashMap<u64, Sock>>>,
    /// Connections being served (a controlled stop waits for them to end).
    active: Arc<std::sync::atomic::AtomicUsize>,
    immediate: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
    stopped: Arc<(Mutex<bool>, std::sync::Condvar)>,
    socket: PathBuf,
    tcp: Option<SocketAddr>,
    chinit: Arc<chinit::Initiator>,
    services: Arc<svcrun::Services>,
    listeners: Arc<net::listeners::Listeners>,
    /// The interval statistics writer (it writes a last interval when the server stops).
    stats: Option<std::thread::JoinHandle<()>>,
    metrics: Option<observe::metrics::Endpoint>,
    web: Option<sealmq_web::Web>,
    /// The event loop serving applications (taken at stop).
    net: Option<Arc<net::evloop::Net>>,
    _lock: File,
}

/// The OS user name of a uid, from /etc/passwd (the uid itself when unknown).
/// The operating-system user this process runs as, by name.
pub fn process_user() -> String {
    user_name(os::euid())
}

pub(crate) fn user_name(uid: u32) -> String {
    std::fs::read_to_string("/etc/passwd")
        .ok()
        .and_then(|p| {
            p.lines().find_map(|l| {
                let f: Vec<&str> = l.split(':').collect();
                (f.len() > 2 && f[2] == uid.to_string()).then(|| f[0].to_string())
            })
        })
        .unwrap_or_else(|| uid.to_string())
}

/// Takes the queue manager's lock file: a second process on the same queue manager is refused.
fn take_lock(cfg: &ServerConfig) -> Result<File, String> {
    let lock_path = cfg.dir.join("qm.lock");
    let lock = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(|e| format!("cannot open {}: {e}", lock_path.display()))?;
    if lock.try_lock().is_err() {
        return Err(format!("queue manager {} is already running", cfg.name));
    }
    Ok(lock)
}

/// Recovers the queue manager (creating it, for a replicated one's first start) as this
/// process's user, its administrator; the secrets read are scrubbed from the environment.
fn start_engine(
    cfg: &ServerConfig,
    me_uid: u32,
    fds: u64,
) -> Result<(Arc<QueueManager>, Option<Arc<sealmq_engine::host::Dse>>), String> {
    let mut qcfg = QmConfig::new(&cfg.name, &cfg.dir);
    // The queue manager's own user is the administrator; everyone else needs AUTHRECs.
    qcfg.admin = Some(user_name(me_uid));
    qcfg.dse = sealmq_engine::host::Dse::load(&cfg.dir).map_err(|e| e.to_string())?;
    let dse = qcfg.dse.clone();
    // The secrets are read: no other process of this user may read them from us.
    let secrets: Vec<String> = svcrun::SECRET_ENV
        .iter()
        .map(|s| s.to_string())
        .chain(sealmq_engine::host::Dse::secret_env(&cfg.dir))
        .collect();
    auth::perms::scrub_secrets(&secrets);
    let replicated = cfg.replicator.is_some();
    qcfg.replicator = cfg.replicator.clone();
    let (qm, report) = if replicated {
        sealmq_engine::start_or_create(qcfg)
    } else {
        sealmq_engine::start(qcfg)
    }
    .map_err(|e| e.to_string())?;
    tracing::info!(
        "queue manager {} started ({fds} descriptors): {} messages recovered, {} log records replayed{}",
        cfg.name,
        report.messages,
        report.records_replayed,
        if report.backed_out > 0 {
            format!(", {} units of work backed out", report.backed_out)
        } else {
            String::new()
        }
    );
    // Damaged records are found and set aside now, not when an application reaches one.
    qm.verify_queue_files_in_background();
    Ok((qm, dse))
}

/// The descriptors shared out: MAXCHL is capped to what they allow, a reserve is kept for the
/// administrator, channels and files, and sockets before their first frame have a small budget
/// of their own (docs/limits.md).
fn share_descriptors(fds: u64, ci: &chinit::Initiator, qm: &QueueManager) -> admit::limits::Budget {
    let per_conn = admit::limits::FDS_PER_CONNECTION;
    let budget = admit::limits::Budget::with(fds, per_conn);
    ci.limit.set_cap(budget.connections);
    let maxchl = qm.qmgr().maxchl;
    if maxchl > budget.connections {
        tracing::warn!(
            "MAXCHL({maxchl}) is capped to {} connections: the process may hold {fds} \
             descriptors (its hard open-file limit), of which {} are kept for the \
             administrator, channels and files and {} for {} sockets that have not sent \
             their first frame; raise the hard limit (LimitNOFILE, ulimit -Hn) to serve more",
            budget.connections,
            budget.reserve,
            budget.pending as u64 * per_conn,
            budget.pending
        );
    }
    tracing::info!(
        "descriptors: {fds}; connections at most {} (MAXCHL {maxchl}); {} sockets may wait \
         for their first frame ({} per address)",
        budget.connections.min(maxchl),
        budget.pending,
        budget.pending_per_addr
    );
    budget
}

/// Serves the local socket (bound as `starting`, renamed into place once all is ready).
fn serve_local(
    ul: UnixListener,
    starting: &Path,
    net: &Arc<net::evloop::Net>,
    qm: &Arc<QueueManager>,
    ctx: &Ctx,
    me_uid: u32,
) -> Result<(), String> {
    let _guard = net.handle().enter();
    ul.set_nonblocking(true)
        .map_err(|e| format!("cannot listen on {}: {e}", starting.display()))?;
    let l = tokio::net::UnixListener::from_std(ul)
        .map_err(|e| format!("cannot listen on {}: {e}", starting.display()))?;
    net.handle().spawn(net::evloop::accept_local(
        l,
        qm.clone(),
        ctx.clone(),
        me_uid,
        net.clone(),
    ));
    Ok(())
}

/// The REST API and console: on the queue manager's private socket always (`<QM dir>/web.sock`,
/// for the installation's server `sealmq web`), and over HTTPS with `--web`, on the queue
/// manager's keystore and certificate.
fn start_web(
    cfg: &ServerConfig,
    qm: &Arc<QueueManager>,
    ctx: &Ctx,
) -> Result<sealmq_web::Web, String> {
    let https = match &cfg.web {
        Some((a, _)) => {
            let tls = ctx.security.channel_tls(false, "ANY").map_err(|e| {
                format!("--web needs the queue manager's keystore and certificate: {e}")
            })?;
            Some((*a, tls))
        }
        None => None,
    };
    let options = cfg.web.as_ref().map(|(_, o)| o.clone()).unwrap_or_default();
    sealmq_web::start(
        qm.clone(),
        sealmq_web::Config {
            https,
            local: Some(cfg.dir.join(sealmq_web::local::SOCKET)),
            options,
            qm_dir: cfg.dir.clone(),
            host: Arc::new(WebHost(ctx.security.clone())),
        },
    )
}

/// `<QM dir>/listeners`: the addresses served, one per line (`unix:`, `tcp:`/`tls:`,
/// `metrics:`, `web:`), what `sealmq` and tests read to reach them.
fn write_listeners(
    cfg: &ServerConfig,
    socket: &Path,
    tcp: Option<SocketAddr>,
    metrics: Option<&observe::metrics::Endpoint>,
    web: Option<&sealmq_web::Web>,
) {
    let mut addrs = format!("unix:{}\n", socket.display());
    if let Some(t) = tcp {
        addrs.push_str(&format!("{}:{t}\n", if cfg.tls { "tls" } else { "tcp" }));
    }
    if let Some(m) = metrics {
        addrs.push_str(&format!("metrics:{}\n", m.addr));
    }
    if let Some(a) = web.and_then(|w| w.addr) {
        addrs.push_str(&format!("web:{a}\n"));
    }
    let _ = std::fs::write(cfg.dir.join("listeners"), &addrs);
}

impl Ctx {
    /// What every connection shares, before the first is served.
    fn new(
        cfg: &ServerConfig,
        security: Arc<auth::security::Security>,
        ci: &Arc<chinit::Initiator>,
        budget: &admit::limits::Budget,
    ) -> Ctx {
        Ctx {
            socks: Arc::new(Mutex::new(HashMap::new())),
            next_sock: Arc::new(std::sync::atomic::AtomicU64::new(1)),
            stop: Arc::new(AtomicBool::new(false)),
            stopped: Arc::new((Mutex::new(false), std::sync::Condvar::new())),
            active: Arc::new(std::sync::atomic::AtomicUsize::new(0)),
            immediate: Arc::new(AtomicBool::new(false)),
            security,
            dir: cfg.dir.clone(),
            conns: Arc::new(std::sync::atomic::AtomicU64::new(0)),
            chinit: ci.clone(),
            instances: Arc::default(),
            limit: ci.limit.clone(),
            pending: admit::limits::Pending::new(budget.pending, budget.pending_per_addr),
        }
    }
}

impl Server {
    /// Starts (recovering) the queue manager and its listeners.
    pub fn start(cfg: &ServerConfig) -> Result<Server, String> {
        auth::perms::private_umask();
        auth::perms::check(&cfg.dir)?;
        observe::errlog::init(&cfg.dir);
        let fds = os::raise_fd_limit();
        let lock = take_lock(cfg)?;
        let me_uid = os::euid();
        let (qm, dse) = start_engine(cfg, me_uid, fds)?;
        let socket = socket_path(&cfg.dir);
        let _ = std::fs::remove_file(&socket); // stale: we hold the lock, so no one serves it
        // Bound under a temporary name and renamed into place last, so that a connection to
        // qm.sock succeeding means everything (TCP, the listeners file) is ready.
        let starting = cfg.dir.join("qm.sock.starting");
        let _ = std::fs::remove_file(&starting);
        let ul = UnixListener::bind(&starting)
            .map_err(|e| format!("cannot listen on {}: {e}", starting.display()))?;
        let security = Arc::new(auth::security::Security::load(
            cfg.dir.join("keystore"),
            cfg.tls && cfg.listen.is_some(),
        )?);
        let ci = chinit::Initiator::new(
            qm.clone(),
            cfg.dir.join("keystore"),
            security.clone(),
            observe::acct::amqp_accounts(&qm),
        );
        qm.set_chinit(Arc::new(chinit::Control(ci.clone())));
        // Applications are served on the event loop (`net/evloop/`).
        let net = net::evloop::Net::new()?;
        let budget = share_descriptors(fds, &ci, &qm);
        let ctx = Ctx::new(cfg, security, &ci, &budget);
        let _ = ci.pending.set(ctx.pending.clone());
        serve_local(ul, &starting, &net, &qm, &ctx, me_uid)?;
        let listeners = net::listeners::Listeners::new(qm.clone(), ctx.clone(), net.clone());
        qm.set_listener_control(Arc::new(net::listeners::Control(listeners.clone())));
        // `--listen` is a listener without an object, named as MQ names runmqlsr's.
        let mut tcp = None;
        if let Some(addr) = cfg.listen {
            tcp = Some(
                listeners
                    .run(CLI_LISTENER, &addr.to_string(), 0)
                    .map_err(|e| e.detail)?,
            );
        }
        listeners.start_with_qmgr();
        let services = svcrun::Services::new(qm.clone(), &cfg.name, &cfg.dir);
        qm.set_service_control(Arc::new(svcrun::Control(services.clone())));
        services.start_with_qmgr();
        let metrics = match cfg.metrics {
            Some(a) => Some(observe::metrics::start(
                a,
                qm.clone(),
                ctx.security.clone(),
                ci.clone(),
                dse,
            )?),
            None => None,
        };
        let web = Some(start_web(cfg, &qm, &ctx)?);
        write_listeners(cfg, &socket, tcp, metrics.as_ref(), web.as_ref());
        let _ = std::fs::write(cfg.dir.join("qm.pid"), std::process::id().to_string());
        auth::perms::share_socket(&cfg.dir, &starting)?;
        std::fs::rename(&starting, &socket)
            .map_err(|e| format!("cannot listen on {}: {e}", socket.display()))?;
        // Sending channels that were running when the queue manager ended start again.
        ci.start_all();
        let stats = observe::stats::Writer::new(
            qm.clone(),
            cfg.dir.clone(),
            ctx.security.clone(),
            ci.clone(),
        )
        .spawn(ctx.stop.clone());
        Ok(Server {
            qm,
            socks: ctx.socks.clone(),
            dir: cfg.dir.clone(),
            active: ctx.active.clone(),
            immediate: ctx.immediate.clone(),
            stop: ctx.stop.clone(),
            stopped: ctx.stopped.clone(),
            socket,
            tcp,
            chinit: ci,
            listeners,
            services,
            stats: Some(stats),
            metrics,
            web,
            net: Some(net),
            _lock: lock,
        })
    }

    pub fn tcp_addr(&self) -> Option<SocketAddr> {
        self.tcp
    }

    pub fn queue_manager(&self) -> &Arc<QueueManager> {
        &self.qm
    }

    /// Blocks until a Stop request (or [`Server::request_stop`]), then ends cleanly.
    pub fn wait(self) -> Result<(), String> {
        {
            let (m, cv) = &*self.stopped;
            let mut s = lock(m);
            while !*s {
                s = cv.wait(s).unwrap_or_else(|p| p.into_inner());
            }
        }
        self.shutdown()
    }

    pub fn request_stop(&self) {
        signal_stop(&self.stop, &self.stopped, &self.qm);
    }

    /// Connections currently served.
    pub fn connections(&self) -> usize {
        self.active.load(Ordering::Relaxed)
    }

    fn shutdown(mut self) -> Result<(), String> {
        self.stop.store(true, Ordering::Relaxed);
        // Channels end first (a batch in flight completes or backs out), so that a controlled
        // stop does not wait on their connections.
        self.chinit.stop_all();
        // A controlled stop lets applications see 2161 and disconnect (30 s at most); an
        // immediate one does not wait. Units of work still open are backed out either way.
        if !self.immediate.load(Ordering::Relaxed) {
            let deadline = std::time::Instant::now() + Duration::from_secs(30);
            while self.active.load(Ordering::Relaxed) > 0 && std::time::Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        // Unblock the accept loops.
        let _ = UnixStream::connect(&self.socket);
        self.listeners.stop_all();
        self.services.stop_with_qmgr();
        let _ = std::fs::remove_file(&self.socket);
        let _ = std::fs::remove_file(self.dir.join("listeners"));
        let _ = std::fs::remove_file(self.dir.join("qm.pid"));
        // Close what is still connected: those applications see 2009 on their next call.
        for (_, s) in lock(&self.socks).drain() {
            s.shutdown();
        }
        if let Some(t) = self.stats.take() {
            let _ = t.join();
        }
        if let Some(m) = self.metrics.take() {
            m.stop();
        }
        if let Some(w) = self.web.take() {
            w.stop();
        }
        // Connections still on the event loop end with it (their units of work back out).
        if let Some(net) = self.net.take() {
            net.stop();
        }
        let r = self.qm.shutdown().map_err(|e| e.to_string());
        // `sealmq stop` reads how the queue manager ended once the process is gone: a
        // checkpoint that failed is reported there, not only in the log.
        let outcome = match &r {
            Ok(()) => "ok\n".to_string(),
            Err(e) => format!("failed: {e}\n"),
        };
        let _ = std::fs::write(self.dir.join(ENDED_FILE), outcome);
        match &r {
            Ok(()) => tracing::info!("queue manager {} ended", self.qm.name()),
            Err(e) => tracing::error!("queue manager {} ended: {e}", self.qm.name()),
        }
        r
    }
}

fn signal_stop(stop: &AtomicBool, stopped: &(Mutex<bool>, std::sync::Condvar), qm: &QueueManager) {
    qm.quiesce();
    stop.store(true, Ordering::Relaxed);
    let (m, cv) = stopped;
    *lock(m) = true;
    cv.notify_all();
}

/// A connection on the event loop, as shutdown sees it: told to end.
pub(crate) struct Sock(pub(crate) Arc<tokio::sync::Notify>);

impl Sock {
    pub(crate) fn shutdown(&self) {
        self.0.notify_one();
    }
}

/// What every connection shares.
#[derive(Clone)]
struct Ctx {
    socks: Arc<Mutex<HashMap<u64, Sock>>>,
    next_sock: Arc<std::sync::atomic::AtomicU64>,
    stop: Arc<AtomicBool>,
    stopped: Arc<(Mutex<bool>, std::sync::Condvar)>,
    active: Arc<std::sync::atomic::AtomicUsize>,
    immediate: Arc<AtomicBool>,
    /// The queue manager's keystore: protector for QM-side interception, TLS configuration.
    security: Arc<auth::security::Security>,
    /// The queue manager's directory (accounting records go under it).
    dir: PathBuf,
    /// Connections served so far, to number them in accounting records.
    conns: Arc<std::sync::atomic::AtomicU64>,
    /// The channel initiator: receiving channels arrive on the listeners.
    chinit: Arc<chinit::Initiator>,
    /// SVRCONN instances running (MAXINST, MAXINSTC).
    instances: Arc<admit::Instances>,
    /// Connections counted against MAXCHL.
    limit: Arc<Limit>,
    /// TCP sockets waiting for their first frame.
    pending: Arc<admit::limits::Pending>,
}

/// What a connection refused over MAXCHL is told.
pub(crate) const MAXCHL_REFUSAL: &str =
    "the queue manager serves MAXCHL connections already: try again later";

impl Ctx {
    /// A MAXCHL slot for a new connection, or `None` (logged, naming `who`).
    fn slot(&self, qm: &QueueManager, who: &str) -> Option<admit::limits::LimitSlot> {
        let maxchl = qm.qmgr().maxchl;
        let s = self.limit.take(maxchl);
        if s.is_none() {
            self.refused(who, maxchl);
        }
        s
    }

    /// Logs a refusal over MAXCHL (at most a line a second under a flood).
    fn refused(&self, who: &str, maxchl: u32) {
        if let Some(line) = self.limit.refusal_line(who, maxchl) {
            self.security.events.log(&line);
        }
    }

    fn register(&self, s: Sock) -> u64 {
        let id = self.next_sock.fetch_add(1, Ordering::Relaxed);
        lock(&self.socks).insert(id, s);
        id
    }

    fn unregister(&self, id: u64) {
        lock(&self.socks).remove(&id);
    }
}

/// What the HTTPS server asks of the queue manager: connection authentication behind its
/// gate, and the identity it protects with.
struct WebHost(Arc<auth::security::Security>);

impl sealmq_web::Host for WebHost {
    fn check_password(&self, addr: &str, user: &str, password: &str) -> bool {
        self.0.check_password(addr, user, password)
    }

    fn protector(&self) -> Option<Arc<sealmq_protect::Protector>> {
        self.0.protector()
    }

    fn security_epoch(&self) -> u64 {
        self.0.users.epoch()
    }

    fn user_known(&self, user: &str) -> bool {
        self.0.users.known(user)
    }
}

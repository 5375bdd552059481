//! One running AMQP channel: a listener on its port, a task per connection, session and link.
//! Engine calls block (log forces, waits), so they run on tokio's blocking pool.
//!
//! Identity: with SSLCIPH the channel speaks TLS only (the queue manager's keystore identity;
//! SSLCAUTH(REQUIRED) asks a client certificate that its keystore trusts, SSLPEER filters its
//! DN) and SASL EXTERNAL takes the certificate's DN as the principal; SASL PLAIN checks the
//! user and password as connection authentication does for every other connection;
//! ANONYMOUS is offered only when the channel has an MCAUSER; the principal is the channel's
//! MCAUSER when set. CHLAUTH maps and blocks as for any channel, the principal needs CONNECT
//! on the queue manager, and every attach opens the queue as that principal (PUT, GET).
//! TLS, SASL and the AMQP open must be done within [`Services::handshake`].

use crate::link;
use crate::sasl::{Principal, Sasl, Verify};
use fe2o3_amqp::acceptor::{ConnectionAcceptor, ListenerConnectionHandle, SessionAcceptor};
use fe2o3_amqp::types::definitions::{AmqpError, Error};
use sealmq_engine::Connection;
use sealmq_engine::QueueManager;
use sealmq_engine::channels::ChannelDef;
use sealmq_types::ReasonCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// How long a new connection has for TLS, SASL and the AMQP open (the default of
/// [`Services::handshake`]): one that sends nothing does not hold a MAXINST place for long.
pub const HANDSHAKE: std::time::Duration = std::time::Duration::from_secs(20);

/// The keystore's protector, read when a connection starts (REFRESH SECURITY TYPE(SSL) takes
/// effect for the next ones).
pub type Keys = Arc<dyn Fn() -> Option<Arc<sealmq_protect::Protector>> + Send + Sync>;

/// The queue manager's word on a new TCP connection from an address, before anything else is
/// done with it: a place in its budget of connections not yet authenticated (held until the
/// AMQP open is done; the queue manager may close the connection to make room for a newer one
/// by calling the closer it is given), or why not (a BLOCKADDR rule) for the log.
pub type Admit = Arc<
    dyn Fn(std::net::IpAddr, Box<dyn FnOnce() + Send>) -> Result<Box<dyn Send + Sync>, String>
        + Send
        + Sync,
>;

/// The queue manager's word on a connection whose TLS, SASL and AMQP open are done: a place
/// counted against MAXCHL (held until the connection ends), or why not (MAXCHL reached).
/// Sockets that never authenticate hold no MAXCHL place (issue 42).
pub type Establish = Arc<dyn Fn() -> Result<Box<dyn Send + Sync>, String> + Send + Sync>;

/// Sessions one AMQP connection may have (advertised as channel-max, enforced).
pub const MAX_SESSIONS: u16 = 32;

/// How long a refused link waits for the client's detach before it is dropped anyway.
/// Frames waiting between a connection's sessions and its socket (fe2o3's channel holds 65,535
/// by default): once they are full a link's send waits for the client to read, so a client
/// that stops reading stops its links getting.
pub const FRAMES_BUFFERED: usize = 64;
/// The same between a session's links and the session (and its attaches waiting): enough for
/// a connection's MAXHANDS links and their first frames.
pub const SESSION_FRAMES_BUFFERED: usize = 1024;

/// The bytes of messages still arriving that one connection's links may hold together
/// (at least one message of the channel's MAXMSGL).
pub const PARTIAL_BYTES: u64 = 64 << 20;

/// What the queue manager gives an AMQP channel besides its definition.
#[derive(Clone)]
pub struct Services {
    /// Connection authentication (SASL PLAIN).
    pub verify: Verify,
    /// The TLS configuration when the channel has SSLCIPH.
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// The protector for INTERCEPT(YES).
    pub keys: Keys,
    /// How long a new connection has for TLS, SASL and the AMQP open.
    pub handshake: std::time::Duration,
    /// MQI accounting of each connection (ACCTMQI).
    pub accounts: Option<crate::status::Accounts>,
    /// BLOCKADDR and the budget of connections not yet authenticated, asked as each
    /// connection is accepted.
    pub admit: Admit,
    /// MAXCHL, asked when a connection's AMQP open is done.
    pub establish: Establish,
}

impl Services {
    /// No TLS, no keystore, the default handshake time; `verify` checks SASL PLAIN.
    pub fn plain(verify: Verify) -> Services {
        Services {
            verify,
            tls: None,
            keys: Arc::new(|| None),
            handshake: HANDSHAKE,
            accounts: None,
            admit: Arc::new(|_, _| Ok(Box::new(()))),
            establish: Arc::new(|| Ok(Box::new(()))),
        }
    }
}

/// A started AMQP channel (START CHANNEL); STOP CHANNEL drops it.
pub struct AmqpChannel {
    pub name: String,
    /// Where it listens (the port chosen when PORT is 0 in tests).
    pub addr: std::net::SocketAddr,
    stop: tokio::sync::watch::Sender<bool>,
    thread: Option<std::thread::JoinHandle<()>>,
    connections: Arc<AtomicUsize>,
    clients: Arc<crate::status::Clients>,
}

impl AmqpChannel {
    /// Binds the channel's IPADDR and PORT and starts serving AMQP applications.
    pub fn start(
        qm: Arc<QueueManager>,
        def: &ChannelDef,
        services: Services,
    ) -> Result<AmqpChannel, String> {
        let ip = def.amqp_ipaddr();
        let ip = if ip.is_empty() {
            "0.0.0.0".to_string()
        } else {
            ip
        };
        let sock = std::net::TcpListener::bind((ip.as_str(), def.amqp_port())).map_err(|e| {
            format!(
                "channel {}: cannot listen on {ip}:{}: {e}",
                def.name,
                def.amqp_port()
            )
        })?;
        let addr = sock.local_addr().map_err(|e| e.to_string())?;
        sock.set_nonblocking(true).map_err(|e| e.to_string())?;
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name(format!("amqp-{}", def.name))
            .enable_all()
            .build()
            .map_err(|e| format!("channel {}: {e}", def.name))?;
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let connections = Arc::new(AtomicUsize::new(0));
        let clients = Arc::new(crate::status::Clients::default());
        let (d, count, shown) = (def.clone(), connections.clone(), clients.clone());
        let thread = std::thread::Builder::new()
            .name(format!("amqp-{}", def.name))
            .spawn(move || {
                rt.block_on(serve(qm, d, services, sock, stopped, (count, shown)));
                rt.shutdown_timeout(std::time::Duration::from_secs(2));
            })
            .map_err(|e| e.to_string())?;
        tracing::info!(channel = %def.name, %addr, "AMQP channel started");
        Ok(AmqpChannel {
            name: def.name.clone(),
            addr,
            stop,
            thread: Some(thread),
            connections,
            clients,
        })
    }

    /// AMQP connections open now (authenticated or not yet).
    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::Relaxed)
    }

    /// The authenticated connections, oldest first (DISPLAY CHSTATUS ... CLIENTID).
    pub fn clients(&self) -> Vec<crate::status::ClientStatus> {
        self.clients.all()
    }
}

impl Drop for AmqpChannel {
    /// Stops listening and ends its connections (their unsettled deliveries back out).
    fn drop(&mut self) {
        let _ = self.stop.send(true);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        tracing::info!(channel = %self.name, "AMQP channel stopped");
    }
}

async fn serve(
    qm: Arc<QueueManager>,
    def: ChannelDef,
    services: Services,
    sock: std::net::TcpListener,
    mut stopped: tokio::sync::watch::Receiver<bool>,
    (count, clients): (Arc<AtomicUsize>, Arc<crate::status::Clients>),
) {
    let Ok(listener) = tokio::net::TcpListener::from_std(sock) else {
        return;
    };
    let def = Arc::new(def);
    // Connections per client address (MAXINSTC).
    let per_addr: Arc<std::sync::Mutex<std::collections::HashMap<std::net::IpAddr, u32>>> =
        Arc::default();
    loop {
        tokio::select! {
            _ = stopped.changed() => break,
            r = listener.accept() => {
                let (stream, peer) = match r {
                    Ok(c) => c,
                    Err(e) => {
                        // Out of descriptors (or another passing failure): wait a little
                        // instead of spinning on accept.
                        tracing::warn!(channel = %def.name, "AMQP accept failed: {e}");
                        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                        continue;
                    }
                };
                // BLOCKADDR and the pre-authentication budget before anything else (no TLS,
                // no SASL for them); MAXCHL once the connection is open.
                let evicted = Arc::new(tokio::sync::Notify::new());
                let closer = evicted.clone();
                let place = match (services.admit)(peer.ip(), Box::new(move || closer.notify_one())) {
                    Ok(p) => p,
                    Err(why) => {
                        crate::refusals::refused(&def.name, &peer, &why);
                        continue;
                    }
                };
                if count.load(Ordering::Relaxed) >= def.maxinst as usize {
                    crate::refusals::refused(&def.name, &peer, &format!("MAXINST({}) reached", def.maxinst));
                    continue;
                }
                let Some(mine) = Instance::take(&per_addr, peer.ip(), def.maxinstc) else {
                    crate::refusals::refused(&def.name, &peer, &format!("MAXINSTC({}) reached for {}", def.maxinstc, peer.ip()));
                    continue;
                };
                let _ = stream.set_nodelay(true);
                let (qm, def, services, count) = (qm.clone(), def.clone(), services.clone(), count.clone());
                let clients = clients.clone();
                count.fetch_add(1, Ordering::Relaxed);
                tokio::spawn(async move {
                    let pending = Pending { place, evicted };
                    connection(qm, &def, services, stream, (peer, clients), pending).await;
                    count.fetch_sub(1, Ordering::Relaxed);
                    drop(mine);
                });
            }
        }
    }
}

/// A connection's place among those not yet authenticated, and word that the queue manager
/// closed it to make room.
struct Pending {
    place: Box<dyn Send + Sync>,
    evicted: Arc<tokio::sync::Notify>,
}

/// One connection counted for its client address (MAXINSTC); dropping it uncounts it.
struct Instance {
    of: Arc<std::sync::Mutex<std::collections::HashMap<std::net::IpAddr, u32>>>,
    ip: std::net::IpAddr,
}

impl Instance {
    fn take(
        of: &Arc<std::sync::Mutex<std::collections::HashMap<std::net::IpAddr, u32>>>,
        ip: std::net::IpAddr,
        max: u32,
    ) -> Option<Instance> {
        let mut m = link::lock(of);
        let n = m.entry(ip).or_default();
        if *n >= max {
            return None;
        }
        *n += 1;
        Some(Instance { of: of.clone(), ip })
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        let mut m = link::lock(&self.of);
        if let Some(n) = m.get_mut(&self.ip) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                m.remove(&self.ip);
            }
        }
    }
}

/// What a client refused for want of authority at connect is told (as MQ: the detail is in
/// the queue manager's error log).
pub const NOT_AUTHORIZED: &str =
    "MQRC 2035 NOT_AUTHORIZED: not authorized: the queue manager's error log says why";

fn unauthorized(detail: String) -> Error {
    Error::new(AmqpError::UnauthorizedAccess, detail, None)
}

/// TLS when the channel has SSLCIPH (its requirements checked), then SASL and the AMQP open:
/// the connection, the verified client certificate's DN, and who authenticated.
async fn handshake(
    qm: &Arc<QueueManager>,
    def: &ChannelDef,
    services: &Services,
    (stream, peer): (tokio::net::TcpStream, std::net::SocketAddr),
) -> Result<Shaken, String> {
    // Passwords in the clear (SASL PLAIN without TLS) only when connection authentication
    // allows them, as for every other connection (AUTHINFO PWCLEAR(YES)).
    let tls = services.tls.is_some();
    let connauth = qm.connauth();
    let clear_ok = connauth.as_ref().is_some_and(|a| a.allow_cleartext);
    // ANONYMOUS only where no password is required of clients.
    let no_password_needed = connauth
        .as_ref()
        .is_none_or(|a| a.chckclnt != sealmq_engine::authinfo::Check::Required);
    let principal = Principal::default();
    let ip = peer.ip().to_string();
    let accept = |dn: Option<String>| {
        let (q, d, ip2, dn2) = (qm.clone(), def.name.clone(), ip.clone(), dn.clone());
        let precheck: crate::sasl::Precheck = Arc::new(move |asserted, runs_as| {
            let partner = sealmq_engine::chlauth::Partner {
                channel: &d,
                svrconn: true,
                address: &ip2,
                sslpeer: dn2.as_deref(),
                clntuser: asserted,
                qmname: None,
            };
            match q.check_channel(&partner, runs_as) {
                sealmq_engine::chlauth::Decision::Allow { .. } => Ok(()),
                sealmq_engine::chlauth::Decision::Block { rule, detail } => {
                    Err(format!("refused by {rule}: {detail}"))
                }
            }
        });
        let sasl = Sasl::new(
            services.verify.clone(),
            def.mcauser.trim(),
            principal.clone(),
            dn,
        )
        .plain(tls || clear_ok)
        .guarded(&ip, precheck, no_password_needed);
        let mut b = ConnectionAcceptor::builder()
            .container_id(qm.name())
            // JMS 2 shared durable subscriptions (Qpid JMS asks for this capability).
            .add_offered_capabilities("SHARED-SUBS")
            .max_frame_size(65_536u32)
            .channel_max(MAX_SESSIONS - 1)
            .buffer_size(FRAMES_BUFFERED);
        // AMQPKA: sent as the idle-time-out (the client sends something at least every half
        // of it); a connection silent for AMQPKA is closed (its unsettled deliveries back out).
        if let Some(ka) = def.amqp_keepalive() {
            let ms = ka.as_millis().clamp(1, u128::from(u32::MAX)) as u32;
            b = b.idle_time_out(ms);
        }
        b.sasl_acceptor(sasl).build()
    };
    // A SASL refusal is logged with its own reason (never the password).
    let plain_offered = tls || clear_ok;
    let said = |e: String| match principal.refusal() {
        Some(why) => format!("{why} ({e})"),
        None if !plain_offered => format!(
            "{e} (SASL PLAIN is not offered on a channel without TLS: this queue manager \
             refuses passwords in the clear; use SSLCIPH, or AUTHINFO PWCLEAR(YES))"
        ),
        None => e,
    };
    let Some(cfg) = &services.tls else {
        let conn = accept(None)
            .accept(stream)
            .await
            .map_err(|e| said(e.to_string()))?;
        return Ok((conn, None, principal, Default::default()));
    };
    let tls = tokio_rustls::TlsAcceptor::from(cfg.clone())
        .accept(stream)
        .await
        .map_err(|e| format!("TLS handshake failed: {e}"))?;
    let (_, session) = tls.get_ref();
    let dn = session
        .peer_certificates()
        .and_then(|c| c.first())
        .and_then(|c| sealmq_protect::cert::Cert::from_der(c).ok())
        .map(|c| c.subject().to_string());
    let suite = session
        .negotiated_cipher_suite()
        .map(|c| format!("{:?}", c.suite()))
        .unwrap_or_default();
    let peer = (dn.as_deref().unwrap_or(""), suite.as_str());
    sealmq_engine::channels::tls_requirements(def, Some(peer), "the AMQP client")?;
    let negotiated = sealmq_wire::tls::negotiated(session);
    let conn = accept(dn.clone())
        .accept(tls)
        .await
        .map_err(|e| said(e.to_string()))?;
    Ok((conn, dn, principal, negotiated))
}

/// A connection past TLS, SASL and its open: the certificate's DN, the principal, and what
/// TLS negotiated (SECPROT, SSLGROUP; empty without TLS).
type Shaken = (
    ListenerConnectionHandle,
    Option<String>,
    Principal,
    sealmq_wire::tls::Agreed,
);

async fn connection(
    qm: Arc<QueueManager>,
    def: &ChannelDef,
    services: Services,
    stream: tokio::net::TcpStream,
    (peer, clients): (std::net::SocketAddr, Arc<crate::status::Clients>),
    pending: Pending,
) {
    let Some(mut a) = admit(&qm, def, &services, stream, peer, pending).await else {
        return;
    };
    let shown = clients.add(
        peer.to_string(),
        a.mq.user.clone(),
        a.asserted.clone(),
        a.conn.remote_container_id(),
        a.tls.clone(),
    );
    let shared = shared(&qm, def, &services, &a.mq, shown.client.clone());
    let refusal = serve_sessions(&mut a.conn, &shared, def, peer).await;
    match refusal {
        Some(e) => {
            let _ = a.conn.close_with_error(e).await;
        }
        None => {
            let _ = a.conn.on_close().await;
        }
    }
    drop(shown);
    drop(a.counted);
}

/// A connection past its handshake and every check, with its connection to the queue manager.
struct Admitted {
    conn: ListenerConnectionHandle,
    mq: Arc<Connection>,
    /// The user the client asserted, if any (DISPLAY CHSTATUS's CLNTUSER).
    asserted: Option<String>,
    /// What TLS negotiated (SECPROT, SSLGROUP).
    tls: sealmq_wire::tls::Agreed,
    /// Its place under MAXCHL, held while it is served.
    counted: Box<dyn Send + Sync>,
}

/// TLS, SASL and the open within the handshake's limit (given up to make room for another),
/// then MAXCHL, the principal, CHLAUTH, CONNECT authority and the engine connection. A
/// refusal is logged (the detail) and the client told (the reason); `None` then.
async fn admit(
    qm: &Arc<QueueManager>,
    def: &ChannelDef,
    services: &Services,
    stream: tokio::net::TcpStream,
    peer: std::net::SocketAddr,
    pending: Pending,
) -> Option<Admitted> {
    let limit = services.handshake;
    let shaken = tokio::select! {
        r = tokio::time::timeout(limit, handshake(qm, def, services, (stream, peer))) => r,
        _ = pending.evicted.notified() => {
            tracing::debug!(channel = %def.name, %peer, "AMQP connection closed before its open to make room");
            return None;
        }
    };
    drop(pending.place);
    let (mut conn, dn, principal, negotiated) = match shaken {
        Ok(Ok(c)) => c,
        Ok(Err(e)) => {
            crate::refusals::refused(&def.name, &peer, &e.to_string());
            return None;
        }
        Err(_) => {
            let why = format!("TLS, SASL and open not done within {limit:?}");
            crate::refusals::refused(&def.name, &peer, &why);
            return None;
        }
    };
    // Open: now it counts against MAXCHL.
    let counted = match (services.establish)() {
        Ok(p) => p,
        Err(why) => {
            crate::refusals::refused(&def.name, &peer, &why);
            let e = Error::new(
                AmqpError::ResourceLimitExceeded,
                format!(
                    "MQRC {} {}: {why}",
                    ReasonCode::ChannelNotAvailable.code(),
                    ReasonCode::ChannelNotAvailable.name()
                ),
                None,
            );
            let _ = conn.close_with_error(e).await;
            return None;
        }
    };
    let asserted = principal.asserted();
    match authorize(
        qm,
        def,
        (peer, negotiated.clone()),
        dn.as_deref(),
        &principal,
    ) {
        Ok(mq) => Some(Admitted {
            conn,
            mq,
            asserted,
            tls: negotiated,
            counted,
        }),
        Err(e) => {
            let _ = conn.close_with_error(e).await;
            None
        }
    }
}

/// Who the connection runs as — its principal, mapped or blocked by CHLAUTH as for any
/// channel (the queue manager's backstop rules refuse SYSTEM.* channels and channels running
/// as its own user until the administrator allows them) — with CONNECT authority checked, and
/// its engine connection; the error to close the connection with otherwise.
fn authorize(
    qm: &Arc<QueueManager>,
    def: &ChannelDef,
    (peer, agreed): (std::net::SocketAddr, sealmq_wire::tls::Agreed),
    dn: Option<&str>,
    principal: &Principal,
) -> Result<Arc<Connection>, Error> {
    use sealmq_engine::authority::{AuthObj, auth};
    use sealmq_engine::chlauth::{Decision, Partner};
    let Some(channel_user) = principal.get() else {
        return Err(unauthorized(
            "no principal: authenticate with SASL PLAIN or EXTERNAL".into(),
        ));
    };
    let ip = peer.ip().to_string();
    let asserted = principal.asserted();
    let partner = Partner {
        channel: &def.name,
        svrconn: true,
        address: &ip,
        sslpeer: dn,
        clntuser: asserted.as_deref(),
        qmname: None,
    };
    let user = match qm.check_channel(&partner, &channel_user) {
        Decision::Allow { user, .. } => user,
        Decision::Block { rule, detail } => {
            // The rule, its lists and mapped users are for the log; the client gets 2035.
            crate::refusals::refused(&def.name, &peer, &format!("by {rule}: {detail}"));
            return Err(unauthorized(NOT_AUTHORIZED.to_string()));
        }
    };
    if let Err(e) = qm.check_authority(&user, AuthObj::Qmgr, &qm.name(), auth::CONNECT) {
        crate::refusals::refused(&def.name, &peer, &format!("user {user}: {e}"));
        return Err(unauthorized(NOT_AUTHORIZED.to_string()));
    }
    let conn = Connection::connect(qm, &user, &format!("amqp:{}", def.name))
        .map_err(|e| link::amqp_error(&e))?;
    // Where it came from, as DISPLAY CONN shows it: the channel, and MQ's CONNAME host(port).
    conn.set_origin(sealmq_engine::conns::Origin {
        pid: None,
        channel: def.name.clone(),
        conname: format!("{}({})", peer.ip(), peer.port()),
        secprot: agreed.secprot,
        sslgroup: agreed.group,
    });
    Ok(Arc::new(conn))
}

/// What every session of the connection shares: the engine connection, interception,
/// accounting, the budgets of messages arriving and of links, temporary queues' model.
fn shared(
    qm: &Arc<QueueManager>,
    def: &ChannelDef,
    services: &Services,
    mq: &Arc<Connection>,
    client: Arc<crate::status::Client>,
) -> crate::session::Shared {
    // The channel's MAXMSGL bounds a message (0: MQ's "as large as the queue manager allows").
    let max = u64::from(def.max_msg_len);
    // Dynamic receiving links (temporary queues): MQ's TMPMODEL and TMPQPRFX of the channel.
    let noted = |k: &str, d: &str| {
        def.noted
            .get(k)
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
            .unwrap_or_else(|| d.to_string())
    };
    // Messages still arriving (multi-frame transfers), all links together: 64 MiB, or one
    // message of the channel's MAXMSGL when that is larger (docs/amqp.md, "Limits").
    let largest = match max {
        0 => u64::from(qm.qmgr().max_msg_len),
        m => m,
    };
    crate::session::Shared {
        mq: mq.clone(),
        // INTERCEPT(YES): the queue manager protects and unprotects with the keystore it has now.
        icpt: def.intercept.then(|| link::Intercept((services.keys)())),
        client,
        // Accounting as for every connection: one record when the connection's links are done.
        tally: services
            .accounts
            .as_ref()
            .and_then(|make| make(mq.id, &mq.user, &mq.appl)),
        held: Arc::new(crate::held::Held::default()),
        partial: Arc::new(fe2o3_amqp::partial::PartialBudget::new(
            PARTIAL_BYTES.max(largest),
        )),
        max,
        // Links (MAXHANDS, each may hold a handle) of this connection: a client past it is
        // refused, never served unbounded.
        max_links: qm.qmgr().max_handles() as usize,
        links_open: crate::session::Links::default(),
        model: noted("TMPMODEL", "SYSTEM.DEFAULT.MODEL.QUEUE"),
        prefix: noted("TMPQPRFX", "AMQP.*"),
    }
}

/// Accepts the connection's sessions (at most channel-max, advertised), each served on a task
/// of its own; the error to close the connection with when a client went past the limit.
async fn serve_sessions(
    conn: &mut ListenerConnectionHandle,
    shared: &crate::session::Shared,
    def: &ChannelDef,
    peer: std::net::SocketAddr,
) -> Option<Error> {
    let sessions_open = Arc::new(AtomicUsize::new(0));
    loop {
        // Local transactions (the coordinator link; JMS transacted sessions): one unit of
        // work each, the session's `Txns` taking part in every discharge (docs/amqp.md).
        let txns = crate::txn::Txns::new(shared.mq.clone(), shared.tally.clone());
        // Transfers posted to transactions not yet discharged are held until then: they
        // count against the connection's budget with the messages still arriving.
        let coordinator = fe2o3_amqp::transaction::coordinator::ControlLinkAcceptor::default()
            .with_resource(txns.clone())
            .with_budget(shared.partial.clone());
        let sessions = SessionAcceptor::builder()
            .buffer_size(SESSION_FRAMES_BUFFERED)
            .control_link_acceptor(coordinator)
            .handle_max(u32::try_from(shared.max_links.saturating_sub(1)).unwrap_or(u32::MAX))
            .build();
        let Ok(session) = sessions.accept(conn).await else {
            return None;
        };
        if sessions_open.fetch_add(1, Ordering::AcqRel) >= usize::from(MAX_SESSIONS) {
            tracing::warn!(channel = %def.name, %peer, "AMQP connection closed: more than {MAX_SESSIONS} sessions");
            sessions_open.fetch_sub(1, Ordering::AcqRel);
            return Some(Error::new(
                AmqpError::ResourceLimitExceeded,
                format!("a connection has at most {MAX_SESSIONS} sessions (channel-max)"),
                None,
            ));
        }
        let place = SessionPlace(sessions_open.clone());
        let shared = shared.clone();
        tokio::spawn(async move {
            let _place = place;
            crate::session::serve(session, shared, txns).await;
        });
    }
}

/// One session counted for its connection; dropping it uncounts it.
struct SessionPlace(Arc<AtomicUsize>);

impl Drop for SessionPlace {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

//! TCP listeners: the `--listen` shortcut and LISTENER objects (START/STOP LISTENER, and
//! CONTROL(QMGR|STARTONLY) ones with the queue manager). Each runs an accept thread; a
//! connection gets its own thread, as on the Unix socket. Stopping a listener shuts its
//! socket down (the accept wakes and ends) and frees the port; connections it accepted go on.

#![allow(unsafe_code)]

use crate::admit::limits::refuse_early;
use crate::net::conn::{self, serve_tls};
use crate::peer::Peer;
use crate::{Ctx, MAXCHL_REFUSAL, Sock};
use sealmq_engine::services::{ListenerControl, ListenerDef, ListenerStatus};
use sealmq_engine::{MqError, MqResult, QueueManager};
use sealmq_types::ReasonCode;
use sealmq_types::sync::lock;
use std::collections::HashMap;
use std::net::{SocketAddr, TcpListener, ToSocketAddrs};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

struct Running {
    listener: Arc<TcpListener>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
    /// The accept task on the event loop (its own copy of the socket).
    task: Option<tokio::task::AbortHandle>,
    status: ListenerStatus,
}

impl Running {
    fn end(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.task.take() {
            t.abort();
        }
        // SAFETY: shutdown(2) on a descriptor this Arc keeps open wakes the blocked accept.
        unsafe {
            libc::shutdown(self.listener.as_raw_fd(), libc::SHUT_RDWR);
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The listeners running in this server, by name.
pub(crate) struct Listeners {
    qm: Arc<QueueManager>,
    ctx: Ctx,
    /// The event loop connections are served on (none: a thread each).
    net: Option<Arc<crate::net::evloop::Net>>,
    running: Mutex<HashMap<String, Running>>,
}

impl Listeners {
    pub(crate) fn new(
        qm: Arc<QueueManager>,
        ctx: Ctx,
        net: Option<Arc<crate::net::evloop::Net>>,
    ) -> Arc<Listeners> {
        Arc::new(Listeners {
            qm,
            ctx,
            net,
            running: Mutex::new(HashMap::new()),
        })
    }

    /// Binds `addr` and serves it under `name`; the address actually bound.
    pub(crate) fn run(&self, name: &str, addr: &str, backlog: u32) -> MqResult<SocketAddr> {
        let mut running = lock(&self.running);
        if running.contains_key(name) {
            return Err(MqError::new(
                ReasonCode::ObjectInUse,
                format!("listener {name} is already running"),
            ));
        }
        let addrs: Vec<SocketAddr> = addr
            .to_socket_addrs()
            .map_err(|e| {
                MqError::new(
                    ReasonCode::OptionsError,
                    format!("listener {name}: '{addr}' is not an address to listen on: {e}"),
                )
            })?
            .collect();
        let tl = TcpListener::bind(&addrs[..]).map_err(|e| {
            let why = if e.kind() == std::io::ErrorKind::AddrInUse {
                "the port is in use by another program (or another listener): choose another \
                 PORT, or stop what holds it"
                    .to_string()
            } else {
                e.to_string()
            };
            MqError::new(
                ReasonCode::ResourceProblem,
                format!("listener {name} cannot listen on {addr}: {why}"),
            )
        })?;
        if backlog > 0 {
            // SAFETY: listen(2) again on a listening socket only changes its backlog.
            unsafe {
                libc::listen(tl.as_raw_fd(), backlog.min(i32::MAX as u32) as i32);
            }
        }
        let local = tl.local_addr().map_err(|e| {
            MqError::new(ReasonCode::ResourceProblem, format!("listener {name}: {e}"))
        })?;
        let stop = Arc::new(AtomicBool::new(false));
        let (thread, task) = match &self.net {
            Some(net) => {
                let rt = net.handle();
                let ioerr = |e: std::io::Error| {
                    MqError::new(ReasonCode::ResourceProblem, format!("listener {name}: {e}"))
                };
                let copy = tl.try_clone().map_err(ioerr)?;
                copy.set_nonblocking(true).map_err(ioerr)?;
                let _in = rt.enter();
                let l = tokio::net::TcpListener::from_std(copy).map_err(ioerr)?;
                let t = rt.spawn(crate::net::evloop::accept_tcp(
                    l,
                    self.qm.clone(),
                    self.ctx.clone(),
                    net.clone(),
                ));
                (None, Some(t.abort_handle()))
            }
            None => {
                let (l, stop, qm, ctx) = (
                    Arc::new(tl.try_clone().map_err(|e| {
                        MqError::new(ReasonCode::ResourceProblem, format!("listener {name}: {e}"))
                    })?),
                    stop.clone(),
                    self.qm.clone(),
                    self.ctx.clone(),
                );
                let t = std::thread::Builder::new()
                    .name(format!("listener {name}"))
                    .spawn(move || accept_loop(&l, &stop, &qm, &ctx))
                    .map_err(|e| MqError::new(ReasonCode::ResourceProblem, e.to_string()))?;
                (Some(t), None)
            }
        };
        let listener = Arc::new(tl);
        running.insert(
            name.to_string(),
            Running {
                listener,
                stop,
                thread,
                task,
                status: ListenerStatus {
                    name: name.to_string(),
                    addr: local.to_string(),
                    started: sealmq_types::time::now_secs(),
                    backlog: if backlog == 0 { 128 } else { backlog },
                },
            },
        );
        tracing::info!(listener = name, addr = %local, "listener started");
        Ok(local)
    }

    /// Starts every LISTENER with CONTROL(QMGR) or CONTROL(STARTONLY); one that cannot
    /// start is logged and the queue manager goes on, as MQ's.
    pub(crate) fn start_with_qmgr(&self) {
        use sealmq_engine::services::Control;
        for l in self.qm.objects::<ListenerDef>() {
            if matches!(l.control, Control::Qmgr | Control::StartOnly)
                && let Err(e) = self.run(&l.name, &l.bind_addr(), l.backlog)
            {
                tracing::error!(listener = %l.name, "{}", e.detail);
            }
        }
    }

    pub(crate) fn stop_all(&self) {
        let all: Vec<Running> = lock(&self.running).drain().map(|(_, r)| r).collect();
        for r in all {
            r.end();
        }
    }
}

/// MQSC's START/STOP LISTENER and DISPLAY LSSTATUS.
pub(crate) struct Control(pub(crate) Arc<Listeners>);

impl ListenerControl for Control {
    fn start(&self, def: &ListenerDef) -> MqResult<String> {
        let a = self.0.run(&def.name, &def.bind_addr(), def.backlog)?;
        Ok(format!("SMQ0175I Listener {} started on {a}.", def.name))
    }

    fn stop(&self, name: &str) -> MqResult<String> {
        let r = lock(&self.0.running).remove(name);
        match r {
            Some(r) => {
                r.end();
                tracing::info!(listener = name, "listener stopped");
                Ok(format!("SMQ0176I Listener {name} stopped."))
            }
            None => Ok(format!("SMQ0177I Listener {name} is not running.")),
        }
    }

    fn status(&self) -> Vec<ListenerStatus> {
        let mut v: Vec<ListenerStatus> = lock(&self.0.running)
            .values()
            .map(|r| r.status.clone())
            .collect();
        v.sort_by(|a, b| a.name.cmp(&b.name));
        v
    }
}

fn accept_loop(tl: &TcpListener, stop: &AtomicBool, qm: &Arc<QueueManager>, ctx: &Ctx) {
    for s in tl.incoming() {
        if stop.load(Ordering::Relaxed) || ctx.stop.load(Ordering::Relaxed) {
            break;
        }
        let s = match s {
            Ok(s) => s,
            Err(e) => {
                crate::admit::limits::accept_failed("a TCP listener", &e);
                continue;
            }
        };
        let _ = s.set_nodelay(true);
        let addr = s.peer_addr().map(|a| a.to_string()).unwrap_or_default();
        // A blocked address is refused before anything else: no thread, no TLS, no password.
        if let Some(why) = qm.address_blocked(&crate::admit::ip_of(&addr)) {
            ctx.security
                .events
                .log(&format!("connection from {addr} refused (2035): {why}"));
            if ctx.security.tls().is_none() {
                refuse_early(
                    &s,
                    ReasonCode::NotAuthorized.code(),
                    crate::admit::NOT_AUTHORIZED,
                );
            } else {
                let _ = s.shutdown(std::net::Shutdown::Both);
            }
            continue;
        }
        // MAXCHL connections served: refused now, before any thread or buffer is given.
        let maxchl = qm.qmgr().maxchl;
        if ctx.limit.full(maxchl) {
            ctx.refused(&format!("connection from {addr}"), maxchl);
            if ctx.security.tls().is_none() {
                refuse_early(&s, ReasonCode::ChannelNotAvailable.code(), MAXCHL_REFUSAL);
            } else {
                let _ = s.shutdown(std::net::Shutdown::Both);
            }
            continue;
        }
        // Until its first frame the socket counts among those waiting (a budget of their own,
        // the oldest closed first), not against MAXCHL.
        let Ok(held) = s.try_clone() else {
            continue;
        };
        let (pending, line) = ctx.pending.admit(
            &crate::admit::ip_of(&addr),
            Box::new(move || {
                let _ = held.shutdown(std::net::Shutdown::Both);
            }),
        );
        if let Some(line) = line {
            ctx.security.events.log(&line);
        }
        // The handshake and first frame must come within HANDSHAKE.
        let _ = s.set_read_timeout(Some(crate::HANDSHAKE));
        // The configuration in use now: REFRESH SECURITY TYPE(SSL) may replace it.
        let tls = ctx.security.tls();
        let (qm, ctx) = (qm.clone(), ctx.clone());
        std::thread::spawn(move || {
            let Ok(k) = s.try_clone() else { return };
            let id = ctx.register(Sock::Tcp(k));
            match tls {
                None => {
                    if let Ok(w) = s.try_clone() {
                        let peer = Peer::Tcp {
                            tls: None,
                            addr,
                            sock: s.try_clone().ok(),
                        };
                        conn::serve_plain(&qm, s, w, &peer, &ctx, Some(pending));
                    }
                }
                Some(cfg) => serve_tls(&qm, s, cfg, &ctx, addr, Some(pending)),
            }
            ctx.unregister(id);
        });
    }
}

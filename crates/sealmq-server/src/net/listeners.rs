//! TCP listeners: the `--listen` shortcut and LISTENER objects (START/STOP LISTENER, and
//! CONTROL(QMGR|STARTONLY) ones with the queue manager). Each is an accept task on the event
//! loop (`net/evloop/`), whose connections are tasks there too. Stopping a listener ends its
//! task and shuts its socket down, freeing the port; connections it accepted go on.

#![allow(unsafe_code)]

use crate::Ctx;
use sealmq_engine::services::{ListenerControl, ListenerDef, ListenerStatus};
use sealmq_engine::{MqError, MqResult, QueueManager};
use sealmq_types::ReasonCode;
use sealmq_types::sync::lock;
use std::collections::HashMap;
use std::net::{SocketAddr, TcpListener, ToSocketAddrs};
use std::os::fd::AsRawFd;
use std::sync::{Arc, Mutex};

struct Running {
    listener: Arc<TcpListener>,
    /// The accept task on the event loop (its own copy of the socket).
    task: tokio::task::AbortHandle,
    status: ListenerStatus,
}

impl Running {
    fn end(self) {
        self.task.abort();
        // SAFETY: shutdown(2) on a descriptor this Arc keeps open; the port is free once
        // the task's copy is dropped too.
        unsafe {
            libc::shutdown(self.listener.as_raw_fd(), libc::SHUT_RDWR);
        }
    }
}

/// The listeners running in this server, by name.
pub(crate) struct Listeners {
    qm: Arc<QueueManager>,
    ctx: Ctx,
    /// The event loop connections are served on.
    net: Arc<crate::net::evloop::Net>,
    running: Mutex<HashMap<String, Running>>,
}

impl Listeners {
    pub(crate) fn new(
        qm: Arc<QueueManager>,
        ctx: Ctx,
        net: Arc<crate::net::evloop::Net>,
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
        let ioerr = |e: std::io::Error| {
            MqError::new(ReasonCode::ResourceProblem, format!("listener {name}: {e}"))
        };
        let rt = self.net.handle();
        let copy = tl.try_clone().map_err(ioerr)?;
        copy.set_nonblocking(true).map_err(ioerr)?;
        let _in = rt.enter();
        let l = tokio::net::TcpListener::from_std(copy).map_err(ioerr)?;
        let task = rt
            .spawn(crate::net::evloop::accept_tcp(
                l,
                self.qm.clone(),
                self.ctx.clone(),
                self.net.clone(),
            ))
            .abort_handle();
        let listener = Arc::new(tl);
        running.insert(
            name.to_string(),
            Running {
                listener,
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
        Ok(format!("AMQ8021I: Listener {} started on {a}.", def.name))
    }

    fn stop(&self, name: &str) -> MqResult<String> {
        let r = lock(&self.0.running).remove(name);
        match r {
            Some(r) => {
                r.end();
                tracing::info!(listener = name, "listener stopped");
                Ok(format!("SMQ0176I: Listener {name} stopped."))
            }
            None => Ok(format!("SMQ0177I: Listener {name} is not running.")),
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

//! The installation's server (`sealmq web`), as IBM's mqweb is to an installation: one HTTPS
//! listener for every queue manager under `SEALMQ_HOME`, the running ones and the ended ones,
//! which it starts and stops for an administrator.
//!
//! It authenticates each request itself (HTTP basic, its own login sessions, or a client
//! certificate, against its host's users: [`Host`]), gives the user roles, and answers what is
//! the installation's: `GET /admin/qmgr` (every queue manager and its state),
//! `GET /admin/installation`, `POST /admin/action/qmgr/{qm}/start|stop` (sealmq's: the admin
//! role). Everything under a queue manager (`/admin/qmgr/{qm}/...`,
//! `/admin/action/qmgr/{qm}/mqsc`, `/messaging/qmgr/{qm}/...`) goes on to that queue manager's
//! private socket ([`crate::local`]) with the principal and roles asserted, where the queue
//! manager checks its authority as for any other connection of that user. A queue manager
//! that is not running answers MQ's 503 with reason 2059.

use crate::auth::{self, Door, Rq, Who, forbidden, not_allowed};
use crate::{Body, Host, Roles, Web, reply};
use hyper::body::Incoming;
use hyper::{Method, Request, Response};
use sealmq_types::ReasonCode;
use sealmq_types::slots::ConnState;
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

/// What the installation's server asks of its process: whether a queue manager runs, and
/// starting and stopping one (each blocks until done).
pub trait Control: Send + Sync {
    fn running(&self, qm: &str) -> bool;
    /// Starts the queue manager; the line that says so, or why not.
    fn start(&self, qm: &str) -> Result<String, String>;
    /// Stops the queue manager (quiescing); the line that says so, or why not.
    fn stop(&self, qm: &str) -> Result<String, String>;
}

/// What the administrator chose (`sealmq web ...`).
pub struct Config {
    pub addr: SocketAddr,
    /// TLS from the installation's keystore (`<SEALMQ_HOME>/web/keystore`).
    pub tls: Arc<rustls::ServerConfig>,
    /// `SEALMQ_HOME`: its queue managers are `qmgrs/<name>`.
    pub home: PathBuf,
    pub roles: Roles,
    /// Log in a client certificate the installation's keystore trusts as its CN's user.
    pub client_certs: bool,
    /// The user who is always an admin (the installation's owner).
    pub admin: Option<String>,
    pub host: Arc<dyn Host>,
    pub control: Arc<dyn Control>,
}

struct Inst {
    door: Door,
    home: PathBuf,
    control: Arc<dyn Control>,
}

/// Binds `cfg.addr` (port 0: any) and serves on a thread of its own.
pub fn start(cfg: Config) -> Result<Web, String> {
    let mut tls = (*cfg.tls).clone();
    tls.alpn_protocols = vec![b"http/1.1".to_vec()];
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(tls));
    let certs = cfg.client_certs;
    let inst = Arc::new(Inst {
        door: Door {
            host: cfg.host,
            sessions: auth::Sessions::default(),
            roles: cfg.roles,
            admin: cfg.admin,
            qm_name: None,
        },
        home: cfg.home,
        control: cfg.control,
    });
    let web = crate::spawn_server(cfg.addr, "web", 48, move |listener, stop| {
        crate::serve_tls(
            listener,
            acceptor,
            certs,
            stop,
            move |peer, cert_user, state, rq| {
                let inst = inst.clone();
                async move { handle(inst, peer, cert_user, &state, rq).await }
            },
        )
    })?;
    if let Some(a) = web.addr {
        tracing::info!("REST API and web console for the installation on https://{a}/ibmmq/");
    }
    Ok(web)
}

async fn handle(
    inst: Arc<Inst>,
    peer: SocketAddr,
    cert_user: Option<Arc<str>>,
    state: &ConnState,
    rq: Request<Incoming>,
) -> Response<Body> {
    let (parts, body) = rq.into_parts();
    let mut rq = Rq::new(parts, peer, cert_user);
    if rq.method == Method::GET
        && let Some(r) = crate::console::file(&rq.path)
    {
        return r;
    }
    let (who, segs) = match crate::admit(&inst.door, &mut rq, body, state).await {
        Ok(x) => x,
        Err(r) => return r,
    };
    let segs: Vec<&str> = segs.iter().map(String::as_str).collect();
    route(&inst, &who, &rq, &segs).await
}

async fn route(inst: &Arc<Inst>, who: &Who, rq: &Rq, segs: &[&str]) -> Response<Body> {
    match (segs, &rq.method) {
        (["admin", "qmgr"], &Method::GET) => list(inst, who, rq).await,
        (["admin", "qmgr"], _) => not_allowed(),
        (["admin", "qmgr", qm], &Method::GET) => match known(inst, qm) {
            Err(r) => r,
            Ok(()) if !who.readonly => forbidden(&format!("display {qm}")),
            Ok(()) => match one(inst, who, rq, qm).await {
                Some(v) => reply::json(200, &json!({"qmgr": [v]})),
                None => ended_json(qm),
            },
        },
        (["admin", "action", "qmgr", qm, op @ ("start" | "stop")], m) => {
            if *m != Method::POST {
                return not_allowed();
            }
            if let Err(r) = known(inst, qm) {
                return r;
            }
            control(inst, who, qm, op).await
        }
        (["admin", "installation", rest @ ..], &Method::GET) if rest.len() <= 1 => {
            crate::admin::installation(Some(&inst.home), who, rq, rest.first().copied())
        }
        (["admin", "installation", ..], _) => not_allowed(),
        (["admin", "qmgr", qm, ..], _)
        | (["admin", "action", "qmgr", qm, ..], _)
        | (["messaging", "qmgr", qm, ..], _) => {
            if let Err(r) = known(inst, qm) {
                return r;
            }
            match crate::proxy::forward(&inst.home, qm, who, rq).await {
                Ok(r) => r,
                Err(e) => unavailable(inst, qm, &e),
            }
        }
        _ => reply::error(
            404,
            "MQWB0902E",
            &format!("No resource at {}.", rq.path),
            "REST resources are under /ibmmq/rest/v2/admin and /ibmmq/rest/v2/messaging.",
            0,
        ),
    }
}

/// The queue managers of the installation, by name.
fn names(inst: &Inst) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(inst.home.join("qmgrs"))
        .map(|rd| {
            rd.flatten()
                .filter(|e| e.path().join("log").exists())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| sealmq_engine::objects::validate_name(n).is_ok())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// A 404 unless `qm` is a queue manager of the installation.
fn known(inst: &Inst, qm: &str) -> Result<(), Response<Body>> {
    if sealmq_engine::objects::validate_name(qm).is_ok()
        && inst.home.join("qmgrs").join(qm).join("log").exists()
    {
        return Ok(());
    }
    Err(reply::error(
        404,
        "MQWB0009E",
        &format!("Could not query the queue manager '{qm}'."),
        "No queue manager of that name is in this installation (sealmq status lists them).",
        ReasonCode::QMgrNameError.code(),
    ))
}

/// The queue manager's answer to `GET /admin/qmgr/{qm}`, if it runs and answers. Asked of
/// its socket alone (an ended one's is refused at once): a list polled by consoles does not
/// probe queue managers' lock files, which a starting queue manager must find free.
async fn one(inst: &Inst, who: &Who, rq: &Rq, qm: &str) -> Option<Value> {
    let path = format!("/ibmmq/rest/v2/admin/qmgr/{}", crate::proxy::encode(qm));
    let v = crate::proxy::get_json(&inst.home, qm, who, rq, &path).await?;
    v["qmgr"].get(0).cloned()
}

/// MQ's answer for a queue manager that is not running.
fn ended(qm: &str) -> Value {
    json!({"name": qm, "state": "ended"})
}

fn ended_json(qm: &str) -> Response<Body> {
    reply::json(200, &json!({"qmgr": [ended(qm)]}))
}

/// `GET /admin/qmgr`: every queue manager of the installation with its state (`?state=`
/// keeps those in one state, as MQ's does).
async fn list(inst: &Arc<Inst>, who: &Who, rq: &Rq) -> Response<Body> {
    if !who.readonly {
        return forbidden("display queue managers");
    }
    let mut state = None;
    for (k, v) in form_urlencoded::parse(rq.query.as_bytes()) {
        match &*k {
            "state" if matches!(&*v, "running" | "ended") => state = Some(v.into_owned()),
            "status" | "attributes" => {}
            _ => {
                return reply::error(
                    400,
                    "MQWB0910E",
                    &format!("'{k}={v}' is not a query parameter of the qmgr resource."),
                    "Use state=running|ended, status or attributes (docs/rest.md).",
                    0,
                );
            }
        }
    }
    let mut out = Vec::new();
    for n in names(inst) {
        let v = one(inst, who, rq, &n).await.unwrap_or_else(|| ended(&n));
        if state.as_deref().is_none_or(|s| v["state"] == s) {
            out.push(v);
        }
    }
    reply::json(200, &json!({"qmgr": out}))
}

/// `POST /admin/action/qmgr/{qm}/start|stop` (the admin role): runs `sealmq start` or `sealmq
/// stop` for it, and answers with its state after.
async fn control(inst: &Arc<Inst>, who: &Who, qm: &str, op: &str) -> Response<Body> {
    if !who.admin {
        return forbidden(&format!("{op} queue manager {qm}"));
    }
    let (c, name, verb) = (inst.control.clone(), qm.to_string(), op.to_string());
    let done = crate::blocking(move || {
        let running = c.running(&name);
        match (verb.as_str(), running) {
            ("start", true) => Ok(format!("Queue manager {name} is already running.")),
            ("stop", false) => Ok(format!("Queue manager {name} is not running.")),
            ("start", false) => c.start(&name),
            _ => c.stop(&name),
        }
    })
    .await
    .unwrap_or_else(|| Err("the request was cut short".into()));
    match done {
        Ok(line) => {
            tracing::info!(user = %who.user, "sealmq web: {op} {qm}: {line}");
            let state = if inst.control.running(qm) {
                "running"
            } else {
                "ended"
            };
            reply::json(
                200,
                &json!({"qmgr": [{"name": qm, "state": state}], "message": [line]}),
            )
        }
        Err(e) => {
            tracing::warn!(user = %who.user, "sealmq web: {op} {qm} failed: {e}");
            reply::error(
                500,
                "MQWB0009E",
                &format!("Could not {op} the queue manager '{qm}': {e}"),
                "See the queue manager's qm.log and error log.",
                ReasonCode::QMgrNotAvailable.code(),
            )
        }
    }
}

/// A queue manager's request that did not reach it.
fn unavailable(inst: &Inst, qm: &str, why: &str) -> Response<Body> {
    let running = inst.control.running(qm);
    if running {
        tracing::warn!("sealmq web: queue manager {qm} did not answer: {why}");
    }
    reply::error(
        503,
        "MQWB0009E",
        &format!(
            "Could not query the queue manager '{qm}': {}",
            if running {
                "it does not answer"
            } else {
                "it is not running"
            }
        ),
        &format!(
            "Start it (POST /admin/action/qmgr/{qm}/start, the console, or sealmq start {qm})."
        ),
        ReasonCode::QMgrNotAvailable.code(),
    )
}

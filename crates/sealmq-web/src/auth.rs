//! Who a request is, and what it may do: a client certificate (with `--web-client-certs`: its
//! subject's CN is the user), HTTP basic credentials or the session cookie of
//! `POST /login` (checked by the queue manager's connection authentication), the roles of
//! [`Roles`], and the CSRF header every request that changes something carries
//! (`ibm-mq-rest-csrf-token`, any value, as MQ's REST API wants it: a browser sends no such
//! header on a cross-site form or image request).

use crate::{Body, Host, MAX_SESSIONS, SESSIONS_PER_USER, reply};
use base64::Engine;
use hyper::header::{AUTHORIZATION, COOKIE, HeaderValue, SET_COOKIE};
use hyper::{HeaderMap, Method, Response};
use sealmq_types::ReasonCode;
use sealmq_types::sync::lock;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The session cookie's name (MQ's).
pub const COOKIE_NAME: &str = "LtpaToken2";
/// A session unused this long ends.
pub const SESSION_IDLE: Duration = Duration::from_secs(30 * 60);
/// A session ends this long after its login however much it is used (MQ's LTPA token
/// expiry, `ltpaExpiration`, 120 minutes by default).
pub const SESSION_LIFETIME: Duration = Duration::from_secs(120 * 60);
/// The CSRF header.
pub const CSRF: &str = "ibm-mq-rest-csrf-token";

/// Users in each role (MQ's MQWebAdmin, MQWebAdminRO, MQWebUser); `*` is any authenticated
/// user, `group:NAME` every member of operating-system group NAME. The queue manager's administrator is always an admin. Nobody else has a role
/// unless named.
#[derive(Clone, Debug, Default)]
pub struct Roles {
    pub admin: Vec<String>,
    pub readonly: Vec<String>,
    pub messaging: Vec<String>,
}

/// Whether `list` names `user`: by name, by `*`, or by `group:NAME` when the user is a
/// member of operating-system group NAME (`groups`, looked up only when a list names one).
fn named(list: &[String], user: &str, groups: &mut Option<Vec<String>>) -> bool {
    list.iter().any(|u| match u.strip_prefix("group:") {
        Some(g) => groups
            .get_or_insert_with(|| sealmq_engine::authority::os_groups(user))
            .iter()
            .any(|m| m == g),
        None => u == "*" || u == user,
    })
}

/// Who may come in, and as what: the password checks of the host, the login sessions, the
/// roles, the administrator, and whose server this is (a queue manager's, or the
/// installation's with `sealmq web`).
pub(crate) struct Door {
    pub host: Arc<dyn Host>,
    pub sessions: Sessions,
    pub roles: Roles,
    /// The user who is always an admin (the queue manager's, or the installation's owner).
    pub admin: Option<String>,
    /// The queue manager this server is (`None`: the installation's server).
    pub qm_name: Option<String>,
}

/// An authenticated request's principal and roles.
#[derive(Clone, Debug)]
pub(crate) struct Who {
    pub user: String,
    /// How the request was authenticated, as MQ's `GET /login` names it (`basic`,
    /// `ltpaToken`, `clientCertificate`).
    pub via: &'static str,
    pub admin: bool,
    pub readonly: bool,
    pub messaging: bool,
}

impl Who {
    fn of(door: &Door, user: &str, via: &'static str) -> Who {
        let roles = &door.roles;
        let mut groups = None;
        let admin = door.admin.as_deref() == Some(user) || named(&roles.admin, user, &mut groups);
        Who {
            user: user.to_string(),
            via,
            admin,
            readonly: admin || named(&roles.readonly, user, &mut groups),
            messaging: admin || named(&roles.messaging, user, &mut groups),
        }
    }

    pub fn role_names(&self) -> Vec<&'static str> {
        let mut v = Vec::new();
        if self.admin {
            v.push("MQWebAdmin");
        }
        if self.readonly {
            v.push("MQWebAdminRO");
        }
        if self.messaging {
            v.push("MQWebUser");
        }
        v
    }
}

/// A request read whole.
pub(crate) struct Rq {
    pub method: Method,
    pub path: String,
    pub query: String,
    pub headers: HeaderMap,
    pub body: bytes::Bytes,
    pub peer: SocketAddr,
    /// The REST API version of the path (`/ibmmq/rest/v1`, `v2`, `v3`): version 3 writes ids
    /// with MQ's `ID:` prefix and takes an application's own correlation id.
    pub api: u8,
    /// The user a client certificate of this connection names (`--web-client-certs`).
    pub cert_user: Option<Arc<str>>,
    /// The principal and roles the installation's server (`sealmq web`) authenticated,
    /// asserted on the queue manager's private socket ([`crate::local`]).
    pub asserted: Option<Who>,
}

impl Rq {
    /// A request's head, its body not read yet.
    pub fn new(
        parts: hyper::http::request::Parts,
        peer: SocketAddr,
        cert_user: Option<Arc<str>>,
    ) -> Rq {
        Rq {
            method: parts.method,
            path: parts.uri.path().to_string(),
            query: parts.uri.query().unwrap_or("").to_string(),
            headers: parts.headers,
            body: bytes::Bytes::new(),
            peer,
            cert_user,
            asserted: None,
            api: 2,
        }
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

/// Login sessions by token.
#[derive(Default)]
pub(crate) struct Sessions(Mutex<HashMap<String, Session>>);

struct Session {
    user: String,
    made: Instant,
    used: Instant,
    /// The host's security epoch the user was last known in ([`Host::security_epoch`]).
    epoch: u64,
}

impl Session {
    fn live(&self) -> bool {
        self.used.elapsed() < SESSION_IDLE && self.made.elapsed() < SESSION_LIFETIME
    }
}

impl Sessions {
    fn open(&self, user: &str, epoch: u64) -> Option<String> {
        let mut b = [0u8; 32];
        aws_lc_rs::rand::fill(&mut b).ok()?;
        let token: String = b.iter().map(|x| format!("{x:02x}")).collect();
        let mut m = lock(&self.0);
        m.retain(|_, s| s.live());
        // A user's own oldest session makes room for its new one, and only then the oldest
        // of all: no user can log another out by logging in often.
        let oldest = |m: &HashMap<String, Session>, of: Option<&str>| {
            m.iter()
                .filter(|(_, s)| of.is_none_or(|u| s.user == u))
                .min_by_key(|(_, s)| s.used)
                .map(|(k, _)| k.clone())
        };
        if m.values().filter(|s| s.user == user).count() >= SESSIONS_PER_USER
            && let Some(k) = oldest(&m, Some(user))
        {
            m.remove(&k);
        }
        if m.len() >= MAX_SESSIONS
            && let Some(k) = oldest(&m, None)
        {
            m.remove(&k);
        }
        let now = Instant::now();
        m.insert(
            token.clone(),
            Session {
                user: user.to_string(),
                made: now,
                used: now,
                epoch,
            },
        );
        Some(token)
    }

    /// The session's user, while the session lives and, after connection authentication was
    /// read again, while the user can still log in.
    fn user(&self, token: &str, host: &dyn Host) -> Option<String> {
        let epoch = host.security_epoch();
        let (user, stale) = {
            let mut m = lock(&self.0);
            let s = m.get_mut(token)?;
            if !s.live() {
                m.remove(token);
                return None;
            }
            s.used = Instant::now();
            (s.user.clone(), s.epoch != epoch)
        };
        if stale {
            // Looked at outside the lock (PAM users: the passwd database).
            let known = host.user_known(&user);
            let mut m = lock(&self.0);
            if !known {
                m.remove(token);
                tracing::info!(user = %user, "REST session ended: the user can no longer log in");
                return None;
            }
            if let Some(s) = m.get_mut(token) {
                s.epoch = epoch;
            }
        }
        Some(user)
    }

    fn close(&self, token: &str) {
        lock(&self.0).remove(token);
    }
}

fn cookie_token(rq: &Rq) -> Option<String> {
    rq.headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|c| {
            let (k, v) = c.trim().split_once('=')?;
            (k == COOKIE_NAME && !v.is_empty()).then(|| v.to_string())
        })
}

fn basic(rq: &Rq) -> Option<(String, String)> {
    let v = rq.header(AUTHORIZATION.as_str())?;
    let b64 = v
        .strip_prefix("Basic ")
        .or_else(|| v.strip_prefix("basic "))?;
    let raw = base64::engine::general_purpose::STANDARD
        .decode(b64.trim())
        .ok()?;
    let s = String::from_utf8(raw).ok()?;
    let (u, p) = s.split_once(':')?;
    Some((u.to_string(), p.to_string()))
}

/// Answers 401. The Basic challenge goes only to a request that tried Basic credentials: a
/// browser's script (the console) that gets it would open the browser's login dialog, stalled.
fn unauthenticated(rq: &Rq) -> Response<Body> {
    let mut r = reply::error(
        401,
        "MQWB0104E",
        "The REST API request is not authenticated.",
        "Send HTTP basic credentials, or log in with POST /ibmmq/rest/v2/login and send its cookie.",
        0,
    );
    if rq.headers.contains_key(AUTHORIZATION) {
        r.headers_mut().insert(
            "www-authenticate",
            HeaderValue::from_static("Basic realm=\"IBM MQ\""),
        );
    }
    r
}

async fn check(door: &Door, rq: &Rq, user: String, password: String) -> bool {
    let (host, addr) = (door.host.clone(), rq.peer.ip().to_string());
    crate::blocking(move || host.check_password(&addr, &user, &password))
        .await
        .unwrap_or(false)
}

/// The user a client certificate names: its subject's common name, when it is a user id
/// (1 to 64 characters of letters, digits and `._@-`; a CN that is not one logs nobody in).
/// The TLS handshake has already checked that the certificate chains to one the queue
/// manager's keystore trusts.
pub(crate) fn certificate_user(
    certs: Option<&[rustls::pki_types::CertificateDer]>,
) -> Option<String> {
    let leaf = certs?.first()?;
    let cert = sealmq_protect::cert::Cert::from_der(leaf).ok()?;
    let cn = cert
        .subject()
        .attributes()
        .find(|(oid, _)| *oid == "2.5.4.3")
        .map(|(_, v)| v.to_string())?;
    let ok = (1..=64).contains(&cn.len())
        && cn
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '@' | '-'));
    ok.then_some(cn)
}

/// The request's principal: its client certificate's (with `--web-client-certs`), its
/// session cookie's, or its basic credentials' (checked now).
pub(crate) async fn authenticate(door: &Door, rq: &Rq) -> Result<Who, Response<Body>> {
    if let Some(w) = &rq.asserted {
        return Ok(w.clone());
    }
    if let Some(u) = &rq.cert_user {
        return Ok(Who::of(door, u, "clientCertificate"));
    }
    if let Some(t) = cookie_token(rq)
        && let Some(u) = door.sessions.user(&t, door.host.as_ref())
    {
        return Ok(Who::of(door, &u, "ltpaToken"));
    }
    let Some((user, password)) = basic(rq) else {
        return Err(unauthenticated(rq));
    };
    if check(door, rq, user.clone(), password).await {
        Ok(Who::of(door, &user, "basic"))
    } else {
        tracing::warn!(peer = %rq.peer, user = %user, "REST request refused: bad credentials");
        Err(unauthenticated(rq))
    }
}

/// A request that changes something must carry the CSRF header.
pub(crate) fn csrf(rq: &Rq) -> Result<(), Response<Body>> {
    if rq.method == Method::GET || rq.method == Method::HEAD || rq.headers.contains_key(CSRF) {
        return Ok(());
    }
    Err(reply::error(
        403,
        "MQWB0100E",
        &format!("The CSRF header {CSRF} was omitted from the request."),
        &format!("Resubmit the request with the header {CSRF} (any value)."),
        0,
    ))
}

/// `/login`: POST `{"username","password"}` opens a session (its cookie), GET tells who the
/// session is, DELETE ends it.
pub(crate) async fn login(door: &Door, rq: &Rq) -> Response<Body> {
    match rq.method {
        Method::POST => {
            let v: serde_json::Value = match serde_json::from_slice(&rq.body) {
                Ok(v) => v,
                Err(e) => return bad_json(&e.to_string()),
            };
            let (Some(user), Some(password)) = (v["username"].as_str(), v["password"].as_str())
            else {
                return bad_json("a login body is {\"username\": \"...\", \"password\": \"...\"}");
            };
            if !check(door, rq, user.to_string(), password.to_string()).await {
                tracing::warn!(peer = %rq.peer, user = %user, "REST login refused");
                return unauthenticated(rq);
            }
            let Some(token) = door.sessions.open(user, door.host.security_epoch()) else {
                return reply::error(500, "MQWB0000E", "No session could be made.", "Retry.", 0);
            };
            let mut r = reply::with_type(204, bytes::Bytes::new(), "text/plain");
            let c =
                format!("{COOKIE_NAME}={token}; Path=/ibmmq; Secure; HttpOnly; SameSite=Strict");
            if let Ok(h) = HeaderValue::from_str(&c) {
                r.headers_mut().insert(SET_COOKIE, h);
            }
            r
        }
        Method::GET => match authenticate(door, rq).await {
            Ok(w) => {
                let mut u = serde_json::json!({
                    "name": w.user,
                    "role": w.role_names(),
                    "authenticationMechanism": w.via,
                });
                // sealmq's: the queue manager this server is, for a user without the
                // read-only role (who may not GET /admin/qmgr); absent on the
                // installation's server, which serves them all.
                if let Some(q) = &door.qm_name {
                    u["queueManager"] = q.as_str().into();
                }
                reply::json(200, &serde_json::json!({"user": [u]}))
            }
            Err(r) => r,
        },
        Method::DELETE => {
            if let Err(r) = csrf(rq) {
                return r;
            }
            if let Some(t) = cookie_token(rq) {
                door.sessions.close(&t);
            }
            let mut r = reply::with_type(204, bytes::Bytes::new(), "text/plain");
            let c = format!(
                "{COOKIE_NAME}=; Path=/ibmmq; Secure; HttpOnly; SameSite=Strict; Max-Age=0"
            );
            if let Ok(h) = HeaderValue::from_str(&c) {
                r.headers_mut().insert(SET_COOKIE, h);
            }
            r
        }
        _ => not_allowed(),
    }
}

pub(crate) fn bad_json(detail: &str) -> Response<Body> {
    reply::error(
        400,
        "MQWB0907E",
        &format!("The request body is not the JSON this resource takes: {detail}"),
        "Correct the body (docs/rest.md) and resubmit the request.",
        0,
    )
}

pub(crate) fn not_allowed() -> Response<Body> {
    reply::error(
        405,
        "MQWB0908E",
        "The HTTP method is not supported by this resource.",
        "Use a method the resource takes (docs/rest.md).",
        0,
    )
}

pub(crate) fn forbidden(what: &str) -> Response<Body> {
    reply::error(
        403,
        "MQWB0103E",
        &format!("Not authorized to {what}."),
        "Ask the administrator for the role (sealmq start --web-admin/--web-readonly/--web-messaging, or sealmq web --admin/--readonly/--messaging).",
        ReasonCode::NotAuthorized.code(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A host whose users are `known` and whose epoch the test sets.
    struct TestHost {
        epoch: std::sync::atomic::AtomicU64,
        known: Mutex<Vec<String>>,
    }

    impl Host for TestHost {
        fn check_password(&self, _: &str, _: &str, _: &str) -> bool {
            false
        }
        fn protector(&self) -> Option<Arc<sealmq_protect::Protector>> {
            None
        }
        fn security_epoch(&self) -> u64 {
            self.epoch.load(std::sync::atomic::Ordering::Relaxed)
        }
        fn user_known(&self, user: &str) -> bool {
            lock(&self.known).iter().any(|u| u == user)
        }
    }

    /// Issue 42: any user with a password could log in 1,107 times and push the
    /// administrator's session out of the table; now a user's logins end its own oldest
    /// sessions only.
    #[test]
    fn one_user_logging_in_often_ends_only_its_own_sessions() {
        let host = TestHost {
            epoch: 0.into(),
            known: Mutex::new(vec!["mqadmin".into(), "app".into()]),
        };
        let s = Sessions::default();
        let admin = s.open("mqadmin", 0).unwrap();
        let mut apps: Vec<String> = (0..MAX_SESSIONS + 100)
            .map(|_| s.open("app", 0).unwrap())
            .collect();
        assert_eq!(s.user(&admin, &host).as_deref(), Some("mqadmin"));
        let newest = apps.pop().unwrap();
        assert_eq!(s.user(&newest, &host).as_deref(), Some("app"));
        assert_eq!(s.user(&apps[0], &host), None, "the oldest of app's went");
        assert_eq!(
            lock(&s.0).values().filter(|x| x.user == "app").count(),
            SESSIONS_PER_USER
        );
    }

    /// Issue 42: a session outlived its user's removal from the password file; after a
    /// refresh of connection authentication it is checked again, and ends.
    #[test]
    fn a_session_ends_when_its_user_goes_and_at_its_lifetime() {
        let host = TestHost {
            epoch: 0.into(),
            known: Mutex::new(vec!["app".into(), "ops".into()]),
        };
        let s = Sessions::default();
        let (app, ops) = (s.open("app", 0).unwrap(), s.open("ops", 0).unwrap());
        lock(&host.known).retain(|u| u != "app");
        // Until connection authentication is read again, nothing is looked up.
        assert_eq!(s.user(&app, &host).as_deref(), Some("app"));
        host.epoch.store(1, std::sync::atomic::Ordering::Relaxed);
        assert_eq!(s.user(&app, &host), None);
        assert_eq!(s.user(&ops, &host).as_deref(), Some("ops"));
        // A session made SESSION_LIFETIME ago ends however recently it was used.
        if let Some(made) = Instant::now().checked_sub(SESSION_LIFETIME) {
            lock(&s.0).get_mut(&ops).unwrap().made = made;
            assert_eq!(s.user(&ops, &host), None);
        }
    }

    #[test]
    fn roles_name_users_any_user_and_os_groups() {
        let list = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let mut g = None;
        assert!(named(&list(&["ops", "app"]), "app", &mut g));
        assert!(g.is_none(), "no group looked up when none is named");
        assert!(!named(&list(&["ops"]), "app", &mut None));
        assert!(named(&list(&["*"]), "anyone", &mut None));
        // root's primary group is root on every Linux system.
        assert!(named(&list(&["group:root"]), "root", &mut None));
        assert!(!named(
            &list(&["group:root"]),
            "no-such-user-here",
            &mut None
        ));
        assert!(!named(&list(&["group:"]), "root", &mut None));
    }
}

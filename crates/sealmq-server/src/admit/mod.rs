//! Who an application connection runs as, or why it is refused: the SVRCONN channel's TLS
//! requirements, connection authentication (CONNAUTH), channel authentication records
//! (CHLAUTH) and the channel's instance limits (MAXINST, MAXINSTC). Every refusal answers the
//! client with its reason code and is written to the queue manager's log.

pub(crate) mod limits;

use crate::auth::security::Security;
use crate::peer::{Peer, TlsPeer};
use sealmq_engine::QueueManager;
use sealmq_engine::authinfo::AuthInfoDef;
use sealmq_engine::authinfo::Check;
use sealmq_engine::channels::ChannelDef;
use sealmq_engine::channels::tls_requirements;
use sealmq_engine::channels::{ChlType, DEFAULT_SVRCONN};
use sealmq_engine::chlauth::{ChckClnt, Decision, Partner};
use sealmq_types::ReasonCode;
use sealmq_types::sync::lock;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// What the Hello asked.
pub(crate) struct Hello<'a> {
    pub appl: &'a str,
    pub channel: &'a str,
    pub user: &'a str,
    pub password: &'a str,
}

/// An admitted connection.
pub(crate) struct Admitted {
    pub user: String,
    /// The queue manager's own OS user on the local socket (MQSC, stop).
    pub admin: bool,
    pub intercept: bool,
    /// Holds the channel instance counted until the connection ends.
    pub _slot: Option<Slot>,
}

pub(crate) type Refusal = (u32, String);

/// What a client refused for want of authority is told: its reason code and no more (as MQ:
/// the rule, the user lists and mapped users are the administrator's to read, in the log).
pub(crate) const NOT_AUTHORIZED: &str =
    "not authorized: the queue manager's error log says why (ask its administrator)";

fn refuse(sec: &Security, who: &str, reason: ReasonCode, detail: String) -> Refusal {
    sec.events.log(&format!(
        "connection refused ({} {}): {who}: {detail}",
        reason.code(),
        reason.name()
    ));
    (reason.code(), detail)
}

/// A refusal whose detail only the log gets (CHLAUTH rules, password checks).
fn deny(sec: &Security, who: &str, detail: String) -> Refusal {
    let _ = refuse(sec, who, ReasonCode::NotAuthorized, detail);
    (ReasonCode::NotAuthorized.code(), NOT_AUTHORIZED.to_string())
}

/// Instances per channel, and per (channel, client address).
type Counts = (HashMap<String, u32>, HashMap<(String, String), u32>);

/// Channel instances running now, per channel and per (channel, client address).
#[derive(Default)]
pub(crate) struct Instances {
    counts: Mutex<Counts>,
}

/// One counted instance; dropping it uncounts it.
pub(crate) struct Slot {
    of: Arc<Instances>,
    channel: String,
    client: String,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut c = lock(&self.of.counts);
        if let Some(n) = c.0.get_mut(&self.channel) {
            *n = n.saturating_sub(1);
        }
        if let Some(n) = c.1.get_mut(&(self.channel.clone(), self.client.clone())) {
            *n = n.saturating_sub(1);
        }
    }
}

impl Instances {
    /// Counts an instance of `channel` from `client` unless MAXINST or MAXINSTC is reached.
    pub(crate) fn take(
        self: &Arc<Self>,
        channel: &str,
        client: &str,
        maxinst: u32,
        maxinstc: u32,
    ) -> Result<Slot, String> {
        let mut c = lock(&self.counts);
        let all = c.0.get(channel).copied().unwrap_or(0);
        let key = (channel.to_string(), client.to_string());
        let mine = c.1.get(&key).copied().unwrap_or(0);
        if all >= maxinst {
            return Err(format!(
                "channel {channel} has MAXINST({maxinst}) instances running: try again later, \
                 or ALTER CHANNEL({channel}) CHLTYPE(SVRCONN) MAXINST(n)"
            ));
        }
        if mine >= maxinstc {
            return Err(format!(
                "channel {channel} has MAXINSTC({maxinstc}) instances from {client}: close some \
                 connections, or ALTER CHANNEL({channel}) CHLTYPE(SVRCONN) MAXINSTC(n)"
            ));
        }
        *c.0.entry(channel.to_string()).or_default() += 1;
        *c.1.entry(key).or_default() += 1;
        Ok(Slot {
            of: self.clone(),
            channel: channel.to_string(),
            client: client.to_string(),
        })
    }
}

/// The IP address of `host:port` (no port, no brackets).
pub(crate) fn ip_of(addr: &str) -> String {
    addr.parse::<std::net::SocketAddr>()
        .map(|a| a.ip().to_string())
        .unwrap_or_else(|_| addr.to_string())
}

/// Checks a password against the password file when one is given; `Ok(Some(user))` when it
/// authenticated, `Ok(None)` when none was given.
fn authenticate(
    sec: &Security,
    h: &Hello<'_>,
    (who, addr): (&str, &str),
    over_clear_tcp: bool,
    allow_cleartext: bool,
) -> Result<Option<String>, Refusal> {
    if h.password.is_empty() && h.user.is_empty() {
        return Ok(None);
    }
    if h.password.len() > crate::auth::connauth::MAX_PASSWORD
        || h.user.len() > crate::auth::connauth::MAX_USER
    {
        return Err(refuse(
            sec,
            who,
            ReasonCode::NotAuthorized,
            format!(
                "user id or password too long (at most {} and {} bytes)",
                crate::auth::connauth::MAX_USER,
                crate::auth::connauth::MAX_PASSWORD
            ),
        ));
    }
    if over_clear_tcp && !allow_cleartext {
        return Err(refuse(
            sec,
            who,
            ReasonCode::NotAuthorized,
            "a password arrived over TCP without TLS, which this queue manager refuses: use \
             a channel with SSLCIPH (or, to accept it, ALTER AUTHINFO(..) AUTHTYPE(IDPWOS) \
             PWCLEAR(YES))"
                .into(),
        ));
    }
    if sec.check_password(addr, h.user, h.password) {
        Ok(Some(h.user.to_string()))
    } else {
        Err(deny(
            sec,
            who,
            format!("user id '{}' and password were not accepted", h.user),
        ))
    }
}

/// Admits an application connection, or says why not.
pub(crate) fn admit(
    qm: &QueueManager,
    sec: &Security,
    instances: &Arc<Instances>,
    peer: &Peer,
    h: &Hello<'_>,
) -> Result<Admitted, Refusal> {
    let authinfo = qm.connauth();
    match peer {
        Peer::Local { user, admin, .. } => admit_local(sec, authinfo.as_ref(), user, *admin, h),
        Peer::Tcp { tls, addr, .. } => admit_tcp(
            qm,
            sec,
            instances,
            authinfo.as_ref(),
            (tls.as_ref(), addr),
            h,
        ),
    }
}

/// A local application: CHCKLOCL decides whether it must give a password (never the queue
/// manager's own user, who owns its files), ADOPTCTX whether it then runs as that user.
fn admit_local(
    sec: &Security,
    authinfo: Option<&AuthInfoDef>,
    user: &str,
    admin: bool,
    h: &Hello<'_>,
) -> Result<Admitted, Refusal> {
    let who = format!("local user {user} ({})", h.appl);
    let check = authinfo.map(|a| a.chcklocl).unwrap_or(Check::None);
    // The queue manager's own user owns its files: a password adds nothing for it.
    let given = if check == Check::None || admin {
        None
    } else {
        authenticate(sec, h, (&who, &format!("local:{user}")), false, true)?
    };
    if check == Check::Required && !admin && given.is_none() {
        return Err(refuse(
            sec,
            &who,
            ReasonCode::NotAuthorized,
            "this queue manager requires a user id and password of local applications \
             (CHCKLOCL(REQUIRED)): give --user"
                .into(),
        ));
    }
    let adopt = authinfo.is_some_and(|a| a.adoptctx);
    let user = match given {
        Some(u) if adopt => u,
        _ => user.to_string(),
    };
    Ok(Admitted {
        user,
        admin,
        intercept: false,
        _slot: None,
    })
}

/// A client over TCP: its SVRCONN channel and TLS, CHLAUTH (judged first as if the password
/// were right), CONNAUTH's password, CHCKCLNT, then MAXINST and MAXINSTC.
fn admit_tcp(
    qm: &QueueManager,
    sec: &Security,
    instances: &Arc<Instances>,
    authinfo: Option<&AuthInfoDef>,
    (tls, addr): (Option<&TlsPeer>, &str),
    h: &Hello<'_>,
) -> Result<Admitted, Refusal> {
    let name = if h.channel.is_empty() {
        DEFAULT_SVRCONN
    } else {
        h.channel
    };
    let ip = ip_of(addr);
    let who = format!("{ip} on channel {name} ({})", h.appl);
    let def = svrconn(qm, sec, &who, name, tls)?;
    let allow_clear = authinfo.is_some_and(|a| a.allow_cleartext);
    let check = authinfo.map(|a| a.chckclnt).unwrap_or(Check::None);
    let adopt = authinfo.is_some_and(|a| a.adoptctx);
    // Who the channel runs as, given the user a password authenticated (if any).
    let runs_as = |given: Option<&str>| match (given, adopt) {
        (Some(u), true) => u.to_string(),
        _ if !def.mcauser.is_empty() => def.mcauser.clone(),
        _ => tls
            .as_ref()
            .map(|t| t.dn.clone())
            .unwrap_or_else(|| "tcp".to_string()),
    };
    let partner = Partner {
        channel: name,
        svrconn: true,
        address: &ip,
        sslpeer: tls.map(|t| t.dn.as_str()),
        clntuser: (!h.user.is_empty()).then_some(h.user),
        qmname: None,
    };
    let blocked =
        |rule: String, detail: String| deny(sec, &who, format!("refused by {rule}: {detail}"));
    // CHLAUTH first, judged as if the password were right: a blocked address or user
    // is refused before any password is looked at, so the answer cannot tell a right
    // password from a wrong one.
    let checks_password = check != Check::None && !h.user.is_empty();
    if checks_password
        && let Decision::Block { rule, detail } = qm.check_channel(&partner, &runs_as(Some(h.user)))
    {
        return Err(blocked(rule, detail));
    }
    let given = if check == Check::None {
        None
    } else {
        authenticate(sec, h, (&who, &ip), tls.is_none(), allow_clear)?
    };
    let channel_user = runs_as(given.as_deref());
    let (user, rule_check) = match qm.check_channel(&partner, &channel_user) {
        Decision::Allow {
            user,
            chckclnt,
            warnings,
        } => {
            for w in warnings {
                sec.events.log(&format!("CHLAUTH warning: {w}"));
            }
            (user, chckclnt)
        }
        Decision::Block { rule, detail } => return Err(blocked(rule, detail)),
    };
    let admin_user = qm.admin() == Some(user.as_str());
    let required = client_check_required(rule_check, check, admin_user);
    if required && given.is_none() {
        return Err(deny(
            sec,
            &who,
            format!(
                "channel {name} requires a user id and password (CHCKCLNT) for '{user}': \
                 give --user"
            ),
        ));
    }
    let slot = instances
        .take(name, &ip, def.maxinst, def.maxinstc)
        .map_err(|d| refuse(sec, &who, ReasonCode::ChannelNotAvailable, d))?;
    Ok(Admitted {
        user,
        admin: false,
        intercept: def.intercept,
        _slot: Some(slot),
    })
}

/// The SVRCONN channel a client names (or the default one), with its TLS requirements met;
/// an intercepting channel requires TLS with a client certificate.
fn svrconn(
    qm: &QueueManager,
    sec: &Security,
    who: &str,
    name: &str,
    tls: Option<&TlsPeer>,
) -> Result<ChannelDef, Refusal> {
    let def = match qm.channel(name) {
        Some(d) if d.chltype == ChlType::Svrconn => d,
        _ => {
            return Err(refuse(
                sec,
                who,
                ReasonCode::UnknownChannelName,
                format!("no SVRCONN channel '{name}' is defined"),
            ));
        }
    };
    tls_requirements(
        &def,
        tls.map(|t| (t.dn.as_str(), t.suite.as_str())),
        "the connection",
    )
    .map_err(|d| refuse(sec, who, ReasonCode::SslInitializationError, d))?;
    // Interception decrypts for the client: never for one TLS did not authenticate
    // (a definition from before this rule, or a listener without TLS).
    if def.intercept && tls.is_none() {
        return Err(refuse(
            sec,
            who,
            ReasonCode::SslInitializationError,
            format!(
                "channel {name} intercepts (INTERCEPT(YES)) and so requires TLS with a \
                 client certificate; this connection has none"
            ),
        ));
    }
    Ok(def)
}

/// Whether a client must give a user id and password: the CHLAUTH rule's CHCKCLNT, else the
/// queue manager's (REQDADM: only for the administrator).
fn client_check_required(rule_check: ChckClnt, check: Check, admin_user: bool) -> bool {
    match rule_check {
        ChckClnt::Required => true,
        ChckClnt::ReqdAdm => admin_user,
        ChckClnt::AsQmgr => match check {
            Check::Required => true,
            Check::ReqdAdm => admin_user,
            _ => false,
        },
    }
}

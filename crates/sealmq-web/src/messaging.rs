//! The messaging REST API in IBM MQ's shape, on `.../messaging/qmgr/{qm}/queue/{q}/message`:
//! POST puts the body (`ibm-mq-md-*` headers for the descriptor, `ibm-mq-usr-*` for
//! properties), DELETE gets destructively (`wait`, `correlationId`, `messageId`), GET browses
//! the first message; `.../topic/{topic string}/message` takes POST, a publication. Each
//! request is a connection of its own as the authenticated user, so CONNECT, PUT, GET,
//! BROWSE and PUB authority are checked as for any application.
//!
//! A queue or topic with a protection policy: with `--web-intercept` the queue manager
//! protects what is put or published and unprotects what is got with its own identity, as on
//! a channel with INTERCEPT(YES) (a message failing a check moves to the protection error
//! queue and the request gets 2063); without it a put or publication is refused (2063) and a
//! get returns the envelope as stored.

use crate::auth::{Rq, Who, forbidden, not_allowed};
use crate::params::{bad, correl_of, id_text, match_param};
use crate::{Body, Ctx, MAX_WAIT, reply};
use bytes::Bytes;
use hyper::header::HeaderValue;
use hyper::{Method, Response};
use sealmq_engine::{Connection, MqError, intercept};
use sealmq_mqi::md::{Md, NONE_ID, Persistence};
use sealmq_mqi::options::{Browse, GetOptions, Got, Match, OpenOptions, PutOptions};
use sealmq_mqi::props::{PropValue, Property};
use sealmq_types::ReasonCode;
use std::sync::Arc;
use std::time::Duration;

pub(crate) async fn route(ctx: &Arc<Ctx>, who: &Who, rq: &Rq, segs: &[&str]) -> Response<Body> {
    let me = ctx.qm.name();
    let (qm, target) = match segs {
        ["qmgr", qm, "queue", q, "message"] => (*qm, Target::Queue(q.to_string())),
        ["qmgr", qm, "queue", q, "messagelist"] => {
            if *qm != me {
                return other_qmgr(qm, &me);
            }
            if !who.messaging {
                return forbidden(&format!("browse {q}"));
            }
            return match rq.method {
                Method::GET => crate::msglist::list(ctx, who, rq, q).await,
                _ => not_allowed(),
            };
        }
        ["qmgr", qm, "topic", topic @ .., "message"] if !topic.is_empty() => {
            (*qm, Target::Topic(topic.join("/")))
        }
        _ => {
            return reply::error(
                404,
                "MQWB0902E",
                &format!("No messaging resource at {}.", rq.path),
                "Messages are at /ibmmq/rest/v2/messaging/qmgr/{qm}/queue/{queue}/message \
                 and /ibmmq/rest/v2/messaging/qmgr/{qm}/topic/{topic string}/message.",
                0,
            );
        }
    };
    if qm != me {
        return other_qmgr(qm, &me);
    }
    if !who.messaging {
        return forbidden(&format!("use messages on {}", target.name()));
    }
    match (&target, &rq.method) {
        (_, &Method::POST) => put(ctx, who, rq, target).await,
        (Target::Queue(q), &Method::DELETE) => get(ctx, who, rq, q, false).await,
        (Target::Queue(q), &Method::GET) => get(ctx, who, rq, q, true).await,
        _ => not_allowed(),
    }
}

fn other_qmgr(qm: &str, me: &str) -> Response<Body> {
    reply::error(
        404,
        "MQWB0009E",
        &format!("Could not query the queue manager '{qm}'."),
        &format!("This server serves queue manager {me}."),
        ReasonCode::QMgrNameError.code(),
    )
}

/// What a request puts to or gets from.
enum Target {
    Queue(String),
    Topic(String),
}

impl Target {
    fn name(&self) -> &str {
        match self {
            Target::Queue(q) | Target::Topic(q) => q,
        }
    }

    /// Its policy, when it has a quality of protection.
    fn policy(&self, ctx: &Ctx) -> Option<sealmq_protect::Policy> {
        match self {
            Target::Queue(q) => intercept::policy(&ctx.qm, q),
            Target::Topic(t) => intercept::topic_policy(&ctx.qm, t),
        }
    }
}

/// A protection failure: the reason to the client, the detail to the error log.
fn protection_error(user: &str, target: &str, detail: &str) -> MqError {
    tracing::warn!(user = %user, "REST message on {target} refused: {detail}");
    MqError::new(
        ReasonCode::SecurityError,
        format!(
            "the message on {target} could not be protected or unprotected (the queue manager's error log says why)"
        ),
    )
}

/// The descriptor the request's headers give.
fn md_of(rq: &Rq) -> Result<Md, String> {
    let mut md = Md::default();
    let text = rq
        .header("content-type")
        .is_none_or(|t| t.starts_with("text/") || t.starts_with("application/json"));
    if text {
        md.format = "MQSTR".into();
    }
    if let Some(p) = rq.header("ibm-mq-md-persistence") {
        md.persistence = match p {
            "persistent" => Persistence::Persistent,
            "nonPersistent" => Persistence::NotPersistent,
            _ => {
                return Err(format!(
                    "ibm-mq-md-persistence '{p}': persistent or nonPersistent"
                ));
            }
        };
    }
    if let Some(e) = rq.header("ibm-mq-md-expiry") {
        md.expiry = match e {
            "unlimited" => -1,
            ms => match ms.parse::<u64>() {
                Ok(ms) if ms > 0 => i32::try_from(ms.div_ceil(100)).unwrap_or(i32::MAX),
                _ => return Err(format!("ibm-mq-md-expiry '{e}': milliseconds or unlimited")),
            },
        };
    }
    if let Some(c) = rq.header("ibm-mq-md-correlationId") {
        md.correl_id = correl_of(rq.api, c).map_err(|e| format!("ibm-mq-md-correlationId: {e}"))?;
    }
    if let Some(p) = rq.header("ibm-mq-md-priority") {
        md.priority = match p.parse::<i32>() {
            Ok(n) if (0..=9).contains(&n) => n,
            _ => return Err(format!("ibm-mq-md-priority '{p}': 0 to 9")),
        };
    }
    if let Some(r) = rq.header("ibm-mq-md-replyTo") {
        let (q, qm) = r.split_once('@').unwrap_or((r, ""));
        if q.is_empty() || q.len() > 48 || qm.len() > 48 {
            return Err(format!("ibm-mq-md-replyTo '{r}': QUEUE or QUEUE@QMGR"));
        }
        md.reply_to_q = q.to_string();
        md.reply_to_qmgr = qm.to_string();
    }
    for (name, value) in rq.headers.iter() {
        let Some(prop) = name.as_str().strip_prefix("ibm-mq-usr-") else {
            continue;
        };
        let v = value.to_str().map_err(|_| format!("{name}: not text"))?;
        md.properties.push(Property {
            name: prop.to_string(),
            value: prop_value(v).ok_or(format!("{name} '{v}': VALUE or VALUE,TYPE"))?,
        });
    }
    Ok(md)
}

/// A property header's value: `VALUE,TYPE` (TYPE string, boolean, byte, short, int, long,
/// float, double) or a string, in double quotes or bare.
fn prop_value(v: &str) -> Option<PropValue> {
    if let Some((val, ty)) = v.rsplit_once(',') {
        let t = ty.trim().to_ascii_lowercase();
        let val = val.trim();
        let typed = match t.as_str() {
            "string" => Some(PropValue::String(val.trim_matches('"').to_string())),
            "boolean" => val.parse().ok().map(PropValue::Bool),
            "byte" => val.parse().ok().map(PropValue::Byte),
            "short" => val.parse().ok().map(PropValue::Short),
            "int" => val.parse().ok().map(PropValue::Int),
            "long" => val.parse().ok().map(PropValue::Long),
            "float" => val.parse().ok().map(PropValue::Float),
            "double" => val.parse().ok().map(PropValue::Double),
            _ => None,
        };
        if typed.is_some() {
            return typed;
        }
        if matches!(
            t.as_str(),
            "boolean" | "byte" | "short" | "int" | "long" | "float" | "double"
        ) {
            return None;
        }
    }
    let s = v.trim();
    let s = s
        .strip_prefix('"')
        .and_then(|x| x.strip_suffix('"'))
        .unwrap_or(s);
    Some(PropValue::String(s.to_string()))
}

fn prop_text(v: &PropValue) -> String {
    match v {
        PropValue::String(s) => s.clone(),
        PropValue::Bool(b) => format!("{b},boolean"),
        PropValue::Byte(n) => format!("{n},byte"),
        PropValue::Short(n) => format!("{n},short"),
        PropValue::Int(n) => format!("{n},int"),
        PropValue::Long(n) => format!("{n},long"),
        PropValue::Float(n) => format!("{n},float"),
        PropValue::Double(n) => format!("{n},double"),
        PropValue::Null => ",null".into(),
        PropValue::Bytes(b) => format!(
            "{},bytes",
            b.iter().map(|x| format!("{x:02x}")).collect::<String>()
        ),
    }
}

async fn put(ctx: &Arc<Ctx>, who: &Who, rq: &Rq, target: Target) -> Response<Body> {
    let policy = target.policy(ctx);
    if policy.is_some() && !ctx.options.intercept {
        return reply::error(
            403,
            "MQWB0911E",
            &format!(
                "{} has a protection policy; this server does not protect messages.",
                target.name()
            ),
            "Put with an application that protects (sealmq put, the client library), or start the queue manager with --web-intercept.",
            ReasonCode::SecurityError.code(),
        );
    }
    let mut md = match md_of(rq) {
        Ok(m) => m,
        Err(e) => return bad(&e),
    };
    let (qm, user, host, body) = (
        ctx.qm.clone(),
        who.user.clone(),
        ctx.host.clone(),
        rq.body.clone(),
    );
    let done = crate::blocking(move || {
        let c = Connection::connect(&qm, &user, "sealmq REST")?;
        // Protected under the policy before it is stored (never twice: an envelope is kept).
        let protector = host.protector();
        let protected = match &target {
            Target::Queue(q) => intercept::protect(&qm, protector.as_deref(), q, &md, &body),
            Target::Topic(t) => intercept::protect_topic(&qm, protector.as_deref(), t, &md, &body),
        }
        .map_err(|e| protection_error(&user, target.name(), &e))?;
        let stored = protected.as_deref().unwrap_or(&body);
        match &target {
            Target::Queue(q) => {
                let h = c.open(q, OpenOptions::output())?;
                c.put(&h, &mut md, stored, PutOptions::default())?;
            }
            Target::Topic(t) => {
                c.publish(t, &mut md, stored, PutOptions::default(), false)?;
            }
        }
        Ok::<_, MqError>(md)
    })
    .await;
    match done {
        Some(Ok(md)) => {
            let api = rq.api;
            let mut r = reply::with_type(201, Bytes::new(), "text/plain");
            if let Ok(v) = HeaderValue::from_str(&id_text(api, &md.msg_id)) {
                r.headers_mut().insert("ibm-mq-md-messageId", v);
            }
            r
        }
        Some(Err(e)) => reply::mq(&e),
        None => reply::error(500, "MQWB0000E", "The put did not run.", "Retry.", 0),
    }
}

async fn get(ctx: &Arc<Ctx>, who: &Who, rq: &Rq, q: &str, browse: bool) -> Response<Body> {
    let mut matching = Match::default();
    let mut wait = Duration::ZERO;
    for (k, v) in form_urlencoded::parse(rq.query.as_bytes()) {
        match k.as_ref() {
            "wait" => match v.parse::<u64>() {
                Ok(ms) => wait = Duration::from_millis(ms).min(MAX_WAIT),
                Err(_) => return bad(&format!("wait '{v}': milliseconds")),
            },
            other => {
                if let Err(e) = match_param(rq.api, other, &v, &mut matching) {
                    return bad(&e);
                }
            }
        }
    }
    // A wait holds a blocking thread: only crate::WAITING_GETS at once; the rest do not wait.
    let permit = if wait.is_zero() {
        None
    } else {
        ctx.waiters.clone().try_acquire_owned().ok()
    };
    if permit.is_none() {
        wait = Duration::ZERO;
    }
    let gmo = GetOptions {
        wait: (!wait.is_zero()).then_some(wait),
        browse: if browse { Browse::First } else { Browse::None },
        matching,
        ..Default::default()
    };
    let (qm, user, q2) = (ctx.qm.clone(), who.user.clone(), q.to_string());
    let unprotect = ctx
        .options
        .intercept
        .then(|| intercept::policy(&ctx.qm, q))
        .flatten();
    let host = ctx.host.clone();
    let got = crate::blocking(move || {
        let c = Connection::connect(&qm, &user, "sealmq REST")?;
        let opts = if browse {
            OpenOptions::browse()
        } else {
            OpenOptions::input()
        };
        let h = c.open(&q2, opts)?;
        let g = match &unprotect {
            None => c.get(&h, gmo),
            Some(policy) => get_unprotected(&c, &h, gmo, policy, &host, &user, browse),
        };
        drop(permit);
        g
    })
    .await;
    match got {
        Some(Ok(g)) => message(g, rq.api),
        Some(Err(e)) if e.reason == ReasonCode::NoMsgAvailable => {
            reply::with_type(204, Bytes::new(), "text/plain")
        }
        Some(Err(e)) => reply::mq(&e),
        None => reply::error(500, "MQWB0000E", "The get did not run.", "Retry.", 0),
    }
}

/// A get from a queue with a policy (`--web-intercept`): the message is got in a unit of work
/// and unprotected; one failing a check moves to the protection error queue (not when
/// browsing) and the request gets 2063.
fn get_unprotected(
    c: &Connection,
    h: &sealmq_engine::Hobj,
    mut gmo: GetOptions,
    policy: &sealmq_protect::Policy,
    host: &Arc<dyn crate::Host>,
    user: &str,
    browse: bool,
) -> Result<Got, MqError> {
    gmo.syncpoint = !browse;
    let mut g = c.get(h, gmo)?;
    let protector = host.protector();
    match intercept::unprotect(
        c,
        protector.as_deref(),
        policy,
        &h.name,
        &g,
        browse,
        !browse,
    ) {
        Ok((md, payload)) => {
            if !browse {
                c.commit()?;
            }
            g.data_len = payload.len();
            g.md = md;
            g.payload = payload;
            Ok(g)
        }
        Err(detail) => {
            if !browse {
                // The failed message was moved to the error queue in this unit of work.
                c.commit()?;
            }
            Err(protection_error(user, &h.name, &detail))
        }
    }
}

/// A message as MQ's REST API answers it: the body, the descriptor in headers.
fn message(g: Got, api: u8) -> Response<Body> {
    // Text only when it is: a protected message (an envelope, served as stored without
    // interception) or bytes that are not UTF-8 go as octets, whatever the descriptor says.
    let text = g.md.format.trim() == "MQSTR"
        && !sealmq_protect::is_protected(&g.payload)
        && std::str::from_utf8(&g.payload).is_ok();
    let mut r = reply::with_type(
        200,
        Bytes::from(g.payload),
        if text {
            "text/plain; charset=utf-8"
        } else {
            "application/octet-stream"
        },
    );
    let md = &g.md;
    let mut put = |k: &str, v: String| {
        if let (Ok(n), Ok(v)) = (
            hyper::header::HeaderName::from_bytes(k.as_bytes()),
            HeaderValue::from_str(&v),
        ) {
            r.headers_mut().append(n, v);
        }
    };
    put("ibm-mq-md-messageId", id_text(api, &md.msg_id));
    if md.correl_id != NONE_ID {
        put("ibm-mq-md-correlationId", id_text(api, &md.correl_id));
    }
    put(
        "ibm-mq-md-persistence",
        if md.persistence == Persistence::Persistent {
            "persistent"
        } else {
            "nonPersistent"
        }
        .into(),
    );
    put(
        "ibm-mq-md-expiry",
        if md.expiry < 0 {
            "unlimited".into()
        } else {
            (i64::from(md.expiry) * 100).to_string()
        },
    );
    put("ibm-mq-md-priority", md.priority.to_string());
    if !md.reply_to_q.trim().is_empty() {
        let to = if md.reply_to_qmgr.trim().is_empty() {
            md.reply_to_q.trim().to_string()
        } else {
            format!("{}@{}", md.reply_to_q.trim(), md.reply_to_qmgr.trim())
        };
        put("ibm-mq-md-replyTo", to);
    }
    for p in &md.properties {
        put(&format!("ibm-mq-usr-{}", p.name), prop_text(&p.value));
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn property_headers_take_a_type() {
        assert_eq!(prop_value("42,int"), Some(PropValue::Int(42)));
        assert_eq!(prop_value("\"red\""), Some(PropValue::String("red".into())));
        assert_eq!(prop_value("a,b"), Some(PropValue::String("a,b".into())));
        assert_eq!(prop_value("x,int"), None);
        assert_eq!(prop_value("true,boolean"), Some(PropValue::Bool(true)));
        assert_eq!(prop_text(&PropValue::Int(42)), "42,int");
    }

    proptest! {
        #[test]
        fn header_values_never_panic(v in ".{0,60}") {
            let _ = prop_value(&v);
        }
    }
}

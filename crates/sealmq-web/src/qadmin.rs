//! Creating, changing and deleting a queue through MQ's REST queue resource (`POST .../queue`,
//! `PATCH .../queue/{name}`, `DELETE .../queue/{name}`) for the admin role: the body's IBM
//! attribute objects become one MQSC command (qattrs.rs), run as the REST API runs MQSC.

use crate::auth::Rq;
use crate::auth::{Who, bad_json, forbidden};
use crate::{Body, Ctx, reply};
use hyper::Response;
use sealmq_types::ReasonCode;
use serde_json::{Map, Value};
use std::sync::Arc;

/// A queue name MQ takes (48 characters of A-Z a-z 0-9 . _ / %).
fn valid_name(n: &str) -> bool {
    (1..=48).contains(&n.len())
        && n.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '/' | '%'))
}

/// `POST .../queue`: `{"name": "Q1", "type": "local", "general": {...}, ...}` → 201.
pub(crate) async fn create(ctx: &Arc<Ctx>, who: &Who, rq: &Rq) -> Response<Body> {
    if !who.admin {
        return forbidden("create queues");
    }
    let body: Map<String, Value> = match serde_json::from_slice(&rq.body) {
        Ok(b) => b,
        Err(e) => return bad_json(&e.to_string()),
    };
    let Some(name) = body
        .get("name")
        .and_then(Value::as_str)
        .filter(|n| valid_name(n))
    else {
        return bad_json("\"name\": a queue name of up to 48 characters is needed");
    };
    let t = match crate::qattrs::mqsc_type(body.get("type").and_then(Value::as_str)) {
        Ok(t) => t,
        Err(e) => return bad_json(&e),
    };
    let words = match crate::qattrs::keywords(&body) {
        Ok(w) => w,
        Err(e) => return bad_json(&e),
    };
    let answer = run(ctx, who, format!("DEFINE {t}({name}){words} NOREPLACE")).await;
    answer.unwrap_or_else(|| reply::with_type(201, bytes::Bytes::new(), "text/plain"))
}

/// `PATCH .../queue/{name}`: the body's attribute objects → 204.
pub(crate) async fn change(ctx: &Arc<Ctx>, who: &Who, rq: &Rq, name: &str) -> Response<Body> {
    if !who.admin {
        return forbidden("change queues");
    }
    let body: Map<String, Value> = match serde_json::from_slice(&rq.body) {
        Ok(b) => b,
        Err(e) => return bad_json(&e.to_string()),
    };
    let words = match crate::qattrs::keywords(&body) {
        Ok(w) => w,
        Err(e) => return bad_json(&e),
    };
    let Some(t) = type_of(ctx, name).await else {
        return not_found(name);
    };
    let answer = run(ctx, who, format!("ALTER {t}({name}){words}")).await;
    answer.unwrap_or_else(|| reply::with_type(204, bytes::Bytes::new(), "text/plain"))
}

/// `DELETE .../queue/{name}` (`?purge=true` deletes a queue that holds messages) → 204.
pub(crate) async fn delete(ctx: &Arc<Ctx>, who: &Who, rq: &Rq, name: &str) -> Response<Body> {
    if !who.admin {
        return forbidden("delete queues");
    }
    let mut purge = false;
    for (k, v) in form_urlencoded::parse(rq.query.as_bytes()) {
        match (k.as_ref(), v.as_ref()) {
            ("purge", "true") => purge = true,
            ("purge", "false") => {}
            (other, _) => {
                return crate::params::bad(&format!(
                    "'{other}' is not a query parameter of a queue's DELETE (purge)"
                ));
            }
        }
    }
    let Some(t) = type_of(ctx, name).await else {
        return not_found(name);
    };
    let purge = if purge && t == "QLOCAL" { " PURGE" } else { "" };
    let answer = run(ctx, who, format!("DELETE {t}({name}){purge}")).await;
    answer.unwrap_or_else(|| reply::with_type(204, bytes::Bytes::new(), "text/plain"))
}

/// The queue's MQSC type, or `None` when there is no such queue.
async fn type_of(ctx: &Arc<Ctx>, name: &str) -> Option<&'static str> {
    if !valid_name(name) {
        return None;
    }
    let qm = ctx.qm.clone();
    let script = format!("DISPLAY QUEUE({name}) DESCR");
    let out = crate::blocking(move || sealmq_mqsc::run(&qm, &script)).await?;
    let t = out
        .first()?
        .objects
        .first()?
        .iter()
        .find(|(k, _)| k == "TYPE")?
        .1
        .clone();
    ["QLOCAL", "QALIAS", "QREMOTE", "QMODEL"]
        .into_iter()
        .find(|x| *x == t)
}

fn not_found(name: &str) -> Response<Body> {
    reply::error(
        404,
        "MQWB0903E",
        &format!("queue {name} was not found."),
        "Check the name.",
        ReasonCode::UnknownObjectName.code(),
    )
}

/// Runs one command for the admin role; `None` when it worked, else the error answer.
async fn run(ctx: &Arc<Ctx>, who: &Who, command: String) -> Option<Response<Body>> {
    let qm = ctx.qm.clone();
    let c2 = command.clone();
    let Some(out) = crate::blocking(move || sealmq_mqsc::run(&qm, &c2)).await else {
        return Some(reply::error(
            500,
            "MQWB0000E",
            "The command did not run.",
            "Retry.",
            0,
        ));
    };
    let r = out.first()?;
    tracing::info!(user = %who.user, ok = r.ok, "REST queue: {command}");
    if r.ok {
        return None;
    }
    let reason = r.reason.unwrap_or(0);
    let status = match reason {
        2085 => 404,
        _ => 400,
    };
    let detail = r.message.lines().collect::<Vec<_>>().join(" ");
    Some(reply::error(
        status,
        "MQWB0903E",
        &detail,
        "Correct the request.",
        reason,
    ))
}

//! The administrative REST API in IBM MQ's shape: `POST .../admin/action/qmgr/{qm}/mqsc` with
//! `runCommand` (an MQSC command as text) or `runCommandJSON` (command, qualifier, name,
//! parameters, responseParameters), and GET `/admin/qmgr`, `/admin/qmgr/{qm}`,
//! `/admin/qmgr/{qm}/queue[/{q}]`, `/admin/qmgr/{qm}/channel[/{c}]`, and sealmq's
//! `/policy[/{p}]`, `/certificate`, `/protection` (`extensions.rs`). Commands run through
//! sealmq's MQSC processor: an admin may run any, a read-only user DISPLAY only.
//! runCommandJSON is turned into one MQSC command from allow-listed verbs and qualifiers,
//! checked keys and quoted values, so a request cannot smuggle a second command.

use crate::auth::{Rq, Who, bad_json, forbidden, not_allowed};
use crate::{Body, Ctx, reply};
use hyper::{Method, Response};
use sealmq_types::ReasonCode;
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::sync::Arc;

/// MQRCCF_COMMAND_FAILED: the overall reason of a command that failed.
const COMMAND_FAILED: u32 = 3008;

const COMMANDS: &[&str] = &[
    "define", "alter", "delete", "display", "clear", "start", "stop", "set", "reset", "refresh",
    "ping", "resolve", "purge",
];

const QUALIFIERS: &[&str] = &[
    "qlocal", "qremote", "qalias", "qmodel", "queue", "qstatus", "channel", "chstatus", "chlauth",
    "qmgr", "qmstatus", "topic", "tpstatus", "sub", "sbstatus", "authinfo", "namelist", "process",
    "listener", "lsstatus", "service", "svstatus", "policy", "conn", "pubsub", "authrec",
    "security",
];

/// Qualifiers that name no object.
const UNNAMED: &[&str] = &["qmgr", "qmstatus", "pubsub", "security"];

/// Attributes whose values are strings kept as given (quoted in MQSC, so case is kept).
const STRINGS: &[&str] = &[
    "descr",
    "topicstr",
    "conname",
    "selector",
    "trigdata",
    "userdata",
    "envrdata",
    "applicid",
    "sslpeer",
    "mcauser",
    "rqmname",
    "custom",
    "address",
    "userlist",
    "dest",
    "destqmgr",
    "subuser",
    "profile",
    "principal",
    "group",
    "ldapuser",
    "connaudit",
    "recip",
    "signer",
];

pub(crate) async fn route(ctx: &Arc<Ctx>, who: &Who, rq: &Rq, segs: &[&str]) -> Response<Body> {
    let me = ctx.qm.name();
    let known = |qm: &str| qm == me;
    match (segs, &rq.method) {
        (["action", "qmgr", qm, "mqsc"], &Method::POST) if known(qm) => mqsc(ctx, who, rq).await,
        (["action", "qmgr", qm, "mqsc"], _) if known(qm) => not_allowed(),
        (["qmgr"], &Method::GET) => {
            if !who.readonly {
                return forbidden("display queue managers");
            }
            reply::json(200, &json!({"qmgr": [qmgr(ctx)]}))
        }
        (["qmgr", qm], &Method::GET) if known(qm) => {
            if !who.readonly {
                return forbidden(&format!("display {qm}"));
            }
            reply::json(200, &json!({"qmgr": [qmgr(ctx)]}))
        }
        (["qmgr", qm, "certificate"], &Method::GET) if known(qm) => {
            crate::extensions::certificates(ctx, who).await
        }
        (["qmgr", qm, "protection"], &Method::GET) if known(qm) => {
            crate::extensions::protection(ctx, who)
        }
        (["qmgr", qm, "errorlog"], &Method::GET) if known(qm) => {
            crate::extensions::error_log(ctx, who, &rq.query).await
        }
        (["qmgr", qm, "ha"], &Method::GET) if known(qm) => crate::extensions::ha(ctx, who).await,
        (
            [
                "qmgr",
                qm,
                kind @ ("queue" | "channel" | "policy" | "topic" | "subscription"),
                rest @ ..,
            ],
            &Method::GET,
        ) if known(qm) && rest.len() <= 1 => {
            if !who.readonly {
                return forbidden(&format!("display {kind}s"));
            }
            objects(ctx, kind, rest.first().copied(), &rq.query).await
        }
        (["qmgr", qm, "queue"], &Method::POST) if known(qm) => {
            crate::qadmin::create(ctx, who, rq).await
        }
        (["qmgr", qm, "queue", q], &Method::PATCH) if known(qm) => {
            crate::qadmin::change(ctx, who, rq, q).await
        }
        (["qmgr", qm, "queue", q], &Method::DELETE) if known(qm) => {
            crate::qadmin::delete(ctx, who, rq, q).await
        }
        (["installation", rest @ ..], &Method::GET) if rest.len() <= 1 => {
            let home = ctx.qm_dir.parent().and_then(|q| q.parent());
            installation(home, who, rq, rest.first().copied())
        }
        (["installation", ..], _) => not_allowed(),
        (["qmgr", qm, ..] | ["action", "qmgr", qm, ..], _) if !known(qm) => reply::error(
            404,
            "MQWB0009E",
            &format!("Could not query the queue manager '{qm}'."),
            &format!("This server serves queue manager {me}."),
            ReasonCode::QMgrNameError.code(),
        ),
        _ => reply::error(
            404,
            "MQWB0902E",
            &format!("No administrative resource at {}.", rq.path),
            "See docs/rest.md for the resources.",
            0,
        ),
    }
}

/// The one installation sealmq answers for, under MQ's name for a system's first.
pub(crate) const INSTALLATION: &str = "Installation1";

/// The extended attributes of MQ's installation resource that sealmq gives.
const EXTENDED: &[&str] = &[
    "level",
    "operatingSystem",
    "description",
    "installationPath",
    "dataPath",
    "primary",
];

/// MQ's `GET /admin/installation[/{name}]`: the installation this server runs in, as
/// `dspmqver` describes it. Name, version and platform to every role (MQ's MQWebAdmin,
/// MQWebAdminRO and MQWebUser); the extended attributes (`?attributes=extended`, `*` or
/// `extended.NAME,...`: paths and the operating system's release) to the administrative roles
/// only — they tell an application user nothing it needs and an attacker where to look.
pub(crate) fn installation(
    home: Option<&std::path::Path>,
    who: &Who,
    rq: &Rq,
    name: Option<&str>,
) -> Response<Body> {
    if !(who.readonly || who.messaging) {
        return forbidden("display the installation");
    }
    if let Some(n) = name.filter(|n| *n != INSTALLATION) {
        return reply::error(
            404,
            "MQWB0913E",
            &format!("No installation named '{n}'."),
            &format!("This server runs in installation {INSTALLATION}."),
            0,
        );
    }
    let mut wanted: Vec<&str> = Vec::new();
    for (k, v) in form_urlencoded::parse(rq.query.as_bytes()) {
        if k != "attributes" {
            return bad_json(&format!(
                "'{k}' is not a query parameter of the installation"
            ));
        }
        for a in v.split(',').map(str::trim) {
            match a {
                "extended" | "*" => wanted.extend_from_slice(EXTENDED),
                other => match other.strip_prefix("extended.") {
                    Some(e) => match EXTENDED.iter().find(|x| **x == e) {
                        Some(x) => wanted.push(x),
                        None => {
                            return bad_json(&format!(
                                "'{other}' is not an installation attribute"
                            ));
                        }
                    },
                    None => {
                        return bad_json(&format!("'{other}' is not an installation attribute"));
                    }
                },
            }
        }
    }
    let mut i = json!({
        "name": INSTALLATION,
        "version": env!("CARGO_PKG_VERSION"),
        "platform": "unix",
    });
    if !wanted.is_empty() {
        if !who.readonly {
            return forbidden("display the installation's extended attributes");
        }
        let os = |f: &str| {
            std::fs::read_to_string(format!("/proc/sys/kernel/{f}"))
                .map(|s| s.trim().to_string())
                .unwrap_or_default()
        };
        let path =
            |p: Option<&std::path::Path>| p.map(|p| p.display().to_string()).unwrap_or_default();
        let exe = std::env::current_exe().ok();
        let mut ext = Map::new();
        for a in wanted {
            let v = match a {
                "level" => json!(format!("sealmq-{}", env!("CARGO_PKG_VERSION"))),
                "operatingSystem" => json!(format!("{} ({})", os("ostype"), os("osrelease"))),
                "description" => json!("sealmq"),
                "installationPath" => json!(path(exe.as_deref().and_then(|e| e.parent()))),
                "dataPath" => json!(path(home)),
                _ => json!(true),
            };
            ext.insert(a.to_string(), v);
        }
        i["extended"] = Value::Object(ext);
    }
    reply::json(200, &json!({"installation": [i]}))
}

/// The queue manager as MQ's `GET /admin/qmgr` answers it (`status` as with `?status=*`),
/// with sealmq's `started` (UNIX seconds) and `platform` kept beside it.
fn qmgr(ctx: &Ctx) -> Value {
    let conns = ctx.qm.connections().iter().filter(|c| !c.internal).count();
    let pubsub = if ctx.qm.check_pubsub_enabled().is_ok() {
        "running"
    } else {
        "stopped"
    };
    json!({
        "name": ctx.qm.name(),
        "state": "running",
        "started": ctx.qm.started,
        "platform": "unix",
        "status": {
            "started": iso8601(ctx.qm.started),
            "channelInitiatorState": "running",
            "ldapConnectionState": "disconnected",
            "connectionCount": conns,
            "publishSubscribeState": pubsub,
        },
    })
}

/// UNIX seconds as MQ's REST API writes times (`2026-11-28T00:06:04.000Z`).
pub(crate) fn iso8601(secs: u64) -> String {
    let days = secs / 86_400;
    let rem = secs % 86_400;
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.000Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Queues (with their status when local) or channels, from DISPLAY. A queue list takes IBM's
/// query (`name`, `type`, `attributes`, `status`: qattrs.rs); another list takes `name`.
async fn objects(ctx: &Arc<Ctx>, kind: &str, name: Option<&str>, query: &str) -> Response<Body> {
    let lq = match kind {
        "channel" | "topic" | "subscription" => match crate::olist::ListQuery::parse(kind, query) {
            Ok(l) => Some(l),
            Err(e) => return crate::params::bad(&e),
        },
        _ => None,
    };
    let q = if kind == "queue" {
        crate::qattrs::Query::parse(query)
    } else if let Some(l) = &lq {
        Ok(crate::qattrs::Query {
            name: l.name.clone(),
            ..Default::default()
        })
    } else {
        let mut q = crate::qattrs::Query::default();
        form_urlencoded::parse(query.as_bytes())
            .try_for_each(|(k, v)| match k.as_ref() {
                "name" => {
                    q.name = Some(v.trim().to_string());
                    Ok(())
                }
                other => Err(format!(
                    "'{other}' is not a query parameter of the {kind} resource"
                )),
            })
            .map(|()| q)
    };
    let q = match q {
        Ok(q) => q,
        Err(e) => return crate::params::bad(&e),
    };
    let name = name.or(q.name.as_deref());
    let pattern = name.unwrap_or("*");
    if !valid_value(pattern) {
        return bad_json("an object name without control characters");
    }
    let script = match kind {
        "queue" => format!(
            "DISPLAY QUEUE({}) ALL\nDISPLAY QSTATUS({}) ALL\n",
            quote(pattern),
            quote(pattern)
        ),
        "policy" => format!("DISPLAY POLICY({})\n", quote(pattern)),
        "topic" => format!("DISPLAY TOPIC({}) ALL\n", quote(pattern)),
        "subscription" => format!("DISPLAY SUB({}) ALL\n", quote(pattern)),
        _ => format!("DISPLAY CHANNEL({}) ALL\n", quote(pattern)),
    };
    let qm = ctx.qm.clone();
    let Some(out) = crate::blocking(move || sealmq_mqsc::run(&qm, &script)).await else {
        return reply::error(500, "MQWB0000E", "The command did not run.", "Retry.", 0);
    };
    let Some(first) = out.first() else {
        return reply::error(500, "MQWB0000E", "The command did not run.", "Retry.", 0);
    };
    if !first.ok {
        let reason = first.reason.unwrap_or(COMMAND_FAILED);
        let status = if reason == ReasonCode::UnknownObjectName.code() {
            404
        } else {
            400
        };
        return reply::error(
            status,
            "MQWB0903E",
            &first.message,
            "Check the name.",
            reason,
        );
    }
    let status: Vec<Map<String, Value>> = out
        .get(1)
        .map(|r| r.objects.iter().map(params).collect())
        .unwrap_or_default();
    // Oldest message age and put/get counts since start (the console's rates) of the queues
    // listed, read in one pass over those queues only.
    let activity: HashMap<String, (u64, u64, u64)> = if kind == "queue" {
        let names: std::collections::HashSet<String> = status
            .iter()
            .filter_map(|s| s.get("queue").and_then(Value::as_str).map(String::from))
            .collect();
        let qm = ctx.qm.clone();
        crate::blocking(move || {
            qm.queue_activity(&names)
                .into_iter()
                .map(|(name, age, puts, gets)| (name, (age, puts, gets)))
                .collect()
        })
        .await
        .unwrap_or_default()
    } else {
        HashMap::new()
    };
    let other_status = match &lq {
        Some(l) if l.status.is_some() => {
            crate::olist::statuses(ctx, kind, pattern, &first.objects).await
        }
        _ => HashMap::new(),
    };
    // The keyword that holds an object's type, for a `type` query.
    let type_key = match kind {
        "channel" => "CHLTYPE",
        "subscription" => "SUBTYPE",
        _ => "TYPE",
    };
    let wanted_type = q.qtype.or(lq.as_ref().and_then(|l| l.mqsc_type));
    let list: Vec<Value> = first
        .objects
        .iter()
        .filter(|b| {
            wanted_type.is_none_or(|t| {
                b.iter()
                    .any(|(k, v)| k == type_key && v.eq_ignore_ascii_case(t))
            })
        })
        .map(|b| {
            let mut p = params(b);
            // The DISPLAY keyword that names the object (SUB for a subscription).
            let key = if kind == "subscription" { "sub" } else { kind };
            let name = p.remove(key).unwrap_or(Value::Null);
            let ty = p
                .get("type")
                .or(p.get("chltype"))
                .or(p.get("subtype"))
                .cloned()
                .unwrap_or(Value::Null);
            // A channel's, topic's or subscription's type as MQ's REST API writes it.
            let ty = match (kind, ty.as_str()) {
                ("channel" | "topic" | "subscription", Some(t)) => {
                    json!(crate::olist::ibm_type(kind, t))
                }
                _ => ty,
            };
            // A queue's type as MQ's REST API names it (local, alias, remote, model).
            let ty = match (kind, ty.as_str()) {
                ("queue", Some(t)) => json!(queue_type(t)),
                _ => ty,
            };
            let mut o = json!({"name": name, "type": ty});
            if kind == "queue"
                && let Some(s) = status.iter().find(|s| s.get("queue") == Some(&o["name"]))
            {
                o["status"] = json!({
                    "currentDepth": s.get("curdepth"),
                    "openInputCount": s.get("ipprocs"),
                    "openOutputCount": s.get("opprocs"),
                    "uncommittedMessages": s.get("uncom"),
                    "currentFileSize": s.get("curfsize"),
                    "oldestMessageAge": o["name"].as_str().and_then(|n| activity.get(n)).map(|a| a.0),
                });
                if let Some((_, puts, gets)) = o["name"].as_str().and_then(|n| activity.get(n)) {
                    o["status"]["putCount"] = json!(puts);
                    o["status"]["getCount"] = json!(gets);
                }
            }
            if let (Some(keep), Some(Value::Object(st))) = (q.status_kept(), o.get_mut("status")) {
                st.retain(|k, _| keep.contains(&k.as_str()));
            }
            // IBM's named objects asked for with `attributes` (general, storage, ...).
            for (object, attrs) in q.objects(&p) {
                o[object] = attrs;
            }
            if let Some(l) = &lq {
                let ty = o["type"].as_str().unwrap_or_default().to_string();
                for (object, attrs) in l.objects(kind, &ty, &p) {
                    o[object] = attrs;
                }
                if l.status.is_some() {
                    let blocks = o["name"].as_str().and_then(|n| other_status.get(n));
                    let st: Vec<Value> = blocks
                        .into_iter()
                        .flatten()
                        .map(|b| Value::Object(l.status_of(kind, b)))
                        .collect();
                    o["status"] = match kind {
                        // A channel has an instance each (none: inactive).
                        "channel" if st.is_empty() => json!([{"state": "inactive"}]),
                        "channel" => json!(st),
                        _ => st.into_iter().next().unwrap_or(json!({})),
                    };
                }
            }
            o["attributes"] = Value::Object(p);
            o
        })
        .collect();
    if name.is_some_and(|n| !n.contains('*')) && list.is_empty() {
        return reply::error(
            404,
            "MQWB0903E",
            &format!("{kind} {pattern} was not found."),
            "Check the name.",
            ReasonCode::UnknownObjectName.code(),
        );
    }
    reply::json(200, &json!({ kind: list }))
}

/// MQSC's queue type as MQ's REST API writes it.
fn queue_type(t: &str) -> String {
    match t {
        "QLOCAL" => "local".into(),
        "QALIAS" => "alias".into(),
        "QREMOTE" => "remote".into(),
        "QMODEL" => "model".into(),
        other => other.to_ascii_lowercase(),
    }
}

/// A DISPLAY block as MQ's REST parameters: lower-case keys, numbers as numbers.
fn params(b: &sealmq_mqsc::exec::Block) -> Map<String, Value> {
    let mut m = Map::new();
    for (k, v) in b {
        let key = k.to_ascii_lowercase();
        let val = match v.parse::<i64>() {
            Ok(n) if !v.is_empty() && v.len() <= 18 && !STRINGS.contains(&key.as_str()) => json!(n),
            _ => json!(v),
        };
        match m.get_mut(&key) {
            Some(Value::Array(a)) => a.push(val),
            Some(prev) => {
                let first = prev.take();
                *prev = json!([first, val]);
            }
            None => {
                m.insert(key, val);
            }
        }
    }
    m
}

async fn mqsc(ctx: &Arc<Ctx>, who: &Who, rq: &Rq) -> Response<Body> {
    let v: Value = match serde_json::from_slice(&rq.body) {
        Ok(v) => v,
        Err(e) => return bad_json(&e.to_string()),
    };
    let (script, as_json) = match v["type"].as_str() {
        Some("runCommand") => match v["parameters"]["command"].as_str() {
            Some(c) if valid_value(c) && !c.trim().is_empty() => (c.trim().to_string(), false),
            Some(_) => return bad_json("one MQSC command, on one line"),
            None => return bad_json("runCommand takes {\"parameters\": {\"command\": \"...\"}}"),
        },
        Some("runCommandJSON") => match command_of(&v) {
            Ok(c) => (c, true),
            Err(e) => return e,
        },
        _ => return bad_json("\"type\" is runCommand or runCommandJSON"),
    };
    let verb = script
        .split(|c: char| c.is_whitespace() || c == '(')
        .next()
        .unwrap_or("")
        .to_ascii_uppercase();
    let display = matches!(verb.as_str(), "DISPLAY" | "DIS");
    if !(who.admin || (who.readonly && display)) {
        tracing::warn!(user = %who.user, "REST MQSC refused: {verb} needs the admin role");
        return forbidden(&format!("run {verb}"));
    }
    let qm = ctx.qm.clone();
    let s2 = script.clone();
    let Some(out) = crate::blocking(move || sealmq_mqsc::run(&qm, &s2)).await else {
        return reply::error(500, "MQWB0000E", "The command did not run.", "Retry.", 0);
    };
    if out.len() != 1 {
        return bad_json("exactly one MQSC command");
    }
    let r = &out[0];
    // Changes are the administrator's record; the console's DISPLAYs every few seconds
    // would bury them (and rotate the error log), so those go to debug.
    if display {
        tracing::debug!(user = %who.user, ok = r.ok, "REST MQSC: {script}");
    } else {
        tracing::info!(user = %who.user, ok = r.ok, "REST MQSC: {script}");
    }
    let (cc, rc) = if r.ok {
        (0, 0)
    } else {
        (2, r.reason.unwrap_or(COMMAND_FAILED))
    };
    let mut responses: Vec<Value> = Vec::new();
    if as_json {
        for b in &r.objects {
            responses.push(json!({"completionCode": 0, "reasonCode": 0, "parameters": params(b)}));
        }
        if !r.ok || r.objects.is_empty() && !display {
            // MQ's answer carries the command's message, success or not.
            let mut e = json!({"completionCode": cc, "reasonCode": rc});
            if !r.message.is_empty() {
                e["message"] = json!(r.message.lines().collect::<Vec<_>>());
            }
            responses.push(e);
        }
    } else {
        // runmqsc's lines: the message (MQ's id first), then two attributes a line.
        let lines = |r: &sealmq_mqsc::Response| -> Vec<String> {
            sealmq_mqsc::render_reply(r)
                .lines()
                .map(str::to_string)
                .collect()
        };
        if r.objects.is_empty() {
            responses.push(json!({"completionCode": cc, "reasonCode": rc, "text": lines(r)}));
        }
        for b in &r.objects {
            let one = sealmq_mqsc::Response {
                objects: vec![b.clone()],
                ..r.clone()
            };
            responses.push(json!({"completionCode": 0, "reasonCode": 0, "text": lines(&one)}));
        }
    }
    reply::json(
        200,
        &json!({
            "commandResponse": responses,
            "overallCompletionCode": cc,
            "overallReasonCode": if r.ok { 0 } else { COMMAND_FAILED },
        }),
    )
}

/// The MQSC command a runCommandJSON body asks for.
fn command_of(v: &Value) -> Result<String, Response<Body>> {
    let command = v["command"].as_str().unwrap_or("").to_ascii_lowercase();
    if !COMMANDS.contains(&command.as_str()) {
        return Err(bad_json(&format!(
            "command '{}' is not one of {}",
            v["command"].as_str().unwrap_or(""),
            COMMANDS.join(", ")
        )));
    }
    let qualifier = v["qualifier"].as_str().unwrap_or("").to_ascii_lowercase();
    if !QUALIFIERS.contains(&qualifier.as_str()) {
        return Err(reply::error(
            400,
            "MQWB0909E",
            &format!(
                "The qualifier '{}' is not valid for runCommandJSON.",
                v["qualifier"].as_str().unwrap_or("")
            ),
            &format!("Use one of {}.", QUALIFIERS.join(", ")),
            0,
        ));
    }
    let mut cmd = format!(
        "{} {}",
        command.to_ascii_uppercase(),
        qualifier.to_ascii_uppercase()
    );
    if !UNNAMED.contains(&qualifier.as_str()) {
        let Some(name) = v["name"]
            .as_str()
            .filter(|n| !n.is_empty() && valid_value(n))
        else {
            return Err(bad_json(&format!("{qualifier} needs a \"name\"")));
        };
        if qualifier == "authrec" {
            // MQSC names an authority record's profile with PROFILE().
            cmd.push_str(&format!(" PROFILE({})", quote(name)));
        } else {
            cmd.push_str(&format!("({})", quote(name)));
        }
    }
    if let Some(p) = v.get("parameters").filter(|p| !p.is_null()) {
        let Some(p) = p.as_object() else {
            return Err(bad_json("\"parameters\" is an object"));
        };
        for (k, val) in p {
            if !valid_key(k) {
                return Err(bad_json(&format!("'{k}' is not an attribute name")));
            }
            let key = k.to_ascii_lowercase();
            let vals: Vec<&Value> = match val {
                Value::Array(a) => a.iter().collect(),
                other => vec![other],
            };
            let mut out = Vec::new();
            for x in vals {
                out.push(match x {
                    Value::String(s) if valid_value(s) => {
                        if STRINGS.contains(&key.as_str()) || !plain(s) {
                            quote(s)
                        } else {
                            s.clone()
                        }
                    }
                    Value::Number(n) => n.to_string(),
                    Value::Bool(b) => if *b { "YES" } else { "NO" }.to_string(),
                    _ => return Err(bad_json(&format!("'{k}' has a value sealmq cannot take"))),
                });
            }
            cmd.push_str(&format!(" {}({})", key.to_ascii_uppercase(), out.join(",")));
        }
    }
    if command == "display" {
        match v.get("responseParameters").and_then(Value::as_array) {
            Some(list) if !list.is_empty() => {
                for x in list {
                    let Some(k) = x.as_str().filter(|k| valid_key(k)) else {
                        return Err(bad_json("responseParameters are attribute names"));
                    };
                    cmd.push(' ');
                    cmd.push_str(&k.to_ascii_uppercase());
                }
            }
            _ => cmd.push_str(" ALL"),
        }
    }
    Ok(cmd)
}

fn valid_key(k: &str) -> bool {
    !k.is_empty()
        && k.len() <= 32
        && k.chars().all(|c| c.is_ascii_alphanumeric())
        && k.starts_with(|c: char| c.is_ascii_alphabetic())
}

/// A value without control characters (no second line, so no second command).
fn valid_value(s: &str) -> bool {
    s.len() <= 10_240 && !s.chars().any(char::is_control)
}

/// A token MQSC takes unquoted as it is.
fn plain(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '*' | '/' | '%'))
}

pub(crate) use crate::params::quote;

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn cmd(v: Value) -> Option<String> {
        command_of(&v).ok()
    }

    #[test]
    fn times_are_written_as_mq_writes_them() {
        assert_eq!(iso8601(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso8601(951_782_400), "2000-02-29T00:00:00.000Z");
        assert_eq!(iso8601(1_795_824_364), "2026-11-28T00:06:04.000Z");
    }

    #[test]
    fn run_command_json_becomes_one_mqsc_command() {
        assert_eq!(
            cmd(json!({"command":"define","qualifier":"qlocal","name":"Q1",
                "parameters":{"maxdepth":10,"descr":"it's mine","defpsist":"yes"}})),
            Some("DEFINE QLOCAL('Q1') DEFPSIST(yes) DESCR('it''s mine') MAXDEPTH(10)".into())
        );
        assert_eq!(
            cmd(json!({"command":"display","qualifier":"qlocal","name":"Q*",
                "responseParameters":["curdepth","maxdepth"]})),
            Some("DISPLAY QLOCAL('Q*') CURDEPTH MAXDEPTH".into())
        );
        assert_eq!(
            cmd(json!({"command":"display","qualifier":"qmgr"})),
            Some("DISPLAY QMGR ALL".into())
        );
        assert_eq!(
            cmd(json!({"command":"set","qualifier":"authrec","name":"APP.*",
                "parameters":{"objtype":"queue","principal":"app","authadd":["put","get"]}})),
            Some(
                "SET AUTHREC PROFILE('APP.*') AUTHADD(put,get) OBJTYPE(queue) PRINCIPAL('app')"
                    .into()
            )
        );
        assert!(cmd(json!({"command":"define","qualifier":"nonsense","name":"X"})).is_none());
        assert!(cmd(json!({"command":"format","qualifier":"qlocal","name":"X"})).is_none());
        assert!(cmd(json!({"command":"define","qualifier":"qlocal"})).is_none());
        assert!(
            cmd(json!({"command":"define","qualifier":"qlocal","name":"X",
            "parameters":{"descr":"a\nDELETE QLOCAL(Y)"}}))
            .is_none()
        );
        assert!(
            cmd(json!({"command":"define","qualifier":"qlocal","name":"X",
            "parameters":{"bad key)":"x"}}))
            .is_none()
        );
    }

    proptest! {
        /// Whatever a body holds, the command is one line, and a name or value never leaves
        /// its quotes.
        #[test]
        fn no_body_makes_more_than_one_command(name in ".{0,40}", descr in ".{0,40}", key in "[a-zA-Z]{1,8}") {
            let v = json!({"command":"alter","qualifier":"qlocal","name":name,
                "parameters":{"descr":descr.clone(), key: descr}});
            if let Ok(c) = command_of(&v) {
                prop_assert!(!c.contains('\n') && !c.contains('\r'));
                let parsed = sealmq_mqsc::parse(&c);
                prop_assert!(parsed.is_ok(), "{c}: {:?}", parsed.err());
            }
        }
    }
}

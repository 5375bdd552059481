//! Running MQSC commands against a queue manager, and their responses.

use crate::parse::{Command, Obj, Verb, parse};
use crate::queues::obj_qtype;
use sealmq_engine::QueueManager;
use sealmq_engine::objects::{QType, QmgrDef};
use sealmq_types::attrs;
use std::sync::Arc;

pub use crate::args::Block;
use crate::args::{Fail, bad, choice, generic_match, none_matched, num, one, onoff, text};
use crate::authrec::authrec;
use crate::chldef::channel;
use crate::display::select_all;
use crate::policy::policy;
pub use crate::policy::{policy_block, policy_command};

/// The response to one command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// The command as read (continuations joined).
    pub command: String,
    /// Line of the input where the command began.
    pub line: usize,
    pub ok: bool,
    /// A one-line message: `SMQnnnnI ...` or `SMQnnnnE ...`.
    pub message: String,
    /// The MQ reason code when the command failed on one.
    pub reason: Option<u32>,
    pub objects: Vec<Block>,
}

fn qmgr_block(q: &QmgrDef) -> Block {
    attrs![
        "QMNAME" => q.name, "DESCR" => q.descr, "DEADQ" => q.dead_letter_q,
        "MAXMSGL" => q.max_msg_len, "CHIADAPS" => q.chiadaps, "CHIDISPS" => q.chidisps,
        "STATINT" => q.stat_int, "DEFXMITQ" => q.def_xmitq,
        "ACCTMQI" => if q.acct_mqi { "ON" } else { "OFF" }, "ACCTINT" => q.acct_int,
        "CHLAUTH" => onoff(q.chlauth_enabled), "CONNAUTH" => q.connauth, "MAXCHL" => q.maxchl,
        "TRIGINT" => q.trig_int_ms(), "MSGCACHE" => (q.msg_cache_bytes() >> 20),
        "MAXHANDS" => q.max_handles(), "MAXUMSGS" => q.max_uncommitted(),
    ]
    .into_iter()
    .chain(
        crate::known::shown(&q.noted).filter(|(k, _)| {
            !matches!(k.as_str(), "TRIGINT" | "MSGCACHE" | "MAXHANDS" | "MAXUMSGS")
        }),
    )
    .collect()
}

fn run_one(qm: &Arc<QueueManager>, c: &Command) -> Result<(String, Vec<Block>), Fail> {
    if let Obj::NotProvided(what) = c.obj {
        let why =
            crate::known::object_not_provided(what).unwrap_or("this object type is not provided");
        return Err(Fail {
            at: None,
            reason: None,
            message: format!("{what}: {why} (docs/administration.md, \"Not provided\")"),
        });
    }
    if let Some(f) = amqp_channel(qm, c) {
        return Err(f);
    }
    if let Some(r) = crate::services::route(qm, c) {
        return r;
    }
    if let Some(r) = crate::topics::route(qm, c) {
        return r;
    }
    if let Some(r) = crate::subs::route(qm, c) {
        return r;
    }
    if let Some(r) = crate::status::route(qm, c) {
        return r;
    }
    let name = c.name.clone().unwrap_or_default();
    match (c.verb, c.obj) {
        (Verb::Define | Verb::Alter | Verb::Delete, o) if obj_qtype(o).is_some() => {
            crate::queues::queues(qm, c)
        }
        (Verb::Clear, Obj::QLocal) => crate::queues::queues(qm, c),
        (Verb::Display, o) if obj_qtype(o).is_some() || o == Obj::Queue => {
            crate::queues::queues(qm, c)
        }
        (Verb::Display, Obj::QStatus) => {
            if let Some(a) = c.attrs.iter().find(|a| a.key == "TYPE")
                && !one(a)?.eq_ignore_ascii_case("QUEUE")
            {
                return Err(bad(a, "expected TYPE(QUEUE) or TYPE(HANDLE)"));
            }
            let mut blocks = Vec::new();
            for d in qm
                .queue_defs()
                .iter()
                .filter(|d| d.qtype == QType::Local && generic_match(&name, &d.name))
            {
                let s = qm.queue_status(&d.name)?;
                blocks.push(vec![
                    ("QUEUE".into(), d.name.clone()),
                    ("TYPE".into(), "QUEUE".into()),
                    ("CURDEPTH".into(), s.depth.to_string()),
                    ("IPPROCS".into(), s.input_opens.to_string()),
                    ("OPPROCS".into(), s.output_opens.to_string()),
                    ("UNCOM".into(), s.uncommitted.to_string()),
                    ("WAITING".into(), s.waiting.to_string()),
                    // MB, as MQ shows them (a started megabyte counts).
                    (
                        "CURFSIZE".into(),
                        s.file_bytes.div_ceil(1 << 20).to_string(),
                    ),
                    ("CURMAXFS".into(), (s.max_file_bytes >> 20).to_string()),
                ]);
            }
            none_matched(&blocks, "local queue", &name)?;
            let blocks = select_all(blocks, &c.attrs, &["QUEUE", "TYPE"], true)?;
            Ok((
                format!("SMQ0106I Status of {} queue(s).", blocks.len()),
                blocks,
            ))
        }
        (Verb::Reset, Obj::QStats) => {
            if let Some(a) = c.attrs.first() {
                return Err(bad(a, "RESET QSTATS takes no attributes"));
            }
            let blocks: Vec<Block> = qm
                .reset_queue_stats(&name)?
                .into_iter()
                .map(|r| {
                    attrs![
                        "QUEUE" => r.queue, "MSGSIN" => r.msgs_in, "MSGSOUT" => r.msgs_out,
                        "HIQDEPTH" => r.hi_depth, "TIMESINCERESET" => r.secs_since_reset,
                    ]
                })
                .collect();
            Ok((
                format!("SMQ0109I Statistics of {} queue(s) reset.", blocks.len()),
                blocks,
            ))
        }
        (Verb::Display, Obj::Qmgr) => {
            let mut block = qmgr_block(&qm.qmgr());
            // SPEC §5.6: the queue manager's keystore identity (status, not an attribute).
            let dn = qm
                .chinit()
                .and_then(|c| c.keystore_dn())
                .unwrap_or_default();
            block.insert(2, ("SSLKEYDN".into(), dn));
            let blocks = select_all([block], &c.attrs, &["QMNAME"], true)?;
            Ok(("SMQ0107I Display queue manager details.".into(), blocks))
        }
        (Verb::Alter, Obj::Qmgr) => {
            let mut q = qm.qmgr();
            let list = (crate::known::QMGR, "queue manager attribute");
            crate::known::apply(
                &mut q,
                &c.attrs,
                list,
                |q| &mut q.noted,
                |q, a| {
                    match a.key.as_str() {
                        "DESCR" => q.descr = one(a)?.trim_end().to_string(),
                        "DEADQ" => q.dead_letter_q = one(a)?.to_string(),
                        "MAXMSGL" => q.max_msg_len = num(a, 32768, 104_857_600)?,
                        "CHIADAPS" => q.chiadaps = num(a, 1, 9999)?,
                        "CHIDISPS" => q.chidisps = num(a, 1, 9999)?,
                        "STATINT" => q.stat_int = num(a, 1, 604_800)?,
                        "DEFXMITQ" => q.def_xmitq = a.values.first().cloned().unwrap_or_default(),
                        "ACCTMQI" => q.acct_mqi = choice(a, &["ON", "OFF"])? == "ON",
                        "ACCTINT" => q.acct_int = num(a, 1, 604_800)?,
                        "MAXCHL" => q.maxchl = num(a, 1, 999_999_999)?,
                        // Kept with the noted attributes, and read back from there: TRIGINT
                        // (QmgrDef::trig_int_ms, where older queue managers stored it); sealmq's
                        // own MSGCACHE, the message cache (MiB) all queues share (the rest of
                        // their messages wait in queue files); the handles one connection may
                        // hold and the operations one unit of work (or one asynchronous consumer,
                        // unsettled) may hold, with MQ's names and ranges.
                        k @ ("TRIGINT" | "MSGCACHE" | "MAXHANDS" | "MAXUMSGS") => {
                            let (min, max) = match k {
                                "MSGCACHE" => (1, 1_048_576),
                                "MAXUMSGS" => (1, 999_999_999),
                                _ => (0, 999_999_999),
                            };
                            let v: u32 = num(a, min, max)?;
                            q.noted.insert(k.into(), v.to_string());
                        }
                        "CHLAUTH" => {
                            q.chlauth_enabled = choice(a, &["ENABLED", "DISABLED"])? == "ENABLED"
                        }
                        "CONNAUTH" => {
                            let n = text(a);
                            if !n.is_empty() && qm.authinfo(&n).is_none() {
                                return Err(bad(a, format!("AUTHINFO '{n}' is not defined")));
                            }
                            q.connauth = n;
                        }
                        _ => return Ok(false),
                    }
                    Ok(true)
                },
            )?;
            qm.alter_qmgr(q)?;
            Ok(("SMQ0108I Queue manager altered.".into(), vec![]))
        }
        (Verb::Set | Verb::Display | Verb::Delete, Obj::AuthRec) => authrec(qm, c),
        (Verb::Display, Obj::EntAuth) => crate::authrec::entauth(qm, c),
        (Verb::Set | Verb::Display, Obj::ChlAuth) => crate::chlauth::chlauth(qm, c),
        (Verb::Define | Verb::Alter | Verb::Display | Verb::Delete, Obj::AuthInfo) => {
            crate::chlauth::authinfo(qm, c)
        }
        (Verb::Set | Verb::Display | Verb::Delete, Obj::Policy) => policy(qm, c),
        (Verb::Define | Verb::Alter | Verb::Display | Verb::Delete, Obj::Channel) => channel(qm, c),
        (Verb::Start | Verb::Stop | Verb::Resolve | Verb::Reset, Obj::Channel)
        | (Verb::Display, Obj::ChStatus | Obj::Chinit) => crate::chl::run(qm, c),
        (Verb::Refresh, Obj::Security) => crate::chl::refresh_security(qm, c),
        (
            _,
            Obj::Channel
            | Obj::ChStatus
            | Obj::Policy
            | Obj::AuthRec
            | Obj::Chinit
            | Obj::Security
            | Obj::ChlAuth
            | Obj::AuthInfo
            | Obj::EntAuth,
        )
        | (Verb::Start | Verb::Stop | Verb::Resolve | Verb::Reset | Verb::Set | Verb::Refresh, _) => {
            Err(Fail {
                at: None,
                reason: None,
                message: "this command is understood but not available in this release".into(),
            })
        }
        _ => Err(Fail {
            at: None,
            reason: None,
            message: "this verb does not apply to this object type".into(),
        }),
    }
}

/// MQ's MQTT channels (CHLTYPE(MQTT), its default SYSTEM.DEF.MQTT): not provided, and said so
/// rather than "not defined". (AMQP channels are: sealmq-amqp.)
fn amqp_channel(qm: &QueueManager, c: &Command) -> Option<Fail> {
    if !matches!(c.obj, Obj::Channel | Obj::ChStatus) {
        return None;
    }
    let name = c.name.clone().unwrap_or_default();
    let kind = c
        .attrs
        .iter()
        .find(|a| a.key == "CHLTYPE")
        .and_then(|a| a.values.first())
        .map(|v| v.to_ascii_uppercase())
        .filter(|t| t == "MQTT")
        .or_else(|| {
            (qm.channel(&name).is_none() && name.as_str() == "SYSTEM.DEF.MQTT")
                .then(|| name.trim_start_matches("SYSTEM.DEF.").to_string())
        })?;
    Some(Fail {
        at: None,
        reason: None,
        message: format!(
            "{kind} channels are not provided in this release (docs/administration.md, \"Not provided\")"
        ),
    })
}

/// Runs every command of an MQSC script; one response each. `END` ends the script, as in
/// runmqsc (what follows it is not run).
pub fn run(qm: &Arc<QueueManager>, script: &str) -> Vec<Response> {
    crate::lexer::commands(script)
        .into_iter()
        .take_while(|ct| !ct.text.trim().eq_ignore_ascii_case("END"))
        .map(|ct| {
            let outcome = parse(&ct.text)
                .map_err(|e| Fail {
                    at: Some(e.at),
                    reason: None,
                    message: e.message,
                })
                .and_then(|c| run_one(qm, &c));
            match outcome {
                Ok((message, objects)) => Response {
                    command: ct.text,
                    line: ct.line,
                    ok: true,
                    message,
                    reason: None,
                    objects,
                },
                Err(f) => {
                    let pointer = f.at.map(|at| {
                        let tok: String = ct
                            .text
                            .chars()
                            .skip(at)
                            .take_while(|c| !c.is_whitespace())
                            .collect();
                        format!(" at column {} ('{tok}')", at + 1)
                    });
                    let reason = f
                        .reason
                        .map(|r| format!(" [{} {}]", r.code(), r.name()))
                        .unwrap_or_default();
                    Response {
                        command: ct.text,
                        line: ct.line,
                        ok: false,
                        message: format!(
                            "SMQ0900E line {}{}: {}{}",
                            ct.line,
                            pointer.unwrap_or_default(),
                            f.message,
                            reason
                        ),
                        reason: f.reason.map(|r| r.code()),
                        objects: vec![],
                    }
                }
            }
        })
        .collect()
}

/// Text output: the command, its message, then one block per object.
/// Width of a column of DISPLAY output.
const COLUMN: usize = 38;

pub fn render_text(responses: &[Response]) -> String {
    let mut out = String::new();
    for r in responses {
        out.push_str(&format!("     {}\n{}\n", r.command, r.message));
        for b in &r.objects {
            // Two attributes a line, as MQ prints them; one too long for its column gets a
            // line of its own.
            let mut left: Option<String> = None;
            for (k, v) in b {
                let p = format!("{k}({v})");
                match left.take() {
                    Some(l) if p.len() < COLUMN => {
                        out.push_str(&format!("   {l:<COLUMN$}{p}\n"));
                    }
                    Some(l) => {
                        out.push_str(&format!("   {l}\n   {p}\n"));
                    }
                    None if p.len() < COLUMN => left = Some(p),
                    None => out.push_str(&format!("   {p}\n")),
                }
            }
            if let Some(l) = left {
                out.push_str(&format!("   {l}\n"));
            }
        }
        out.push('\n');
    }
    let failed = responses.iter().filter(|r| !r.ok).count();
    out.push_str(&format!(
        "{} command(s) read, {} failed.\n",
        responses.len(),
        failed
    ));
    out
}

/// JSON output: the same as the text, as an array of responses.
pub fn render_json(responses: &[Response]) -> String {
    let v: Vec<serde_json::Value> = responses
        .iter()
        .map(|r| {
            let objs: Vec<serde_json::Value> = r
                .objects
                .iter()
                .map(|b| {
                    // A keyword that repeats (RECIP, SIGNER) becomes an array.
                    let mut o = serde_json::Map::new();
                    for (k, v) in b {
                        let val = serde_json::Value::String(v.clone());
                        match o.get_mut(k) {
                            Some(serde_json::Value::Array(a)) => a.push(val),
                            Some(prev) => {
                                let first = prev.take();
                                *prev = serde_json::Value::Array(vec![first, val]);
                            }
                            None => {
                                o.insert(k.clone(), val);
                            }
                        }
                    }
                    serde_json::Value::Object(o)
                })
                .collect();
            serde_json::json!({
                "command": r.command,
                "line": r.line,
                "ok": r.ok,
                "message": r.message,
                "reason": r.reason,
                "objects": objs,
            })
        })
        .collect();
    serde_json::to_string_pretty(&v).unwrap_or_else(|_| "[]".into())
}

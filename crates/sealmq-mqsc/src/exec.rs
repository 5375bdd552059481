//! Running MQSC commands against a queue manager, and their responses.

use crate::parse::{Command, Obj, Verb, parse};
use crate::queues::obj_qtype;
use sealmq_engine::QueueManager;
use std::sync::Arc;

pub use crate::args::Block;
use crate::args::Fail;
use crate::authrec::authrec;
use crate::chldef::channel;
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
    /// It failed as runmqsc's syntax check would (the command could not be parsed).
    pub syntax: bool,
    /// The answer: MQ's message (`AMQ8006I: IBM MQ queue created.`) or sealmq's where MQ has
    /// none (`SMQnnnnI: ...`); a failure may add a line of detail.
    pub message: String,
    /// The MQ reason code when the command failed on one.
    pub reason: Option<u32>,
    pub objects: Vec<Block>,
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
        (Verb::Display, Obj::QStatus) => crate::status::queue_status(qm, c, &name),
        (Verb::Reset, Obj::QStats) => crate::status::reset_qstats(qm, c, &name),
        (Verb::Display, Obj::Qmgr) => crate::qmgr::display(qm, c),
        (Verb::Ping, Obj::Qmgr) => Ok((
            "AMQ8415I: Ping IBM MQ Queue Manager command complete.".into(),
            vec![],
        )),
        (Verb::Alter, Obj::Qmgr) => crate::qmgr::alter(qm, c),
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
    run_as(qm, script, None)
}

/// As [`run`], for `principal` when given: each command first needs the authority MQ's
/// command server asks for it (`authz.rs`), and a DISPLAY shows only what the principal may
/// display. `None`: the queue manager's administrator, who may do anything.
pub fn run_as(qm: &Arc<QueueManager>, script: &str, principal: Option<&str>) -> Vec<Response> {
    crate::lexer::commands(script)
        .into_iter()
        .take_while(|ct| !is_end(&ct.text))
        .map(|ct| {
            let parsed = parse(&ct.text);
            let syntax = parsed.is_err();
            let outcome = parsed
                .map_err(|e| Fail {
                    at: Some(e.at),
                    reason: None,
                    message: e.message,
                })
                .and_then(|c| {
                    let Some(p) = principal else {
                        return run_one(qm, &c);
                    };
                    crate::authz::allowed(qm, &c, p)?;
                    let (message, objects) = run_one(qm, &c)?;
                    Ok((message, crate::authz::visible(qm, &c, p, objects)))
                });
            match outcome {
                Ok((message, objects)) => Response {
                    command: ct.text,
                    line: ct.line,
                    ok: true,
                    syntax: false,
                    message,
                    reason: None,
                    objects,
                },
                Err(f) => Response {
                    message: failure(&ct, &f, syntax),
                    reason: f.reason.map(|r| r.code()),
                    command: ct.text,
                    line: ct.line,
                    ok: false,
                    syntax,
                    objects: vec![],
                },
            }
        })
        .collect()
}

/// runmqsc's local syntax check of one command (its text as [`crate::lexer::commands`] joins
/// it): the failed response when it does not parse, `None` when it does.
pub fn syntax_error(text: &str, line: usize) -> Option<Response> {
    let e = parse(text).err()?;
    let ct = crate::lexer::CommandText {
        text: text.to_string(),
        line,
    };
    let f = Fail {
        at: Some(e.at),
        reason: None,
        message: e.message,
    };
    Some(Response {
        message: failure(&ct, &f, true),
        command: ct.text,
        line,
        ok: false,
        syntax: true,
        reason: None,
        objects: vec![],
    })
}

/// Whether a command is runmqsc's `END` (or `EXIT`/`QUIT` typed at a terminal).
pub fn is_end(text: &str) -> bool {
    matches!(
        text.trim().to_ascii_uppercase().as_str(),
        "END" | "EXIT" | "QUIT"
    )
}

/// A failed command's answer: MQ's message where MQ has one for the failure (AMQ8405I for a
/// syntax error, with the segment up to the fault; AMQ8147E, AMQ8150E, AMQ8148E, AMQ8135E for
/// reason codes), then sealmq's detail (`SMQ0900E: ...`), which says what to do.
fn failure(ct: &crate::lexer::CommandText, f: &Fail, syntax: bool) -> String {
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
    let detail = format!(
        "SMQ0900E: line {}{}: {}{}",
        ct.line,
        pointer.unwrap_or_default(),
        f.message,
        reason
    );
    let mq = if syntax {
        // The command up to the end of the token at fault, as runmqsc shows it.
        let upto: String = match f.at {
            Some(at) => ct
                .text
                .chars()
                .enumerate()
                .take_while(|(i, c)| *i < at || !c.is_whitespace())
                .map(|(_, c)| c)
                .collect(),
            None => ct.text.clone(),
        };
        Some(format!(
            "AMQ8405I: Syntax error detected at or near end of command segment below:-\n{upto}"
        ))
    } else {
        use sealmq_types::ReasonCode as R;
        let name = object_name(&ct.text);
        match f.reason {
            Some(R::UnknownObjectName) => {
                Some(format!("AMQ8147E: IBM MQ object {name} not found."))
            }
            Some(R::ObjectAlreadyExists) => Some("AMQ8150E: IBM MQ object already exists.".into()),
            Some(R::ObjectInUse) => Some("AMQ8148E: IBM MQ object in use.".into()),
            Some(R::NotAuthorized) => Some("AMQ8135E: Not authorized.".into()),
            _ => None,
        }
    };
    match mq {
        Some(m) => format!("{m}\n{detail}"),
        None => detail,
    }
}

/// The name in a command's first parentheses, for MQ's "object NAME not found".
fn object_name(text: &str) -> String {
    text.split_once('(')
        .and_then(|(_, rest)| rest.split_once(')'))
        .map(|(n, _)| n.trim().trim_matches('\'').to_string())
        .unwrap_or_default()
}

/// Width of a column of DISPLAY output.
const COLUMN: usize = 38;

/// One command's answer as runmqsc prints it: its message, and for a DISPLAY the message again
/// before each object (as MQ does), the object's attributes two a line (one too long for its
/// column gets a line of its own).
pub fn render_reply(r: &Response) -> String {
    let mut out = String::new();
    if r.objects.is_empty() {
        out.push_str(&r.message);
        out.push('\n');
    }
    for b in &r.objects {
        out.push_str(&r.message);
        out.push('\n');
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
    out
}

/// A whole script's transcript in runmqsc's layout: each command echoed (`     1 : ...`),
/// its answer, and runmqsc's closing count (`crate::transcript`).
pub fn render_text(responses: &[Response]) -> String {
    let mut t = crate::transcript::Transcript::new(true);
    let mut out = String::new();
    for r in responses {
        out.push_str(&t.echo(&r.command));
        out.push_str(&render_reply(r));
        t.count(r.ok, r.syntax);
    }
    out.push_str(&t.summary());
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

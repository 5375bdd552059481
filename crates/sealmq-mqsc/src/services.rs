//! LISTENER (DEFINE, ALTER, DELETE, DISPLAY, START, STOP), DISPLAY LSSTATUS, PROCESS
//! (DEFINE, ALTER, DELETE, DISPLAY), SERVICE (as LISTENER) and DISPLAY SVSTATUS.

use crate::exec::{
    Block, Fail, bad, choice, generic_match, none_matched, num, one, select_all, unknown_keywords,
};
use crate::known;
use crate::parse::{Attr, Command, Obj, Verb};
use sealmq_engine::QueueManager;
use sealmq_engine::services::{
    Control, DEFAULT_LISTENER, DEFAULT_PROCESS, DEFAULT_SERVICE, ListenerDef, ProcessDef, ServType,
    ServiceDef,
};
use sealmq_types::ReasonCode;
use std::sync::Arc;

fn not_defined(what: &str, name: &str) -> Fail {
    Fail {
        at: None,
        reason: Some(ReasonCode::UnknownObjectName),
        message: format!("{what} '{name}' is not defined"),
    }
}

fn text(a: &Attr) -> String {
    a.values
        .first()
        .map(|v| v.trim().to_string())
        .unwrap_or_default()
}

fn apply_listener(d: &mut ListenerDef, attrs: &[Attr]) -> Result<(), Fail> {
    let mut unknown: Vec<&Attr> = Vec::new();
    for a in attrs {
        match a.key.as_str() {
            "REPLACE" | "NOREPLACE" | "LIKE" => {}
            "DESCR" => d.descr = one(a)?.trim_end().to_string(),
            "TRPTYPE" => {
                if !one(a)?.eq_ignore_ascii_case("TCP") {
                    return Err(bad(
                        a,
                        format!(
                            "'{}' is not provided: sealmq listens over TCP only",
                            one(a)?
                        ),
                    ));
                }
            }
            "PORT" => d.port = num(a, 0, 65_535)? as u16,
            "IPADDR" => d.ipaddr = text(a),
            "BACKLOG" => d.backlog = num(a, 0, 999_999_999)?,
            "CONTROL" => {
                d.control = Control::parse(choice(a, &["QMGR", "STARTONLY", "MANUAL"])?)
                    .unwrap_or(Control::Manual)
            }
            _ => match known::note(a, known::LISTENER, &mut d.noted) {
                Some(r) => r?,
                None => unknown.push(a),
            },
        }
    }
    unknown_keywords(&unknown, "listener attribute")
}

fn listener_block(d: &ListenerDef) -> Block {
    let mut b: Block = vec![
        ("LISTENER".into(), d.name.clone()),
        ("CONTROL".into(), d.control.name().into()),
        ("TRPTYPE".into(), "TCP".into()),
        ("PORT".into(), d.port.to_string()),
        ("IPADDR".into(), d.ipaddr.clone()),
        ("BACKLOG".into(), d.backlog.to_string()),
        ("DESCR".into(), d.descr.clone()),
    ];
    b.extend(known::shown(&d.noted));
    b
}

fn apply_process(d: &mut ProcessDef, attrs: &[Attr]) -> Result<(), Fail> {
    let mut unknown: Vec<&Attr> = Vec::new();
    for a in attrs {
        match a.key.as_str() {
            "REPLACE" | "NOREPLACE" | "LIKE" => {}
            "DESCR" => d.descr = one(a)?.trim_end().to_string(),
            "APPLTYPE" => d.appltype = one(a)?.trim().to_ascii_uppercase(),
            "APPLICID" => d.applicid = text(a),
            "ENVRDATA" => d.envrdata = text(a),
            "USERDATA" => d.userdata = text(a),
            _ => match known::note(a, known::PROCESS, &mut d.noted) {
                Some(r) => r?,
                None => unknown.push(a),
            },
        }
    }
    unknown_keywords(&unknown, "process attribute")
}

fn process_block(d: &ProcessDef) -> Block {
    let mut b: Block = vec![
        ("PROCESS".into(), d.name.clone()),
        ("DESCR".into(), d.descr.clone()),
        ("APPLTYPE".into(), d.appltype.clone()),
        ("APPLICID".into(), d.applicid.clone()),
        ("ENVRDATA".into(), d.envrdata.clone()),
        ("USERDATA".into(), d.userdata.clone()),
    ];
    b.extend(known::shown(&d.noted));
    b
}

/// IGNSTATE(YES) on START/STOP: an object already in the state asked for is not an error.
fn ignstate(c: &Command, what: &str) -> Result<bool, Fail> {
    let mut ignstate = false;
    for a in &c.attrs {
        match a.key.as_str() {
            "IGNSTATE" => ignstate = choice(a, &["YES", "NO"])? == "YES",
            "CMDSCOPE" | "QSGDISP" | "INDISP" => {}
            _ => {
                return Err(bad(
                    a,
                    format!("START and STOP {what} take the object's name and IGNSTATE"),
                ));
            }
        }
    }
    Ok(ignstate)
}

fn apply_service(d: &mut ServiceDef, attrs: &[Attr]) -> Result<(), Fail> {
    let mut unknown: Vec<&Attr> = Vec::new();
    for a in attrs {
        match a.key.as_str() {
            "REPLACE" | "NOREPLACE" | "LIKE" => {}
            "DESCR" => d.descr = one(a)?.trim_end().to_string(),
            "SERVTYPE" => {
                d.servtype = match choice(a, &["SERVER", "COMMAND"])? {
                    "SERVER" => ServType::Server,
                    _ => ServType::Command,
                }
            }
            "CONTROL" => {
                d.control = Control::parse(choice(a, &["QMGR", "STARTONLY", "MANUAL"])?)
                    .unwrap_or(Control::Manual)
            }
            "STARTCMD" => d.startcmd = text(a),
            "STARTARG" => d.startarg = text(a),
            "STOPCMD" => d.stopcmd = text(a),
            "STOPARG" => d.stoparg = text(a),
            "STDOUT" => d.stdout = text(a),
            "STDERR" => d.stderr = text(a),
            _ => match known::note(a, known::SERVICE, &mut d.noted) {
                Some(r) => r?,
                None => unknown.push(a),
            },
        }
    }
    unknown_keywords(&unknown, "service attribute")
}

fn service_block(d: &ServiceDef) -> Block {
    let mut b: Block = vec![
        ("SERVICE".into(), d.name.clone()),
        ("CONTROL".into(), d.control.name().into()),
        ("SERVTYPE".into(), d.servtype.name().into()),
        ("STARTCMD".into(), d.startcmd.clone()),
        ("STARTARG".into(), d.startarg.clone()),
        ("STOPCMD".into(), d.stopcmd.clone()),
        ("STOPARG".into(), d.stoparg.clone()),
        ("STDOUT".into(), d.stdout.clone()),
        ("STDERR".into(), d.stderr.clone()),
        ("DESCR".into(), d.descr.clone()),
    ];
    b.extend(known::shown(&d.noted));
    b
}

fn no_server() -> Fail {
    Fail {
        at: None,
        reason: None,
        message: "services run in a started queue manager (`sealmq start`)".into(),
    }
}

pub(crate) fn service(qm: &Arc<QueueManager>, c: &Command) -> Result<(String, Vec<Block>), Fail> {
    let name = c.name.clone().unwrap_or_default();
    let replace = c.attrs.iter().any(|a| a.key == "REPLACE");
    match c.verb {
        Verb::Define => {
            let mut d = template(c, |n| qm.service(n), DEFAULT_SERVICE, "service")?
                .map(|mut t| {
                    t.name = name.clone();
                    t
                })
                .unwrap_or_else(|| ServiceDef::new(&name));
            apply_service(&mut d, &c.attrs)?;
            qm.define_service(d, replace)?;
            Ok((format!("SMQ0200I Service {name} defined."), vec![]))
        }
        Verb::Alter => {
            let mut d = qm
                .service(&name)
                .ok_or_else(|| not_defined("service", &name))?;
            apply_service(&mut d, &c.attrs)?;
            qm.define_service(d, true)?;
            Ok((format!("SMQ0201I Service {name} altered."), vec![]))
        }
        Verb::Delete => {
            qm.delete_service(&name)?;
            Ok((format!("SMQ0202I Service {name} deleted."), vec![]))
        }
        Verb::Start | Verb::Stop => {
            let ignstate = ignstate(c, "SERVICE")?;
            let d = qm
                .service(&name)
                .ok_or_else(|| not_defined("service", &name))?;
            let ctl = qm.service_control().ok_or_else(no_server)?;
            let running = ctl.status().iter().any(|s| s.name == name);
            // Only a SERVER has a state: a COMMAND runs its program each time.
            let in_state = d.servtype == ServType::Server && ((c.verb == Verb::Start) == running);
            let msg = if in_state && ignstate {
                format!(
                    "SMQ0207I Service {name} is already {}.",
                    if running { "running" } else { "stopped" }
                )
            } else if c.verb == Verb::Start {
                ctl.start(&d)?
            } else {
                ctl.stop(&d)?
            };
            Ok((msg, vec![]))
        }
        _ => {
            let blocks = select_all(
                qm.services()
                    .iter()
                    .filter(|d| generic_match(&name, &d.name))
                    .map(service_block),
                &c.attrs,
                &["SERVICE"],
                false,
            )?;
            none_matched(&blocks, "service", &name)?;
            Ok((
                format!("SMQ0203I Display of {} service(s).", blocks.len()),
                blocks,
            ))
        }
    }
}

/// DISPLAY SVSTATUS: the SERVER services running now.
pub(crate) fn svstatus(qm: &Arc<QueueManager>, c: &Command) -> Result<(String, Vec<Block>), Fail> {
    let name = c.name.clone().unwrap_or_default();
    let running = qm.service_control().map(|s| s.status()).unwrap_or_default();
    let mut blocks = Vec::new();
    for s in running.iter().filter(|s| generic_match(&name, &s.name)) {
        let (da, ti) = sealmq_types::time::mq_date_time(s.started);
        let mut b: Block = vec![
            ("SERVICE".into(), s.name.clone()),
            ("STATUS".into(), s.status.into()),
            ("PID".into(), s.pid.to_string()),
            ("STARTDA".into(), da),
            ("STARTTI".into(), ti),
        ];
        if let Some(d) = qm.service(&s.name) {
            b.extend(service_block(&d).into_iter().skip(1));
        }
        blocks.push(b);
    }
    if blocks.is_empty() && !name.contains('*') {
        return Err(Fail {
            at: None,
            reason: None,
            message: match qm.service(&name) {
                Some(d) if d.servtype == ServType::Command => format!(
                    "service {name} is a COMMAND service: only SERVER services have a status"
                ),
                Some(_) => format!("service {name} is not running"),
                None => format!("service '{name}' is not defined"),
            },
        });
    }
    let blocks = select_all(blocks, &c.attrs, &["SERVICE"], true)?;
    Ok((
        format!("SMQ0204I Status of {} service(s).", blocks.len()),
        blocks,
    ))
}

/// The object DEFINE starts from: LIKE's, else the default object's.
fn template<T>(
    c: &Command,
    get: impl Fn(&str) -> Option<T>,
    default: &str,
    what: &str,
) -> Result<Option<T>, Fail> {
    match c.attrs.iter().find(|a| a.key == "LIKE") {
        Some(a) => {
            let n = one(a)?;
            get(n).map(Some).ok_or_else(|| not_defined(what, n))
        }
        None => Ok(get(default)),
    }
}

pub(crate) fn listener(qm: &Arc<QueueManager>, c: &Command) -> Result<(String, Vec<Block>), Fail> {
    let name = c.name.clone().unwrap_or_else(|| DEFAULT_LISTENER.into());
    let replace = c.attrs.iter().any(|a| a.key == "REPLACE");
    match c.verb {
        Verb::Define => {
            let mut d = template(c, |n| qm.listener(n), DEFAULT_LISTENER, "listener")?
                .map(|mut t| {
                    t.name = name.clone();
                    t
                })
                .unwrap_or_else(|| ListenerDef::new(&name));
            apply_listener(&mut d, &c.attrs)?;
            qm.define_listener(d, replace)?;
            Ok((format!("SMQ0170I Listener {name} defined."), vec![]))
        }
        Verb::Alter => {
            let mut d = qm
                .listener(&name)
                .ok_or_else(|| not_defined("listener", &name))?;
            apply_listener(&mut d, &c.attrs)?;
            qm.define_listener(d, true)?;
            Ok((format!("SMQ0171I Listener {name} altered."), vec![]))
        }
        Verb::Delete => {
            qm.delete_listener(&name)?;
            Ok((format!("SMQ0172I Listener {name} deleted."), vec![]))
        }
        Verb::Start | Verb::Stop => {
            let ignstate = ignstate(c, "LISTENER")?;
            let d = qm
                .listener(&name)
                .ok_or_else(|| not_defined("listener", &name))?;
            let ctl = qm.listener_control().ok_or_else(|| Fail {
                at: None,
                reason: None,
                message: "listeners run in a started queue manager (`sealmq start`)".into(),
            })?;
            let running = ctl.status().iter().any(|s| s.name == name);
            let msg = match (c.verb, running) {
                (Verb::Start, true) if ignstate => {
                    format!("SMQ0178I Listener {name} is already running.")
                }
                (Verb::Start, true) => {
                    return Err(Fail {
                        at: None,
                        reason: Some(ReasonCode::ObjectInUse),
                        message: format!(
                            "listener {name} is already running (IGNSTATE(YES) makes this not an error)"
                        ),
                    });
                }
                (Verb::Start, false) => ctl.start(&d)?,
                _ => ctl.stop(&name)?,
            };
            Ok((msg, vec![]))
        }
        _ => {
            let blocks = select_all(
                qm.listeners()
                    .iter()
                    .filter(|d| generic_match(&name, &d.name))
                    .map(listener_block),
                &c.attrs,
                &["LISTENER"],
                false,
            )?;
            none_matched(&blocks, "listener", &name)?;
            Ok((
                format!("SMQ0173I Display of {} listener(s).", blocks.len()),
                blocks,
            ))
        }
    }
}

/// DISPLAY LSSTATUS: the listeners running now.
pub(crate) fn lsstatus(qm: &Arc<QueueManager>, c: &Command) -> Result<(String, Vec<Block>), Fail> {
    let name = c.name.clone().unwrap_or_default();
    let running = qm
        .listener_control()
        .map(|l| l.status())
        .unwrap_or_default();
    let mut blocks = Vec::new();
    for s in running.iter().filter(|s| generic_match(&name, &s.name)) {
        let def = qm.listener(&s.name);
        let (da, ti) = sealmq_types::time::mq_date_time(s.started);
        let port = s.addr.rsplit(':').next().unwrap_or_default().to_string();
        let ip = s
            .addr
            .rsplit_once(':')
            .map(|(h, _)| h.trim_matches(['[', ']']).to_string())
            .unwrap_or_default();
        blocks.push(vec![
            ("LISTENER".into(), s.name.clone()),
            ("STATUS".into(), "RUNNING".into()),
            ("PID".into(), std::process::id().to_string()),
            ("STARTDA".into(), da),
            ("STARTTI".into(), ti),
            (
                "DESCR".into(),
                def.as_ref().map(|d| d.descr.clone()).unwrap_or_default(),
            ),
            ("TRPTYPE".into(), "TCP".into()),
            (
                "CONTROL".into(),
                def.as_ref()
                    .map(|d| d.control.name())
                    .unwrap_or("MANUAL")
                    .into(),
            ),
            ("IPADDR".into(), ip),
            ("PORT".into(), port),
            ("BACKLOG".into(), s.backlog.to_string()),
        ]);
    }
    if blocks.is_empty() && !name.contains('*') {
        return Err(Fail {
            at: None,
            reason: None,
            message: if qm.listener(&name).is_some() {
                format!("listener {name} is not running")
            } else {
                format!("listener '{name}' is not defined")
            },
        });
    }
    let blocks = select_all(blocks, &c.attrs, &["LISTENER"], true)?;
    Ok((
        format!("SMQ0174I Status of {} listener(s).", blocks.len()),
        blocks,
    ))
}

pub(crate) fn process(qm: &Arc<QueueManager>, c: &Command) -> Result<(String, Vec<Block>), Fail> {
    let name = c.name.clone().unwrap_or_default();
    let replace = c.attrs.iter().any(|a| a.key == "REPLACE");
    match c.verb {
        Verb::Define => {
            let mut d = template(c, |n| qm.process(n), DEFAULT_PROCESS, "process")?
                .map(|mut t| {
                    t.name = name.clone();
                    t
                })
                .unwrap_or_else(|| ProcessDef::new(&name));
            apply_process(&mut d, &c.attrs)?;
            qm.define_process(d, replace)?;
            Ok((format!("SMQ0180I Process {name} defined."), vec![]))
        }
        Verb::Alter => {
            let mut d = qm
                .process(&name)
                .ok_or_else(|| not_defined("process", &name))?;
            apply_process(&mut d, &c.attrs)?;
            qm.define_process(d, true)?;
            Ok((format!("SMQ0181I Process {name} altered."), vec![]))
        }
        Verb::Delete => {
            qm.delete_process(&name)?;
            Ok((format!("SMQ0182I Process {name} deleted."), vec![]))
        }
        _ => {
            let blocks = select_all(
                qm.processes()
                    .iter()
                    .filter(|d| generic_match(&name, &d.name))
                    .map(process_block),
                &c.attrs,
                &["PROCESS"],
                false,
            )?;
            none_matched(&blocks, "process", &name)?;
            Ok((
                format!("SMQ0183I Display of {} process(es).", blocks.len()),
                blocks,
            ))
        }
    }
}

/// Which of this module's commands `c` is, if any.
pub(crate) fn route(
    qm: &Arc<QueueManager>,
    c: &Command,
) -> Option<Result<(String, Vec<Block>), Fail>> {
    use Verb::*;
    Some(match (c.verb, c.obj) {
        (Define | Alter | Delete | Display | Start | Stop, Obj::Listener) => listener(qm, c),
        (Display, Obj::LsStatus) => lsstatus(qm, c),
        (Define | Alter | Delete | Display, Obj::Process) => process(qm, c),
        (Define | Alter | Delete | Display | Start | Stop, Obj::Service) => service(qm, c),
        (Display, Obj::SvStatus) => svstatus(qm, c),
        _ => return None,
    })
}

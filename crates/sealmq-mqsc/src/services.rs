//! LISTENER (DEFINE, ALTER, DELETE, DISPLAY, START, STOP), DISPLAY LSSTATUS, PROCESS
//! (DEFINE, ALTER, DELETE, DISPLAY), SERVICE (as LISTENER) and DISPLAY SVSTATUS.

use crate::args::not_defined;
use crate::args::{Block, Fail, bad, choice, generic_match, num, one, text};
use crate::display::select_all;
use crate::kind::{Answer, Kind};
use crate::known;
use crate::parse::{Attr, Command, Obj, Verb};
use sealmq_engine::QueueManager;
use sealmq_engine::services::{
    Control, DEFAULT_LISTENER, DEFAULT_PROCESS, DEFAULT_SERVICE, ListenerDef, ProcessDef, ServType,
    ServiceDef,
};
use sealmq_types::ReasonCode;
use sealmq_types::attrs;
use std::sync::Arc;

fn apply_listener(d: &mut ListenerDef, attrs: &[Attr]) -> Result<(), Fail> {
    known::apply(
        d,
        attrs,
        (known::LISTENER, "listener attribute"),
        |d| &mut d.noted,
        |d, a| {
            match a.key.as_str() {
                "DESCR" => d.descr = one(a)?.trim_end().to_string(),
                "TRPTYPE" => known::tcp_only(a, "listens")?,
                "PORT" => d.port = num(a, 0, 65_535)? as u16,
                "IPADDR" => d.ipaddr = text(a),
                "BACKLOG" => d.backlog = num(a, 0, 999_999_999)?,
                "CONTROL" => {
                    d.control = Control::parse(choice(a, &["QMGR", "STARTONLY", "MANUAL"])?)
                        .unwrap_or(Control::Manual)
                }
                _ => return Ok(false),
            }
            Ok(true)
        },
    )
}

fn listener_block(d: &ListenerDef) -> Block {
    let mut b: Block = attrs![
        "LISTENER" => d.name, "CONTROL" => d.control.name(), "TRPTYPE" => "TCP", "PORT" => d.port,
        "IPADDR" => d.ipaddr, "BACKLOG" => d.backlog, "DESCR" => d.descr,
    ];
    b.extend(known::shown(&d.noted));
    b
}

fn apply_process(d: &mut ProcessDef, attrs: &[Attr]) -> Result<(), Fail> {
    known::apply(
        d,
        attrs,
        (known::PROCESS, "process attribute"),
        |d| &mut d.noted,
        |d, a| {
            match a.key.as_str() {
                "DESCR" => d.descr = one(a)?.trim_end().to_string(),
                "APPLTYPE" => d.appltype = one(a)?.trim().to_ascii_uppercase(),
                "APPLICID" => d.applicid = text(a),
                "ENVRDATA" => d.envrdata = text(a),
                "USERDATA" => d.userdata = text(a),
                _ => return Ok(false),
            }
            Ok(true)
        },
    )
}

fn process_block(d: &ProcessDef) -> Block {
    let mut b: Block = attrs![
        "PROCESS" => d.name, "DESCR" => d.descr, "APPLTYPE" => d.appltype,
        "APPLICID" => d.applicid, "ENVRDATA" => d.envrdata, "USERDATA" => d.userdata,
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
    known::apply(
        d,
        attrs,
        (known::SERVICE, "service attribute"),
        |d| &mut d.noted,
        |d, a| {
            match a.key.as_str() {
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
                _ => return Ok(false),
            }
            Ok(true)
        },
    )
}

fn service_block(d: &ServiceDef) -> Block {
    let mut b: Block = attrs![
        "SERVICE" => d.name, "CONTROL" => d.control.name(), "SERVTYPE" => d.servtype.name(),
        "STARTCMD" => d.startcmd, "STARTARG" => d.startarg, "STOPCMD" => d.stopcmd,
        "STOPARG" => d.stoparg, "STDOUT" => d.stdout, "STDERR" => d.stderr, "DESCR" => d.descr,
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

const SERVICE: Kind<ServiceDef> = Kind {
    what: "service",
    title: "Service",
    key: "SERVICE",
    plural: "service(s)",
    msg: 200,
    mq: [None; 4],
    default: DEFAULT_SERVICE,
    new: ServiceDef::new,
    name: |d| &mut d.name,
    apply: apply_service,
    block: service_block,
};

const LISTENER: Kind<ListenerDef> = Kind {
    what: "listener",
    title: "Listener",
    key: "LISTENER",
    plural: "listener(s)",
    msg: 170,
    mq: [
        Some("AMQ8626I: IBM MQ listener created."),
        None,
        None,
        Some("AMQ8630I: Display listener information details."),
    ],
    default: DEFAULT_LISTENER,
    new: ListenerDef::new,
    name: |d| &mut d.name,
    apply: apply_listener,
    block: listener_block,
};

const PROCESS: Kind<ProcessDef> = Kind {
    what: "process",
    title: "Process",
    key: "PROCESS",
    plural: "process(es)",
    msg: 180,
    mq: [None; 4],
    default: DEFAULT_PROCESS,
    new: ProcessDef::new,
    name: |d| &mut d.name,
    apply: apply_process,
    block: process_block,
};

pub(crate) fn service(qm: &Arc<QueueManager>, c: &Command) -> Result<Answer, Fail> {
    let name = c.name.clone().unwrap_or_default();
    if let Some(r) = SERVICE.run(qm, c, &name) {
        return r;
    }
    match c.verb {
        Verb::Start | Verb::Stop => {
            let ignstate = ignstate(c, "SERVICE")?;
            let d = qm
                .object::<ServiceDef>(&name)
                .ok_or_else(|| not_defined("service", &name))?;
            let ctl = qm.service_control().ok_or_else(no_server)?;
            let running = ctl.status().iter().any(|s| s.name == name);
            // Only a SERVER has a state: a COMMAND runs its program each time.
            let in_state = d.servtype == ServType::Server && ((c.verb == Verb::Start) == running);
            let msg = if in_state && ignstate {
                format!(
                    "SMQ0207I: Service {name} is already {}.",
                    if running { "running" } else { "stopped" }
                )
            } else if c.verb == Verb::Start {
                ctl.start(&d)?
            } else {
                ctl.stop(&d)?
            };
            Ok((msg, vec![]))
        }
        _ => unreachable_verb(c),
    }
}

/// DISPLAY SVSTATUS: the SERVER services running now.
pub(crate) fn svstatus(qm: &Arc<QueueManager>, c: &Command) -> Result<(String, Vec<Block>), Fail> {
    let name = c.name.clone().unwrap_or_default();
    let running = qm.service_control().map(|s| s.status()).unwrap_or_default();
    let mut blocks = Vec::new();
    for s in running.iter().filter(|s| generic_match(&name, &s.name)) {
        let (da, ti) = sealmq_types::time::mq_date_time(s.started);
        let mut b: Block = attrs![
            "SERVICE" => s.name, "STATUS" => s.status, "PID" => s.pid, "STARTDA" => da,
            "STARTTI" => ti,
        ];
        if let Some(d) = qm.object::<ServiceDef>(&s.name) {
            b.extend(service_block(&d).into_iter().skip(1));
        }
        blocks.push(b);
    }
    if blocks.is_empty() && !name.contains('*') {
        return Err(Fail {
            at: None,
            reason: None,
            message: match qm.object::<ServiceDef>(&name) {
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
        format!("SMQ0204I: Status of {} service(s).", blocks.len()),
        blocks,
    ))
}

pub(crate) fn listener(qm: &Arc<QueueManager>, c: &Command) -> Result<Answer, Fail> {
    let name = c.name.clone().unwrap_or_else(|| DEFAULT_LISTENER.into());
    if let Some(r) = LISTENER.run(qm, c, &name) {
        return r;
    }
    match c.verb {
        Verb::Start | Verb::Stop => {
            let ignstate = ignstate(c, "LISTENER")?;
            let d = qm
                .object::<ListenerDef>(&name)
                .ok_or_else(|| not_defined("listener", &name))?;
            let ctl = qm.listener_control().ok_or_else(|| Fail {
                at: None,
                reason: None,
                message: "listeners run in a started queue manager (`sealmq start`)".into(),
            })?;
            let running = ctl.status().iter().any(|s| s.name == name);
            let msg = match (c.verb, running) {
                (Verb::Start, true) if ignstate => {
                    format!("SMQ0178I: Listener {name} is already running.")
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
        _ => unreachable_verb(c),
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
        let def = qm.object::<ListenerDef>(&s.name);
        let (da, ti) = sealmq_types::time::mq_date_time(s.started);
        let port = s.addr.rsplit(':').next().unwrap_or_default().to_string();
        let ip = s
            .addr
            .rsplit_once(':')
            .map(|(h, _)| h.trim_matches(['[', ']']).to_string())
            .unwrap_or_default();
        blocks.push(attrs![
            "LISTENER" => s.name, "STATUS" => "RUNNING", "PID" => std::process::id(),
            "STARTDA" => da, "STARTTI" => ti,
            "DESCR" => def.as_ref().map(|d| d.descr.clone()).unwrap_or_default(),
            "TRPTYPE" => "TCP",
            "CONTROL" => def.as_ref().map(|d| d.control.name()).unwrap_or("MANUAL"),
            "IPADDR" => ip, "PORT" => port, "BACKLOG" => s.backlog,
        ]);
    }
    if blocks.is_empty() && !name.contains('*') {
        return Err(Fail {
            at: None,
            reason: None,
            message: if qm.object::<ListenerDef>(&name).is_some() {
                format!("listener {name} is not running")
            } else {
                format!("listener '{name}' is not defined")
            },
        });
    }
    let blocks = select_all(blocks, &c.attrs, &["LISTENER"], true)?;
    Ok((
        format!("SMQ0174I: Status of {} listener(s).", blocks.len()),
        blocks,
    ))
}

pub(crate) fn process(qm: &Arc<QueueManager>, c: &Command) -> Result<Answer, Fail> {
    let name = c.name.clone().unwrap_or_default();
    PROCESS
        .run(qm, c, &name)
        .unwrap_or_else(|| unreachable_verb(c))
}

/// A verb `route` does not send here.
fn unreachable_verb(c: &Command) -> Result<Answer, Fail> {
    Err(Fail {
        at: None,
        reason: None,
        message: format!("{:?} {:?} is not a command", c.verb, c.obj),
    })
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

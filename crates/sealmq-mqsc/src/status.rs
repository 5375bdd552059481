//! What is going on: DISPLAY CONN, DISPLAY QSTATUS (TYPE(QUEUE) and TYPE(HANDLE)), RESET
//! QSTATS, DISPLAY QMSTATUS, and PING CHANNEL.

use crate::args::{Block, Fail, bad, generic_match, none_matched, one};
use crate::display::select_all;
use crate::parse::{Command, Obj, Verb};
use sealmq_engine::QueueManager;
use sealmq_engine::conns::{ConnInfo, HandleInfo};
use sealmq_engine::objects::QType;
use sealmq_types::ReasonCode;
use sealmq_types::attrs;
use sealmq_types::time::mq_date_time;
use std::sync::Arc;

fn yn(b: bool) -> String {
    if b { "YES" } else { "NO" }.into()
}

/// MQ shows a connection id as 48 hex digits; sealmq's are numbers, shown as 16.
fn conn_id(id: u64) -> String {
    format!("{id:016X}")
}

fn input(h: &HandleInfo) -> String {
    if h.input_exclusive {
        "EXCL"
    } else if h.input_shared {
        "SHARED"
    } else {
        "NO"
    }
    .into()
}

fn openopts(h: &HandleInfo) -> String {
    let mut v = Vec::new();
    for (on, n) in [
        (h.input_shared, "MQOO_INPUT_SHARED"),
        (h.input_exclusive, "MQOO_INPUT_EXCLUSIVE"),
        (h.browse, "MQOO_BROWSE"),
        (h.output, "MQOO_OUTPUT"),
        (h.inquire, "MQOO_INQUIRE"),
        (h.set, "MQOO_SET"),
    ] {
        if on {
            v.push(n);
        }
    }
    v.join(",")
}

fn conn_block(c: &ConnInfo) -> Block {
    let (da, ti) = mq_date_time(c.started);
    attrs![
        "CONN" => conn_id(c.id), "TYPE" => "CONN", "APPLTAG" => c.appl,
        "APPLTYPE" => if c.internal { "SYSTEM" } else { "USER" }, "USERID" => c.user,
        "PID" => c.origin.pid.map(|p| p.to_string()).unwrap_or_default(),
        "CHANNEL" => c.origin.channel, "CONNAME" => c.origin.conname, "CONNDA" => da,
        "CONNTI" => ti, "UOWSTATE" => if c.uow_active { "ACTIVE" } else { "NONE" },
        "HANDLES" => c.handles.len(),
        "SECPROT" => if c.origin.secprot.is_empty() { "NONE" } else { c.origin.secprot.as_str() },
        "SSLGROUP" => c.origin.sslgroup,
    ]
}

fn handle_block(c: &ConnInfo, h: &HandleInfo) -> Block {
    attrs![
        "CONN" => conn_id(c.id), "TYPE" => "HANDLE", "APPLTAG" => c.appl, "USERID" => c.user,
        "OBJNAME" => h.name, "OBJTYPE" => "QUEUE", "OPENOPTS" => openopts(h),
        "HSTATE" => "INACTIVE",
    ]
}

/// DISPLAY CONN(id|*) [TYPE(CONN|HANDLE|ALL)] [WHERE(...)] [attributes].
fn conn(qm: &Arc<QueueManager>, c: &Command) -> Result<(String, Vec<Block>), Fail> {
    let name = c.name.clone().unwrap_or_default();
    let kind = match c.attrs.iter().find(|a| a.key == "TYPE") {
        Some(a) => match one(a)?.to_ascii_uppercase().as_str() {
            "CONN" => "CONN",
            "HANDLE" => "HANDLE",
            "ALL" => "ALL",
            v => return Err(bad(a, format!("'{v}' is not CONN, HANDLE or ALL"))),
        },
        None => "CONN",
    };
    let mut blocks = Vec::new();
    for ci in qm
        .connections()
        .iter()
        .filter(|ci| !ci.internal && (name == "*" || generic_match(&name, &conn_id(ci.id))))
    {
        if kind != "HANDLE" {
            blocks.push(conn_block(ci));
        }
        if kind != "CONN" {
            blocks.extend(ci.handles.iter().map(|h| handle_block(ci, h)));
        }
    }
    if blocks.is_empty() && !name.contains('*') {
        return Err(Fail {
            at: None,
            reason: Some(ReasonCode::UnknownObjectName),
            message: format!("no connection {name}"),
        });
    }
    let blocks = select_all(blocks, &c.attrs, &["CONN", "TYPE"], true)?;
    Ok(("AMQ8276I: Display Connection details.".to_string(), blocks))
}

/// DISPLAY QSTATUS(q) TYPE(HANDLE): who has the queue open, and how.
pub(crate) fn qstatus_handles(
    qm: &Arc<QueueManager>,
    c: &Command,
) -> Result<(String, Vec<Block>), Fail> {
    let name = c.name.clone().unwrap_or_default();
    let mut blocks = Vec::new();
    for ci in qm.connections().iter().filter(|ci| !ci.internal) {
        for h in ci
            .handles
            .iter()
            .filter(|h| generic_match(&name, &h.resolved) || generic_match(&name, &h.name))
        {
            blocks.push(attrs![
                "QUEUE" => h.resolved, "TYPE" => "HANDLE", "APPLTAG" => ci.appl,
                "CONN" => conn_id(ci.id), "USERID" => ci.user,
                "PID" => ci.origin.pid.map(|p| p.to_string()).unwrap_or_default(),
                "CHANNEL" => ci.origin.channel, "CONNAME" => ci.origin.conname,
                "INPUT" => input(h), "OUTPUT" => yn(h.output), "BROWSE" => yn(h.browse),
                "INQUIRE" => yn(h.inquire), "SET" => yn(h.set),
                "UOWSTATE" => if ci.uow_active { "ACTIVE" } else { "NONE" },
            ]);
        }
    }
    if blocks.is_empty() && !name.contains('*') {
        qm.queue_def(&name)?;
    }
    let blocks = select_all(blocks, &c.attrs, &["QUEUE", "TYPE"], true)?;
    Ok((
        format!("SMQ0191I: {} handle(s) open.", blocks.len()),
        blocks,
    ))
}

fn qmstatus(qm: &Arc<QueueManager>, c: &Command) -> Result<(String, Vec<Block>), Fail> {
    let (da, ti) = mq_date_time(qm.started);
    let conns = qm.connections().iter().filter(|c| !c.internal).count();
    let block: Block = attrs![
        "QMNAME" => qm.name(), "STATUS" => "RUNNING", "STARTDA" => da, "STARTTI" => ti,
        "CONNS" => conns, "CHINIT" => if qm.chinit().is_some() { "RUNNING" } else { "STOPPED" },
        "CMDSERV" => "RUNNING",
        "LISTENERS" => qm.listener_control().map(|l| l.status().len()).unwrap_or(0),
        "LOGBYTES" => qm.log_stats().bytes,
    ];
    let mut block = block;
    let repl = qm.replication();
    if let Some(r) = &repl {
        block.extend(replication_attrs(r));
    }
    let mut blocks = select_all([block], &c.attrs, &["QMNAME"], true)?;
    // Every instance of a replicated queue manager, as `dspmq -o nativeha -x` lists them,
    // with ALL or no attribute asked.
    let all = c.attrs.iter().all(|a| a.key == "ALL" || a.key == "WHERE");
    if let (Some(r), true) = (repl, all) {
        blocks.extend(r.instances.iter().map(|i| {
            let known = |v: Option<String>| v.unwrap_or_else(|| "UNKNOWN".into());
            let block: Block = attrs![
                "QMNAME" => qm.name(), "INSTANCE" => i.name, "ROLE" => i.role,
                "INSYNC" => known(i.in_sync.map(|b| if b { "YES" } else { "NO" }.to_string())),
                "BACKLOG" => known(i.backlog.map(|b| b.to_string())),
                "REPLADDR" => i.address,
            ];
            block
        }));
    }
    Ok((
        "AMQ8705I: Display Queue Manager Status Details.".into(),
        blocks,
    ))
}

/// A replicated queue manager's fields in DISPLAY QMSTATUS (docs/ha.md).
fn replication_attrs(r: &sealmq_engine::ReplicationStatus) -> Block {
    let avg = r.wait_us.checked_div(r.batches).unwrap_or(0);
    attrs![
        "HA" => "REPLICATED", "INSTANCE" => r.instance, "ROLE" => r.role,
        "QUORUM" => if r.quorum.is_empty() { "UNKNOWN" } else { r.quorum.as_str() },
        "HATERM" => r.term, "LOGINDEX" => r.log_index, "APPLIED" => r.applied_index,
        "ELECTIONS" => r.elections, "REPLBATCH" => r.batches, "REPLBYTES" => r.bytes,
        "REPLAVGUS" => avg, "REPLMAXUS" => r.wait_us_max,
    ]
}

fn ping(qm: &Arc<QueueManager>, c: &Command) -> Result<(String, Vec<Block>), Fail> {
    let name = c.name.clone().unwrap_or_default();
    if let Some(a) = c
        .attrs
        .iter()
        .find(|a| !matches!(a.key.as_str(), "DATALEN" | "CHLDISP" | "CMDSCOPE"))
    {
        return Err(bad(a, "is not a PING CHANNEL keyword"));
    }
    let ci = qm.chinit().ok_or_else(|| Fail {
        at: None,
        reason: None,
        message: "channels run in a started queue manager (no channel initiator here)".into(),
    })?;
    Ok((ci.ping(&name)?, vec![]))
}

/// Which of this module's commands `c` is, if any.
pub(crate) fn route(
    qm: &Arc<QueueManager>,
    c: &Command,
) -> Option<Result<(String, Vec<Block>), Fail>> {
    Some(match (c.verb, c.obj) {
        (Verb::Display, Obj::Conn) => conn(qm, c),
        (Verb::Display, Obj::QmStatus) => qmstatus(qm, c),
        (Verb::Ping, Obj::Channel) => ping(qm, c),
        (Verb::Display, Obj::QStatus)
            if c.attrs.iter().any(|a| {
                a.key == "TYPE"
                    && a.values
                        .first()
                        .is_some_and(|v| v.eq_ignore_ascii_case("HANDLE"))
            }) =>
        {
            qstatus_handles(qm, c)
        }
        _ => return None,
    })
}

/// DISPLAY QSTATUS TYPE(QUEUE): depth, opens, uncommitted messages, waiting getters and
/// the queue file's size of each local queue `name` matches.
pub(crate) fn queue_status(
    qm: &Arc<QueueManager>,
    c: &Command,
    name: &str,
) -> Result<(String, Vec<Block>), Fail> {
    if let Some(a) = c.attrs.iter().find(|a| a.key == "TYPE")
        && !one(a)?.eq_ignore_ascii_case("QUEUE")
    {
        return Err(bad(a, "expected TYPE(QUEUE) or TYPE(HANDLE)"));
    }
    let mut blocks = Vec::new();
    for d in qm
        .queue_defs()
        .iter()
        .filter(|d| d.qtype == QType::Local && generic_match(name, &d.name))
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
    none_matched(&blocks, "local queue", name)?;
    let blocks = select_all(blocks, &c.attrs, &["QUEUE", "TYPE"], true)?;
    Ok((
        "AMQ8450I: Display queue status details.".to_string(),
        blocks,
    ))
}

/// RESET QSTATS: each matching queue's statistics since the last reset, then reset.
pub(crate) fn reset_qstats(
    qm: &Arc<QueueManager>,
    c: &Command,
    name: &str,
) -> Result<(String, Vec<Block>), Fail> {
    if let Some(a) = c.attrs.first() {
        return Err(bad(a, "RESET QSTATS takes no attributes"));
    }
    let blocks: Vec<Block> = qm
        .reset_queue_stats(name)?
        .into_iter()
        .map(|r| {
            attrs![
                "QUEUE" => r.queue, "MSGSIN" => r.msgs_in, "MSGSOUT" => r.msgs_out,
                "HIQDEPTH" => r.hi_depth, "TIMESINCERESET" => r.secs_since_reset,
            ]
        })
        .collect();
    Ok((
        format!("SMQ0109I: Statistics of {} queue(s) reset.", blocks.len()),
        blocks,
    ))
}

//! The queue manager's own attributes: DISPLAY QMGR and ALTER QMGR.

use crate::args::{Block, Fail, bad, choice, num, one, onoff, text};
use crate::display::select_all;
use crate::parse::Command;
use sealmq_engine::QueueManager;
use sealmq_engine::objects::QmgrDef;
use sealmq_types::attrs;
use std::sync::Arc;

/// The queue manager's attributes as DISPLAY QMGR shows them.
fn qmgr_block(q: &QmgrDef) -> Block {
    attrs![
        "QMNAME" => q.name, "DESCR" => q.descr, "DEADQ" => q.dead_letter_q,
        "MAXMSGL" => q.max_msg_len, "CHIADAPS" => q.chiadaps, "CHIDISPS" => q.chidisps,
        "STATINT" => q.stat_int, "DEFXMITQ" => q.def_xmitq,
        "ACCTMQI" => if q.acct_mqi { "ON" } else { "OFF" }, "ACCTINT" => q.acct_int,
        "CHLAUTH" => onoff(q.chlauth_enabled), "CONNAUTH" => q.connauth, "MAXCHL" => q.maxchl,
        "TRIGINT" => q.trig_int_ms(), "MSGCACHE" => (q.msg_cache_bytes() >> 20),
        "MAXHANDS" => q.max_handles(), "MAXUMSGS" => q.max_uncommitted(),
        "PSMODE" => q.noted.get("PSMODE").map_or("ENABLED", String::as_str),
        "CCSID" => q.noted.get("CCSID").map_or("1208", String::as_str),
        "PLATFORM" => "UNIX", "CMDLEVEL" => CMDLEVEL, "VERSION" => version(),
    ]
    .into_iter()
    .chain(crate::known::shown(&q.noted).filter(|(k, _)| {
        !matches!(
            k.as_str(),
            "TRIGINT" | "MSGCACHE" | "MAXHANDS" | "MAXUMSGS" | "PSMODE" | "CCSID"
        )
    }))
    .collect()
}

/// The MQ command level whose MQSC and PCF sealmq answers (IBM MQ 9.4): what tools read to
/// decide which commands and attributes they may use.
pub const CMDLEVEL: u32 = 940;

/// sealmq's own version in MQ's VERSION form, VVRRMMFF (0.1.0: `00010000`).
pub fn version() -> String {
    let part = |s: &str| s.parse::<u32>().unwrap_or(0).min(99);
    format!(
        "{:02}{:02}{:02}00",
        part(env!("CARGO_PKG_VERSION_MAJOR")),
        part(env!("CARGO_PKG_VERSION_MINOR")),
        part(env!("CARGO_PKG_VERSION_PATCH"))
    )
}

/// DISPLAY QMGR, with the keystore's identity (SSLKEYDN).
pub(crate) fn display(qm: &Arc<QueueManager>, c: &Command) -> Result<(String, Vec<Block>), Fail> {
    let mut block = qmgr_block(&qm.qmgr());
    // SPEC §5.6: the queue manager's keystore identity (status, not an attribute).
    let dn = qm
        .chinit()
        .and_then(|c| c.keystore_dn())
        .unwrap_or_default();
    block.insert(2, ("SSLKEYDN".into(), dn));
    let blocks = select_all([block], &c.attrs, &["QMNAME"], true)?;
    Ok(("AMQ8408I: Display Queue Manager details.".into(), blocks))
}

/// ALTER QMGR: MQ's attributes sealmq acts on, and those it keeps for MQ's tools.
pub(crate) fn alter(qm: &Arc<QueueManager>, c: &Command) -> Result<(String, Vec<Block>), Fail> {
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
                "CHLAUTH" => q.chlauth_enabled = choice(a, &["ENABLED", "DISABLED"])? == "ENABLED",
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
    Ok(("AMQ8005I: IBM MQ queue manager changed.".into(), vec![]))
}

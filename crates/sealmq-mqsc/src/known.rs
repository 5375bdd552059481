//! MQ's attributes that sealmq accepts and keeps without effect (docs/administration.md,
//! "Accepted without effect"; a few kept here have effect and are read back by the engine:
//! AMQPKA, MAXHANDS, MAXUMSGS), and those it refuses because the feature they belong to is not provided
//! (clusters, channel exits): an administrator's script runs unchanged, nothing is silently
//! ignored — DISPLAY shows what was set and `sealmq dump` writes it back.

use crate::args::{Fail, bad};
use crate::parse::Attr;
use sealmq_engine::noted::Noted;

/// Local and model queues. (MAXFSIZE is checked in `queues.rs`, kept with these and enforced:
/// `QueueDef::max_file_bytes`.)
pub(crate) const LOCAL_QUEUE: &[&str] = &[
    "ACCTQ", "CAPEXPRY", "CFSTRUCT", "CLCHNAME", "CLWLUSEQ", "DISTL", "IMGRCOVQ", "INDXTYPE",
    "MONQ", "NPMCLASS", "QDEPTHHI", "QDEPTHLO", "QDPHIEV", "QDPLOEV", "QDPMAXEV", "QSVCIEV",
    "QSVCINT", "RETINTVL", "STATQ", "STGCLASS", "STREAMQ", "STRMQOS",
];

/// Every queue type.
pub(crate) const ANY_QUEUE: &[&str] = &[
    "CLWLPRTY", "CLWLRANK", "CMDSCOPE", "CUSTOM", "DEFBIND", "DEFPRESP", "QSGDISP", "SCOPE",
];

pub(crate) const CHANNEL: &[&str] = &[
    "AFFINITY", "AMQPKA", "BATCHHB", "BATCHLIM", "CLNTWGHT", "CLWLPRTY", "CLWLRANK", "CLWLWGHT",
    "CMDSCOPE", "COMPHDR", "COMPMSG", "CONVERT", "DEFCDISP", "DEFRECON", "LOCLADDR", "MCANAME",
    "MCATYPE", "MODENAME", "MONCHL", "MRDATA", "MSGDATA", "NETPRTY", "PASSWORD", "PROPCTL",
    "QSGDISP", "RCVDATA", "RESETSEQ", "SCYDATA", "SENDDATA", "SHARECNV", "STATCHL", "TMPMODEL",
    "TMPQPRFX", "TPNAME", "USECLTID", "USERID",
];

pub(crate) const QMGR: &[&str] = &[
    "ACCTCONO", "ACCTQ", "ACTIVREC", "ACTVCONO", "ACTVTRC", "AMQPCAP", "AUTHOREV", "BRIDGEEV",
    "CCSID", "CERTLABL", "CERTVPOL", "CHAD", "CHADEV", "CHADEXIT", "CHLEV", "CLWLDATA", "CLWLLEN",
    "CLWLMRUC", "CLWLUSEQ", "CMDEV", "CMDSCOPE", "CONFIGEV", "CUSTOM", "DEFCLXQ", "FORCE",
    "IMGINTVL", "IMGLOGLN", "IMGRCOVO", "IMGRCOVQ", "IMGSCHED", "INHIBTEV", "IPADDRV", "LOCALEV",
    "LOGGEREV", "MARKINT", "MAXHANDS", "MAXPROPL", "MAXUMSGS", "MONACLS", "MONCHL", "MONQ",
    "PERFMEV", "PSCLUS", "PSMODE", "PSNPMSG", "PSNPRES", "PSRTYCNT", "PSSYNCPT", "REMOTEEV",
    "REVDNS", "ROUTEREC", "SCHINIT", "SCMDSERV", "SSLCRLNL", "SSLCRYP", "SSLEV", "SSLFIPS",
    "SSLKEYR", "SSLRKEYC", "STATACLS", "STATCHL", "STATMQI", "STATQ", "STRSTPEV", "SUITEB",
    "TREELIFE", "KEYRPWD",
];

pub(crate) const LISTENER: &[&str] = &[
    "ADAPTER", "COMMANDS", "LOCLNAME", "NTBNAMES", "SESSIONS", "SOCKET", "TPNAME",
];

pub(crate) const PROCESS: &[&str] = &["CMDSCOPE", "QSGDISP"];
pub(crate) const SERVICE: &[&str] = &[];

/// Attributes of features sealmq does not provide: a blank value is accepted (scripts often
/// write `CLUSTER(' ')`), anything else is refused naming the feature.
const NOT_PROVIDED: &[(&str, &str)] = &[
    ("CLUSTER", "clusters are not provided"),
    ("CLUSNL", "clusters are not provided"),
    ("REPOS", "clusters are not provided"),
    ("REPOSNL", "clusters are not provided"),
    ("CLWLEXIT", "cluster workload exits are not provided"),
    ("PARENT", "publish/subscribe hierarchies are not provided"),
    ("MSGEXIT", "channel exits are not provided"),
    ("MREXIT", "channel exits are not provided"),
    ("RCVEXIT", "channel exits are not provided"),
    ("SCYEXIT", "channel exits are not provided"),
    ("SENDEXIT", "channel exits are not provided"),
];

/// When `a` is one of `list` (or a not-provided attribute given blank), keeps it in `noted`
/// and answers `Some(Ok)`; a not-provided attribute with a value answers `Some(Err)`; any
/// other keyword `None` (the caller reports it unknown).
pub(crate) fn note(a: &Attr, list: &[&str], noted: &mut Noted) -> Option<Result<(), Fail>> {
    if SECRETS.contains(&a.key.as_str()) {
        return Some(Ok(()));
    }
    if let Some((_, why)) = NOT_PROVIDED.iter().find(|(k, _)| *k == a.key) {
        if a.values.iter().all(|v| v.trim().is_empty()) {
            noted.remove(&a.key);
            return Some(Ok(()));
        }
        return Some(Err(bad(
            a,
            format!("{why} (docs/administration.md, \"Not provided\")"),
        )));
    }
    if !list.contains(&a.key.as_str()) {
        return None;
    }
    noted.insert(a.key.clone(), a.values.join(","));
    Some(Ok(()))
}

/// Applies a DEFINE or ALTER's attributes to `d`: `own` takes the object's own keywords
/// (`Ok(false)`: not one of them); REPLACE, NOREPLACE and LIKE (the command's) are passed over;
/// the rest are kept in `noted(d)` when `list` names them, or refused together as not a `kind`.
pub(crate) fn apply<D>(
    d: &mut D,
    attrs: &[Attr],
    (list, kind): (&[&str], &str),
    noted: fn(&mut D) -> &mut Noted,
    mut own: impl FnMut(&mut D, &Attr) -> Result<bool, Fail>,
) -> Result<(), Fail> {
    let mut unknown: Vec<&Attr> = Vec::new();
    for a in attrs {
        if matches!(a.key.as_str(), "REPLACE" | "NOREPLACE" | "LIKE") || own(d, a)? {
            continue;
        }
        match note(a, list, noted(d)) {
            Some(r) => r?,
            None => unknown.push(a),
        }
    }
    crate::args::unknown_keywords(&unknown, kind)
}

/// TRPTYPE: sealmq's channels and listeners run over TCP only (`what`: "listens").
pub(crate) fn tcp_only(a: &Attr, what: &str) -> Result<(), Fail> {
    let t = crate::args::one(a)?;
    if t.eq_ignore_ascii_case("TCP") {
        return Ok(());
    }
    Err(bad(
        a,
        format!("'{t}' is not provided: sealmq {what} over TCP only"),
    ))
}

/// The noted attributes as DISPLAY shows them.
pub(crate) fn shown(noted: &Noted) -> impl Iterator<Item = (String, String)> + '_ {
    noted.iter().map(|(k, v)| (k.clone(), v.clone()))
}

/// Object types of features sealmq does not provide, and which feature: MQSC naming them is
/// refused saying so (docs/administration.md, "Not provided").
pub(crate) fn object_not_provided(obj: &str) -> Option<&'static str> {
    Some(match obj {
        "NAMELIST" | "NL" => "namelists are not provided",
        "COMMINFO" => "multicast (COMMINFO) is not provided",
        "CLUSQMGR" => "clusters are not provided",
        "CFSTRUCT" | "STGCLASS" | "CFSTATUS" | "ARCHIVE" | "LOG" | "USAGE" | "SMDS" => {
            "z/OS facilities are not provided"
        }
        "CLNTCONN" | "RQMNAME" => "client channel definitions (CCDT) are not provided",
        _ => return None,
    })
}

/// Secrets MQ takes as attributes (KEYRPWD, the keystore password): accepted, never kept,
/// logged or shown — sealmq's keystore needs no password.
pub(crate) const SECRETS: &[&str] = &["KEYRPWD"];

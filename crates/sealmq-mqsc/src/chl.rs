//! MQSC commands that act on running channels: START/STOP/RESOLVE/RESET CHANNEL,
//! DISPLAY CHSTATUS and DISPLAY CHINIT. They go to the channel initiator the server registers
//! with the queue manager; without one (an embedded queue manager) they say so.

use crate::args::{Block, Fail, bad, choice, none_matched, num, only_keywords};
use crate::display::Listing;
use crate::display::select_all;
use crate::parse::{Command, Obj, Verb};
use sealmq_engine::QueueManager;
use std::sync::Arc;

/// What DISPLAY CHSTATUS shows without attributes asking for more.
const CURRENT_IDS: &[&str] = &["CHANNEL", "CHLTYPE", "STATUS"];
/// DISPLAY CHSTATUS ... CLIENTID: an AMQP channel's connections.
const CLIENT_IDS: &[&str] = &["CHANNEL", "CHLTYPE", "CLIENTID", "STATUS", "CONNAME"];
const SAVED_IDS: &[&str] = &[
    "CHANNEL", "CHLTYPE", "XMITQ", "CURSEQNO", "LSTSEQNO", "CURLUWID", "LSTLUWID", "INDOUBT",
    "CURMSGS",
];

pub(crate) fn run(qm: &Arc<QueueManager>, c: &Command) -> Result<(String, Vec<Block>), Fail> {
    let Some(ci) = qm.chinit() else {
        return Err(Fail {
            at: None,
            reason: None,
            message: "no channel initiator runs here: start the queue manager with `sealmq start`"
                .into(),
        });
    };
    let name = c.name.clone().unwrap_or_default();
    let get = |k: &str| c.attrs.iter().find(|a| a.key == k);
    match (c.verb, c.obj) {
        (Verb::Start, _) => Ok((ci.start(&name)?, vec![])),
        (Verb::Stop, _) => Ok((ci.stop(&name)?, vec![])),
        (Verb::Resolve, _) => {
            let a = get("ACTION").ok_or_else(|| Fail {
                at: None,
                reason: None,
                message: "RESOLVE CHANNEL needs ACTION(COMMIT|BACKOUT)".into(),
            })?;
            let commit = choice(a, &["COMMIT", "BACKOUT"])? == "COMMIT";
            Ok((ci.resolve(&name, commit)?, vec![]))
        }
        (Verb::Reset, _) => {
            let seq = match get("SEQNUM") {
                Some(a) => num(a, 0, 999_999_999)? as u64,
                None => 0,
            };
            Ok((ci.reset(&name, seq)?, vec![]))
        }
        (Verb::Display, Obj::ChStatus) => {
            let saved = c.attrs.iter().any(|a| a.key == "SAVED");
            const KEYS: &str = "ALL SAVED CURRENT CURLUWID LSTLUWID STATUS MSGS BYTSSENT \
                BYTSRCVD BATCHES CURSEQNO LSTSEQNO INDOUBT CONNAME XMITQ RQMNAME CHLTYPE SUBSTATE \
                LSTMSGTI STOPREQ SSLRKEYS CURMSGS ERROR CLIENTID CONNS MCAUSER CLNTUSER PROTOCOL \
                MSGSNT MSGRCVD LSTMSGDA CHSTADA CHSTATI LINKS SECPROT SSLGROUP";
            only_keywords(c, KEYS, "a channel status attribute")?;
            if saved && c.attrs.iter().any(|a| a.key == "CURRENT") {
                return Err(Fail {
                    at: None,
                    reason: None,
                    message: "give SAVED or CURRENT, not both".into(),
                });
            }
            // CLIENTID (AMQP): each connection of the channels; SAVED: the synchronisation
            // records (what survives a restart); else the instances of this run.
            let client = get("CLIENTID").map(|a| a.values.first().cloned().unwrap_or_default());
            if let Some(client) = client {
                let clients = ci.amqp_clients(&name, if client.is_empty() { "*" } else { &client });
                return Listing {
                    ids: CLIENT_IDS,
                    what: "AMQP connection",
                    head: "AMQ8417I: Display Channel Status details.",
                    plural: "",
                }
                .answer(clients, &c.attrs, &name);
            }
            let all = if saved {
                ci.saved_status(&name)?
            } else {
                ci.status(&name)
            };
            let blocks = select_all(
                all,
                &c.attrs,
                if saved { SAVED_IDS } else { CURRENT_IDS },
                false,
            )?;
            none_matched(&blocks, "channel status (a channel that has run)", &name)?;
            Ok(("AMQ8417I: Display Channel Status details.".into(), blocks))
        }
        (Verb::Display, _) => Ok(("SMQ0131I: Channel initiator tasks.".into(), ci.tasks())),
        _ => Err(Fail {
            at: None,
            reason: None,
            message: "this verb does not apply to this object type".into(),
        }),
    }
}

/// REFRESH SECURITY [TYPE(SSL|AUTHSERV)]. TYPE(SSL) has the server read the queue manager's
/// keystore again (TLS, SPLPROT, QM-side interception); TYPE(AUTHSERV), MQ's default, has
/// nothing to do here: authority records are read at every check.
pub(crate) fn refresh_security(
    qm: &Arc<QueueManager>,
    c: &Command,
) -> Result<(String, Vec<Block>), Fail> {
    if let Some(n) = c.name.as_deref()
        && n != "*"
    {
        return Err(Fail {
            at: None,
            reason: None,
            message: format!("REFRESH SECURITY takes no name or (*), not '{n}'"),
        });
    }
    let mut kind = "AUTHSERV";
    for a in &c.attrs {
        match a.key.as_str() {
            "TYPE" => kind = choice(a, &["SSL", "AUTHSERV", "CONNAUTH"])?,
            _ => {
                return Err(bad(
                    a,
                    "is not a REFRESH SECURITY attribute: use TYPE(SSL|AUTHSERV|CONNAUTH)",
                ));
            }
        }
    }
    if kind == "AUTHSERV" {
        return Ok((
            "AMQ8560I: IBM MQ security cache refreshed. (Authority records are read at every check.)".into(),
            vec![],
        ));
    }
    let Some(ci) = qm.chinit() else {
        return Err(Fail {
            at: None,
            reason: None,
            message: "no server runs here to hold a keystore: start the queue manager with `sealmq start`"
                .into(),
        });
    };
    if kind == "CONNAUTH" {
        return Ok((ci.refresh_connauth()?, vec![]));
    }
    Ok((ci.refresh_ssl()?, vec![]))
}

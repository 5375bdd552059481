//! SUB (DEFINE, ALTER, DELETE, DISPLAY) and DISPLAY SBSTATUS (issue 28): administrative
//! subscriptions as MQ's, durable, delivering to a given queue (DEST) or one the queue manager
//! makes (DESTCLAS(MANAGED)).

use crate::args::{Block, Fail, bad, choice, generic_match, one, text};
use crate::kind::Answer;
use crate::known;
use crate::parse::{Attr, Command, Obj, Verb};
use sealmq_engine::QueueManager;
use sealmq_engine::subs::{DestClass, PRTY_ASPUB, SubDef, SubType, WildSchema, full_topic};
use sealmq_engine::topics::TopicDef;
use sealmq_types::{ReasonCode, attrs};
use std::sync::Arc;

/// SUB attributes kept without effect (docs/administration.md).
const SUB: &[&str] = &[
    "CMDSCOPE", "DESTCORL", "EXPIRY", "PSPROP", "PUBACCT", "PUBAPPID", "REQONLY", "SUBLEVEL",
    "SUBSCOPE", "USERDATA", "VARUSER",
];

fn apply(d: &mut SubDef, attrs: &[Attr], topicobj: &mut Option<String>) -> Result<(), Fail> {
    let mut given_str: Option<String> = None;
    known::apply(
        d,
        attrs,
        (SUB, "subscription attribute"),
        |d| &mut d.noted,
        |d, a| {
            match a.key.as_str() {
                "TOPICSTR" => given_str = Some(one(a)?.to_string()),
                "TOPICOBJ" => *topicobj = Some(text(a)),
                "DEST" => d.dest = text(a),
                "DESTQMGR" => d.destqmgr = text(a),
                "DESTCLAS" => {
                    d.destclas = match choice(a, &["PROVIDED", "MANAGED"])? {
                        "MANAGED" => DestClass::Managed,
                        _ => DestClass::Provided,
                    }
                }
                "SELECTOR" => d.selector = text(a),
                "SUBUSER" => d.subuser = text(a),
                "WSCHEMA" => {
                    d.wschema = match choice(a, &["TOPIC", "CHAR"])? {
                        "CHAR" => WildSchema::Char,
                        _ => WildSchema::Topic,
                    }
                }
                "PUBPRTY" => {
                    let v = one(a)?;
                    d.pubprty = match v.to_ascii_uppercase().as_str() {
                        "ASPUB" | "ASQDEF" => PRTY_ASPUB,
                        n => match n.parse::<u8>() {
                            Ok(p) if p <= 9 => p,
                            _ => return Err(bad(a, format!("'{v}' is not 0-9 or ASPUB"))),
                        },
                    }
                }
                // Administrative subscriptions are durable (MQ's), the only kind DEFINE makes.
                "DURABLE" => {
                    if choice(a, &["YES", "NO"])? == "NO" {
                        return Err(bad(a, "DEFINE SUB makes durable subscriptions only"));
                    }
                }
                _ => return Ok(false),
            }
            Ok(true)
        },
    )?;
    if let Some(g) = given_str {
        d.topicstr = g;
    }
    Ok(())
}

/// The full topic string from TOPICOBJ (its TOPICSTR) and TOPICSTR, as MQ joins them.
fn resolve_topic(
    qm: &QueueManager,
    d: &mut SubDef,
    topicobj: Option<String>,
    given: &str,
) -> Result<(), Fail> {
    let obj_str = match topicobj.filter(|o| !o.is_empty()) {
        Some(o) => {
            let t = qm.object::<TopicDef>(&o).ok_or_else(|| Fail {
                at: None,
                reason: Some(ReasonCode::UnknownObjectName),
                message: format!("TOPICOBJ: topic '{o}' is not defined"),
            })?;
            d.topicobj = o;
            t.topicstr
        }
        None => String::new(),
    };
    d.topicstr = full_topic(&obj_str, given);
    if d.topicstr.is_empty() {
        return Err(Fail {
            at: None,
            reason: Some(ReasonCode::TopicStringError),
            message: "TOPICSTR(...) or TOPICOBJ(...) is required: what the subscription is to"
                .into(),
        });
    }
    Ok(())
}

fn block(d: &SubDef) -> Block {
    let prty = if d.pubprty == PRTY_ASPUB {
        "ASPUB".to_string()
    } else {
        d.pubprty.to_string()
    };
    let mut b: Block = attrs![
        "SUB" => d.name, "SUBID" => d.subid, "TOPICSTR" => d.topicstr, "TOPICOBJ" => d.topicobj,
        "DEST" => d.dest, "DESTQMGR" => d.destqmgr, "DESTCLAS" => d.destclas.name(),
        "DURABLE" => if d.durable { "YES" } else { "NO" }, "SELECTOR" => d.selector,
        "SUBTYPE" => d.subtype.name(), "SUBUSER" => d.subuser, "PUBPRTY" => prty,
        "WSCHEMA" => d.wschema.name(),
    ];
    b.extend(known::shown(&d.noted));
    b
}

fn not_found(name: &str) -> Fail {
    Fail {
        at: None,
        reason: Some(ReasonCode::NoSubscription),
        message: format!("subscription '{name}' does not exist"),
    }
}

/// DEFINE, ALTER, DELETE and DISPLAY SUB.
pub(crate) fn sub(qm: &Arc<QueueManager>, c: &Command) -> Result<Answer, Fail> {
    let name = c.name.clone().unwrap_or_default();
    match c.verb {
        Verb::Define | Verb::Alter => {
            let existing = qm.sub(&name);
            let mut d = match (c.verb, existing) {
                (Verb::Alter, None) => return Err(not_found(&name)),
                (Verb::Alter, Some(s)) => s,
                (_, _) => match c.attrs.iter().find(|a| a.key == "LIKE") {
                    Some(a) => {
                        let l = one(a)?;
                        let mut t = qm.sub(l).ok_or_else(|| not_found(l))?;
                        t.name = name.clone();
                        t.topicobj.clear();
                        t
                    }
                    None => SubDef::new(&name),
                },
            };
            let before = (d.topicstr.clone(), d.dest.clone(), d.destclas);
            let mut topicobj = None;
            let given = c.attrs.iter().find(|a| a.key == "TOPICSTR");
            apply(&mut d, &c.attrs, &mut topicobj)?;
            if c.verb == Verb::Alter {
                for (k, changed) in [
                    ("TOPICSTR", given.is_some() || topicobj.is_some()),
                    ("DEST", d.dest != before.1 || d.destclas != before.2),
                ] {
                    if changed && (k != "TOPICSTR" || d.topicstr != before.0 || topicobj.is_some())
                    {
                        return Err(Fail {
                            at: c.attrs.iter().find(|a| a.key == k).map(|a| a.at),
                            reason: None,
                            message: format!(
                                "{k} of a subscription cannot be altered: DELETE and DEFINE it"
                            ),
                        });
                    }
                }
            } else {
                let g = given.map(|a| one(a).map(str::to_string)).transpose()?;
                resolve_topic(qm, &mut d, topicobj, g.as_deref().unwrap_or(""))?;
                d.subtype = SubType::Admin;
                d.durable = true;
                if d.subuser.is_empty() {
                    d.subuser = qm.admin().unwrap_or_default().to_string();
                }
            }
            let replace = c.verb == Verb::Alter || c.attrs.iter().any(|a| a.key == "REPLACE");
            let new = qm.sub(&name).is_none();
            qm.define_sub(d, replace)?;
            // A new subscription gets the retained publications it matches.
            if new && let Some(s) = qm.sub(&name) {
                sealmq_engine::Connection::connect_internal(qm)?.deliver_retained(&s)?;
            }
            let done = if c.verb == Verb::Alter {
                "altered"
            } else {
                "defined"
            };
            Ok((format!("SMQ0230I: Subscription {name} {done}."), vec![]))
        }
        Verb::Delete => {
            qm.delete_sub(&name)?;
            Ok((format!("SMQ0232I: Subscription {name} deleted."), vec![]))
        }
        Verb::Display => {
            let blocks = qm
                .subs()
                .iter()
                .filter(|s| generic_match(&name, &s.name))
                .map(block)
                .collect::<Vec<_>>();
            let listing = crate::display::Listing {
                ids: &["SUB", "SUBID"],
                what: "subscription",
                head: "AMQ8096I: IBM MQ subscription inquired.",
                plural: "",
            };
            listing.answer(blocks, &c.attrs, &name)
        }
        _ => Err(Fail {
            at: None,
            reason: None,
            message: format!("{:?} SUB is not a command", c.verb),
        }),
    }
}

/// DISPLAY SBSTATUS: each subscription's deliveries since the queue manager started.
pub(crate) fn sbstatus(qm: &Arc<QueueManager>, c: &Command) -> Result<Answer, Fail> {
    let name = c.name.clone().unwrap_or_default();
    let blocks: Vec<Block> = qm
        .subs()
        .iter()
        .filter(|s| generic_match(&name, &s.name))
        .map(|s| {
            let st = qm.sub_stats(&s.name);
            let (date, time) = if st.last_ms == 0 {
                (String::new(), String::new())
            } else {
                sealmq_types::time::mq_date_time(st.last_ms / 1000)
            };
            attrs![
                "SUB" => s.name, "SUBID" => s.subid,
                "DURABLE" => if s.durable { "YES" } else { "NO" },
                "SUBTYPE" => s.subtype.name(), "TOPICSTR" => s.topicstr,
                "NUMMSGS" => st.delivered, "LMSGDATE" => date, "LMSGTIME" => time,
            ]
        })
        .collect();
    let listing = crate::display::Listing {
        ids: &["SUB", "SUBID"],
        what: "subscription",
        head: "AMQ8099I: IBM MQ subscription status inquired.",
        plural: "",
    };
    listing.answer(blocks, &c.attrs, &name)
}

/// Which of this module's commands `c` is, if any.
pub(crate) fn route(qm: &Arc<QueueManager>, c: &Command) -> Option<Result<Answer, Fail>> {
    match (c.verb, c.obj) {
        (Verb::Define | Verb::Alter | Verb::Delete | Verb::Display, Obj::Sub) => Some(sub(qm, c)),
        (Verb::Display, Obj::SbStatus) => Some(sbstatus(qm, c)),
        _ => None,
    }
}

//! TOPIC (DEFINE, ALTER, DELETE, DISPLAY) and DISPLAY TPSTATUS (issue 28): topic objects as
//! MQ's, with ASPARENT resolved up the topic tree for TPSTATUS.

use crate::args::{Block, Fail, bad, choice, one, text};
use crate::kind::{Answer, Kind};
use crate::known;
use crate::parse::{Attr, Command, Obj, Verb};
use sealmq_engine::QueueManager;
use sealmq_engine::topics::{
    Allow, DEFAULT_TOPIC, Delivery, PRTY_ASPARENT, TopicDef, Wildcard, YesNo,
};
use sealmq_types::attrs;
use std::sync::Arc;

/// TOPIC attributes kept without effect (docs/administration.md).
const TOPIC: &[&str] = &[
    "CAPEXPRY", "CLROUTE", "CMDSCOPE", "COMMINFO", "CUSTOM", "DEFPRESP", "MCAST", "PROXYSUB",
    "PUBSCOPE", "SUBSCOPE", "QSGDISP",
];

fn allow(a: &Attr) -> Result<Allow, Fail> {
    let v = choice(a, &["ASPARENT", "ENABLED", "DISABLED"])?;
    Ok(Allow::parse(v).unwrap_or(Allow::AsParent))
}

fn yes_no(a: &Attr) -> Result<YesNo, Fail> {
    let v = choice(a, &["ASPARENT", "YES", "NO"])?;
    Ok(YesNo::parse(v).unwrap_or(YesNo::AsParent))
}

fn delivery(a: &Attr) -> Result<Delivery, Fail> {
    let v = choice(a, &["ASPARENT", "ALL", "ALLAVAIL", "ALLDUR"])?;
    Ok(Delivery::parse(v).unwrap_or(Delivery::AsParent))
}

/// A TOPICSTR as written (its blanks are part of it), except that MQ's blank `' '` is the
/// root's empty string.
fn topicstr(a: &Attr) -> Result<String, Fail> {
    let v = one(a)?;
    Ok(if v.trim().is_empty() {
        String::new()
    } else {
        v.to_string()
    })
}

fn apply_topic(d: &mut TopicDef, attrs: &[Attr]) -> Result<(), Fail> {
    known::apply(
        d,
        attrs,
        (TOPIC, "topic attribute"),
        |d| &mut d.noted,
        |d, a| {
            match a.key.as_str() {
                "DESCR" => d.descr = one(a)?.trim_end().to_string(),
                "TOPICSTR" => d.topicstr = topicstr(a)?,
                "TYPE" => {
                    choice(a, &["LOCAL"]).map_err(|_| {
                        bad(a, "only TYPE(LOCAL): clustered topics are not provided")
                    })?;
                }
                "PUB" => d.publish = allow(a)?,
                "SUB" => d.subscribe = allow(a)?,
                "DURSUB" => d.dursub = yes_no(a)?,
                "DEFPSIST" => d.defpsist = yes_no(a)?,
                "USEDLQ" => d.usedlq = yes_no(a)?,
                "PMSGDLV" => d.pmsgdlv = delivery(a)?,
                "NPMSGDLV" => d.npmsgdlv = delivery(a)?,
                "DEFPRTY" => {
                    let v = one(a)?;
                    d.defprty = if v.eq_ignore_ascii_case("ASPARENT") {
                        PRTY_ASPARENT
                    } else {
                        match v.parse::<u8>() {
                            Ok(p) if p <= 9 => p,
                            _ => return Err(bad(a, format!("'{v}' is not 0-9 or ASPARENT"))),
                        }
                    }
                }
                "WILDCARD" => {
                    d.wildcard = match choice(a, &["PASSTHRU", "BLOCK"])? {
                        "BLOCK" => Wildcard::Block,
                        _ => Wildcard::PassThru,
                    }
                }
                "MDURMDL" => d.mdurmdl = text(a),
                "MNDURMDL" => d.mndurmdl = text(a),
                _ => return Ok(false),
            }
            Ok(true)
        },
    )
}

fn prty(p: u8) -> String {
    if p == PRTY_ASPARENT {
        "ASPARENT".into()
    } else {
        p.to_string()
    }
}

fn topic_block(d: &TopicDef) -> Block {
    let mut b: Block = attrs![
        "TOPIC" => d.name, "TYPE" => "LOCAL", "TOPICSTR" => d.topicstr, "DESCR" => d.descr,
        "CLUSTER" => "", "PUB" => d.publish.name(), "SUB" => d.subscribe.name(),
        "DURSUB" => d.dursub.name(), "DEFPSIST" => d.defpsist.name(),
        "DEFPRTY" => prty(d.defprty), "USEDLQ" => d.usedlq.name(),
        "PMSGDLV" => d.pmsgdlv.name(), "NPMSGDLV" => d.npmsgdlv.name(),
        "WILDCARD" => d.wildcard.name(), "MDURMDL" => d.mdurmdl, "MNDURMDL" => d.mndurmdl,
    ];
    b.extend(known::shown(&d.noted));
    b
}

const KIND: Kind<TopicDef> = Kind {
    what: "topic",
    title: "Topic",
    key: "TOPIC",
    plural: "topic(s)",
    msg: 220,
    mq: [
        Some("AMQ8690I: IBM MQ topic created."),
        Some("AMQ8691I: IBM MQ topic changed."),
        None,
        Some("AMQ8633I: Display topic details."),
    ],
    default: DEFAULT_TOPIC,
    new: TopicDef::new,
    name: |d| &mut d.name,
    apply: apply_topic,
    block: topic_block,
};

/// DEFINE, ALTER, DELETE and DISPLAY TOPIC.
pub(crate) fn topic(qm: &Arc<QueueManager>, c: &Command) -> Result<Answer, Fail> {
    let name = c.name.clone().unwrap_or_default();
    // (DISPLAY names TOPICSTR without a value, to show it.)
    let given = match c.attrs.iter().find(|a| a.key == "TOPICSTR") {
        Some(a) if matches!(c.verb, Verb::Define | Verb::Alter) => Some((a, topicstr(a)?)),
        _ => None,
    };
    let now = qm.object::<TopicDef>(&name);
    match (c.verb, &given, &now) {
        // Only the root and the template (SYSTEM.BASE.TOPIC, SYSTEM.DEFAULT.TOPIC) have the
        // blank string; a new object names the point of the tree it administers.
        (Verb::Define, None, None) => {
            return Err(Fail {
                at: None,
                reason: Some(sealmq_types::ReasonCode::TopicStringError),
                message: "TOPICSTR(...) is required: the topic string this object administers"
                    .into(),
            });
        }
        (Verb::Define, Some((a, s)), now)
            if s.is_empty() && now.as_ref().is_none_or(|t| !t.topicstr.is_empty()) =>
        {
            return Err(bad(
                a,
                "a topic object administers a non-blank topic string",
            ));
        }
        (Verb::Alter, Some((a, s)), Some(t)) if *s != t.topicstr => {
            return Err(bad(
                a,
                "a topic object's topic string cannot be altered: DELETE and DEFINE it",
            ));
        }
        _ => {}
    }
    KIND.run(qm, c, &name).unwrap_or_else(|| {
        Err(Fail {
            at: None,
            reason: None,
            message: format!("{:?} TOPIC is not a command", c.verb),
        })
    })
}

/// DISPLAY PUBSUB: the queue manager's publish/subscribe engine (no hierarchy: LOCAL only).
pub(crate) fn pubsub(qm: &Arc<QueueManager>, c: &Command) -> Result<Answer, Fail> {
    for a in &c.attrs {
        if a.key == "TYPE" {
            choice(a, &["LOCAL", "ALL", "CHILD", "PARENT"])?;
        }
    }
    let enabled = qm.check_pubsub_enabled().is_ok();
    let nodes = {
        let mut n = qm.topic_nodes();
        n.sort();
        n.dedup();
        n.len()
    };
    let block = attrs![
        "QMNAME" => qm.name(), "TYPE" => "LOCAL",
        "STATUS" => if enabled { "ACTIVE" } else { "INACTIVE" },
        "SUBCOUNT" => qm.subs().len(), "TPCOUNT" => nodes,
    ];
    let blocks = crate::display::select_all([block], &c.attrs, &["QMNAME", "TYPE"], true)?;
    Ok(("SMQ0226I: Display publish/subscribe status.".into(), blocks))
}

/// CLEAR TOPICSTR(topic string) CLRTYPE(RETAINED): the string's retained publication goes.
pub(crate) fn clear(qm: &Arc<QueueManager>, c: &Command) -> Result<Answer, Fail> {
    let topic = c.name.clone().unwrap_or_default();
    for a in &c.attrs {
        match a.key.as_str() {
            "CLRTYPE" => {
                choice(a, &["RETAINED"])?;
            }
            "SCOPE" => {
                choice(a, &["LOCAL", "ALL"])?;
            }
            "CMDSCOPE" => {}
            _ => return Err(bad(a, "is not a CLEAR TOPICSTR attribute")),
        }
    }
    if !c.attrs.iter().any(|a| a.key == "CLRTYPE") {
        return Err(Fail {
            at: None,
            reason: None,
            message: "CLRTYPE(RETAINED) is required".into(),
        });
    }
    let had = sealmq_engine::Connection::connect_internal(qm)?.clear_retained(&topic)?;
    if !had {
        return Err(Fail {
            at: None,
            reason: Some(sealmq_types::ReasonCode::UnknownObjectName),
            message: format!("topic string '{topic}' has no retained publication"),
        });
    }
    Ok((
        format!("SMQ0225I: Retained publication of '{topic}' cleared."),
        vec![],
    ))
}

/// DISPLAY TPSTATUS(topic string): the string's attributes once ASPARENT is resolved, and
/// the topic object they come from first (ADMIN). A wildcard (`#`, `+`) lists the topic
/// strings of the tree it matches.
pub(crate) fn tpstatus(qm: &Arc<QueueManager>, c: &Command) -> Result<Answer, Fail> {
    let pattern = c.name.clone().unwrap_or_default();
    for a in &c.attrs {
        if a.key == "TYPE" {
            choice(a, &["TOPIC", "PUB", "SUB"])?;
        }
    }
    let mut nodes: Vec<String> = if sealmq_engine::topics::has_wildcard(&pattern) {
        qm.topic_nodes()
            .into_iter()
            .filter(|t| sealmq_engine::topics::matches(&pattern, t))
            .collect()
    } else {
        vec![pattern.clone()]
    };
    nodes.sort();
    nodes.dedup();
    let subs = qm.subs();
    let conn = sealmq_engine::Connection::connect_internal(qm)?;
    let retained = |t: &str| conn.has_retained(t).unwrap_or(false);
    let blocks: Vec<Block> = nodes
        .iter()
        .map(|t| {
            let e = qm.topic_effective(t);
            let on = |b: bool| if b { "ENABLED" } else { "INHIBITED" };
            attrs![
                "TOPICSTR" => t, "TYPE" => "TOPIC", "ADMIN" => e.admin,
                "CLUSTER" => "", "DEFPSIST" => if e.persistent { "YES" } else { "NO" },
                "DEFPRTY" => e.priority,
                "DURSUB" => if e.durable_allowed { "YES" } else { "NO" },
                "PUB" => on(e.publish), "SUB" => on(e.subscribe),
                "PMSGDLV" => e.pmsgdlv.name(), "NPMSGDLV" => e.npmsgdlv.name(),
                "USEDLQ" => if e.usedlq { "YES" } else { "NO" },
                "MDURMDL" => e.mdurmdl, "MNDURMDL" => e.mndurmdl,
                "RETAINED" => if retained(t) { "YES" } else { "NO" }, "PUBCOUNT" => 0,
                "SUBCOUNT" => subs.iter().filter(|s| s.topicstr == *t).count(),
            ]
        })
        .collect();
    // As MQ's: one topic string asked for shows everything unless attributes are named.
    let wild = sealmq_engine::topics::has_wildcard(&pattern);
    let blocks = crate::display::select_all(blocks, &c.attrs, &["TOPICSTR"], !wild)?;
    crate::args::none_matched(&blocks, "topic string", &pattern)?;
    Ok((
        format!("SMQ0224I: Display of {} topic string(s).", blocks.len()),
        blocks,
    ))
}

/// Which of this module's commands `c` is, if any.
pub(crate) fn route(qm: &Arc<QueueManager>, c: &Command) -> Option<Result<Answer, Fail>> {
    use Verb::*;
    Some(match (c.verb, c.obj) {
        (Define | Alter | Delete | Display, Obj::Topic) => topic(qm, c),
        (Display, Obj::TpStatus) => tpstatus(qm, c),
        (Clear, Obj::TopicStr) => clear(qm, c),
        (Display, Obj::PubSub) => pubsub(qm, c),
        _ => return None,
    })
}

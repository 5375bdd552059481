//! TOPIC objects (issue 28, SPEC §14): administrative points in the topic tree. A topic
//! string's attributes come from the closest topic object at or above it: each attribute a
//! topic object leaves ASPARENT is taken from the next one up, ending at SYSTEM.BASE.TOPIC
//! (TOPICSTR ''), which sets them all — as MQ resolves them.

use crate::error::{MqResult, mqerr};
use crate::noted::Noted;
use sealmq_storage::codec::{Dec, Enc, Result};
use sealmq_types::{named_enum, put_fields, take_fields};

pub const BASE_TOPIC: &str = "SYSTEM.BASE.TOPIC";
pub const DEFAULT_TOPIC: &str = "SYSTEM.DEFAULT.TOPIC";
pub use crate::objects::{DURABLE_MODEL, NDURABLE_MODEL};
/// MQ's limit on a topic string (MQ_TOPIC_STR_LENGTH).
pub const TOPIC_STR_MAX: usize = 10_240;
/// DEFPRTY(ASPARENT), stored in the priority's byte.
pub const PRTY_ASPARENT: u8 = 255;

named_enum! {
    /// PUB and SUB: whether publishing (subscribing) is allowed here.
    pub enum Allow("PUB") { AsParent = 0 "ASPARENT", Enabled = 1 "ENABLED", Disabled = 2 "DISABLED" }
    /// DURSUB, DEFPSIST and USEDLQ.
    pub enum YesNo("DURSUB") { AsParent = 0 "ASPARENT", Yes = 1 "YES", No = 2 "NO" }
    /// PMSGDLV and NPMSGDLV: what a failed delivery to one subscriber does to the others.
    pub enum Delivery("PMSGDLV") {
        AsParent = 0 "ASPARENT", All = 1 "ALL", AllAvail = 2 "ALLAVAIL", AllDur = 3 "ALLDUR"
    }
    /// WILDCARD: whether wildcard subscriptions above this topic see its publications.
    pub enum Wildcard("WILDCARD") { PassThru = 0 "PASSTHRU", Block = 1 "BLOCK" }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicDef {
    pub name: String,
    pub topicstr: String,
    pub descr: String,
    pub publish: Allow,
    pub subscribe: Allow,
    pub dursub: YesNo,
    pub defpsist: YesNo,
    /// 0-9, or [`PRTY_ASPARENT`].
    pub defprty: u8,
    pub usedlq: YesNo,
    pub pmsgdlv: Delivery,
    pub npmsgdlv: Delivery,
    pub wildcard: Wildcard,
    /// Model queues of managed durable and non-durable subscriptions (blank: as parent).
    pub mdurmdl: String,
    pub mndurmdl: String,
    pub noted: Noted,
}

impl TopicDef {
    /// A topic object that takes everything from its parent.
    pub fn new(name: &str) -> TopicDef {
        TopicDef {
            name: name.to_string(),
            topicstr: String::new(),
            descr: String::new(),
            publish: Allow::AsParent,
            subscribe: Allow::AsParent,
            dursub: YesNo::AsParent,
            defpsist: YesNo::AsParent,
            defprty: PRTY_ASPARENT,
            usedlq: YesNo::AsParent,
            pmsgdlv: Delivery::AsParent,
            npmsgdlv: Delivery::AsParent,
            wildcard: Wildcard::PassThru,
            mdurmdl: String::new(),
            mndurmdl: String::new(),
            noted: Noted::new(),
        }
    }

    /// SYSTEM.BASE.TOPIC as MQ's `crtmqm` makes it: the root, with every attribute set.
    pub fn base() -> TopicDef {
        TopicDef {
            descr: "Base topic for ASPARENT resolution".into(),
            publish: Allow::Enabled,
            subscribe: Allow::Enabled,
            dursub: YesNo::Yes,
            defpsist: YesNo::No,
            defprty: 0,
            usedlq: YesNo::Yes,
            pmsgdlv: Delivery::AllDur,
            npmsgdlv: Delivery::AllAvail,
            mdurmdl: DURABLE_MODEL.into(),
            mndurmdl: NDURABLE_MODEL.into(),
            ..TopicDef::new(BASE_TOPIC)
        }
    }

    pub fn validate(&self) -> MqResult<()> {
        crate::objects::validate_name(&self.name)?;
        if self.topicstr.len() > TOPIC_STR_MAX {
            return mqerr!(
                TopicStringError,
                "TOPICSTR of topic {} is {} bytes: at most {TOPIC_STR_MAX}",
                self.name,
                self.topicstr.len()
            );
        }
        if self.defprty > 9 && self.defprty != PRTY_ASPARENT {
            return mqerr!(PriorityError, "DEFPRTY must be 0-9 or ASPARENT");
        }
        Ok(())
    }

    pub fn encode(&self, e: &mut Enc) {
        e.u8(1);
        put_fields!(e, self: name, topicstr, descr, publish, subscribe, dursub, defpsist,
            defprty, usedlq, pmsgdlv, npmsgdlv, wildcard, mdurmdl, mndurmdl, noted);
    }

    pub fn decode(d: &mut Dec<'_>) -> Result<TopicDef> {
        d.version("TOPIC record", 1..=1)?;
        let mut t = TopicDef::new("");
        take_fields!(d, t: name, topicstr, descr, publish, subscribe, dursub, defpsist,
            defprty, usedlq, pmsgdlv, npmsgdlv, wildcard, mdurmdl, mndurmdl, noted);
        Ok(t)
    }
}

/// A topic string's attributes once ASPARENT is resolved, and the topic object it takes its
/// authority and attributes from first (the closest at or above it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Effective {
    pub admin: String,
    pub publish: bool,
    pub subscribe: bool,
    pub durable_allowed: bool,
    pub persistent: bool,
    pub priority: u8,
    pub usedlq: bool,
    pub pmsgdlv: Delivery,
    pub npmsgdlv: Delivery,
    pub mdurmdl: String,
    pub mndurmdl: String,
}

/// The topic strings at and above `topic`, closest first: `a/b/c`, `a/b`, `a`, then the
/// root `''`.
pub fn ancestors(topic: &str) -> impl Iterator<Item = &str> {
    let mut next = Some(topic);
    std::iter::from_fn(move || {
        let t = next?;
        next = if t.is_empty() {
            None
        } else {
            Some(t.rfind('/').map_or("", |i| &t[..i]))
        };
        Some(t)
    })
}

/// Resolves `topic`'s attributes from `objects` (by topic string); SYSTEM.BASE.TOPIC's
/// values (or MQ's defaults, if it was deleted) end the walk.
pub fn effective<'a>(topic: &str, by_str: impl Fn(&str) -> Option<&'a TopicDef>) -> Effective {
    let base = TopicDef::base();
    let mut chain: Vec<&TopicDef> = ancestors(topic).filter_map(&by_str).collect();
    chain.push(&base);
    let admin = chain.first().map(|t| t.name.clone()).unwrap_or_default();
    let pick = |f: &dyn Fn(&TopicDef) -> Option<bool>| chain.iter().find_map(|t| f(t));
    let allow = |a: Allow| match a {
        Allow::AsParent => None,
        a => Some(a == Allow::Enabled),
    };
    let yes = |a: YesNo| match a {
        YesNo::AsParent => None,
        a => Some(a == YesNo::Yes),
    };
    let dlv = |f: &dyn Fn(&TopicDef) -> Delivery, dflt: Delivery| {
        chain
            .iter()
            .map(|t| f(t))
            .find(|d| *d != Delivery::AsParent)
            .unwrap_or(dflt)
    };
    let model = |f: &dyn Fn(&TopicDef) -> &str, dflt: &str| {
        chain
            .iter()
            .map(|t| f(t).trim())
            .find(|m| !m.is_empty())
            .unwrap_or(dflt)
            .to_string()
    };
    Effective {
        admin,
        publish: pick(&|t| allow(t.publish)).unwrap_or(true),
        subscribe: pick(&|t| allow(t.subscribe)).unwrap_or(true),
        durable_allowed: pick(&|t| yes(t.dursub)).unwrap_or(true),
        persistent: pick(&|t| yes(t.defpsist)).unwrap_or(false),
        priority: chain
            .iter()
            .map(|t| t.defprty)
            .find(|p| *p != PRTY_ASPARENT)
            .unwrap_or(0),
        usedlq: pick(&|t| yes(t.usedlq)).unwrap_or(true),
        pmsgdlv: dlv(&|t| t.pmsgdlv, Delivery::AllDur),
        npmsgdlv: dlv(&|t| t.npmsgdlv, Delivery::AllAvail),
        mdurmdl: model(&|t| &t.mdurmdl, DURABLE_MODEL),
        mndurmdl: model(&|t| &t.mndurmdl, NDURABLE_MODEL),
    }
}

/// The tree node a topic object's TOPICSTR administers: a trailing `/` (IBM's developer
/// configuration writes `TOPICSTR('dev/')`) names the level before it, so `dev/` covers
/// `dev/news` as its authors meant.
pub fn node_of(topicstr: &str) -> &str {
    match topicstr.strip_suffix('/') {
        Some(s) if !s.is_empty() => s,
        _ => topicstr,
    }
}

/// Whether `pattern` has a wildcard level of the topic scheme (`#` or `+` as a whole level).
pub fn has_wildcard(pattern: &str) -> bool {
    pattern.split('/').any(|l| l == "#" || l == "+")
}

/// Whether `topic` matches `pattern` in MQ's topic wildcard scheme: levels split at `/`; a
/// level `#` matches any number of levels (none included), a level `+` exactly one; `#` or
/// `+` inside a longer level is an ordinary character.
pub fn matches(pattern: &str, topic: &str) -> bool {
    let p: Vec<&str> = pattern.split('/').collect();
    let t: Vec<&str> = topic.split('/').collect();
    levels_match(&p, &t)
}

fn levels_match(p: &[&str], t: &[&str]) -> bool {
    match p.split_first() {
        None => t.is_empty(),
        Some((&"#", rest)) => (0..=t.len()).any(|skip| levels_match(rest, &t[skip..])),
        Some((&"+", rest)) => !t.is_empty() && levels_match(rest, &t[1..]),
        Some((l, rest)) => t.first() == Some(l) && levels_match(rest, &t[1..]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn ancestors_walk_up_to_the_root() {
        let v: Vec<&str> = ancestors("a/b/c").collect();
        assert_eq!(v, ["a/b/c", "a/b", "a", ""]);
        assert_eq!(ancestors("").collect::<Vec<_>>(), [""]);
        assert_eq!(ancestors("/x").collect::<Vec<_>>(), ["/x", ""]);
    }

    #[test]
    fn asparent_is_taken_from_the_closest_object_that_sets_it() {
        let mut objs = HashMap::new();
        let base = TopicDef::base();
        let dev = TopicDef {
            topicstr: "dev".into(),
            subscribe: Allow::Disabled,
            ..TopicDef::new("DEV.BASE.TOPIC")
        };
        let deep = TopicDef {
            topicstr: "dev/a/b".into(),
            defprty: 7,
            ..TopicDef::new("DEV.DEEP")
        };
        for t in [base, dev, deep] {
            objs.insert(t.topicstr.clone(), t);
        }
        let e = effective("dev/a/b/c", |s| objs.get(s));
        assert_eq!(e.admin, "DEV.DEEP");
        assert_eq!(e.priority, 7);
        assert!(!e.subscribe, "SUB(DISABLED) of dev is inherited");
        assert!(e.publish);
        let e = effective("other", |s| objs.get(s));
        assert_eq!(e.admin, BASE_TOPIC);
        assert!(e.subscribe);
        assert_eq!(e.mdurmdl, DURABLE_MODEL);
    }

    #[test]
    fn wildcards_of_the_topic_scheme() {
        assert!(matches("price/#", "price"));
        assert!(matches("price/#", "price/fruit/apples"));
        assert!(matches("#", "a/b"));
        assert!(matches("price/+/apples", "price/fruit/apples"));
        assert!(!matches("price/+", "price"));
        assert!(!matches("price/+", "price/fruit/apples"));
        assert!(matches("+/+", "a/b"));
        assert!(
            !matches("price/fr#", "price/fruit"),
            "# inside a level is literal"
        );
        assert!(matches("price/fr#", "price/fr#"));
        assert!(matches("a/#/c", "a/c"));
        assert!(matches("a/#/c", "a/x/y/c"));
        assert!(!matches("a/#/c", "a/x/y"));
        assert!(matches("", ""));
        assert!(!matches("a", "a/"));
    }

    // Matching against a model: a pattern built from a topic by replacing levels with `+`
    // and runs of levels with `#` always matches it; a literal pattern only itself.
    proptest::proptest! {
        #[test]
        fn generalising_a_topic_keeps_it_matched(
            levels in proptest::collection::vec("[a-c]{0,2}", 1..6),
            plus in proptest::collection::vec(proptest::bool::ANY, 6),
            hash_at in 0usize..6,
            hash_len in 0usize..3,
        ) {
            let topic = levels.join("/");
            let mut pat: Vec<String> = levels
                .iter()
                .zip(&plus)
                .map(|(l, p)| if *p { "+".to_string() } else { l.clone() })
                .collect();
            if hash_at <= pat.len() {
                let end = (hash_at + hash_len).min(pat.len());
                pat.splice(hash_at..end, ["#".to_string()]);
            }
            proptest::prop_assert!(matches(&pat.join("/"), &topic), "{} !~ {}", pat.join("/"), topic);
            proptest::prop_assert!(matches(&topic, &topic));
            let other = format!("{topic}/x");
            proptest::prop_assert!(!matches(&topic, &other));
        }
    }

    #[test]
    fn a_topic_record_round_trips() {
        let t = TopicDef {
            topicstr: "price/fruit".into(),
            publish: Allow::Disabled,
            defprty: 4,
            wildcard: Wildcard::Block,
            ..TopicDef::new("FRUIT")
        };
        let mut e = Enc::with_capacity(64);
        t.encode(&mut e);
        let mut d = Dec::new(&e.buf, "t");
        assert_eq!(TopicDef::decode(&mut d).unwrap(), t);
    }
}

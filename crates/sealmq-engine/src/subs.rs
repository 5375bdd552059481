//! Subscriptions (issue 28): a topic string (with wildcards) whose publications are put to a
//! destination queue. Administrative ones (DEFINE SUB) and durable ones an application made
//! are logged and checkpointed; a non-durable one lives as long as its connection.

use crate::error::{MqResult, mqerr};
use crate::noted::Noted;
use sealmq_storage::codec::{Dec, Enc, Result};
use sealmq_types::{named_enum, put_fields, take_fields};

/// MQ's limit on a subscription name (MQ_SUB_NAME_LENGTH).
pub const SUB_NAME_MAX: usize = 10_240;
/// The start of every managed subscription queue's name.
pub const MANAGED_PREFIX: &str = "SYSTEM.MANAGED.";
/// PUBPRTY(ASPUB), stored in the priority's byte.
pub const PRTY_ASPUB: u8 = 255;

named_enum! {
    /// DESTCLAS: a queue the queue manager made for the subscription, or one given.
    pub enum DestClass("DESTCLAS") { Provided = 0 "PROVIDED", Managed = 1 "MANAGED" }
    /// SUBTYPE: who made it.
    pub enum SubType("SUBTYPE") { Admin = 0 "ADMIN", Api = 1 "API" }
    /// WSCHEMA: how wildcards in its topic string are read.
    pub enum WildSchema("WSCHEMA") { Topic = 0 "TOPIC", Char = 1 "CHAR" }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubDef {
    pub name: String,
    /// The full topic string subscribed to (the topic object's and the given one joined).
    pub topicstr: String,
    /// The topic object named at definition (blank: none).
    pub topicobj: String,
    pub dest: String,
    /// Blank: this queue manager.
    pub destqmgr: String,
    pub destclas: DestClass,
    pub selector: String,
    pub durable: bool,
    pub subtype: SubType,
    pub wschema: WildSchema,
    /// The user publications are delivered for (authority to the destination is theirs).
    pub subuser: String,
    /// 0-9, or [`PRTY_ASPUB`].
    pub pubprty: u8,
    /// SUBID: 24 bytes, as hex.
    pub subid: String,
    pub noted: Noted,
}

impl SubDef {
    pub fn new(name: &str) -> SubDef {
        SubDef {
            name: name.to_string(),
            topicstr: String::new(),
            topicobj: String::new(),
            dest: String::new(),
            destqmgr: String::new(),
            destclas: DestClass::Provided,
            selector: String::new(),
            durable: true,
            subtype: SubType::Admin,
            wschema: WildSchema::Topic,
            subuser: String::new(),
            pubprty: PRTY_ASPUB,
            subid: String::new(),
            noted: Noted::new(),
        }
    }

    pub fn validate(&self) -> MqResult<()> {
        if self.name.trim().is_empty() || self.name.len() > SUB_NAME_MAX {
            return mqerr!(
                ObjectNameError,
                "a subscription name is 1 to {SUB_NAME_MAX} characters"
            );
        }
        if self.topicstr.len() > crate::topics::TOPIC_STR_MAX {
            return mqerr!(
                TopicStringError,
                "subscription {}: topic string of {} bytes, at most {}",
                self.name,
                self.topicstr.len(),
                crate::topics::TOPIC_STR_MAX
            );
        }
        if self.dest.is_empty() {
            return mqerr!(
                UnknownObjectName,
                "subscription {}: DEST(queue) is required (or DESTCLAS(MANAGED))",
                self.name
            );
        }
        if !self.selector.is_empty()
            && let Err(e) = sealmq_mqi::selector::Selector::parse(&self.selector)
        {
            return mqerr!(
                SelectorSyntaxError,
                "subscription {}: SELECTOR: {e}",
                self.name
            );
        }
        if self.pubprty > 9 && self.pubprty != PRTY_ASPUB {
            return mqerr!(PriorityError, "PUBPRTY must be 0-9 or ASPUB");
        }
        Ok(())
    }

    /// Whether a publication on `topic` reaches this subscription (its topic string, with
    /// wildcards read as its WSCHEMA says).
    pub fn covers(&self, topic: &str) -> bool {
        match self.wschema {
            WildSchema::Topic => crate::topics::matches(&self.topicstr, topic),
            WildSchema::Char => char_matches(&self.topicstr, topic),
        }
    }

    /// What the subscription's topic string fixes before its first wildcard (`None`: it has
    /// none). Topic scheme: the levels before the first `#` or `+` level (`a/+/c` → `a`);
    /// character scheme: the characters before the first `*` or `?`.
    pub fn wildcard_base(&self) -> Option<&str> {
        let t = self.topicstr.as_str();
        match self.wschema {
            WildSchema::Topic => {
                let mut end = 0usize;
                for (i, level) in t.split('/').enumerate() {
                    if level == "#" || level == "+" {
                        return Some(if i == 0 {
                            ""
                        } else {
                            &t[..end.saturating_sub(1)]
                        });
                    }
                    end += level.len() + 1;
                }
                None
            }
            WildSchema::Char => t.find(['*', '?']).map(|i| &t[..i]),
        }
    }

    /// Whether WILDCARD(BLOCK) on the topic node `blocked` keeps this subscription from its
    /// publications: it has a wildcard made above that node (MQ: "wildcard subscriptions made
    /// to topics above this topic object ... do not receive publications made to this topic or
    /// to topics below").
    pub fn blocked_by(&self, blocked: &str) -> bool {
        self.wildcard_base().is_some_and(|base| {
            blocked.len() > base.trim_end_matches('/').len()
                && (base.is_empty() || blocked.starts_with(base))
        })
    }

    pub fn encode(&self, e: &mut Enc) {
        e.u8(1);
        put_fields!(e, self: name, topicstr, topicobj, dest, destqmgr, destclas, selector,
            durable, subtype, wschema, subuser, pubprty, subid, noted);
    }

    pub fn decode(d: &mut Dec<'_>) -> Result<SubDef> {
        d.version("SUB record", 1..=1)?;
        let mut s = SubDef::new("");
        take_fields!(d, s: name, topicstr, topicobj, dest, destqmgr, destclas, selector,
            durable, subtype, wschema, subuser, pubprty, subid, noted);
        Ok(s)
    }
}

/// MQ's character wildcard scheme: `*` any characters (`/` included), `?` one character.
pub fn char_matches(pattern: &str, topic: &str) -> bool {
    fn go(p: &[char], t: &[char]) -> bool {
        match p.split_first() {
            None => t.is_empty(),
            Some(('*', rest)) => (0..=t.len()).any(|i| go(rest, &t[i..])),
            Some(('?', rest)) => !t.is_empty() && go(rest, &t[1..]),
            Some((c, rest)) => t.first() == Some(c) && go(rest, &t[1..]),
        }
    }
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = topic.chars().collect();
    go(&p, &t)
}

/// A subscription's full topic string: the topic object's string and the given one, joined
/// by `/` when both are there (MQ's rule).
pub fn full_topic(object_str: &str, given: &str) -> String {
    match (object_str.is_empty(), given.is_empty()) {
        (true, _) => given.to_string(),
        (false, true) => object_str.to_string(),
        (false, false) => format!("{}/{given}", object_str.trim_end_matches('/')),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcard_block_stops_only_wildcards_made_above_the_node() {
        let sub = |t: &str, w: WildSchema| SubDef {
            topicstr: t.into(),
            wschema: w,
            ..SubDef::new("S")
        };
        let t = WildSchema::Topic;
        assert!(sub("#", t).blocked_by("a/b"));
        assert!(sub("a/#", t).blocked_by("a/b"));
        assert!(sub("a/+/c", t).blocked_by("a/b"));
        assert!(!sub("a/b/#", t).blocked_by("a/b"));
        assert!(!sub("a/b/+", t).blocked_by("a/b"));
        assert!(!sub("a/b/c", t).blocked_by("a/b"));
        assert!(!sub("x/#", t).blocked_by("a/b"));
        assert_eq!(sub("a/b/#", t).wildcard_base(), Some("a/b"));
        assert_eq!(sub("+", t).wildcard_base(), Some(""));
        let c = WildSchema::Char;
        assert!(sub("a/*", c).blocked_by("a/b"));
        assert!(!sub("a/b*", c).blocked_by("a/b"));
        assert!(!sub("a/b/*", c).blocked_by("a/b"));
    }

    #[test]
    fn a_sub_record_round_trips() {
        let s = SubDef {
            topicstr: "price/#".into(),
            dest: "Q".into(),
            selector: "colour = 'red'".into(),
            subid: "ab".into(),
            pubprty: 3,
            ..SubDef::new("S1")
        };
        let mut e = Enc::with_capacity(64);
        s.encode(&mut e);
        assert_eq!(SubDef::decode(&mut Dec::new(&e.buf, "s")).unwrap(), s);
    }

    #[test]
    fn topic_strings_join_and_char_wildcards_match() {
        assert_eq!(full_topic("dev/", "news"), "dev/news");
        assert_eq!(full_topic("price", ""), "price");
        assert_eq!(full_topic("", "a/b"), "a/b");
        assert!(char_matches("price/*", "price/fruit/apples"));
        assert!(char_matches("price/fr?it", "price/fruit"));
        assert!(!char_matches("price/?", "price/ab"));
    }
}

//! Retained publications (issue 28): the last publication put with "retain" on a topic string
//! is kept on SYSTEM.RETAINED.PUB.QUEUE (one message per topic string, under a correlation id
//! derived from it, the topic string in its `sealmqTopic` property), replaced by the next one
//! in the same unit of work as its delivery, and given to each new subscription whose topic
//! string matches. A persistent one survives restarts as any persistent message; a
//! non-persistent one does not (MQ's rule). `CLEAR TOPICSTR(..) CLRTYPE(RETAINED)` removes it.

use super::*;
use crate::md::{Md, MsgId, NONE_ID};
use crate::objects::RETAINED_Q;
use crate::subs::{DestClass, SubDef};
use sealmq_mqi::{Browse, GetOptions, Match, PropValue, Property};

/// The property naming a retained publication's topic string on the retained queue.
pub const TOPIC_PROP: &str = "sealmqTopic";

/// The correlation id a topic string's retained publication is kept under.
pub fn retained_key(topic: &str) -> MsgId {
    let d = sealmq_protect::digest_sha256(format!("retained\0{topic}").as_bytes());
    let mut id = NONE_ID;
    id.copy_from_slice(&d[..24]);
    id
}

fn by_key(topic: &str, browse: Browse) -> GetOptions {
    GetOptions {
        syncpoint: true,
        browse,
        matching: Match {
            correl_id: Some(retained_key(topic)),
            ..Match::default()
        },
        ..GetOptions::default()
    }
}

impl Connection {
    /// In this (internal) connection's unit of work: the retained publication of `topic`
    /// becomes `md`/`payload` (`None`: removed). Returns whether one was there before.
    pub(crate) fn retain(&self, topic: &str, publication: Option<(&Md, &[u8])>) -> MqResult<bool> {
        let hin = self.open(RETAINED_Q, OpenOptions::input())?;
        let mut had = false;
        loop {
            match self.get(&hin, by_key(topic, Browse::None)) {
                Ok(_) => had = true,
                Err(e) if e.reason == ReasonCode::NoMsgAvailable => break,
                Err(e) => {
                    let _ = self.close(&hin);
                    return Err(e);
                }
            }
        }
        self.close(&hin)?;
        if let Some((md, payload)) = publication {
            let mut kept = md.clone();
            kept.correl_id = retained_key(topic);
            kept.properties.retain(|p| p.name != TOPIC_PROP);
            kept.properties.push(Property {
                name: TOPIC_PROP.into(),
                value: PropValue::String(topic.to_string()),
            });
            let h = self.open(RETAINED_Q, OpenOptions::output())?;
            let pmo = PutOptions {
                syncpoint: true,
                pass_context: true,
            };
            let r = self.put(&h, &mut kept, payload, pmo);
            self.close(&h)?;
            r?;
        }
        Ok(had)
    }

    /// Whether `topic` has a retained publication (DISPLAY TPSTATUS RETAINED).
    pub fn has_retained(&self, topic: &str) -> MqResult<bool> {
        let h = self.open(RETAINED_Q, OpenOptions::browse())?;
        let mut gmo = by_key(topic, Browse::First);
        gmo.syncpoint = false;
        let r = self.get(&h, gmo);
        self.close(&h)?;
        match r {
            Ok(_) => Ok(true),
            Err(e) if e.reason == ReasonCode::NoMsgAvailable => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// CLEAR TOPICSTR(topic) CLRTYPE(RETAINED): false when there was none.
    pub fn clear_retained(&self, topic: &str) -> MqResult<bool> {
        let had = self.retain(topic, None)?;
        self.commit()?;
        Ok(had)
    }

    /// Gives a new subscription the retained publications its topic string matches (and
    /// its selector selects), in one unit of work: how many.
    pub fn deliver_retained(&self, sub: &SubDef) -> MqResult<usize> {
        let d = Connection::connect_internal(&self.qm)?;
        let h = d.open(RETAINED_Q, OpenOptions::browse())?;
        let mut found: Vec<(Md, Vec<u8>)> = Vec::new();
        let mut browse = Browse::First;
        loop {
            let gmo = GetOptions {
                browse,
                ..GetOptions::default()
            };
            match d.get(&h, gmo) {
                Ok(g) => {
                    let topic =
                        g.md.properties
                            .iter()
                            .find_map(|p| match (&p.name, &p.value) {
                                (n, PropValue::String(t)) if n == TOPIC_PROP => Some(t.clone()),
                                _ => None,
                            });
                    if topic.is_some_and(|t| sub.covers(&t)) {
                        found.push((g.md, g.payload));
                    }
                }
                Err(e) if e.reason == ReasonCode::NoMsgAvailable => break,
                Err(e) => {
                    let _ = d.close(&h);
                    return Err(e);
                }
            }
            browse = Browse::Next;
        }
        d.close(&h)?;
        let mut n = 0;
        for (mut md, payload) in found {
            md.properties.retain(|p| p.name != TOPIC_PROP);
            if !super::publish::selected(sub, &md) {
                continue;
            }
            md.msg_id = self.qm.unique_id();
            md.correl_id = if sub.destclas == DestClass::Managed {
                super::publish::subid_bytes(&sub.subid)
            } else {
                NONE_ID
            };
            let hq = d.open(&sub.dest, OpenOptions::output())?;
            let pmo = PutOptions {
                syncpoint: true,
                pass_context: true,
            };
            let r = d.put(&hq, &mut md, &payload, pmo);
            d.close(&hq)?;
            r?;
            n += 1;
        }
        d.commit()?;
        Ok(n)
    }
}

//! JMS temporary topics (`Session.createTemporaryTopic`), as Qpid JMS makes them: a link the
//! application sends on, attached with a dynamic target whose capabilities say
//! `temporary-topic`. The queue manager names the topic `TEMP/<queue manager>/<unique id>`
//! (IBM MQ's JMS names its temporary topics under `TEMP/` too); the topic lives while that
//! link (its anchor) does, and is gone with it or with its connection.
//!
//! As JMS requires, only the connection that made a temporary topic subscribes to it (another
//! is refused as if it did not exist); any connection may publish to it while it lives. The
//! usual authority applies on top: SUB to subscribe and PUB to publish, up the topic tree from
//! `TEMP/...` (docs/amqp.md).

use crate::common::Caps;
use fe2o3_amqp::types::definitions::{AmqpError, Error};
use sealmq_engine::Connection;
use sealmq_types::sync::lock;
use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};

/// Living temporary topics, as `<queue manager>/<topic>`, with the id of the connection
/// that made each.
static LIVE: LazyLock<Mutex<HashMap<String, u64>>> = LazyLock::new(Default::default);

/// The capability of a JMS TemporaryTopic's terminus.
pub const CAPABILITY: &str = "temporary-topic";

fn key(mq: &Connection, topic: &str) -> String {
    format!("{}/{topic}", mq.qm().name())
}

/// Whether a terminus's capabilities name a temporary topic.
pub fn is_temporary(caps: Option<&Caps>) -> bool {
    caps.is_some_and(|c| c.iter().any(|c| c.as_str() == CAPABILITY))
}

/// A temporary topic made for a link of `mq`'s: it lives until the value is dropped.
pub struct TempTopic {
    key: String,
    pub topic: String,
}

impl TempTopic {
    pub fn make(mq: &Connection) -> TempTopic {
        let id: String = mq
            .qm()
            .unique_id()
            .iter()
            .skip(12)
            .map(|b| format!("{b:02X}"))
            .collect();
        let topic = format!("TEMP/{}/{:X}{id}", mq.qm().name(), mq.id);
        let key = key(mq, &topic);
        lock(&LIVE).insert(key.clone(), mq.id);
        TempTopic { key, topic }
    }
}

impl Drop for TempTopic {
    fn drop(&mut self) {
        lock(&LIVE).remove(&self.key);
    }
}

/// A session's temporary topics made for its dynamic links and not yet taken by them.
pub type Pending = Arc<Mutex<HashMap<String, TempTopic>>>;

/// The refusal of a link that names temporary topic `topic` (not a dynamic one) when it is
/// not living, or (`subscribing`) was made by another connection: both as if it did not
/// exist (AMQP not-found; JMS InvalidDestinationException), nothing said of whose it is.
pub fn refusal(mq: &Connection, topic: &str, subscribing: bool) -> Option<Error> {
    let owner = lock(&LIVE).get(&key(mq, topic)).copied();
    match owner {
        Some(id) if !subscribing || id == mq.id => None,
        _ => Some(Error::new(
            AmqpError::NotFound,
            format!(
                "MQRC 2085 UNKNOWN_OBJECT_NAME: temporary topic '{topic}' does not exist \
                 (it was deleted, or is another connection's)"
            ),
            None,
        )),
    }
}

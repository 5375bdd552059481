//! AMQP 1.0 messages ↔ sealmq messages (docs/amqp.md, "Message mapping"):
//!
//! | AMQP | sealmq |
//! | --- | --- |
//! | header durable | persistence |
//! | header priority | priority (0-9) |
//! | header ttl (ms) | expiry (tenths of a second) |
//! | header delivery-count | backout count (outgoing) |
//! | properties message-id, correlation-id | message id, correlation id (binary or string up to 24 bytes; longer, or ulong and uuid, as their bytes) |
//! | properties reply-to | reply-to queue |
//! | properties group-id | group id |
//! | properties creation-time | put time (outgoing) |
//! | properties user-id | user id (outgoing: the principal that put it) |
//! | amqp-value string | payload (UTF-8), format `MQSTR` |
//! | data sections | payload (bytes), format blank |
//!
//! Application properties wait for message properties in the queue manager (left for later).

use fe2o3_amqp::types::messaging::{AmqpValue, Body, Data, Header, Message, MessageId, Properties};
use fe2o3_amqp::types::primitives::{Binary, Timestamp, Value};
use sealmq_engine::{Md, Persistence};

/// MQ's format name of a character payload.
pub const FMT_STRING: &str = "MQSTR";

fn id24(bytes: &[u8]) -> [u8; 24] {
    let mut out = [0u8; 24];
    let n = bytes.len().min(24);
    out[..n].copy_from_slice(&bytes[..n]);
    out
}

fn id_bytes(id: &MessageId) -> [u8; 24] {
    match id {
        MessageId::Ulong(n) => id24(&n.to_be_bytes()),
        MessageId::Uuid(u) => id24(u.as_ref()),
        MessageId::Binary(b) => id24(b.as_ref()),
        MessageId::String(s) => id24(s.as_bytes()),
    }
}

/// An id as AMQP carries it: the text when it is printable (trailing zeros off), else bytes.
fn amqp_id(id: &[u8; 24]) -> MessageId {
    let end = id.iter().rposition(|b| *b != 0).map_or(0, |i| i + 1);
    let bytes = &id[..end];
    match std::str::from_utf8(bytes) {
        Ok(s) if !s.is_empty() && s.chars().all(|c| !c.is_control()) => {
            MessageId::String(s.to_string())
        }
        _ => MessageId::Binary(Binary::from(id.to_vec())),
    }
}

/// The descriptor and payload of a message an AMQP application sent. A body that is not
/// data sections or an amqp-value of string or binary is refused (its text says why).
pub fn to_mq(m: &Message<Body<Value>>) -> Result<(Md, Vec<u8>), String> {
    let mut md = Md::default();
    let h = m.header.clone().unwrap_or_default();
    md.persistence = Persistence::of(h.durable);
    md.priority = i32::from(h.priority.0.min(9));
    if let Some(ttl) = h.ttl {
        md.expiry = i32::try_from(ttl.div_ceil(100)).unwrap_or(i32::MAX).max(1);
    }
    if let Some(p) = &m.properties {
        if let Some(id) = &p.message_id {
            md.msg_id = id_bytes(id);
        }
        if let Some(id) = &p.correlation_id {
            md.correl_id = id_bytes(id);
        }
        if let Some(r) = &p.reply_to {
            md.reply_to_q = r.chars().take(48).collect();
        }
        if let Some(g) = &p.group_id {
            md.group_id = id24(g.as_bytes());
        }
    }
    let payload = match &m.body {
        Body::Data(sections) => {
            let mut v = Vec::new();
            for d in sections.iter() {
                v.extend_from_slice(&d.0);
            }
            v
        }
        Body::Value(v) => match &v.0 {
            Value::String(s) => {
                md.format = FMT_STRING.to_string();
                s.clone().into_bytes()
            }
            Value::Binary(b) => b.to_vec(),
            Value::Null => Vec::new(),
            other => {
                return Err(format!(
                    "an amqp-value body of type {} is not provided: send a string, binary or \
                     data sections",
                    value_kind(other)
                ));
            }
        },
        Body::Empty => Vec::new(),
        _ => {
            return Err(
                "an amqp-sequence body is not provided: send a string, binary or data sections"
                    .into(),
            );
        }
    };
    Ok((md, payload))
}

fn value_kind(v: &Value) -> &'static str {
    match v {
        Value::List(_) => "list",
        Value::Map(_) => "map",
        Value::Array(_) => "array",
        Value::Described(_) => "described",
        _ => "scalar",
    }
}

/// The AMQP message for a message got from a queue.
pub fn to_amqp(md: &Md, payload: Vec<u8>) -> Message<Body<Value>> {
    let header = Header {
        durable: md.persistence == Persistence::Persistent,
        priority: (md.priority.clamp(0, 9) as u8).into(),
        ttl: None,
        first_acquirer: md.backout_count == 0,
        delivery_count: md.backout_count,
    };
    let mut p = Properties::default();
    if md.msg_id != [0u8; 24] {
        p.message_id = Some(amqp_id(&md.msg_id));
    }
    if md.correl_id != [0u8; 24] {
        p.correlation_id = Some(amqp_id(&md.correl_id));
    }
    if !md.reply_to_q.trim().is_empty() {
        p.reply_to = Some(md.reply_to_q.trim().to_string());
    }
    if !md.user_id.trim().is_empty() {
        p.user_id = Some(Binary::from(md.user_id.trim().as_bytes().to_vec()));
    }
    if md.group_id != [0u8; 24]
        && let MessageId::String(g) = amqp_id(&md.group_id)
    {
        p.group_id = Some(g);
    }
    if md.put_time_ms > 0 {
        p.creation_time = Some(Timestamp::from_milliseconds(md.put_time_ms));
    }
    let data = |b: Vec<u8>| Body::Data(vec![Data(Binary::from(b))].into());
    let body = match (md.format.trim() == FMT_STRING, String::from_utf8(payload)) {
        (true, Ok(s)) => Body::Value(AmqpValue(Value::String(s))),
        (_, Ok(s)) => data(s.into_bytes()),
        (_, Err(e)) => data(e.into_bytes()),
    };
    Message::builder()
        .header(header)
        .properties(p)
        .body(body)
        .build()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_keeps_what_maps_both_ways() {
        let md = Md {
            persistence: Persistence::Persistent,
            priority: 7,
            msg_id: id24(b"order-1"),
            correl_id: id24(&[1, 2, 0, 3]),
            reply_to_q: "REPLY.Q".into(),
            format: FMT_STRING.into(),
            ..Md::default()
        };
        let m = to_amqp(&md, b"hello".to_vec());
        let (back, payload) = to_mq(&m).unwrap();
        assert_eq!(payload, b"hello");
        assert_eq!(back.persistence, Persistence::Persistent);
        assert_eq!(back.priority, 7);
        assert_eq!(back.msg_id, md.msg_id);
        assert_eq!(back.correl_id, md.correl_id);
        assert_eq!(back.reply_to_q, "REPLY.Q");
        assert_eq!(back.format, FMT_STRING);
        // Bytes travel as data and come back as bytes.
        let md = Md {
            format: String::new(),
            ..Md::default()
        };
        let m = to_amqp(&md, vec![0xff, 0, 1]);
        assert!(matches!(m.body, Body::Data(_)));
        assert_eq!(to_mq(&m).unwrap().1, vec![0xff, 0, 1]);
    }

    proptest::proptest! {
        #[test]
        fn any_payload_and_ids_round_trip(payload in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..200),
                                          id in proptest::collection::vec(1u8..=255, 1..24)) {
            let md = Md {
                msg_id: id24(&id),
                ..Md::default()
            };
            let m = to_amqp(&md, payload.clone());
            let (back, p) = to_mq(&m).unwrap();
            proptest::prop_assert_eq!(p, payload);
            proptest::prop_assert_eq!(back.msg_id, md.msg_id);
        }
    }
}

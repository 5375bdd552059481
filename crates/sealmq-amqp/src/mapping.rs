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
//! | amqp-value map of JMS's types (a JMS MapMessage) | MQ's JMS map: XML, format `MQSTR`, `mcd.Msd` `jms_map` ([`crate::jms`]) |
//! | amqp-sequence sections of JMS's types (a JMS StreamMessage) | MQ's JMS stream: XML, format `MQSTR`, `mcd.Msd` `jms_stream` |
//! | amqp-value of another type | its AMQP encoding, format `AMQPVAL` |
//! | amqp-sequence sections of other types | the AMQP encoding of a list of their items, format `AMQPSEQ` |
//! | application-properties | message properties (see [`to_property`] for the types) |

use crate::jms::Amqp;
use fe2o3_amqp::types::messaging::{
    AmqpSequence, AmqpValue, ApplicationProperties, Body, Data, Header, Message, MessageId,
    Properties,
};
use fe2o3_amqp::types::primitives::{Binary, OrderedMap, SimpleValue, Timestamp, Value};
use sealmq_engine::{Md, Persistence};
use sealmq_mqi::jmsbody::{JmsBody, MSD_PROPERTY};
use sealmq_mqi::{PropValue, Property};

/// The property IBM's client for JMS keeps a string correlation id in.
const JMS_CID: &str = "jms.Cid";

/// MQ's format name of a character payload.
pub const FMT_STRING: &str = "MQSTR";
/// The format of a payload that is an amqp-value's AMQP encoding (a value other than a
/// string or binary: a JMS MapMessage's map, a list).
pub const FMT_AMQP_VALUE: &str = "AMQPVAL";
/// The format of a payload that is the AMQP encoding of a list of amqp-sequence sections'
/// items (a JMS StreamMessage).
pub const FMT_AMQP_SEQUENCE: &str = "AMQPSEQ";

/// A value's AMQP encoding (the text of a failure: the transfer is rejected with it).
fn encoded(v: &Value) -> Result<Vec<u8>, String> {
    serde_amqp::to_vec(v).map_err(|e| format!("the body could not be kept: {e}"))
}

/// Qpid JMS's message annotation naming a JMS message's type, and its values for a
/// MapMessage and a StreamMessage: without it Qpid JMS takes an amqp-value map or an
/// amqp-sequence for an ObjectMessage.
const JMS_MSG_TYPE: &str = "x-opt-jms-msg-type";
const JMS_MAP: i8 = 2;
const JMS_STREAM: i8 = 4;

/// The value a payload of format AMQPVAL or AMQPSEQ holds; `None` when it is not one (a
/// payload put under that format by another application): then it goes as data.
fn decoded(payload: &[u8]) -> Option<Value> {
    fe2o3_amqp::depth::check_all(payload.iter()).ok()?;
    serde_amqp::from_slice(payload).ok()
}

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

/// The descriptor and payload of a message an AMQP application sent: a string, binary or
/// data sections as they are; a map or amqp-sequence sections of JMS's types as IBM MQ keeps a
/// JMS MapMessage or StreamMessage; another amqp-value or amqp-sequence sections as their AMQP
/// encoding (formats AMQPVAL, AMQPSEQ). All are given back as they came to an AMQP
/// application.
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
    if let Some(ap) = &m.application_properties {
        for (name, v) in ap.0.iter() {
            let value = to_property(v).map_err(|t| {
                format!("application property '{name}': {t} values are not provided")
            })?;
            md.properties.push(Property {
                name: name.clone(),
                value,
            });
        }
        sealmq_mqi::props::check_all(&md.properties)
            .map_err(|(r, d)| format!("{} {}: {d}", r.code(), r.name()))?;
    }
    // A correlation id that is a string is kept whole where IBM's client for JMS keeps its
    // own (jms.Cid), and its first 24 bytes in the descriptor.
    if let Some(MessageId::String(cid)) = m
        .properties
        .as_ref()
        .and_then(|p| p.correlation_id.as_ref())
    {
        sealmq_mqi::props::set(&mut md.properties, JMS_CID, PropValue::String(cid.clone()));
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
            Value::Map(map) if let Some(b) = crate::jms::map_body(map) => jms_payload(&mut md, b),
            other => {
                md.format = FMT_AMQP_VALUE.to_string();
                encoded(other)?
            }
        },
        Body::Sequence(sections) if let Some(b) = crate::jms::stream_body(sections) => {
            jms_payload(&mut md, b)
        }
        Body::Sequence(sections) => {
            md.format = FMT_AMQP_SEQUENCE.to_string();
            let items = sections.iter().flat_map(|s| s.0.iter().cloned()).collect();
            encoded(&Value::List(items))?
        }
        Body::Empty => Vec::new(),
    };
    Ok((md, payload))
}

/// A JMS map or stream body as IBM MQ keeps it: its XML, format MQSTR in UTF-8, and `mcd.Msd`
/// naming its type (in place of one the application set).
fn jms_payload(md: &mut Md, b: JmsBody) -> Vec<u8> {
    md.format = FMT_STRING.to_string();
    md.ccsid = 1208;
    sealmq_mqi::props::set(
        &mut md.properties,
        MSD_PROPERTY,
        PropValue::String(b.msd().into()),
    );
    b.to_xml().into_bytes()
}

/// An application property's value as a message property: unsigned integers widen to the
/// next signed type (ulong above `i64::MAX` is refused), char, symbol and uuid become strings,
/// timestamp becomes long (ms since the epoch); decimals and described values are refused
/// (`Err` names the type).
pub fn to_property(v: &SimpleValue) -> Result<PropValue, &'static str> {
    Ok(match v {
        SimpleValue::Null => PropValue::Null,
        SimpleValue::Bool(b) => PropValue::Bool(*b),
        SimpleValue::Ubyte(n) => PropValue::Short(i16::from(*n)),
        SimpleValue::Ushort(n) => PropValue::Int(i32::from(*n)),
        SimpleValue::Uint(n) => PropValue::Long(i64::from(*n)),
        SimpleValue::Ulong(n) => PropValue::Long(i64::try_from(*n).map_err(|_| "large ulong")?),
        SimpleValue::Byte(n) => PropValue::Byte(*n),
        SimpleValue::Short(n) => PropValue::Short(*n),
        SimpleValue::Int(n) => PropValue::Int(*n),
        SimpleValue::Long(n) => PropValue::Long(*n),
        SimpleValue::Float(f) => PropValue::Float(f.into_inner()),
        SimpleValue::Double(f) => PropValue::Double(f.into_inner()),
        SimpleValue::Char(c) => PropValue::String(c.to_string()),
        SimpleValue::Timestamp(t) => PropValue::Long(t.milliseconds()),
        SimpleValue::Uuid(u) => {
            PropValue::String(u.as_inner().iter().map(|b| format!("{b:02x}")).collect())
        }
        SimpleValue::Binary(b) => PropValue::Bytes(b.to_vec()),
        SimpleValue::String(s) => PropValue::String(s.clone()),
        SimpleValue::Symbol(s) => PropValue::String(s.0.clone()),
        SimpleValue::Decimal32(_) | SimpleValue::Decimal64(_) | SimpleValue::Decimal128(_) => {
            return Err("decimal");
        }
        SimpleValue::Described(_) => return Err("described"),
    })
}

/// A message property as an application property.
pub fn to_simple(v: &PropValue) -> SimpleValue {
    match v {
        PropValue::Null => SimpleValue::Null,
        PropValue::Bool(b) => SimpleValue::Bool(*b),
        PropValue::Byte(n) => SimpleValue::Byte(*n),
        PropValue::Short(n) => SimpleValue::Short(*n),
        PropValue::Int(n) => SimpleValue::Int(*n),
        PropValue::Long(n) => SimpleValue::Long(*n),
        PropValue::Float(f) => SimpleValue::from(*f),
        PropValue::Double(f) => SimpleValue::from(*f),
        PropValue::String(s) => SimpleValue::String(s.clone()),
        PropValue::Bytes(b) => SimpleValue::Binary(Binary::from(b.clone())),
    }
}

/// The map or the sequence a JMS MapMessage or StreamMessage body (as IBM MQ keeps it) is to
/// an AMQP application; `None` when the message is no such one, or its body does not read as
/// one (it then goes by its format, as any other).
fn jms_body(md: &Md, payload: &[u8]) -> Option<Amqp> {
    let Some(PropValue::String(msd)) = sealmq_mqi::props::get(&md.properties, MSD_PROPERTY) else {
        return None;
    };
    match JmsBody::parse(msd, payload)? {
        Ok(b) => Some(crate::jms::amqp_body(b)),
        Err(e) => {
            tracing::debug!("a {msd} body is given as its text: {e}");
            None
        }
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
    if let Some(PropValue::String(cid)) = sealmq_mqi::props::get(&md.properties, JMS_CID) {
        p.correlation_id = Some(MessageId::String(cid.clone()));
    } else if md.correl_id != [0u8; 24] {
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
    let jms = jms_body(md, &payload);
    let body = match (jms, md.format.trim()) {
        (Some(Amqp::Map(m)), _) => Body::Value(AmqpValue(Value::Map(m))),
        (Some(Amqp::Sequence(items)), _) => Body::Sequence(vec![AmqpSequence(items)].into()),
        (None, f) => match f {
            FMT_STRING => match String::from_utf8(payload) {
                Ok(s) => Body::Value(AmqpValue(Value::String(s))),
                Err(e) => data(e.into_bytes()),
            },
            FMT_AMQP_VALUE => match decoded(&payload) {
                Some(v) => Body::Value(AmqpValue(v)),
                None => data(payload),
            },
            FMT_AMQP_SEQUENCE => match decoded(&payload) {
                Some(Value::List(items)) => Body::Sequence(vec![AmqpSequence(items)].into()),
                _ => data(payload),
            },
            _ => data(payload),
        },
    };
    // The JMS type of a map or a sequence, as Qpid JMS marks them.
    let jms_type = match &body {
        Body::Value(AmqpValue(Value::Map(_))) => Some(JMS_MAP),
        Body::Value(AmqpValue(Value::List(_))) | Body::Sequence(_) => Some(JMS_STREAM),
        _ => None,
    };
    let mut m = Message::builder()
        .header(header)
        .properties(p)
        .body(body)
        .build();
    if let Some(t) = jms_type {
        use fe2o3_amqp::types::messaging::{MessageAnnotations, annotations::OwnedKey};
        let key = OwnedKey::Symbol(JMS_MSG_TYPE.into());
        m.message_annotations = Some(
            MessageAnnotations::builder()
                .insert(key, Value::Byte(t))
                .build(),
        );
    }
    let mut map = OrderedMap::new();
    for p in &md.properties {
        // IBM JMS's header folders: AMQP's own sections say what they do (the body's type,
        // the correlation id, persistence, priority, expiry, reply-to).
        if p.name.starts_with("jms.") || p.name.starts_with("mcd.") {
            continue;
        }
        map.insert(p.name.clone(), to_simple(&p.value));
    }
    if !map.is_empty() {
        m.application_properties = Some(ApplicationProperties(map));
    }
    m
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
            properties: vec![
                Property {
                    name: "colour".into(),
                    value: PropValue::String("red".into()),
                },
                Property {
                    name: "n".into(),
                    value: PropValue::Long(-5),
                },
                Property {
                    name: "f".into(),
                    value: PropValue::Double(0.5),
                },
                Property {
                    name: "ok".into(),
                    value: PropValue::Bool(true),
                },
                Property {
                    name: "raw".into(),
                    value: PropValue::Bytes(vec![1, 2]),
                },
            ],
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
        assert_eq!(back.properties, md.properties);
        // Bytes travel as data and come back as bytes.
        let md = Md {
            format: String::new(),
            ..Md::default()
        };
        let m = to_amqp(&md, vec![0xff, 0, 1]);
        assert!(matches!(m.body, Body::Data(_)));
        assert_eq!(to_mq(&m).unwrap().1, vec![0xff, 0, 1]);
    }

    /// A string correlation id is kept whole where IBM's JMS client keeps its own (jms.Cid),
    /// its first 24 bytes in the descriptor; IBM JMS's header folders are not given to AMQP
    /// as application properties.
    #[test]
    fn a_string_correlation_id_is_kept_whole_as_ibm_jms_keeps_it() {
        let cid = "a-correlation-id-longer-than-24-bytes";
        let sent: Message<Body<Value>> = Message::builder()
            .properties(Properties {
                correlation_id: Some(MessageId::String(cid.into())),
                ..Properties::default()
            })
            .body(Body::Value(AmqpValue(Value::String("x".into()))))
            .build();
        let (mut md, payload) = to_mq(&sent).unwrap();
        assert_eq!(&md.correl_id, &cid.as_bytes()[..24]);
        assert_eq!(md.property(JMS_CID), Some(&PropValue::String(cid.into())));
        md.set_property("mcd.Msd", PropValue::String("jms_text".into()))
            .unwrap();
        md.set_property("jms.Dst", PropValue::String("queue:///Q".into()))
            .unwrap();
        let back = to_amqp(&md, payload);
        let p = back.properties.expect("properties");
        assert_eq!(p.correlation_id, Some(MessageId::String(cid.into())));
        assert!(back.application_properties.is_none());
    }

    #[test]
    fn application_properties_widen_or_are_refused() {
        assert_eq!(
            to_property(&SimpleValue::Uint(u32::MAX)),
            Ok(PropValue::Long(4294967295))
        );
        assert_eq!(
            to_property(&SimpleValue::Ubyte(200)),
            Ok(PropValue::Short(200))
        );
        assert!(to_property(&SimpleValue::Ulong(u64::MAX)).is_err());
        let mut m = to_amqp(&Md::default(), b"x".to_vec());
        let mut map = OrderedMap::new();
        map.insert("JMSType".to_string(), SimpleValue::from("x"));
        m.application_properties = Some(ApplicationProperties(map));
        assert!(to_mq(&m).unwrap_err().contains("2442"));
    }

    /// A JMS MapMessage's map and a StreamMessage's sequence come back as they went; a
    /// payload put under their formats by another application that does not decode (or nests
    /// too deeply) goes as data.
    #[test]
    fn maps_and_sequences_are_kept_and_bad_ones_go_as_data() {
        let mut map = OrderedMap::new();
        map.insert(Value::String("name".into()), Value::String("x".into()));
        map.insert(Value::String("n".into()), Value::Int(42));
        map.insert(Value::String("ok".into()), Value::Bool(true));
        let sent: Message<Body<Value>> = Message::builder()
            .body(Body::Value(AmqpValue(Value::Map(map.clone()))))
            .build();
        // Of JMS's types: kept as IBM MQ keeps a JMS MapMessage.
        let (md, payload) = to_mq(&sent).unwrap();
        assert_eq!(md.format, FMT_STRING);
        assert_eq!(
            md.property(MSD_PROPERTY),
            Some(&PropValue::String("jms_map".into()))
        );
        assert_eq!(
            String::from_utf8_lossy(&payload),
            "<map><elt name=\"name\">x</elt><elt name=\"n\" dt='i4'>42</elt>\
             <elt name=\"ok\" dt='boolean'>1</elt></map>"
        );
        let back = to_amqp(&md, payload);
        assert_eq!(back.body, sent.body);
        assert!(
            back.application_properties.is_none(),
            "mcd.Msd is said by the body's section"
        );
        // Marked a MapMessage for Qpid JMS.
        let a = back.message_annotations.expect("annotations");
        assert_eq!(a.0.values().next(), Some(&Value::Byte(JMS_MAP)));
        // Of other types: kept in its AMQP encoding, given back the same.
        map.insert(Value::String("u".into()), Value::Uint(7));
        let odd: Message<Body<Value>> = Message::builder()
            .body(Body::Value(AmqpValue(Value::Map(map))))
            .build();
        let (md, payload) = to_mq(&odd).unwrap();
        assert_eq!(md.format, FMT_AMQP_VALUE);
        assert_eq!(to_amqp(&md, payload).body, odd.body);
        let items = vec![Value::Long(1), Value::String("two".into())];
        let seq: Message<Body<Value>> = Message::builder()
            .body(Body::Sequence(vec![AmqpSequence(items.clone())].into()))
            .build();
        let (md, payload) = to_mq(&seq).unwrap();
        assert_eq!(md.format, FMT_STRING);
        assert_eq!(
            String::from_utf8_lossy(&payload),
            "<stream><elt dt='i8'>1</elt><elt>two</elt></stream>"
        );
        assert_eq!(to_amqp(&md, payload).body, seq.body);
        let mut odd_items = items;
        odd_items.push(Value::Timestamp(Timestamp::from_milliseconds(5)));
        let seq: Message<Body<Value>> = Message::builder()
            .body(Body::Sequence(vec![AmqpSequence(odd_items)].into()))
            .build();
        let (md, payload) = to_mq(&seq).unwrap();
        assert_eq!(md.format, FMT_AMQP_SEQUENCE);
        assert_eq!(to_amqp(&md, payload).body, seq.body);
        // A jms_map body that does not read as one goes as its text.
        let mut md = Md {
            format: FMT_STRING.into(),
            ..Md::default()
        };
        md.set_property(MSD_PROPERTY, PropValue::String("jms_map".into()))
            .unwrap();
        let m = to_amqp(&md, b"<map><elt>".to_vec());
        assert_eq!(
            m.body,
            Body::Value(AmqpValue(Value::String("<map><elt>".into())))
        );
        // Lists nested 10,000 deep (list8, count 1 each): refused before decoding.
        let deep: Vec<u8> = [0xc0u8, 0x00, 0x01]
            .into_iter()
            .cycle()
            .take(30_000)
            .collect();
        for bad in [vec![0xff, 0x00], deep] {
            let md = Md {
                format: FMT_AMQP_VALUE.into(),
                ..Md::default()
            };
            assert!(to_amqp(&md, bad.clone()).body.is_data());
        }
    }

    /// Lists, maps and arrays whose size is smaller than their own header, and maps of an odd
    /// count: serde_amqp subtracted unchecked and a debug build panicked ("attempt to
    /// subtract with overflow", found by the property test below). They are sent as data.
    #[test]
    fn compounds_shorter_than_their_header_are_sent_as_data() {
        for payload in [
            &[0xc1, 0x00, 0x00][..],
            &[0xc0, 0x00, 0x00],
            &[0xd1, 0, 0, 0, 3, 0, 0, 0, 0],
            &[0xd0, 0, 0, 0, 0, 0, 0, 0, 0],
            &[0xe0, 0x01, 0x01, 0x50, 0x07],
            &[0xf0, 0, 0, 0, 4, 0, 0, 0, 1, 0x50, 0x07],
            // Nested: a described value whose value is a short map.
            &[0x00, 0x53, 0x77, 0xc1, 0x00, 0x00],
            // A map of one item (a key without its value).
            &[0xc1, 0x02, 0x01, 0x40],
            &[0xd1, 0, 0, 0, 5, 0, 0, 0, 1, 0x40],
        ] {
            assert_eq!(
                fe2o3_amqp::depth::check_all(payload.iter()),
                Err(fe2o3_amqp::depth::BAD_COMPOUND),
                "{payload:x?}"
            );
            for f in [FMT_AMQP_VALUE, FMT_AMQP_SEQUENCE] {
                let md = Md {
                    format: f.into(),
                    ..Md::default()
                };
                let _ = to_amqp(&md, payload.to_vec());
            }
        }
        // A well-formed empty map and list still pass.
        assert_eq!(fe2o3_amqp::depth::check_all([0xc1, 1, 0].iter()), Ok(()));
        assert_eq!(fe2o3_amqp::depth::check_all([0xc0, 1, 0].iter()), Ok(()));
    }

    proptest::proptest! {
        /// Whatever another application put under the AMQP formats, it is sent without a
        /// panic.
        #[test]
        fn any_payload_under_the_amqp_formats_is_sent(payload in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..512)) {
            for f in [FMT_AMQP_VALUE, FMT_AMQP_SEQUENCE] {
                let md = Md {
                    format: f.into(),
                    ..Md::default()
                };
                let _ = to_amqp(&md, payload.clone());
            }
        }

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

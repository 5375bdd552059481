//! AMQP map and list bodies ↔ JMS MapMessage and StreamMessage bodies as IBM MQ keeps them
//! ([`sealmq_mqi::jmsbody`]), so that an AMQP JMS application (Qpid JMS) and an IBM MQ one
//! read each other's MapMessages and StreamMessages (docs/amqp.md, "Message mapping").
//!
//! Only what JMS can hold is turned into MQ's form: a map whose keys are strings and whose
//! values are JMS's types (null, boolean, byte, short, char, int, long, float, double, string,
//! binary), or a sequence of such values. Anything else (unsigned integers, symbols,
//! timestamps, nested maps and lists…) stays in its AMQP encoding, as before, so that nothing
//! an AMQP application sends is changed on its way back to AMQP.

use fe2o3_amqp::types::messaging::AmqpSequence;
use fe2o3_amqp::types::primitives::{OrderedMap, Value};
use sealmq_mqi::jmsbody::{JmsBody, JmsValue};

/// A JMS value for an AMQP one that JMS can hold.
fn jms_value(v: &Value) -> Option<JmsValue> {
    Some(match v {
        Value::Null => JmsValue::Null,
        Value::Bool(b) => JmsValue::Bool(*b),
        Value::Byte(n) => JmsValue::Byte(*n),
        Value::Short(n) => JmsValue::Short(*n),
        Value::Char(c) => JmsValue::Char(*c),
        Value::Int(n) => JmsValue::Int(*n),
        Value::Long(n) => JmsValue::Long(*n),
        Value::Float(f) => JmsValue::Float(f.0),
        Value::Double(f) => JmsValue::Double(f.0),
        Value::String(s) => JmsValue::String(s.clone()),
        Value::Binary(b) => JmsValue::Bytes(b.to_vec()),
        _ => return None,
    })
}

fn amqp_value(v: JmsValue) -> Value {
    match v {
        JmsValue::Null => Value::Null,
        JmsValue::Bool(b) => Value::Bool(b),
        JmsValue::Byte(n) => Value::Byte(n),
        JmsValue::Short(n) => Value::Short(n),
        JmsValue::Char(c) => Value::Char(c),
        JmsValue::Int(n) => Value::Int(n),
        JmsValue::Long(n) => Value::Long(n),
        JmsValue::Float(f) => Value::Float(f.into()),
        JmsValue::Double(f) => Value::Double(f.into()),
        JmsValue::String(s) => Value::String(s),
        JmsValue::Bytes(b) => Value::Binary(b.into()),
    }
}

/// A MapMessage body for an amqp-value map, when JMS can hold it.
pub fn map_body(m: &OrderedMap<Value, Value>) -> Option<JmsBody> {
    m.iter()
        .map(|(k, v)| match k {
            Value::String(name) => Some((name.clone(), jms_value(v)?)),
            _ => None,
        })
        .collect::<Option<Vec<_>>>()
        .map(JmsBody::Map)
}

/// A StreamMessage body for amqp-sequence sections, when JMS can hold their items.
pub fn stream_body(sections: &[AmqpSequence<Value>]) -> Option<JmsBody> {
    sections
        .iter()
        .flat_map(|s| s.0.iter())
        .map(jms_value)
        .collect::<Option<Vec<_>>>()
        .map(JmsBody::Stream)
}

/// What an AMQP application gets for a MapMessage or StreamMessage body: an amqp-value map,
/// or the items of one amqp-sequence.
pub enum Amqp {
    Map(OrderedMap<Value, Value>),
    Sequence(Vec<Value>),
}

pub fn amqp_body(b: JmsBody) -> Amqp {
    match b {
        JmsBody::Map(entries) => {
            let mut m = OrderedMap::new();
            for (k, v) in entries {
                m.insert(Value::String(k), amqp_value(v));
            }
            Amqp::Map(m)
        }
        JmsBody::Stream(items) => Amqp::Sequence(items.into_iter().map(amqp_value).collect()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_jms_holds_converts_and_what_it_does_not_stays_amqp() {
        let mut m = OrderedMap::new();
        m.insert(Value::String("c".into()), Value::Char('x'));
        m.insert(Value::String("f".into()), Value::Float(1.5f32.into()));
        m.insert(
            Value::String("b".into()),
            Value::Binary(vec![1u8, 2].into()),
        );
        let body = map_body(&m).expect("a JMS map");
        assert!(matches!(amqp_body(body), Amqp::Map(back) if back == m));
        for odd in [
            Value::Uint(1),
            Value::Symbol("s".into()),
            Value::List(vec![]),
            Value::Map(OrderedMap::new()),
        ] {
            let mut m = OrderedMap::new();
            m.insert(Value::String("k".into()), odd.clone());
            assert!(map_body(&m).is_none(), "{odd:?}");
            assert!(stream_body(&[AmqpSequence(vec![odd.clone()])]).is_none());
        }
        let mut m = OrderedMap::new();
        m.insert(Value::Int(1), Value::Int(1));
        assert!(map_body(&m).is_none(), "a key that is not a string");
    }
}

//! Message properties (SPEC §1; docs/storage.md "Message properties"): typed name/value pairs
//! an application puts with a message and the queue manager keeps with it through the log,
//! restarts and channels. AMQP application properties and JMS properties map onto them
//! (docs/amqp.md), and selectors test them ([`crate::selector`]).
//!
//! Names follow MQ's rules: 1 to 4,095 bytes, no control characters, and not beginning with
//! `JMS` or `mq` in any case (reserved for MQ and JMS header fields).

use sealmq_types::ReasonCode;
use sealmq_types::codec::{Dec, DecodeError, Enc, Result};
use std::fmt;

/// The longest property name, in bytes (MQ's MQ_MAX_PROPERTY_NAME_LENGTH).
pub const MAX_NAME: usize = 4095;
/// The most properties one message carries.
pub const MAX_COUNT: usize = 4096;

/// A property's value: MQ's property types (MQTYPE_*), which are also JMS's.
#[derive(Debug, Clone)]
pub enum PropValue {
    Null,
    Bool(bool),
    Byte(i8),
    Short(i16),
    Int(i32),
    Long(i64),
    Float(f32),
    Double(f64),
    String(String),
    Bytes(Vec<u8>),
}

impl PartialEq for PropValue {
    fn eq(&self, other: &Self) -> bool {
        use PropValue::*;
        match (self, other) {
            (Null, Null) => true,
            (Bool(a), Bool(b)) => a == b,
            (Byte(a), Byte(b)) => a == b,
            (Short(a), Short(b)) => a == b,
            (Int(a), Int(b)) => a == b,
            (Long(a), Long(b)) => a == b,
            // Bit patterns, so that a stored NaN equals itself after a round trip.
            (Float(a), Float(b)) => a.to_bits() == b.to_bits(),
            (Double(a), Double(b)) => a.to_bits() == b.to_bits(),
            (String(a), String(b)) => a == b,
            (Bytes(a), Bytes(b)) => a == b,
            _ => false,
        }
    }
}
impl Eq for PropValue {}

impl PropValue {
    /// MQ's type name (as `--property name:TYPE=value` takes it and `browse` shows it).
    pub fn type_name(&self) -> &'static str {
        match self {
            PropValue::Null => "null",
            PropValue::Bool(_) => "boolean",
            PropValue::Byte(_) => "byte",
            PropValue::Short(_) => "short",
            PropValue::Int(_) => "int",
            PropValue::Long(_) => "long",
            PropValue::Float(_) => "float",
            PropValue::Double(_) => "double",
            PropValue::String(_) => "string",
            PropValue::Bytes(_) => "bytes",
        }
    }

    fn tag(&self) -> u8 {
        match self {
            PropValue::Null => 0,
            PropValue::Bool(_) => 1,
            PropValue::Byte(_) => 2,
            PropValue::Short(_) => 3,
            PropValue::Int(_) => 4,
            PropValue::Long(_) => 5,
            PropValue::Float(_) => 6,
            PropValue::Double(_) => 7,
            PropValue::String(_) => 8,
            PropValue::Bytes(_) => 9,
        }
    }

    /// Parses `text` as a value of the named type (`string` when none is named).
    pub fn parse(type_name: &str, text: &str) -> std::result::Result<PropValue, String> {
        let bad = |t: &str| format!("'{text}' is not a {t} value");
        Ok(match type_name.to_ascii_lowercase().as_str() {
            "" | "string" => PropValue::String(text.to_string()),
            "null" => PropValue::Null,
            "boolean" | "bool" => match text.to_ascii_lowercase().as_str() {
                "true" => PropValue::Bool(true),
                "false" => PropValue::Bool(false),
                _ => return Err(bad("boolean")),
            },
            "byte" => PropValue::Byte(text.parse().map_err(|_| bad("byte"))?),
            "short" => PropValue::Short(text.parse().map_err(|_| bad("short"))?),
            "int" => PropValue::Int(text.parse().map_err(|_| bad("int"))?),
            "long" => PropValue::Long(text.parse().map_err(|_| bad("long"))?),
            "float" => PropValue::Float(text.parse().map_err(|_| bad("float"))?),
            "double" => PropValue::Double(text.parse().map_err(|_| bad("double"))?),
            "bytes" => PropValue::Bytes(hex_decode(text).ok_or_else(|| bad("hex bytes"))?),
            t => {
                return Err(format!(
                    "unknown property type '{t}' (boolean, byte, short, int, long, float, \
                     double, string, bytes or null)"
                ));
            }
        })
    }

    /// The encoded size of the value.
    fn encoded_len(&self) -> usize {
        1 + match self {
            PropValue::Null => 0,
            PropValue::Bool(_) | PropValue::Byte(_) => 1,
            PropValue::Short(_) => 2,
            PropValue::Int(_) | PropValue::Float(_) => 4,
            PropValue::Long(_) | PropValue::Double(_) => 8,
            PropValue::String(s) => 4 + s.len(),
            PropValue::Bytes(b) => 4 + b.len(),
        }
    }
}

impl fmt::Display for PropValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PropValue::Null => write!(f, "NULL"),
            PropValue::Bool(v) => write!(f, "{v}"),
            PropValue::Byte(v) => write!(f, "{v}"),
            PropValue::Short(v) => write!(f, "{v}"),
            PropValue::Int(v) => write!(f, "{v}"),
            PropValue::Long(v) => write!(f, "{v}"),
            PropValue::Float(v) => write!(f, "{v}"),
            PropValue::Double(v) => write!(f, "{v}"),
            PropValue::String(v) => write!(f, "{v}"),
            PropValue::Bytes(v) => {
                for b in v {
                    write!(f, "{b:02X}")?;
                }
                Ok(())
            }
        }
    }
}

fn hex_decode(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) || !s.is_ascii() {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).ok())
        .collect()
}

/// One property.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Property {
    pub name: String,
    pub value: PropValue,
}

/// Whether `name` may name a property: the reason it may not, and what to do.
pub fn check_name(name: &str) -> std::result::Result<(), (ReasonCode, String)> {
    if name.len() > MAX_NAME {
        return Err((
            ReasonCode::PropertyNameTooBig,
            format!(
                "a property name is {} bytes; at most {MAX_NAME}",
                name.len()
            ),
        ));
    }
    if name.is_empty() || name.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Err((
            ReasonCode::PropertyNameError,
            format!("property name '{name}' is empty or holds spaces or control characters"),
        ));
    }
    let lower = name.to_ascii_lowercase();
    if name.starts_with("JMS") || lower.starts_with("mq") {
        return Err((
            ReasonCode::PropertyNameError,
            format!("property name '{name}': names beginning JMS or mq are reserved"),
        ));
    }
    Ok(())
}

/// Checks a whole set: names valid and unique, at most [`MAX_COUNT`].
pub fn check_all(props: &[Property]) -> std::result::Result<(), (ReasonCode, String)> {
    if props.len() > MAX_COUNT {
        return Err((
            ReasonCode::PropertiesTooBig,
            format!(
                "{} properties; a message carries at most {MAX_COUNT}",
                props.len()
            ),
        ));
    }
    let mut seen = std::collections::HashSet::with_capacity(props.len());
    for p in props {
        check_name(&p.name)?;
        if !seen.insert(p.name.as_str()) {
            return Err((
                ReasonCode::PropertyNameError,
                format!("property '{}' is given twice", p.name),
            ));
        }
    }
    Ok(())
}

/// The value of property `name`, if the message has one.
pub fn get<'a>(props: &'a [Property], name: &str) -> Option<&'a PropValue> {
    props.iter().find(|p| p.name == name).map(|p| &p.value)
}

/// Sets property `name` (replacing a value it had).
pub fn set(props: &mut Vec<Property>, name: &str, value: PropValue) {
    match props.iter_mut().find(|p| p.name == name) {
        Some(p) => p.value = value,
        None => props.push(Property {
            name: name.to_string(),
            value,
        }),
    }
}

/// Parses `name=value` or `name:TYPE=value` (as `sealmq put --property` takes it).
pub fn parse_assignment(text: &str) -> std::result::Result<Property, String> {
    let (lhs, value) = text
        .split_once('=')
        .ok_or_else(|| format!("'{text}': give a property as name=value or name:TYPE=value"))?;
    let (name, ty) = lhs.split_once(':').unwrap_or((lhs, ""));
    check_name(name).map_err(|(r, d)| format!("{} {}: {d}", r.code(), r.name()))?;
    Ok(Property {
        name: name.to_string(),
        value: PropValue::parse(ty, value)?,
    })
}

/// The encoded size of a set (counted against MAXMSGL with the payload).
pub fn encoded_len(props: &[Property]) -> usize {
    if props.is_empty() {
        return 0;
    }
    4 + props
        .iter()
        .map(|p| 4 + p.name.len() + p.value.encoded_len())
        .sum::<usize>()
}

pub(crate) fn encode(props: &[Property], e: &mut Enc) {
    e.u32(props.len() as u32);
    for p in props {
        e.str(&p.name).u8(p.value.tag());
        match &p.value {
            PropValue::Null => {}
            PropValue::Bool(v) => {
                e.bool(*v);
            }
            PropValue::Byte(v) => {
                e.u8(*v as u8);
            }
            PropValue::Short(v) => {
                e.u16(*v as u16);
            }
            PropValue::Int(v) => {
                e.u32(*v as u32);
            }
            PropValue::Long(v) => {
                e.i64(*v);
            }
            PropValue::Float(v) => {
                e.u32(v.to_bits());
            }
            PropValue::Double(v) => {
                e.u64(v.to_bits());
            }
            PropValue::String(v) => {
                e.str(v);
            }
            PropValue::Bytes(v) => {
                e.bytes(v);
            }
        }
    }
}

pub(crate) fn decode(d: &mut Dec<'_>) -> Result<Vec<Property>> {
    let n = d.u32()? as usize;
    if n > MAX_COUNT {
        return Err(DecodeError(format!(
            "message properties: {n} properties (at most {MAX_COUNT})"
        )));
    }
    let mut out = Vec::with_capacity(n.min(64));
    for _ in 0..n {
        let name = d.str()?;
        let value = match d.u8()? {
            0 => PropValue::Null,
            1 => PropValue::Bool(d.bool()?),
            2 => PropValue::Byte(d.u8()? as i8),
            3 => PropValue::Short(d.u16()? as i16),
            4 => PropValue::Int(d.u32()? as i32),
            5 => PropValue::Long(d.i64()?),
            6 => PropValue::Float(f32::from_bits(d.u32()?)),
            7 => PropValue::Double(f64::from_bits(d.u64()?)),
            8 => PropValue::String(d.str()?),
            9 => PropValue::Bytes(d.bytes()?.to_vec()),
            t => {
                return Err(DecodeError(format!(
                    "message property '{name}': unknown type {t}"
                )));
            }
        };
        out.push(Property { name, value });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_mqs_rules() {
        assert!(check_name("colour").is_ok());
        assert!(check_name("a.b_c$1").is_ok());
        assert_eq!(check_name("").unwrap_err().0, ReasonCode::PropertyNameError);
        assert_eq!(
            check_name("JMSType").unwrap_err().0,
            ReasonCode::PropertyNameError
        );
        assert_eq!(
            check_name("Mq_x").unwrap_err().0,
            ReasonCode::PropertyNameError
        );
        assert_eq!(
            check_name("a b").unwrap_err().0,
            ReasonCode::PropertyNameError
        );
        let long = "x".repeat(MAX_NAME + 1);
        assert_eq!(
            check_name(&long).unwrap_err().0,
            ReasonCode::PropertyNameTooBig
        );
        let twice = vec![
            Property {
                name: "a".into(),
                value: PropValue::Null,
            },
            Property {
                name: "a".into(),
                value: PropValue::Int(1),
            },
        ];
        assert!(check_all(&twice).is_err());
    }

    #[test]
    fn assignments_parse() {
        let p = parse_assignment("colour=red=ish").unwrap();
        assert_eq!(
            (p.name.as_str(), p.value),
            ("colour", PropValue::String("red=ish".into()))
        );
        let p = parse_assignment("n:long=42").unwrap();
        assert_eq!(p.value, PropValue::Long(42));
        assert!(parse_assignment("novalue").is_err());
        assert!(parse_assignment("JMSX=1").is_err());
        assert!(parse_assignment("n:int=x").is_err());
    }

    #[test]
    fn values_parse_by_type() {
        assert_eq!(
            PropValue::parse("", "x").unwrap(),
            PropValue::String("x".into())
        );
        assert_eq!(PropValue::parse("int", "-5").unwrap(), PropValue::Int(-5));
        assert_eq!(
            PropValue::parse("boolean", "TRUE").unwrap(),
            PropValue::Bool(true)
        );
        assert_eq!(
            PropValue::parse("bytes", "0aff").unwrap(),
            PropValue::Bytes(vec![10, 255])
        );
        assert!(PropValue::parse("byte", "300").is_err());
        assert!(PropValue::parse("bytes", "abc").is_err());
        assert!(PropValue::parse("decimal", "1").is_err());
    }
}

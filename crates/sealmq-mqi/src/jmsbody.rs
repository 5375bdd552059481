//! The bodies of JMS MapMessages and StreamMessages as IBM MQ keeps them (docs/mq-clients.md,
//! "Message types"): the message's `mcd.Msd` property names the type (`jms_map`,
//! `jms_stream`) and the body is XML in UTF-8, one `elt` element per entry with its type in a
//! `dt` attribute:
//!
//! ```text
//! <map><elt name="n" dt='i4'>7</elt><elt name="s">text</elt><elt name="z" xsi:nil='true'></elt></map>
//! <stream><elt dt='boolean'>1</elt><elt dt='bin.hex'>00ff</elt></stream>
//! ```
//!
//! Types are MQ's property types plus `char`: `boolean` (1 or 0), `i1`, `i2`, `i4`, `i8`, `r4`,
//! `r8` (Java's `NaN` and `Infinity` included), `char`, `bin.hex`; a string has no `dt`. This
//! is the form IBM's client for JMS writes and reads (observed: a map and a stream with every
//! type put by it and read back from the queue). The AMQP front end turns AMQP map and list
//! bodies into it and back, so that an IBM JMS application and an AMQP JMS one read each
//! other's MapMessages and StreamMessages.

use quick_xml::events::{BytesStart, Event};
use std::fmt::Write as _;

/// `mcd.Msd` of a MapMessage.
pub const MSD_MAP: &str = "jms_map";
/// `mcd.Msd` of a StreamMessage.
pub const MSD_STREAM: &str = "jms_stream";
/// The property that names a JMS message's body type.
pub const MSD_PROPERTY: &str = "mcd.Msd";

/// One entry's value.
#[derive(Debug, Clone, PartialEq)]
pub enum JmsValue {
    Null,
    Bool(bool),
    Byte(i8),
    Short(i16),
    Char(char),
    Int(i32),
    Long(i64),
    Float(f32),
    Double(f64),
    String(String),
    Bytes(Vec<u8>),
}

/// A message property's value as a JMS map entry's (the same types, but for `char`).
impl From<crate::props::PropValue> for JmsValue {
    fn from(v: crate::props::PropValue) -> JmsValue {
        use crate::props::PropValue as P;
        match v {
            P::Null => JmsValue::Null,
            P::Bool(b) => JmsValue::Bool(b),
            P::Byte(n) => JmsValue::Byte(n),
            P::Short(n) => JmsValue::Short(n),
            P::Int(n) => JmsValue::Int(n),
            P::Long(n) => JmsValue::Long(n),
            P::Float(f) => JmsValue::Float(f),
            P::Double(f) => JmsValue::Double(f),
            P::String(s) => JmsValue::String(s),
            P::Bytes(b) => JmsValue::Bytes(b),
        }
    }
}

/// A JMS value as a message property's: a `char`, which properties do not have, as a string.
impl From<JmsValue> for crate::props::PropValue {
    fn from(v: JmsValue) -> crate::props::PropValue {
        use crate::props::PropValue as P;
        match v {
            JmsValue::Null => P::Null,
            JmsValue::Bool(b) => P::Bool(b),
            JmsValue::Byte(n) => P::Byte(n),
            JmsValue::Short(n) => P::Short(n),
            JmsValue::Char(c) => P::String(c.to_string()),
            JmsValue::Int(n) => P::Int(n),
            JmsValue::Long(n) => P::Long(n),
            JmsValue::Float(f) => P::Float(f),
            JmsValue::Double(f) => P::Double(f),
            JmsValue::String(s) => P::String(s),
            JmsValue::Bytes(b) => P::Bytes(b),
        }
    }
}

/// A MapMessage's or a StreamMessage's body.
#[derive(Debug, Clone, PartialEq)]
pub enum JmsBody {
    /// Names and values, in their order.
    Map(Vec<(String, JmsValue)>),
    Stream(Vec<JmsValue>),
}

impl JmsBody {
    /// The `mcd.Msd` that names this body's type.
    pub fn msd(&self) -> &'static str {
        match self {
            JmsBody::Map(_) => MSD_MAP,
            JmsBody::Stream(_) => MSD_STREAM,
        }
    }

    /// The body as XML.
    pub fn to_xml(&self) -> String {
        let mut out = String::new();
        match self {
            JmsBody::Map(entries) => {
                out.push_str("<map>");
                for (name, v) in entries {
                    // A name as IBM's client writes and reads it: as it is (no entities), but
                    // for a quotation mark, which IBM's client cannot carry in a name at all.
                    out.push_str("<elt name=\"");
                    out.push_str(&name.replace('"', "&quot;"));
                    out.push('"');
                    element_into(&mut out, v);
                }
                out.push_str("</map>");
            }
            JmsBody::Stream(items) => {
                out.push_str("<stream>");
                for v in items {
                    out.push_str("<elt");
                    element_into(&mut out, v);
                }
                out.push_str("</stream>");
            }
        }
        out
    }

    /// The body of a message whose `mcd.Msd` is `msd`; `None` when `msd` names no map or
    /// stream, an error when the XML is not one.
    pub fn parse(msd: &str, xml: &[u8]) -> Option<Result<JmsBody, String>> {
        let map = match msd {
            MSD_MAP => true,
            MSD_STREAM => false,
            _ => return None,
        };
        Some(
            std::str::from_utf8(xml)
                .map_err(|_| format!("a {msd} body is not UTF-8"))
                .and_then(|s| parse_xml(s, map)),
        )
    }
}

/// The attributes after the name, then the text and the end tag, of one element.
fn element_into(out: &mut String, v: &JmsValue) {
    let (dt, text) = typed_text(v);
    match text {
        None => out.push_str(" xsi:nil='true'></elt>"),
        Some(t) => {
            if !dt.is_empty() {
                let _ = write!(out, " dt='{dt}'");
            }
            out.push('>');
            escape_into(out, &t);
            out.push_str("</elt>");
        }
    }
}

fn escape_into(out: &mut String, s: &str) {
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
}

/// A value's `dt` (empty for a string) and text (`None` for null).
pub fn typed_text(v: &JmsValue) -> (&'static str, Option<String>) {
    match v {
        JmsValue::Null => ("", None),
        JmsValue::Bool(b) => ("boolean", Some(if *b { "1" } else { "0" }.into())),
        JmsValue::Byte(n) => ("i1", Some(n.to_string())),
        JmsValue::Short(n) => ("i2", Some(n.to_string())),
        JmsValue::Char(c) => ("char", Some(c.to_string())),
        JmsValue::Int(n) => ("i4", Some(n.to_string())),
        JmsValue::Long(n) => ("i8", Some(n.to_string())),
        JmsValue::Float(f) => ("r4", Some(real_text(*f))),
        JmsValue::Double(f) => ("r8", Some(real_text(*f))),
        JmsValue::String(s) => ("", Some(s.clone())),
        JmsValue::Bytes(b) => (
            "bin.hex",
            Some(b.iter().map(|x| format!("{x:02x}")).collect()),
        ),
    }
}

/// A floating-point number as Java writes and reads it: `NaN`, `Infinity`, `-Infinity`, and
/// an exponent for the very large and the very small (Rust's `Display` writes every digit),
/// its mantissa with a point as Java's (`1.0E300`). Rust writes the shortest digits that read
/// back the same in the number's own width, in both forms.
fn real_text<F: Copy + Into<f64> + std::fmt::Display + std::fmt::UpperExp>(f: F) -> String {
    let x: f64 = f.into();
    if x.is_nan() {
        return "NaN".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    if x == 0.0 || (1e-3..1e7).contains(&x.abs()) {
        return f.to_string();
    }
    let e = format!("{f:E}");
    match e.split_once('E') {
        Some((m, exp)) if !m.contains('.') => format!("{m}.0E{exp}"),
        _ => e,
    }
}

/// The value an element's `dt` and text stand for.
pub fn typed_value(dt: &str, text: Option<&str>) -> Result<JmsValue, String> {
    let Some(t) = text else {
        return Ok(JmsValue::Null);
    };
    let bad = |what: &str| format!("'{t}' is not {what}");
    let n = t.trim();
    Ok(match dt {
        "" | "string" => JmsValue::String(t.to_string()),
        "boolean" => JmsValue::Bool(match n {
            "1" | "true" => true,
            "0" | "false" => false,
            _ => return Err(bad("a boolean")),
        }),
        "i1" => JmsValue::Byte(n.parse().map_err(|_| bad("an i1"))?),
        "i2" => JmsValue::Short(n.parse().map_err(|_| bad("an i2"))?),
        "i4" | "int" => JmsValue::Int(n.parse().map_err(|_| bad("an i4"))?),
        "i8" => JmsValue::Long(n.parse().map_err(|_| bad("an i8"))?),
        "r4" => JmsValue::Float(real(n).ok_or_else(|| bad("an r4"))?),
        "r8" => JmsValue::Double(real(n).ok_or_else(|| bad("an r8"))?),
        "char" => {
            let mut cs = t.chars();
            match (cs.next(), cs.next()) {
                (Some(c), None) => JmsValue::Char(c),
                _ => return Err(bad("one character")),
            }
        }
        "bin.hex" => JmsValue::Bytes(hex(n).ok_or_else(|| bad("bin.hex"))?),
        other => return Err(format!("unknown type dt='{other}'")),
    })
}

/// A number as Java writes it (and as Rust does), read in its own width.
fn real<F: std::str::FromStr + From<f32>>(t: &str) -> Option<F> {
    match t {
        "NaN" => Some(F::from(f32::NAN)),
        "Infinity" | "+Infinity" => Some(F::from(f32::INFINITY)),
        "-Infinity" => Some(F::from(f32::NEG_INFINITY)),
        _ if t
            .bytes()
            .all(|b| b.is_ascii_digit() || b"+-.eE".contains(&b)) =>
        {
            t.parse().ok()
        }
        _ => None,
    }
}

fn hex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

/// An `elt` open: its name (maps), type and whether it is nil.
struct Open {
    name: String,
    dt: String,
    nil: bool,
    text: Option<String>,
}

fn open(e: &BytesStart<'_>, map: bool) -> Result<Open, String> {
    if e.name().as_ref() != b"elt" {
        return Err(format!(
            "an element <{}> where <elt> belongs",
            String::from_utf8_lossy(e.name().as_ref())
        ));
    }
    let mut o = Open {
        name: String::new(),
        dt: String::new(),
        nil: false,
        text: None,
    };
    let mut named = false;
    for a in e.attributes() {
        let a = a.map_err(|err| format!("an attribute is not well formed: {err}"))?;
        if a.key.as_ref() == b"name" {
            // As IBM's client writes it: as it is, entities and all (see `to_xml`).
            o.name = String::from_utf8_lossy(&a.value).replace("&quot;", "\"");
            named = true;
            continue;
        }
        let v = a
            .unescape_value()
            .map_err(|err| format!("an attribute is not well formed: {err}"))?;
        match a.key.as_ref() {
            b"dt" => o.dt = v.into_owned(),
            b"xsi:nil" => o.nil = v == "true",
            _ => {}
        }
    }
    if map && !named {
        return Err("a map entry without a name".into());
    }
    Ok(o)
}

fn parse_xml(s: &str, map: bool) -> Result<JmsBody, String> {
    let root: &[u8] = if map { b"map" } else { b"stream" };
    let mut r = quick_xml::Reader::from_str(s);
    let mut entries: Vec<(String, JmsValue)> = Vec::new();
    let mut depth = 0usize;
    let mut cur: Option<Open> = None;
    let mut done = false;
    let close = |o: Open, entries: &mut Vec<(String, JmsValue)>| -> Result<(), String> {
        let text = if o.nil {
            None
        } else {
            Some(o.text.as_deref().unwrap_or(""))
        };
        let v = typed_value(&o.dt, text).map_err(|e| match map {
            true => format!("map entry '{}': {e}", o.name),
            false => format!("stream item {}: {e}", entries.len() + 1),
        })?;
        entries.push((o.name, v));
        Ok(())
    };
    loop {
        let ev = r
            .read_event()
            .map_err(|e| format!("the body is not well-formed XML: {e}"))?;
        match ev {
            Event::Start(e) if depth == 0 && !done => {
                if e.name().as_ref() != root {
                    return Err("the body's root element is not its type's".into());
                }
                depth = 1;
            }
            Event::Empty(e) if depth == 0 && !done && e.name().as_ref() == root => done = true,
            Event::Start(e) if depth == 1 => {
                cur = Some(open(&e, map)?);
                depth = 2;
            }
            Event::Empty(e) if depth == 1 => close(open(&e, map)?, &mut entries)?,
            Event::Text(t) if depth == 2 => {
                let t = t
                    .unescape()
                    .map_err(|e| format!("an entry's text is not well formed: {e}"))?;
                if let Some(o) = cur.as_mut() {
                    o.text.get_or_insert_with(String::new).push_str(&t);
                }
            }
            Event::End(_) if depth == 2 => {
                if let Some(o) = cur.take() {
                    close(o, &mut entries)?;
                }
                depth = 1;
            }
            Event::End(_) if depth == 1 => {
                depth = 0;
                done = true;
            }
            Event::Eof => break,
            Event::Text(t) if t.iter().all(u8::is_ascii_whitespace) => {}
            Event::Decl(_) | Event::Comment(_) | Event::PI(_) if depth == 0 => {}
            _ => return Err("the body holds what a map or a stream does not".into()),
        }
    }
    if !done {
        return Err("the body ends before its root element does".into());
    }
    Ok(match map {
        true => JmsBody::Map(entries),
        false => JmsBody::Stream(entries.into_iter().map(|(_, v)| v).collect()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What IBM's client for JMS wrote for a map and a stream with every type (trimmed).
    const IBM_MAP: &str = r#"<map><elt name="inf" dt='r8'>-Infinity</elt><elt name="st">a&lt;b&amp;c&quot;d&apos;e&gt;é中</elt><elt name="lo" dt='i8'>-9000000000</elt><elt name="nul" xsi:nil='true'></elt><elt name="ch" dt='char'>&lt;</elt><elt name="in" dt='i4'>70000</elt><elt name="fl" dt='r4'>1.25</elt><elt name="bi" dt='bin.hex'>0001abff</elt><elt name="do" dt='r8'>1.0E300</elt><elt name="bo" dt='boolean'>1</elt><elt name="empty"></elt><elt name="fsmall" dt='r4'>0.1</elt><elt name="sh" dt='i2'>-300</elt><elt name="by" dt='i1'>-5</elt><elt name="nan" dt='r8'>NaN</elt></map>"#;
    const IBM_STREAM: &str = r#"<stream><elt dt='boolean'>0</elt><elt dt='i1'>7</elt><elt dt='i2'>8</elt><elt dt='char'>z</elt><elt dt='i4'>9</elt><elt dt='i8'>10</elt><elt dt='r4'>2.5</elt><elt dt='r8'>-0.0</elt><elt>s&lt;&amp;&gt;</elt><elt dt='bin.hex'>0908</elt><elt xsi:nil='true'></elt><elt></elt></stream>"#;

    #[test]
    fn what_ibm_writes_is_read_with_every_type() {
        let Some(Ok(JmsBody::Map(m))) = JmsBody::parse(MSD_MAP, IBM_MAP.as_bytes()) else {
            panic!("map not read");
        };
        let get = |n: &str| m.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone());
        assert_eq!(get("inf"), Some(JmsValue::Double(f64::NEG_INFINITY)));
        assert_eq!(get("st"), Some(JmsValue::String("a<b&c\"d'e>é中".into())));
        assert_eq!(get("lo"), Some(JmsValue::Long(-9_000_000_000)));
        assert_eq!(get("nul"), Some(JmsValue::Null));
        assert_eq!(get("ch"), Some(JmsValue::Char('<')));
        assert_eq!(get("in"), Some(JmsValue::Int(70000)));
        assert_eq!(get("fl"), Some(JmsValue::Float(1.25)));
        assert_eq!(get("bi"), Some(JmsValue::Bytes(vec![0, 1, 0xab, 0xff])));
        assert_eq!(get("do"), Some(JmsValue::Double(1e300)));
        assert_eq!(get("bo"), Some(JmsValue::Bool(true)));
        assert_eq!(get("empty"), Some(JmsValue::String(String::new())));
        assert_eq!(get("fsmall"), Some(JmsValue::Float(0.1)));
        assert_eq!(get("sh"), Some(JmsValue::Short(-300)));
        assert_eq!(get("by"), Some(JmsValue::Byte(-5)));
        assert!(matches!(get("nan"), Some(JmsValue::Double(f)) if f.is_nan()));
        assert_eq!(m.len(), 15, "in the order written");
        assert_eq!(m[0].0, "inf");
        let Some(Ok(JmsBody::Stream(s))) = JmsBody::parse(MSD_STREAM, IBM_STREAM.as_bytes()) else {
            panic!("stream not read");
        };
        assert_eq!(
            s,
            [
                JmsValue::Bool(false),
                JmsValue::Byte(7),
                JmsValue::Short(8),
                JmsValue::Char('z'),
                JmsValue::Int(9),
                JmsValue::Long(10),
                JmsValue::Float(2.5),
                JmsValue::Double(-0.0),
                JmsValue::String("s<&>".into()),
                JmsValue::Bytes(vec![9, 8]),
                JmsValue::Null,
                JmsValue::String(String::new()),
            ]
        );
    }

    #[test]
    fn written_as_ibm_writes_it() {
        // Re-written, what IBM wrote comes out the same but for numbers' spelling.
        let Some(Ok(s)) = JmsBody::parse(MSD_STREAM, IBM_STREAM.as_bytes()) else {
            panic!("stream not read");
        };
        assert_eq!(
            s.to_xml(),
            IBM_STREAM.replace(">-0.0<", ">-0<"),
            "the same XML"
        );
        let m = JmsBody::Map(vec![
            ("big".into(), JmsValue::Double(1e300)),
            ("tiny".into(), JmsValue::Float(-1.5e-7)),
            ("inf".into(), JmsValue::Double(f64::INFINITY)),
            ("a\"<b&amp;>".into(), JmsValue::Null),
        ]);
        assert_eq!(
            m.to_xml(),
            "<map><elt name=\"big\" dt='r8'>1.0E300</elt><elt name=\"tiny\" dt='r4'>-1.5E-7</elt>\
             <elt name=\"inf\" dt='r8'>Infinity</elt><elt name=\"a&quot;<b&amp;>\" xsi:nil='true'></elt></map>"
        );
        assert_eq!(JmsBody::parse(MSD_MAP, m.to_xml().as_bytes()), Some(Ok(m)));
    }

    #[test]
    fn what_is_no_map_or_stream_is_refused_with_a_reason() {
        for (msd, bad) in [
            (MSD_MAP, "<map><elt dt='i4'>1</elt></map>"),
            (MSD_MAP, "<map><elt name=\"a\" dt='i4'>x</elt></map>"),
            (MSD_MAP, "<map><elt name=\"a\" dt='i1'>300</elt></map>"),
            (MSD_MAP, "<map><elt name=\"a\" dt='char'>ab</elt></map>"),
            (MSD_MAP, "<map><elt name=\"a\" dt='bin.hex'>abc</elt></map>"),
            (MSD_MAP, "<map><elt name=\"a\" dt='what'>1</elt></map>"),
            (MSD_MAP, "<map><elt name=\"a\"><b/></elt></map>"),
            (MSD_MAP, "<map><elt name=\"a\">1</elt>"),
            (MSD_MAP, "<stream></stream>"),
            (MSD_STREAM, "<stream><x/></stream>"),
            (MSD_STREAM, "<stream></stream><stream></stream>"),
            (MSD_STREAM, "text"),
        ] {
            let got = JmsBody::parse(msd, bad.as_bytes());
            assert!(matches!(got, Some(Err(_))), "{bad}: {got:?}");
        }
        assert_eq!(JmsBody::parse("jms_text", b"<map></map>"), None);
        // Names as IBM's client writes them: as they are.
        assert_eq!(
            JmsBody::parse(MSD_MAP, b"<map><elt name=\"k&y <1>\">v</elt></map>"),
            Some(Ok(JmsBody::Map(vec![(
                "k&y <1>".into(),
                JmsValue::String("v".into())
            )])))
        );
        assert_eq!(
            JmsBody::parse(MSD_MAP, b"<map/>"),
            Some(Ok(JmsBody::Map(vec![])))
        );
    }

    fn value() -> impl proptest::strategy::Strategy<Value = JmsValue> {
        use proptest::prelude::*;
        prop_oneof![
            Just(JmsValue::Null),
            any::<bool>().prop_map(JmsValue::Bool),
            any::<i8>().prop_map(JmsValue::Byte),
            any::<i16>().prop_map(JmsValue::Short),
            any::<char>().prop_map(JmsValue::Char),
            any::<i32>().prop_map(JmsValue::Int),
            any::<i64>().prop_map(JmsValue::Long),
            any::<f32>()
                .prop_filter("NaN != NaN", |f| !f.is_nan())
                .prop_map(JmsValue::Float),
            any::<f64>()
                .prop_filter("NaN != NaN", |f| !f.is_nan())
                .prop_map(JmsValue::Double),
            "\\PC{0,20}".prop_map(JmsValue::String),
            proptest::collection::vec(any::<u8>(), 0..20).prop_map(JmsValue::Bytes),
        ]
    }

    proptest::proptest! {
        #[test]
        fn any_body_round_trips(
            names in proptest::collection::vec("\\PC{1,12}", 0..8),
            items in proptest::collection::vec(value(), 0..8),
        ) {
            let map = JmsBody::Map(names.into_iter().zip(items.iter().cloned()).collect());
            proptest::prop_assert_eq!(JmsBody::parse(MSD_MAP, map.to_xml().as_bytes()), Some(Ok(map)));
            let stream = JmsBody::Stream(items);
            proptest::prop_assert_eq!(JmsBody::parse(MSD_STREAM, stream.to_xml().as_bytes()), Some(Ok(stream)));
        }

        #[test]
        fn any_bytes_never_panic(b in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..300), s in ".{0,200}") {
            let _ = JmsBody::parse(MSD_MAP, &b);
            let _ = JmsBody::parse(MSD_STREAM, s.as_bytes());
            let _ = JmsBody::parse(MSD_MAP, format!("<map><elt name=\"x\" dt='r8'>{s}</elt></map>").as_bytes());
        }
    }
}

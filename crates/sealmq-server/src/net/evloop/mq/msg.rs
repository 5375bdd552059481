//! A message as MQ's client protocol carries it — an MQMD, and for JMS an MQRFH2 before the
//! data — to and from sealmq's descriptor with its properties (docs/mq-clients.md,
//! "Messages"). An MQRFH2's folders become properties as IBM MQ names them (`usr` elements
//! by their own name, `mcd.Msd`, `jms.Dst`...); a message with properties is given back with
//! an MQRFH2 when the get asks for one (MQGMO_PROPERTIES_FORCE_MQRFH2, or as the queue
//! defines, MQ's PROPCTL(COMPAT)).

use sealmq_engine::objects::PropCtl;
use sealmq_fap::bytes::Order;
use sealmq_fap::md::Mqmd;
use sealmq_fap::opts::gmo;
use sealmq_fap::rfh2::{self, Element, Rfh2};
use sealmq_mqi::jmsbody::{JmsValue, typed_text, typed_value};
use sealmq_mqi::props::{PropValue, Property};
use sealmq_mqi::{Md, MsgType, Persistence};
use sealmq_types::ReasonCode;

/// How many MQRFH2 headers one message may chain.
const MAX_CHAIN: usize = 8;
/// Folders MQ keeps for itself: not carried as properties.
const MQ_OWN: [&str; 2] = ["mqext", "mqps"];

/// The descriptor and data of an MQPUT as sealmq stores them: the MQRFH2s' folders as
/// properties, the data after them as the payload.
pub(super) fn put_message(
    m: &Mqmd,
    data: &[u8],
    order: Order,
) -> Result<(Md, Vec<u8>), (u32, String)> {
    let mut md = Md {
        msg_id: m.msg_id,
        correl_id: m.correl_id,
        persistence: match m.persistence {
            0 => Persistence::NotPersistent,
            1 => Persistence::Persistent,
            _ => Persistence::AsQueueDef,
        },
        priority: m.priority,
        expiry: m.expiry,
        format: m.format.clone(),
        ccsid: if m.ccsid <= 0 { 1208 } else { m.ccsid as u32 },
        encoding: m.encoding,
        msg_type: match m.msg_type {
            1 => MsgType::Request,
            2 => MsgType::Reply,
            4 => MsgType::Report,
            _ => MsgType::Datagram,
        },
        reply_to_q: m.reply_to_q.clone(),
        reply_to_qmgr: m.reply_to_qmgr.clone(),
        user_id: m.user_id.clone(),
        put_appl_name: m.put_appl_name.clone(),
        group_id: m.group_id,
        msg_seq_number: m.msg_seq_number.max(1),
        report: m.report,
        feedback: m.feedback,
        ..Md::default()
    };
    let mut at = 0;
    let mut chained = 0;
    while md.format == rfh2::FORMAT {
        chained += 1;
        if chained > MAX_CHAIN {
            return Err(bad(format!("more than {MAX_CHAIN} MQRFH2 headers")));
        }
        let (h, n) =
            Rfh2::parse(&data[at..], header_order(md.encoding, order)).map_err(|e| bad(e.0))?;
        for f in &h.folders {
            for e in rfh2::elements(f).map_err(|e| bad(e.0))? {
                if MQ_OWN.iter().any(|o| e.name.starts_with(&format!("{o}."))) {
                    continue;
                }
                let value = value_of(&e).map_err(bad)?;
                sealmq_mqi::props::set(&mut md.properties, &e.name, value);
            }
        }
        md.format = h.format.clone();
        md.encoding = h.encoding;
        md.ccsid = if h.ccsid <= 0 { 1208 } else { h.ccsid as u32 };
        at += n;
    }
    Ok((md, data[at..].to_vec()))
}

fn bad(m: String) -> (u32, String) {
    (ReasonCode::RfhFormatError.code(), format!("MQRFH2: {m}"))
}

/// The byte order of a header's integers from the encoding the descriptor names (MQENC_NATIVE
/// on x86, 546, is little-endian; 273 big-endian).
fn header_order(encoding: u32, fallback: Order) -> Order {
    match encoding & 0x0f {
        1 => Order::Big,
        2 => Order::Little,
        _ => fallback,
    }
}

/// A property's value from its element: MQ's types as a JMS map entry's (a `char`, which
/// JMS properties do not have, as a string).
fn value_of(e: &Element) -> Result<PropValue, String> {
    // A type MQ does not name (or `char`) is read as a string.
    let dt = match e.dt.as_str() {
        dt @ ("boolean" | "i1" | "i2" | "i4" | "int" | "i8" | "r4" | "r8" | "bin.hex") => dt,
        _ => "",
    };
    typed_value(dt, e.text.as_deref())
        .map(PropValue::from)
        .map_err(|m| format!("property {}: {m}", e.name))
}

/// A property as an MQRFH2 element, its value written as IBM's client reads it (`Infinity`,
/// not Rust's `inf`).
fn element(p: &Property) -> Element {
    let (dt, text) = typed_text(&JmsValue::from(p.value.clone()));
    Element {
        name: p.name.clone(),
        dt: dt.into(),
        text,
    }
}

/// Whether a get with these options, from a queue with this PROPCTL, is given the message's
/// properties as an MQRFH2 before the data (MQ's rules: the queue's PROPCTL decides only
/// when the get names no MQGMO_PROPERTIES_* option). IBM's clients ask for a message
/// handle's properties as an MQRFH2 (MQGMO_PROPERTIES_FORCE_MQRFH2) and make the handle
/// themselves; a get that does ask for a handle here is given one only by PROPCTL(FORCE).
pub(super) fn wants_rfh2(options: u32, propctl: PropCtl) -> bool {
    if options & gmo::NO_PROPERTIES != 0 {
        false
    } else if options & (gmo::PROPERTIES_FORCE_MQRFH2 | gmo::PROPERTIES_COMPATIBILITY) != 0 {
        true
    } else if options & gmo::PROPERTIES_IN_HANDLE != 0 {
        propctl == PropCtl::Force
    } else {
        propctl != PropCtl::None
    }
}

/// The descriptor (in version `version`) and data of a message got: an MQRFH2 carries its
/// properties when it has any and `rfh2` says so.
pub(super) fn got_message(
    md: &Md,
    payload: &[u8],
    version: u32,
    rfh2: bool,
    order: Order,
) -> (Mqmd, Vec<u8>) {
    let (date, time) = put_date_time(md.put_time_ms);
    let mut m = Mqmd {
        version,
        msg_type: match md.msg_type {
            MsgType::Request => 1,
            MsgType::Reply => 2,
            MsgType::Report => 4,
            MsgType::Datagram => 8,
        },
        expiry: md.expiry,
        encoding: md.encoding,
        ccsid: md.ccsid as i32,
        format: md.format.clone(),
        priority: md.priority.max(0),
        persistence: u32::from(md.persistence == Persistence::Persistent),
        msg_id: md.msg_id,
        correl_id: md.correl_id,
        backout_count: md.backout_count,
        reply_to_q: md.reply_to_q.clone(),
        reply_to_qmgr: md.reply_to_qmgr.clone(),
        user_id: md.user_id.clone(),
        put_appl_type: 6,
        put_appl_name: md.put_appl_name.clone(),
        put_date: date,
        put_time: time,
        group_id: md.group_id,
        msg_seq_number: md.msg_seq_number,
        report: md.report,
        feedback: md.feedback,
        ..Mqmd::default()
    };
    if !rfh2 || md.properties.is_empty() {
        return (m, payload.to_vec());
    }
    let mut data = rfh2_of(md).encode(header_order(md.encoding, order));
    data.extend_from_slice(payload);
    m.format = rfh2::FORMAT.into();
    (m, data)
}

/// The MQRFH2 carrying a message's properties.
fn rfh2_of(md: &Md) -> Rfh2 {
    let elems: Vec<Element> = md.properties.iter().map(element).collect();
    Rfh2 {
        encoding: md.encoding,
        ccsid: md.ccsid as i32,
        format: md.format.clone(),
        flags: 0,
        nv_ccsid: 1208,
        folders: rfh2::folders(&elems),
    }
}

/// The bytes the MQRFH2 of a message's properties takes before its payload (none without
/// properties): what a get's buffer must hold besides the payload.
pub(super) fn rfh2_len(md: &Md) -> usize {
    if md.properties.is_empty() {
        return 0;
    }
    rfh2_of(md).encode(Order::Big).len()
}

/// MQMD's PutDate and PutTime (`YYYYMMDD`, `HHMMSSTH`, UTC) of a time in milliseconds.
pub(super) fn put_date_time(ms: i64) -> (String, String) {
    if ms <= 0 {
        return (String::new(), String::new());
    }
    let secs = ms.div_euclid(1000);
    let (y, mo, d) = sealmq_types::time::civil(secs.div_euclid(86_400));
    let rem = secs.rem_euclid(86_400);
    let hundredths = ms.rem_euclid(1000) / 10;
    (
        format!("{y:04}{mo:02}{d:02}"),
        format!(
            "{:02}{:02}{:02}{hundredths:02}",
            rem / 3600,
            rem % 3600 / 60,
            rem % 60
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_jms_message_round_trips_through_properties() {
        let h = Rfh2 {
            encoding: 273,
            ccsid: 1208,
            format: "MQSTR".into(),
            flags: 0,
            nv_ccsid: 1208,
            folders: vec![
                "<mcd><Msd>jms_text</Msd></mcd>".into(),
                "<usr><n dt='i4'>5</n><b dt='bin.hex'>0AFF</b><ok dt='boolean'>1</ok></usr>".into(),
            ],
        };
        let mut data = h.encode(Order::Big);
        data.extend_from_slice(b"hello");
        let m = Mqmd {
            format: "MQHRF2".into(),
            persistence: 1,
            ..Mqmd::default()
        };
        let (md, payload) = put_message(&m, &data, Order::Big).unwrap();
        assert_eq!(payload, b"hello");
        assert_eq!(md.format, "MQSTR");
        assert_eq!(md.persistence, Persistence::Persistent);
        assert_eq!(
            sealmq_mqi::props::get(&md.properties, "n"),
            Some(&PropValue::Int(5))
        );
        assert_eq!(
            sealmq_mqi::props::get(&md.properties, "b"),
            Some(&PropValue::Bytes(vec![10, 255]))
        );
        assert_eq!(
            sealmq_mqi::props::get(&md.properties, "mcd.Msd"),
            Some(&PropValue::String("jms_text".into()))
        );
        let (back, bytes) = got_message(&md, &payload, 2, true, Order::Big);
        assert_eq!(back.format, "MQHRF2");
        let (again, p2) = put_message(&back, &bytes, Order::Big).unwrap();
        assert_eq!(
            (again.properties, p2),
            (md.properties.clone(), payload.clone())
        );
        let (plain, bytes) = got_message(&md, &payload, 1, false, Order::Big);
        assert_eq!(
            (plain.format.as_str(), bytes.as_slice()),
            ("MQSTR", &b"hello"[..])
        );
        let bad_num = Rfh2 {
            folders: vec!["<usr><n dt='i4'>five</n></usr>".into()],
            ..h
        };
        let mut data = bad_num.encode(Order::Big);
        data.extend_from_slice(b"x");
        assert_eq!(put_message(&m, &data, Order::Big).unwrap_err().0, 2421);
        // Numbers Java writes and reads: Rust's "inf" and a 301-digit 1e300 are not.
        for (v, text) in [
            (PropValue::Double(f64::INFINITY), "Infinity"),
            (PropValue::Double(1e300), "1.0E300"),
            (PropValue::Float(-1.5e-7), "-1.5E-7"),
        ] {
            let e = element(&Property {
                name: "x".into(),
                value: v.clone(),
            });
            assert_eq!(e.text.as_deref(), Some(text));
            assert_eq!(value_of(&e), Ok(v));
        }
        // Properties as MQRFH2 by the get's options, else by the queue's PROPCTL.
        use PropCtl::*;
        for (options, propctl, rfh2) in [
            (0, Compat, true),
            (0, All, true),
            (0, V6Compat, true),
            (0, Force, true),
            (0, None, false),
            (gmo::NO_PROPERTIES, Force, false),
            (gmo::PROPERTIES_FORCE_MQRFH2, None, true),
            (gmo::PROPERTIES_COMPATIBILITY, None, true),
            (gmo::PROPERTIES_IN_HANDLE, Compat, false),
            (gmo::PROPERTIES_IN_HANDLE, Force, true),
        ] {
            assert_eq!(
                wants_rfh2(options, propctl),
                rfh2,
                "{options:#x} {propctl:?}"
            );
        }
        assert_eq!(
            put_date_time(1_795_431_316_765),
            ("20261123".into(), "10551676".into())
        );
    }
}

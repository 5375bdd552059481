//! The parameters the messaging REST API reads and writes: message and correlation ids in
//! each API version's form (48 hex digits; `ID:` and 48 hex digits from version 3, or an
//! application's own correlation id), the query parameters that select a message by id, and the
//! 400 answer a bad one gets. Shared by the single-message routes and the message list.

use crate::{Body, reply};
use hyper::Response;
use sealmq_mqi::md::{MsgId, NONE_ID};
use sealmq_mqi::options::Match;

/// A bad header or parameter: 400 with MQ's message id.
pub(crate) fn bad(what: &str) -> Response<Body> {
    reply::error(
        400,
        "MQWB0910E",
        what,
        "Correct the header or parameter (docs/rest.md) and resubmit the request.",
        0,
    )
}

/// 48 hexadecimal digits (MQ's form of a 24-byte id), with or without version 3's `ID:`.
pub(crate) fn id_of(s: &str) -> Option<MsgId> {
    let s = s.trim();
    let s = s.strip_prefix("ID:").unwrap_or(s);
    if s.len() != 48 {
        return None;
    }
    let mut id = NONE_ID;
    for (i, b) in id.iter_mut().enumerate() {
        *b = u8::from_str_radix(s.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(id)
}

pub(crate) fn hex(id: &MsgId) -> String {
    id.iter().map(|b| format!("{b:02x}")).collect()
}

/// An id as API version `api` writes it: 48 hex digits, `ID:` before them from version 3.
pub(crate) fn id_text(api: u8, id: &MsgId) -> String {
    if api >= 3 {
        format!("ID:{}", hex(id))
    } else {
        hex(id)
    }
}

/// A correlation id as API version `api` takes it: 48 hex digits (`ID:` and 48 hex digits
/// from version 3), or from version 3 an application's own id — its UTF-8 bytes, at most 24,
/// padded with zeros, as MQ's REST API v3 stores one.
/// A query parameter that selects messages by id (`correlationId`, `messageId`) put into
/// `matching`; any other key is left alone.
pub(crate) fn match_param(
    api: u8,
    key: &str,
    value: &str,
    matching: &mut Match,
) -> Result<(), String> {
    match key {
        "correlationId" => matching.correl_id = Some(correl_of(api, value)?),
        "messageId" => {
            matching.msg_id =
                Some(id_of(value).ok_or_else(|| format!("messageId '{value}': 48 hex digits"))?)
        }
        _ => {}
    }
    Ok(())
}

pub(crate) fn correl_of(api: u8, s: &str) -> Result<MsgId, String> {
    let t = s.trim();
    if api < 3 {
        return id_of(t).ok_or(format!("correlation id '{s}': 48 hex digits"));
    }
    if t.starts_with("ID:") {
        return id_of(t).ok_or(format!("correlation id '{s}': ID: and 48 hex digits"));
    }
    if t.is_empty() || t.len() > 24 {
        return Err(format!(
            "correlation id '{s}': ID: and 48 hex digits, or an application's id of 1 to 24 bytes"
        ));
    }
    let mut id = NONE_ID;
    id[..t.len()].copy_from_slice(t.as_bytes());
    Ok(id)
}

/// MQSC quoting: in single quotes, a quote doubled.
pub(crate) fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn version_3_ids_carry_their_prefix_and_take_an_applications_own() {
        let id = correl_of(3, &format!("ID:{}", "0b".repeat(24))).unwrap();
        assert_eq!(id_text(3, &id), format!("ID:{}", "0b".repeat(24)));
        assert_eq!(id_text(2, &id), "0b".repeat(24));
        let own = correl_of(3, "order-42").unwrap();
        assert_eq!(&own[..8], b"order-42");
        assert!(own[8..].iter().all(|b| *b == 0));
        assert!(correl_of(3, &"x".repeat(25)).is_err());
        assert!(correl_of(3, "ID:zz").is_err());
        assert!(
            correl_of(2, "order-42").is_err(),
            "version 2 takes hex only"
        );
        assert_eq!(
            correl_of(2, &format!("ID:{}", "0b".repeat(24))).unwrap(),
            id
        );
    }

    #[test]
    fn ids_are_48_hex_digits() {
        let id = id_of(&"0a".repeat(24)).unwrap();
        assert_eq!(hex(&id), "0a".repeat(24));
        assert!(id_of("zz").is_none());
        assert!(id_of(&"g0".repeat(24)).is_none());
    }

    proptest! {
        #[test]
        fn ids_never_panic(v in ".{0,60}") {
            let _ = id_of(&v);
            let _ = correl_of(3, &v);
            let _ = correl_of(2, &v);
        }
    }
}

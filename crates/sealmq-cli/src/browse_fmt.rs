//! How `sealmq browse` shows a message, like MQ's browse sample (amqsbcg): the descriptor
//! (message id, correlation id, priority, persistence, put date and time, user, application,
//! format), then the payload as text, or as a hex dump with its printable characters when it
//! is not text. Dead-letter headers show their times in ISO 8601 and leave out the protection
//! fields an ordinary dead letter does not have.

use sealmq_mqi::{Md, Persistence};
use sealmq_types::time::utc;

fn hex(id: &[u8]) -> String {
    id.iter().map(|b| format!("{b:02X}")).collect()
}

fn iso(ms: i64) -> String {
    let ms = ms.max(0) as u64;
    utc(ms / 1000, (ms % 1000) as u32)
}

/// The descriptor, one line.
pub fn descriptor(md: &Md) -> String {
    let persistence = match md.persistence {
        Persistence::Persistent => "PERSISTENT",
        Persistence::NotPersistent => "NOT_PERSISTENT",
        Persistence::AsQueueDef => "AS_Q_DEF",
    };
    format!(
        "  MsgId(X'{}') CorrelId(X'{}') Priority({}) Persistence({persistence}) PutDateTime({}) \
         UserIdentifier({}) PutApplName({}) Format('{}') BackoutCount({}){}",
        hex(&md.msg_id),
        hex(&md.correl_id),
        md.priority,
        iso(md.put_time_ms),
        md.user_id,
        md.put_appl_name,
        md.format,
        md.backout_count,
        properties(md)
    )
}

/// The message properties, one line each (`  name(type): value`), or nothing.
pub fn properties(md: &Md) -> String {
    md.properties
        .iter()
        .map(|p| format!("\n  {}({}): {}", p.name, p.value.type_name(), p.value))
        .collect()
}

/// Whether `b` reads as text (UTF-8 without control characters other than tab and newlines).
fn is_text(b: &[u8]) -> bool {
    std::str::from_utf8(b).is_ok_and(|s| {
        !s.chars()
            .any(|c| c.is_control() && !matches!(c, '\n' | '\r' | '\t'))
    })
}

/// The payload as text, or a hex dump: offset, 16 bytes in hex, and the printable ones.
pub fn payload(b: &[u8]) -> String {
    if is_text(b) {
        return String::from_utf8_lossy(b).into_owned();
    }
    let mut out = format!("({} bytes, not text)", b.len());
    for (i, chunk) in b.chunks(16).enumerate() {
        let hexes: Vec<String> = chunk.iter().map(|x| format!("{x:02X}")).collect();
        let shown: String = chunk
            .iter()
            .map(|&x| {
                if x.is_ascii_graphic() || x == b' ' {
                    x as char
                } else {
                    '.'
                }
            })
            .collect();
        out.push_str(&format!(
            "\n  {:08X}:  {:<47}  '{shown}'",
            i * 16,
            hexes.join(" ")
        ));
    }
    out
}

/// A dead-letter header, one line.
pub fn dead_letter(h: &sealmq_mqi::dlh::DeadLetterHeader, kept: usize) -> String {
    // Protection failures say which check, who got it and who signed; ordinary dead letters
    // have none of these.
    let opt = |k: &str, v: &str| {
        if v.is_empty() {
            String::new()
        } else {
            format!(" {k} '{v}'")
        }
    };
    format!(
        "dead letter: reason {}{} queue {} qmgr {} time {}{}{} ({kept} bytes kept as stored): {}",
        h.reason,
        opt("check", &h.check),
        h.dest_q,
        h.dest_qm,
        iso(h.time_ms),
        opt("getter", &h.getter),
        opt("signer", &h.signer),
        h.detail
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_shows_as_text_and_bytes_as_a_dump() {
        assert_eq!(payload(b"hello"), "hello");
        let d = payload(&[0, 1, b'A', 0xff]);
        assert!(
            d.contains("00000000:  00 01 41 FF") && d.contains("'..A.'"),
            "{d}"
        );
        let md = Md {
            put_time_ms: 1_795_431_316_765,
            ..Md::default()
        };
        assert!(descriptor(&md).contains("PutDateTime(2026-11-23T10:55:16.765Z)"));
    }
}

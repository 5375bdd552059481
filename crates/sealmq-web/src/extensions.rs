//! sealmq's own administrative resources beside IBM's (read-only role): protection policies
//! (`/admin/qmgr/{qm}/policy[/{name}]`, DISPLAY POLICY's attributes), the queue manager's
//! keystore certificates with their expiry (`/admin/qmgr/{qm}/certificate`) and its
//! protection work since start (`/admin/qmgr/{qm}/protection`: operations and time per
//! primitive, key-reuse hits and misses, the protection error queue's depth).

use crate::auth::Who;
use crate::{Body, Ctx, reply};
use hyper::Response;
use serde_json::{Value, json};
use std::sync::Arc;

fn now_unix() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// `/certificate`: the identity, trusted and recipient certificates of the keystore.
pub(crate) async fn certificates(ctx: &Arc<Ctx>, who: &Who) -> Response<Body> {
    if !who.readonly {
        return crate::auth::forbidden("display certificates");
    }
    let dir = ctx.qm_dir.join("keystore");
    let loaded = crate::blocking(move || sealmq_protect::keystore::Keystore::load(&dir)).await;
    let ks = match loaded {
        Some(Ok(k)) => k,
        Some(Err(e)) => {
            return reply::error(
                404,
                "MQWB0912E",
                &format!("The queue manager's keystore cannot be read: {e}"),
                "Check <QM dir>/keystore.",
                0,
            );
        }
        None => return reply::error(500, "MQWB0000E", "The keystore was not read.", "Retry.", 0),
    };
    let now = now_unix();
    let one = |c: &sealmq_protect::cert::Cert, usage: &str| {
        let (nb, na) = c.validity_unix();
        json!({
            "use": usage,
            "subject": c.subject().to_string(),
            "issuer": c.issuer().to_string(),
            "serial": c.serial_hex(),
            "notBefore": nb,
            "notAfter": na,
            "daysToExpiry": (na as i64 - now as i64).div_euclid(86_400),
        })
    };
    let mut list: Vec<Value> = Vec::new();
    if let Some(id) = ks.identity() {
        list.push(one(&id.cert, "identity"));
    }
    list.extend(ks.trusted().iter().map(|c| one(c, "trusted")));
    list.extend(ks.recipients().iter().map(|c| one(c, "recipient")));
    reply::json(200, &json!({ "certificate": list }))
}

/// `/protection`: the queue manager's own protection work since start.
pub(crate) fn protection(ctx: &Arc<Ctx>, who: &Who) -> Response<Body> {
    if !who.readonly {
        return crate::auth::forbidden("display protection statistics");
    }
    let depth = ctx
        .qm
        .queue_status(sealmq_engine::objects::PROTECTION_ERROR_Q)
        .map(|s| s.depth)
        .unwrap_or(0);
    let Some(s) = ctx.host.protector().map(|p| p.counters()) else {
        return reply::json(
            200,
            &json!({"protection": {"keystore": false, "errorQueueDepth": depth}}),
        );
    };
    let op = |n: u64, ns: u64| json!({"count": n, "seconds": ns as f64 / 1e9});
    reply::json(
        200,
        &json!({"protection": {
            "keystore": true,
            "operations": {
                "sign": op(s.sign, s.sign_nanos),
                "verify": op(s.verify, s.verify_nanos),
                "key_wrap": op(s.key_wrap, s.key_wrap_nanos),
                "key_unwrap": op(s.key_unwrap, s.key_unwrap_nanos),
                "encrypt": op(s.encrypt, s.encrypt_nanos),
                "decrypt": op(s.decrypt, s.decrypt_nanos),
            },
            "symmetricBytes": s.sym_bytes,
            "keyReuse": {
                "putHits": s.put_reuse_hits, "putMisses": s.put_reuse_misses,
                "getHits": s.get_reuse_hits, "getMisses": s.get_reuse_misses,
            },
            "errorQueueDepth": depth,
        }}),
    )
}

/// Lines `/errorlog` answers by default, and at most.
const LOG_LINES: usize = 50;
const LOG_LINES_MAX: usize = 500;
/// Bytes read from the end of the error log for them.
const LOG_TAIL_BYTES: u64 = 256 << 10;

/// `/errorlog?lines=N`: the last entries of the queue manager's error log
/// (`<QM dir>/errors/SEALMQ01.LOG`), oldest first.
pub(crate) async fn error_log(ctx: &Arc<Ctx>, who: &Who, query: &str) -> Response<Body> {
    if !who.readonly {
        return crate::auth::forbidden("display the error log");
    }
    let mut want = LOG_LINES;
    for (k, v) in form_urlencoded::parse(query.as_bytes()) {
        if k == "lines" {
            match v.parse::<usize>() {
                Ok(n) if n > 0 => want = n.min(LOG_LINES_MAX),
                _ => return crate::auth::bad_json(&format!("lines '{v}': a number from 1")),
            }
        }
    }
    let path = ctx.qm_dir.join("errors").join("SEALMQ01.LOG");
    let read = crate::blocking(move || tail(&path, LOG_TAIL_BYTES)).await;
    let text = match read {
        Some(Ok(t)) => t,
        Some(Err(e)) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Some(Err(e)) => {
            tracing::warn!("REST error log: {e}");
            return reply::error(
                500,
                "MQWB0912E",
                "The error log cannot be read.",
                "Retry.",
                0,
            );
        }
        None => return reply::error(500, "MQWB0000E", "The error log was not read.", "Retry.", 0),
    };
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let from = lines.len().saturating_sub(want);
    reply::json(200, &json!({ "errorLog": &lines[from..] }))
}

/// The last `max` bytes of a file as text, from the first whole line in them.
fn tail(path: &std::path::Path, max: u64) -> std::io::Result<String> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = std::fs::File::open(path)?;
    let len = f.metadata()?.len();
    let start = len.saturating_sub(max);
    f.seek(SeekFrom::Start(start))?;
    let mut b = Vec::new();
    f.take(max).read_to_end(&mut b)?;
    if start > 0
        && let Some(nl) = b.iter().position(|&c| c == b'\n')
    {
        b.drain(..=nl);
    }
    Ok(String::from_utf8_lossy(&b).into_owned())
}

/// `/ha`: the instance's view of a replicated queue manager (`sealmq status`'s figures, from
/// `<QM dir>/ha/status.json`), or `{"replicated": false}`.
pub(crate) async fn ha(ctx: &Arc<Ctx>, who: &Who) -> Response<Body> {
    if !who.readonly {
        return crate::auth::forbidden("display high availability");
    }
    let path = ctx.qm_dir.join("ha").join("status.json");
    let read = crate::blocking(move || std::fs::read(&path)).await;
    let status = match read {
        Some(Ok(b)) => serde_json::from_slice::<Value>(&b).ok(),
        _ => None,
    };
    let v = match status {
        Some(Value::Object(mut m)) => {
            m.insert("replicated".into(), json!(true));
            Value::Object(m)
        }
        _ => json!({"replicated": false}),
    };
    reply::json(200, &json!({ "ha": v }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tail_starts_at_a_whole_line() {
        let dir = std::env::temp_dir().join(format!("sealmq-web-tail-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("log");
        std::fs::write(&p, "first line\nsecond line\nthird\n").unwrap();
        assert_eq!(tail(&p, 10).unwrap(), "third\n");
        assert_eq!(tail(&p, 1000).unwrap(), "first line\nsecond line\nthird\n");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

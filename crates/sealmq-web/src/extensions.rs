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

/// The queue manager's protection counters now (`None`: it has no keystore).
pub type Protection = Arc<dyn Fn() -> Option<sealmq_protect::counters::Snapshot> + Send + Sync>;

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
    let dir = ctx.keystore.clone();
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
    let Some(s) = (ctx.protection)() else {
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

//! QM-side interception (SPEC §5.5.2), the part every channel kind shares: on a channel with
//! INTERCEPT(YES) (SVRCONN, AMQP) the queue manager protects each message put to a queue with
//! a policy and unprotects each one got, with its own identity. The server's SVRCONN requests
//! and consumers and the AMQP links call these; what they answer the application stays theirs.

use crate::dlh::ProtectionFailure;
use crate::md::Md;
use crate::mqi::{Connection, Got};
use crate::qm::QueueManager;
use sealmq_protect::{Policy, Protector, Qop};

/// The policy under which an intercepting channel protects or unprotects for queue `name`
/// (one with a quality of protection; a NONE policy leaves messages as they are).
pub fn policy(qm: &QueueManager, name: &str) -> Option<Policy> {
    qm.policy(name).filter(|p| p.qop() != Qop::None)
}

fn no_keystore() -> String {
    "the queue manager has no keystore to protect with (<QM dir>/keystore)".to_string()
}

/// The policy under which an intercepting connection protects what it publishes on `topic`
/// and unprotects what its subscriptions to it get (issue 28: the topic's own, or the closest
/// one above it), when it has a quality of protection.
pub fn topic_policy(qm: &QueueManager, topic: &str) -> Option<Policy> {
    qm.topic_policy(topic).filter(|p| p.qop() != Qop::None)
}

/// The policy a get from queue `queue` is unprotected under: for a subscription's queue
/// (`topic` given) its topic's, else the queue's own.
pub fn get_policy(qm: &QueueManager, queue: &str, topic: Option<&str>) -> Option<Policy> {
    match topic {
        Some(t) => topic_policy(qm, t),
        None => policy(qm, queue),
    }
}

/// A put a connection sends as it is (the queue manager does not protect for it: no
/// INTERCEPT(YES)) to a queue whose policy has a quality of protection must already be a
/// protected message, as the application's own interception makes it (issue 42: a client
/// without a keystore, or one that skips its look-up, is refused rather than storing
/// plaintext). The policy is the name's own or, for an alias without one, its target's (a
/// message put through the alias lands on the protected queue). A policy that tolerates
/// unprotected messages (TOLERATE, `-t 1`: a migration's allowance) takes them. The error is
/// the detail of a 2063 (MQRC_SECURITY_ERROR).
pub fn check_as_sent(qm: &QueueManager, name: &str, payload: &[u8]) -> Result<(), String> {
    if sealmq_protect::is_protected(payload) || !qm.any_policy() {
        return Ok(());
    }
    let base = || qm.alias_target(name).and_then(|t| policy(qm, &t));
    match policy(qm, name).or_else(base) {
        Some(p) if !p.tolerate => Err(not_protected(&format!("queue '{name}'"), &p)),
        _ => Ok(()),
    }
}

/// [`check_as_sent`] for a publication on `topic` (the topic's policy or the closest one
/// above it).
pub fn check_topic_as_sent(qm: &QueueManager, topic: &str, payload: &[u8]) -> Result<(), String> {
    if sealmq_protect::is_protected(payload) || !qm.any_policy() {
        return Ok(());
    }
    match topic_policy(qm, topic) {
        Some(p) if !p.tolerate => Err(not_protected(&format!("topic '{topic}'"), &p)),
        _ => Ok(()),
    }
}

fn not_protected(what: &str, p: &Policy) -> String {
    format!(
        "{what} has a security policy ({}) and the message is not protected: the application \
         needs a keystore (--keystore or SEALMQ_KEYSTORE), or a channel with INTERCEPT(YES)",
        p.qop()
    )
}

/// The bytes to store for a put to `name`: `None` when they are stored as given (no policy, or
/// already a protected message: never protected twice), else the protected message. The error
/// is the detail of a 2063 (MQRC_SECURITY_ERROR).
pub fn protect(
    qm: &QueueManager,
    protector: Option<&Protector>,
    name: &str,
    md: &Md,
    payload: &[u8],
) -> Result<Option<Vec<u8>>, String> {
    protect_under(policy(qm, name), protector, md, payload)
}

/// As [`protect`], for a publication on `topic`: protected once, under the topic's policy,
/// for every subscriber.
pub fn protect_topic(
    qm: &QueueManager,
    protector: Option<&Protector>,
    topic: &str,
    md: &Md,
    payload: &[u8],
) -> Result<Option<Vec<u8>>, String> {
    protect_under(topic_policy(qm, topic), protector, md, payload)
}

fn protect_under(
    policy: Option<Policy>,
    protector: Option<&Protector>,
    md: &Md,
    payload: &[u8],
) -> Result<Option<Vec<u8>>, String> {
    if sealmq_protect::is_protected(payload) {
        return Ok(None);
    }
    let Some(policy) = policy else {
        return Ok(None);
    };
    let protector = protector.ok_or_else(no_keystore)?;
    protector
        .protect(&policy, payload, md.protection_original())
        .map(Some)
        .map_err(|e| e.to_string())
}

/// A got message's descriptor and payload for the application, unprotected under `policy`.
/// A message that fails a check is moved, unless `browsing`, to the protection error queue
/// in `conn`'s unit of work when `syncpoint` (the caller commits or backs out); the error is
/// the detail of a 2063.
pub fn unprotect(
    conn: &Connection,
    protector: Option<&Protector>,
    policy: &Policy,
    queue: &str,
    got: &Got,
    browsing: bool,
    syncpoint: bool,
) -> Result<(Md, Vec<u8>), String> {
    let protector = protector.ok_or_else(no_keystore)?;
    match protector.unprotect(policy, &got.payload) {
        Ok(u) => {
            let mut md = got.md.clone();
            if let Some(o) = &u.original {
                md.restore_original(o);
            }
            Ok((md, u.payload))
        }
        Err(e) => {
            if !browsing {
                let failure = ProtectionFailure {
                    check: e.check().map(|c| c.name().to_string()).unwrap_or_default(),
                    detail: e.to_string(),
                    signer: sealmq_protect::inspect(&got.payload, false)
                        .ok()
                        .and_then(|i| i.signer)
                        .unwrap_or_default(),
                };
                if let Err(moved) =
                    conn.put_protection_error(queue, failure, &got.md, &got.payload, syncpoint)
                {
                    tracing::error!(%queue, "a message failing protection was not moved aside: {moved}");
                }
            }
            Err(e.to_string())
        }
    }
}

//! Security policies in the queue manager (SPEC §5.1): each is a persistent message on
//! SYSTEM.PROTECTION.POLICY.QUEUE (correlation id = a digest of the name), cached in memory,
//! read by applications at open. Stored through the MQI by [`set`] and [`delete`] (SET and
//! DELETE POLICY), read back at start by [`load`]; the queue manager caches them
//! (`qm/policies.rs`).

use crate::error::{MqResult, mqerr};
use crate::md::{Md, Persistence};
use crate::mqi::{Connection, GetOptions, OpenOptions, PutOptions};
use crate::objects::POLICY_Q;
use crate::qm::QueueManager;
use crate::queue::Match;
use sealmq_protect::policy::Policy;
use std::sync::Arc;

/// The binary form of a policy (in `sealmq-mqi`, which applications share).
pub use sealmq_mqi::policy::{decode, encode};

pub const FORMAT: &str = "SMQPOL";

/// Marks the authentication tag at the end of a stored policy (docs/storage.md): the policy's
/// encoding, then `SMQPTAG1`, then HMAC-SHA256 over the encoding under the queue manager's
/// policy key (`<QM dir>/policy.key`, 0600). A message on the policy queue without a valid
/// tag was not written by SET POLICY and is refused at load.
const TAG_MARK: &[u8; 8] = b"SMQPTAG1";
const KEY_FILE: &str = sealmq_storage::POLICY_KEY_FILE;

/// The stored form of a policy: its encoding and tag.
fn sealed(p: &Policy, key: &[u8]) -> Vec<u8> {
    let mut b = encode(p);
    let tag = sealmq_protect::hmac_sha256(key, &b);
    b.extend_from_slice(TAG_MARK);
    b.extend_from_slice(&tag);
    b
}

/// The policy of a stored message, if its tag is valid under `key`.
fn open_sealed(bytes: &[u8], key: &[u8]) -> std::result::Result<Policy, String> {
    if bytes.len() < 40 || &bytes[bytes.len() - 40..bytes.len() - 32] != TAG_MARK {
        return Err("it carries no authentication tag".into());
    }
    let (body, tag) = bytes.split_at(bytes.len() - 40);
    if !sealmq_protect::ct_eq(&sealmq_protect::hmac_sha256(key, body), &tag[8..]) {
        return Err("its authentication tag does not verify".into());
    }
    decode(body).map_err(|e| e.to_string())
}

/// The policy key, made on first use; `fresh` tells the caller it did not exist before.
fn policy_key(dir: &std::path::Path) -> MqResult<(zeroize::Zeroizing<Vec<u8>>, bool)> {
    let path = dir.join(KEY_FILE);
    match std::fs::read(&path) {
        Ok(k) if k.len() == 32 => return Ok((zeroize::Zeroizing::new(k), false)),
        Ok(_) => {
            return mqerr!(
                ResourceProblem,
                "{} is not a policy key (32 bytes): restore it from a backup",
                path.display()
            );
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return mqerr!(ResourceProblem, "cannot read {}: {e}", path.display()),
    }
    let k = sealmq_protect::random_bytes(32)
        .map_err(|e| crate::error::MqError::new(sealmq_types::ReasonCode::ResourceProblem, e))?;
    use std::io::Write;
    let tmp = path.with_extension("tmp");
    sealmq_storage::create_private_file(&tmp)
        .and_then(|mut f| f.write_all(&k).and_then(|_| f.sync_all()))
        .and_then(|_| std::fs::rename(&tmp, &path))
        .map_err(|e| {
            crate::error::MqError::new(
                sealmq_types::ReasonCode::ResourceProblem,
                format!("cannot write {}: {e}", path.display()),
            )
        })?;
    Ok((zeroize::Zeroizing::new(k), true))
}

/// The queue manager's policy key, made now if it has none: the active instance of a
/// replicated queue manager gives it to its group before it serves (docs/ha.md).
pub fn ensure_key(dir: &std::path::Path) -> MqResult<zeroize::Zeroizing<Vec<u8>>> {
    policy_key(dir).map(|(k, _)| k)
}

/// The correlation id a policy's message carries.
fn correl(name: &str) -> [u8; 24] {
    let d = aws_lc_rs_digest(name.as_bytes());
    let mut id = [0u8; 24];
    id.copy_from_slice(&d[..24]);
    id
}

fn aws_lc_rs_digest(b: &[u8]) -> [u8; 32] {
    // A stable digest without another dependency: SHA-256 through the protection layer's
    // counters-free helper.
    sealmq_protect::digest_sha256(b)
}

/// Loads every policy from the policy queue into the cache (at start).
///
/// Only messages SET POLICY wrote count: each must carry a valid tag under the policy key,
/// be named by its correlation id, and validate as a policy; any other is refused and
/// reported, and the policy that name had stays. The first start of a queue manager from
/// before tags (no key yet) tags the policies it finds, once.
pub(crate) fn load(qm: &Arc<QueueManager>) -> MqResult<()> {
    if qm.queue_def(POLICY_Q).is_err() {
        return Ok(()); // being created: the system queues come next
    }
    let (key, fresh) = policy_key(&qm.cfg.dir)?;
    let c = Connection::connect_internal(qm)?;
    let h = c.open(POLICY_Q, OpenOptions::browse())?;
    let mut gmo = GetOptions {
        browse: crate::mqi::Browse::First,
        ..Default::default()
    };
    let mut found: Vec<Policy> = Vec::new();
    let mut untagged: Vec<Policy> = Vec::new();
    while let Ok(m) = c.get(&h, gmo.clone()) {
        gmo.browse = crate::mqi::Browse::Next;
        let checked = open_sealed(&m.payload, &key).and_then(|p| {
            if m.md.correl_id != correl(&p.name) {
                return Err(format!("it names '{}' under another's id", p.name));
            }
            p.validate().map_err(|e| e.to_string())?;
            Ok(p)
        });
        if fresh && m.payload.len() >= 40 && &m.payload[m.payload.len() - 40..][..8] == TAG_MARK {
            return mqerr!(
                ResourceProblem,
                "{} is missing but the policies on {POLICY_Q} are tagged with it: restore \
                     the file from a backup (without it no policy can be trusted)",
                qm.cfg.dir.join(KEY_FILE).display()
            );
        }
        match checked {
            Ok(p) => found.push(p),
            Err(why) => match decode(&m.payload) {
                Ok(p) if fresh && m.md.correl_id == correl(&p.name) && p.validate().is_ok() => {
                    untagged.push(p)
                }
                _ => tracing::error!(
                    "a message on {POLICY_Q} (put by '{}', application '{}') is \
                         refused as a policy: {why}; the policies in force are unchanged. \
                         Remove it with a get by message id, and look for who could put there.",
                    m.md.user_id,
                    m.md.put_appl_name
                ),
            },
        }
    }
    drop(h);
    drop(c);
    for p in found {
        qm.cache_policy(p);
    }
    // Migration: policies from before tags are stored again, tagged.
    for p in untagged {
        set(qm, p)?;
    }
    Ok(())
}

/// Gets, in `c`'s unit of work, every message stored for policy `name` on the policy queue
/// (`h`, open for input).
fn take_stored(c: &Connection, h: &crate::mqi::Hobj, name: &str) {
    let gmo = GetOptions {
        syncpoint: true,
        matching: Match {
            correl_id: Some(correl(name)),
            ..Match::default()
        },
        ..Default::default()
    };
    while c.get(h, gmo.clone()).is_ok() {}
}

/// SET POLICY: validates and stores (replacing) a policy in one unit of work.
pub fn set(qm: &Arc<QueueManager>, p: Policy) -> MqResult<()> {
    if let Err(e) = p.validate() {
        return mqerr!(OptionsError, "{e}");
    }
    let c = Connection::connect_internal(qm)?;
    let h = c.open(
        POLICY_Q,
        OpenOptions {
            input_shared: true,
            output: true,
            ..Default::default()
        },
    )?;
    take_stored(&c, &h, &p.name);
    let mut md = Md {
        persistence: Persistence::Persistent,
        correl_id: correl(&p.name),
        format: FORMAT.into(),
        ..Md::default()
    };
    let (key, _) = policy_key(&qm.cfg.dir)?;
    c.put(
        &h,
        &mut md,
        &sealed(&p, &key),
        PutOptions {
            syncpoint: true,
            ..Default::default()
        },
    )?;
    c.commit()?;
    qm.cache_policy(p);
    Ok(())
}

/// DELETE POLICY.
pub fn delete(qm: &Arc<QueueManager>, name: &str) -> MqResult<()> {
    if !qm.has_policy(name) {
        return mqerr!(UnknownObjectName, "queue '{name}' has no security policy");
    }
    let c = Connection::connect_internal(qm)?;
    let h = c.open(POLICY_Q, OpenOptions::input())?;
    take_stored(&c, &h, name);
    c.commit()?;
    qm.uncache_policy(name);
    Ok(())
}

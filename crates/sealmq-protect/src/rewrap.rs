//! Re-protecting stored messages for a policy's current recipients without decrypting any
//! payload (`sealmq reprotect`): the content-encryption key is unwrapped with a key the operator
//! holds (an old recipient's) and wrapped again for the current recipients; the encrypted
//! content, its tag, its authenticated attributes and, under Privacy, the signature inside
//! stay byte for byte as they were. The sealmq header's core is kept too (only its CMS length
//! changes), so the message still binds its queue.
//!
//! Under key reuse the messages that share a content key share their RecipientInfos: they are
//! unwrapped and wrapped again once, and the new RecipientInfos are shared the same way.

use crate::cert::Cert;
use crate::counters::Counters;
use crate::envelope::ibm;
use crate::error::{Check, Result, fail};
use crate::header::{self, Header};
use crate::keys::PrivateKey;
use crate::keystore::Keystore;
use crate::policy::Qop;
use crate::{enveloped, recipients};
use aws_lc_rs::digest;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// What re-protecting one stored message came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The message rewritten for the current recipients.
    Rewritten(Vec<u8>),
    /// Already encrypted for exactly the current recipients: left as it is.
    Current,
    /// Signed only (Integrity) or not protected: no key to re-protect.
    NotEncrypted,
    /// IBM MQ AMS's envelope: left as it is (sealmq re-protects its own envelopes only).
    Ibm,
}

/// The recipients messages are re-protected for: a policy's current certificates.
pub struct Target {
    pub certs: Vec<Cert>,
    /// Identifies `certs` in the cache of RecipientInfos made for them.
    id: [u8; 32],
}

impl Target {
    pub fn new(certs: Vec<Cert>) -> Target {
        let mut ctx = digest::Context::new(&digest::SHA256);
        for c in &certs {
            ctx.update(c.der());
        }
        let mut id = [0u8; 32];
        id.copy_from_slice(ctx.finish().as_ref());
        Target { certs, id }
    }
}

/// Most RecipientInfos remembered (one per reused key: 32 messages each under KEYREUSE(32)).
const CACHE_MAX: usize = 4096;

/// Rewrites envelopes with the keys of one keystore (the operator's: what is queued is
/// encrypted to them).
pub struct Rewrapper {
    keystore: Keystore,
    counters: Counters,
    /// (old RecipientInfos, target) → the RecipientInfos made for the target.
    made: Mutex<HashMap<[u8; 32], Arc<Vec<u8>>>>,
    /// Threads that meet the same new key together unwrap it once: the first takes the key's
    /// stripe, the others wait there and find what it made.
    stripes: [Mutex<()>; STRIPES],
}

const STRIPES: usize = 64;

impl Rewrapper {
    pub fn new(keystore: Keystore) -> Rewrapper {
        Rewrapper {
            keystore,
            counters: Counters::default(),
            made: Mutex::new(HashMap::new()),
            stripes: std::array::from_fn(|_| Mutex::new(())),
        }
    }

    /// Private-key operations and wraps so far (`key_unwrap`, `key_wrap`).
    pub fn counters(&self) -> crate::counters::Snapshot {
        self.counters.snapshot()
    }

    /// The RecipientInfos for `target` with the content key of `rec`; `None` when `rec` is
    /// already for exactly `target`'s certificates.
    fn make(&self, rec: &enveloped::Received<'_>, target: &Target) -> Result<Option<Arc<Vec<u8>>>> {
        let ris = recipients::decode(rec.recipient_infos)?;
        if recipients::name_exactly(&ris, &target.certs)? {
            return Ok(None);
        }
        let keys: Vec<(&Cert, &PrivateKey)> = self.keystore.decrypt_keys().collect();
        let cek = recipients::unwrap(&ris, &keys, &self.counters)?;
        if cek.len() != rec.alg.key_len() {
            return Err(fail!(
                Check::Decrypt,
                "unwrapped key has the wrong length for {}",
                rec.alg.name()
            ));
        }
        let made = recipients::wrap_for(&target.certs, &cek, rec.alg, &self.counters)?;
        Ok(Some(Arc::new(recipients::encode(&made)?)))
    }

    /// `stored` (a sealmq header and CMS object) re-protected for `target`.
    pub fn rewrap(&self, stored: &[u8], target: &Target) -> Result<Outcome> {
        if ibm::has_magic(stored) {
            return Ok(Outcome::Ibm);
        }
        if !header::has_magic(stored) {
            return Ok(Outcome::NotEncrypted);
        }
        let (h, cms) = Header::decode(stored)?;
        if h.qop == Qop::Integrity {
            return Ok(Outcome::NotEncrypted);
        }
        let rec = enveloped::parse(cms)?;
        let mut ctx = digest::Context::new(&digest::SHA256);
        ctx.update(rec.recipient_infos);
        ctx.update(&target.id);
        let mut key = [0u8; 32];
        key.copy_from_slice(ctx.finish().as_ref());
        // The messages that shared a content key share their RecipientInfos: all but the first
        // find what was made for them, and are neither decoded nor checked again.
        let cached = || self.made.lock().ok().and_then(|m| m.get(&key).cloned());
        let mut stripe = None;
        if cached().is_none() {
            stripe = self.stripes[key[0] as usize % STRIPES].lock().ok();
        }
        let new_ris = match cached() {
            Some(r) => r,
            None => match self.make(&rec, target)? {
                Some(der) => {
                    if let Ok(mut m) = self.made.lock() {
                        if m.len() >= CACHE_MAX {
                            m.clear();
                        }
                        m.insert(key, der.clone());
                    }
                    der
                }
                None => return Ok(Outcome::Current),
            },
        };
        drop(stripe);
        let new_cms = enveloped::with_recipients(cms, &new_ris)?;
        let mut out = Vec::with_capacity(header::HEADER_LEN + new_cms.len());
        out.extend_from_slice(&h.encode(new_cms.len() as u32));
        out.extend_from_slice(&new_cms);
        Ok(Outcome::Rewritten(out))
    }
}

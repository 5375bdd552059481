//! Security policies in the queue manager (SPEC §5.1): each is a persistent message on
//! SYSTEM.PROTECTION.POLICY.QUEUE (correlation id = a digest of the name), cached in memory,
//! read by applications at open.

use crate::error::{MqResult, mqerr};
use crate::md::{Md, Persistence};
use crate::mqi::{GetOptions, OpenOptions, PutOptions};
use crate::objects::POLICY_Q;
use crate::qm::{QueueManager, read, write};
use crate::queue::Match;
use sealmq_protect::Dn;
use sealmq_protect::policy::{EncAlg, KeyReuse, Policy, SignAlg};
use sealmq_storage::codec::{Dec, Enc};
use sealmq_storage::{Result, StorageError};
use std::sync::Arc;

pub const FORMAT: &str = "SMQPOL";

fn sign_byte(s: SignAlg) -> u8 {
    match s {
        SignAlg::None => 0,
        SignAlg::Sha256 => 1,
        SignAlg::Sha384 => 2,
        SignAlg::Sha512 => 3,
    }
}

fn enc_byte(e: EncAlg) -> u8 {
    match e {
        EncAlg::None => 0,
        EncAlg::Aes128 => 1,
        EncAlg::Aes256 => 2,
    }
}

/// Encodes a policy for storage and for the wire.
pub fn encode(p: &Policy) -> Vec<u8> {
    let mut e = Enc::new();
    e.str(&p.name)
        .u8(sign_byte(p.sign_alg))
        .u8(enc_byte(p.enc_alg));
    e.u32(p.recipients.len() as u32);
    for r in &p.recipients {
        e.str(&r.to_string());
    }
    e.u32(p.signers.len() as u32);
    for s in &p.signers {
        e.str(&s.to_string());
    }
    e.bool(p.tolerate).u32(match p.key_reuse {
        KeyReuse::Disabled => 0,
        KeyReuse::Unlimited => u32::MAX,
        KeyReuse::Count(n) => n,
    });
    e.buf
}

/// Decodes what [`encode`] wrote.
pub fn decode(bytes: &[u8]) -> Result<Policy> {
    let bad = |m: String| StorageError::Decode(m);
    let mut d = Dec::new(bytes, "policy");
    let mut p = Policy::none(&d.str()?);
    p.sign_alg = match d.u8()? {
        0 => SignAlg::None,
        1 => SignAlg::Sha256,
        2 => SignAlg::Sha384,
        3 => SignAlg::Sha512,
        v => return Err(bad(format!("signing algorithm {v}"))),
    };
    p.enc_alg = match d.u8()? {
        0 => EncAlg::None,
        1 => EncAlg::Aes128,
        2 => EncAlg::Aes256,
        v => return Err(bad(format!("encryption algorithm {v}"))),
    };
    let n = d.u32()? as usize;
    for _ in 0..n.min(1024) {
        p.recipients
            .push(Dn::parse(&d.str()?).map_err(|e| bad(e.to_string()))?);
    }
    let n = d.u32()? as usize;
    for _ in 0..n.min(1024) {
        p.signers
            .push(Dn::parse(&d.str()?).map_err(|e| bad(e.to_string()))?);
    }
    p.tolerate = d.bool()?;
    p.key_reuse = match d.u32()? {
        0 => KeyReuse::Disabled,
        u32::MAX => KeyReuse::Unlimited,
        n => KeyReuse::Count(n),
    };
    d.finish()?;
    Ok(p)
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

impl QueueManager {
    /// Loads every policy from the policy queue into the cache (at start).
    pub(crate) fn load_policies(self: &Arc<Self>) {
        let Ok(c) = self.connect_internal() else {
            return;
        };
        let Ok(h) = c.open(POLICY_Q, OpenOptions::browse()) else {
            return;
        };
        let mut gmo = GetOptions {
            browse: crate::mqi::Browse::First,
            ..Default::default()
        };
        let mut cache = write(&self.policies);
        while let Ok(m) = c.get(&h, gmo) {
            gmo.browse = crate::mqi::Browse::Next;
            match decode(&m.payload) {
                Ok(p) => {
                    cache.insert(p.name.clone(), p);
                }
                Err(e) => eprintln!(
                    "sealmq: a message on {POLICY_Q} is not a policy ({e}); it is ignored"
                ),
            }
        }
    }

    /// The policy of a queue name, if any.
    pub fn policy(&self, name: &str) -> Option<Policy> {
        read(&self.policies).get(name).cloned()
    }

    /// Every policy, sorted by name.
    pub fn policies(&self) -> Vec<Policy> {
        let mut v: Vec<Policy> = read(&self.policies).values().cloned().collect();
        v.sort_by(|a, b| a.name.cmp(&b.name));
        v
    }

    /// SET POLICY: validates and stores (replacing) a policy in one unit of work.
    pub fn set_policy(self: &Arc<Self>, p: Policy) -> MqResult<()> {
        if let Err(e) = p.validate() {
            return mqerr!(OptionsError, "{e}");
        }
        let c = self.connect_internal()?;
        let h = c.open(
            POLICY_Q,
            OpenOptions {
                input_shared: true,
                output: true,
                ..Default::default()
            },
        )?;
        let m = Match {
            correl_id: Some(correl(&p.name)),
            msg_id: None,
        };
        while c
            .get(
                &h,
                GetOptions {
                    syncpoint: true,
                    matching: m,
                    ..Default::default()
                },
            )
            .is_ok()
        {}
        let mut md = Md {
            persistence: Persistence::Persistent,
            correl_id: correl(&p.name),
            format: FORMAT.into(),
            ..Md::default()
        };
        c.put(
            &h,
            &mut md,
            &encode(&p),
            PutOptions {
                syncpoint: true,
                ..Default::default()
            },
        )?;
        c.commit()?;
        write(&self.policies).insert(p.name.clone(), p);
        Ok(())
    }

    /// DELETE POLICY.
    pub fn delete_policy(self: &Arc<Self>, name: &str) -> MqResult<()> {
        if !read(&self.policies).contains_key(name) {
            return mqerr!(UnknownObjectName, "queue '{name}' has no security policy");
        }
        let c = self.connect_internal()?;
        let h = c.open(POLICY_Q, OpenOptions::input())?;
        let m = Match {
            correl_id: Some(correl(name)),
            msg_id: None,
        };
        while c
            .get(
                &h,
                GetOptions {
                    syncpoint: true,
                    matching: m,
                    ..Default::default()
                },
            )
            .is_ok()
        {}
        c.commit()?;
        write(&self.policies).remove(name);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn garbage_never_panics(b in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = decode(&b);
        }

        #[test]
        fn every_policy_round_trips(
            sign in 0u8..4,
            enc in 0u8..3,
            reuse in prop_oneof![Just(KeyReuse::Disabled), Just(KeyReuse::Unlimited), (1u32..9999).prop_map(KeyReuse::Count)],
            tolerate in any::<bool>(),
            recips in proptest::collection::vec("[a-z]{1,8}", 0..4),
            signers in proptest::collection::vec("[a-z]{1,8}", 0..4),
            cut in any::<prop::sample::Index>(),
        ) {
            let mut p = Policy::none("APP.Q");
            p.sign_alg = [SignAlg::None, SignAlg::Sha256, SignAlg::Sha384, SignAlg::Sha512][sign as usize];
            p.enc_alg = [EncAlg::None, EncAlg::Aes128, EncAlg::Aes256][enc as usize];
            p.key_reuse = reuse;
            p.tolerate = tolerate;
            p.recipients = recips.iter().map(|n| Dn::parse(&format!("CN={n},O=Example")).unwrap()).collect();
            p.signers = signers.iter().map(|n| Dn::parse(&format!("CN={n}")).unwrap()).collect();
            let bytes = encode(&p);
            prop_assert_eq!(decode(&bytes).unwrap(), p);
            // Every truncation is an error, never a panic or a different policy.
            let n = cut.index(bytes.len());
            prop_assert!(decode(&bytes[..n]).is_err());
        }
    }

    #[test]
    fn policies_round_trip() {
        let mut p = Policy::none("APP.Q");
        p.sign_alg = SignAlg::Sha384;
        p.enc_alg = EncAlg::Aes256;
        p.recipients = vec![Dn::parse("CN=bob,O=Example").unwrap()];
        p.signers = vec![Dn::parse("CN=alice").unwrap()];
        p.tolerate = true;
        assert_eq!(decode(&encode(&p)).unwrap(), p);
        assert!(decode(b"junk").is_err());
    }
}

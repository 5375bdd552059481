//! The binary form of a security policy (docs/wire.md, docs/storage.md): how the queue manager
//! stores a policy and hands it to an application at open.

use sealmq_protect::Dn;
use sealmq_protect::policy::{EncAlg, Envelope, KeyReuse, Policy, SignAlg};
use sealmq_types::codec::{Dec, DecodeError, Enc, Result};

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
    // Version 2 appends what it adds as tagged fields, written only when not the default,
    // so a version-1 policy encodes (and is stored) exactly as before.
    if p.envelope == Envelope::Ibm {
        e.u8(TAG_ENVELOPE).u8(1);
    }
    e.buf
}

/// Tagged field: the envelope format (1 = IBM's).
const TAG_ENVELOPE: u8 = 1;

/// Decodes what [`encode`] wrote.
pub fn decode(bytes: &[u8]) -> Result<Policy> {
    let bad = |m: String| DecodeError(format!("policy: {m}"));
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
    while !d.is_empty() {
        match (d.u8()?, d.u8()?) {
            (TAG_ENVELOPE, 0) => p.envelope = Envelope::Sealmq,
            (TAG_ENVELOPE, 1) => p.envelope = Envelope::Ibm,
            (t, v) => return Err(bad(format!("field {t} value {v}"))),
        }
    }
    d.finish()?;
    Ok(p)
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
            ibm in any::<bool>(),
        ) {
            let mut p = Policy::none("APP.Q");
            p.sign_alg = [SignAlg::None, SignAlg::Sha256, SignAlg::Sha384, SignAlg::Sha512][sign as usize];
            p.enc_alg = [EncAlg::None, EncAlg::Aes128, EncAlg::Aes256][enc as usize];
            p.key_reuse = reuse;
            p.tolerate = tolerate;
            p.recipients = recips.iter().map(|n| Dn::parse(&format!("CN={n},O=Example")).unwrap()).collect();
            p.signers = signers.iter().map(|n| Dn::parse(&format!("CN={n}")).unwrap()).collect();
            p.envelope = if ibm { Envelope::Ibm } else { Envelope::Sealmq };
            let bytes = encode(&p);
            prop_assert_eq!(decode(&bytes).unwrap(), p.clone());
            // Every truncation is an error, never a panic or a different policy, except that
            // of the whole tagged field (the policy without it, which the tag authenticating
            // a stored policy rules out).
            let base = if ibm { bytes.len() - 2 } else { bytes.len() };
            let n = cut.index(bytes.len());
            if n != base {
                prop_assert!(decode(&bytes[..n]).is_err());
            }
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

//! What the asymmetric primitives of protected messages cost on this machine, measured in the
//! same run as the benchmark with the library sealmq protects with (aws-lc-rs): a signature
//! and its verification (Integrity and Privacy), a content-encryption key wrapped for a
//! recipient and unwrapped by it (Privacy per message; Confidentiality once per reused key:
//! RSA-OAEP, or ECDH with an ephemeral key), and AES-256-GCM over the message (Privacy and
//! Confidentiality). The benchmark prints, beside the applications'
//! CPU, what those primitives cost per transaction, so that what protection costs beyond
//! them shows (issue 47: the protected path should spend its time in cryptography).

use aws_lc_rs::agreement::{self, PrivateKey, UnparsedPublicKey as PeerKey};
use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::rsa::{
    KeySize, OAEP_SHA256_MGF1SHA256, OaepPrivateDecryptingKey, OaepPublicEncryptingKey,
    PrivateDecryptingKey,
};
use aws_lc_rs::signature::{self, EcdsaKeyPair, KeyPair, RsaKeyPair, UnparsedPublicKey};
use std::time::{Duration, Instant};

/// Microseconds per operation.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Costs {
    pub sign: f64,
    pub verify: f64,
    pub wrap: f64,
    pub unwrap: f64,
}

/// Runs `f` for about 200 ms (at least 10 times): µs per call.
fn time(mut f: impl FnMut() -> bool) -> Option<f64> {
    let (t, mut n) = (Instant::now(), 0u32);
    while n < 10 || t.elapsed() < Duration::from_millis(200) {
        if !f() {
            return None;
        }
        n += 1;
    }
    Some(t.elapsed().as_secs_f64() * 1e6 / f64::from(n))
}

const MSG: &[u8] = &[0x5a; 64];

/// The costs for the key type `key` (rsa2048, rsa3072, rsa4096, p256, p384, ml-kem-*,
/// ml-dsa-*); `None` for one aws-lc-rs does not offer (rsa1024, ed25519) or when a primitive
/// fails.
pub(crate) fn measure(key: &str) -> Option<Costs> {
    use sealmq_protect::KeyKind;
    match KeyKind::parse(key).ok()? {
        KeyKind::P256 => ec(
            &signature::ECDSA_P256_SHA256_ASN1_SIGNING,
            &signature::ECDSA_P256_SHA256_ASN1,
            &agreement::ECDH_P256,
        ),
        KeyKind::P384 => ec(
            &signature::ECDSA_P384_SHA384_ASN1_SIGNING,
            &signature::ECDSA_P384_SHA384_ASN1,
            &agreement::ECDH_P384,
        ),
        KeyKind::Rsa(2048) => rsa(KeySize::Rsa2048),
        KeyKind::Rsa(3072) => rsa(KeySize::Rsa3072),
        KeyKind::Rsa(4096) => rsa(KeySize::Rsa4096),
        KeyKind::MlKem(512) => kem(&aws_lc_rs::kem::ML_KEM_512, 0.0, 0.0),
        KeyKind::MlKem(768) => kem(&aws_lc_rs::kem::ML_KEM_768, 0.0, 0.0),
        KeyKind::MlKem(1024) => kem(&aws_lc_rs::kem::ML_KEM_1024, 0.0, 0.0),
        KeyKind::MlDsa(44) => dsa(&signature::ML_DSA_44_SIGNING, &signature::ML_DSA_44),
        KeyKind::MlDsa(65) => dsa(&signature::ML_DSA_65_SIGNING, &signature::ML_DSA_65),
        KeyKind::MlDsa(87) => dsa(&signature::ML_DSA_87_SIGNING, &signature::ML_DSA_87),
        _ => None,
    }
}

fn ec(
    signing: &'static signature::EcdsaSigningAlgorithm,
    verifying: &'static signature::EcdsaVerificationAlgorithm,
    ecdh: &'static agreement::Algorithm,
) -> Option<Costs> {
    let rng = SystemRandom::new();
    let kp = EcdsaKeyPair::generate(signing).ok()?;
    let sig = kp.sign(&rng, MSG).ok()?;
    let public = UnparsedPublicKey::new(verifying, kp.public_key().as_ref().to_vec());
    let sign = time(|| kp.sign(&rng, MSG).is_ok())?;
    let verify = time(|| public.verify(MSG, sig.as_ref()).is_ok())?;
    // The recipient's static key; the sender makes an ephemeral key per wrap.
    let recipient = PrivateKey::generate(ecdh).ok()?;
    let recipient_pub = recipient.compute_public_key().ok()?.as_ref().to_vec();
    let eph = PrivateKey::generate(ecdh).ok()?;
    let eph_pub = eph.compute_public_key().ok()?.as_ref().to_vec();
    let wrap = time(|| {
        PrivateKey::generate(ecdh).is_ok_and(|e| {
            e.compute_public_key().is_ok()
                && agreement::agree(&e, PeerKey::new(ecdh, &recipient_pub), (), |_| Ok(())).is_ok()
        })
    })?;
    let unwrap = time(|| {
        agreement::agree(&recipient, PeerKey::new(ecdh, &eph_pub), (), |_| Ok(())).is_ok()
    })?;
    Some(Costs {
        sign,
        verify,
        wrap,
        unwrap,
    })
}

/// An ML-KEM reader: an encapsulation wraps, a decapsulation unwraps (the key-wrap AES and the
/// HKDF around them are noise beside it); `sign` and `verify` as given (an ML-KEM key signs
/// nothing: 0; an ML-DSA signer's).
fn kem(alg: &'static aws_lc_rs::kem::Algorithm, sign: f64, verify: f64) -> Option<Costs> {
    use aws_lc_rs::kem::DecapsulationKey;
    let dk = DecapsulationKey::generate(alg).ok()?;
    let ek = dk.encapsulation_key().ok()?;
    let (ct, _) = ek.encapsulate().ok()?;
    let ct = ct.as_ref().to_vec();
    Some(Costs {
        sign,
        verify,
        wrap: time(|| ek.encapsulate().is_ok())?,
        unwrap: time(|| dk.decapsulate(ct.as_slice().into()).is_ok())?,
    })
}

/// An ML-DSA signer, which reads with an ML-KEM-768 key beside it (`keystore init --kem`).
fn dsa(
    alg: &'static signature::PqdsaSigningAlgorithm,
    verify_alg: &'static signature::PqdsaVerificationAlgorithm,
) -> Option<Costs> {
    let kp = signature::PqdsaKeyPair::generate(alg).ok()?;
    let mut sig = vec![0u8; alg.signature_len()];
    let n = kp.sign(MSG, &mut sig).ok()?;
    sig.truncate(n);
    let public = kp.public_key().as_ref().to_vec();
    let mut out = vec![0u8; alg.signature_len()];
    let sign = time(|| kp.sign(MSG, &mut out).is_ok())?;
    let verify = time(|| {
        UnparsedPublicKey::new(verify_alg, &public)
            .verify(MSG, &sig)
            .is_ok()
    })?;
    kem(&aws_lc_rs::kem::ML_KEM_768, sign, verify)
}

fn rsa(size: KeySize) -> Option<Costs> {
    let rng = SystemRandom::new();
    let kp = RsaKeyPair::generate(size).ok()?;
    let mut sig = vec![0u8; kp.public_modulus_len()];
    kp.sign(&signature::RSA_PKCS1_SHA256, &rng, MSG, &mut sig)
        .ok()?;
    let public = UnparsedPublicKey::new(
        &signature::RSA_PKCS1_2048_8192_SHA256,
        kp.public_key().as_ref().to_vec(),
    );
    let mut out = vec![0u8; kp.public_modulus_len()];
    let sign = time(|| {
        kp.sign(&signature::RSA_PKCS1_SHA256, &rng, MSG, &mut out)
            .is_ok()
    })?;
    let verify = time(|| public.verify(MSG, &sig).is_ok())?;
    let private = PrivateDecryptingKey::generate(size).ok()?;
    let enc = OaepPublicEncryptingKey::new(private.public_key()).ok()?;
    let dec = OaepPrivateDecryptingKey::new(private).ok()?;
    let cek = [0x11u8; 32];
    let mut ct = vec![0u8; enc.ciphertext_size()];
    let n = enc
        .encrypt(&OAEP_SHA256_MGF1SHA256, &cek, &mut ct, None)
        .ok()?
        .len();
    ct.truncate(n);
    let mut buf = vec![0u8; enc.ciphertext_size()];
    let wrap = time(|| {
        enc.encrypt(&OAEP_SHA256_MGF1SHA256, &cek, &mut buf, None)
            .is_ok()
    })?;
    let mut pt = vec![0u8; dec.min_output_size()];
    let unwrap = time(|| {
        dec.decrypt(&OAEP_SHA256_MGF1SHA256, &ct, &mut pt, None)
            .is_ok()
    })?;
    Some(Costs {
        sign,
        verify,
        wrap,
        unwrap,
    })
}

/// AES-256-GCM over a message of `size` bytes (sealing; opening costs the same): µs.
pub(crate) fn aead(size: usize) -> Option<f64> {
    use aws_lc_rs::aead::{AES_256_GCM, Aad, LessSafeKey, Nonce, UnboundKey};
    let key = LessSafeKey::new(UnboundKey::new(&AES_256_GCM, &[0x42; 32]).ok()?);
    let mut buf = vec![0x33u8; size];
    time(|| {
        let nonce = Nonce::assume_unique_for_key([7; 12]);
        key.seal_in_place_separate_tag(nonce, Aad::empty(), &mut buf)
            .is_ok()
    })
}

/// The primitives one transaction needs under `qop`: `protected` messages protected and
/// `unprotected` unprotected (request/reply: 2 and 2; put1: 1 and 0), each encrypted or
/// decrypted at `aead` µs under Privacy and Confidentiality; under Confidentiality a key is
/// wrapped and unwrapped once per `reuse` messages (`None`: unlimited, never again in a run;
/// `Some(1)`: every message).
pub(crate) fn per_txn(
    c: &Costs,
    aead: f64,
    qop: &str,
    reuse: Option<u64>,
    (protected, unprotected): (f64, f64),
) -> f64 {
    let content = (protected + unprotected) * aead;
    match qop {
        "integrity" => protected * c.sign + unprotected * c.verify,
        "privacy" => protected * (c.sign + c.wrap) + unprotected * (c.verify + c.unwrap) + content,
        "confidentiality" => match reuse {
            Some(n) => (protected * c.wrap + unprotected * c.unwrap) / n.max(1) as f64 + content,
            None => content,
        },
        _ => 0.0,
    }
}

//! # sealmq-protect: message protection
//!
//! The library that signs, encrypts, verifies and decrypts messages according to a queue's
//! security policy (SPEC §5). It does no I/O except loading and writing keystores.
//!
//! - [`policy`]: policy attributes, QoP derivation, validation rules.
//! - [`header`]: the sealmq envelope header in front of the CMS object.
//! - [`signed`]: CMS SignedData (Integrity, and the inner layer of Privacy).
//! - [`enveloped`] and [`recipients`]: CMS AuthEnvelopedData with AES-GCM and RSA-OAEP / ECDH
//!   recipients (Privacy, Confidentiality).
//! - [`keyreuse`]: the put-side and get-side key caches of Confidentiality key reuse.
//! - [`envelope`]: [`Protector`], the API callers use: protect, unprotect (checks of SPEC
//!   §5.4 in order), inspect.
//! - [`keystore`], [`cert`], [`keys`], [`identity`], [`pathval`], [`dn`]: identities and trust.
//! - [`counters`]: counts of private- and public-key operations and their time.

pub mod asn1;
pub mod cert;
pub mod counters;
mod derw;
pub mod dn;
pub mod envelope;
pub mod enveloped;
pub mod error;
pub mod header;
pub mod identity;
pub mod kemri;
pub mod keyreuse;
pub mod keys;
pub mod keystore;
pub mod legacy;
pub mod mldsa;
pub mod mlkem;
pub mod oids;
pub mod pathval;
pub mod policy;
pub mod recipients;
pub mod rewrap;
pub mod signed;
mod signedview;

pub use dn::Dn;
pub use envelope::{Binds, Inspection, Options, Protector, Unprotected, inspect};
pub use error::{Check, ProtectError, Result};
pub use header::Original;
pub use keys::KeyKind;
pub use keystore::Keystore;
pub use policy::{EncAlg, Envelope, KeyReuse, Policy, Qop, SignAlg};

/// SHA-256 of `bytes` (a convenience for other layers that need a stable digest).
pub fn digest_sha256(bytes: &[u8]) -> [u8; 32] {
    let d = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, bytes);
    let mut out = [0u8; 32];
    out.copy_from_slice(d.as_ref());
    out
}

/// HMAC-SHA256 of `bytes` under `key` (the queue manager authenticates its own records with it).
pub fn hmac_sha256(key: &[u8], bytes: &[u8]) -> [u8; 32] {
    let k = aws_lc_rs::hmac::Key::new(aws_lc_rs::hmac::HMAC_SHA256, key);
    let t = aws_lc_rs::hmac::sign(&k, bytes);
    let mut out = [0u8; 32];
    out.copy_from_slice(t.as_ref());
    out
}

/// Constant-time comparison of two byte strings.
pub fn ct_eq(a: &[u8], b: &[u8]) -> bool {
    aws_lc_rs::constant_time::verify_slices_are_equal(a, b).is_ok()
}

/// `n` random bytes from the system's generator.
pub fn random_bytes(n: usize) -> std::result::Result<Vec<u8>, String> {
    let mut v = vec![0u8; n];
    aws_lc_rs::rand::fill(&mut v).map_err(|_| "the random generator failed".to_string())?;
    Ok(v)
}

/// True when `bytes` are a protected message: sealmq's envelope or IBM MQ AMS's.
pub fn is_protected(bytes: &[u8]) -> bool {
    header::has_magic(bytes) || envelope::ibm::has_magic(bytes)
}

/// True when `bytes` are in IBM MQ AMS's envelope (`PDMQ`), which travels with MD format
/// MQFMT_NONE.
pub fn is_ibm_envelope(bytes: &[u8]) -> bool {
    envelope::ibm::has_magic(bytes)
}

//! Private and public keys, backed by aws-lc-rs.
//!
//! Key material is held only inside aws-lc objects (freed and cleansed by aws-lc on drop) or in
//! [`zeroize::Zeroizing`] buffers while it is being parsed.

use crate::error::{ProtectError, Result};
use crate::legacy::LegacyRsa;
use crate::mldsa;
use crate::mlkem::{KemKey, Level};
use crate::oids;
use aws_lc_rs::agreement;
use aws_lc_rs::encoding::AsDer;
use aws_lc_rs::rsa::{
    self, OaepPrivateDecryptingKey, Pkcs1PrivateDecryptingKey, PrivateDecryptingKey,
};
use aws_lc_rs::signature::{self, EcdsaKeyPair, Ed25519KeyPair, KeyPair, PqdsaKeyPair, RsaKeyPair};
use der::{Decode, Reader};
use rustls_pki_types::pem::{PemObject, SectionKind};
use spki::SubjectPublicKeyInfoOwned;
use zeroize::Zeroizing;

/// Kinds of key sealmq generates and uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KeyKind {
    Rsa(usize),
    P256,
    P384,
    Ed25519,
    /// ML-KEM (FIPS 203) of parameter set 512, 768 or 1024: a recipient's key, never a signer's.
    MlKem(u16),
    /// ML-DSA (FIPS 204) of parameter set 44, 65 or 87: a signer's key.
    MlDsa(u16),
}

impl KeyKind {
    /// Parses `rsa2048|rsa3072|rsa4096|p256|p384|ed25519`, `ml-dsa-44|65|87` and
    /// `ml-kem-512|768|1024`.
    pub fn parse(s: &str) -> Result<KeyKind> {
        match s.to_ascii_lowercase().replace('-', "").as_str() {
            "rsa2048" | "rsa" => Ok(KeyKind::Rsa(2048)),
            "rsa3072" => Ok(KeyKind::Rsa(3072)),
            "rsa4096" => Ok(KeyKind::Rsa(4096)),
            // Parsed so the insecure switch can allow it; every use checks the switch.
            "rsa1024" => Ok(KeyKind::Rsa(1024)),
            "p256" | "ec" | "ecp256" | "prime256v1" | "secp256r1" => Ok(KeyKind::P256),
            "p384" | "ecp384" | "secp384r1" => Ok(KeyKind::P384),
            "ed25519" => Ok(KeyKind::Ed25519),
            "mlkem" | "mlkem768" => Ok(KeyKind::MlKem(768)),
            "mlkem512" => Ok(KeyKind::MlKem(512)),
            "mlkem1024" => Ok(KeyKind::MlKem(1024)),
            "mldsa" | "mldsa65" => Ok(KeyKind::MlDsa(65)),
            "mldsa44" => Ok(KeyKind::MlDsa(44)),
            "mldsa87" => Ok(KeyKind::MlDsa(87)),
            other => Err(ProtectError::Credential(format!(
                "unknown key type '{other}': use rsa2048, rsa3072, rsa4096, p256, p384, ed25519, \
                 ml-dsa-44, ml-dsa-65, ml-dsa-87, ml-kem-512, ml-kem-768 or ml-kem-1024"
            ))),
        }
    }

    pub fn name(self) -> String {
        match self {
            KeyKind::Rsa(bits) => format!("RSA-{bits}"),
            KeyKind::P256 => "P-256".into(),
            KeyKind::P384 => "P-384".into(),
            KeyKind::Ed25519 => "Ed25519".into(),
            KeyKind::MlKem(level) => format!("ML-KEM-{level}"),
            KeyKind::MlDsa(level) => format!("ML-DSA-{level}"),
        }
    }

    /// True for kinds that can sign (every kind but ML-KEM's).
    pub fn can_sign(self) -> bool {
        !matches!(self, KeyKind::MlKem(_))
    }
}

/// The EC curves sealmq uses: key kind, signing algorithm, key-agreement algorithm.
type EcCurve = (
    KeyKind,
    &'static signature::EcdsaSigningAlgorithm,
    &'static agreement::Algorithm,
);
const EC_CURVES: &[EcCurve] = &[
    (
        KeyKind::P256,
        &signature::ECDSA_P256_SHA256_ASN1_SIGNING,
        &agreement::ECDH_P256,
    ),
    (
        KeyKind::P384,
        &signature::ECDSA_P384_SHA384_ASN1_SIGNING,
        &agreement::ECDH_P384,
    ),
];

/// A private key: signs, and (RSA, EC) recovers content-encryption keys.
pub enum PrivateKey {
    Rsa {
        sign: RsaKeyPair,
        decrypt: OaepPrivateDecryptingKey,
        /// PKCS#1 v1.5 key transport: only IBM MQ AMS's envelope uses it (`envelope/ibm.rs`).
        pkcs1: Pkcs1PrivateDecryptingKey,
        bits: usize,
    },
    Ec {
        kind: KeyKind,
        sign: EcdsaKeyPair,
        agree: agreement::PrivateKey,
    },
    Ed25519(Ed25519KeyPair),
    /// RSA under 2048 bits: usable only behind the insecure switch (see `legacy`).
    LegacyRsa(LegacyRsa),
    /// ML-KEM: decapsulates only.
    MlKem(KemKey),
    /// ML-DSA: signs only.
    MlDsa {
        level: &'static mldsa::Level,
        sign: PqdsaKeyPair,
    },
}

/// True for key kinds only the insecure switch allows (RSA under 2048 bits).
pub fn is_insecure(kind: KeyKind) -> bool {
    matches!(kind, KeyKind::Rsa(bits) if bits < 2048)
}

/// The refusal of an insecure key kind while the switch is off.
pub fn insecure_key(kind: KeyKind, whose: &str) -> ProtectError {
    ProtectError::Insecure(format!(
        "{} key of {whose}: RSA keys must be at least 2048 bits (RSA-1024 only with the explicit \
         insecure switch, --insecure-rsa1024)",
        kind.name()
    ))
}

impl std::fmt::Debug for PrivateKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PrivateKey({})", self.kind().name())
    }
}

impl PrivateKey {
    /// Generates a key and returns it with its PKCS#8 DER encoding.
    pub fn generate(kind: KeyKind) -> Result<(PrivateKey, Zeroizing<Vec<u8>>)> {
        let err = |_| ProtectError::Credential(format!("cannot generate a {} key", kind.name()));
        let pkcs8: Zeroizing<Vec<u8>> = match kind {
            KeyKind::Rsa(1024) => {
                let (k, der) = LegacyRsa::generate()?;
                return Ok((PrivateKey::LegacyRsa(k), der));
            }
            KeyKind::Rsa(bits) => {
                let size = match bits {
                    2048 => rsa::KeySize::Rsa2048,
                    3072 => rsa::KeySize::Rsa3072,
                    4096 => rsa::KeySize::Rsa4096,
                    _ => {
                        return Err(ProtectError::Credential(format!(
                            "RSA key size {bits} is not offered"
                        )));
                    }
                };
                let kp = RsaKeyPair::generate(size).map_err(err)?;
                let doc: aws_lc_rs::encoding::Pkcs8V1Der = kp.as_der().map_err(err)?;
                Zeroizing::new(doc.as_ref().to_vec())
            }
            KeyKind::P256 | KeyKind::P384 => {
                let alg = if kind == KeyKind::P256 {
                    &signature::ECDSA_P256_SHA256_ASN1_SIGNING
                } else {
                    &signature::ECDSA_P384_SHA384_ASN1_SIGNING
                };
                let kp = EcdsaKeyPair::generate(alg).map_err(err)?;
                Zeroizing::new(kp.to_pkcs8v1().map_err(err)?.as_ref().to_vec())
            }
            KeyKind::Ed25519 => {
                let kp = Ed25519KeyPair::generate().map_err(err)?;
                Zeroizing::new(kp.to_pkcs8v1().map_err(err)?.as_ref().to_vec())
            }
            KeyKind::MlKem(level) => {
                let level = Level::of(level).ok_or_else(|| {
                    ProtectError::Credential(format!("ML-KEM-{level} is not a parameter set"))
                })?;
                let (k, der) = KemKey::generate(level)?;
                return Ok((PrivateKey::MlKem(k), der));
            }
            KeyKind::MlDsa(level) => {
                let level = mldsa::Level::of(level).ok_or_else(|| {
                    ProtectError::Credential(format!("ML-DSA-{level} is not a parameter set"))
                })?;
                let kp = PqdsaKeyPair::generate(level.signing).map_err(err)?;
                Zeroizing::new(kp.to_pkcs8v1().map_err(err)?.as_ref().to_vec())
            }
        };
        Ok((PrivateKey::from_pkcs8(&pkcs8)?, pkcs8))
    }

    /// Loads a PKCS#8 DER private key (RSA, EC P-256/P-384, Ed25519).
    pub fn from_pkcs8(der: &[u8]) -> Result<PrivateKey> {
        if let Ok(sign) = RsaKeyPair::from_pkcs8(der) {
            let dk = PrivateDecryptingKey::from_pkcs8(der)
                .map_err(|e| ProtectError::Credential(format!("RSA key rejected: {e}")))?;
            let bits = dk.key_size_bits();
            let decrypt = OaepPrivateDecryptingKey::new(dk)
                .map_err(|_| ProtectError::Credential("RSA key rejected for OAEP".into()))?;
            let pkcs1 = PrivateDecryptingKey::from_pkcs8(der)
                .ok()
                .and_then(|k| Pkcs1PrivateDecryptingKey::new(k).ok())
                .ok_or_else(|| ProtectError::Credential("RSA key rejected for PKCS#1".into()))?;
            return Ok(PrivateKey::Rsa {
                sign,
                decrypt,
                pkcs1,
                bits,
            });
        }
        for &(kind, salg, aalg) in EC_CURVES {
            if let Ok(sign) = EcdsaKeyPair::from_pkcs8(salg, der) {
                let agree = agreement::PrivateKey::from_private_key_der(aalg, der)
                    .map_err(|e| ProtectError::Credential(format!("EC key rejected: {e}")))?;
                return Ok(PrivateKey::Ec { kind, sign, agree });
            }
        }
        if let Ok(kp) = Ed25519KeyPair::from_pkcs8_maybe_unchecked(der) {
            return Ok(PrivateKey::Ed25519(kp));
        }
        for level in &mldsa::LEVELS {
            if let Ok(sign) = PqdsaKeyPair::from_pkcs8(level.signing, der) {
                return Ok(PrivateKey::MlDsa { level, sign });
            }
        }
        if let Some((level, inner)) = mlkem_pkcs8(der) {
            return Ok(PrivateKey::MlKem(KemKey::from_private_key(level, inner)?));
        }
        if let Some(bits) = rsa_bits_hint(der) {
            if (1024..2048).contains(&bits) {
                return Ok(PrivateKey::LegacyRsa(LegacyRsa::from_pkcs8(der)?));
            }
            if bits < 1024 {
                return Err(ProtectError::Insecure(format!(
                    "RSA-{bits} private key: keys must be at least 2048 bits"
                )));
            }
        }
        Err(ProtectError::Credential(
            "private key is not an unencrypted PKCS#8 RSA (>= 2048 bits), EC P-256/P-384, \
             Ed25519, ML-DSA or ML-KEM key"
                .into(),
        ))
    }

    /// Loads a PEM private key (`PRIVATE KEY`, `RSA PRIVATE KEY` or `EC PRIVATE KEY`).
    pub fn from_pem(pem: &[u8]) -> Result<PrivateKey> {
        let (kind, der) = <(SectionKind, Vec<u8>)>::from_pem_slice(pem)
            .map_err(|e| ProtectError::Credential(format!("no PEM private key found: {e}")))?;
        let der = Zeroizing::new(der);
        match kind {
            SectionKind::PrivateKey => PrivateKey::from_pkcs8(&der),
            SectionKind::RsaPrivateKey => {
                let sign = RsaKeyPair::from_der(&der)
                    .map_err(|e| ProtectError::Credential(format!("RSA key rejected: {e}")))?;
                let pkcs8: aws_lc_rs::encoding::Pkcs8V1Der = sign
                    .as_der()
                    .map_err(|_| ProtectError::Credential("RSA key cannot be re-encoded".into()))?;
                PrivateKey::from_pkcs8(pkcs8.as_ref())
            }
            SectionKind::EcPrivateKey => {
                for &(kind, salg, aalg) in EC_CURVES {
                    if let Ok(sign) = EcdsaKeyPair::from_private_key_der(salg, &der) {
                        let agree = agreement::PrivateKey::from_private_key_der(aalg, &der)
                            .map_err(|e| ProtectError::Credential(format!("EC key: {e}")))?;
                        return Ok(PrivateKey::Ec { kind, sign, agree });
                    }
                }
                Err(ProtectError::Credential(
                    "EC private key is not on P-256 or P-384".into(),
                ))
            }
            other => Err(ProtectError::Credential(format!(
                "expected a PEM private key, found {other:?}"
            ))),
        }
    }

    pub fn kind(&self) -> KeyKind {
        match self {
            PrivateKey::Rsa { bits, .. } => KeyKind::Rsa(*bits),
            PrivateKey::Ec { kind, .. } => *kind,
            PrivateKey::Ed25519(_) => KeyKind::Ed25519,
            PrivateKey::LegacyRsa(k) => KeyKind::Rsa(k.bits()),
            PrivateKey::MlKem(k) => KeyKind::MlKem(k.level.level),
            PrivateKey::MlDsa { level, .. } => KeyKind::MlDsa(level.level),
        }
    }

    /// The SubjectPublicKeyInfo DER of the public half.
    pub fn public_spki_der(&self) -> Result<Vec<u8>> {
        let err = |_| ProtectError::Credential("cannot encode public key".into());
        Ok(match self {
            PrivateKey::Rsa { sign, .. } => {
                let pk: aws_lc_rs::encoding::PublicKeyX509Der =
                    sign.public_key().as_der().map_err(err)?;
                pk.as_ref().to_vec()
            }
            PrivateKey::Ec { sign, .. } => {
                let pk: aws_lc_rs::encoding::PublicKeyX509Der =
                    sign.public_key().as_der().map_err(err)?;
                pk.as_ref().to_vec()
            }
            PrivateKey::Ed25519(kp) => {
                let pk: aws_lc_rs::encoding::PublicKeyX509Der =
                    kp.public_key().as_der().map_err(err)?;
                pk.as_ref().to_vec()
            }
            PrivateKey::LegacyRsa(k) => k.public_spki_der()?,
            PrivateKey::MlKem(k) => k.spki_der()?,
            PrivateKey::MlDsa { sign, .. } => {
                let pk: aws_lc_rs::encoding::PublicKeyX509Der =
                    sign.public_key().as_der().map_err(err)?;
                pk.as_ref().to_vec()
            }
        })
    }
}

/// The ML-KEM parameter set and `privateKey` contents of a PKCS#8 key of an ML-KEM algorithm.
fn mlkem_pkcs8(der: &[u8]) -> Option<(&'static Level, &[u8])> {
    let mut r = der::SliceReader::new(der).ok()?;
    let (level, inner) = r
        .sequence(|r| {
            let _version = u8::decode(r)?;
            let alg = spki::AlgorithmIdentifierOwned::decode(r)?;
            let key = der::asn1::OctetStringRef::decode(r)?;
            // Attributes and a public key may follow; the key is read from `privateKey`.
            while !r.is_finished() {
                der::Any::decode(r)?;
            }
            Ok((alg, key.as_bytes()))
        })
        .ok()?;
    Some((Level::by_oid(&level.oid)?, inner))
}

/// Best-effort modulus size of an RSA PKCS#8 key aws-lc refused (to say why).
fn rsa_bits_hint(der: &[u8]) -> Option<usize> {
    #[derive(der::Sequence)]
    struct Pki {
        version: u8,
        alg: spki::AlgorithmIdentifierOwned,
        key: der::asn1::OctetString,
    }
    #[derive(der::Sequence)]
    struct RsaPrivHead {
        version: u8,
        n: der::asn1::Uint,
        e: der::asn1::Uint,
        d: der::asn1::Uint,
        p: der::asn1::Uint,
        q: der::asn1::Uint,
        dp: der::asn1::Uint,
        dq: der::asn1::Uint,
        qinv: der::asn1::Uint,
    }
    let pki = Pki::from_der(der).ok()?;
    if pki.alg.oid != oids::RSA_ENCRYPTION || pki.version > 1 {
        return None;
    }
    let key = RsaPrivHead::from_der(pki.key.as_bytes()).ok()?;
    Some(key.n.as_bytes().len() * 8)
}

/// A public key taken from a certificate.
#[derive(Debug, Clone)]
pub struct PublicKey {
    pub kind: KeyKind,
    /// The subjectPublicKey bits: PKCS#1 RSAPublicKey, an uncompressed EC point, or 32 bytes.
    pub raw: Vec<u8>,
    /// The whole SubjectPublicKeyInfo DER.
    pub spki_der: Vec<u8>,
}

impl PublicKey {
    pub fn from_spki(spki: &SubjectPublicKeyInfoOwned) -> Result<PublicKey> {
        use der::Encode;
        let raw = spki.subject_public_key.raw_bytes().to_vec();
        let spki_der = spki
            .to_der()
            .map_err(|e| ProtectError::Credential(format!("public key: {e}")))?;
        let kind = if spki.algorithm.oid == oids::RSA_ENCRYPTION {
            #[derive(der::Sequence)]
            struct RsaPublicKey {
                n: der::asn1::Uint,
                e: der::asn1::Uint,
            }
            let key = RsaPublicKey::from_der(&raw)
                .map_err(|e| ProtectError::Credential(format!("malformed RSA public key: {e}")))?;
            let bits = key.n.as_bytes().len() * 8;
            if bits < 1024 || key.e.as_bytes().is_empty() {
                return Err(ProtectError::Insecure(format!(
                    "RSA-{bits} public key: keys must be at least 2048 bits"
                )));
            }
            KeyKind::Rsa(bits)
        } else if spki.algorithm.oid == oids::EC_PUBLIC_KEY {
            let curve = spki
                .algorithm
                .parameters
                .as_ref()
                .and_then(|p| p.decode_as::<const_oid::ObjectIdentifier>().ok());
            match curve {
                Some(c) if c == oids::SECP256R1 => KeyKind::P256,
                Some(c) if c == oids::SECP384R1 => KeyKind::P384,
                _ => {
                    return Err(ProtectError::Credential(
                        "EC public key is not on P-256 or P-384".into(),
                    ));
                }
            }
        } else if spki.algorithm.oid == oids::ED25519 {
            KeyKind::Ed25519
        } else if let Some(level) = mldsa::Level::by_oid(&spki.algorithm.oid) {
            if spki.algorithm.parameters.is_some() || raw.len() != level.public_len {
                return Err(ProtectError::Credential(format!(
                    "malformed ML-DSA-{} public key ({} bytes)",
                    level.level,
                    raw.len()
                )));
            }
            KeyKind::MlDsa(level.level)
        } else if let Some(level) = Level::by_oid(&spki.algorithm.oid) {
            if spki.algorithm.parameters.is_some() || raw.len() != level.public_len() {
                return Err(ProtectError::Credential(format!(
                    "malformed ML-KEM-{} public key ({} bytes, parameters {})",
                    level.level,
                    raw.len(),
                    if spki.algorithm.parameters.is_some() {
                        "present"
                    } else {
                        "absent"
                    }
                )));
            }
            KeyKind::MlKem(level.level)
        } else {
            return Err(ProtectError::Credential(format!(
                "unsupported public key algorithm {}",
                oids::name(&spki.algorithm.oid)
            )));
        };
        Ok(PublicKey {
            kind,
            raw,
            spki_der,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generate_and_reload_each_kind() {
        for kind in [
            KeyKind::P256,
            KeyKind::P384,
            KeyKind::Ed25519,
            KeyKind::Rsa(2048),
        ] {
            let (key, pkcs8) = PrivateKey::generate(kind).unwrap();
            assert_eq!(key.kind(), kind);
            let again = PrivateKey::from_pkcs8(&pkcs8).unwrap();
            assert_eq!(again.kind(), kind);
            let spki =
                SubjectPublicKeyInfoOwned::from_der(&key.public_spki_der().unwrap()).unwrap();
            assert_eq!(PublicKey::from_spki(&spki).unwrap().kind, kind);
        }
    }

    #[test]
    fn rsa1024_is_a_kind_only_the_switch_allows() {
        assert_eq!(KeyKind::parse("rsa1024").unwrap(), KeyKind::Rsa(1024));
        assert!(is_insecure(KeyKind::Rsa(1024)));
        assert!(!is_insecure(KeyKind::Rsa(2048)));
        assert!(
            insecure_key(KeyKind::Rsa(1024), "x")
                .to_string()
                .contains("insecure")
        );
        let (k, der) = PrivateKey::generate(KeyKind::Rsa(1024)).unwrap();
        assert_eq!(
            PrivateKey::from_pkcs8(&der).unwrap().kind(),
            KeyKind::Rsa(1024)
        );
        let spki = SubjectPublicKeyInfoOwned::from_der(&k.public_spki_der().unwrap()).unwrap();
        assert_eq!(
            PublicKey::from_spki(&spki).unwrap().kind,
            KeyKind::Rsa(1024)
        );
    }

    #[test]
    fn garbage_keys_are_errors() {
        assert!(PrivateKey::from_pkcs8(b"nonsense").is_err());
        assert!(
            PrivateKey::from_pem(b"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n")
                .is_err()
        );
        assert!(PrivateKey::from_pem(b"").is_err());
    }
}

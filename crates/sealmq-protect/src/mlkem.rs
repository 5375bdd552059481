//! ML-KEM (FIPS 203) keys: the parameter sets, and keys in the forms RFC 9935 gives them. The
//! CMS recipient made for one is `kemri`.
//!
//! The private key is held in the expanded form (`expandedKey`): that is what aws-lc takes back.
//! A key of OpenSSL's default form (`both`: seed and expanded key) is read by its expanded half;
//! a key holding only its seed is refused with the command that converts it.

use crate::error::{Check, ProtectError, Result, fail};
use crate::oids;
use crate::policy::EncAlg;
use aws_lc_rs::digest;
use aws_lc_rs::kem::{self, Ciphertext, DecapsulationKey};
use const_oid::ObjectIdentifier as Oid;
use der::asn1::OctetString;
use der::{Decode, Encode, Sequence};
use spki::AlgorithmIdentifierOwned;
use zeroize::Zeroizing;

/// One ML-KEM parameter set.
pub struct Level {
    /// 512, 768 or 1024.
    pub level: u16,
    pub oid: Oid,
    pub(crate) alg: &'static kem::Algorithm,
    /// k, the module rank: the sizes follow from it.
    k: usize,
}

pub const LEVELS: [Level; 3] = [
    Level {
        level: 512,
        oid: oids::ML_KEM_512,
        alg: &kem::ML_KEM_512,
        k: 2,
    },
    Level {
        level: 768,
        oid: oids::ML_KEM_768,
        alg: &kem::ML_KEM_768,
        k: 3,
    },
    Level {
        level: 1024,
        oid: oids::ML_KEM_1024,
        alg: &kem::ML_KEM_1024,
        k: 4,
    },
];

impl Level {
    pub fn of(level: u16) -> Option<&'static Level> {
        LEVELS.iter().find(|l| l.level == level)
    }

    pub fn by_oid(oid: &Oid) -> Option<&'static Level> {
        LEVELS.iter().find(|l| l.oid == *oid)
    }

    /// The encapsulation (public) key's size: 384k + 32.
    pub fn public_len(&self) -> usize {
        384 * self.k + 32
    }

    /// The expanded decapsulation key's size: dk_pke (384k) ‖ ek ‖ H(ek) ‖ z.
    fn expanded_len(&self) -> usize {
        384 * self.k + self.public_len() + 64
    }

    /// The key-wrap algorithm RFC 9936 pairs with the set, or AES-256 when the policy's content
    /// key is 256 bits (a 256-bit key is never wrapped under a 128-bit one).
    pub(crate) fn wrap(&self, enc: EncAlg) -> (Oid, usize) {
        if self.level == 512 && enc == EncAlg::Aes128 {
            (oids::AES128_WRAP, 16)
        } else {
            (oids::AES256_WRAP, 32)
        }
    }
}

/// An ML-KEM private key with its public half.
pub struct KemKey {
    pub level: &'static Level,
    dk: DecapsulationKey,
    /// The encapsulation key (the certificate's subjectPublicKey).
    pub public: Vec<u8>,
}

fn cerr(e: impl std::fmt::Display) -> ProtectError {
    ProtectError::Credential(format!("ML-KEM key: {e}"))
}

impl KemKey {
    /// A new key of `level` and its PKCS#8 DER (the expanded-key form).
    pub fn generate(level: &'static Level) -> Result<(KemKey, Zeroizing<Vec<u8>>)> {
        let dk = DecapsulationKey::generate(level.alg).map_err(|_| cerr("cannot generate"))?;
        let expanded = Zeroizing::new(
            dk.key_bytes()
                .map_err(|_| cerr("cannot export"))?
                .as_ref()
                .to_vec(),
        );
        let pkcs8 = pkcs8(level, &expanded)?;
        Ok((KemKey::from_expanded(level, &expanded)?, pkcs8))
    }

    /// The key from its expanded form, checking the public key it holds against its hash.
    fn from_expanded(level: &'static Level, expanded: &[u8]) -> Result<KemKey> {
        if expanded.len() != level.expanded_len() {
            return Err(cerr(format!(
                "the expanded key of ML-KEM-{} is {} bytes, not {}",
                level.level,
                level.expanded_len(),
                expanded.len()
            )));
        }
        let at = 384 * level.k;
        let public = &expanded[at..at + level.public_len()];
        let hash = &expanded[at + level.public_len()..at + level.public_len() + 32];
        if digest::digest(&digest::SHA3_256, public).as_ref() != hash {
            return Err(cerr(
                "the expanded key is inconsistent (its public key does not match its hash)",
            ));
        }
        let dk = DecapsulationKey::new(level.alg, expanded).map_err(cerr)?;
        Ok(KemKey {
            level,
            dk,
            public: public.to_vec(),
        })
    }

    /// The key from a PKCS#8 `privateKey` of an ML-KEM algorithm (RFC 9935's CHOICE).
    pub fn from_private_key(level: &'static Level, inner: &[u8]) -> Result<KemKey> {
        match inner.first() {
            Some(0x04) => {
                let os = OctetString::from_der(inner).map_err(cerr)?;
                KemKey::from_expanded(level, os.as_bytes())
            }
            Some(0x30) => {
                let both = Both::from_der(inner).map_err(cerr)?;
                KemKey::from_expanded(level, both.expanded.as_bytes())
            }
            Some(0x80) => Err(cerr(
                "the key holds only its seed; sealmq needs its expanded form: convert it with \
                 'openssl pkey -in KEY -provparam ml-kem.output_formats=priv-only -out NEWKEY'",
            )),
            _ => Err(cerr("the private key is none of RFC 9935's forms")),
        }
    }

    /// The shared secret of a KEM ciphertext.
    pub(crate) fn decapsulate(&self, ct: &[u8]) -> Result<aws_lc_rs::kem::SharedSecret> {
        self.dk
            .decapsulate(Ciphertext::from(ct))
            .map_err(|_| fail!(Check::Decrypt, "ML-KEM decapsulation failed"))
    }

    /// The SubjectPublicKeyInfo DER.
    pub fn spki_der(&self) -> Result<Vec<u8>> {
        spki_der(self.level, &self.public)
    }

    /// The PKCS#8 DER of the key (expanded form).
    pub fn to_pkcs8(&self) -> Result<Zeroizing<Vec<u8>>> {
        let expanded = Zeroizing::new(
            self.dk
                .key_bytes()
                .map_err(|_| cerr("cannot export"))?
                .as_ref()
                .to_vec(),
        );
        pkcs8(self.level, &expanded)
    }
}

/// RFC 9935's `both`: SEQUENCE { seed OCTET STRING (64), expandedKey OCTET STRING }.
#[derive(Sequence)]
struct Both {
    seed: OctetString,
    expanded: OctetString,
}

fn spki_der(level: &Level, public: &[u8]) -> Result<Vec<u8>> {
    spki::SubjectPublicKeyInfoOwned {
        algorithm: AlgorithmIdentifierOwned {
            oid: level.oid,
            parameters: None,
        },
        subject_public_key: der::asn1::BitString::from_bytes(public).map_err(cerr)?,
    }
    .to_der()
    .map_err(cerr)
}

fn pkcs8(level: &Level, expanded: &[u8]) -> Result<Zeroizing<Vec<u8>>> {
    #[derive(Sequence)]
    struct OneAsymmetricKey {
        version: u8,
        alg: AlgorithmIdentifierOwned,
        key: OctetString,
    }
    let inner = Zeroizing::new(
        OctetString::new(expanded)
            .map_err(cerr)?
            .to_der()
            .map_err(cerr)?,
    );
    let doc = OneAsymmetricKey {
        version: 0,
        alg: AlgorithmIdentifierOwned {
            oid: level.oid,
            parameters: None,
        },
        key: OctetString::new(inner.as_slice()).map_err(cerr)?,
    };
    Ok(Zeroizing::new(doc.to_der().map_err(cerr)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_round_trip_through_pkcs8_for_every_level() {
        for level in &LEVELS {
            let (key, der) = KemKey::generate(level).unwrap();
            assert_eq!(key.public.len(), level.public_len());
            #[derive(Sequence)]
            struct Pki {
                version: u8,
                alg: AlgorithmIdentifierOwned,
                key: OctetString,
            }
            let pki = Pki::from_der(&der).unwrap();
            assert_eq!(pki.alg.oid, level.oid);
            let again = KemKey::from_private_key(level, pki.key.as_bytes()).unwrap();
            assert_eq!(again.public, key.public);
            let seed_only = [0x80u8, 0x40].iter().chain([7u8; 64].iter()).copied();
            let err = KemKey::from_private_key(level, &seed_only.collect::<Vec<_>>());
            assert!(
                err.err()
                    .unwrap()
                    .to_string()
                    .contains("output_formats=priv-only")
            );
        }
    }

    #[test]
    fn an_expanded_key_whose_public_half_was_changed_is_refused() {
        let level = Level::of(768).unwrap();
        let (key, _) = KemKey::generate(level).unwrap();
        let mut expanded = key.dk.key_bytes().unwrap().as_ref().to_vec();
        expanded[384 * 3 + 5] ^= 1;
        assert!(KemKey::from_expanded(level, &expanded).is_err());
    }
}

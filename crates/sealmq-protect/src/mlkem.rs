//! ML-KEM (FIPS 203) recipients: keys in the forms RFC 9935 gives them, and the CMS
//! KEMRecipientInfo (RFC 9629) that carries a content-encryption key for one, as RFC 9936 profiles
//! it: the KEM's shared secret through HKDF-SHA256 (info: the DER of CMSORIforKEMOtherInfo) into an
//! AES key-wrap key, the content-encryption key wrapped under it (RFC 3394).
//!
//! The private key is held in the expanded form (`expandedKey`): that is what aws-lc takes back.
//! A key of OpenSSL's default form (`both`: seed and expanded key) is read by its expanded half;
//! a key holding only its seed is refused with the command that converts it.

use crate::cert::Cert;
use crate::error::{Check, ProtectError, Result, fail};
use crate::oids;
use crate::policy::EncAlg;
use aws_lc_rs::kem::{self, Ciphertext, DecapsulationKey, EncapsulationKey};
use aws_lc_rs::key_wrap::{AES_128, AES_256, AesKek, KeyWrap};
use aws_lc_rs::{digest, hkdf};
use cms::content_info::CmsVersion;
use cms::enveloped_data::{OtherRecipientInfo, RecipientIdentifier, RecipientInfo};
use const_oid::ObjectIdentifier as Oid;
use der::asn1::OctetString;
use der::{Any, Decode, Encode, Sequence};
use spki::AlgorithmIdentifierOwned;
use x509_cert::ext::pkix::SubjectKeyIdentifier;
use zeroize::Zeroizing;

/// One ML-KEM parameter set.
pub struct Level {
    /// 512, 768 or 1024.
    pub level: u16,
    pub oid: Oid,
    alg: &'static kem::Algorithm,
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
    fn wrap(&self, enc: EncAlg) -> (Oid, usize) {
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

/// RFC 9629 KEMRecipientInfo.
#[derive(Clone, Debug, Sequence)]
pub struct KemRecipientInfo {
    pub version: CmsVersion,
    pub rid: RecipientIdentifier,
    pub kem: AlgorithmIdentifierOwned,
    pub kemct: OctetString,
    pub kdf: AlgorithmIdentifierOwned,
    pub kek_length: u16,
    #[asn1(context_specific = "0", tag_mode = "EXPLICIT", optional = "true")]
    pub ukm: Option<OctetString>,
    pub wrap: AlgorithmIdentifierOwned,
    pub encrypted_key: OctetString,
}

/// RFC 9629 CMSORIforKEMOtherInfo: the HKDF info.
#[derive(Sequence)]
struct OtherInfo {
    wrap: AlgorithmIdentifierOwned,
    kek_length: u16,
    #[asn1(context_specific = "0", tag_mode = "EXPLICIT", optional = "true")]
    ukm: Option<OctetString>,
}

struct Len(usize);

impl hkdf::KeyType for Len {
    fn len(&self) -> usize {
        self.0
    }
}

/// The key-encryption key: HKDF-SHA256(salt empty, IKM the shared secret, info OtherInfo).
fn kek(
    ss: &[u8],
    wrap: &AlgorithmIdentifierOwned,
    kek_length: u16,
    ukm: Option<&OctetString>,
) -> Result<AesKek> {
    let info = OtherInfo {
        wrap: wrap.clone(),
        kek_length,
        ukm: ukm.cloned(),
    }
    .to_der()
    .map_err(|e| ProtectError::Protect(e.to_string()))?;
    let len = usize::from(kek_length);
    let mut key = Zeroizing::new(vec![0u8; len]);
    hkdf::Salt::new(hkdf::HKDF_SHA256, &[])
        .extract(ss)
        .expand(&[&info], Len(len))
        .and_then(|okm| okm.fill(&mut key))
        .map_err(|_| fail!(Check::Decrypt, "HKDF failed"))?;
    let cipher = match (wrap.oid, len) {
        (o, 16) if o == oids::AES128_WRAP => &AES_128,
        (o, 32) if o == oids::AES256_WRAP => &AES_256,
        (o, n) => {
            return Err(fail!(
                Check::Algorithms,
                "key wrap {} with a {n}-byte key is not supported",
                oids::name(&o)
            ));
        }
    };
    AesKek::new(cipher, &key).map_err(|_| fail!(Check::Decrypt, "bad key-encryption key"))
}

/// A KEMRecipientInfo wrapping `cek` for `cert`'s ML-KEM key: one encapsulation.
pub fn wrap(cert: &Cert, level: &'static Level, cek: &[u8], enc: EncAlg) -> Result<RecipientInfo> {
    let perr = |e: &dyn std::fmt::Display| ProtectError::Protect(e.to_string());
    let ek = EncapsulationKey::new(level.alg, &cert.public_key().raw).map_err(|e| {
        ProtectError::Protect(format!("recipient '{}' ML-KEM key: {e}", cert.subject()))
    })?;
    let (ct, ss) = ek
        .encapsulate()
        .map_err(|_| ProtectError::Protect("ML-KEM encapsulation failed".into()))?;
    let (wrap_oid, kek_len) = level.wrap(enc);
    let wrap = AlgorithmIdentifierOwned {
        oid: wrap_oid,
        parameters: None,
    };
    let mut wrapped = vec![0u8; cek.len() + 8];
    let n = kek(ss.as_ref(), &wrap, kek_len as u16, None)?
        .wrap(cek, &mut wrapped)
        .map_err(|_| ProtectError::Protect("AES key wrap failed".into()))?
        .len();
    wrapped.truncate(n);
    let rid = match cert.subject_key_id() {
        Some(skid) => RecipientIdentifier::SubjectKeyIdentifier(SubjectKeyIdentifier(
            OctetString::new(skid).map_err(|e| perr(&e))?,
        )),
        None => RecipientIdentifier::IssuerAndSerialNumber(cert.issuer_and_serial()),
    };
    let kemri = KemRecipientInfo {
        version: CmsVersion::V0,
        rid,
        kem: AlgorithmIdentifierOwned {
            oid: level.oid,
            parameters: None,
        },
        kemct: OctetString::new(ct.as_ref()).map_err(|e| perr(&e))?,
        kdf: AlgorithmIdentifierOwned {
            oid: oids::HKDF_SHA256,
            parameters: None,
        },
        kek_length: kek_len as u16,
        ukm: None,
        wrap,
        encrypted_key: OctetString::new(wrapped).map_err(|e| perr(&e))?,
    };
    Ok(RecipientInfo::Ori(OtherRecipientInfo {
        ori_type: oids::ORI_KEM,
        ori_value: Any::encode_from(&kemri).map_err(|e| perr(&e))?,
    }))
}

/// The KEMRecipientInfo inside an `ori`, or `None` for another kind of other recipient.
pub fn read(ori: &OtherRecipientInfo) -> Result<Option<KemRecipientInfo>> {
    if ori.ori_type != oids::ORI_KEM {
        return Ok(None);
    }
    let k: KemRecipientInfo = ori
        .ori_value
        .decode_as()
        .map_err(|e| fail!(Check::Header, "KEMRecipientInfo unreadable: {e}"))?;
    if k.version != CmsVersion::V0 {
        return Err(fail!(Check::Header, "KEMRecipientInfo version must be 0"));
    }
    Ok(Some(k))
}

/// Recovers the content-encryption key from `k` with `key`.
pub fn unwrap(k: &KemRecipientInfo, key: &KemKey) -> Result<Zeroizing<Vec<u8>>> {
    if k.kem.oid != key.level.oid || k.kem.parameters.is_some() {
        return Err(fail!(
            Check::Decrypt,
            "message encapsulates with {} but the keystore key is ML-KEM-{}",
            oids::name(&k.kem.oid),
            key.level.level
        ));
    }
    if k.kdf.oid != oids::HKDF_SHA256 {
        return Err(fail!(
            Check::Algorithms,
            "KEM key derivation {} is not supported (HKDF-SHA256 is)",
            oids::name(&k.kdf.oid)
        ));
    }
    let ss = key
        .dk
        .decapsulate(Ciphertext::from(k.kemct.as_bytes()))
        .map_err(|_| fail!(Check::Decrypt, "ML-KEM decapsulation failed"))?;
    let kek = kek(ss.as_ref(), &k.wrap, k.kek_length, k.ukm.as_ref())?;
    crate::recipients::aes_unwrap(kek, k.encrypted_key.as_bytes())
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

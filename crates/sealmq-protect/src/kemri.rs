//! The CMS KEMRecipientInfo (RFC 9629) that carries a content-encryption key for an ML-KEM
//! reader, as RFC 9936 profiles it: the KEM's shared secret through HKDF-SHA256 (info: the DER
//! of CMSORIforKEMOtherInfo) into an AES key-wrap key, the content-encryption key wrapped under
//! it (RFC 3394).

use crate::cert::Cert;
use crate::error::{Check, ProtectError, Result, fail};
use crate::mlkem::{KemKey, Level};
use crate::oids;
use crate::policy::EncAlg;
use aws_lc_rs::hkdf;
use aws_lc_rs::kem::EncapsulationKey;
use aws_lc_rs::key_wrap::{AES_128, AES_256, AesKek, KeyWrap};
use cms::content_info::CmsVersion;
use cms::enveloped_data::{OtherRecipientInfo, RecipientIdentifier, RecipientInfo};
use der::asn1::OctetString;
use der::{Any, Encode, Sequence};
use spki::AlgorithmIdentifierOwned;
use x509_cert::ext::pkix::SubjectKeyIdentifier;
use zeroize::Zeroizing;

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

/// The key-wrap key of `k` for `key`: what the content-encryption key is unwrapped with
/// (`recipients::aes_unwrap`).
pub fn unwrap_kek(k: &KemRecipientInfo, key: &KemKey) -> Result<AesKek> {
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
    let ss = key.decapsulate(k.kemct.as_bytes())?;
    kek(ss.as_ref(), &k.wrap, k.kek_length, k.ukm.as_ref())
}

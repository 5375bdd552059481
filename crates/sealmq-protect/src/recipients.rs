//! Recipient key management: wrapping a content-encryption key (CEK) for each recipient
//! certificate and recovering it with the getter's private key.
//!
//! - RSA certificates: `KeyTransRecipientInfo`, RSAES-OAEP with SHA-256 and MGF1-SHA-256.
//! - EC P-256/P-384 certificates: `KeyAgreeRecipientInfo`, ephemeral-static ECDH, the ANSI X9.63
//!   KDF (RFC 5753 `dhSinglePass-stdDH-sha*kdf-scheme`) and AES key wrap (RFC 3394).
//! - ML-KEM certificates: `KEMRecipientInfo` in an `ori` (RFC 9629/9936), see `mlkem`.

use crate::asn1::{self, EccCmsSharedInfo, RsaOaepParams};
use crate::cert::Cert;
use crate::counters::{Counters, Op};
use crate::error::{Check, ProtectError, Result, fail};
use crate::keys::{KeyKind, PrivateKey};
use crate::oids;
use crate::policy::EncAlg;
use aws_lc_rs::agreement::{self, EphemeralPrivateKey, UnparsedPublicKey};
use aws_lc_rs::digest;
use aws_lc_rs::key_wrap::{AES_128, AES_256, AesKek, KeyWrap};
use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::rsa::{
    OAEP_SHA256_MGF1SHA256, OAEP_SHA384_MGF1SHA384, OAEP_SHA512_MGF1SHA512, OaepAlgorithm,
    OaepPublicEncryptingKey, PublicEncryptingKey,
};
use cms::content_info::CmsVersion;
use cms::enveloped_data::{
    KeyAgreeRecipientIdentifier, KeyAgreeRecipientInfo, KeyTransRecipientInfo,
    OriginatorIdentifierOrKey, OriginatorPublicKey, RecipientEncryptedKey, RecipientIdentifier,
    RecipientInfo, RecipientInfos,
};
use const_oid::ObjectIdentifier as Oid;
use der::asn1::{BitString, OctetString, SetOfVec};
use der::{Any, Encode};
use spki::AlgorithmIdentifierOwned;
use x509_cert::ext::pkix::SubjectKeyIdentifier;
use zeroize::Zeroizing;

fn alg(oid: Oid, parameters: Option<Any>) -> AlgorithmIdentifierOwned {
    AlgorithmIdentifierOwned { oid, parameters }
}

fn perr(e: impl std::fmt::Display) -> ProtectError {
    ProtectError::Protect(e.to_string())
}

fn wrap_oid(enc: EncAlg) -> Oid {
    if enc == EncAlg::Aes128 {
        oids::AES128_WRAP
    } else {
        oids::AES256_WRAP
    }
}

/// Builds one RecipientInfo per certificate for `cek`.
pub fn wrap_for(
    certs: &[Cert],
    cek: &[u8],
    enc: EncAlg,
    counters: &Counters,
) -> Result<RecipientInfos> {
    let mut set = SetOfVec::new();
    for cert in certs {
        if !cert.may_encrypt_to() {
            return Err(ProtectError::Protect(format!(
                "recipient certificate '{}' has a keyUsage that does not allow encryption to it",
                cert.subject()
            )));
        }
        let ri = match cert.public_key().kind {
            KeyKind::Rsa(_) => counters.time(Op::KeyWrap, || ktri(cert, cek))?,
            KeyKind::P256 | KeyKind::P384 => counters.time(Op::KeyWrap, || kari(cert, cek, enc))?,
            KeyKind::MlKem(level) => {
                let level = crate::mlkem::Level::of(level)
                    .ok_or_else(|| ProtectError::Protect("unknown ML-KEM level".into()))?;
                counters.time(Op::KeyWrap, || crate::kemri::wrap(cert, level, cek, enc))?
            }
            KeyKind::Ed25519 | KeyKind::MlDsa(_) => {
                return Err(ProtectError::Protect(format!(
                    "recipient '{}' has an {} key, which can only sign; give it an RSA, EC or \
                     ML-KEM certificate",
                    cert.subject(),
                    cert.public_key().kind.name()
                )));
            }
        };
        set.insert(ri).map_err(perr)?;
    }
    Ok(RecipientInfos(set))
}

fn oaep_alg_id() -> Result<AlgorithmIdentifierOwned> {
    let hash = alg(oids::SHA256, None);
    let mgf = alg(oids::MGF1, Some(Any::encode_from(&hash).map_err(perr)?));
    let params = RsaOaepParams {
        hash: Some(hash),
        mask_gen: Some(mgf),
        p_source: None,
    };
    Ok(alg(
        oids::RSAES_OAEP,
        Some(Any::encode_from(&params).map_err(perr)?),
    ))
}

fn ktri(cert: &Cert, cek: &[u8]) -> Result<RecipientInfo> {
    let ct = if crate::keys::is_insecure(cert.public_key().kind) {
        // RSA-1024: the caller has checked the insecure switch.
        crate::legacy::oaep_encrypt(&cert.public_key().spki_der, cek)?
    } else {
        let pk = PublicEncryptingKey::from_der(&cert.public_key().spki_der).map_err(|e| {
            ProtectError::Protect(format!("recipient '{}' RSA key: {e}", cert.subject()))
        })?;
        let oaep = OaepPublicEncryptingKey::new(pk).map_err(perr)?;
        let mut out = vec![0u8; oaep.ciphertext_size()];
        oaep.encrypt(&OAEP_SHA256_MGF1SHA256, cek, &mut out, None)
            .map_err(|_| ProtectError::Protect("RSA-OAEP key wrap failed".into()))?
            .to_vec()
    };
    // A subject key identifier is shorter than issuer + serial, and does not grow with the
    // issuer's DN; fall back to issuer + serial for certificates without one.
    let (version, rid) = match cert.subject_key_id() {
        Some(skid) => (
            CmsVersion::V2,
            RecipientIdentifier::SubjectKeyIdentifier(SubjectKeyIdentifier(
                OctetString::new(skid).map_err(perr)?,
            )),
        ),
        None => (
            CmsVersion::V0,
            RecipientIdentifier::IssuerAndSerialNumber(cert.issuer_and_serial()),
        ),
    };
    Ok(RecipientInfo::Ktri(KeyTransRecipientInfo {
        version,
        rid,
        key_enc_alg: oaep_alg_id()?,
        enc_key: OctetString::new(ct.to_vec()).map_err(perr)?,
    }))
}

fn ecdh_alg(kind: KeyKind) -> &'static agreement::Algorithm {
    if kind == KeyKind::P384 {
        &agreement::ECDH_P384
    } else {
        &agreement::ECDH_P256
    }
}

/// ANSI X9.63 KDF: Hash(Z || counter || SharedInfo) until `len` bytes.
fn x963_kdf(
    md: &'static digest::Algorithm,
    z: &[u8],
    shared_info: &[u8],
    len: usize,
) -> Zeroizing<Vec<u8>> {
    let mut out = Zeroizing::new(Vec::with_capacity(len + md.output_len()));
    let mut counter: u32 = 1;
    while out.len() < len {
        let mut ctx = digest::Context::new(md);
        ctx.update(z);
        ctx.update(&counter.to_be_bytes());
        ctx.update(shared_info);
        out.extend_from_slice(ctx.finish().as_ref());
        counter += 1;
    }
    out.truncate(len);
    out
}

fn shared_info(
    wrap: &AlgorithmIdentifierOwned,
    ukm: Option<&OctetString>,
    key_len: usize,
) -> Result<Vec<u8>> {
    EccCmsSharedInfo {
        key_info: alg(wrap.oid, None),
        entity_u_info: ukm.cloned(),
        supp_pub_info: OctetString::new(((key_len * 8) as u32).to_be_bytes().to_vec())
            .map_err(perr)?,
    }
    .to_der()
    .map_err(perr)
}

fn kek(wrap_oid: &Oid, key: &[u8]) -> Result<AesKek> {
    let cipher = if *wrap_oid == oids::AES128_WRAP {
        &AES_128
    } else {
        &AES_256
    };
    AesKek::new(cipher, key).map_err(|_| fail!(Check::Decrypt, "bad key-encryption key"))
}

fn kari(cert: &Cert, cek: &[u8], enc: EncAlg) -> Result<RecipientInfo> {
    let kind = cert.public_key().kind;
    let rng = SystemRandom::new();
    let eph = EphemeralPrivateKey::generate(ecdh_alg(kind), &rng).map_err(perr)?;
    let eph_pub = eph.compute_public_key().map_err(perr)?;
    let wrap = alg(wrap_oid(enc), None);
    let key_len = enc.key_len();
    let si = shared_info(&wrap, None, key_len)?;
    let peer = UnparsedPublicKey::new(ecdh_alg(kind), cert.public_key().raw.clone());
    let kek_bytes = agreement::agree_ephemeral(
        eph,
        peer,
        ProtectError::Protect("ECDH failed".into()),
        |z| Ok(x963_kdf(&digest::SHA256, z, &si, key_len)),
    )?;
    let mut wrapped = vec![0u8; cek.len() + 8];
    let out = kek(&wrap.oid, &kek_bytes)?
        .wrap(cek, &mut wrapped)
        .map_err(|_| ProtectError::Protect("AES key wrap failed".into()))?
        .to_vec();
    let mut reks = Vec::new();
    // Issuer and serial, not rKeyId: the cms crate encodes rKeyId with a primitive tag, which
    // OpenSSL rightly refuses.
    let rid = KeyAgreeRecipientIdentifier::IssuerAndSerialNumber(cert.issuer_and_serial());
    reks.push(RecipientEncryptedKey {
        rid,
        enc_key: OctetString::new(out).map_err(perr)?,
    });
    Ok(RecipientInfo::Kari(KeyAgreeRecipientInfo {
        version: CmsVersion::V3,
        originator: OriginatorIdentifierOrKey::OriginatorKey(OriginatorPublicKey {
            algorithm: alg(oids::EC_PUBLIC_KEY, None),
            public_key: BitString::from_bytes(eph_pub.as_ref()).map_err(perr)?,
        }),
        ukm: None,
        key_enc_alg: alg(
            oids::ECDH_SHA256KDF,
            Some(Any::encode_from(&wrap).map_err(perr)?),
        ),
        recipient_enc_keys: reks,
    }))
}

/// Describes the recipients of a RecipientInfos, for messages and `inspect`.
pub fn describe(ris: &RecipientInfos) -> Vec<String> {
    ris.0
        .iter()
        .map(|ri| match ri {
            RecipientInfo::Ktri(k) => {
                format!("{} {}", rid_name(&k.rid), oids::name(&k.key_enc_alg.oid))
            }
            RecipientInfo::Kari(k) => {
                let who: Vec<String> = k
                    .recipient_enc_keys
                    .iter()
                    .map(|r| match &r.rid {
                        KeyAgreeRecipientIdentifier::IssuerAndSerialNumber(i) => ias_name(i),
                        KeyAgreeRecipientIdentifier::RKeyId(k) => {
                            key_id_name(k.subject_key_identifier.0.as_bytes())
                        }
                    })
                    .collect();
                format!("{} {}", who.join(" "), oids::name(&k.key_enc_alg.oid))
            }
            RecipientInfo::Ori(o) => match crate::kemri::read(o) {
                Ok(Some(k)) => format!("{} {}", rid_name(&k.rid), oids::name(&k.kem.oid)),
                Ok(None) => format!("other recipient type {}", o.ori_type),
                Err(e) => e.to_string(),
            },
            _ => "unsupported recipient type".into(),
        })
        .collect()
}

fn ias_name(i: &cms::cert::IssuerAndSerialNumber) -> String {
    let serial: String = i
        .serial_number
        .as_bytes()
        .iter()
        .map(|b| format!("{b:02X}"))
        .collect();
    format!("issuer '{}' serial {serial}", i.issuer)
}

fn key_id_name(id: &[u8]) -> String {
    let hex: String = id.iter().map(|b| format!("{b:02X}")).collect();
    format!("key id {hex}")
}

fn rid_name(r: &RecipientIdentifier) -> String {
    match r {
        RecipientIdentifier::IssuerAndSerialNumber(i) => ias_name(i),
        RecipientIdentifier::SubjectKeyIdentifier(k) => key_id_name(k.0.as_bytes()),
    }
}

/// Finds a RecipientInfo addressed to one of `keys` (certificate and private key: the
/// identity's first, then added and retired ones) and unwraps the CEK with that key.
/// Addressed to none → a `recipient` check failure; addressed but unwrap fails → `decrypt`.
pub fn unwrap(
    ris: &RecipientInfos,
    keys: &[(&Cert, &PrivateKey)],
    counters: &Counters,
) -> Result<Zeroizing<Vec<u8>>> {
    for (cert, key) in keys {
        if let Some(cek) = unwrap_for(ris, cert, key, counters)? {
            return Ok(cek);
        }
    }
    let who: Vec<String> = keys.iter().map(|(c, _)| c.subject().to_string()).collect();
    Err(fail!(
        Check::Recipient,
        "'{}' is not a recipient of this message (it is for: {})",
        who.join("', '"),
        describe(ris).join("; ")
    ))
}

/// The CEK unwrapped with `key` from the RecipientInfo addressed to `cert`; `None` when none
/// is addressed to it.
fn unwrap_for(
    ris: &RecipientInfos,
    cert: &Cert,
    key: &PrivateKey,
    counters: &Counters,
) -> Result<Option<Zeroizing<Vec<u8>>>> {
    let skid = cert.subject_key_id();
    let ias_match = |i: &cms::cert::IssuerAndSerialNumber| cert.matches_issuer_serial(i);
    let skid_match = |s: &[u8]| skid.as_deref() == Some(s);
    let rid_match = |r: &RecipientIdentifier| match r {
        RecipientIdentifier::IssuerAndSerialNumber(i) => ias_match(i),
        RecipientIdentifier::SubjectKeyIdentifier(s) => skid_match(s.0.as_bytes()),
    };
    for ri in ris.0.iter() {
        match ri {
            RecipientInfo::Ktri(k) if rid_match(&k.rid) => {
                return counters
                    .time(Op::KeyUnwrap, || unwrap_ktri(k, key))
                    .map(Some);
            }
            RecipientInfo::Kari(k) => {
                for rek in &k.recipient_enc_keys {
                    let mine = match &rek.rid {
                        KeyAgreeRecipientIdentifier::IssuerAndSerialNumber(i) => ias_match(i),
                        KeyAgreeRecipientIdentifier::RKeyId(r) => {
                            skid_match(r.subject_key_identifier.0.as_bytes())
                        }
                    };
                    if mine {
                        return counters
                            .time(Op::KeyUnwrap, || unwrap_kari(k, rek, key))
                            .map(Some);
                    }
                }
            }
            RecipientInfo::Ori(o) => {
                let Some(k) = crate::kemri::read(o)? else {
                    continue;
                };
                if rid_match(&k.rid) {
                    let PrivateKey::MlKem(kem) = key else {
                        return Err(fail!(
                            Check::Decrypt,
                            "message encapsulates for ML-KEM but the keystore key is {}",
                            key.kind().name()
                        ));
                    };
                    return counters
                        .time(Op::KeyUnwrap, || {
                            crate::kemri::unwrap_kek(&k, kem)
                                .and_then(|kek| aes_unwrap(kek, k.encrypted_key.as_bytes()))
                        })
                        .map(Some);
                }
            }
            _ => {}
        }
    }
    Ok(None)
}

/// Whom one recipient entry names: issuer and serial, or a subject key identifier.
enum Rid<'a> {
    Ias(&'a cms::cert::IssuerAndSerialNumber),
    Skid(&'a [u8]),
}

impl Rid<'_> {
    fn of(r: &RecipientIdentifier) -> Rid<'_> {
        match r {
            RecipientIdentifier::IssuerAndSerialNumber(i) => Rid::Ias(i),
            RecipientIdentifier::SubjectKeyIdentifier(s) => Rid::Skid(s.0.as_bytes()),
        }
    }

    fn names(&self, cert: &Cert) -> bool {
        match self {
            Rid::Ias(i) => cert.matches_issuer_serial(i),
            Rid::Skid(s) => cert.subject_key_id().as_deref() == Some(*s),
        }
    }
}

/// Every recipient key transport and key agreement RecipientInfos name (a
/// KeyAgreeRecipientInfo may name several); any other kind is an error.
fn rids(ris: &RecipientInfos) -> Result<Vec<Rid<'_>>> {
    let mut out = Vec::with_capacity(ris.0.len());
    for ri in ris.0.iter() {
        match ri {
            RecipientInfo::Ktri(k) => out.push(Rid::of(&k.rid)),
            RecipientInfo::Kari(k) => {
                out.extend(k.recipient_enc_keys.iter().map(|rek| match &rek.rid {
                    KeyAgreeRecipientIdentifier::IssuerAndSerialNumber(i) => Rid::Ias(i),
                    KeyAgreeRecipientIdentifier::RKeyId(r) => {
                        Rid::Skid(r.subject_key_identifier.0.as_bytes())
                    }
                }))
            }
            _ => {
                return Err(fail!(
                    Check::Header,
                    "a recipient of a kind sealmq does not read"
                ));
            }
        }
    }
    Ok(out)
}

/// Whether the RecipientInfos name exactly `certs`: each of them, and no one else. A message
/// that does is already protected for them (`sealmq reprotect` leaves it as it is).
pub fn name_exactly(ris: &RecipientInfos, certs: &[Cert]) -> Result<bool> {
    let kems: Vec<crate::kemri::KemRecipientInfo> = ris
        .0
        .iter()
        .filter_map(|ri| match ri {
            RecipientInfo::Ori(o) => crate::kemri::read(o).transpose(),
            _ => None,
        })
        .collect::<Result<_>>()?;
    let mut named: Vec<Rid<'_>> = kems.iter().map(|k| Rid::of(&k.rid)).collect();
    let classical = RecipientInfos(
        ris.0
            .iter()
            .filter(|ri| !matches!(ri, RecipientInfo::Ori(_)))
            .cloned()
            .collect::<Vec<_>>()
            .try_into()
            .map_err(perr)?,
    );
    named.extend(rids(&classical)?);
    Ok(named.iter().all(|r| certs.iter().any(|c| r.names(c)))
        && certs.iter().all(|c| named.iter().any(|r| r.names(c))))
}

/// The RSA-OAEP variant a KeyTransRecipientInfo asks for, refusing PKCS#1 v1.5 and SHA-1.
fn oaep_params(k: &KeyTransRecipientInfo) -> Result<&'static OaepAlgorithm> {
    if k.key_enc_alg.oid == oids::RSA_ENCRYPTION {
        return Err(fail!(
            Check::Algorithms,
            "key transport RSA PKCS#1 v1.5 is insecure and refused; use RSAES-OAEP"
        ));
    }
    if k.key_enc_alg.oid != oids::RSAES_OAEP {
        return Err(fail!(
            Check::Algorithms,
            "key transport {} is not supported",
            oids::name(&k.key_enc_alg.oid)
        ));
    }
    let params: RsaOaepParams = match &k.key_enc_alg.parameters {
        Some(p) => p
            .decode_as()
            .map_err(|e| fail!(Check::Algorithms, "RSA-OAEP parameters unreadable: {e}"))?,
        None => RsaOaepParams {
            hash: None,
            mask_gen: None,
            p_source: None,
        },
    };
    let hash = params.hash.as_ref().map(|h| h.oid).unwrap_or(oids::SHA1);
    let mgf_hash = params
        .mask_gen
        .as_ref()
        .and_then(|m| m.parameters.as_ref())
        .and_then(|p| p.decode_as::<AlgorithmIdentifierOwned>().ok())
        .map(|a| a.oid)
        .unwrap_or(oids::SHA1);
    if params.p_source.is_some() {
        return Err(fail!(
            Check::Algorithms,
            "RSA-OAEP with a label is not supported"
        ));
    }
    let oaep: &'static OaepAlgorithm = match (hash, mgf_hash) {
        (h, m) if h == oids::SHA256 && m == oids::SHA256 => &OAEP_SHA256_MGF1SHA256,
        (h, m) if h == oids::SHA384 && m == oids::SHA384 => &OAEP_SHA384_MGF1SHA384,
        (h, m) if h == oids::SHA512 && m == oids::SHA512 => &OAEP_SHA512_MGF1SHA512,
        (h, _) if h == oids::SHA1 => {
            return Err(fail!(
                Check::Algorithms,
                "RSA-OAEP with SHA-1 is insecure and refused; use SHA-256"
            ));
        }
        (h, m) => {
            return Err(fail!(
                Check::Algorithms,
                "RSA-OAEP with hash {} and MGF1 {} is not supported",
                oids::name(&h),
                oids::name(&m)
            ));
        }
    };
    Ok(oaep)
}

fn unwrap_ktri(k: &KeyTransRecipientInfo, key: &PrivateKey) -> Result<Zeroizing<Vec<u8>>> {
    let oaep = oaep_params(k)?;
    if let PrivateKey::LegacyRsa(legacy) = key {
        if oaep.id() != OAEP_SHA256_MGF1SHA256.id() {
            return Err(fail!(
                Check::Algorithms,
                "RSA-1024 keys unwrap only RSA-OAEP with SHA-256"
            ));
        }
        return legacy
            .oaep_decrypt(k.enc_key.as_bytes())
            .map_err(|e| fail!(Check::Decrypt, "{e}"));
    }
    let PrivateKey::Rsa { decrypt, .. } = key else {
        return Err(fail!(
            Check::Decrypt,
            "message wraps the key for RSA but the keystore key is {}",
            key.kind().name()
        ));
    };
    let mut out = Zeroizing::new(vec![0u8; decrypt.min_output_size()]);
    let n = decrypt
        .decrypt(oaep, k.enc_key.as_bytes(), &mut out, None)
        .map_err(|_| {
            fail!(
                Check::Decrypt,
                "RSA-OAEP key unwrap failed: wrong private key, or the message was altered"
            )
        })?
        .len();
    out.truncate(n);
    Ok(out)
}

fn kdf_digest(oid: &Oid) -> Result<&'static digest::Algorithm> {
    Ok(match *oid {
        o if o == oids::ECDH_SHA256KDF => &digest::SHA256,
        o if o == oids::ECDH_SHA384KDF => &digest::SHA384,
        o if o == oids::ECDH_SHA512KDF => &digest::SHA512,
        o if o == oids::ECDH_SHA224KDF => &digest::SHA224,
        o if o == oids::ECDH_SHA1KDF => &digest::SHA1_FOR_LEGACY_USE_ONLY,
        o => {
            return Err(fail!(
                Check::Algorithms,
                "key agreement {} is not supported",
                oids::name(&o)
            ));
        }
    })
}

fn unwrap_kari(
    k: &KeyAgreeRecipientInfo,
    rek: &RecipientEncryptedKey,
    key: &PrivateKey,
) -> Result<Zeroizing<Vec<u8>>> {
    let PrivateKey::Ec { kind, agree, .. } = key else {
        return Err(fail!(
            Check::Decrypt,
            "message uses EC key agreement but the keystore key is {}",
            key.kind().name()
        ));
    };
    let md = kdf_digest(&k.key_enc_alg.oid)?;
    let wrap: AlgorithmIdentifierOwned = k
        .key_enc_alg
        .parameters
        .as_ref()
        .and_then(|p| p.decode_as().ok())
        .ok_or_else(|| {
            fail!(
                Check::Algorithms,
                "key agreement without a key-wrap algorithm"
            )
        })?;
    let key_len = match wrap.oid {
        o if o == oids::AES128_WRAP => 16,
        o if o == oids::AES256_WRAP => 32,
        o => {
            return Err(fail!(
                Check::Algorithms,
                "key wrap {} is not supported",
                oids::name(&o)
            ));
        }
    };
    let OriginatorIdentifierOrKey::OriginatorKey(orig) = &k.originator else {
        return Err(fail!(
            Check::Algorithms,
            "key agreement without an ephemeral originator key is not supported"
        ));
    };
    let point = orig.public_key.as_bytes().ok_or_else(|| {
        fail!(
            Check::Header,
            "originator key is not a whole number of bytes"
        )
    })?;
    let si = shared_info(&wrap, k.ukm.as_ref(), key_len)?;
    let peer = UnparsedPublicKey::new(ecdh_alg(*kind), point);
    let kek_bytes = agreement::agree(
        agree,
        peer,
        fail!(Check::Decrypt, "ECDH with the originator key failed"),
        |z| Ok(x963_kdf(md, z, &si, key_len)),
    )?;
    aes_unwrap(kek(&wrap.oid, &kek_bytes)?, rek.enc_key.as_bytes())
}

/// A content key unwrapped (RFC 3394) from `wrapped` under `kek`: what key agreement and
/// ML-KEM recipients both end with.
pub(crate) fn aes_unwrap(kek: AesKek, wrapped: &[u8]) -> Result<Zeroizing<Vec<u8>>> {
    if wrapped.len() < 24 || wrapped.len() > 72 {
        return Err(fail!(
            Check::Decrypt,
            "wrapped key has an impossible length {}",
            wrapped.len()
        ));
    }
    let mut out = Zeroizing::new(vec![0u8; wrapped.len()]);
    let n = kek
        .unwrap(wrapped, &mut out)
        .map_err(|_| {
            fail!(
                Check::Decrypt,
                "AES key unwrap failed: wrong private key, or the message was altered"
            )
        })?
        .len();
    out.truncate(n);
    Ok(out)
}

/// Encodes RecipientInfos as DER (a SET), for caching and for the get-side cache key.
pub fn encode(ris: &RecipientInfos) -> Result<Vec<u8>> {
    ris.to_der().map_err(perr)
}

pub fn decode(raw: &[u8]) -> Result<RecipientInfos> {
    asn1::decode(raw, "RecipientInfos")
}

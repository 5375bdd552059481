//! CMS SignedData (RFC 5652 §5): building it for Integrity and Privacy, and verifying one.

use crate::asn1;
use crate::cert::Cert;
use crate::counters::{Counters, Op};
use crate::error::{Check, ProtectError, Result, fail};
use crate::keys::{KeyKind, PrivateKey};
use crate::oids;
use crate::policy::SignAlg;
use aws_lc_rs::digest;
use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{self, VerificationAlgorithm};
use cms::content_info::CmsVersion;
use cms::signed_data::{SignedData, SignerIdentifier, SignerInfo};
use const_oid::ObjectIdentifier as Oid;
use der::asn1::{OctetString, SetOfVec};
use der::{Any, Decode, Encode};
use spki::AlgorithmIdentifierOwned;
use x509_cert::attr::Attribute;
use x509_cert::time::Time;

/// How a signer signs.
pub struct SignerRef<'a> {
    pub key: &'a PrivateKey,
    pub cert: &'a Cert,
    /// Use RSASSA-PSS instead of PKCS#1 v1.5 for RSA keys.
    pub rsa_pss: bool,
}

/// The digest a key signs with under a policy's SIGNALG. ECDSA keys sign with their curve's
/// digest and Ed25519 with SHA-512 (RFC 8419); a curve weaker than the policy is refused.
pub fn digest_for(kind: KeyKind, policy: SignAlg) -> Result<SignAlg> {
    let natural = match kind {
        KeyKind::Rsa(_) => return Ok(policy.max(SignAlg::Sha256)),
        KeyKind::P256 => SignAlg::Sha256,
        KeyKind::P384 => SignAlg::Sha384,
        KeyKind::Ed25519 => SignAlg::Sha512,
    };
    if natural < policy {
        return Err(ProtectError::Protect(format!(
            "the signer's {} key signs with {}, weaker than the policy's SIGNALG({}); use a \
             stronger key or a SIGNALG the key supports",
            kind.name(),
            natural.name(),
            policy.name()
        )));
    }
    Ok(natural)
}

pub(crate) fn digest_alg(alg: SignAlg) -> &'static digest::Algorithm {
    match alg {
        SignAlg::Sha384 => &digest::SHA384,
        SignAlg::Sha512 => &digest::SHA512,
        _ => &digest::SHA256,
    }
}

fn digest_oid(alg: SignAlg) -> Oid {
    match alg {
        SignAlg::Sha384 => oids::SHA384,
        SignAlg::Sha512 => oids::SHA512,
        _ => oids::SHA256,
    }
}

fn alg_id(oid: Oid, params: Option<Any>) -> AlgorithmIdentifierOwned {
    AlgorithmIdentifierOwned {
        oid,
        parameters: params,
    }
}

fn attr(oid: Oid, value: Any) -> Result<Attribute> {
    let mut values = SetOfVec::new();
    values
        .insert(value)
        .map_err(|e| ProtectError::Protect(format!("attribute: {e}")))?;
    Ok(Attribute { oid, values })
}

fn enc<T: Encode>(v: &T) -> Result<Vec<u8>> {
    v.to_der()
        .map_err(|e| ProtectError::Protect(format!("DER encoding failed: {e}")))
}

fn any<T: Encode>(v: &T) -> Result<Any> {
    Any::from_der(&enc(v)?).map_err(|e| ProtectError::Protect(format!("DER encoding failed: {e}")))
}

fn pss_params(alg: SignAlg) -> Result<Any> {
    let hash = alg_id(digest_oid(alg), None);
    let mgf = alg_id(oids::MGF1, Some(any(&hash)?));
    let p = asn1::RsaPssParams {
        hash: Some(hash),
        mask_gen: Some(mgf),
        salt_len: Some(digest_alg(alg).output_len() as u32),
        trailer: None,
    };
    any(&p)
}

/// Signs `content` and returns the DER of a ContentInfo holding a SignedData with the content
/// encapsulated, the signer's certificate, and signed attributes (content type, signing time,
/// message digest, and `header_core` under sealmq's header-binding attribute when given).
pub fn sign(
    content: &[u8],
    policy_alg: SignAlg,
    signer: &SignerRef<'_>,
    header_core: Option<&[u8]>,
    counters: &Counters,
) -> Result<Vec<u8>> {
    let kind = signer.key.kind();
    let alg = digest_for(kind, policy_alg)?;
    let md = digest::digest(digest_alg(alg), content);

    let attrs = signed_attributes(md.as_ref(), header_core)?;
    let to_sign = enc(&attrs)?;

    let (sig, sig_alg) = counters.time(Op::Sign, || signature(signer, alg, &to_sign))?;

    let si = SignerInfo {
        version: CmsVersion::V1,
        sid: SignerIdentifier::IssuerAndSerialNumber(signer.cert.issuer_and_serial()),
        digest_alg: alg_id(digest_oid(alg), None),
        signed_attrs: Some(attrs),
        signature_algorithm: sig_alg,
        signature: OctetString::new(sig).map_err(|e| ProtectError::Protect(e.to_string()))?,
        unsigned_attrs: None,
    };
    signed_content_info(content, alg, signer.cert, &si)
}

/// The signed attributes: content type, signing time, message digest (`md`), and
/// `header_core` under sealmq's header-binding attribute when given.
fn signed_attributes(md: &[u8], header_core: Option<&[u8]>) -> Result<SetOfVec<Attribute>> {
    let mut attrs: SetOfVec<Attribute> = SetOfVec::new();
    let mut push = |a: Attribute| {
        attrs
            .insert(a)
            .map_err(|e| ProtectError::Protect(format!("signed attributes: {e}")))
    };
    push(attr(oids::ATTR_CONTENT_TYPE, any(&oids::ID_DATA)?)?)?;
    let now = Time::try_from(std::time::SystemTime::now())
        .map_err(|e| ProtectError::Protect(format!("signing time: {e}")))?;
    push(attr(oids::ATTR_SIGNING_TIME, any(&now)?)?)?;
    push(attr(
        oids::ATTR_MESSAGE_DIGEST,
        any(&OctetString::new(md).map_err(|e| ProtectError::Protect(e.to_string()))?)?,
    )?)?;
    if let Some(core) = header_core {
        let v = OctetString::new(core).map_err(|e| ProtectError::Protect(e.to_string()))?;
        push(attr(oids::ATTR_SEALMQ_HEADER, any(&v)?)?)?;
    }
    Ok(attrs)
}

/// The signature over `to_sign` with the signer's key, and its algorithm identifier.
fn signature(
    signer: &SignerRef<'_>,
    alg: SignAlg,
    to_sign: &[u8],
) -> Result<(Vec<u8>, AlgorithmIdentifierOwned)> {
    let rng = SystemRandom::new();
    let sign_err = |_| ProtectError::Protect("signing failed in the crypto library".into());
    match signer.key {
        PrivateKey::Rsa { sign, .. } => {
            let mut out = vec![0u8; sign.public_modulus_len()];
            let (padding, id): (&'static dyn signature::RsaEncoding, _) =
                match (signer.rsa_pss, alg) {
                    (false, SignAlg::Sha384) => (
                        &signature::RSA_PKCS1_SHA384,
                        alg_id(oids::RSA_ENCRYPTION, Some(Any::null())),
                    ),
                    (false, SignAlg::Sha512) => (
                        &signature::RSA_PKCS1_SHA512,
                        alg_id(oids::RSA_ENCRYPTION, Some(Any::null())),
                    ),
                    (false, _) => (
                        &signature::RSA_PKCS1_SHA256,
                        alg_id(oids::RSA_ENCRYPTION, Some(Any::null())),
                    ),
                    (true, SignAlg::Sha384) => (
                        &signature::RSA_PSS_SHA384,
                        alg_id(oids::RSASSA_PSS, Some(pss_params(alg)?)),
                    ),
                    (true, SignAlg::Sha512) => (
                        &signature::RSA_PSS_SHA512,
                        alg_id(oids::RSASSA_PSS, Some(pss_params(alg)?)),
                    ),
                    (true, _) => (
                        &signature::RSA_PSS_SHA256,
                        alg_id(oids::RSASSA_PSS, Some(pss_params(alg)?)),
                    ),
                };
            sign.sign(padding, &rng, to_sign, &mut out)
                .map_err(sign_err)?;
            Ok((out, id))
        }
        PrivateKey::Ec { sign, .. } => {
            let s = sign.sign(&rng, to_sign).map_err(sign_err)?;
            let oid = if alg == SignAlg::Sha384 {
                oids::ECDSA_SHA384
            } else {
                oids::ECDSA_SHA256
            };
            Ok((s.as_ref().to_vec(), alg_id(oid, None)))
        }
        PrivateKey::Ed25519(kp) => {
            let s = kp.try_sign(to_sign).map_err(sign_err)?;
            Ok((s.as_ref().to_vec(), alg_id(oids::ED25519, None)))
        }
        PrivateKey::LegacyRsa(k) => {
            if signer.rsa_pss {
                return Err(ProtectError::Protect(
                    "RSA-PSS is not offered for RSA-1024 keys".into(),
                ));
            }
            let sig = k.sign(alg, to_sign)?;
            Ok((sig, alg_id(oids::RSA_ENCRYPTION, Some(Any::null()))))
        }
    }
}

/// The DER of a ContentInfo holding the SignedData around one signer's `si`: the content
/// encapsulated and the signer's certificate carried as its stored DER. Assembled from its
/// encoded parts rather than through the `cms` types, which re-encoded the whole certificate
/// (its every length computed again at each level) and copied the SignedData twice per
/// message; the bytes are the same (DER has one encoding; tests/roundtrip.rs decodes and
/// re-encodes them).
fn signed_content_info(
    content: &[u8],
    alg: SignAlg,
    cert: &Cert,
    si: &SignerInfo,
) -> Result<Vec<u8>> {
    use crate::derw::{header, tlv, tlv_len};
    const VERSION_1: [u8; 3] = [0x02, 0x01, 0x01]; // CMSVersion v1: INTEGER 1
    let digest_alg = enc(&alg_id(digest_oid(alg), None))?;
    let si = enc(si)?;
    let (id_data, id_signed) = (enc(&oids::ID_DATA)?, enc(&oids::ID_SIGNED_DATA)?);
    // EncapsulatedContentInfo: the content type and [0] EXPLICIT OCTET STRING.
    let econtent = tlv_len(content.len());
    let eci = id_data.len() + tlv_len(econtent);
    let sd = VERSION_1.len()
        + tlv_len(digest_alg.len())
        + tlv_len(eci)
        + tlv_len(cert.der().len())
        + tlv_len(si.len());
    let ci = id_signed.len() + tlv_len(tlv_len(sd));
    let mut out = Vec::with_capacity(tlv_len(ci));
    header(&mut out, 0x30, ci);
    out.extend_from_slice(&id_signed);
    header(&mut out, 0xA0, tlv_len(sd)); // content [0] EXPLICIT
    header(&mut out, 0x30, sd);
    out.extend_from_slice(&VERSION_1);
    tlv(&mut out, 0x31, &digest_alg); // digestAlgorithms SET OF
    header(&mut out, 0x30, eci);
    out.extend_from_slice(&id_data);
    header(&mut out, 0xA0, econtent);
    tlv(&mut out, 0x04, content);
    tlv(&mut out, 0xA0, cert.der()); // certificates [0] IMPLICIT SET OF
    tlv(&mut out, 0x31, &si); // signerInfos SET OF
    Ok(out)
}

/// What verifying a SignedData established (trust in the signer is checked separately).
#[derive(Debug)]
pub struct Verified {
    pub content: Vec<u8>,
    pub signer: Cert,
    /// Digest algorithm strength, for the policy comparison.
    pub digest: SignAlg,
    pub digest_name: String,
    pub signature_name: String,
    /// The sealmq header core found among the signed attributes.
    pub header_core: Option<Vec<u8>>,
}

/// Facts about a SignedData, without verifying anything (for `inspect` and the algorithm check).
#[derive(Debug, Clone)]
pub struct SignedSummary {
    pub digest: Option<SignAlg>,
    pub digest_name: String,
    pub signature_name: String,
    pub signer_dn: Option<String>,
    pub content_len: usize,
}

/// A SignedData as [`parse_signed_data`] reads it.
struct Parsed<'a> {
    sd: SignedData,
    /// The SignedData's DER as the message carries it.
    der: &'a [u8],
    /// Each carried certificate's DER, not decoded.
    certs: Vec<&'a [u8]>,
}

/// A SignedData read from its ContentInfo: its fields decoded except the certificates, which
/// stay raw (each one's DER) until one is needed — a signer the keystore knows by issuer and
/// serial number needs none, and decoding a certificate cost more than all the rest of the
/// SignedData (half of its parse in a profile of Integrity request/reply). Also the
/// SignedData's own DER, as the message carries it.
fn parse_signed_data(der: &[u8]) -> Result<Parsed<'_>> {
    // ContentInfo: SEQUENCE { contentType OID, [0] EXPLICIT content }, nothing after it —
    // walked in place (decoding it copied the whole message into an `Any`).
    let malformed = || fail!(Check::Header, "malformed ContentInfo");
    let outer = only(asn1::children(der)?, "ContentInfo")?;
    let parts = asn1::children(outer.content)?;
    let [oid, explicit] = parts.as_slice() else {
        return Err(malformed());
    };
    if outer.tag != 0x30 || oid.tag != 0x06 || explicit.tag != 0xA0 {
        return Err(malformed());
    }
    let content_type =
        Oid::from_der(oid.whole).map_err(|e| fail!(Check::Header, "malformed ContentInfo: {e}"))?;
    if content_type != oids::ID_SIGNED_DATA {
        return Err(fail!(
            Check::Header,
            "expected SignedData, found content type {}",
            oids::name(&content_type)
        ));
    }
    let sd = only(asn1::children(explicit.content)?, "SignedData")?;
    if sd.tag != 0x30 {
        return Err(fail!(Check::Header, "SignedData is not a SEQUENCE"));
    }
    let fields = asn1::children(sd.content)?;
    let kept = || fields.iter().filter(|f| f.tag != 0xA0);
    let certs = match fields.iter().find(|f| f.tag == 0xA0) {
        Some(set) => asn1::children(set.content)?
            .iter()
            .map(|c| c.whole)
            .collect(),
        None => Vec::new(),
    };
    let mut without = Vec::with_capacity(sd.whole.len());
    crate::derw::header(&mut without, 0x30, kept().map(|f| f.whole.len()).sum());
    kept().for_each(|f| without.extend_from_slice(f.whole));
    Ok(Parsed {
        sd: asn1::decode(&without, "SignedData")?,
        der: sd.whole,
        certs,
    })
}

/// The single TLV of `tlvs`, else `what` is malformed.
fn only<'a>(tlvs: Vec<asn1::Tlv<'a>>, what: &str) -> Result<asn1::Tlv<'a>> {
    match tlvs.as_slice() {
        [one] => Ok(*one),
        _ => Err(fail!(Check::Header, "malformed {what}")),
    }
}

fn digest_strength(oid: &Oid) -> Option<SignAlg> {
    match *oid {
        o if o == oids::SHA256 => Some(SignAlg::Sha256),
        o if o == oids::SHA384 => Some(SignAlg::Sha384),
        o if o == oids::SHA512 => Some(SignAlg::Sha512),
        _ => None,
    }
}

/// Reads what a SignedData claims (no cryptography).
pub fn summarize(der: &[u8]) -> Result<SignedSummary> {
    let Parsed { sd, certs, .. } = parse_signed_data(der)?;
    let si = sd
        .signer_infos
        .0
        .iter()
        .next()
        .ok_or_else(|| fail!(Check::Signature, "SignedData has no signer"))?;
    let signer_dn = find_signer_cert(&certs, &si.sid, &[])
        .ok()
        .map(|c| c.subject().to_string());
    let content_len = sd
        .encap_content_info
        .econtent
        .as_ref()
        .and_then(|a| OctetString::from_der(&a.to_der().ok()?).ok())
        .map(|o| o.as_bytes().len())
        .unwrap_or(0);
    Ok(SignedSummary {
        digest: digest_strength(&si.digest_alg.oid),
        digest_name: oids::name(&si.digest_alg.oid),
        signature_name: oids::name(&si.signature_algorithm.oid),
        signer_dn,
        content_len,
    })
}

/// The signer's certificate: a keystore certificate when one matches the signer identifier
/// (no parsing needed, and its key is the one trusted), else the one the message carries.
fn find_signer_cert(embedded: &[&[u8]], sid: &SignerIdentifier, known: &[Cert]) -> Result<Cert> {
    let matches_x509 = |c: &x509_cert::Certificate| match sid {
        SignerIdentifier::IssuerAndSerialNumber(ias) => {
            c.tbs_certificate.serial_number == ias.serial_number
                && c.tbs_certificate.issuer == ias.issuer
        }
        SignerIdentifier::SubjectKeyIdentifier(_) => false,
    };
    let matches = |c: &Cert| match sid {
        SignerIdentifier::IssuerAndSerialNumber(ias) => {
            matches_x509(c.x509()) || c.matches_issuer_serial(ias)
        }
        SignerIdentifier::SubjectKeyIdentifier(skid) => {
            c.subject_key_id().as_deref() == Some(skid.0.as_bytes())
        }
    };
    if let Some(c) = known.iter().find(|c| matches(c)) {
        return Ok(c.clone());
    }
    // Only a Certificate (a SEQUENCE) among the CertificateChoices; one that is looked at
    // and cannot be read makes the message malformed, as when the set was decoded whole.
    for raw in embedded.iter().filter(|c| c.first() == Some(&0x30)) {
        let c: x509_cert::Certificate = asn1::decode(raw, "SignedData certificate")?;
        if matches_x509(&c) {
            return Cert::from_parsed(c, raw.to_vec());
        }
        if let Ok(parsed) = Cert::from_parsed(c, raw.to_vec())
            && matches(&parsed)
        {
            return Ok(parsed);
        }
    }
    Err(fail!(
        Check::Signature,
        "the signer's certificate is neither in the message nor in the keystore"
    ))
}

fn verification_alg(
    sig_alg: &AlgorithmIdentifierOwned,
    digest: SignAlg,
    kind: KeyKind,
) -> Result<&'static dyn VerificationAlgorithm> {
    use signature as s;
    let mismatch = || {
        fail!(
            Check::Algorithms,
            "signature algorithm {} does not fit a {} key with digest {}",
            oids::name(&sig_alg.oid),
            kind.name(),
            digest.name()
        )
    };
    let oid = sig_alg.oid;
    let alg: &'static dyn VerificationAlgorithm = match kind {
        KeyKind::Rsa(_)
            if oid == oids::RSA_ENCRYPTION
                || oid == oids::SHA256_WITH_RSA
                || oid == oids::SHA384_WITH_RSA
                || oid == oids::SHA512_WITH_RSA =>
        {
            let implied = match oid {
                o if o == oids::SHA256_WITH_RSA => Some(SignAlg::Sha256),
                o if o == oids::SHA384_WITH_RSA => Some(SignAlg::Sha384),
                o if o == oids::SHA512_WITH_RSA => Some(SignAlg::Sha512),
                _ => None,
            };
            if implied.is_some_and(|i| i != digest) {
                return Err(mismatch());
            }
            match digest {
                SignAlg::Sha384 => &s::RSA_PKCS1_2048_8192_SHA384,
                SignAlg::Sha512 => &s::RSA_PKCS1_2048_8192_SHA512,
                _ => &s::RSA_PKCS1_2048_8192_SHA256,
            }
        }
        KeyKind::Rsa(_) if oid == oids::RSASSA_PSS => {
            let params: asn1::RsaPssParams = sig_alg
                .parameters
                .as_ref()
                .and_then(|p| p.decode_as().ok())
                .ok_or_else(|| fail!(Check::Algorithms, "RSA-PSS without readable parameters"))?;
            let hash = params.hash.map(|h| h.oid).unwrap_or(oids::SHA1);
            if digest_strength(&hash) != Some(digest) {
                return Err(mismatch());
            }
            let salt = params.salt_len.unwrap_or(20) as usize;
            if salt != digest_alg(digest).output_len() {
                return Err(fail!(
                    Check::Algorithms,
                    "RSA-PSS salt length {salt} is not supported (sealmq expects the digest length)"
                ));
            }
            match digest {
                SignAlg::Sha384 => &s::RSA_PSS_2048_8192_SHA384,
                SignAlg::Sha512 => &s::RSA_PSS_2048_8192_SHA512,
                _ => &s::RSA_PSS_2048_8192_SHA256,
            }
        }
        KeyKind::P256 | KeyKind::P384
            if oid == oids::ECDSA_SHA256
                || oid == oids::ECDSA_SHA384
                || oid == oids::ECDSA_SHA512 =>
        {
            match (kind, digest) {
                (KeyKind::P256, SignAlg::Sha256) => &s::ECDSA_P256_SHA256_ASN1,
                (KeyKind::P256, SignAlg::Sha384) => &s::ECDSA_P256_SHA384_ASN1,
                (KeyKind::P256, SignAlg::Sha512) => &s::ECDSA_P256_SHA512_ASN1,
                (KeyKind::P384, SignAlg::Sha256) => &s::ECDSA_P384_SHA256_ASN1,
                (KeyKind::P384, SignAlg::Sha384) => &s::ECDSA_P384_SHA384_ASN1,
                (KeyKind::P384, SignAlg::Sha512) => &s::ECDSA_P384_SHA512_ASN1,
                _ => return Err(mismatch()),
            }
        }
        KeyKind::Ed25519 if oid == oids::ED25519 => &s::ED25519,
        _ => return Err(mismatch()),
    };
    Ok(alg)
}

/// Verifies a SignedData ContentInfo: structure, digest algorithm, content-type and
/// message-digest attributes, and the signature. `known` supplies certificates to find the
/// signer when the message does not carry it.
/// `min_digest` is the policy's SIGNALG: a weaker digest fails the `algorithms` check before
/// any signature work. `allow_rsa1024` is the insecure switch: without it a signer key under
/// 2048 bits is refused.
pub fn verify(
    der: &[u8],
    known: &[Cert],
    min_digest: SignAlg,
    allow_rsa1024: bool,
    counters: &Counters,
) -> Result<Verified> {
    let Parsed {
        sd,
        der: sd_der,
        certs,
    } = parse_signed_data(der)?;
    let raw_attrs = asn1::raw_signed_attrs(sd_der)?;
    let si = sd
        .signer_infos
        .0
        .iter()
        .next()
        .ok_or_else(|| fail!(Check::Signature, "SignedData has no signer"))?;
    let digest_oid_seen = si.digest_alg.oid;
    let digest = checked_digest(&digest_oid_seen, min_digest)?;
    // The SignedData's list of digest algorithms (outside the signature) must be the signer's:
    // a message whose unsigned parts were altered is refused, not read.
    if sd
        .digest_algorithms
        .iter()
        .any(|a| a.oid != digest_oid_seen)
    {
        return Err(fail!(
            Check::Header,
            "SignedData lists digest algorithms other than its signer's"
        ));
    }
    let econtent = sd.encap_content_info.econtent.as_ref().ok_or_else(|| {
        fail!(
            Check::Header,
            "SignedData is detached (no encapsulated content)"
        )
    })?;
    let content = OctetString::from_der(
        &econtent
            .to_der()
            .map_err(|e| fail!(Check::Header, "eContent: {e}"))?,
    )
    .map_err(|e| fail!(Check::Header, "eContent is not an OCTET STRING: {e}"))?
    .into_bytes();
    let signer = find_signer_cert(&certs, &si.sid, known)?;
    let (alg, legacy) = signer_alg(si, &signer, digest, allow_rsa1024)?;

    let econtent_type = sd.encap_content_info.econtent_type;
    let (signed_bytes, header_core) = signed_bytes(
        si.signed_attrs.as_ref(),
        raw_attrs,
        digest,
        &content,
        econtent_type,
    )?;
    counters
        .time(Op::Verify, || {
            if legacy {
                crate::legacy::verify(
                    &signer.public_key().spki_der,
                    digest,
                    &signed_bytes,
                    si.signature.as_bytes(),
                )
                .map_err(|_| aws_lc_rs::error::Unspecified)
            } else {
                aws_lc_rs::signature::UnparsedPublicKey::new(alg, &signer.public_key().raw)
                    .verify(&signed_bytes, si.signature.as_bytes())
            }
        })
        .map_err(|_| {
            fail!(
                Check::Signature,
                "signature by '{}' does not verify (message altered or wrong key)",
                signer.subject()
            )
        })?;
    Ok(Verified {
        content,
        signer,
        digest,
        digest_name: oids::name(&digest_oid_seen),
        signature_name: oids::name(&si.signature_algorithm.oid),
        header_core,
    })
}

/// The signer's digest algorithm, refused when insecure, unknown, or weaker than the
/// policy's SIGNALG (`min_digest`).
fn checked_digest(oid: &Oid, min_digest: SignAlg) -> Result<SignAlg> {
    let digest = digest_strength(oid).ok_or_else(|| {
        if *oid == oids::SHA1 || *oid == oids::MD5 {
            fail!(
                Check::Algorithms,
                "digest {} is insecure and refused",
                oids::name(oid)
            )
        } else {
            fail!(
                Check::Algorithms,
                "digest {} is not supported",
                oids::name(oid)
            )
        }
    })?;
    if digest < min_digest {
        return Err(fail!(
            Check::Algorithms,
            "message is signed with {} but {} is required",
            digest.name(),
            min_digest.name()
        ));
    }
    Ok(digest)
}

/// The verification algorithm of the signature, fitting the signer's key and the digest;
/// with whether the key is an insecure RSA-1024 one (verified by `legacy`, and only with
/// the insecure switch, `allow_rsa1024`).
fn signer_alg(
    si: &SignerInfo,
    signer: &Cert,
    digest: SignAlg,
    allow_rsa1024: bool,
) -> Result<(&'static dyn VerificationAlgorithm, bool)> {
    let kind = signer.public_key().kind;
    let legacy = crate::keys::is_insecure(kind);
    if legacy && !allow_rsa1024 {
        return Err(fail!(
            Check::Algorithms,
            "signer '{}' has an {} key, which is insecure and refused (the insecure RSA-1024 switch is off)",
            signer.subject(),
            kind.name()
        ));
    }
    let alg = if legacy {
        if si.signature_algorithm.oid == oids::RSASSA_PSS {
            return Err(fail!(
                Check::Algorithms,
                "RSA-PSS with an RSA-1024 key is not supported"
            ));
        }
        // Checks the algorithm fits the key and digest; the verification itself is legacy's.
        verification_alg(&si.signature_algorithm, digest, KeyKind::Rsa(2048))?
    } else {
        verification_alg(&si.signature_algorithm, digest, kind)?
    };
    Ok((alg, legacy))
}

/// The bytes the signature covers: the DER of the signed attributes, once their
/// content-type and message-digest attributes match the content (with sealmq's header
/// attribute, when present); the content itself when there are none.
fn signed_bytes(
    attrs: Option<&cms::signed_data::SignedAttributes>,
    raw_attrs: Option<Vec<u8>>,
    digest: SignAlg,
    content: &[u8],
    econtent_type: Oid,
) -> Result<(Vec<u8>, Option<Vec<u8>>)> {
    let mut header_core = None;
    let signed_bytes: Vec<u8> = match (attrs, raw_attrs) {
        (Some(attrs), Some(raw)) => {
            let mut ct_ok = false;
            let mut md_ok = false;
            let md = digest::digest(digest_alg(digest), content);
            for a in attrs.iter() {
                let first = a.values.iter().next();
                if a.oid == oids::ATTR_CONTENT_TYPE {
                    ct_ok = a.values.len() == 1
                        && first.and_then(|v| v.decode_as::<Oid>().ok()) == Some(econtent_type);
                } else if a.oid == oids::ATTR_MESSAGE_DIGEST {
                    md_ok = a.values.len() == 1
                        && first
                            .and_then(|v| v.decode_as::<OctetString>().ok())
                            .is_some_and(|o| o.as_bytes() == md.as_ref());
                } else if a.oid == oids::ATTR_SEALMQ_HEADER {
                    header_core = first
                        .and_then(|v| v.decode_as::<OctetString>().ok())
                        .map(|o| o.into_bytes());
                }
            }
            if !ct_ok {
                return Err(fail!(
                    Check::Signature,
                    "content-type attribute missing or wrong"
                ));
            }
            if !md_ok {
                return Err(fail!(
                    Check::Signature,
                    "message digest does not match the content (content altered)"
                ));
            }
            raw
        }
        (None, None) => content.to_vec(),
        _ => return Err(fail!(Check::Header, "signed attributes are malformed")),
    };
    Ok((signed_bytes, header_core))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn curve_weaker_than_policy_is_refused() {
        assert_eq!(
            digest_for(KeyKind::P256, SignAlg::Sha256).unwrap(),
            SignAlg::Sha256
        );
        assert_eq!(
            digest_for(KeyKind::P384, SignAlg::Sha256).unwrap(),
            SignAlg::Sha384
        );
        assert!(digest_for(KeyKind::P256, SignAlg::Sha512).is_err());
        assert_eq!(
            digest_for(KeyKind::Ed25519, SignAlg::Sha256).unwrap(),
            SignAlg::Sha512
        );
        assert_eq!(
            digest_for(KeyKind::Rsa(2048), SignAlg::Sha384).unwrap(),
            SignAlg::Sha384
        );
    }
}

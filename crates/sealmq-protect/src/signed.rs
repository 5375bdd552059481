//! CMS SignedData (RFC 5652 §5): building it for Integrity and Privacy, and verifying one.

use crate::asn1::{self, Tlv};
use crate::cert::Cert;
use crate::counters::{Counters, Op};
use crate::derw::{header, tlv, tlv_len};
use crate::error::{Check, ProtectError, Result, fail};
use crate::keys::{KeyKind, PrivateKey};
use crate::oids;
use crate::policy::SignAlg;
use crate::signedview::{self, Sid};
use aws_lc_rs::digest;
use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{self, VerificationAlgorithm};
use cms::cert::IssuerAndSerialNumber;
use const_oid::ObjectIdentifier as Oid;
use der::{Any, Decode, Encode};
use spki::AlgorithmIdentifierOwned;
use x509_cert::time::Time;

/// How a signer signs.
pub struct SignerRef<'a> {
    pub key: &'a PrivateKey,
    pub cert: &'a Cert,
    /// Use RSASSA-PSS instead of PKCS#1 v1.5 for RSA keys.
    pub rsa_pss: bool,
}

/// The refusal to sign with a key that only decapsulates.
fn cannot_sign(kind: KeyKind) -> ProtectError {
    ProtectError::Protect(format!(
        "the signer's key is {}, which cannot sign; Integrity and Privacy need a signing \
         identity (RSA, EC or Ed25519) in the putting application's keystore",
        kind.name()
    ))
}

/// The digest a key signs with under a policy's SIGNALG. ECDSA keys sign with their curve's
/// digest and Ed25519 with SHA-512 (RFC 8419); a curve weaker than the policy is refused.
pub fn digest_for(kind: KeyKind, policy: SignAlg) -> Result<SignAlg> {
    let natural = match kind {
        KeyKind::Rsa(_) => return Ok(policy.max(SignAlg::Sha256)),
        KeyKind::P256 => SignAlg::Sha256,
        KeyKind::P384 => SignAlg::Sha384,
        KeyKind::Ed25519 => SignAlg::Sha512,
        KeyKind::MlKem(_) => return Err(cannot_sign(kind)),
        // RFC 9882: SHA-512 with every parameter set.
        KeyKind::MlDsa(_) => SignAlg::Sha512,
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

    let to_sign = signed_attributes(md.as_ref(), header_core)?;
    let (sig, sig_alg) = counters.time(Op::Sign, || signature(signer, alg, &to_sign))?;
    let digest_alg = alg_der(&digest_oid(alg));
    let si = signer_info(signer.cert, &digest_alg, &to_sign, &enc(&sig_alg)?, &sig);
    Ok(signed_content_info(content, &digest_alg, signer.cert, &si))
}

/// The DER of an AlgorithmIdentifier without parameters.
fn alg_der(oid: &Oid) -> Vec<u8> {
    let mut out = Vec::with_capacity(4 + oid.as_bytes().len());
    header(&mut out, 0x30, tlv_len(oid.as_bytes().len()));
    tlv(&mut out, 0x06, oid.as_bytes());
    out
}

/// The DER of an Attribute with one value (`value` is that value's whole DER).
fn attr_der(oid: &Oid, value: &[u8]) -> Vec<u8> {
    let len = tlv_len(oid.as_bytes().len()) + tlv_len(value.len());
    let mut out = Vec::with_capacity(tlv_len(len));
    header(&mut out, 0x30, len);
    tlv(&mut out, 0x06, oid.as_bytes());
    tlv(&mut out, 0x31, value);
    out
}

/// The signed attributes as the SET OF that the signature covers: content type, signing
/// time, message digest (`md`), and `header_core` under sealmq's header-binding attribute
/// when given; in DER's order (each element's encoding ascending, X.690 §11.6).
fn signed_attributes(md: &[u8], header_core: Option<&[u8]>) -> Result<Vec<u8>> {
    let octets = |v: &[u8]| {
        let mut out = Vec::with_capacity(tlv_len(v.len()));
        tlv(&mut out, 0x04, v);
        out
    };
    let now = Time::try_from(std::time::SystemTime::now())
        .map_err(|e| ProtectError::Protect(format!("signing time: {e}")))?;
    let mut attrs = vec![
        attr_der(&oids::ATTR_CONTENT_TYPE, &oid_tlv(&oids::ID_DATA)),
        attr_der(&oids::ATTR_SIGNING_TIME, &enc(&now)?),
        attr_der(&oids::ATTR_MESSAGE_DIGEST, &octets(md)),
    ];
    if let Some(core) = header_core {
        attrs.push(attr_der(&oids::ATTR_SEALMQ_HEADER, &octets(core)));
    }
    attrs.sort();
    let len = attrs.iter().map(Vec::len).sum();
    let mut out = Vec::with_capacity(tlv_len(len));
    header(&mut out, 0x31, len);
    attrs.iter().for_each(|a| out.extend_from_slice(a));
    Ok(out)
}

/// The DER of a version-1 SignerInfo: the signer named by issuer and serial number, the
/// signed attributes (`attrs` as signed, a SET OF, carried as [0] IMPLICIT), the signature.
fn signer_info(
    cert: &Cert,
    digest_alg: &[u8],
    attrs: &[u8],
    sig_alg: &[u8],
    sig: &[u8],
) -> Vec<u8> {
    const VERSION_1: [u8; 3] = [0x02, 0x01, 0x01];
    let len = VERSION_1.len()
        + cert.ias_der().len()
        + digest_alg.len()
        + attrs.len()
        + sig_alg.len()
        + tlv_len(sig.len());
    let mut out = Vec::with_capacity(tlv_len(len));
    header(&mut out, 0x30, len);
    out.extend_from_slice(&VERSION_1);
    out.extend_from_slice(cert.ias_der());
    out.extend_from_slice(digest_alg);
    out.push(0xA0); // [0] IMPLICIT: the SET OF's tag replaced, its length and content kept
    out.extend_from_slice(&attrs[1..]);
    out.extend_from_slice(sig_alg);
    tlv(&mut out, 0x04, sig);
    out
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
        PrivateKey::MlKem(k) => Err(cannot_sign(KeyKind::MlKem(k.level.level))),
        PrivateKey::MlDsa { level, sign } => {
            let mut out = vec![0u8; level.signing.signature_len()];
            let n = sign.sign(to_sign, &mut out).map_err(sign_err)?;
            out.truncate(n);
            Ok((out, alg_id(level.oid, None)))
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
fn signed_content_info(content: &[u8], digest_alg: &[u8], cert: &Cert, si: &[u8]) -> Vec<u8> {
    const VERSION_1: [u8; 3] = [0x02, 0x01, 0x01]; // CMSVersion v1: INTEGER 1
    let id_data = oid_tlv(&oids::ID_DATA);
    let id_signed = oid_tlv(&oids::ID_SIGNED_DATA);
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
    tlv(&mut out, 0x31, digest_alg); // digestAlgorithms SET OF
    header(&mut out, 0x30, eci);
    out.extend_from_slice(&id_data);
    header(&mut out, 0xA0, econtent);
    tlv(&mut out, 0x04, content);
    tlv(&mut out, 0xA0, cert.der()); // certificates [0] IMPLICIT SET OF
    tlv(&mut out, 0x31, si); // signerInfos SET OF
    out
}

fn oid_tlv(oid: &Oid) -> Vec<u8> {
    let mut out = Vec::with_capacity(tlv_len(oid.as_bytes().len()));
    tlv(&mut out, 0x06, oid.as_bytes());
    out
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
    let v = signedview::read(der)?;
    let si = &v.signer;
    let signer_dn = find_signer_cert(&v.certs, si.sid, &[])
        .ok()
        .map(|c| c.subject().to_string());
    Ok(SignedSummary {
        digest: digest_strength(&si.digest_alg),
        digest_name: oids::name(&si.digest_alg),
        signature_name: oids::name(&si.signature_alg.oid),
        signer_dn,
        content_len: v.content.map_or(0, <[u8]>::len),
    })
}

/// The signer's certificate: a keystore certificate when one matches the signer identifier
/// (no parsing needed, and its key is the one trusted), else the one the message carries.
/// An identifier spelled as the keystore certificate spells its issuer and serial number is
/// matched byte for byte; any other is decoded and compared as names.
fn find_signer_cert(embedded: &[&[u8]], sid: Sid<'_>, known: &[Cert]) -> Result<Cert> {
    if let Sid::IssuerSerial(raw) = sid
        && let Some(c) = known.iter().find(|c| c.ias_der() == raw)
    {
        return Ok(c.clone());
    }
    let ias: Option<IssuerAndSerialNumber> = match sid {
        Sid::IssuerSerial(raw) => Some(asn1::decode(raw, "SignerIdentifier")?),
        Sid::KeyId(_) => None,
    };
    let matches_x509 = |c: &x509_cert::Certificate| {
        ias.as_ref().is_some_and(|ias| {
            c.tbs_certificate.serial_number == ias.serial_number
                && c.tbs_certificate.issuer == ias.issuer
        })
    };
    let matches = |c: &Cert| match (sid, &ias) {
        (Sid::IssuerSerial(_), Some(ias)) => matches_x509(c.x509()) || c.matches_issuer_serial(ias),
        (Sid::KeyId(k), _) => c.subject_key_id().as_deref() == Some(k),
        _ => false,
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
        KeyKind::MlDsa(level)
            if sig_alg.parameters.is_none()
                && crate::mldsa::Level::by_oid(&oid).is_some_and(|l| l.level == level) =>
        {
            crate::mldsa::Level::by_oid(&oid)
                .map(|l| l.verifying)
                .ok_or_else(mismatch)?
        }
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
    let v = signedview::read(der)?;
    if v.signer_count != 1 {
        return Err(fail!(
            Check::Signature,
            "message has {} signers; sealmq expects exactly one",
            v.signer_count
        ));
    }
    let si = &v.signer;
    let digest = checked_digest(&si.digest_alg, min_digest)?;
    // The SignedData's list of digest algorithms (outside the signature) must be the signer's:
    // a message whose unsigned parts were altered is refused, not read.
    if v.digest_algs.iter().any(|a| *a != si.digest_alg) {
        return Err(fail!(
            Check::Header,
            "SignedData lists digest algorithms other than its signer's"
        ));
    }
    let content = v.content.ok_or_else(|| {
        fail!(
            Check::Header,
            "SignedData is detached (no encapsulated content)"
        )
    })?;
    let signer = find_signer_cert(&v.certs, si.sid, known)?;
    let (alg, legacy) = signer_alg(&si.signature_alg, &signer, digest, allow_rsa1024)?;
    let (signed_bytes, header_core) =
        signed_bytes(si.signed_attrs.as_ref(), digest, content, v.econtent_type)?;
    counters
        .time(Op::Verify, || {
            if legacy {
                crate::legacy::verify(
                    &signer.public_key().spki_der,
                    digest,
                    &signed_bytes,
                    si.signature,
                )
                .map_err(|_| aws_lc_rs::error::Unspecified)
            } else {
                aws_lc_rs::signature::UnparsedPublicKey::new(alg, &signer.public_key().raw)
                    .verify(&signed_bytes, si.signature)
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
        content: content.to_vec(),
        signer,
        digest,
        digest_name: oids::name(&si.digest_alg),
        signature_name: oids::name(&si.signature_alg.oid),
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
    signature_alg: &AlgorithmIdentifierOwned,
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
        if signature_alg.oid == oids::RSASSA_PSS {
            return Err(fail!(
                Check::Algorithms,
                "RSA-PSS with an RSA-1024 key is not supported"
            ));
        }
        // Checks the algorithm fits the key and digest; the verification itself is legacy's.
        verification_alg(signature_alg, digest, KeyKind::Rsa(2048))?
    } else {
        verification_alg(signature_alg, digest, kind)?
    };
    Ok((alg, legacy))
}

/// The bytes the signature covers: the DER of the signed attributes, once their
/// content-type and message-digest attributes match the content (with sealmq's header
/// attribute, when present); the content itself when there are none.
fn signed_bytes(
    attrs: Option<&Tlv<'_>>,
    digest: SignAlg,
    content: &[u8],
    econtent_type: &[u8],
) -> Result<(Vec<u8>, Option<Vec<u8>>)> {
    let Some(attrs) = attrs else {
        return Ok((content.to_vec(), None));
    };
    let (mut ct, mut md, mut header) = (None, None, None);
    for a in signedview::attributes(attrs)? {
        let slot = match a.oid {
            o if o == oids::ATTR_CONTENT_TYPE.as_bytes() => &mut ct,
            o if o == oids::ATTR_MESSAGE_DIGEST.as_bytes() => &mut md,
            o if o == oids::ATTR_SEALMQ_HEADER.as_bytes() => &mut header,
            _ => continue,
        };
        // RFC 5652 §11: each of these attributes once, with one value.
        if slot.replace(a.values).is_some() {
            return Err(fail!(Check::Signature, "a signed attribute appears twice"));
        }
    }
    let one = |values: Option<Vec<Tlv<'_>>>, tag: u8, want: &[u8]| matches!(values.as_deref(), Some([v]) if v.tag == tag && v.content == want);
    if !one(ct, 0x06, econtent_type) {
        return Err(fail!(
            Check::Signature,
            "content-type attribute missing or wrong"
        ));
    }
    let expected = digest::digest(digest_alg(digest), content);
    if !one(md, 0x04, expected.as_ref()) {
        return Err(fail!(
            Check::Signature,
            "message digest does not match the content (content altered)"
        ));
    }
    let header_core = header.and_then(|v| {
        v.first()
            .filter(|t| t.tag == 0x04)
            .map(|t| t.content.to_vec())
    });
    Ok((signedview::signed_attrs_der(attrs), header_core))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Signed attributes as a SignerInfo carries them ([0] IMPLICIT), from `attrs`.
    fn carried(attrs: &[Vec<u8>]) -> Vec<u8> {
        let mut out = Vec::new();
        header(&mut out, 0xA0, attrs.iter().map(Vec::len).sum());
        attrs.iter().for_each(|a| out.extend_from_slice(a));
        out
    }

    #[test]
    fn signed_attributes_are_checked_each_once() {
        let content = b"pay 100";
        let md = digest::digest(&digest::SHA256, content);
        let mut octets = Vec::new();
        tlv(&mut octets, 0x04, md.as_ref());
        let ct = attr_der(&oids::ATTR_CONTENT_TYPE, &oid_tlv(&oids::ID_DATA));
        let good = attr_der(&oids::ATTR_MESSAGE_DIGEST, &octets);
        let id_data = oids::ID_DATA.as_bytes();
        let check = |attrs: &[Vec<u8>]| {
            let der = carried(attrs);
            let t = asn1::children(&der).unwrap()[0];
            signed_bytes(Some(&t), SignAlg::Sha256, content, id_data).map(|(b, _)| b)
        };
        let ok = check(&[ct.clone(), good.clone()]).unwrap();
        assert_eq!(ok[0], 0x31, "the signature covers a SET OF");
        // A second message digest (even an equal one) is refused: which one counts would be
        // up to the reader.
        let twice = check(&[ct.clone(), good.clone(), good.clone()]).unwrap_err();
        assert!(twice.to_string().contains("twice"), "{twice}");
        let mut wrong = octets.clone();
        *wrong.last_mut().unwrap() ^= 1;
        let altered = attr_der(&oids::ATTR_MESSAGE_DIGEST, &wrong);
        assert!(check(&[ct.clone(), altered]).is_err());
        assert!(
            check(std::slice::from_ref(&good)).is_err(),
            "no content type"
        );
        let other_type = attr_der(&oids::ATTR_CONTENT_TYPE, &oid_tlv(&oids::ID_SIGNED_DATA));
        assert!(check(&[other_type, good]).is_err());
    }

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

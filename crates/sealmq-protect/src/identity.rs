//! Making identities: key pairs with self-signed or CA-signed certificates, and CRLs.
//! Certificates are built with `rcgen` (on aws-lc-rs); keys come from [`PrivateKey::generate`].

use crate::cert::Cert;
use crate::dn::Dn;
use crate::error::{ProtectError, Result};
use crate::keys::{KeyKind, PrivateKey, insecure_key, is_insecure};
use crate::legacy::LegacyRsa;
use der::Decode;
use rcgen::{
    BasicConstraints, CertificateParams, CertificateRevocationListParams, DistinguishedName,
    DnType, IsCa, Issuer, KeyIdMethod, KeyPair, KeyUsagePurpose, PublicKeyData, RevokedCertParams,
    SerialNumber, SigningKey,
};
use rustls_pki_types::{CertificateDer, PrivatePkcs8KeyDer};
use std::time::{Duration, SystemTime};
use time::OffsetDateTime;
use zeroize::Zeroizing;

/// What a new identity should be.
pub struct IdentitySpec {
    pub dn: Dn,
    pub kind: KeyKind,
    /// A CA identity (basicConstraints CA, keyCertSign, cRLSign) that can sign others.
    pub authority: bool,
    pub not_before: SystemTime,
    pub not_after: SystemTime,
    /// The explicit insecure switch: allow an RSA-1024 key.
    pub insecure_rsa1024: bool,
    /// Host names and IP addresses for the certificate's subjectAltName (a server that HTTPS
    /// clients check by host name: the queue manager's REST API). Empty: none.
    pub hosts: Vec<String>,
}

impl IdentitySpec {
    /// Valid from an hour ago for `days` days.
    pub fn new(dn: Dn, kind: KeyKind, days: u32) -> IdentitySpec {
        let now = SystemTime::now();
        IdentitySpec {
            dn,
            kind,
            authority: false,
            not_before: now - Duration::from_secs(3600),
            not_after: now + Duration::from_secs(u64::from(days) * 86_400),
            insecure_rsa1024: false,
            hosts: Vec::new(),
        }
    }
}

/// A CA that signs: its certificate and PKCS#8 key.
pub struct Signer<'a> {
    pub cert: &'a Cert,
    pub pkcs8: &'a [u8],
}

/// A made identity: certificate and PKCS#8 private key.
pub struct MadeIdentity {
    pub cert: Cert,
    pub pkcs8: Zeroizing<Vec<u8>>,
}

fn rerr(e: impl std::fmt::Display) -> ProtectError {
    ProtectError::Credential(format!("certificate generation: {e}"))
}

fn odt(t: SystemTime) -> Result<OffsetDateTime> {
    let secs = match t.duration_since(SystemTime::UNIX_EPOCH) {
        Ok(d) => d.as_secs() as i64,
        Err(e) => -(e.duration().as_secs() as i64),
    };
    OffsetDateTime::from_unix_timestamp(secs).map_err(rerr)
}

fn rcgen_alg(kind: KeyKind) -> &'static rcgen::SignatureAlgorithm {
    match kind {
        // Never used to sign (see `SubjectKey`): rcgen asks every key for an algorithm.
        KeyKind::MlKem(_) => &rcgen::PKCS_ECDSA_P256_SHA256,
        KeyKind::MlDsa(level) => crate::mldsa::Level::of(level)
            .map(|l| l.rcgen)
            .unwrap_or(&rcgen::PKCS_ML_DSA_65),
        KeyKind::Rsa(_) => &rcgen::PKCS_RSA_SHA256,
        KeyKind::P256 => &rcgen::PKCS_ECDSA_P256_SHA256,
        KeyKind::P384 => &rcgen::PKCS_ECDSA_P384_SHA384,
        KeyKind::Ed25519 => &rcgen::PKCS_ED25519,
    }
}

/// A key rcgen can sign certificates with: its own, or an RSA-1024 key through `legacy`.
enum SignKey {
    Rcgen(KeyPair),
    Legacy {
        key: LegacyRsa,
        raw_public: Vec<u8>,
    },
    /// rcgen signs with ML-DSA but cannot load its keys.
    MlDsa {
        level: &'static crate::mldsa::Level,
        key: aws_lc_rs::signature::PqdsaKeyPair,
    },
}

impl PublicKeyData for SignKey {
    fn der_bytes(&self) -> &[u8] {
        match self {
            SignKey::Rcgen(k) => k.der_bytes(),
            SignKey::Legacy { raw_public, .. } => raw_public,
            SignKey::MlDsa { key, .. } => {
                use aws_lc_rs::signature::KeyPair;
                key.public_key().as_ref()
            }
        }
    }

    fn algorithm(&self) -> &'static rcgen::SignatureAlgorithm {
        match self {
            SignKey::Rcgen(k) => PublicKeyData::algorithm(k),
            SignKey::Legacy { .. } => &rcgen::PKCS_RSA_SHA256,
            SignKey::MlDsa { level, .. } => level.rcgen,
        }
    }
}

impl SigningKey for SignKey {
    fn sign(&self, msg: &[u8]) -> std::result::Result<Vec<u8>, rcgen::Error> {
        match self {
            SignKey::Rcgen(k) => k.sign(msg),
            SignKey::Legacy { key, .. } => key
                .sign(crate::policy::SignAlg::Sha256, msg)
                .map_err(|_| rcgen::Error::RemoteKeyError),
            SignKey::MlDsa { level, key } => {
                let mut sig = vec![0u8; level.signing.signature_len()];
                let n = key
                    .sign(msg, &mut sig)
                    .map_err(|_| rcgen::Error::RemoteKeyError)?;
                sig.truncate(n);
                Ok(sig)
            }
        }
    }
}

fn rcgen_key(pkcs8: &[u8], kind: KeyKind) -> Result<SignKey> {
    if let KeyKind::MlDsa(level) = kind {
        let level = crate::mldsa::Level::of(level).ok_or_else(|| rerr("unknown ML-DSA level"))?;
        let key =
            aws_lc_rs::signature::PqdsaKeyPair::from_pkcs8(level.signing, pkcs8).map_err(rerr)?;
        return Ok(SignKey::MlDsa { level, key });
    }
    if is_insecure(kind) {
        let key = LegacyRsa::from_pkcs8(pkcs8)?;
        let spki =
            spki::SubjectPublicKeyInfoOwned::from_der(&key.public_spki_der()?).map_err(rerr)?;
        let raw_public = spki.subject_public_key.raw_bytes().to_vec();
        return Ok(SignKey::Legacy { key, raw_public });
    }
    KeyPair::from_pkcs8_der_and_sign_algo(
        &PrivatePkcs8KeyDer::from(pkcs8.to_vec()),
        rcgen_alg(kind),
    )
    .map(SignKey::Rcgen)
    .map_err(rerr)
}

fn rcgen_dn(dn: &Dn) -> Result<DistinguishedName> {
    let mut out = DistinguishedName::new();
    let attrs: Vec<(&str, &str)> = dn.attributes().collect();
    for (oid, value) in attrs.into_iter().rev() {
        let arcs: Vec<u64> = oid.split('.').filter_map(|a| a.parse().ok()).collect();
        let ty = DnType::from_oid(&arcs);
        if out.get(&ty).is_some() {
            return Err(ProtectError::Credential(format!(
                "DN '{dn}' repeats an attribute type; sealmq can only make certificates with one of each"
            )));
        }
        out.push(ty, value);
    }
    Ok(out)
}

fn random_serial() -> Result<SerialNumber> {
    let mut b = [0u8; 16];
    aws_lc_rs::rand::fill(&mut b).map_err(rerr)?;
    b[0] &= 0x7f;
    b[0] |= 0x01;
    Ok(SerialNumber::from_slice(&b))
}

/// Makes a key pair and certificate: self-signed, or signed by `ca`.
pub fn make_identity(spec: &IdentitySpec, ca: Option<&Signer<'_>>) -> Result<MadeIdentity> {
    if is_insecure(spec.kind) && !spec.insecure_rsa1024 {
        return Err(insecure_key(spec.kind, &format!("'{}'", spec.dn)));
    }
    if !spec.kind.can_sign() && (ca.is_none() || spec.authority) {
        return Err(ProtectError::Credential(format!(
            "{} keys cannot sign, so '{}' cannot sign its own certificate or others': give the \
             keystore of a CA to issue it (--ca DIR)",
            spec.kind.name(),
            spec.dn
        )));
    }
    let (key, pkcs8) = PrivateKey::generate(spec.kind)?;
    // rcgen writes a subject's key only for the signature algorithms it knows, and ML-KEM is
    // none: such a certificate is made for a stand-in key, then given the ML-KEM key.
    let kem_spki = (!spec.kind.can_sign())
        .then(|| key.public_spki_der())
        .transpose()?;
    drop(key);
    let kp = match &kem_spki {
        None => rcgen_key(&pkcs8, spec.kind)?,
        Some(_) => {
            let (_, stand_in) = PrivateKey::generate(KeyKind::P256)?;
            rcgen_key(&stand_in, KeyKind::P256)?
        }
    };
    let mut params = CertificateParams::default();
    params.distinguished_name = rcgen_dn(&spec.dn)?;
    params.not_before = odt(spec.not_before)?;
    params.not_after = odt(spec.not_after)?;
    params.serial_number = Some(random_serial()?);
    params.key_identifier_method = match &kem_spki {
        None => KeyIdMethod::Sha256,
        // What rcgen's Sha256 method gives, over the key the certificate will carry.
        Some(spki) => KeyIdMethod::PreSpecified(
            aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, spki).as_ref()[..20].to_vec(),
        ),
    };
    for h in &spec.hosts {
        let san = match h.parse::<std::net::IpAddr>() {
            Ok(ip) => rcgen::SanType::IpAddress(ip),
            Err(_) => rcgen::SanType::DnsName(
                rcgen::string::Ia5String::try_from(h.as_str())
                    .map_err(|_| rerr(format!("'{h}' is not a host name")))?,
            ),
        };
        params.subject_alt_names.push(san);
    }
    if spec.authority {
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
    } else {
        params.is_ca = IsCa::ExplicitNoCa;
        params.key_usages = match spec.kind {
            KeyKind::Rsa(_) => vec![
                KeyUsagePurpose::DigitalSignature,
                KeyUsagePurpose::KeyEncipherment,
            ],
            KeyKind::P256 | KeyKind::P384 => {
                vec![
                    KeyUsagePurpose::DigitalSignature,
                    KeyUsagePurpose::KeyAgreement,
                ]
            }
            KeyKind::Ed25519 | KeyKind::MlDsa(_) => vec![KeyUsagePurpose::DigitalSignature],
            // RFC 9935: keyEncipherment only.
            KeyKind::MlKem(_) => vec![KeyUsagePurpose::KeyEncipherment],
        };
    }
    let cert = match ca {
        None => params.self_signed(&kp).map_err(rerr)?.der().to_vec(),
        Some(ca) => {
            params.use_authority_key_identifier_extension = true;
            let ca_kind = ca.cert.public_key().kind;
            let ca_kp = rcgen_key(ca.pkcs8, ca_kind)?;
            let issuer =
                Issuer::from_ca_cert_der(&CertificateDer::from(ca.cert.der().to_vec()), ca_kp)
                    .map_err(rerr)?;
            let der = params.signed_by(&kp, &issuer).map_err(rerr)?.der().to_vec();
            match &kem_spki {
                None => der,
                Some(spki) => with_key(&der, spki, &rcgen_key(ca.pkcs8, ca_kind)?)?,
            }
        }
    };
    Ok(MadeIdentity {
        cert: Cert::from_der(&cert)?,
        pkcs8,
    })
}

/// `der` with its subjectPublicKeyInfo replaced by `spki`, signed again by `issuer` under the
/// signature algorithm it already names.
fn with_key(der: &[u8], spki: &[u8], issuer: &SignKey) -> Result<Vec<u8>> {
    use der::Encode;
    let mut cert = x509_cert::Certificate::from_der(der).map_err(rerr)?;
    cert.tbs_certificate.subject_public_key_info =
        spki::SubjectPublicKeyInfoOwned::from_der(spki).map_err(rerr)?;
    let tbs = cert.tbs_certificate.to_der().map_err(rerr)?;
    let sig = issuer.sign(&tbs).map_err(rerr)?;
    cert.signature = der::asn1::BitString::from_bytes(&sig).map_err(rerr)?;
    cert.to_der().map_err(rerr)
}

/// Makes a CRL signed by `ca` revoking `revoked`, valid for `days`.
pub fn make_crl(ca: &Signer<'_>, revoked: &[&Cert], number: u64, days: u32) -> Result<Vec<u8>> {
    let now = SystemTime::now();
    let ca_kp = rcgen_key(ca.pkcs8, ca.cert.public_key().kind)?;
    let issuer = Issuer::from_ca_cert_der(&CertificateDer::from(ca.cert.der().to_vec()), ca_kp)
        .map_err(rerr)?;
    let params = CertificateRevocationListParams {
        this_update: odt(now - Duration::from_secs(60))?,
        next_update: odt(now + Duration::from_secs(u64::from(days.max(1)) * 86_400))?,
        crl_number: SerialNumber::from(number),
        issuing_distribution_point: None,
        revoked_certs: revoked
            .iter()
            .map(|c| {
                Ok(RevokedCertParams {
                    serial_number: SerialNumber::from_slice(
                        c.x509().tbs_certificate.serial_number.as_bytes(),
                    ),
                    revocation_time: odt(now - Duration::from_secs(30))?,
                    reason_code: Some(rcgen::RevocationReason::KeyCompromise),
                    invalidity_date: None,
                })
            })
            .collect::<Result<Vec<_>>>()?,
        key_identifier_method: KeyIdMethod::Sha256,
    };
    Ok(params.signed_by(&issuer).map_err(rerr)?.der().to_vec())
}

//! X.509 certificates as the protection layer uses them.

use crate::dn::Dn;
use crate::error::{ProtectError, Result};
use crate::keys::PublicKey;
use crate::oids;
use cms::cert::IssuerAndSerialNumber;
use der::{Decode, Encode};
use rustls_pki_types::pem::{PemObject, SectionKind};
use std::sync::Arc;
use x509_cert::Certificate;
use x509_cert::ext::pkix::{
    BasicConstraints, ExtendedKeyUsage, KeyUsage, KeyUsages, SubjectKeyIdentifier,
};

/// A parsed certificate with its DER. Shared, not copied, when cloned: a verified message
/// names its signer by the keystore's certificate, once per message.
#[derive(Clone)]
pub struct Cert(Arc<Inner>);

struct Inner {
    der: Vec<u8>,
    cert: Certificate,
    subject: Dn,
    issuer: Dn,
    public_key: PublicKey,
    /// The DER of the IssuerAndSerialNumber naming this certificate, from its own bytes.
    ias_der: Vec<u8>,
}

impl std::fmt::Debug for Cert {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Cert({})", self.0.subject)
    }
}

impl PartialEq for Cert {
    fn eq(&self, other: &Self) -> bool {
        self.0.der == other.0.der
    }
}

impl Cert {
    pub fn from_der(der: &[u8]) -> Result<Cert> {
        let cert = Certificate::from_der(der)
            .map_err(|e| ProtectError::Credential(format!("unreadable certificate: {e}")))?;
        Cert::from_parsed(cert, der.to_vec())
    }

    pub(crate) fn from_parsed(cert: Certificate, der: Vec<u8>) -> Result<Cert> {
        let subject = Dn::from_name(&cert.tbs_certificate.subject)?;
        let issuer = Dn::from_name(&cert.tbs_certificate.issuer)?;
        let public_key = PublicKey::from_spki(&cert.tbs_certificate.subject_public_key_info)?;
        let ias_der = match raw_issuer_and_serial(&der) {
            Some(v) => v,
            None => IssuerAndSerialNumber {
                issuer: cert.tbs_certificate.issuer.clone(),
                serial_number: cert.tbs_certificate.serial_number.clone(),
            }
            .to_der()
            .map_err(|e| ProtectError::Credential(format!("unreadable certificate: {e}")))?,
        };
        Ok(Cert(Arc::new(Inner {
            der,
            cert,
            subject,
            issuer,
            public_key,
            ias_der,
        })))
    }

    /// Every certificate in a PEM file (or one DER certificate).
    pub fn all_from_pem_or_der(bytes: &[u8]) -> Result<Vec<Cert>> {
        if bytes.first() == Some(&0x30) {
            return Ok(vec![Cert::from_der(bytes)?]);
        }
        let mut out = Vec::new();
        for item in <(SectionKind, Vec<u8>)>::pem_slice_iter(bytes) {
            let (kind, der) =
                item.map_err(|e| ProtectError::Credential(format!("bad PEM: {e}")))?;
            if kind == SectionKind::Certificate {
                out.push(Cert::from_der(&der)?);
            }
        }
        if out.is_empty() {
            return Err(ProtectError::Credential(
                "no certificate found (expected PEM 'CERTIFICATE' or DER)".into(),
            ));
        }
        Ok(out)
    }

    pub fn der(&self) -> &[u8] {
        &self.0.der
    }

    pub fn x509(&self) -> &Certificate {
        &self.0.cert
    }

    pub fn subject(&self) -> &Dn {
        &self.0.subject
    }

    pub fn issuer(&self) -> &Dn {
        &self.0.issuer
    }

    pub fn public_key(&self) -> &PublicKey {
        &self.0.public_key
    }

    pub fn serial_hex(&self) -> String {
        self.0
            .cert
            .tbs_certificate
            .serial_number
            .as_bytes()
            .iter()
            .map(|b| format!("{b:02X}"))
            .collect()
    }

    pub fn issuer_and_serial(&self) -> IssuerAndSerialNumber {
        IssuerAndSerialNumber {
            issuer: self.0.cert.tbs_certificate.issuer.clone(),
            serial_number: self.0.cert.tbs_certificate.serial_number.clone(),
        }
    }

    /// The DER of the IssuerAndSerialNumber that names this certificate (a SignerInfo's or
    /// KeyTransRecipientInfo's identifier), as the certificate's own bytes spell it.
    pub fn ias_der(&self) -> &[u8] {
        &self.0.ias_der
    }

    /// True when this certificate is the one named by `ias`.
    /// The issuer is compared as encoded first; a name spelled differently (another string
    /// type, say) is compared as a distinguished name, which costs formatting it.
    pub fn matches_issuer_serial(&self, ias: &IssuerAndSerialNumber) -> bool {
        let tbs = &self.0.cert.tbs_certificate;
        ias.serial_number == tbs.serial_number
            && (ias.issuer == tbs.issuer
                || Dn::from_name(&ias.issuer).is_ok_and(|d| d == self.0.issuer))
    }

    fn extension<T: for<'a> Decode<'a>>(&self, oid: const_oid::ObjectIdentifier) -> Option<T> {
        self.0
            .cert
            .tbs_certificate
            .extensions
            .as_ref()?
            .iter()
            .find(|e| e.extn_id == oid)
            .and_then(|e| T::from_der(e.extn_value.as_bytes()).ok())
    }

    pub fn subject_key_id(&self) -> Option<Vec<u8>> {
        self.extension::<SubjectKeyIdentifier>(const_oid::db::rfc5280::ID_CE_SUBJECT_KEY_IDENTIFIER)
            .map(|s| s.0.as_bytes().to_vec())
    }

    /// keyUsage bits, or `None` when the extension is absent (any use allowed).
    pub fn key_usage(&self) -> Option<KeyUsage> {
        self.extension::<KeyUsage>(const_oid::db::rfc5280::ID_CE_KEY_USAGE)
    }

    pub fn is_ca(&self) -> bool {
        self.extension::<BasicConstraints>(const_oid::db::rfc5280::ID_CE_BASIC_CONSTRAINTS)
            .is_some_and(|b| b.ca)
    }

    pub fn is_self_issued(&self) -> bool {
        self.0.subject == self.0.issuer
    }

    /// May this certificate's key sign messages (digitalSignature or nonRepudiation)?
    pub fn may_sign(&self) -> bool {
        self.key_usage().is_none_or(|ku| {
            ku.0.contains(KeyUsages::DigitalSignature) || ku.0.contains(KeyUsages::NonRepudiation)
        })
    }

    /// May this certificate's key receive content-encryption keys?
    pub fn may_encrypt_to(&self) -> bool {
        use crate::keys::KeyKind;
        self.key_usage()
            .is_none_or(|ku| match self.0.public_key.kind {
                KeyKind::Rsa(_) => ku.0.contains(KeyUsages::KeyEncipherment),
                KeyKind::P256 | KeyKind::P384 => ku.0.contains(KeyUsages::KeyAgreement),
                KeyKind::Ed25519 | KeyKind::MlDsa(_) => false,
                KeyKind::MlKem(_) => ku.0.contains(KeyUsages::KeyEncipherment),
            })
    }

    /// Extended key usage fits message protection: absent, emailProtection or any.
    pub fn eku_fits(&self) -> bool {
        match self.extension::<ExtendedKeyUsage>(const_oid::db::rfc5280::ID_CE_EXT_KEY_USAGE) {
            None => true,
            Some(eku) => eku
                .0
                .iter()
                .any(|o| *o == oids::EKU_EMAIL_PROTECTION || *o == oids::EKU_ANY),
        }
    }

    /// Validity as UNIX seconds (not before, not after).
    pub fn validity_unix(&self) -> (u64, u64) {
        let v = &self.0.cert.tbs_certificate.validity;
        (
            v.not_before.to_unix_duration().as_secs(),
            v.not_after.to_unix_duration().as_secs(),
        )
    }

    pub fn to_pem(&self) -> String {
        pem_encode("CERTIFICATE", &self.0.der)
    }

    /// Re-encodes (used when a certificate came from a CMS certificate set).
    pub fn from_x509(cert: &Certificate) -> Result<Cert> {
        let der = cert
            .to_der()
            .map_err(|e| ProtectError::Credential(format!("certificate: {e}")))?;
        Cert::from_parsed(cert.clone(), der)
    }
}

/// PEM-encodes DER under a label.
pub fn pem_encode(label: &str, der: &[u8]) -> String {
    der::pem::encode_string(label, der::pem::LineEnding::LF, der).unwrap_or_default()
}

/// SEQUENCE { issuer, serialNumber } from a certificate's TBSCertificate, copied byte for byte
/// (`None` when the DER is not laid out as RFC 5280 says; the caller encodes it instead).
fn raw_issuer_and_serial(der: &[u8]) -> Option<Vec<u8>> {
    use crate::asn1::children;
    let cert = children(der).ok()?;
    let tbs = children(cert.first()?.content).ok()?;
    let fields = children(tbs.first()?.content).ok()?;
    let at = usize::from(fields.first()?.tag == 0xA0); // [0] EXPLICIT version
    let (serial, issuer) = (fields.get(at)?, fields.get(at + 2)?);
    if serial.tag != 0x02 || issuer.tag != 0x30 {
        return None;
    }
    let mut out = Vec::with_capacity(4 + serial.whole.len() + issuer.whole.len());
    crate::derw::header(&mut out, 0x30, serial.whole.len() + issuer.whole.len());
    out.extend_from_slice(issuer.whole);
    out.extend_from_slice(serial.whole);
    Some(out)
}

//! Certificate path validation: a certificate chains to a trusted CA in the keystore, is within
//! its validity, fits its use (keyUsage, extended key usage) and is not revoked by a configured
//! CRL. Chain building and signature checks are rustls-webpki's, on aws-lc-rs.

use crate::cert::Cert;
use crate::error::{Check, ProtectError, Result, fail};
use rustls_pki_types::{CertificateDer, UnixTime};
use std::time::SystemTime;
use webpki::{
    CertRevocationList, EndEntityCert, ExtendedKeyUsageValidator, KeyPurposeIdIter,
    OwnedCertRevocationList, RevocationCheckDepth, RevocationOptionsBuilder, UnknownStatusPolicy,
};

/// What the certificate is about to be used for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Usage {
    /// Verifying a message signature.
    Signer,
    /// Encrypting a content-encryption key to it.
    Recipient,
    /// Authenticating a TLS peer (a queue manager, or a client application).
    Tls,
}

/// EKU is checked by [`Cert::eku_fits`], which knows message protection; webpki is told
/// to accept any.
struct AnyEku;

impl ExtendedKeyUsageValidator for AnyEku {
    fn validate(&self, _iter: KeyPurposeIdIter<'_, '_>) -> std::result::Result<(), webpki::Error> {
        Ok(())
    }
}

/// Parsed CRLs, ready for validation.
pub struct Crls(Vec<CertRevocationList<'static>>);

impl Crls {
    pub fn parse(ders: &[Vec<u8>]) -> Result<Crls> {
        let mut out = Vec::new();
        for der in ders {
            let crl = OwnedCertRevocationList::from_der(der)
                .map_err(|e| ProtectError::Credential(format!("unreadable CRL: {e:?}")))?;
            out.push(CertRevocationList::Owned(crl));
        }
        Ok(Crls(out))
    }

    pub fn none() -> Crls {
        Crls(Vec::new())
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Validates `cert` for `usage` at `now` against `trusted` anchors, with `intermediates` and
/// optional `crls`. The error is a [`Check::SignerTrust`] failure whose detail names the DN.
pub fn validate(
    cert: &Cert,
    intermediates: &[Cert],
    trusted: &[Cert],
    crls: &Crls,
    now: SystemTime,
    usage: Usage,
) -> Result<()> {
    let who = match usage {
        Usage::Signer => "signer",
        Usage::Recipient => "recipient",
        Usage::Tls => "TLS peer",
    };
    let check = match usage {
        Usage::Signer | Usage::Tls => Check::SignerTrust,
        Usage::Recipient => Check::Recipient,
    };
    let subject = cert.subject().to_string();
    if trusted.iter().any(|t| t.der() == cert.der()) {
        // A certificate trusted as itself (pinned, e.g. a self-signed identity that also
        // carries CA:TRUE, as `openssl req -x509` makes): its dates and use are still checked.
        let secs = now
            .duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        let (nb, na) = cert.validity_unix();
        if secs > na {
            return Err(fail!(check, "{who} certificate '{subject}' has expired"));
        }
        if secs < nb {
            return Err(fail!(
                check,
                "{who} certificate '{subject}' is not valid yet"
            ));
        }
        return check_use(cert, usage, check, who, &subject);
    }
    let ee_der = CertificateDer::from(cert.der());
    let ee = EndEntityCert::try_from(&ee_der)
        .map_err(|e| fail!(check, "{who} certificate '{subject}' is not usable: {e:?}"))?;
    let anchor_ders: Vec<CertificateDer<'_>> = trusted
        .iter()
        .map(|c| CertificateDer::from(c.der()))
        .collect();
    let anchors: Vec<_> = anchor_ders
        .iter()
        .filter_map(|d| webpki::anchor_from_trusted_cert(d).ok())
        .collect();
    if anchors.is_empty() {
        return Err(fail!(
            check,
            "{who} certificate '{subject}' cannot be trusted: the keystore trusts no CA (add one with 'sealmq keystore trust')"
        ));
    }
    let inter: Vec<CertificateDer<'_>> = intermediates
        .iter()
        .map(|c| CertificateDer::from(c.der()))
        .collect();
    let secs = now
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let crl_refs: Vec<&CertRevocationList<'_>> = crls.0.iter().collect();
    let revocation = if crl_refs.is_empty() {
        None
    } else {
        RevocationOptionsBuilder::new(&crl_refs).ok().map(|b| {
            b.with_depth(RevocationCheckDepth::Chain)
                .with_status_policy(UnknownStatusPolicy::Allow)
                .build()
        })
    };
    ee.verify_for_usage(
        webpki::ALL_VERIFICATION_ALGS,
        &anchors,
        &inter,
        UnixTime::since_unix_epoch(std::time::Duration::from_secs(secs)),
        AnyEku,
        revocation,
        None,
    )
    .map_err(|e| {
        use webpki::Error as E;
        let why = match e {
            E::CertExpired { .. } => "has expired".to_string(),
            E::CertNotValidYet { .. } => "is not valid yet".to_string(),
            E::CertRevoked => "is revoked (CRL)".to_string(),
            E::UnknownIssuer => "does not chain to a CA the keystore trusts".to_string(),
            E::InvalidSignatureForPublicKey => "has a bad signature from its issuer".to_string(),
            E::CaUsedAsEndEntity => "is a CA certificate, not an end-entity identity".to_string(),
            E::InvalidCrlSignatureForPublicKey | E::UnknownRevocationStatus => {
                "could not be checked against the CRLs".to_string()
            }
            E::CrlExpired { .. } => "could not be checked: a CRL has expired".to_string(),
            other => format!("failed validation ({other:?})"),
        };
        fail!(check, "{who} certificate '{subject}' {why}")
    })?;
    check_use(cert, usage, check, who, &subject)
}

/// keyUsage and extended key usage fit the use.
fn check_use(cert: &Cert, usage: Usage, check: Check, who: &str, subject: &str) -> Result<()> {
    let fits = match usage {
        Usage::Signer | Usage::Tls => cert.may_sign(),
        Usage::Recipient => cert.may_encrypt_to(),
    };
    if usage == Usage::Tls {
        return if fits {
            Ok(())
        } else {
            Err(fail!(
                check,
                "{who} certificate '{subject}' has a keyUsage without digitalSignature"
            ))
        };
    }
    if !fits {
        return Err(fail!(
            check,
            "{who} certificate '{subject}' has a keyUsage that does not allow this use"
        ));
    }
    if !cert.eku_fits() {
        return Err(fail!(
            check,
            "{who} certificate '{subject}' has an extended key usage without emailProtection or anyExtendedKeyUsage"
        ));
    }
    Ok(())
}

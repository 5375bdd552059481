//! Errors of the protection layer.
//!
//! Every failure while unprotecting a message is a distinct [`ProtectError`] variant naming the
//! check of SPEC §5.4 that failed (see [`Check`]), with a human-readable detail. All of them map to
//! reason 2063 (`SECURITY_ERROR`); configuration and keystore problems say what to fix.

use sealmq_types::ReasonCode;
use std::fmt;

/// The checks made on unprotect, in the order they are made (SPEC §5.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Check {
    /// The sealmq header (or bare CMS) could be read.
    Header,
    /// The message's quality of protection is at least the policy's.
    Qop,
    /// The message's algorithms are no weaker than the policy's.
    Algorithms,
    /// The getter holds the private key for one of the recipients.
    Recipient,
    /// Decryption and authentication-tag check.
    Decrypt,
    /// The signature verifies with the signer certificate's key.
    Signature,
    /// The signer certificate chains to a trusted CA, is in validity, fits and is not revoked.
    SignerTrust,
    /// The signer DN is one of the policy's authorized signers.
    SignerList,
    /// The decrypted length equals the length in the header.
    Length,
}

impl Check {
    pub fn name(self) -> &'static str {
        match self {
            Check::Header => "header",
            Check::Qop => "qop",
            Check::Algorithms => "algorithms",
            Check::Recipient => "recipient",
            Check::Decrypt => "decrypt",
            Check::Signature => "signature",
            Check::SignerTrust => "signer-trust",
            Check::SignerList => "signer-list",
            Check::Length => "length",
        }
    }
}

impl fmt::Display for Check {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A protection-layer failure.
#[derive(Debug, thiserror::Error)]
pub enum ProtectError {
    /// A policy breaks a validation rule (SPEC §5.1). The text names the rule.
    #[error("invalid policy: {0}")]
    Policy(String),
    /// An algorithm was refused because it is insecure.
    #[error("{0} is insecure and refused")]
    Insecure(String),
    /// The message could not be protected (e.g. no certificate for a recipient DN).
    #[error("cannot protect: {0}")]
    Protect(String),
    /// An unprotect check failed.
    #[error("security check '{check}' failed: {detail}")]
    Check { check: Check, detail: String },
    /// A keystore could not be loaded or written.
    #[error("keystore {path}: {detail}")]
    Keystore { path: String, detail: String },
    /// A certificate, key or CRL could not be read or made.
    #[error("{0}")]
    Credential(String),
}

impl ProtectError {
    /// The MQ reason code an application receives for this failure.
    pub fn reason(&self) -> ReasonCode {
        ReasonCode::SecurityError
    }

    /// For unprotect failures, the check that failed.
    pub fn check(&self) -> Option<Check> {
        match self {
            ProtectError::Check { check, .. } => Some(*check),
            _ => None,
        }
    }

    pub(crate) fn check_failed(check: Check, detail: impl Into<String>) -> Self {
        ProtectError::Check {
            check,
            detail: detail.into(),
        }
    }

    pub(crate) fn keystore(path: &std::path::Path, detail: impl Into<String>) -> Self {
        ProtectError::Keystore {
            path: path.display().to_string(),
            detail: detail.into(),
        }
    }
}

/// Shorthand used throughout the crate.
pub type Result<T> = std::result::Result<T, ProtectError>;

/// Builds a [`ProtectError::Check`] from a check and a format string.
macro_rules! fail {
    ($check:expr, $($arg:tt)*) => {
        $crate::error::ProtectError::check_failed($check, format!($($arg)*))
    };
}
pub(crate) use fail;

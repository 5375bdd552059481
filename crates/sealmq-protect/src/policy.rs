//! Security policies (SPEC §5.1): the attribute model, QoP derivation and validation.

use crate::dn::Dn;
use crate::error::{ProtectError, Result};
use std::fmt;

/// Signing (digest) algorithm of a policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SignAlg {
    None,
    Sha256,
    Sha384,
    Sha512,
}

impl SignAlg {
    /// Parses `NONE|SHA256|SHA384|SHA512`; MD5 and SHA1 are refused as insecure.
    pub fn parse(s: &str) -> Result<SignAlg> {
        match s.trim().to_ascii_uppercase().replace('-', "").as_str() {
            "NONE" => Ok(SignAlg::None),
            "SHA256" | "SHA2" => Ok(SignAlg::Sha256),
            "SHA384" => Ok(SignAlg::Sha384),
            "SHA512" => Ok(SignAlg::Sha512),
            "MD5" | "SHA1" | "SHA" => Err(ProtectError::Insecure(format!(
                "SIGNALG({}): use SHA256, SHA384 or SHA512",
                s.trim().to_ascii_uppercase()
            ))),
            other => Err(ProtectError::Policy(format!(
                "unknown SIGNALG({other}); expected NONE, SHA256, SHA384 or SHA512"
            ))),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            SignAlg::None => "NONE",
            SignAlg::Sha256 => "SHA256",
            SignAlg::Sha384 => "SHA384",
            SignAlg::Sha512 => "SHA512",
        }
    }
}

/// Content-encryption algorithm of a policy (always AES-GCM on the wire).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum EncAlg {
    None,
    Aes128,
    Aes256,
}

impl EncAlg {
    /// Parses `NONE|AES128|AES256`; RC2, DES and 3DES are refused as insecure.
    pub fn parse(s: &str) -> Result<EncAlg> {
        match s.trim().to_ascii_uppercase().replace('-', "").as_str() {
            "NONE" => Ok(EncAlg::None),
            "AES128" => Ok(EncAlg::Aes128),
            "AES256" => Ok(EncAlg::Aes256),
            "RC2" | "DES" | "3DES" | "TRIPLEDES" | "TRIPLE_DES" | "DESEDE" => {
                Err(ProtectError::Insecure(format!(
                    "ENCALG({}): use AES128 or AES256",
                    s.trim().to_ascii_uppercase()
                )))
            }
            other => Err(ProtectError::Policy(format!(
                "unknown ENCALG({other}); expected NONE, AES128 or AES256"
            ))),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            EncAlg::None => "NONE",
            EncAlg::Aes128 => "AES128",
            EncAlg::Aes256 => "AES256",
        }
    }

    /// Key length in bytes (0 for NONE).
    pub fn key_len(self) -> usize {
        match self {
            EncAlg::None => 0,
            EncAlg::Aes128 => 16,
            EncAlg::Aes256 => 32,
        }
    }
}

/// The envelope format sealmq writes under a policy (docs/envelope.md, docs/mq-clients.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Envelope {
    /// sealmq's envelope (`SMQE` + CMS): authenticated encryption, header bound.
    #[default]
    Sealmq,
    /// IBM MQ Advanced Message Security's (`PDMQ` + CMS): what IBM's interceptor reads.
    /// Messages in either format are read under such a policy.
    Ibm,
}

impl Envelope {
    /// Parses `SEALMQ|IBM`.
    pub fn parse(s: &str) -> Result<Envelope> {
        match s.trim().to_ascii_uppercase().as_str() {
            "SEALMQ" | "SMQE" => Ok(Envelope::Sealmq),
            "IBM" | "PDMQ" => Ok(Envelope::Ibm),
            other => Err(ProtectError::Policy(format!(
                "unknown ENVELOPE({other}); expected SEALMQ or IBM"
            ))),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Envelope::Sealmq => "SEALMQ",
            Envelope::Ibm => "IBM",
        }
    }
}

/// Confidentiality key reuse: how many messages one content-encryption key protects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KeyReuse {
    Disabled,
    Unlimited,
    Count(u32),
}

/// Largest KEYREUSE count a policy accepts (as MQ).
pub const MAX_KEYREUSE: u32 = 9_999_999;

impl KeyReuse {
    /// Parses `DISABLED|UNLIMITED|*|0|1..9999999`.
    pub fn parse(s: &str) -> Result<KeyReuse> {
        let t = s.trim().to_ascii_uppercase();
        match t.as_str() {
            "DISABLED" | "0" => return Ok(KeyReuse::Disabled),
            "UNLIMITED" | "*" => return Ok(KeyReuse::Unlimited),
            _ => {}
        }
        match t.parse::<u64>() {
            Ok(n) if (1..=MAX_KEYREUSE as u64).contains(&n) => Ok(KeyReuse::Count(n as u32)),
            _ => Err(ProtectError::Policy(format!(
                "KEYREUSE({t}) is out of range: use DISABLED, UNLIMITED or 1..{MAX_KEYREUSE}"
            ))),
        }
    }

    /// Messages per key, `None` for unlimited; DISABLED is one message per key.
    pub fn limit(self) -> Option<u32> {
        match self {
            KeyReuse::Disabled => Some(1),
            KeyReuse::Unlimited => None,
            KeyReuse::Count(n) => Some(n),
        }
    }
}

impl fmt::Display for KeyReuse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeyReuse::Disabled => f.write_str("DISABLED"),
            KeyReuse::Unlimited => f.write_str("UNLIMITED"),
            KeyReuse::Count(n) => write!(f, "{n}"),
        }
    }
}

/// Quality of protection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Qop {
    None,
    Integrity,
    Privacy,
    Confidentiality,
}

impl Qop {
    pub fn name(self) -> &'static str {
        match self {
            Qop::None => "NONE",
            Qop::Integrity => "INTEGRITY",
            Qop::Privacy => "PRIVACY",
            Qop::Confidentiality => "CONFIDENTIALITY",
        }
    }

    pub fn is_signed(self) -> bool {
        matches!(self, Qop::Integrity | Qop::Privacy)
    }

    pub fn is_encrypted(self) -> bool {
        matches!(self, Qop::Privacy | Qop::Confidentiality)
    }

    /// True when a message with this QoP gives at least what `required` asks
    /// (signed if it asks for signing, encrypted if it asks for encryption).
    pub fn satisfies(self, required: Qop) -> bool {
        (!required.is_signed() || self.is_signed())
            && (!required.is_encrypted() || self.is_encrypted())
    }

    pub(crate) fn to_byte(self) -> u8 {
        match self {
            Qop::None => 0,
            Qop::Integrity => 1,
            Qop::Privacy => 2,
            Qop::Confidentiality => 3,
        }
    }

    pub(crate) fn from_byte(b: u8) -> Option<Qop> {
        match b {
            1 => Some(Qop::Integrity),
            2 => Some(Qop::Privacy),
            3 => Some(Qop::Confidentiality),
            _ => None,
        }
    }
}

impl fmt::Display for Qop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A queue's security policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    pub name: String,
    pub sign_alg: SignAlg,
    pub enc_alg: EncAlg,
    pub recipients: Vec<Dn>,
    pub signers: Vec<Dn>,
    /// TOLERATE: unprotected messages are returned as they are.
    pub tolerate: bool,
    pub key_reuse: KeyReuse,
    /// The format written under this policy (ENVELOPE).
    pub envelope: Envelope,
}

impl Policy {
    /// A policy that protects nothing.
    pub fn none(name: &str) -> Policy {
        Policy {
            name: name.to_string(),
            sign_alg: SignAlg::None,
            enc_alg: EncAlg::None,
            recipients: Vec::new(),
            signers: Vec::new(),
            tolerate: false,
            key_reuse: KeyReuse::Disabled,
            envelope: Envelope::Sealmq,
        }
    }

    /// QoP derived from the algorithms.
    pub fn qop(&self) -> Qop {
        match (self.sign_alg != SignAlg::None, self.enc_alg != EncAlg::None) {
            (false, false) => Qop::None,
            (true, false) => Qop::Integrity,
            (true, true) => Qop::Privacy,
            (false, true) => Qop::Confidentiality,
        }
    }

    /// Checks every rule of SPEC §5.1; the error names the rule broken.
    pub fn validate(&self) -> Result<()> {
        validate_name(&self.name)?;
        if self.enc_alg != EncAlg::None && self.recipients.is_empty() {
            return Err(ProtectError::Policy(format!(
                "policy {}: ENCALG({}) needs at least one RECIP",
                self.name,
                self.enc_alg.name()
            )));
        }
        if self.enc_alg == EncAlg::None && !self.recipients.is_empty() {
            return Err(ProtectError::Policy(format!(
                "policy {}: RECIP is only meaningful with an ENCALG",
                self.name
            )));
        }
        if self.sign_alg == SignAlg::None && !self.signers.is_empty() {
            return Err(ProtectError::Policy(format!(
                "policy {}: SIGNER needs a SIGNALG",
                self.name
            )));
        }
        if self.key_reuse != KeyReuse::Disabled && self.qop() != Qop::Confidentiality {
            return Err(ProtectError::Policy(format!(
                "policy {}: KEYREUSE applies only to Confidentiality (ENCALG without SIGNALG)",
                self.name
            )));
        }
        if let KeyReuse::Count(n) = self.key_reuse
            && (n == 0 || n > MAX_KEYREUSE)
        {
            return Err(ProtectError::Policy(format!(
                "policy {}: KEYREUSE({n}) is out of range 1..{MAX_KEYREUSE}",
                self.name
            )));
        }
        Ok(())
    }

    /// Adds recipients not already present (ACTION(ADD)).
    pub fn add_recipients(&mut self, dns: impl IntoIterator<Item = Dn>) {
        add_unique(&mut self.recipients, dns);
    }

    /// Removes recipients (ACTION(REMOVE)).
    pub fn remove_recipients(&mut self, dns: &[Dn]) {
        self.recipients.retain(|d| !dns.contains(d));
    }

    /// Adds authorized signers not already present (ACTION(ADD)).
    pub fn add_signers(&mut self, dns: impl IntoIterator<Item = Dn>) {
        add_unique(&mut self.signers, dns);
    }

    /// Removes authorized signers (ACTION(REMOVE)).
    pub fn remove_signers(&mut self, dns: &[Dn]) {
        self.signers.retain(|d| !dns.contains(d));
    }
}

fn add_unique(list: &mut Vec<Dn>, dns: impl IntoIterator<Item = Dn>) {
    for dn in dns {
        if !list.contains(&dn) {
            list.push(dn);
        }
    }
}

/// Policy names follow queue names: 1-48 characters of `A-Z a-z 0-9 . _ / %`.
pub fn validate_name(name: &str) -> Result<()> {
    let ok_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '/' | '%');
    if name.is_empty() || name.len() > 48 || !name.chars().all(ok_char) {
        return Err(ProtectError::Policy(format!(
            "policy name '{name}' must be 1-48 characters of A-Z a-z 0-9 . _ / %"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dn(s: &str) -> Dn {
        Dn::parse(s).unwrap()
    }

    #[test]
    fn qop_derivation() {
        let mut p = Policy::none("Q1");
        assert_eq!(p.qop(), Qop::None);
        p.sign_alg = SignAlg::Sha256;
        assert_eq!(p.qop(), Qop::Integrity);
        p.enc_alg = EncAlg::Aes256;
        assert_eq!(p.qop(), Qop::Privacy);
        p.sign_alg = SignAlg::None;
        assert_eq!(p.qop(), Qop::Confidentiality);
    }

    #[test]
    fn insecure_algorithms_say_so() {
        for s in ["MD5", "SHA1"] {
            let e = SignAlg::parse(s).unwrap_err().to_string();
            assert!(e.contains("insecure"), "{e}");
        }
        for s in ["RC2", "DES", "3DES"] {
            let e = EncAlg::parse(s).unwrap_err().to_string();
            assert!(e.contains("insecure"), "{e}");
        }
        assert!(
            !SignAlg::parse("SHA999")
                .unwrap_err()
                .to_string()
                .contains("insecure")
        );
    }

    #[test]
    fn every_rule_is_named() {
        let mut p = Policy::none("Q1");
        p.enc_alg = EncAlg::Aes128;
        assert!(
            p.validate()
                .unwrap_err()
                .to_string()
                .contains("needs at least one RECIP")
        );
        p.recipients.push(dn("CN=bob"));
        p.validate().unwrap();
        p.signers.push(dn("CN=alice"));
        assert!(
            p.validate()
                .unwrap_err()
                .to_string()
                .contains("SIGNER needs a SIGNALG")
        );
        p.signers.clear();
        p.key_reuse = KeyReuse::Count(32);
        p.validate().unwrap();
        p.sign_alg = SignAlg::Sha256;
        assert!(
            p.validate()
                .unwrap_err()
                .to_string()
                .contains("KEYREUSE applies only")
        );
        let mut q = Policy::none("Q1");
        q.recipients.push(dn("CN=bob"));
        assert!(
            q.validate()
                .unwrap_err()
                .to_string()
                .contains("RECIP is only")
        );
        let bad = Policy::none("BAD NAME");
        assert!(bad.validate().unwrap_err().to_string().contains("1-48"));
    }

    #[test]
    fn keyreuse_parse() {
        assert_eq!(KeyReuse::parse("*").unwrap(), KeyReuse::Unlimited);
        assert_eq!(KeyReuse::parse("0").unwrap(), KeyReuse::Disabled);
        assert_eq!(KeyReuse::parse("32").unwrap(), KeyReuse::Count(32));
        assert!(KeyReuse::parse("10000000").is_err());
        assert!(KeyReuse::parse("-1").is_err());
    }

    #[test]
    fn qop_satisfies_is_a_partial_order() {
        assert!(Qop::Privacy.satisfies(Qop::Integrity));
        assert!(Qop::Privacy.satisfies(Qop::Confidentiality));
        assert!(!Qop::Integrity.satisfies(Qop::Confidentiality));
        assert!(!Qop::Confidentiality.satisfies(Qop::Integrity));
        assert!(!Qop::None.satisfies(Qop::Integrity));
        assert!(Qop::None.satisfies(Qop::None));
    }

    #[test]
    fn add_remove_edit_lists() {
        let mut p = Policy::none("Q");
        p.add_recipients([dn("CN=a"), dn("CN=b"), dn("cn=a")]);
        assert_eq!(p.recipients.len(), 2);
        p.remove_recipients(&[dn("CN=a")]);
        assert_eq!(p.recipients, vec![dn("CN=b")]);
    }
}

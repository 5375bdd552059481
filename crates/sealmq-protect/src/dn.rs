//! X.500 distinguished names as sealmq compares them (SPEC §5.4): attribute types are matched
//! by OID (so `cn=` and `CN=` are the same), attribute values exactly, RDNs in order.

use crate::error::{ProtectError, Result};
use der::asn1::{Ia5StringRef, PrintableStringRef, TeletexStringRef, Utf8StringRef};
use der::{Decode, Encode, Tag, Tagged};
use std::fmt;
use std::str::FromStr;
use x509_cert::name::{Name, RdnSequence, RelativeDistinguishedName};

/// A parsed distinguished name.
#[derive(Clone)]
pub struct Dn {
    /// RDNs in DER order (most general first), each a sorted list of (type OID, value).
    rdns: Vec<Vec<(String, String)>>,
    name: Name,
    der: Vec<u8>,
    /// The name as shown (RFC 4514), formatted once: a verified message reports its signer's
    /// DN, and formatting looked up every attribute's name (4% of the applications' CPU in
    /// an Integrity request/reply).
    text: String,
}

impl Dn {
    /// Parses an RFC 4514 string such as `CN=alice, O=Example`. Spaces after commas and
    /// around `=` are ignored; attribute type names are case-insensitive.
    pub fn parse(s: &str) -> Result<Dn> {
        let bad = |why: &str| ProtectError::Credential(format!("invalid DN '{s}': {why}"));
        let trimmed = s.trim();
        if trimmed.is_empty() {
            return Err(bad("it is empty"));
        }
        let mut parts = Vec::new();
        for part in split_unescaped(trimmed, ',') {
            let atvs: Vec<String> = split_unescaped(&part, '+')
                .into_iter()
                .map(|atv| match atv.find('=') {
                    Some(i) => format!("{}={}", atv[..i].trim(), atv[i + 1..].trim_start()),
                    None => atv.trim().to_string(),
                })
                .collect();
            let rdn = RelativeDistinguishedName::from_str(&atvs.join("+"))
                .map_err(|_| bad("expected TYPE=value pairs such as CN=alice,O=Example"))?;
            parts.push(rdn);
        }
        parts.reverse();
        Dn::from_name(&RdnSequence(parts))
    }

    /// Builds a DN from a certificate's name.
    pub fn from_name(name: &Name) -> Result<Dn> {
        let mut rdns = Vec::with_capacity(name.0.len());
        for rdn in name.0.iter() {
            let mut atvs = Vec::new();
            for atv in rdn.0.iter() {
                let value = attr_string(&atv.value).ok_or_else(|| {
                    ProtectError::Credential(format!(
                        "DN attribute {} has a value type sealmq cannot compare ({:?})",
                        atv.oid,
                        atv.value.tag()
                    ))
                })?;
                atvs.push((atv.oid.to_string(), value));
            }
            atvs.sort();
            rdns.push(atvs);
        }
        let der = name
            .to_der()
            .map_err(|e| ProtectError::Credential(format!("DN cannot be encoded: {e}")))?;
        Ok(Dn {
            rdns,
            name: name.clone(),
            der,
            text: name.to_string(),
        })
    }

    /// Builds a DN from a DER-encoded Name.
    pub fn from_der(der: &[u8]) -> Result<Dn> {
        let name = Name::from_der(der)
            .map_err(|e| ProtectError::Credential(format!("unreadable DN: {e}")))?;
        Dn::from_name(&name)
    }

    /// The DN as an x509 `Name`.
    pub fn name(&self) -> &Name {
        &self.name
    }

    /// DER encoding of the name.
    pub fn to_der(&self) -> Vec<u8> {
        self.der.clone()
    }

    /// DER encoding of the name, borrowed.
    pub fn der(&self) -> &[u8] {
        &self.der
    }

    /// (type OID, value) pairs in RFC 4514 order (most specific first).
    pub fn attributes(&self) -> impl Iterator<Item = (&str, &str)> {
        self.rdns
            .iter()
            .rev()
            .flat_map(|r| r.iter().map(|(o, v)| (o.as_str(), v.as_str())))
    }
}

impl PartialEq for Dn {
    fn eq(&self, other: &Self) -> bool {
        self.rdns == other.rdns
    }
}

impl Eq for Dn {}

impl std::hash::Hash for Dn {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.rdns.hash(state);
    }
}

impl fmt::Display for Dn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl fmt::Debug for Dn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Dn({})", self.text)
    }
}

impl FromStr for Dn {
    type Err = ProtectError;
    fn from_str(s: &str) -> Result<Dn> {
        Dn::parse(s)
    }
}

fn attr_string(value: &der::Any) -> Option<String> {
    let s = match value.tag() {
        Tag::PrintableString => PrintableStringRef::try_from(value)
            .ok()?
            .as_str()
            .to_string(),
        Tag::Utf8String => Utf8StringRef::try_from(value).ok()?.as_str().to_string(),
        Tag::Ia5String => Ia5StringRef::try_from(value).ok()?.as_str().to_string(),
        Tag::TeletexString => TeletexStringRef::try_from(value).ok()?.as_str().to_string(),
        _ => return None,
    };
    Some(s)
}

/// Splits on `sep` where it is not escaped by a backslash.
fn split_unescaped(s: &str, sep: char) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut escaped = false;
    for c in s.chars() {
        if escaped {
            cur.push(c);
            escaped = false;
        } else if c == '\\' {
            cur.push(c);
            escaped = true;
        } else if c == sep {
            out.push(cur.trim_start().to_string());
            cur = String::new();
        } else {
            cur.push(c);
        }
    }
    out.push(cur.trim_start().to_string());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_case_insensitive_values_exact() {
        let a = Dn::parse("CN=alice,O=Example").unwrap();
        let b = Dn::parse("cn=alice, o = Example").unwrap();
        assert_eq!(a, b);
        assert_ne!(a, Dn::parse("CN=Alice,O=Example").unwrap());
        assert_ne!(a, Dn::parse("O=Example,CN=alice").unwrap());
        assert_eq!(a.to_string(), "CN=alice,O=Example");
    }

    #[test]
    fn der_round_trip_and_string_types() {
        let a = Dn::parse("CN=bob,OU=Payments,O=Example,C=GB").unwrap();
        let b = Dn::from_der(&a.to_der()).unwrap();
        assert_eq!(a, b);
    }

    #[test]
    fn garbage_is_an_error() {
        assert!(Dn::parse("").is_err());
        assert!(Dn::parse("alice").is_err());
        assert!(Dn::parse("NOSUCHTYPE=x").is_err());
    }
}

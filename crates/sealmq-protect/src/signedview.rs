//! A CMS SignedData (RFC 5652 §5) read in place: the fields that verifying and inspecting a
//! message need, as slices of the message's own bytes. Decoding it into the `cms` crate's
//! owned types cost, per message, more than the rest of the non-cryptographic path (a SET OF
//! re-sorted and every attribute value copied; a profile of Integrity request/reply gave it
//! 18 µs of a 90 µs verification). Every TLV is still checked as DER (`asn1::children`), the
//! fields in their order, and nothing is accepted after them.

use crate::asn1::{self, Tlv, children};
use crate::error::{Check, Result, fail};
use crate::oids;
use const_oid::ObjectIdentifier as Oid;
use der::Decode;
use spki::AlgorithmIdentifierOwned;

/// How a SignerInfo names its signer's certificate.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Sid<'a> {
    /// The whole DER of an IssuerAndSerialNumber.
    IssuerSerial(&'a [u8]),
    /// A subjectKeyIdentifier's bytes ([0] IMPLICIT).
    KeyId(&'a [u8]),
}

/// The SignedData's signer (the first SignerInfo).
pub(crate) struct Signer<'a> {
    pub sid: Sid<'a>,
    pub digest_alg: Oid,
    /// signedAttrs, [0] IMPLICIT SET OF Attribute, when present.
    pub signed_attrs: Option<Tlv<'a>>,
    pub signature_alg: AlgorithmIdentifierOwned,
    pub signature: &'a [u8],
}

/// A SignedData as a message carries it.
pub(crate) struct View<'a> {
    /// The digestAlgorithms set's algorithms.
    pub digest_algs: Vec<Oid>,
    /// eContentType's OID content bytes.
    pub econtent_type: &'a [u8],
    /// eContent's bytes; `None` for a detached signature.
    pub content: Option<&'a [u8]>,
    /// Each carried certificate choice's DER, not decoded.
    pub certs: Vec<&'a [u8]>,
    /// How many SignerInfos the set holds (sealmq verifies messages with exactly one).
    pub signer_count: usize,
    pub signer: Signer<'a>,
}

/// One signed attribute: its type's OID content bytes and its values.
pub(crate) struct Attr<'a> {
    pub oid: &'a [u8],
    pub values: Vec<Tlv<'a>>,
}

fn malformed(what: &str) -> crate::error::ProtectError {
    fail!(Check::Header, "malformed {what}")
}

/// The single TLV of `tlvs`, else `what` is malformed.
pub(crate) fn only<'a>(tlvs: Vec<Tlv<'a>>, what: &str) -> Result<Tlv<'a>> {
    match tlvs.as_slice() {
        [one] => Ok(*one),
        _ => Err(malformed(what)),
    }
}

/// Reads a ContentInfo holding a SignedData.
pub(crate) fn read(der: &[u8]) -> Result<View<'_>> {
    // ContentInfo: SEQUENCE { contentType OID, [0] EXPLICIT content }, nothing after it.
    let outer = only(children(der)?, "ContentInfo")?;
    let parts = children(outer.content)?;
    let [oid, explicit] = parts.as_slice() else {
        return Err(malformed("ContentInfo"));
    };
    if outer.tag != 0x30 || oid.tag != 0x06 || explicit.tag != 0xA0 {
        return Err(malformed("ContentInfo"));
    }
    if oid.content != oids::ID_SIGNED_DATA.as_bytes() {
        let named = Oid::from_der(oid.whole).map_or_else(|_| "?".into(), |o| oids::name(&o));
        return Err(fail!(
            Check::Header,
            "expected SignedData, found content type {named}"
        ));
    }
    let sd = only(children(explicit.content)?, "SignedData")?;
    if sd.tag != 0x30 {
        return Err(fail!(Check::Header, "SignedData is not a SEQUENCE"));
    }
    signed_data(&children(sd.content)?)
}

/// SignedData ::= SEQUENCE { version, digestAlgorithms SET, encapContentInfo,
/// certificates [0] IMPLICIT OPTIONAL, crls [1] IMPLICIT OPTIONAL, signerInfos SET }
fn signed_data<'a>(fields: &[Tlv<'a>]) -> Result<View<'a>> {
    let [version, digests, eci, rest @ ..] = fields else {
        return Err(malformed("SignedData"));
    };
    let (infos, optional) = rest
        .split_last()
        .ok_or_else(|| fail!(Check::Header, "SignedData has no signerInfos SET"))?;
    if version.tag != 0x02 || digests.tag != 0x31 || eci.tag != 0x30 || infos.tag != 0x31 {
        return Err(malformed("SignedData"));
    }
    let tags: Vec<u8> = optional.iter().map(|t| t.tag).collect();
    if !matches!(tags.as_slice(), [] | [0xA0] | [0xA1] | [0xA0, 0xA1]) {
        return Err(malformed("SignedData"));
    }
    let certs = match optional.first().filter(|t| t.tag == 0xA0) {
        Some(set) => children(set.content)?.iter().map(|t| t.whole).collect(),
        None => Vec::new(),
    };
    let digest_algs = children(digests.content)?
        .iter()
        .map(alg_oid)
        .collect::<Result<Vec<_>>>()?;
    let (econtent_type, content) = encap_content_info(eci)?;
    let signers = children(infos.content)?;
    let first = signers
        .first()
        .ok_or_else(|| fail!(Check::Signature, "SignedData has no signer"))?;
    Ok(View {
        digest_algs,
        econtent_type,
        content,
        certs,
        signer_count: signers.len(),
        signer: signer_info(first)?,
    })
}

/// EncapsulatedContentInfo ::= SEQUENCE { eContentType OID, eContent [0] EXPLICIT OCTET
/// STRING OPTIONAL }: the type's OID bytes and the content.
fn encap_content_info<'a>(eci: &Tlv<'a>) -> Result<(&'a [u8], Option<&'a [u8]>)> {
    let parts = children(eci.content)?;
    match parts.as_slice() {
        [t] if t.tag == 0x06 => Ok((t.content, None)),
        [t, e] if t.tag == 0x06 && e.tag == 0xA0 => {
            let octets = only(children(e.content)?, "eContent")?;
            if octets.tag != 0x04 {
                return Err(fail!(Check::Header, "eContent is not an OCTET STRING"));
            }
            Ok((t.content, Some(octets.content)))
        }
        _ => Err(malformed("EncapsulatedContentInfo")),
    }
}

/// SignerInfo ::= SEQUENCE { version, sid, digestAlgorithm, signedAttrs [0] IMPLICIT
/// OPTIONAL, signatureAlgorithm, signature OCTET STRING, unsignedAttrs [1] IMPLICIT OPTIONAL }
fn signer_info<'a>(si: &Tlv<'a>) -> Result<Signer<'a>> {
    if si.tag != 0x30 {
        return Err(malformed("SignerInfo"));
    }
    let parts = children(si.content)?;
    let (version, sid, digest, attrs, tail) = match parts.as_slice() {
        [v, sid, d, a, tail @ ..] if a.tag == 0xA0 => (v, sid, d, Some(*a), tail),
        [v, sid, d, tail @ ..] => (v, sid, d, None, tail),
        _ => return Err(malformed("SignerInfo")),
    };
    let (alg, signature) = match tail {
        [a, s] | [a, s, Tlv { tag: 0xA1, .. }] => (a, s),
        _ => return Err(malformed("SignerInfo")),
    };
    if version.tag != 0x02 || alg.tag != 0x30 || signature.tag != 0x04 {
        return Err(malformed("SignerInfo"));
    }
    let sid = match sid.tag {
        0x30 => Sid::IssuerSerial(sid.whole),
        0x80 => Sid::KeyId(sid.content),
        _ => return Err(malformed("SignerIdentifier")),
    };
    Ok(Signer {
        sid,
        digest_alg: alg_oid(digest)?,
        signed_attrs: attrs,
        signature_alg: asn1::decode(alg.whole, "signatureAlgorithm")?,
        signature: signature.content,
    })
}

/// The algorithm of an AlgorithmIdentifier (its parameters are not read).
fn alg_oid(alg: &Tlv<'_>) -> Result<Oid> {
    let parts = children(alg.content)?;
    match parts.as_slice() {
        [oid] | [oid, _] if alg.tag == 0x30 && oid.tag == 0x06 => {
            asn1::decode(oid.whole, "AlgorithmIdentifier")
        }
        _ => Err(malformed("AlgorithmIdentifier")),
    }
}

/// The signed attributes, each as its type and values.
pub(crate) fn attributes<'a>(attrs: &Tlv<'a>) -> Result<Vec<Attr<'a>>> {
    children(attrs.content)?
        .iter()
        .map(|a| {
            let parts = children(a.content)?;
            match parts.as_slice() {
                [oid, set] if a.tag == 0x30 && oid.tag == 0x06 && set.tag == 0x31 => Ok(Attr {
                    oid: oid.content,
                    values: children(set.content)?,
                }),
                _ => Err(fail!(Check::Header, "signed attributes are malformed")),
            }
        })
        .collect()
}

/// signedAttrs re-tagged as the SET OF that the signature covers (RFC 5652 §5.4).
pub(crate) fn signed_attrs_der(attrs: &Tlv<'_>) -> Vec<u8> {
    let mut v = attrs.whole.to_vec();
    v[0] = 0x31;
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn reading_garbage_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
            if let Ok(v) = read(&bytes)
                && let Some(a) = v.signer.signed_attrs
            {
                let _ = attributes(&a);
                prop_assert_eq!(signed_attrs_der(&a).len(), a.whole.len());
            }
        }
    }
}

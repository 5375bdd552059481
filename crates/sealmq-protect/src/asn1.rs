//! ASN.1 structures the `cms` crate does not carry (RFC 5083 AuthEnvelopedData, RFC 5084 GCM
//! parameters, RFC 5753 ECC-CMS-SharedInfo, RFC 4055 RSAES-OAEP parameters) and a small raw
//! TLV walker used where exact received bytes matter (signed attributes).

use crate::error::{Check, Result, fail};
use cms::content_info::CmsVersion;
use cms::enveloped_data::{EncryptedContentInfo, OriginatorInfo, RecipientInfos};
use der::asn1::OctetString;
use der::{Decode, Reader, Sequence};
use spki::AlgorithmIdentifierOwned;
use x509_cert::attr::Attributes;

/// RFC 5083 AuthEnvelopedData.
#[derive(Clone, Debug, Sequence)]
pub struct AuthEnvelopedData {
    pub version: CmsVersion,
    #[asn1(
        context_specific = "0",
        tag_mode = "IMPLICIT",
        constructed = "true",
        optional = "true"
    )]
    pub originator_info: Option<OriginatorInfo>,
    pub recip_infos: RecipientInfos,
    pub auth_encrypted_content: EncryptedContentInfo,
    #[asn1(
        context_specific = "1",
        tag_mode = "IMPLICIT",
        constructed = "true",
        optional = "true"
    )]
    pub auth_attrs: Option<Attributes>,
    pub mac: OctetString,
    #[asn1(
        context_specific = "2",
        tag_mode = "IMPLICIT",
        constructed = "true",
        optional = "true"
    )]
    pub unauth_attrs: Option<Attributes>,
}

/// RFC 5084 GCMParameters.
#[derive(Clone, Debug, Sequence)]
pub struct GcmParameters {
    pub nonce: OctetString,
    #[asn1(default = "default_icv_len")]
    pub icv_len: u8,
}

fn default_icv_len() -> u8 {
    12
}

/// RFC 5753 ECC-CMS-SharedInfo.
#[derive(Clone, Debug, Sequence)]
pub struct EccCmsSharedInfo {
    pub key_info: AlgorithmIdentifierOwned,
    #[asn1(context_specific = "0", tag_mode = "EXPLICIT", optional = "true")]
    pub entity_u_info: Option<OctetString>,
    #[asn1(context_specific = "2", tag_mode = "EXPLICIT")]
    pub supp_pub_info: OctetString,
}

/// RFC 4055 RSAES-OAEP-params (pSourceAlgorithm left at its default).
#[derive(Clone, Debug, Sequence)]
pub struct RsaOaepParams {
    #[asn1(context_specific = "0", tag_mode = "EXPLICIT", optional = "true")]
    pub hash: Option<AlgorithmIdentifierOwned>,
    #[asn1(context_specific = "1", tag_mode = "EXPLICIT", optional = "true")]
    pub mask_gen: Option<AlgorithmIdentifierOwned>,
    #[asn1(context_specific = "2", tag_mode = "EXPLICIT", optional = "true")]
    pub p_source: Option<AlgorithmIdentifierOwned>,
}

/// RFC 4055 RSASSA-PSS-params.
#[derive(Clone, Debug, Sequence)]
pub struct RsaPssParams {
    #[asn1(context_specific = "0", tag_mode = "EXPLICIT", optional = "true")]
    pub hash: Option<AlgorithmIdentifierOwned>,
    #[asn1(context_specific = "1", tag_mode = "EXPLICIT", optional = "true")]
    pub mask_gen: Option<AlgorithmIdentifierOwned>,
    #[asn1(context_specific = "2", tag_mode = "EXPLICIT", optional = "true")]
    pub salt_len: Option<u32>,
    #[asn1(context_specific = "3", tag_mode = "EXPLICIT", optional = "true")]
    pub trailer: Option<u8>,
}

/// One raw TLV: its tag byte, the whole encoding and the content.
pub struct Tlv<'a> {
    pub tag: u8,
    pub whole: &'a [u8],
    pub content: &'a [u8],
}

/// Reads the TLVs directly inside `content` (which must be a sequence of complete DER TLVs).
pub fn children(content: &[u8]) -> Result<Vec<Tlv<'_>>> {
    let bad = |e: der::Error| fail!(Check::Header, "malformed DER: {e}");
    let mut out = Vec::new();
    let mut reader = der::SliceReader::new(content).map_err(bad)?;
    while !reader.is_finished() {
        let start = usize::try_from(reader.position()).map_err(bad)?;
        let header = der::Header::decode(&mut reader).map_err(bad)?;
        let len = usize::try_from(header.length).map_err(bad)?;
        let body_start = usize::try_from(reader.position()).map_err(bad)?;
        reader.read_slice(header.length).map_err(bad)?;
        let tag_byte = content[start];
        out.push(Tlv {
            tag: tag_byte,
            whole: &content[start..body_start + len],
            content: &content[body_start..body_start + len],
        });
    }
    Ok(out)
}

/// The raw bytes of the single SignerInfo's signedAttrs, re-tagged as a SET (0x31) ready to be
/// verified, taken from the DER of a SignedData (not its ContentInfo).
pub fn raw_signed_attrs(signed_data: &[u8]) -> Result<Option<Vec<u8>>> {
    let top = children(signed_data)?;
    let sd = top
        .first()
        .filter(|t| t.tag == 0x30)
        .ok_or_else(|| fail!(Check::Header, "SignedData is not a SEQUENCE"))?;
    let fields = children(sd.content)?;
    let infos = fields
        .last()
        .filter(|t| t.tag == 0x31)
        .ok_or_else(|| fail!(Check::Header, "SignedData has no signerInfos SET"))?;
    let signers = children(infos.content)?;
    let [si] = signers.as_slice() else {
        return Err(fail!(
            Check::Signature,
            "message has {} signers; sealmq expects exactly one",
            signers.len()
        ));
    };
    let parts = children(si.content)?;
    match parts.get(3) {
        Some(t) if t.tag == 0xA0 => {
            let mut v = t.whole.to_vec();
            v[0] = 0x31;
            Ok(Some(v))
        }
        _ => Ok(None),
    }
}

/// Decodes a DER value, mapping failure to a header-check error naming `what`.
pub fn decode<'a, T: Decode<'a>>(bytes: &'a [u8], what: &str) -> Result<T> {
    T::from_der(bytes).map_err(|e| fail!(Check::Header, "malformed {what}: {e}"))
}

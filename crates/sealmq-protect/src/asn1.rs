//! ASN.1 structures the `cms` crate does not carry (RFC 5083 AuthEnvelopedData, RFC 5084 GCM
//! parameters, RFC 5753 ECC-CMS-SharedInfo, RFC 4055 RSAES-OAEP parameters) and a small raw
//! TLV walker used where exact received bytes matter (signed attributes).

use crate::error::{Check, Result, fail};
use cms::content_info::CmsVersion;
use cms::enveloped_data::{EncryptedContentInfo, OriginatorInfo, RecipientInfos};
use der::asn1::OctetString;
use der::{Decode, Sequence};
use spki::AlgorithmIdentifierOwned;
use x509_cert::attr::Attributes;

/// RFC 5083 AuthEnvelopedData (its module's tagging: IMPLICIT).
#[derive(Clone, Debug, Sequence)]
#[asn1(tag_mode = "IMPLICIT")]
pub struct AuthEnvelopedData {
    pub version: CmsVersion,
    #[asn1(context_specific = "0", constructed = "true", optional = "true")]
    pub originator_info: Option<OriginatorInfo>,
    pub recip_infos: RecipientInfos,
    pub auth_encrypted_content: EncryptedContentInfo,
    #[asn1(context_specific = "1", constructed = "true", optional = "true")]
    pub auth_attrs: Option<Attributes>,
    pub mac: OctetString,
    #[asn1(context_specific = "2", constructed = "true", optional = "true")]
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
#[derive(Debug, Clone, Copy)]
pub struct Tlv<'a> {
    pub tag: u8,
    pub whole: &'a [u8],
    pub content: &'a [u8],
}

/// Reads one DER TLV at the start of `input`: (tag, header length, content length).
/// Only what DER allows: low tag numbers, definite minimal lengths up to 4 bytes.
fn read_tlv(input: &[u8]) -> Result<(u8, usize, usize)> {
    let (&tag, rest) = input
        .split_first()
        .ok_or_else(|| fail!(Check::Header, "malformed DER: truncated before a tag"))?;
    if tag & 0x1f == 0x1f {
        return Err(fail!(
            Check::Header,
            "malformed DER: high tag numbers are not used in CMS"
        ));
    }
    let (&first, rest) = rest
        .split_first()
        .ok_or_else(|| fail!(Check::Header, "malformed DER: truncated before a length"))?;
    let (len, hdr) = match first {
        0..=0x7f => (first as usize, 2),
        0x81..=0x84 => {
            let n = (first & 0x7f) as usize;
            let bytes = rest
                .get(..n)
                .ok_or_else(|| fail!(Check::Header, "malformed DER: truncated length"))?;
            if bytes[0] == 0 || (n == 1 && bytes[0] < 0x80) {
                return Err(fail!(Check::Header, "malformed DER: length is not minimal"));
            }
            let len = bytes.iter().fold(0usize, |acc, b| (acc << 8) | *b as usize);
            (len, 2 + n)
        }
        0x80 => {
            return Err(fail!(
                Check::Header,
                "malformed DER: indefinite length (BER) is not accepted"
            ));
        }
        _ => return Err(fail!(Check::Header, "malformed DER: length field too long")),
    };
    if input.len() - hdr < len {
        return Err(fail!(
            Check::Header,
            "malformed DER: a value claims {len} bytes but {} remain",
            input.len() - hdr
        ));
    }
    Ok((tag, hdr, len))
}

/// Reads the TLVs directly inside `content` (which must be a sequence of complete DER TLVs).
pub fn children(content: &[u8]) -> Result<Vec<Tlv<'_>>> {
    let mut out = Vec::with_capacity(6);
    let mut rest = content;
    while !rest.is_empty() {
        let (tag, hdr, len) = read_tlv(rest)?;
        out.push(Tlv {
            tag,
            whole: &rest[..hdr + len],
            content: &rest[hdr..hdr + len],
        });
        rest = &rest[hdr + len..];
    }
    Ok(out)
}

/// Decodes a DER value, mapping failure to a header-check error naming `what`.
pub fn decode<'a, T: Decode<'a>>(bytes: &'a [u8], what: &str) -> Result<T> {
    T::from_der(bytes).map_err(|e| fail!(Check::Header, "malformed {what}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn reads_what_der_writes_and_refuses_ber() {
        use der::Encode;
        let v = der::asn1::OctetString::new(vec![9u8; 300])
            .unwrap()
            .to_der()
            .unwrap();
        let c = children(&v).unwrap();
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].tag, 0x04);
        assert_eq!(c[0].content.len(), 300);
        assert!(
            children(&[0x30, 0x80, 0, 0])
                .unwrap_err()
                .to_string()
                .contains("indefinite")
        );
        assert!(
            children(&[0x04, 0x81, 0x05, 1, 2, 3, 4, 5])
                .unwrap_err()
                .to_string()
                .contains("minimal")
        );
        assert!(
            children(&[0x04, 0x84, 0x7f, 0xff, 0xff, 0xff])
                .unwrap_err()
                .to_string()
                .contains("remain")
        );
        assert!(children(&[0x1f, 0x01, 0x00]).is_err());
    }

    proptest! {
        #[test]
        fn children_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            if let Ok(c) = children(&bytes) {
                let total: usize = c.iter().map(|t| t.whole.len()).sum();
                prop_assert_eq!(total, bytes.len());
            }
        }
    }
}

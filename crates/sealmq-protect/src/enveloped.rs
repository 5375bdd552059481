//! CMS AuthEnvelopedData (RFC 5083) with AES-GCM (RFC 5084): sealing content under a content
//! key for already-encoded RecipientInfos, and opening it.
//!
//! Sealing writes the DER directly (see `derw`) so that reused RecipientInfos are copied, not
//! re-encoded, per message. Opening walks the received bytes so that the RecipientInfos are
//! hashed exactly as received (the get-side key cache is keyed by that digest).

use crate::asn1::{self, GcmParameters, children};
use crate::counters::{Counters, Op};
use crate::derw::{header, tlv, tlv_len};
use crate::error::{Check, ProtectError, Result, fail};
use crate::keyreuse::ContentKey;
use crate::oids;
use crate::policy::EncAlg;
use aws_lc_rs::aead::{Aad, Nonce};
use cms::enveloped_data::EncryptedContentInfo;
use const_oid::ObjectIdentifier as Oid;

const NONCE_LEN: usize = 12;
const TAG_LEN: usize = 16;

fn oid_tlv(out: &mut Vec<u8>, oid: &Oid) {
    tlv(out, 0x06, oid.as_bytes());
}

/// Seals `plaintext` (of CMS content type `content_type`) and returns the DER of a
/// ContentInfo holding an AuthEnvelopedData. `auth_attrs` is the DER of a SET OF Attribute
/// (tag 0x31) authenticated as GCM associated data, or `None`.
pub fn seal(
    content_type: &Oid,
    plaintext: &[u8],
    key: &ContentKey,
    recipient_infos_der: &[u8],
    auth_attrs: Option<&[u8]>,
    counters: &Counters,
) -> Result<Vec<u8>> {
    let mut nonce = [0u8; NONCE_LEN];
    aws_lc_rs::rand::fill(&mut nonce)
        .map_err(|_| ProtectError::Protect("no randomness for the nonce".into()))?;
    let mut ct = plaintext.to_vec();
    let aad = auth_attrs.unwrap_or(&[]);
    let tag = counters
        .time(Op::Encrypt, || {
            key.aead.seal_in_place_separate_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(aad),
                &mut ct,
            )
        })
        .map_err(|_| ProtectError::Protect("AES-GCM encryption failed".into()))?;
    counters.add_sym_bytes(plaintext.len());

    let gcm_oid = if key.alg == EncAlg::Aes128 {
        oids::AES128_GCM
    } else {
        oids::AES256_GCM
    };
    let mut params = Vec::with_capacity(20);
    tlv(&mut params, 0x04, &nonce);
    tlv(&mut params, 0x02, &[TAG_LEN as u8]);
    let mut alg = Vec::with_capacity(40);
    oid_tlv(&mut alg, &gcm_oid);
    tlv(&mut alg, 0x30, &params);

    let mut ct_oid = Vec::with_capacity(12);
    oid_tlv(&mut ct_oid, content_type);
    let eci_len = ct_oid.len() + tlv_len(alg.len()) + tlv_len(ct.len());
    let attrs_len = auth_attrs.map(|a| a.len()).unwrap_or(0);
    let aed_len = 3 + recipient_infos_der.len() + tlv_len(eci_len) + attrs_len + tlv_len(TAG_LEN);
    let mut ci_oid = Vec::with_capacity(14);
    oid_tlv(&mut ci_oid, &oids::ID_AUTH_ENVELOPED_DATA);
    let explicit_len = tlv_len(aed_len);
    let ci_len = ci_oid.len() + tlv_len(explicit_len);

    let mut out = Vec::with_capacity(tlv_len(ci_len));
    header(&mut out, 0x30, ci_len);
    out.extend_from_slice(&ci_oid);
    header(&mut out, 0xA0, explicit_len);
    header(&mut out, 0x30, aed_len);
    out.extend_from_slice(&[0x02, 0x01, 0x00]);
    out.extend_from_slice(recipient_infos_der);
    header(&mut out, 0x30, eci_len);
    out.extend_from_slice(&ct_oid);
    tlv(&mut out, 0x30, &alg);
    tlv(&mut out, 0x80, &ct);
    if let Some(a) = auth_attrs {
        out.push(0xA1);
        out.extend_from_slice(&a[1..]);
    }
    tlv(&mut out, 0x04, tag.as_ref());
    Ok(out)
}

/// A received AuthEnvelopedData, parsed but not yet decrypted.
pub struct Received<'a> {
    /// The RecipientInfos SET exactly as received.
    pub recipient_infos: &'a [u8],
    pub content_type: Oid,
    pub alg: EncAlg,
    nonce: Vec<u8>,
    ciphertext: Vec<u8>,
    /// The authAttrs re-tagged as SET (0x31), as GCM associated data.
    pub auth_attrs: Option<Vec<u8>>,
    mac: &'a [u8],
}

/// True if `der` is a ContentInfo of an AuthEnvelopedData (or the refused EnvelopedData).
pub fn content_type_of(der: &[u8]) -> Result<Oid> {
    let top = children(der)?;
    let [ci] = top.as_slice() else {
        return Err(fail!(
            Check::Header,
            "CMS object is not a single ContentInfo"
        ));
    };
    let fields = children(ci.content)?;
    let oid = fields
        .first()
        .filter(|t| t.tag == 0x06)
        .ok_or_else(|| fail!(Check::Header, "ContentInfo has no content type"))?;
    Oid::from_bytes(oid.content).map_err(|e| fail!(Check::Header, "bad content type OID: {e}"))
}

/// Parses a ContentInfo holding an AuthEnvelopedData.
pub fn parse(der: &[u8]) -> Result<Received<'_>> {
    let top = children(der)?;
    let [ci] = top.as_slice() else {
        return Err(fail!(
            Check::Header,
            "CMS object is not a single ContentInfo"
        ));
    };
    let fields = children(ci.content)?;
    let (Some(oid), Some(explicit), 2) = (fields.first(), fields.get(1), fields.len()) else {
        return Err(fail!(Check::Header, "ContentInfo is malformed"));
    };
    let ct =
        Oid::from_bytes(oid.content).map_err(|e| fail!(Check::Header, "bad content type: {e}"))?;
    if ct == oids::ID_ENVELOPED_DATA {
        return Err(fail!(
            Check::Algorithms,
            "EnvelopedData (unauthenticated CBC encryption) is refused; use AuthEnvelopedData with AES-GCM"
        ));
    }
    if ct != oids::ID_AUTH_ENVELOPED_DATA || explicit.tag != 0xA0 {
        return Err(fail!(
            Check::Header,
            "expected AuthEnvelopedData, found {}",
            oids::name(&ct)
        ));
    }
    let inner = children(explicit.content)?;
    let [aed] = inner.as_slice() else {
        return Err(fail!(Check::Header, "AuthEnvelopedData is malformed"));
    };
    let parts = children(aed.content)?;
    let mut it = parts.iter().peekable();
    match it.next() {
        Some(v) if v.tag == 0x02 && v.content == [0] => {}
        _ => return Err(fail!(Check::Header, "AuthEnvelopedData version must be 0")),
    }
    if it.peek().is_some_and(|t| t.tag == 0xA0) {
        it.next(); // originatorInfo: certificates we do not need
    }
    let ris = it
        .next()
        .filter(|t| t.tag == 0x31)
        .ok_or_else(|| fail!(Check::Header, "AuthEnvelopedData has no RecipientInfos"))?;
    let eci_tlv = it.next().filter(|t| t.tag == 0x30).ok_or_else(|| {
        fail!(
            Check::Header,
            "AuthEnvelopedData has no encrypted content info"
        )
    })?;
    let auth_attrs = match it.peek() {
        Some(t) if t.tag == 0xA1 => {
            let mut v = t.whole.to_vec();
            v[0] = 0x31;
            it.next();
            Some(v)
        }
        _ => None,
    };
    let mac = it
        .next()
        .filter(|t| t.tag == 0x04)
        .ok_or_else(|| fail!(Check::Header, "AuthEnvelopedData has no MAC"))?;
    if it.peek().is_some_and(|t| t.tag != 0xA2) || it.count() > 1 {
        return Err(fail!(
            Check::Header,
            "AuthEnvelopedData has trailing fields"
        ));
    }
    let eci: EncryptedContentInfo = asn1::decode(eci_tlv.whole, "EncryptedContentInfo")?;
    let alg_oid = eci.content_enc_alg.oid;
    let alg = match alg_oid {
        o if o == oids::AES128_GCM => EncAlg::Aes128,
        o if o == oids::AES256_GCM => EncAlg::Aes256,
        o if o == oids::DES_EDE3_CBC || o == oids::RC2_CBC => {
            return Err(fail!(
                Check::Algorithms,
                "content encryption {} is insecure and refused",
                oids::name(&o)
            ));
        }
        o => {
            return Err(fail!(
                Check::Algorithms,
                "content encryption {} is not supported",
                oids::name(&o)
            ));
        }
    };
    let params: GcmParameters = eci
        .content_enc_alg
        .parameters
        .as_ref()
        .and_then(|p| p.decode_as().ok())
        .ok_or_else(|| fail!(Check::Header, "AES-GCM parameters missing or unreadable"))?;
    if params.nonce.as_bytes().len() != NONCE_LEN {
        return Err(fail!(
            Check::Algorithms,
            "AES-GCM nonce of {} bytes is not supported (12 expected)",
            params.nonce.as_bytes().len()
        ));
    }
    if params.icv_len as usize != TAG_LEN || mac.content.len() != TAG_LEN {
        return Err(fail!(
            Check::Algorithms,
            "AES-GCM tag must be {TAG_LEN} bytes"
        ));
    }
    let ciphertext = eci
        .encrypted_content
        .ok_or_else(|| {
            fail!(
                Check::Header,
                "AuthEnvelopedData has no encrypted content (detached)"
            )
        })?
        .into_bytes();
    Ok(Received {
        recipient_infos: ris.whole,
        content_type: eci.content_type,
        alg,
        nonce: params.nonce.into_bytes(),
        ciphertext,
        auth_attrs,
        mac: mac.content,
    })
}

impl Received<'_> {
    /// Decrypts and checks the tag.
    pub fn decrypt(&self, key: &ContentKey, counters: &Counters) -> Result<Vec<u8>> {
        if key.alg != self.alg {
            return Err(fail!(
                Check::Decrypt,
                "content key does not fit {}",
                self.alg.name()
            ));
        }
        let nonce = Nonce::try_assume_unique_for_key(&self.nonce)
            .map_err(|_| fail!(Check::Decrypt, "bad nonce"))?;
        let mut buf = Vec::with_capacity(self.ciphertext.len() + TAG_LEN);
        buf.extend_from_slice(&self.ciphertext);
        buf.extend_from_slice(self.mac);
        let aad = self.auth_attrs.as_deref().unwrap_or(&[]);
        let n = counters
            .time(Op::Decrypt, || {
                key.aead
                    .open_in_place(nonce, Aad::from(aad), &mut buf)
                    .map(|p| p.len())
            })
            .map_err(|_| {
                fail!(
                    Check::Decrypt,
                    "AES-GCM authentication failed: the message was altered or the key is wrong"
                )
            })?;
        counters.add_sym_bytes(n);
        buf.truncate(n);
        Ok(buf)
    }
}

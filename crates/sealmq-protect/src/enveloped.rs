//! CMS AuthEnvelopedData (RFC 5083) with AES-GCM (RFC 5084): sealing content under a content
//! key for already-encoded RecipientInfos, and opening it.
//!
//! Sealing writes the DER directly (see `derw`) so that reused RecipientInfos are copied, not
//! re-encoded, per message. Opening walks the received bytes so that the RecipientInfos are
//! hashed exactly as received (the get-side key cache is keyed by that digest).

use crate::asn1::{self, GcmParameters, Tlv, children};
use crate::counters::{Counters, Op};
use crate::derw::{header, tlv, tlv_len};
use crate::error::{Check, ProtectError, Result, fail};
use crate::keyreuse::ContentKey;
use crate::oids;
use crate::policy::EncAlg;
use aws_lc_rs::aead::{Aad, Nonce};
use const_oid::ObjectIdentifier as Oid;

const NONCE_LEN: usize = 12;
const TAG_LEN: usize = 16;

fn oid_tlv(out: &mut Vec<u8>, oid: &Oid) {
    tlv(out, 0x06, oid.as_bytes());
}

/// Seals `plaintext` (of CMS content type `content_type`) and appends to `out` the DER of a
/// ContentInfo holding an AuthEnvelopedData. `auth_attrs` is the DER of a SET OF Attribute
/// (tag 0x31) authenticated as GCM associated data, or `None`. The plaintext is copied once,
/// into its place in `out`, and encrypted there.
pub fn seal_into(
    out: &mut Vec<u8>,
    content_type: &Oid,
    plaintext: &[u8],
    key: &ContentKey,
    recipient_infos_der: &[u8],
    auth_attrs: Option<&[u8]>,
    counters: &Counters,
) -> Result<()> {
    let mut nonce = [0u8; NONCE_LEN];
    aws_lc_rs::rand::fill(&mut nonce)
        .map_err(|_| ProtectError::Protect("no randomness for the nonce".into()))?;
    let gcm_oid = if key.alg == EncAlg::Aes128 {
        oids::AES128_GCM
    } else {
        oids::AES256_GCM
    };
    // AlgorithmIdentifier { aes-gcm, GCMParameters { nonce, icvLen 16 } }
    let params_len = tlv_len(NONCE_LEN) + 3;
    let alg_len = tlv_len(gcm_oid.as_bytes().len()) + tlv_len(params_len);
    let ct_oid_len = tlv_len(content_type.as_bytes().len());
    let eci_len = ct_oid_len + tlv_len(alg_len) + tlv_len(plaintext.len());
    let attrs_len = auth_attrs.map(|a| a.len()).unwrap_or(0);
    let aed_len = 3 + recipient_infos_der.len() + tlv_len(eci_len) + attrs_len + tlv_len(TAG_LEN);
    let explicit_len = tlv_len(aed_len);
    let ci_oid_len = tlv_len(oids::ID_AUTH_ENVELOPED_DATA.as_bytes().len());
    let ci_len = ci_oid_len + tlv_len(explicit_len);

    out.reserve(tlv_len(ci_len));
    header(out, 0x30, ci_len);
    oid_tlv(out, &oids::ID_AUTH_ENVELOPED_DATA);
    header(out, 0xA0, explicit_len);
    header(out, 0x30, aed_len);
    out.extend_from_slice(&[0x02, 0x01, 0x00]);
    out.extend_from_slice(recipient_infos_der);
    header(out, 0x30, eci_len);
    oid_tlv(out, content_type);
    header(out, 0x30, alg_len);
    oid_tlv(out, &gcm_oid);
    header(out, 0x30, params_len);
    tlv(out, 0x04, &nonce);
    tlv(out, 0x02, &[TAG_LEN as u8]);
    header(out, 0x80, plaintext.len());
    let start = out.len();
    out.extend_from_slice(plaintext);
    let aad = auth_attrs.unwrap_or(&[]);
    let tag = counters
        .time(Op::Encrypt, || {
            key.aead.seal_in_place_separate_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(aad),
                &mut out[start..],
            )
        })
        .map_err(|_| ProtectError::Protect("AES-GCM encryption failed".into()))?;
    counters.add_sym_bytes(plaintext.len());
    if let Some(a) = auth_attrs {
        out.push(0xA1);
        out.extend_from_slice(&a[1..]);
    }
    tlv(out, 0x04, tag.as_ref());
    Ok(())
}

/// A received AuthEnvelopedData, parsed but not yet decrypted.
pub struct Received<'a> {
    /// The RecipientInfos SET exactly as received.
    pub recipient_infos: &'a [u8],
    pub content_type: Oid,
    pub alg: EncAlg,
    nonce: [u8; NONCE_LEN],
    ciphertext: &'a [u8],
    /// The authAttrs re-tagged as SET (0x31), as GCM associated data.
    pub auth_attrs: Option<Vec<u8>>,
    mac: &'a [u8],
}

/// Splits a ContentInfo into its content type and the `[0] EXPLICIT` content TLV.
fn content_info(der: &[u8]) -> Result<(Oid, Tlv<'_>)> {
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
    if oid.tag != 0x06 || explicit.tag != 0xA0 {
        return Err(fail!(Check::Header, "ContentInfo is malformed"));
    }
    let ct =
        Oid::from_bytes(oid.content).map_err(|e| fail!(Check::Header, "bad content type: {e}"))?;
    Ok((ct, *explicit))
}

/// The content type of a ContentInfo.
pub fn content_type_of(der: &[u8]) -> Result<Oid> {
    content_info(der).map(|(ct, _)| ct)
}

/// Parses a ContentInfo holding an AuthEnvelopedData.
pub fn parse(der: &[u8]) -> Result<Received<'_>> {
    let (ct, explicit) = content_info(der)?;

    if ct == oids::ID_ENVELOPED_DATA {
        return Err(fail!(
            Check::Algorithms,
            "EnvelopedData (unauthenticated CBC encryption) is refused; use AuthEnvelopedData with AES-GCM"
        ));
    }
    if ct != oids::ID_AUTH_ENVELOPED_DATA {
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
    let (ris, eci_tlv, auth_attrs, mac) = aed_fields(aed)?;
    // EncryptedContentInfo ::= SEQUENCE { contentType, contentEncryptionAlgorithm,
    //   encryptedContent [0] IMPLICIT OCTET STRING OPTIONAL }, walked without copying.
    let eci = children(eci_tlv.content)?;
    let (Some(ct_tlv), Some(alg_tlv)) = (eci.first(), eci.get(1)) else {
        return Err(fail!(Check::Header, "encrypted content info is malformed"));
    };
    if ct_tlv.tag != 0x06 || alg_tlv.tag != 0x30 || eci.len() > 3 {
        return Err(fail!(Check::Header, "encrypted content info is malformed"));
    }
    let content_type = Oid::from_bytes(ct_tlv.content)
        .map_err(|e| fail!(Check::Header, "bad content type: {e}"))?;
    let alg_parts = children(alg_tlv.content)?;
    let alg_oid = alg_parts
        .first()
        .filter(|t| t.tag == 0x06)
        .and_then(|t| Oid::from_bytes(t.content).ok())
        .ok_or_else(|| fail!(Check::Header, "content encryption algorithm is malformed"))?;
    let alg = enc_alg(alg_oid)?;
    let params: GcmParameters = match alg_parts.get(1) {
        Some(p) if alg_parts.len() == 2 => asn1::decode(p.whole, "AES-GCM parameters")?,
        _ => return Err(fail!(Check::Header, "AES-GCM parameters missing")),
    };
    let nonce = params.nonce.as_bytes();
    if nonce.len() != NONCE_LEN {
        return Err(fail!(
            Check::Algorithms,
            "AES-GCM nonce of {} bytes is not supported (12 expected)",
            nonce.len()
        ));
    }
    if params.icv_len as usize != TAG_LEN || mac.content.len() != TAG_LEN {
        return Err(fail!(
            Check::Algorithms,
            "AES-GCM tag must be {TAG_LEN} bytes"
        ));
    }
    let ciphertext = encrypted_content(eci.get(2))?;
    let mut nonce_arr = [0u8; NONCE_LEN];
    nonce_arr.copy_from_slice(nonce);
    Ok(Received {
        recipient_infos: ris.whole,
        content_type,
        alg,
        nonce: nonce_arr,
        ciphertext,
        auth_attrs,
        mac: mac.content,
    })
}

/// The fields of an AuthEnvelopedData after its version (originatorInfo skipped):
/// RecipientInfos, EncryptedContentInfo, the authenticated attributes (as a SET, for the
/// MAC's additional data), and the MAC.
#[allow(clippy::type_complexity)] // four parts of one structure, named where they are used
fn aed_fields<'a>(aed: &Tlv<'a>) -> Result<(Tlv<'a>, Tlv<'a>, Option<Vec<u8>>, Tlv<'a>)> {
    let parts = children(aed.content)?;
    let mut it = parts.into_iter().peekable();
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
    Ok((ris, eci_tlv, auth_attrs, mac))
}

/// The content encryption algorithm: AES-GCM; CBC ciphers are refused as insecure.
fn enc_alg(alg_oid: Oid) -> Result<EncAlg> {
    Ok(match alg_oid {
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
    })
}

/// The encrypted content: a primitive [0] OCTET STRING, never detached.
fn encrypted_content<'a>(t: Option<&Tlv<'a>>) -> Result<&'a [u8]> {
    match t {
        Some(t) if t.tag == 0x80 => Ok(t.content),
        Some(_) => Err(fail!(
            Check::Header,
            "encrypted content must be a primitive [0] OCTET STRING (DER)"
        )),
        None => Err(fail!(
            Check::Header,
            "AuthEnvelopedData has no encrypted content (detached)"
        )),
    }
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
        let nonce = Nonce::assume_unique_for_key(self.nonce);
        let mut out = vec![0u8; self.ciphertext.len()];
        let aad = self.auth_attrs.as_deref().unwrap_or(&[]);
        counters
            .time(Op::Decrypt, || {
                key.aead.open_separate_gather(
                    nonce,
                    Aad::from(aad),
                    self.ciphertext,
                    self.mac,
                    &mut out,
                )
            })
            .map_err(|_| {
                fail!(
                    Check::Decrypt,
                    "AES-GCM authentication failed: the message was altered or the key is wrong"
                )
            })?;
        counters.add_sym_bytes(out.len());
        Ok(out)
    }
}

/// `der` (a ContentInfo holding an AuthEnvelopedData, as [`parse`] accepted it) with its
/// RecipientInfos replaced by `recipient_infos_der` (a DER SET): everything else, the encrypted
/// content and its tag included, is copied as it is. What `sealmq reprotect` writes.
pub fn with_recipients(der: &[u8], recipient_infos_der: &[u8]) -> Result<Vec<u8>> {
    let (_, explicit) = content_info(der)?;
    let inner = children(explicit.content)?;
    let [aed] = inner.as_slice() else {
        return Err(fail!(Check::Header, "AuthEnvelopedData is malformed"));
    };
    let parts = children(aed.content)?;
    let mut aed_content = Vec::with_capacity(aed.content.len() + recipient_infos_der.len());
    let mut replaced = false;
    for p in &parts {
        if p.tag == 0x31 && !replaced {
            aed_content.extend_from_slice(recipient_infos_der);
            replaced = true;
        } else {
            aed_content.extend_from_slice(p.whole);
        }
    }
    let ci_oid_len = tlv_len(oids::ID_AUTH_ENVELOPED_DATA.as_bytes().len());
    let aed_len = tlv_len(aed_content.len());
    let ci_len = ci_oid_len + tlv_len(aed_len);
    let mut out = Vec::with_capacity(tlv_len(ci_len));
    header(&mut out, 0x30, ci_len);
    oid_tlv(&mut out, &oids::ID_AUTH_ENVELOPED_DATA);
    header(&mut out, 0xA0, aed_len);
    tlv(&mut out, 0x30, &aed_content);
    Ok(out)
}

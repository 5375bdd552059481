//! IBM MQ Advanced Message Security's protected-message format, read and written beside
//! sealmq's envelope (docs/envelope.md, "IBM MQ AMS's format"). Learned only by observing
//! IBM's Java interceptor protect messages through a sealmq queue manager (docs/mq-clients.md).
//!
//! A `PDMQ` header (big-endian integers), then DER CMS:
//!
//! | offset | size | field |
//! | --- | --- | --- |
//! | 0 | 4 | `PDMQ` |
//! | 4 | 4 | version (2; 3 for Confidentiality), then 0, 1, 0 |
//! | 8 | 4 | header length (104; 112 for version 3), twice |
//! | 16 | 4 | QoP: 4 Integrity, 8 Privacy, 0x40 Confidentiality (+ 0x20 with key reuse) |
//! | 20 | 4 | 1208 |
//! | 24 | 4 | original payload length |
//! | 28 | 4 | version 3: length of the CMS object; else 0 |
//! | 32 | 8 | original MD format |
//! | 40 | 16 | zero |
//! | 56 | 48 | queue name, NUL padded |
//! | 104 | 8 | version 3: IV length (2 bytes, 16), 2 zero bytes, length of the encrypted payload (4 bytes) |
//!
//! Integrity: a SignedData (PKCS#1 v1.5 RSA, content type, signing time, message digest).
//! Privacy: an EnvelopedData (RSA PKCS#1 v1.5 key transport, AES-CBC) whose content, of type
//! signedData, is the contents octets of that SignedData. Confidentiality: an EnvelopedData
//! holding the message key (reused across messages under KEYREUSE), then after it the IV and
//! the payload encrypted under that key with AES-CBC (no integrity: IBM's design). The header is not authenticated.

use super::{Binds, Protector, Unprotected, at_least};
use crate::cert::Cert;
use crate::error::{Check, ProtectError, Result, fail};
use crate::header::Original;
use crate::keys::PrivateKey;
use crate::oids;
use crate::policy::{EncAlg, Envelope, KeyReuse, Policy, Qop};
use aws_lc_rs::cipher::{
    AES_128, AES_256, DecryptionContext, EncryptionContext, PaddedBlockDecryptingKey,
    PaddedBlockEncryptingKey, UnboundCipherKey,
};
use aws_lc_rs::iv::FixedLength;
use aws_lc_rs::rsa::{Pkcs1PublicEncryptingKey, PublicEncryptingKey};
use cms::content_info::{CmsVersion, ContentInfo};
use cms::enveloped_data::{
    EncryptedContentInfo, EnvelopedData, KeyTransRecipientInfo, RecipientIdentifier, RecipientInfo,
};
use const_oid::ObjectIdentifier as Oid;
use der::asn1::{OctetString, SetOfVec};
use der::{Any, Decode, Encode};
use spki::AlgorithmIdentifierOwned;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;
use zeroize::Zeroizing;

pub const MAGIC: [u8; 4] = *b"PDMQ";
const V2_LEN: usize = 104;
const V3_LEN: usize = 112;
const QUEUE_AT: usize = 56;
const NAME_LEN: usize = 48;
const IV_LEN: usize = 16;
const FLAG_INTEGRITY: u32 = 0x04;
const FLAG_PRIVACY: u32 = 0x08;
const FLAG_CONFIDENTIALITY: u32 = 0x40;
/// With Confidentiality, IBM's interceptor adds 0x20 when its policy reuses keys; sealmq reads
/// it and writes 0x40 alone, which IBM's interceptor reads under either.
const FLAG_KEY_REUSE: u32 = 0x20;
const AES128_CBC: Oid = Oid::new_unwrap("2.16.840.1.101.3.4.1.2");
const AES256_CBC: Oid = Oid::new_unwrap("2.16.840.1.101.3.4.1.42");

/// True when `bytes` begin with IBM's header.
pub fn has_magic(bytes: &[u8]) -> bool {
    bytes.len() >= 4 && bytes[..4] == MAGIC
}

/// A parsed IBM envelope.
struct Pdmq<'a> {
    qop: Qop,
    payload_len: u32,
    format: [u8; 8],
    queue: String,
    cms: &'a [u8],
    /// Version 3: the IV and the encrypted payload.
    tail: &'a [u8],
}

fn be32(b: &[u8], at: usize) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[at..at + 4]);
    u32::from_be_bytes(a)
}

fn be16(b: &[u8], at: usize) -> usize {
    u16::from_be_bytes([b[at], b[at + 1]]) as usize
}

fn bad(what: impl std::fmt::Display) -> ProtectError {
    fail!(Check::Header, "IBM MQ AMS header (PDMQ): {what}")
}

fn decode(b: &[u8]) -> Result<Pdmq<'_>> {
    if b.len() < V2_LEN || !has_magic(b) {
        return Err(bad(format!("{} bytes are too short", b.len())));
    }
    let hlen = be32(b, 8) as usize;
    let v3 = match (&b[4..8], hlen) {
        ([2, 0, 1, 0], V2_LEN) => false,
        ([3, 0, 1, 0], V3_LEN) => true,
        (v, _) => return Err(bad(format!("version {v:02x?} with length {hlen}"))),
    };
    if be32(b, 12) as usize != hlen || b.len() < hlen || be32(b, 20) != 1208 {
        return Err(bad("inconsistent lengths"));
    }
    let qop = match be32(b, 16) {
        FLAG_INTEGRITY if !v3 => Qop::Integrity,
        FLAG_PRIVACY if !v3 => Qop::Privacy,
        f if v3 && f & !FLAG_KEY_REUSE == FLAG_CONFIDENTIALITY => Qop::Confidentiality,
        f => return Err(bad(format!("protection flags {f:#x}"))),
    };
    if b[40..QUEUE_AT].iter().any(|&c| c != 0) {
        return Err(bad("reserved bytes are not zero"));
    }
    let name = &b[QUEUE_AT..QUEUE_AT + NAME_LEN];
    let end = name.iter().position(|&c| c == 0).unwrap_or(NAME_LEN);
    if name[end..].iter().any(|&c| c != 0) {
        return Err(bad("queue name is not NUL padded"));
    }
    let queue = std::str::from_utf8(&name[..end])
        .map_err(|_| bad("queue name is not text"))?
        .trim_end()
        .to_string();
    let mut format = [0u8; 8];
    format.copy_from_slice(&b[32..40]);
    let cms_len = be32(b, 28) as usize;
    let (cms, tail) = if v3 {
        let (iv_len, zero, ct_len) = (be16(b, 104), be16(b, 106), be32(b, 108) as usize);
        if iv_len != IV_LEN || zero != 0 || ct_len == 0 || ct_len % IV_LEN != 0 {
            return Err(bad(format!(
                "IV length {iv_len}, encrypted length {ct_len}"
            )));
        }
        let rest = &b[hlen..];
        if cms_len > rest.len() {
            return Err(bad("the CMS object is cut short"));
        }
        let (cms, tail) = rest.split_at(cms_len);
        if tail.len() != IV_LEN + ct_len {
            return Err(bad(
                "the encrypted payload's length differs from the header's",
            ));
        }
        (cms, tail)
    } else {
        if cms_len != 0 {
            return Err(bad("a CMS length in a version 2 header"));
        }
        (&b[hlen..], &b[b.len()..])
    };
    Ok(Pdmq {
        qop,
        payload_len: be32(b, 24),
        format,
        queue,
        cms,
        tail,
    })
}

fn encode_header(p: &Policy, len: u32, o: &Original, cms_len: u32, ct_len: usize) -> Vec<u8> {
    let (qop, queue) = (p.qop(), p.name.as_str());
    let v3 = qop == Qop::Confidentiality;
    let hlen = if v3 { V3_LEN } else { V2_LEN };
    let mut h = Vec::with_capacity(hlen);
    h.extend_from_slice(&MAGIC);
    h.extend_from_slice(&[if v3 { 3 } else { 2 }, 0, 1, 0]);
    h.extend_from_slice(&(hlen as u32).to_be_bytes());
    h.extend_from_slice(&(hlen as u32).to_be_bytes());
    let flags = match qop {
        Qop::Integrity => FLAG_INTEGRITY,
        Qop::Privacy => FLAG_PRIVACY,
        _ => FLAG_CONFIDENTIALITY,
    };
    h.extend_from_slice(&flags.to_be_bytes());
    h.extend_from_slice(&1208u32.to_be_bytes());
    h.extend_from_slice(&len.to_be_bytes());
    h.extend_from_slice(&cms_len.to_be_bytes());
    h.extend_from_slice(&o.format);
    h.resize(QUEUE_AT, 0);
    let name = queue.as_bytes();
    h.extend_from_slice(&name[..name.len().min(NAME_LEN)]);
    h.resize(V2_LEN, 0);
    if v3 {
        h.extend_from_slice(&(IV_LEN as u16).to_be_bytes());
        h.extend_from_slice(&[0; 2]);
        h.extend_from_slice(&(ct_len as u32).to_be_bytes());
    }
    h
}

fn cbc_alg(key_len: usize) -> Result<&'static aws_lc_rs::cipher::Algorithm> {
    match key_len {
        16 => Ok(&AES_128),
        32 => Ok(&AES_256),
        n => Err(fail!(Check::Decrypt, "a {n}-byte AES key")),
    }
}

fn cbc_oid(enc: EncAlg) -> Oid {
    if enc == EncAlg::Aes128 {
        AES128_CBC
    } else {
        AES256_CBC
    }
}

fn enc_of(oid: &Oid) -> Result<EncAlg> {
    match *oid {
        AES128_CBC => Ok(EncAlg::Aes128),
        AES256_CBC => Ok(EncAlg::Aes256),
        o => Err(fail!(
            Check::Algorithms,
            "content encryption {} is refused (AES-128-CBC or AES-256-CBC)",
            oids::name(&o)
        )),
    }
}

fn cbc_encrypt(key: &[u8], iv: &[u8; IV_LEN], plain: &[u8]) -> Result<Vec<u8>> {
    let perr = |_| ProtectError::Protect("AES-CBC encryption failed".into());
    let k = UnboundCipherKey::new(cbc_alg(key.len())?, key).map_err(perr)?;
    let k = PaddedBlockEncryptingKey::cbc_pkcs7(k).map_err(perr)?;
    let mut out = plain.to_vec();
    k.less_safe_encrypt(&mut out, EncryptionContext::Iv128(FixedLength::from(iv)))
        .map_err(perr)?;
    Ok(out)
}

/// Decrypts; a wrong key and altered bytes fail alike (no padding oracle in the error).
fn cbc_decrypt(key: &[u8], iv: &[u8], cipher: &[u8]) -> Result<Vec<u8>> {
    let failed = || {
        fail!(
            Check::Decrypt,
            "AES-CBC decryption failed: wrong key, or the message was altered"
        )
    };
    let k = UnboundCipherKey::new(cbc_alg(key.len())?, key).map_err(|_| failed())?;
    let k = PaddedBlockDecryptingKey::cbc_pkcs7(k).map_err(|_| failed())?;
    let iv = FixedLength::<IV_LEN>::try_from(iv).map_err(|_| failed())?;
    let mut buf = cipher.to_vec();
    let n = k
        .decrypt(&mut buf, DecryptionContext::Iv128(iv))
        .map_err(|_| failed())?
        .len();
    buf.truncate(n);
    Ok(buf)
}

fn random<const N: usize>() -> Result<[u8; N]> {
    let mut b = [0u8; N];
    aws_lc_rs::rand::fill(&mut b).map_err(|_| ProtectError::Protect("no randomness".into()))?;
    Ok(b)
}

fn der_err(e: der::Error) -> ProtectError {
    fail!(Check::Header, "CMS in the IBM envelope: {e}")
}

/// An EnvelopedData of `content` (typed `content_type`) under a fresh key, for `certs`
/// (RSA PKCS#1 v1.5 key transport, as IBM's interceptor reads).
fn envelop(certs: &[Cert], enc: EncAlg, content_type: Oid, content: &[u8]) -> Result<Vec<u8>> {
    let perr = |e: der::Error| ProtectError::Protect(e.to_string());
    let cek = Zeroizing::new(random::<32>()?[..enc.key_len()].to_vec());
    let iv = random::<IV_LEN>()?;
    let mut infos = SetOfVec::new();
    for c in certs {
        let pk = PublicEncryptingKey::from_der(&c.public_key().spki_der)
            .ok()
            .and_then(|k| Pkcs1PublicEncryptingKey::new(k).ok())
            .ok_or_else(|| {
                ProtectError::Protect(format!(
                    "recipient '{}': IBM's envelope needs an RSA key (2048 bits or more)",
                    c.subject()
                ))
            })?;
        let mut wrapped = vec![0u8; pk.ciphertext_size()];
        let n = pk
            .encrypt(&cek, &mut wrapped)
            .map_err(|_| ProtectError::Protect("RSA key transport failed".into()))?
            .len();
        wrapped.truncate(n);
        infos
            .insert(RecipientInfo::Ktri(KeyTransRecipientInfo {
                version: CmsVersion::V0,
                rid: RecipientIdentifier::IssuerAndSerialNumber(c.issuer_and_serial()),
                key_enc_alg: AlgorithmIdentifierOwned {
                    oid: oids::RSA_ENCRYPTION,
                    parameters: Some(Any::null()),
                },
                enc_key: OctetString::new(wrapped).map_err(perr)?,
            }))
            .map_err(perr)?;
    }
    let ed = EnvelopedData {
        version: CmsVersion::V0,
        originator_info: None,
        recip_infos: cms::enveloped_data::RecipientInfos(infos),
        encrypted_content: EncryptedContentInfo {
            content_type,
            content_enc_alg: AlgorithmIdentifierOwned {
                oid: cbc_oid(enc),
                parameters: Some(
                    Any::encode_from(&OctetString::new(iv.to_vec()).map_err(perr)?)
                        .map_err(perr)?,
                ),
            },
            encrypted_content: Some(
                OctetString::new(cbc_encrypt(&cek, &iv, content)?).map_err(perr)?,
            ),
        },
        unprotected_attrs: None,
    };
    ContentInfo {
        content_type: oids::ID_ENVELOPED_DATA,
        content: Any::encode_from(&ed).map_err(perr)?,
    }
    .to_der()
    .map_err(perr)
}

/// The contents octets of the SignedData in a ContentInfo (what IBM encrypts for Privacy).
fn signed_contents(ci: &[u8]) -> Result<Vec<u8>> {
    let ci = ContentInfo::from_der(ci).map_err(|e| ProtectError::Protect(e.to_string()))?;
    Ok(ci.content.value().to_vec())
}

/// A ContentInfo holding the SignedData whose contents octets are `contents`.
fn signed_info(contents: &[u8]) -> Result<Vec<u8>> {
    let sd = Any::new(der::Tag::Sequence, contents).map_err(der_err)?;
    ContentInfo {
        content_type: oids::ID_SIGNED_DATA,
        content: sd,
    }
    .to_der()
    .map_err(der_err)
}

/// A message key, shared by the messages that reuse it.
type Key = Arc<Zeroizing<Vec<u8>>>;

/// Key-reuse state of IBM envelopes: keys a putter reuses (by policy) and keys a getter has
/// unwrapped (by digest of the CMS object that carries them).
#[derive(Default)]
pub(super) struct IbmKeys {
    put: Mutex<HashMap<String, PutKey>>,
    got: Mutex<HashMap<[u8; 32], Key>>,
}

struct PutKey {
    key: Key,
    cms: Arc<Vec<u8>>,
    used: u32,
    made: Instant,
    /// The policy's recipients and algorithm when the key was made.
    made_for: (Vec<crate::dn::Dn>, EncAlg),
}

impl Protector {
    /// Protects `payload` in IBM's format under `policy` (ENVELOPE(IBM)).
    pub(super) fn protect_ibm(
        &self,
        policy: &Policy,
        payload: &[u8],
        original: &Original,
    ) -> Result<Vec<u8>> {
        policy.validate()?;
        let len = u32::try_from(payload.len())
            .map_err(|_| ProtectError::Protect("payload is larger than 4 GiB".into()))?;
        let qop = policy.qop();
        let header = |cms_len, ct_len| encode_header(policy, len, original, cms_len, ct_len);
        match qop {
            Qop::Integrity => {
                let mut out = header(0, 0);
                out.extend_from_slice(&self.sign(policy, payload, None)?);
                Ok(out)
            }
            Qop::Privacy => {
                let sd = signed_contents(&self.sign(policy, payload, None)?)?;
                let certs = self.recipients(policy)?;
                let mut out = header(0, 0);
                out.extend_from_slice(&envelop(&certs, policy.enc_alg, oids::ID_SIGNED_DATA, &sd)?);
                Ok(out)
            }
            Qop::Confidentiality => {
                let (key, cms) = self.ibm_put_key(policy)?;
                let iv = random::<IV_LEN>()?;
                let cms_len = u32::try_from(cms.len())
                    .map_err(|_| ProtectError::Protect("key envelope too large".into()))?;
                let ct = cbc_encrypt(&key, &iv, payload)?;
                let mut out = header(cms_len, ct.len());
                out.extend_from_slice(&cms);
                out.extend_from_slice(&iv);
                out.extend_from_slice(&ct);
                Ok(out)
            }
            Qop::None => Ok(payload.to_vec()),
        }
    }

    /// The message key of a Confidentiality policy and the EnvelopedData carrying it, reused
    /// as KEYREUSE allows (and never past the protector's key age).
    fn ibm_put_key(&self, policy: &Policy) -> Result<(Key, Arc<Vec<u8>>)> {
        let made_for = (policy.recipients.clone(), policy.enc_alg);
        let limit = policy.key_reuse.limit();
        if policy.key_reuse != KeyReuse::Disabled
            && let Ok(mut map) = self.ibm.put.lock()
            && let Some(k) = map.get_mut(&policy.name)
            && k.made_for == made_for
            && limit.is_none_or(|l| k.used < l)
            && k.made.elapsed() < self.opts.key_max_age
        {
            k.used += 1;
            self.counters.put_reuse(true);
            return Ok((k.key.clone(), k.cms.clone()));
        }
        self.counters.put_reuse(false);
        let key = Arc::new(Zeroizing::new(
            random::<32>()?[..policy.enc_alg.key_len()].to_vec(),
        ));
        let certs = self.recipients(policy)?;
        let cms = Arc::new(envelop(&certs, policy.enc_alg, oids::ID_DATA, &key)?);
        if policy.key_reuse != KeyReuse::Disabled
            && let Ok(mut map) = self.ibm.put.lock()
        {
            map.insert(
                policy.name.clone(),
                PutKey {
                    key: key.clone(),
                    cms: cms.clone(),
                    used: 1,
                    made: Instant::now(),
                    made_for,
                },
            );
        }
        Ok((key, cms))
    }

    /// Unprotects a message in IBM's format, with the checks of sealmq's own envelope.
    pub(super) fn unprotect_ibm(
        &self,
        policy: &Policy,
        stored: &[u8],
        binds: Binds<'_>,
    ) -> Result<Unprotected> {
        if policy.envelope != Envelope::Ibm {
            return Err(fail!(
                Check::Header,
                "message is in IBM MQ AMS's format (PDMQ) but policy {} is ENVELOPE(SEALMQ): \
                 set ENVELOPE(IBM) on the policy to accept IBM's format",
                policy.name
            ));
        }
        let m = decode(stored)?;
        let expected = match binds {
            Binds::Policy => Some(policy.name.as_str()),
            Binds::Name(n) => Some(n),
            Binds::AnyName => None,
        };
        if let Some(q) = expected
            && m.queue != q
        {
            return Err(fail!(
                Check::Header,
                "protected for queue '{}', not '{q}'",
                m.queue
            ));
        }
        at_least(m.qop, policy)?;
        let (payload, signer) = match m.qop {
            Qop::Integrity => {
                let (c, s) = self.verify_signed(policy, m.cms, None)?;
                (c, Some(s))
            }
            Qop::Privacy => {
                let (ct, inner) = self.ibm_open(policy, m.cms)?;
                if ct != oids::ID_SIGNED_DATA {
                    return Err(fail!(Check::Header, "Privacy content is not signed data"));
                }
                let (c, s) = self.verify_signed(policy, &signed_info(&inner)?, None)?;
                (c, Some(s))
            }
            _ => {
                let key = self.ibm_got_key(policy, m.cms)?;
                (
                    cbc_decrypt(&key, &m.tail[..IV_LEN], &m.tail[IV_LEN..])?,
                    None,
                )
            }
        };
        if payload.len() != m.payload_len as usize {
            return Err(fail!(
                Check::Length,
                "decrypted length {} differs from the header's {}",
                payload.len(),
                m.payload_len
            ));
        }
        Ok(Unprotected {
            payload,
            qop: m.qop,
            // IBM keeps the CCSID and encoding in the descriptor: 0 keeps the descriptor's.
            original: Some(Original {
                format: m.format,
                ccsid: 0,
                encoding: 0,
            }),
            signer,
            tolerated: false,
        })
    }

    /// The message key of a Confidentiality envelope, unwrapped once per key.
    fn ibm_got_key(&self, policy: &Policy, cms: &[u8]) -> Result<Key> {
        let digest = super::sha256_32(cms);
        let cached = self
            .ibm
            .got
            .lock()
            .ok()
            .and_then(|m| m.get(&digest).cloned());
        self.counters.get_reuse(cached.is_some());
        let key = match cached {
            Some(k) => k,
            None => {
                let (ct, key) = self.ibm_open(policy, cms)?;
                if ct != oids::ID_DATA {
                    return Err(fail!(Check::Header, "the key envelope does not hold data"));
                }
                let key = Arc::new(Zeroizing::new(key));
                if let Ok(mut map) = self.ibm.got.lock() {
                    if map.len() >= self.opts.get_cache_capacity {
                        map.clear();
                    }
                    map.insert(digest, key.clone());
                }
                key
            }
        };
        if policy.enc_alg.key_len() > key.len() {
            return Err(fail!(
                Check::Algorithms,
                "the message key is weaker than policy {} ({})",
                policy.name,
                policy.enc_alg.name()
            ));
        }
        Ok(key)
    }

    /// Opens an EnvelopedData addressed to this keystore's identity: its content type and
    /// content. The algorithm must be at least the policy's.
    fn ibm_open(&self, policy: &Policy, der: &[u8]) -> Result<(Oid, Vec<u8>)> {
        let ci = ContentInfo::from_der(der).map_err(der_err)?;
        if ci.content_type != oids::ID_ENVELOPED_DATA {
            return Err(fail!(Check::Header, "content is not enveloped data"));
        }
        let ed: EnvelopedData = ci.content.decode_as().map_err(der_err)?;
        let eci = &ed.encrypted_content;
        let enc = enc_of(&eci.content_enc_alg.oid)?;
        if enc < policy.enc_alg {
            return Err(fail!(
                Check::Algorithms,
                "message is encrypted with {} but policy {} requires {}",
                enc.name(),
                policy.name,
                policy.enc_alg.name()
            ));
        }
        let iv = eci
            .content_enc_alg
            .parameters
            .as_ref()
            .and_then(|p| p.decode_as::<OctetString>().ok())
            .ok_or_else(|| fail!(Check::Header, "no IV for the content encryption"))?;
        let cipher = eci
            .encrypted_content
            .as_ref()
            .ok_or_else(|| fail!(Check::Header, "no encrypted content"))?;
        let cek = self.ibm_unwrap(&ed)?;
        if cek.len() != enc.key_len() {
            return Err(fail!(
                Check::Decrypt,
                "unwrapped key has the wrong length for {}",
                enc.name()
            ));
        }
        let plain = cbc_decrypt(&cek, iv.as_bytes(), cipher.as_bytes())?;
        Ok((eci.content_type, plain))
    }

    /// The content key wrapped for this keystore's identity (RSA PKCS#1 v1.5).
    fn ibm_unwrap(&self, ed: &EnvelopedData) -> Result<Zeroizing<Vec<u8>>> {
        let id = self.keystore.identity().ok_or_else(|| {
            fail!(
                Check::Recipient,
                "the keystore has no identity, so it cannot be a recipient"
            )
        })?;
        let mine = ed.recip_infos.0.iter().find_map(|ri| match ri {
            RecipientInfo::Ktri(k) => match &k.rid {
                RecipientIdentifier::IssuerAndSerialNumber(ias) => {
                    id.cert.matches_issuer_serial(ias).then_some(k)
                }
                RecipientIdentifier::SubjectKeyIdentifier(s) => {
                    (id.cert.subject_key_id().as_deref() == Some(s.0.as_bytes())).then_some(k)
                }
            },
            _ => None,
        });
        let k = mine.ok_or_else(|| {
            fail!(
                Check::Recipient,
                "'{}' is not a recipient of this message",
                id.cert.subject()
            )
        })?;
        if k.key_enc_alg.oid != oids::RSA_ENCRYPTION {
            return Err(fail!(
                Check::Algorithms,
                "key transport {} is not IBM's (rsaEncryption)",
                oids::name(&k.key_enc_alg.oid)
            ));
        }
        let PrivateKey::Rsa { pkcs1, .. } = &id.key else {
            return Err(fail!(
                Check::Decrypt,
                "IBM's envelope wraps keys for RSA but the keystore key is {}",
                id.key.kind().name()
            ));
        };
        let mut out = Zeroizing::new(vec![0u8; pkcs1.key_size_bytes()]);
        let n = pkcs1
            .decrypt(k.enc_key.as_bytes(), &mut out)
            .map_err(|_| {
                fail!(
                    Check::Decrypt,
                    "RSA key unwrap failed: wrong private key, or the message was altered"
                )
            })?
            .len();
        out.truncate(n);
        Ok(out)
    }
}

//! The protection API: protect a payload under a policy, unprotect it with every check of
//! SPEC §5.4 in order, and inspect an envelope without keys.

use crate::cert::Cert;
use crate::counters::{Counters, Snapshot};
use crate::dn::Dn;
use crate::enveloped;
use crate::error::{Check, ProtectError, Result, fail};
use crate::header::{self, Header, Original};
use crate::keyreuse::{
    ContentKey, DEFAULT_GET_CAPACITY, DEFAULT_MAX_AGE, GetCache, PutCache, PutKey,
};
use crate::keys::{insecure_key, is_insecure};
use crate::keystore::Keystore;
use crate::oids;
use crate::pathval::{self, Usage};
use crate::policy::{EncAlg, Envelope, KeyReuse, Policy, Qop};
use crate::recipients;
use crate::signed::{self, SignerRef};
use aws_lc_rs::digest;
use der::Decode;
use sealmq_types::sync::lock;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};
use zeroize::Zeroizing;

pub(crate) mod ibm;

/// Tunables of a [`Protector`].
#[derive(Debug, Clone)]
pub struct Options {
    /// Sign with RSASSA-PSS instead of PKCS#1 v1.5 when the identity is RSA.
    pub rsa_pss: bool,
    /// Maximum age of a reused put-side key.
    pub key_max_age: Duration,
    /// Unwrapped keys a getter keeps.
    pub get_cache_capacity: usize,
    /// How long a resolved recipient certificate, or a validated signer certificate, is
    /// reused before it is validated again (never past the certificate's notAfter).
    pub cert_cache_ttl: Duration,
    /// The explicit insecure switch: allow RSA keys of 1024 bits (own, recipients', signers')
    /// to reproduce the reports' RSA-1024 figures. Off by default.
    pub insecure_rsa1024: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            rsa_pss: false,
            key_max_age: DEFAULT_MAX_AGE,
            get_cache_capacity: DEFAULT_GET_CAPACITY,
            cert_cache_ttl: Duration::from_secs(60),
            insecure_rsa1024: false,
        }
    }
}

/// A message taken out of its envelope.
#[derive(Debug, Clone)]
pub struct Unprotected {
    pub payload: Vec<u8>,
    pub qop: Qop,
    /// MD fields kept in the header (absent for bare CMS and unprotected messages).
    pub original: Option<Original>,
    pub signer: Option<String>,
    /// True when an unprotected message was accepted because the policy tolerates it.
    pub tolerated: bool,
}

/// Protects and unprotects messages with one keystore. Share one per process: its key-reuse
/// caches are what make put1 keep key reuse.
pub struct Protector {
    keystore: Keystore,
    opts: Options,
    counters: Arc<Counters>,
    put_cache: PutCache,
    get_cache: GetCache,
    resolved: Mutex<HashMap<String, (Vec<Cert>, Instant)>>,
    /// Signer certificates (SHA-256 of the DER) that validated, and when.
    validated: Mutex<HashMap<[u8; 32], Instant>>,
    /// Every certificate the keystore knows, to find signers a message does not carry.
    known: Vec<Cert>,
    /// SHA-256 of the identity certificate (the sender part of the put-side cache key).
    sender: Vec<u8>,
    /// Serialises unwraps of the same key (by digest stripe), so concurrent getters meeting a
    /// new key do one private-key operation, not one each.
    unwrapping: [Mutex<()>; UNWRAP_STRIPES],
    /// Key reuse of IBM MQ AMS envelopes (ENVELOPE(IBM) policies).
    ibm: ibm::IbmKeys,
}

/// Stripes of [`Protector::unwrapping`].
const UNWRAP_STRIPES: usize = 16;

fn sha256_32(bytes: &[u8]) -> [u8; 32] {
    let d = digest::digest(&digest::SHA256, bytes);
    let mut out = [0u8; 32];
    out.copy_from_slice(d.as_ref());
    out
}

/// DER (tag 0x31) of the authenticated attributes binding a header core:
/// `SET { SEQUENCE { OID sealmq-header, SET { OCTET STRING core } } }`. Written directly: it is
/// on the per-message path, and its encoding is unique, so the reader compares bytes.
/// Which queue name a version-2 envelope must be bound to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Binds<'a> {
    /// The policy's own name (the queue opened).
    Policy,
    /// This name.
    Name(&'a str),
    /// Any name.
    AnyName,
}

/// What an envelope's header binding must hold to pass.
struct Binding {
    core: Vec<u8>,
    /// Header version 2: the policy name follows the core.
    named: bool,
    /// The name expected after the core.
    name: String,
    /// Any name is accepted (SPLPROT REMOVE at an island's exit, where the transmission
    /// queue's policy removes protection from messages bound to many queue names).
    any_name: bool,
}

impl Binding {
    fn check(&self, value: &[u8]) -> Result<()> {
        if !value.starts_with(&self.core) {
            return Err(fail!(
                Check::Header,
                "the sealmq header does not match the one bound into the envelope (header altered)"
            ));
        }
        let bound = &value[self.core.len()..];
        if !self.named {
            if !bound.is_empty() {
                return Err(fail!(Check::Header, "header version 1 binds no queue name"));
            }
            return Ok(());
        }
        if self.any_name || bound == self.name.as_bytes() {
            return Ok(());
        }
        Err(fail!(
            Check::Header,
            "the message was protected for queue '{}', not '{}': moved or replayed from another queue",
            String::from_utf8_lossy(bound),
            self.name
        ))
    }
}

/// The OCTET STRING inside authenticated attributes written by [`binding_attrs`].
fn binding_value(attrs: &[u8]) -> Option<&[u8]> {
    let set = crate::asn1::children(attrs).ok()?;
    let seq = crate::asn1::children(set.first()?.content).ok()?;
    let attr = crate::asn1::children(seq.first()?.content).ok()?;
    if attr.len() != 2 || attr[0].content != oids::ATTR_SEALMQ_HEADER.as_bytes() {
        return None;
    }
    let values = crate::asn1::children(attr[1].content).ok()?;
    (values.len() == 1 && values[0].tag == 0x04).then_some(values[0].content)
}

fn binding_attrs(core: &[u8]) -> Vec<u8> {
    use crate::derw::{header, tlv, tlv_len};
    let oid = oids::ATTR_SEALMQ_HEADER.as_bytes();
    let value_len = tlv_len(core.len());
    let attr_len = tlv_len(oid.len()) + tlv_len(value_len);
    let seq_len = tlv_len(attr_len);
    let mut set = Vec::with_capacity(tlv_len(seq_len));
    header(&mut set, 0x31, seq_len);
    header(&mut set, 0x30, attr_len);
    tlv(&mut set, 0x06, oid);
    header(&mut set, 0x31, value_len);
    tlv(&mut set, 0x04, core);
    set
}

impl Protector {
    pub fn new(keystore: Keystore) -> Protector {
        Protector::with_options(keystore, Options::default())
    }

    pub fn with_options(keystore: Keystore, opts: Options) -> Protector {
        Protector {
            known: keystore.known_certs(),
            sender: keystore
                .identity()
                .map(|i| sha256_32(i.cert.der()).to_vec())
                .unwrap_or_default(),
            put_cache: PutCache::new(opts.key_max_age),
            get_cache: GetCache::new(opts.get_cache_capacity),
            keystore,
            opts,
            counters: Arc::new(Counters::default()),
            resolved: Mutex::new(HashMap::new()),
            validated: Mutex::new(HashMap::new()),
            unwrapping: Default::default(),
            ibm: Default::default(),
        }
    }

    pub fn keystore(&self) -> &Keystore {
        &self.keystore
    }

    pub fn counters(&self) -> Snapshot {
        self.counters.snapshot()
    }

    /// The certificates a message is encrypted to for `dn`: one, or two while the reader
    /// migrates (a classical and an ML-KEM one, see `Keystore::find_recipients`).
    fn recipient(&self, dn: &Dn) -> Result<Vec<Cert>> {
        let key = dn.to_string();
        if let Ok(map) = self.resolved.lock()
            && let Some((c, at)) = map.get(&key)
            && at.elapsed() < self.opts.cert_cache_ttl
        {
            return Ok(c.clone());
        }
        let certs = self.keystore.find_recipients(dn, SystemTime::now())?;
        if let Ok(mut map) = self.resolved.lock() {
            map.insert(key, (certs.clone(), Instant::now()));
        }
        Ok(certs)
    }

    /// The certificates `policy`'s messages are encrypted to now (what `sealmq reprotect`
    /// rewrites a backlog for).
    pub fn current_recipients(&self, policy: &Policy) -> Result<Vec<Cert>> {
        self.recipients(policy)
    }

    fn recipients(&self, policy: &Policy) -> Result<Vec<Cert>> {
        let mut all = Vec::with_capacity(policy.recipients.len());
        for d in &policy.recipients {
            all.extend(self.recipient(d)?);
        }
        Ok(all)
    }

    fn sign(&self, policy: &Policy, content: &[u8], core: Option<&[u8]>) -> Result<Vec<u8>> {
        let id = self.keystore.require_identity().map_err(|e| {
            ProtectError::Protect(format!("policy {} signs messages: {e}", policy.name))
        })?;
        if is_insecure(id.key.kind()) && !self.opts.insecure_rsa1024 {
            return Err(insecure_key(
                id.key.kind(),
                &format!("identity '{}'", id.cert.subject()),
            ));
        }
        let signer = SignerRef {
            key: &id.key,
            cert: &id.cert,
            rsa_pss: self.opts.rsa_pss,
        };
        signed::sign(content, policy.sign_alg, &signer, core, &self.counters)
    }

    /// A content key and the encoded RecipientInfos for one message, reusing a cached key
    /// when the policy allows.
    fn content_key(&self, policy: &Policy) -> Result<(Arc<ContentKey>, Arc<Vec<u8>>)> {
        let reuse = policy.qop() == Qop::Confidentiality && policy.key_reuse != KeyReuse::Disabled;
        let put_key = reuse.then(|| PutKey {
            policy: &policy.name,
            alg: policy.enc_alg,
            recipients: &policy.recipients,
            sender: &self.sender,
        });
        if let Some(k) = &put_key
            && let Some(t) = self.put_cache.take(k, policy.key_reuse.limit())
        {
            // A promoted standby is a new key: its wrap was counted when it was made.
            self.counters.put_reuse(!t.promoted);
            return Ok((t.key, t.recipient_infos));
        }
        let (ck, ri_der) = self.new_content_key(policy)?;
        if let Some(k) = put_key {
            self.counters.put_reuse(false);
            self.put_cache.store(&k, ck.clone(), ri_der.clone());
        }
        Ok((ck, ri_der))
    }

    /// Makes the next reused key of `policy` ahead of need, when its current key is in use
    /// under a KEYREUSE count and none is made yet; returns whether it made one. Meant for
    /// time the caller would otherwise spend waiting (the client library calls it while the
    /// queue manager handles a put), so the message that uses up a key does not pay the wrap.
    pub fn prepare_next_key(&self, policy: &Policy) -> Result<bool> {
        if policy.qop() != Qop::Confidentiality {
            return Ok(false);
        }
        let KeyReuse::Count(n) = policy.key_reuse else {
            return Ok(false);
        };
        let k = PutKey {
            policy: &policy.name,
            alg: policy.enc_alg,
            recipients: &policy.recipients,
            sender: &self.sender,
        };
        if !self.put_cache.claim_standby(&k, Some(n)) {
            return Ok(false);
        }
        match self.new_content_key(policy) {
            Ok((ck, ri_der)) => {
                self.put_cache.set_standby(&k, ck, ri_der);
                Ok(true)
            }
            Err(e) => {
                self.put_cache.unclaim(&k);
                Err(e)
            }
        }
    }

    /// A fresh random content key wrapped for every recipient of `policy`.
    fn new_content_key(&self, policy: &Policy) -> Result<(Arc<ContentKey>, Arc<Vec<u8>>)> {
        let certs = self.recipients(policy)?;
        if let Some(c) = certs.iter().find(|c| is_insecure(c.public_key().kind))
            && !self.opts.insecure_rsa1024
        {
            return Err(insecure_key(
                c.public_key().kind,
                &format!("recipient '{}'", c.subject()),
            ));
        }
        let mut cek = Zeroizing::new(vec![0u8; policy.enc_alg.key_len()]);
        aws_lc_rs::rand::fill(&mut cek)
            .map_err(|_| ProtectError::Protect("no randomness for the key".into()))?;
        let ris = recipients::wrap_for(&certs, &cek, policy.enc_alg, &self.counters)?;
        let ri_der = Arc::new(recipients::encode(&ris)?);
        let ck = Arc::new(
            ContentKey::new(policy.enc_alg, &cek)
                .ok_or_else(|| ProtectError::Protect("bad content key".into()))?,
        );
        Ok((ck, ri_der))
    }

    /// Appends the CMS object protecting `payload` to `out` and returns the header.
    fn protect_into(
        &self,
        out: &mut Vec<u8>,
        policy: &Policy,
        payload: &[u8],
        original: Original,
        bind: bool,
    ) -> Result<Header> {
        policy.validate()?;
        let len = u32::try_from(payload.len())
            .map_err(|_| ProtectError::Protect("payload is larger than 4 GiB".into()))?;
        let qop = policy.qop();
        let header = Header::new(qop, original, len);
        let core = header.bound(&policy.name);
        let core_ref = bind.then_some(&core[..]);
        match qop {
            Qop::None => {
                return Err(ProtectError::Protect(format!(
                    "policy {} has no SIGNALG or ENCALG: nothing to protect",
                    policy.name
                )));
            }
            Qop::Integrity => out.extend_from_slice(&self.sign(policy, payload, core_ref)?),
            Qop::Privacy => {
                let inner = self.sign(policy, payload, core_ref)?;
                let (ck, ri) = self.content_key(policy)?;
                enveloped::seal_into(out, &oids::ID_DATA, &inner, &ck, &ri, None, &self.counters)?;
            }
            Qop::Confidentiality => {
                let (ck, ri) = self.content_key(policy)?;
                let attrs = core_ref.map(binding_attrs);
                enveloped::seal_into(
                    out,
                    &oids::ID_DATA,
                    payload,
                    &ck,
                    &ri,
                    attrs.as_deref(),
                    &self.counters,
                )?;
            }
        }
        Ok(header)
    }

    /// Protects `payload` under `policy`: the sealmq header followed by the CMS object.
    /// A policy with no algorithms returns the payload unchanged.
    pub fn protect(&self, policy: &Policy, payload: &[u8], original: Original) -> Result<Vec<u8>> {
        if policy.qop() == Qop::None {
            policy.validate()?;
            return Ok(payload.to_vec());
        }
        if policy.envelope == Envelope::Ibm {
            return self.protect_ibm(policy, payload, &original);
        }
        let mut out = Vec::with_capacity(header::HEADER_LEN + payload.len() + 2048);
        out.resize(header::HEADER_LEN, 0);
        let header = self.protect_into(&mut out, policy, payload, original, true)?;
        let cms_len = u32::try_from(out.len() - header::HEADER_LEN)
            .map_err(|_| ProtectError::Protect("envelope too large".into()))?;
        out[..header::HEADER_LEN].copy_from_slice(&header.encode(cms_len));
        Ok(out)
    }

    /// Protects `payload` as a bare DER CMS object (no sealmq header), for other tools.
    pub fn protect_cms(&self, policy: &Policy, payload: &[u8]) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        self.protect_into(&mut out, policy, payload, Original::default(), false)?;
        Ok(out)
    }

    /// Unprotects a stored payload (sealmq header + CMS), making every check of SPEC §5.4;
    /// a message bound to another queue name than the policy's fails (header version 2).
    pub fn unprotect(&self, policy: &Policy, stored: &[u8]) -> Result<Unprotected> {
        self.unprotect_bound(policy, stored, Binds::Policy)
    }

    /// [`Protector::unprotect`] with the queue-name binding checked as `binds` says: against
    /// the policy's name, another name (the destination a channel names), or not at all (the
    /// transmission queue's policy at SPLPROT(REMOVE) sees messages for many queues).
    pub fn unprotect_bound(
        &self,
        policy: &Policy,
        stored: &[u8],
        binds: Binds<'_>,
    ) -> Result<Unprotected> {
        let required = policy.qop();
        if ibm::has_magic(stored) {
            return self.unprotect_ibm(policy, stored, binds);
        }
        if !header::has_magic(stored) {
            if required == Qop::None || policy.tolerate {
                return Ok(Unprotected {
                    payload: stored.to_vec(),
                    qop: Qop::None,
                    original: None,
                    signer: None,
                    tolerated: required != Qop::None,
                });
            }
            return Err(fail!(
                Check::Qop,
                "message is not protected but policy {} requires {} (ENFORCE)",
                policy.name,
                required
            ));
        }
        let (h, cms) = Header::decode(stored)?;
        self.open(policy, Some(h), cms, binds)
    }

    /// Unprotects a bare DER CMS object (no sealmq header).
    pub fn unprotect_cms(&self, policy: &Policy, cms: &[u8]) -> Result<Unprotected> {
        self.open(policy, None, cms, Binds::Policy)
    }

    fn open(
        &self,
        policy: &Policy,
        header: Option<Header>,
        cms: &[u8],
        binds: Binds<'_>,
    ) -> Result<Unprotected> {
        let ct = enveloped::content_type_of(cms)?;
        if let Some(h) = &header {
            header_fits(h, ct, policy)?;
        }
        let core = header.as_ref().map(|h| Binding {
            core: h.core().to_vec(),
            named: h.version >= 2,
            name: match binds {
                Binds::Name(n) => n.to_string(),
                _ => policy.name.clone(),
            },
            any_name: matches!(binds, Binds::AnyName),
        });
        let (payload, qop, signer) = if ct == oids::ID_SIGNED_DATA {
            if header.is_none() {
                at_least(Qop::Integrity, policy)?;
            }
            let (content, signer) = self.verify_signed(policy, cms, core.as_ref())?;
            (content, Qop::Integrity, Some(signer))
        } else {
            self.open_enveloped(policy, header.as_ref(), cms, core.as_ref())?
        };
        if let Some(h) = &header
            && payload.len() != h.payload_len as usize
        {
            return Err(fail!(
                Check::Length,
                "decrypted length {} differs from the header's {}",
                payload.len(),
                h.payload_len
            ));
        }
        Ok(Unprotected {
            payload,
            qop,
            original: header.map(|h| h.original()),
            signer,
            tolerated: false,
        })
    }

    /// An AuthEnvelopedData opened: its algorithm at least the policy's, its content key
    /// (reused when cached), the content decrypted; signed inside (PRIVACY) and verified, or
    /// bare (CONFIDENTIALITY) with its header binding checked in the authenticated
    /// attributes. The payload, the quality of protection found, and the signer.
    fn open_enveloped(
        &self,
        policy: &Policy,
        header: Option<&Header>,
        cms: &[u8],
        core: Option<&Binding>,
    ) -> Result<(Vec<u8>, Qop, Option<String>)> {
        let rec = enveloped::parse(cms)?;
        if rec.alg < policy.enc_alg {
            return Err(fail!(
                Check::Algorithms,
                "message is encrypted with {} but policy {} requires {}",
                rec.alg.name(),
                policy.name,
                policy.enc_alg.name()
            ));
        }
        let key = self.content_key_for(&rec)?;
        let plain = rec.decrypt(&key, &self.counters)?;
        let inner_signed = match header.map(|h| h.qop) {
            Some(q) => q == Qop::Privacy,
            None => {
                rec.content_type == oids::ID_SIGNED_DATA
                    || enveloped::content_type_of(&plain).is_ok_and(|c| c == oids::ID_SIGNED_DATA)
            }
        };
        if inner_signed {
            if rec.content_type != oids::ID_DATA && rec.content_type != oids::ID_SIGNED_DATA {
                return Err(fail!(
                    Check::Header,
                    "encrypted content type {} is not signed data",
                    oids::name(&rec.content_type)
                ));
            }
            let (content, signer) = self.verify_signed(policy, &plain, core)?;
            Ok((content, Qop::Privacy, Some(signer)))
        } else {
            if header.is_none() {
                at_least(Qop::Confidentiality, policy)?;
            }
            if let Some(b) = core {
                let value = rec
                    .auth_attrs
                    .as_deref()
                    .and_then(binding_value)
                    .unwrap_or_default();
                b.check(value)?;
            }
            Ok((plain, Qop::Confidentiality, None))
        }
    }

    fn content_key_for(&self, rec: &enveloped::Received<'_>) -> Result<Arc<ContentKey>> {
        let digest = sha256_32(rec.recipient_infos);
        let cached = |cache: &GetCache| cache.get(&digest).filter(|k| k.alg == rec.alg);
        if let Some(k) = cached(&self.get_cache) {
            self.counters.get_reuse(true);
            return Ok(k);
        }
        // Getters of one process that meet a new key together unwrap it once: the first takes
        // the key's stripe and unwraps, the others wait there and find it cached.
        let _stripe = lock(&self.unwrapping[digest[0] as usize % UNWRAP_STRIPES]);
        if let Some(k) = cached(&self.get_cache) {
            self.counters.get_reuse(true);
            return Ok(k);
        }
        self.counters.get_reuse(false);
        let ris = recipients::decode(rec.recipient_infos)?;
        let id = self.keystore.identity().ok_or_else(|| {
            fail!(
                Check::Recipient,
                "the keystore has no identity, so it cannot be a recipient"
            )
        })?;
        if is_insecure(id.key.kind()) && !self.opts.insecure_rsa1024 {
            return Err(fail!(
                Check::Algorithms,
                "the keystore identity has an {} key, which is insecure and refused (the insecure RSA-1024 switch is off)",
                id.key.kind().name()
            ));
        }
        let keys: Vec<_> = self.keystore.decrypt_keys().collect();
        let cek = recipients::unwrap(&ris, &keys, &self.counters)?;
        let key = Arc::new(ContentKey::new(rec.alg, &cek).ok_or_else(|| {
            fail!(
                Check::Decrypt,
                "unwrapped key has the wrong length for {}",
                rec.alg.name()
            )
        })?);
        self.get_cache.insert(digest, key.clone());
        Ok(key)
    }

    /// Verifies a SignedData and then the signer: trust, validity, use, revocation and the
    /// policy's SIGNER list. Checks the bound header core when `core` is given.
    fn verify_signed(
        &self,
        policy: &Policy,
        cms: &[u8],
        core: Option<&Binding>,
    ) -> Result<(Vec<u8>, String)> {
        let v = signed::verify(
            cms,
            &self.known,
            policy.sign_alg,
            self.opts.insecure_rsa1024,
            &self.counters,
        )?;
        self.validate_signer(&v.signer, cms)?;
        if !policy.signers.is_empty() && !policy.signers.contains(v.signer.subject()) {
            return Err(fail!(
                Check::SignerList,
                "signer '{}' is not an authorized signer of policy {}",
                v.signer.subject(),
                policy.name
            ));
        }
        if let Some(b) = core {
            b.check(v.header_core.as_deref().unwrap_or_default())?;
        }
        Ok((v.content, v.signer.subject().to_string()))
    }
}

impl Protector {
    /// Path validation of a signer, remembered for `cert_cache_ttl` (and never past the
    /// certificate's notAfter) so a stream from one sender pays it once.
    fn validate_signer(&self, signer: &Cert, cms: &[u8]) -> Result<()> {
        let key = sha256_32(signer.der());
        let now = SystemTime::now();
        let not_after = signer.validity_unix().1;
        let now_unix = now
            .duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        if let Ok(map) = self.validated.lock()
            && let Some(at) = map.get(&key)
            && at.elapsed() < self.opts.cert_cache_ttl
            && now_unix < not_after
        {
            return Ok(());
        }
        let mut intermediates: Vec<Cert> = embedded_certs(cms);
        if let Some(id) = self.keystore.identity() {
            intermediates.extend(id.chain.iter().cloned());
        }
        intermediates.retain(|c| c != signer);
        pathval::validate(
            signer,
            &intermediates,
            self.keystore.trusted(),
            self.keystore.crls(),
            now,
            Usage::Signer,
        )?;
        if let Ok(mut map) = self.validated.lock() {
            if map.len() > 4096 {
                map.clear();
            }
            map.insert(key, Instant::now());
        }
        Ok(())
    }
}

fn embedded_certs(cms: &[u8]) -> Vec<Cert> {
    use cms::cert::CertificateChoices;
    use cms::content_info::ContentInfo;
    use cms::signed_data::SignedData;
    let Ok(ci) = ContentInfo::from_der(cms) else {
        return Vec::new();
    };
    let Ok(sd) = ci.content.decode_as::<SignedData>() else {
        return Vec::new();
    };
    sd.certificates
        .iter()
        .flat_map(|s| s.0.iter())
        .filter_map(|c| match c {
            CertificateChoices::Certificate(c) => Cert::from_x509(c).ok(),
            _ => None,
        })
        .collect()
}

/// What an envelope shows without keys.
#[derive(Debug, Clone)]
pub struct Inspection {
    pub qop: Qop,
    pub header: Option<Header>,
    pub total_len: usize,
    pub cms_len: usize,
    /// Content encryption, e.g. AES256-GCM (encrypted messages).
    pub encryption: Option<String>,
    pub recipients: Vec<String>,
    /// Digest and signature algorithm (Integrity; Privacy hides them inside the encryption).
    pub digest: Option<String>,
    pub signature: Option<String>,
    pub signer: Option<String>,
    /// Length of the signed or encrypted content.
    pub content_len: usize,
}

/// Shows what an envelope holds, without keys. `bare` reads a bare CMS object.
pub fn inspect(bytes: &[u8], bare: bool) -> Result<Inspection> {
    let (header, cms) = if bare {
        (None, bytes)
    } else {
        let (h, c) = Header::decode(bytes)?;
        (Some(h), c)
    };
    let ct = enveloped::content_type_of(cms)?;
    let mut out = Inspection {
        qop: header.map(|h| h.qop).unwrap_or(Qop::None),
        header,
        total_len: bytes.len(),
        cms_len: cms.len(),
        encryption: None,
        recipients: Vec::new(),
        digest: None,
        signature: None,
        signer: None,
        content_len: 0,
    };
    if ct == oids::ID_SIGNED_DATA {
        let s = signed::summarize(cms)?;
        out.qop = Qop::Integrity;
        out.digest = Some(s.digest_name);
        out.signature = Some(s.signature_name);
        out.signer = s.signer_dn;
        out.content_len = s.content_len;
    } else {
        let rec = enveloped::parse(cms)?;
        let ris = recipients::decode(rec.recipient_infos)?;
        out.recipients = recipients::describe(&ris);
        out.encryption = Some(format!("{}-GCM", rec.alg.name()));
        if out.header.is_none() {
            out.qop = if rec.content_type == oids::ID_SIGNED_DATA {
                Qop::Privacy
            } else {
                Qop::Confidentiality
            };
        }
        out.content_len = cms.len();
    }
    let _ = EncAlg::None;
    Ok(out)
}

/// A header's quality of protection fits the CMS object's content type and satisfies the
/// policy's.
fn header_fits(h: &Header, ct: const_oid::ObjectIdentifier, policy: &Policy) -> Result<()> {
    let fits = match h.qop {
        Qop::Integrity => ct == oids::ID_SIGNED_DATA,
        _ => ct == oids::ID_AUTH_ENVELOPED_DATA || ct == oids::ID_ENVELOPED_DATA,
    };
    if !fits {
        return Err(fail!(
            Check::Header,
            "header says {} but the CMS object is {}",
            h.qop,
            oids::name(&ct)
        ));
    }
    at_least(h.qop, policy)
}

/// A message's quality of protection `q` satisfies the policy's.
fn at_least(q: Qop, policy: &Policy) -> Result<()> {
    let required = policy.qop();
    if q.satisfies(required) {
        return Ok(());
    }
    Err(fail!(
        Check::Qop,
        "message QoP {q} is weaker than policy {} ({required})",
        policy.name
    ))
}

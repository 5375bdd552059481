//! Keystores (SPEC §5.6): a directory with `keystore.toml` naming the identity (certificate and
//! private key), trusted CA certificates, known recipient certificates and CRLs.
//!
//! ```toml
//! version = 1
//! trusted = ["trusted/3f2a9c0e1b7d4e55.pem"]
//! recipients = ["recipients/a81b22c3d4e5f607.pem"]
//! crls = ["crls/0c1d2e3f40516273.pem"]
//!
//! [identity]
//! cert = "identity.pem"
//! key = "identity.key"
//! chain = []
//!
//! [[keys]]                       # version 2 only: further keys (see `more`)
//! cert = "keys/5be0c1d2e3f40516.pem"
//! key = "keys/5be0c1d2e3f40516.key"
//! retired = "2026-11-30T05:30:00Z"   # absent: in use
//! ```
//!
//! A keystore without further keys is written as version 1, so that older sealmq still reads
//! it; one with them as version 2. Both are read.
//!
//! Paths are relative to the keystore directory. Private key files must not be readable or
//! writable by others (sealmq refuses to load them) and are written with mode 0600.

use crate::cert::{Cert, pem_encode};
use crate::dn::Dn;
use crate::error::{ProtectError, Result};
use crate::identity::{self, IdentitySpec, Signer};
use crate::keys::{KeyKind, PrivateKey};
use crate::pathval::{self, Crls, Usage};
use aws_lc_rs::digest;
use rustls_pki_types::pem::{PemObject, SectionKind};
use serde::{Deserialize, Serialize};
use std::fs;
use std::path::{Path, PathBuf};
use std::time::SystemTime;
use zeroize::Zeroizing;

mod more;
pub use more::MoreKey;

pub const KEYSTORE_FILE: &str = "keystore.toml";
/// The version a keystore without further keys is written in.
const FORMAT_VERSION: u32 = 1;
/// The version with `[[keys]]`.
const FORMAT_VERSION_KEYS: u32 = 2;

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Manifest {
    version: u32,
    #[serde(default)]
    trusted: Vec<String>,
    #[serde(default)]
    recipients: Vec<String>,
    #[serde(default)]
    crls: Vec<String>,
    identity: Option<IdentityFiles>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    keys: Vec<more::KeyFiles>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct IdentityFiles {
    cert: String,
    key: String,
    #[serde(default)]
    chain: Vec<String>,
}

/// The keystore's own identity.
pub struct Identity {
    pub cert: Cert,
    pub key: PrivateKey,
    /// Intermediate CA certificates between the identity and a trusted CA.
    pub chain: Vec<Cert>,
}

/// A loaded keystore.
pub struct Keystore {
    dir: PathBuf,
    manifest: Manifest,
    identity: Option<Identity>,
    /// Keys besides the identity's (format version 2).
    more: Vec<MoreKey>,
    trusted: Vec<Cert>,
    recipients: Vec<Cert>,
    crl_ders: Vec<Vec<u8>>,
    crls: Crls,
}

fn io_err(path: &Path, what: &str, e: std::io::Error) -> ProtectError {
    ProtectError::keystore(path, format!("cannot {what}: {e}"))
}

fn fingerprint(der: &[u8]) -> String {
    digest::digest(&digest::SHA256, der).as_ref()[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Reads a private key file, refusing one others may read or write.
pub fn read_private_key_file(path: &Path) -> Result<Zeroizing<Vec<u8>>> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let meta = fs::metadata(path).map_err(|e| io_err(path, "read the private key", e))?;
        let mode = meta.permissions().mode();
        if mode & 0o006 != 0 {
            return Err(ProtectError::keystore(
                path,
                format!(
                    "private key file is accessible to other users (mode {:o}); refusing to load it. Run: chmod 600 {}",
                    mode & 0o777,
                    path.display()
                ),
            ));
        }
    }
    fs::read(path)
        .map(Zeroizing::new)
        .map_err(|e| io_err(path, "read the private key", e))
}

fn write_file(path: &Path, bytes: &[u8], private: bool) -> Result<()> {
    use std::io::Write;
    let mut opts = fs::OpenOptions::new();
    opts.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(if private { 0o600 } else { 0o644 });
    }
    let tmp = path.with_extension("tmp");
    let mut f = opts.open(&tmp).map_err(|e| io_err(&tmp, "write", e))?;
    f.write_all(bytes).map_err(|e| io_err(&tmp, "write", e))?;
    f.sync_all().map_err(|e| io_err(&tmp, "sync", e))?;
    drop(f);
    fs::rename(&tmp, path).map_err(|e| io_err(path, "replace", e))
}

fn load_certs(dir: &Path, files: &[String]) -> Result<Vec<Cert>> {
    let mut out = Vec::new();
    for f in files {
        let p = dir.join(f);
        let bytes = fs::read(&p).map_err(|e| io_err(&p, "read certificate", e))?;
        out.extend(
            Cert::all_from_pem_or_der(&bytes)
                .map_err(|e| ProtectError::keystore(&p, e.to_string()))?,
        );
    }
    Ok(out)
}

/// What `trust` added.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Added {
    pub trusted: Vec<String>,
    pub recipients: Vec<String>,
    pub crls: usize,
}

impl Keystore {
    /// Loads the keystore in `dir`.
    pub fn load(dir: &Path) -> Result<Keystore> {
        let mpath = dir.join(KEYSTORE_FILE);
        let text = fs::read_to_string(&mpath).map_err(|e| {
            io_err(
                &mpath,
                "read keystore.toml (create one with 'sealmq keystore init')",
                e,
            )
        })?;
        let manifest: Manifest = toml::from_str(&text)
            .map_err(|e| ProtectError::keystore(&mpath, format!("invalid keystore.toml: {e}")))?;
        if manifest.version != FORMAT_VERSION && manifest.version != FORMAT_VERSION_KEYS {
            return Err(ProtectError::keystore(
                &mpath,
                format!(
                    "keystore format version {} is not supported (expected {FORMAT_VERSION} or \
                     {FORMAT_VERSION_KEYS})",
                    manifest.version
                ),
            ));
        }
        let identity = match &manifest.identity {
            None => None,
            Some(files) => {
                let cpath = dir.join(&files.cert);
                let cbytes = fs::read(&cpath)
                    .map_err(|e| io_err(&cpath, "read the identity certificate", e))?;
                let cert = Cert::all_from_pem_or_der(&cbytes)
                    .map_err(|e| ProtectError::keystore(&cpath, e.to_string()))?
                    .remove(0);
                let kpath = dir.join(&files.key);
                let key = load_key(&kpath)?;
                if key.public_spki_der()? != cert.public_key().spki_der {
                    return Err(ProtectError::keystore(
                        &kpath,
                        format!(
                            "private key does not belong to the identity certificate '{}'",
                            cert.subject()
                        ),
                    ));
                }
                let chain = load_certs(dir, &files.chain)?;
                Some(Identity { cert, key, chain })
            }
        };
        let more = more::load(dir, &manifest.keys)?;
        let trusted = load_certs(dir, &manifest.trusted)?;
        let recipients = load_certs(dir, &manifest.recipients)?;
        let mut crl_ders = Vec::new();
        for f in &manifest.crls {
            let p = dir.join(f);
            let bytes = fs::read(&p).map_err(|e| io_err(&p, "read CRL", e))?;
            crl_ders
                .extend(parse_crls(&bytes).map_err(|e| ProtectError::keystore(&p, e.to_string()))?);
        }
        let crls = Crls::parse(&crl_ders)?;
        Ok(Keystore {
            dir: dir.to_path_buf(),
            manifest,
            identity,
            more,
            trusted,
            recipients,
            crl_ders,
            crls,
        })
    }

    /// An empty keystore in `dir` (not yet saved).
    fn empty(dir: &Path) -> Keystore {
        Keystore {
            dir: dir.to_path_buf(),
            manifest: Manifest {
                version: FORMAT_VERSION,
                ..Manifest::default()
            },
            identity: None,
            more: Vec::new(),
            trusted: Vec::new(),
            recipients: Vec::new(),
            crl_ders: Vec::new(),
            crls: Crls::none(),
        }
    }

    /// The keystore in `dir`, or a new empty one there (its directory made private) when
    /// there is none yet: `sealmq keystore import` into a directory that does not exist.
    pub fn load_or_create(dir: &Path) -> Result<Keystore> {
        if dir.join(KEYSTORE_FILE).exists() {
            return Keystore::load(dir);
        }
        fs::create_dir_all(dir).map_err(|e| io_err(dir, "create the keystore directory", e))?;
        {
            use std::os::unix::fs::PermissionsExt;
            fs::set_permissions(dir, fs::Permissions::from_mode(0o700))
                .map_err(|e| io_err(dir, "make the keystore directory private", e))?;
        }
        Ok(Keystore::empty(dir))
    }

    /// Creates a keystore in `dir` with a new identity: self-signed (and then trusted by
    /// itself), or signed by the identity of the CA keystore `ca` (whose certificate is then
    /// trusted).
    pub fn init(dir: &Path, spec: &IdentitySpec, ca: Option<&Path>) -> Result<Keystore> {
        if dir.join(KEYSTORE_FILE).exists() {
            return Err(ProtectError::keystore(
                dir,
                "a keystore already exists here; use 'sealmq keystore import' to replace its identity",
            ));
        }
        fs::create_dir_all(dir).map_err(|e| io_err(dir, "create the keystore directory", e))?;
        let (made, ca_cert) = match ca {
            None => (identity::make_identity(spec, None)?, None),
            Some(ca_dir) => {
                let (ca_cert, der) = load_ca(ca_dir)?;
                let made = identity::make_identity(
                    spec,
                    Some(&Signer {
                        cert: &ca_cert,
                        pkcs8: &der,
                    }),
                )?;
                (made, Some(ca_cert))
            }
        };
        let mut ks = Keystore::empty(dir);
        ks.set_identity(made.cert.clone(), &made.pkcs8, Vec::new())?;
        match ca_cert {
            Some(c) => {
                ks.add_cert(&c)?;
            }
            None => {
                ks.add_cert(&made.cert)?;
            }
        }
        ks.save()?;
        Keystore::load(dir)
    }

    /// Replaces the identity with a certificate and private key (PEM or DER; PKCS#8, PKCS#1
    /// or SEC1), checking they belong together. Extra certificates in the file become the chain.
    pub fn import(&mut self, cert_bytes: &[u8], key_bytes: &[u8]) -> Result<()> {
        let mut certs = Cert::all_from_pem_or_der(cert_bytes)?;
        let key = if key_bytes.first() == Some(&0x30) {
            PrivateKey::from_pkcs8(key_bytes)?
        } else {
            PrivateKey::from_pem(key_bytes)?
        };
        let spki = key.public_spki_der()?;
        let pos = certs
            .iter()
            .position(|c| c.public_key().spki_der == spki)
            .ok_or_else(|| {
                ProtectError::Credential(
                    "the private key does not belong to any certificate given".into(),
                )
            })?;
        let cert = certs.remove(pos);
        let pkcs8 = pkcs8_from_key_bytes(key_bytes)?;
        // The identity replaced is kept, retired: what is queued under it stays readable.
        if self.identity.as_ref().is_some_and(|id| id.cert != cert) {
            self.retire_identity()?;
        }
        self.set_identity(cert, &pkcs8, certs)?;
        self.save()
    }

    /// Replaces the identity from a PKCS#12 file.
    pub fn import_pkcs12(&mut self, p12: &[u8], password: &str) -> Result<()> {
        let archive = p12_keystore::Pkcs12Archive::from_pkcs12(p12, password).map_err(|e| {
            ProtectError::Credential(format!(
                "cannot read the PKCS#12 file (wrong password?): {e}"
            ))
        })?;
        let bag = archive.keys.first().ok_or_else(|| {
            ProtectError::Credential("the PKCS#12 file holds no private key".into())
        })?;
        let pkcs8 = Zeroizing::new(bag.key.as_der().to_vec());
        let mut pem = String::new();
        for c in &archive.certs {
            pem.push_str(&pem_encode("CERTIFICATE", c.cert.as_der()));
        }
        if pem.is_empty() {
            return Err(ProtectError::Credential(
                "the PKCS#12 file holds no certificate".into(),
            ));
        }
        self.import(pem.as_bytes(), &pkcs8)
    }

    fn set_identity(&mut self, cert: Cert, pkcs8: &[u8], chain: Vec<Cert>) -> Result<()> {
        let key = PrivateKey::from_pkcs8(pkcs8)?;
        let key_pem = Zeroizing::new(pem_encode("PRIVATE KEY", pkcs8));
        write_file(&self.dir.join("identity.key"), key_pem.as_bytes(), true)?;
        write_file(
            &self.dir.join("identity.pem"),
            cert.to_pem().as_bytes(),
            false,
        )?;
        let mut chain_files = Vec::new();
        for c in &chain {
            let name = format!("chain-{}.pem", fingerprint(c.der()));
            write_file(&self.dir.join(&name), c.to_pem().as_bytes(), false)?;
            chain_files.push(name);
        }
        self.manifest.identity = Some(IdentityFiles {
            cert: "identity.pem".into(),
            key: "identity.key".into(),
            chain: chain_files,
        });
        self.identity = Some(Identity { cert, key, chain });
        Ok(())
    }

    /// Adds a certificate: a CA certificate is trusted; an end-entity certificate becomes a
    /// known recipient, and is also trusted when self-signed.
    fn add_cert(&mut self, cert: &Cert) -> Result<Added> {
        let mut added = Added::default();
        let name = format!("{}.pem", fingerprint(cert.der()));
        let as_trusted = cert.is_ca() || cert.is_self_issued();
        let as_recipient = !cert.is_ca();
        if as_trusted && !self.trusted.contains(cert) {
            fs::create_dir_all(self.dir.join("trusted"))
                .map_err(|e| io_err(&self.dir, "create trusted/", e))?;
            let rel = format!("trusted/{name}");
            write_file(&self.dir.join(&rel), cert.to_pem().as_bytes(), false)?;
            self.manifest.trusted.push(rel);
            self.trusted.push(cert.clone());
            added.trusted.push(cert.subject().to_string());
        }
        if as_recipient && !self.recipients.contains(cert) {
            fs::create_dir_all(self.dir.join("recipients"))
                .map_err(|e| io_err(&self.dir, "create recipients/", e))?;
            let rel = format!("recipients/{name}");
            write_file(&self.dir.join(&rel), cert.to_pem().as_bytes(), false)?;
            self.manifest.recipients.push(rel);
            self.recipients.push(cert.clone());
            added.recipients.push(cert.subject().to_string());
        }
        Ok(added)
    }

    /// `sealmq keystore trust DIR FILE`: adds the certificates and CRLs in a PEM/DER file.
    pub fn trust(&mut self, bytes: &[u8]) -> Result<Added> {
        let mut added = Added::default();
        let crls = parse_crls(bytes).unwrap_or_default();
        let certs = Cert::all_from_pem_or_der(bytes).unwrap_or_default();
        if crls.is_empty() && certs.is_empty() {
            return Err(ProtectError::Credential(
                "the file holds no certificate or CRL (expected PEM 'CERTIFICATE' / 'X509 CRL', or DER)".into(),
            ));
        }
        for cert in &certs {
            let a = self.add_cert(cert)?;
            added.trusted.extend(a.trusted);
            added.recipients.extend(a.recipients);
        }
        for der in crls {
            Crls::parse(std::slice::from_ref(&der))?;
            fs::create_dir_all(self.dir.join("crls"))
                .map_err(|e| io_err(&self.dir, "create crls/", e))?;
            let rel = format!("crls/{}.pem", fingerprint(&der));
            if !self.manifest.crls.contains(&rel) {
                write_file(
                    &self.dir.join(&rel),
                    pem_encode("X509 CRL", &der).as_bytes(),
                    false,
                )?;
                self.manifest.crls.push(rel);
                self.crl_ders.push(der);
                added.crls += 1;
            }
        }
        self.crls = Crls::parse(&self.crl_ders)?;
        self.save()?;
        Ok(added)
    }

    fn save(&self) -> Result<()> {
        let mut manifest = self.manifest.clone();
        manifest.version = if manifest.keys.is_empty() {
            FORMAT_VERSION
        } else {
            FORMAT_VERSION_KEYS
        };
        let text = toml::to_string(&manifest).map_err(|e| {
            ProtectError::keystore(&self.dir, format!("cannot encode keystore.toml: {e}"))
        })?;
        let body = format!("# sealmq keystore (format documented in docs/keystore.md)\n{text}");
        write_file(&self.dir.join(KEYSTORE_FILE), body.as_bytes(), false)
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn identity(&self) -> Option<&Identity> {
        self.identity.as_ref()
    }

    /// The identity's private key as PKCS#8 DER, read from its file.
    fn identity_pkcs8(&self) -> Result<Zeroizing<Vec<u8>>> {
        let files = self.manifest.identity.as_ref().ok_or_else(|| {
            ProtectError::keystore(&self.dir, "the keystore has no identity to sign with")
        })?;
        pkcs8_of(&self.dir.join(&files.key))
    }

    /// The identity, or an error saying the keystore has none.
    pub fn require_identity(&self) -> Result<&Identity> {
        self.identity.as_ref().ok_or_else(|| {
            ProtectError::keystore(
                &self.dir,
                "the keystore has no identity (run 'sealmq keystore init' or 'import')",
            )
        })
    }

    pub fn trusted(&self) -> &[Cert] {
        &self.trusted
    }

    pub fn recipients(&self) -> &[Cert] {
        &self.recipients
    }

    pub fn crls(&self) -> &Crls {
        &self.crls
    }

    pub fn crl_count(&self) -> usize {
        self.crl_ders.len()
    }

    /// Every certificate the keystore knows (identity, chain, recipients, trusted).
    pub fn known_certs(&self) -> Vec<Cert> {
        let mut v: Vec<Cert> = Vec::new();
        if let Some(id) = &self.identity {
            v.push(id.cert.clone());
            v.extend(id.chain.iter().cloned());
        }
        v.extend(self.recipients.iter().cloned());
        v.extend(self.trusted.iter().cloned());
        v
    }

    /// The certificates to encrypt to for `dn`: of the known recipients (and the own identity)
    /// whose subject equals `dn` and that are valid now and trusted, the newest with a classical
    /// key and the newest with an ML-KEM key. Both while a reader migrates to ML-KEM (hybrid: the
    /// message can be read with either key); drop the classical certificate to end it.
    pub fn find_recipients(&self, dn: &Dn, now: SystemTime) -> Result<Vec<Cert>> {
        let pq = |c: &Cert| matches!(c.public_key().kind, KeyKind::MlKem(_));
        let mut found = Vec::new();
        let mut last_err = None;
        for family in [false, true] {
            match self.find_recipient(dn, now, |c| pq(c) == family) {
                Ok(Some(c)) => found.push(c),
                Ok(None) => {}
                Err(e) => last_err = Some(e),
            }
        }
        match (found.is_empty(), last_err) {
            (false, _) => Ok(found),
            (true, Some(e)) => Err(e),
            (true, None) => Err(ProtectError::Protect(format!(
                "no certificate for recipient '{dn}' in keystore {} (add it with 'sealmq keystore trust')",
                self.dir.display()
            ))),
        }
    }

    /// The newest valid, trusted certificate for `dn` among those `family` takes; `None`
    /// when there is none of the family.
    fn find_recipient(
        &self,
        dn: &Dn,
        now: SystemTime,
        family: impl Fn(&Cert) -> bool,
    ) -> Result<Option<Cert>> {
        let mut candidates: Vec<&Cert> = self
            .recipients
            .iter()
            .filter(|c| c.subject() == dn && family(c))
            .collect();
        if let Some(id) = &self.identity
            && id.cert.subject() == dn
            && family(&id.cert)
        {
            candidates.push(&id.cert);
        }
        // The keystore's own added keys (never its retired ones).
        candidates.extend(
            self.more
                .iter()
                .filter(|k| k.retired.is_none() && k.cert.subject() == dn && family(&k.cert))
                .map(|k| &k.cert),
        );
        if candidates.is_empty() {
            return Ok(None);
        }
        candidates.sort_by_key(|c| std::cmp::Reverse(c.validity_unix().1));
        let mut last_err = None;
        for c in candidates {
            let chain = self
                .identity
                .as_ref()
                .map(|i| i.chain.clone())
                .unwrap_or_default();
            match pathval::validate(c, &chain, &self.trusted, &self.crls, now, Usage::Recipient) {
                Ok(()) => return Ok(Some(c.clone())),
                Err(e) => last_err = Some(e),
            }
        }
        Err(ProtectError::Protect(format!(
            "recipient '{dn}' has no usable certificate: {}",
            last_err.map(|e| e.to_string()).unwrap_or_default()
        )))
    }
}

/// Every CRL in a PEM file (or one DER CRL).
pub fn parse_crls(bytes: &[u8]) -> Result<Vec<Vec<u8>>> {
    if bytes.first() == Some(&0x30) {
        return match Crls::parse(&[bytes.to_vec()]) {
            Ok(_) => Ok(vec![bytes.to_vec()]),
            Err(_) => Ok(Vec::new()),
        };
    }
    let mut out = Vec::new();
    for item in <(SectionKind, Vec<u8>)>::pem_slice_iter(bytes) {
        let (kind, der) = item.map_err(|e| ProtectError::Credential(format!("bad PEM: {e}")))?;
        if kind == SectionKind::Crl {
            out.push(der);
        }
    }
    Ok(out)
}

fn pkcs8_from_key_bytes(key_bytes: &[u8]) -> Result<Zeroizing<Vec<u8>>> {
    if key_bytes.first() == Some(&0x30) {
        return Ok(Zeroizing::new(key_bytes.to_vec()));
    }
    let (kind, der) = <(SectionKind, Vec<u8>)>::from_pem_slice(key_bytes)
        .map_err(|e| ProtectError::Credential(format!("no PEM private key found: {e}")))?;
    let der = Zeroizing::new(der);
    match kind {
        SectionKind::PrivateKey => Ok(der),
        _ => {
            // Convert PKCS#1 / SEC1 to PKCS#8 through aws-lc.
            let key = PrivateKey::from_pem(key_bytes)?;
            key_to_pkcs8(&key)
        }
    }
}

fn key_to_pkcs8(key: &PrivateKey) -> Result<Zeroizing<Vec<u8>>> {
    use aws_lc_rs::encoding::{AsDer, Pkcs8V1Der};
    let err = |_| ProtectError::Credential("cannot re-encode the private key as PKCS#8".into());
    Ok(match key {
        PrivateKey::Rsa { sign, .. } => {
            let d: Pkcs8V1Der = sign.as_der().map_err(err)?;
            Zeroizing::new(d.as_ref().to_vec())
        }
        PrivateKey::Ec { sign, .. } => {
            Zeroizing::new(sign.to_pkcs8v1().map_err(err)?.as_ref().to_vec())
        }
        PrivateKey::Ed25519(kp) => Zeroizing::new(kp.to_pkcs8v1().map_err(err)?.as_ref().to_vec()),
        PrivateKey::LegacyRsa(k) => k.to_pkcs8()?,
        PrivateKey::MlKem(k) => k.to_pkcs8()?,
        PrivateKey::MlDsa { sign, .. } => {
            Zeroizing::new(sign.to_pkcs8v1().map_err(err)?.as_ref().to_vec())
        }
    })
}

/// The CA keystore at `ca_dir`: its certificate and PKCS#8 key, refused when not a CA.
fn load_ca(ca_dir: &Path) -> Result<(Cert, Zeroizing<Vec<u8>>)> {
    let ca_ks = Keystore::load(ca_dir)?;
    let ca_id = ca_ks.require_identity()?;
    if !ca_id.cert.is_ca() {
        return Err(ProtectError::keystore(
            ca_dir,
            format!(
                "'{}' is not a CA certificate; create the CA with 'sealmq keystore init --authority'",
                ca_id.cert.subject()
            ),
        ));
    }
    Ok((ca_id.cert.clone(), ca_ks.identity_pkcs8()?))
}

/// A private key file (PEM or DER PKCS#8, PKCS#1, SEC1), refused if others may read it.
fn load_key(path: &Path) -> Result<PrivateKey> {
    let bytes = read_private_key_file(path)?;
    if bytes.first() == Some(&0x30) {
        PrivateKey::from_pkcs8(&bytes)
    } else {
        PrivateKey::from_pem(&bytes)
    }
    .map_err(|e| ProtectError::keystore(path, e.to_string()))
}

fn pkcs8_of(path: &Path) -> Result<Zeroizing<Vec<u8>>> {
    let bytes = read_private_key_file(path)?;
    pkcs8_from_key_bytes(&bytes)
}

/// Writes a CRL revoking `revoked` signed by the CA keystore in `ca_dir`; returns PEM.
pub fn make_crl_pem(ca_dir: &Path, revoked: &[&Cert], number: u64, days: u32) -> Result<String> {
    let ca = Keystore::load(ca_dir)?;
    let files = ca
        .manifest
        .identity
        .as_ref()
        .ok_or_else(|| ProtectError::keystore(ca_dir, "no identity"))?;
    let id = ca.require_identity()?;
    let pkcs8 = pkcs8_of(&ca_dir.join(&files.key))?;
    let der = identity::make_crl(
        &Signer {
            cert: &id.cert,
            pkcs8: &pkcs8,
        },
        revoked,
        number,
        days,
    )?;
    Ok(pem_encode("X509 CRL", &der))
}

//! More private keys than the identity's (keystore format version 2): keys the keystore
//! decrypts with besides its identity's.
//!
//! - An **added key**, under the identity's DN: an ML-KEM key beside a signing identity
//!   (`sealmq keystore add-key`), so that one keystore both signs and reads post-quantum.
//! - A **retired key**: an identity replaced by `import`, or a key retired by `sealmq keystore
//!   retire`, with the time it was retired. It is never encrypted to again, but still opens what
//!   is queued under it until that is re-protected (`sealmq reprotect`).

use super::{Keystore, fingerprint, io_err, write_file};
use crate::cert::{Cert, pem_encode};
use crate::error::{ProtectError, Result};
use crate::identity::{self, IdentitySpec, Signer};
use crate::keys::{KeyKind, PrivateKey};
use serde::{Deserialize, Serialize};
use std::fs;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// A further key's files in `keystore.toml` (`[[keys]]`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct KeyFiles {
    cert: String,
    key: String,
    /// When it was retired (RFC 3339, UTC); absent: in use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    retired: Option<String>,
}

/// A further private key with its certificate.
pub struct MoreKey {
    pub cert: Cert,
    pub key: PrivateKey,
    /// When it was retired (RFC 3339, UTC); `None`: in use.
    pub retired: Option<String>,
}

/// Loads the keys `files` names.
pub(super) fn load(dir: &Path, files: &[KeyFiles]) -> Result<Vec<MoreKey>> {
    let mut out = Vec::with_capacity(files.len());
    for f in files {
        let cpath = dir.join(&f.cert);
        let bytes = fs::read(&cpath).map_err(|e| io_err(&cpath, "read a key's certificate", e))?;
        let cert = Cert::all_from_pem_or_der(&bytes)
            .map_err(|e| ProtectError::keystore(&cpath, e.to_string()))?
            .remove(0);
        let kpath = dir.join(&f.key);
        let key = super::load_key(&kpath)?;
        if key.public_spki_der()? != cert.public_key().spki_der {
            return Err(ProtectError::keystore(
                &kpath,
                format!("private key does not belong to '{}'", cert.subject()),
            ));
        }
        out.push(MoreKey {
            cert,
            key,
            retired: f.retired.clone(),
        });
    }
    Ok(out)
}

/// Now as RFC 3339 UTC, to the second.
fn now_rfc3339() -> String {
    let secs = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    match time::OffsetDateTime::from_unix_timestamp(secs) {
        Ok(t) => format!(
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
            t.year(),
            u8::from(t.month()),
            t.day(),
            t.hour(),
            t.minute(),
            t.second()
        ),
        Err(_) => "unknown".into(),
    }
}

impl Keystore {
    /// The keys besides the identity's: added ones first, then retired ones.
    pub fn more_keys(&self) -> &[MoreKey] {
        &self.more
    }

    /// Every certificate and key this keystore decrypts with: the identity's, then the added
    /// keys, then the retired ones.
    pub fn decrypt_keys(&self) -> impl Iterator<Item = (&Cert, &PrivateKey)> {
        let added = self.more.iter().filter(|k| k.retired.is_none());
        let retired = self.more.iter().filter(|k| k.retired.is_some());
        self.identity
            .iter()
            .map(|i| (&i.cert, &i.key))
            .chain(added.chain(retired).map(|k| (&k.cert, &k.key)))
    }

    /// `sealmq keystore add-key`: a further key of `kind` under the identity's DN, issued by the
    /// CA keystore `ca` (a key that cannot sign cannot issue its own certificate). Returns its
    /// certificate and the certificate's file (for the keystores that encrypt to it).
    pub fn add_key(&mut self, kind: KeyKind, days: u32, ca: &Path) -> Result<(Cert, PathBuf)> {
        let dn = self.require_identity()?.cert.subject().clone();
        let spec = IdentitySpec::new(dn, kind, days);
        let (ca_cert, ca_pkcs8) = super::load_ca(ca)?;
        let made = identity::make_identity(
            &spec,
            Some(&Signer {
                cert: &ca_cert,
                pkcs8: &ca_pkcs8,
            }),
        )?;
        self.add_cert(&ca_cert)?;
        let file = self.push_key(made.cert.clone(), &made.pkcs8, None)?;
        self.save()?;
        Ok((made.cert, file))
    }

    /// Keeps `cert` and its key as a further key (`retired`: when it was retired).
    pub(super) fn push_key(
        &mut self,
        cert: Cert,
        pkcs8: &[u8],
        retired: Option<String>,
    ) -> Result<PathBuf> {
        let key = PrivateKey::from_pkcs8(pkcs8)?;
        fs::create_dir_all(self.dir.join("keys"))
            .map_err(|e| io_err(&self.dir, "create keys/", e))?;
        let name = fingerprint(cert.der());
        let (c, k) = (format!("keys/{name}.pem"), format!("keys/{name}.key"));
        let key_pem = zeroize::Zeroizing::new(pem_encode("PRIVATE KEY", pkcs8));
        write_file(&self.dir.join(&k), key_pem.as_bytes(), true)?;
        write_file(&self.dir.join(&c), cert.to_pem().as_bytes(), false)?;
        self.manifest.keys.retain(|f| f.cert != c);
        self.more.retain(|m| m.cert != cert);
        self.manifest.keys.push(KeyFiles {
            cert: c.clone(),
            key: k,
            retired: retired.clone(),
        });
        self.more.push(MoreKey { cert, key, retired });
        Ok(self.dir.join(c))
    }

    /// Keeps the current identity as a retired key (before `import` replaces it).
    pub(super) fn retire_identity(&mut self) -> Result<()> {
        let Some(files) = self.manifest.identity.clone() else {
            return Ok(());
        };
        let Some(id) = &self.identity else {
            return Ok(());
        };
        let cert = id.cert.clone();
        let pkcs8 = super::pkcs8_of(&self.dir.join(&files.key))?;
        self.push_key(cert, &pkcs8, Some(now_rfc3339())).map(drop)
    }

    /// `sealmq keystore retire DIR SERIAL`: marks the added key whose certificate has serial
    /// number `serial` (hex) retired now: it is no longer encrypted to, and still decrypts.
    pub fn retire(&mut self, serial: &str) -> Result<()> {
        let want = serial.to_ascii_uppercase();
        let at = self
            .more
            .iter()
            .position(|k| k.retired.is_none() && k.cert.serial_hex() == want)
            .ok_or_else(|| {
                ProtectError::keystore(
                    &self.dir,
                    format!("no key in use with serial {want} (see 'sealmq keystore list')"),
                )
            })?;
        let when = now_rfc3339();
        let name = fingerprint(self.more[at].cert.der());
        if let Some(f) = self
            .manifest
            .keys
            .iter_mut()
            .find(|f| f.cert == format!("keys/{name}.pem"))
        {
            f.retired = Some(when.clone());
        }
        self.more[at].retired = Some(when);
        self.save()
    }
}

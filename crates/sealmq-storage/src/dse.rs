//! Encryption at rest (SPEC §7, docs/storage.md "Encryption at rest").
//!
//! A master key — 32 bytes from a key file (hex, owner-only permissions), from an environment
//! variable (hex, for containers), or derived from a passphrase with PBKDF2-HMAC-SHA256 — wraps
//! data keys kept in the keyring file `dse.keyring` of the queue manager's directory. Each
//! start, and each new log segment, adds a fresh data key that seals what is written next
//! (AES-256-GCM, a random 96-bit nonce per record, the record's position as associated data);
//! records sealed earlier keep the key named in their header until their segment or checkpoint
//! is released, so data is re-keyed as the log rolls. Rotating the master key rewraps the data keys only (the keyring
//! is replaced atomically), so it needs no downtime.
//!
//! Key material lives in aws-lc AEAD contexts, which aws-lc cleanses when they are dropped; raw
//! key bytes are held only in `Zeroizing` buffers while keys are made, derived or unwrapped.

#![allow(unsafe_code)]

use crate::error::{Result, StorageError};
use aws_lc_rs::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use sealmq_types::sync::{lock, read, write};
use std::collections::BTreeMap;
use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use zeroize::Zeroizing;

/// Keyring file name in the queue manager's directory.
pub const KEYRING: &str = "dse.keyring";
/// Where the master key comes from (`file:PATH`, `env:VAR`, `passphrase-env:VAR`; never the
/// key itself), in the queue manager's directory.
pub const SOURCE_FILE: &str = "dse.source";
const MAGIC: &[u8; 4] = b"SMQK";
/// Version 2 (issue 29) adds when the master key last wrapped the ring and when each data key
/// was made; version 1 is still read (those times taken from the file's modification time)
/// and rewritten as version 2 at its next change.
const VERSION: u16 = 2;
/// PBKDF2 iterations for a passphrase.
pub const PBKDF2_ITERATIONS: u32 = 310_000;
const CHECK: &[u8] = b"sealmq encryption at rest: master key check";
/// Sealed bytes = nonce + ciphertext + tag.
pub const OVERHEAD: usize = NONCE_LEN + 16;

fn key_err(m: impl Into<String>) -> StorageError {
    StorageError::Key(m.into())
}

/// Where the master key comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MasterSource {
    /// A file holding 64 hex digits, readable by its owner only.
    File(PathBuf),
    /// An environment variable holding 64 hex digits.
    Env(String),
    /// An environment variable holding a passphrase (PBKDF2 with the keyring's salt).
    Passphrase(String),
}

impl MasterSource {
    /// `file:PATH`, `env:VAR` or `passphrase-env:VAR`.
    pub fn parse(s: &str) -> Result<MasterSource> {
        match s.split_once(':') {
            Some(("file", p)) if !p.is_empty() => Ok(MasterSource::File(p.into())),
            Some(("env", v)) if !v.is_empty() => Ok(MasterSource::Env(v.into())),
            Some(("passphrase-env", v)) if !v.is_empty() => Ok(MasterSource::Passphrase(v.into())),
            _ => Err(key_err(format!(
                "master key source '{s}': use file:PATH, env:VAR or passphrase-env:VAR"
            ))),
        }
    }
}

impl std::fmt::Display for MasterSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MasterSource::File(p) => write!(f, "file:{}", p.display()),
            MasterSource::Env(v) => write!(f, "env:{v}"),
            MasterSource::Passphrase(v) => write!(f, "passphrase-env:{v}"),
        }
    }
}

fn hex32(text: &str, what: &str) -> Result<Zeroizing<[u8; 32]>> {
    let t = text.trim();
    let mut out = Zeroizing::new([0u8; 32]);
    if t.len() != 64 {
        return Err(key_err(format!(
            "{what} must be 64 hex digits (32 bytes); it has {} characters",
            t.len()
        )));
    }
    for (i, b) in out.iter_mut().enumerate() {
        *b = u8::from_str_radix(&t[2 * i..2 * i + 2], 16)
            .map_err(|_| key_err(format!("{what} is not hexadecimal")))?;
    }
    Ok(out)
}

/// A new random master key as 64 hex digits (for `--dse-new-key-file`).
pub fn new_master_hex() -> Result<Zeroizing<String>> {
    let mut k = Zeroizing::new([0u8; 32]);
    aws_lc_rs::rand::fill(&mut k[..]).map_err(|_| key_err("no randomness for a key"))?;
    Ok(Zeroizing::new(
        k.iter().map(|b| format!("{b:02x}")).collect::<String>(),
    ))
}

fn aead(key: &[u8]) -> Result<LessSafeKey> {
    Ok(LessSafeKey::new(
        UnboundKey::new(&AES_256_GCM, key).map_err(|_| key_err("bad AES-256 key"))?,
    ))
}

fn seal_with(key: &LessSafeKey, aad: &[u8], plain: &[u8]) -> Result<Vec<u8>> {
    let mut nonce = [0u8; NONCE_LEN];
    aws_lc_rs::rand::fill(&mut nonce).map_err(|_| key_err("no randomness for a nonce"))?;
    let mut out = Vec::with_capacity(plain.len() + OVERHEAD);
    out.extend_from_slice(&nonce);
    out.extend_from_slice(plain);
    let tag = key
        .seal_in_place_separate_tag(
            Nonce::assume_unique_for_key(nonce),
            Aad::from(aad),
            &mut out[NONCE_LEN..],
        )
        .map_err(|_| key_err("encryption failed"))?;
    out.extend_from_slice(tag.as_ref());
    Ok(out)
}

fn open_with(key: &LessSafeKey, aad: &[u8], sealed: &[u8]) -> Option<Vec<u8>> {
    if sealed.len() < OVERHEAD {
        return None;
    }
    let nonce = Nonce::try_assume_unique_for_key(&sealed[..NONCE_LEN]).ok()?;
    let mut buf = sealed[NONCE_LEN..].to_vec();
    let n = key
        .open_in_place(nonce, Aad::from(aad), &mut buf)
        .ok()?
        .len();
    buf.truncate(n);
    Some(buf)
}

/// The master key in use.
pub struct Master {
    key: LessSafeKey,
}

impl Master {
    /// Reads the master key from `src`; `salt` is the keyring's (for a passphrase).
    pub fn load(src: &MasterSource, salt: &[u8]) -> Result<Master> {
        let raw = match src {
            MasterSource::File(p) => {
                #[cfg(unix)]
                {
                    use std::os::unix::fs::MetadataExt;
                    let m = std::fs::metadata(p).map_err(|e| {
                        key_err(format!("cannot read master key file {}: {e}", p.display()))
                    })?;
                    if m.mode() & 0o077 != 0 {
                        return Err(key_err(format!(
                            "master key file {} is readable by others (mode {:o}); chmod 600 it",
                            p.display(),
                            m.mode() & 0o777
                        )));
                    }
                }
                let text = Zeroizing::new(std::fs::read_to_string(p).map_err(|e| {
                    key_err(format!("cannot read master key file {}: {e}", p.display()))
                })?);
                hex32(&text, &format!("master key file {}", p.display()))?
            }
            MasterSource::Env(v) => {
                let text = Zeroizing::new(
                    std::env::var(v)
                        .map_err(|_| key_err(format!("the master key variable {v} is not set")))?,
                );
                hex32(&text, &format!("master key variable {v}"))?
            }
            MasterSource::Passphrase(v) => {
                let pass = Zeroizing::new(
                    std::env::var(v)
                        .map_err(|_| key_err(format!("the passphrase variable {v} is not set")))?,
                );
                if pass.is_empty() {
                    return Err(key_err(format!("the passphrase variable {v} is empty")));
                }
                let mut out = Zeroizing::new([0u8; 32]);
                aws_lc_rs::pbkdf2::derive(
                    aws_lc_rs::pbkdf2::PBKDF2_HMAC_SHA256,
                    NonZeroU32::new(PBKDF2_ITERATIONS).unwrap_or(NonZeroU32::MIN),
                    salt,
                    pass.as_bytes(),
                    &mut out[..],
                );
                out
            }
        };
        Ok(Master {
            key: aead(&raw[..])?,
        })
    }
}

/// The data keys of a queue manager, unwrapped, and the one new writes use.
pub struct Dse {
    dir: PathBuf,
    /// Kept to wrap the data keys made while the queue manager runs ([`Dse::roll`]).
    master: Mutex<Master>,
    keys: RwLock<BTreeMap<u32, Arc<LessSafeKey>>>,
    current: AtomicU32,
    /// When the current data key was made, and when the master key last wrapped the ring
    /// (UNIX seconds): the key ages the metrics show.
    current_made: AtomicU64,
    master_since: AtomicU64,
}

/// Seconds since the UNIX epoch now.
fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

impl std::fmt::Debug for Dse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Dse {{ current: {} }}", self.current())
    }
}

/// A data key as the keyring holds it: its id, when it was made (UNIX seconds), and its bytes
/// wrapped under the master key.
struct Entry {
    id: u32,
    made: u64,
    wrapped: Vec<u8>,
}

/// The keyring file: magic, version, salt, when the master key last wrapped it, a check value
/// sealed under the master key, and the wrapped data keys.
struct Keyring {
    salt: [u8; 16],
    master_since: u64,
    check: Vec<u8>,
    entries: Vec<Entry>,
}

fn id_aad(id: u32) -> [u8; 8] {
    let mut a = [0u8; 8];
    a[..4].copy_from_slice(b"DEK:");
    a[4..].copy_from_slice(&id.to_le_bytes());
    a
}

impl Keyring {
    fn read(path: &Path) -> Result<Keyring> {
        let b =
            std::fs::read(path).map_err(|e| StorageError::io("cannot read keyring", path, e))?;
        let bad = |d: &str| StorageError::Corrupt {
            path: path.to_path_buf(),
            offset: 0,
            detail: format!("keyring: {d}"),
        };
        if b.len() < 26 || &b[..4] != MAGIC {
            return Err(bad("not a sealmq keyring"));
        }
        let version = u16::from_le_bytes([b[4], b[5]]);
        if version != 1 && version != VERSION {
            return Err(bad("a keyring version this build does not read"));
        }
        let mut salt = [0u8; 16];
        salt.copy_from_slice(&b[6..22]);
        let mut d = crate::codec::Dec::new(&b[22..], "keyring");
        // Version 1 kept no times: the file's last change stands in for them.
        let file_time = || {
            std::fs::metadata(path)
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map(|d| d.as_secs())
                .unwrap_or(0)
        };
        let master_since = if version >= 2 { d.u64()? } else { file_time() };
        let check = d.bytes()?.to_vec();
        let n = d.u32()?;
        let mut entries = Vec::new();
        for _ in 0..n {
            let id = d.u32()?;
            let made = if version >= 2 { d.u64()? } else { master_since };
            entries.push(Entry {
                id,
                made,
                wrapped: d.bytes()?.to_vec(),
            });
        }
        if !d.is_empty() {
            return Err(bad("bytes after the last data key"));
        }
        Ok(Keyring {
            salt,
            master_since,
            check,
            entries,
        })
    }

    /// Written beside and renamed into place, then the directory synced: a reader sees the old
    /// keyring or the new one, never a mix.
    fn write(&self, path: &Path) -> Result<()> {
        let mut e = crate::codec::Enc::new();
        e.buf.extend_from_slice(MAGIC);
        e.buf.extend_from_slice(&VERSION.to_le_bytes());
        e.buf.extend_from_slice(&self.salt);
        e.u64(self.master_since);
        e.bytes(&self.check).u32(self.entries.len() as u32);
        for k in &self.entries {
            e.u32(k.id).u64(k.made).bytes(&k.wrapped);
        }
        let tmp = path.with_extension("keyring.tmp");
        let write = || -> std::io::Result<()> {
            use std::io::Write;
            let mut f = crate::create_private_file(&tmp)?;
            f.write_all(&e.buf)?;
            f.sync_all()?;
            std::fs::rename(&tmp, path)?;
            if let Some(dir) = path.parent() {
                std::fs::File::open(dir)?.sync_all()?;
            }
            Ok(())
        };
        write().map_err(|e| StorageError::io("cannot write keyring", path, e))
    }

    /// Reads the keyring at `path` and the master key from `src`, and checks they belong
    /// together.
    fn open(path: &Path, src: &MasterSource) -> Result<(Keyring, Master)> {
        let ring = Keyring::read(path)?;
        let m = Master::load(src, &ring.salt)?;
        ring.verify(&m)?;
        Ok((ring, m))
    }

    /// Every data key, unwrapped with `m`: id and raw bytes.
    fn unwrap_all(&self, m: &Master) -> Result<Vec<(u32, Zeroizing<Vec<u8>>)>> {
        self.entries
            .iter()
            .map(|k| {
                open_with(&m.key, &id_aad(k.id), &k.wrapped)
                    .map(|raw| (k.id, Zeroizing::new(raw)))
                    .ok_or_else(|| key_err(format!("data key {} does not unwrap", k.id)))
            })
            .collect()
    }

    fn verify(&self, m: &Master) -> Result<()> {
        match open_with(&m.key, b"CHECK", &self.check) {
            Some(c) if c == CHECK => Ok(()),
            _ => Err(key_err(
                "the master key does not open this queue manager's keyring (wrong key, or the keyring was replaced)",
            )),
        }
    }
}

/// Runs `f` holding an exclusive lock on the keyring (`dse.keyring.lock`), so that a start
/// adding its data key and a rotation rewrapping the keys never overwrite each other's keyring.
fn locked<T>(qm_dir: &Path, f: impl FnOnce() -> Result<T>) -> Result<T> {
    let p = qm_dir.join("dse.keyring.lock");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&p)
        .map_err(|e| StorageError::io("cannot open the keyring lock", &p, e))?;
    file.lock()
        .map_err(|e| StorageError::io("cannot lock the keyring", &p, e))?;
    let r = f();
    let _ = file.unlock();
    r
}

/// Adds a fresh data key, wrapped under `m`, to `ring`: its id and its AEAD context.
fn add_key(ring: &mut Keyring, m: &Master) -> Result<(u32, LessSafeKey)> {
    let id = ring.entries.iter().map(|k| k.id).max().unwrap_or(0) + 1;
    let mut raw = Zeroizing::new([0u8; 32]);
    aws_lc_rs::rand::fill(&mut raw[..]).map_err(|_| key_err("no randomness for a key"))?;
    ring.entries.push(Entry {
        id,
        made: unix_now(),
        wrapped: seal_with(&m.key, &id_aad(id), &raw[..])?,
    });
    Ok((id, aead(&raw[..])?))
}

impl Dse {
    /// Sets encryption at rest up in `qm_dir`: a keyring with a first data key.
    pub fn create(qm_dir: &Path, src: &MasterSource) -> Result<()> {
        let path = qm_dir.join(KEYRING);
        if path.exists() {
            return Err(key_err(format!("{} exists already", path.display())));
        }
        let mut salt = [0u8; 16];
        aws_lc_rs::rand::fill(&mut salt).map_err(|_| key_err("no randomness for a salt"))?;
        let m = Master::load(src, &salt)?;
        let ring = Keyring {
            salt,
            master_since: unix_now(),
            check: seal_with(&m.key, b"CHECK", CHECK)?,
            entries: Vec::new(),
        };
        ring.write(&path)
    }

    /// Whether `qm_dir` has encryption at rest.
    pub fn configured(qm_dir: &Path) -> bool {
        qm_dir.join(KEYRING).exists()
    }

    /// The master key source recorded for `qm_dir`.
    pub fn source(qm_dir: &Path) -> Result<MasterSource> {
        let p = qm_dir.join(SOURCE_FILE);
        let s = std::fs::read_to_string(&p)
            .map_err(|e| StorageError::io("cannot read the master key source", &p, e))?;
        MasterSource::parse(s.trim())
    }

    /// The environment variable the master key (or its passphrase) of `qm_dir` is read from,
    /// if it is read from one: programs the queue manager starts must not inherit it.
    pub fn secret_env(qm_dir: &Path) -> Option<String> {
        if !Dse::configured(qm_dir) {
            return None;
        }
        match Dse::source(qm_dir).ok()? {
            MasterSource::Env(v) | MasterSource::Passphrase(v) => Some(v),
            MasterSource::File(_) => None,
        }
    }

    /// Records the master key source for `qm_dir`.
    pub fn set_source(qm_dir: &Path, src: &MasterSource) -> Result<()> {
        let p = qm_dir.join(SOURCE_FILE);
        std::fs::write(&p, format!("{src}\n"))
            .map_err(|e| StorageError::io("cannot write the master key source", &p, e))
    }

    /// For a start: `None` without encryption at rest, else the keyring opened with the
    /// recorded master key source (and a fresh data key for this run).
    pub fn load(qm_dir: &Path) -> Result<Option<std::sync::Arc<Dse>>> {
        if !Dse::configured(qm_dir) {
            return Ok(None);
        }
        let src = Dse::source(qm_dir)?;
        Dse::open(qm_dir, &src).map(|d| Some(std::sync::Arc::new(d)))
    }

    /// Opens the keyring with the master key from `src`, unwraps every data key, and adds a
    /// fresh one that this run seals with.
    pub fn open(qm_dir: &Path, src: &MasterSource) -> Result<Dse> {
        locked(qm_dir, || Self::open_locked(qm_dir, src))
    }

    fn open_locked(qm_dir: &Path, src: &MasterSource) -> Result<Dse> {
        let path = qm_dir.join(KEYRING);
        let (mut ring, m) = Keyring::open(&path, src)?;
        let mut keys = BTreeMap::new();
        for (id, raw) in ring.unwrap_all(&m)? {
            keys.insert(id, aead(&raw)?);
        }
        let (current, key) = add_key(&mut ring, &m)?;
        ring.write(&path)?;
        keys.insert(current, key);
        Ok(Dse {
            dir: qm_dir.to_path_buf(),
            master: Mutex::new(m),
            keys: RwLock::new(keys.into_iter().map(|(k, v)| (k, Arc::new(v))).collect()),
            current: AtomicU32::new(current),
            current_made: AtomicU64::new(unix_now()),
            master_since: AtomicU64::new(ring.master_since),
        })
    }

    /// A fresh data key for what is written from now on (the log calls this as it starts a
    /// segment, so data is re-keyed as segments roll and no key seals more than a segment's
    /// worth of records). If the master key was rotated since the start, the new one is read
    /// from the recorded source; when that fails, the current key stays and the error says why.
    pub fn roll(&self) -> Result<u32> {
        locked(&self.dir, || {
            let path = self.dir.join(KEYRING);
            let mut ring = Keyring::read(&path)?;
            let mut m = lock(&self.master);
            if ring.verify(&m).is_err() {
                let src = Dse::source(&self.dir)?;
                let fresh = Master::load(&src, &ring.salt)?;
                ring.verify(&fresh)?;
                *m = fresh;
            }
            let (id, key) = add_key(&mut ring, &m)?;
            ring.write(&path)?;
            write(&self.keys).insert(id, Arc::new(key));
            self.current.store(id, Ordering::Release);
            self.current_made.store(unix_now(), Ordering::Relaxed);
            self.master_since
                .store(ring.master_since, Ordering::Relaxed);
            Ok(id)
        })
    }

    /// Rewraps every data key under a new master key (the queue manager may be running: data
    /// keys do not change, only how they are stored).
    pub fn rotate(qm_dir: &Path, old: &MasterSource, new: &MasterSource) -> Result<usize> {
        locked(qm_dir, || Self::rotate_locked(qm_dir, old, new))
    }

    fn rotate_locked(qm_dir: &Path, old: &MasterSource, new: &MasterSource) -> Result<usize> {
        let path = qm_dir.join(KEYRING);
        let (ring, m) = Keyring::open(&path, old)?;
        let mut salt = [0u8; 16];
        aws_lc_rs::rand::fill(&mut salt).map_err(|_| key_err("no randomness for a salt"))?;
        let n = Master::load(new, &salt)?;
        let made: BTreeMap<u32, u64> = ring.entries.iter().map(|k| (k.id, k.made)).collect();
        let entries = ring
            .unwrap_all(&m)?
            .into_iter()
            .map(|(id, raw)| {
                Ok(Entry {
                    id,
                    made: made.get(&id).copied().unwrap_or(0),
                    wrapped: seal_with(&n.key, &id_aad(id), &raw)?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let count = entries.len();
        Keyring {
            salt,
            master_since: unix_now(),
            check: seal_with(&n.key, b"CHECK", CHECK)?,
            entries,
        }
        .write(&path)?;
        Ok(count)
    }

    /// Drops the data keys below `min_id` from the keyring and from memory: nothing on disk
    /// is sealed with them any more (the caller knows; archived segments would be).
    pub fn prune_below(&self, min_id: u32) -> Result<usize> {
        let min_id = min_id.min(self.current());
        locked(&self.dir, || {
            let path = self.dir.join(KEYRING);
            let mut ring = Keyring::read(&path)?;
            let before = ring.entries.len();
            ring.entries.retain(|k| k.id >= min_id);
            let dropped = before - ring.entries.len();
            if dropped > 0 {
                ring.write(&path)?;
                write(&self.keys).retain(|id, _| *id >= min_id);
            }
            Ok(dropped)
        })
    }

    /// Seconds since the data key new records are sealed with was made.
    pub fn data_key_age(&self) -> u64 {
        unix_now().saturating_sub(self.current_made.load(Ordering::Relaxed))
    }

    /// Seconds since the master key last wrapped the keyring (made it, or a rotation), as
    /// this process last read the keyring (at start, then at each roll of the log).
    pub fn master_key_age(&self) -> u64 {
        unix_now().saturating_sub(self.master_since.load(Ordering::Relaxed))
    }

    /// The ages of `qm_dir`'s keys from its keyring alone (no master key needed): seconds
    /// since the master key last wrapped it and since its newest data key was made.
    pub fn ages(qm_dir: &Path) -> Result<(u64, u64)> {
        let ring = Keyring::read(&qm_dir.join(KEYRING))?;
        let now = unix_now();
        let newest = ring.entries.iter().map(|k| k.made).max().unwrap_or(0);
        Ok((
            now.saturating_sub(ring.master_since),
            now.saturating_sub(newest),
        ))
    }

    /// The key id new records are sealed with.
    pub fn current(&self) -> u32 {
        self.current.load(Ordering::Acquire)
    }

    fn key(&self, key_id: u32) -> Option<Arc<LessSafeKey>> {
        read(&self.keys).get(&key_id).cloned()
    }

    /// Seals `plain` under data key `key_id` (the caller names it in the record's header and
    /// in `aad`, the record's position: take it from [`Dse::current`] once).
    pub fn seal(&self, key_id: u32, aad: &[u8], plain: &[u8]) -> Result<Vec<u8>> {
        let key = self
            .key(key_id)
            .ok_or_else(|| key_err(format!("no data key {key_id}")))?;
        seal_with(&key, aad, plain)
    }

    /// Opens what `key_id` sealed with `aad`; `None` when the key is unknown or the bytes,
    /// or their position, were altered.
    pub fn open_sealed(&self, key_id: u32, aad: &[u8], sealed: &[u8]) -> Option<Vec<u8>> {
        let key = self.key(key_id)?;
        open_with(&key, aad, sealed)
    }

    pub fn has_key(&self, key_id: u32) -> bool {
        self.key(key_id).is_some()
    }

    /// A new stream id for [`Dse::stream_xor`] (random: one per file).
    pub fn new_stream() -> Result<[u8; 8]> {
        let mut s = [0u8; 8];
        aws_lc_rs::rand::fill(&mut s).map_err(|_| key_err("no randomness for a stream"))?;
        Ok(s)
    }

    /// Encrypts or decrypts (the same) `data`, which stands at `offset` of a stream sealed
    /// under data key `key_id` as stream `stream`: XOR with AES-256 in counter mode — the
    /// GCM keystream of nonce `stream ‖ block u32 LE` for each 4 KiB block, its tag unused.
    /// For a file read and written at any offset (a snapshot sent in chunks): confidentiality
    /// only; its frames' checksums find damage, TLS guards it in transit.
    pub fn stream_xor(
        &self,
        key_id: u32,
        stream: [u8; 8],
        offset: u64,
        data: &mut [u8],
    ) -> Result<()> {
        const BLOCK: u64 = 4096;
        let key = self
            .key(key_id)
            .ok_or_else(|| key_err(format!("no data key {key_id}")))?;
        let mut ks = Vec::with_capacity(BLOCK as usize);
        let mut pos = 0usize;
        while pos < data.len() {
            let at = offset + pos as u64;
            let block = u32::try_from(at / BLOCK)
                .map_err(|_| key_err("a sealed stream longer than 16 TiB"))?;
            let within = (at % BLOCK) as usize;
            let n = (BLOCK as usize - within).min(data.len() - pos);
            ks.clear();
            ks.resize(within + n, 0);
            let mut nonce = [0u8; NONCE_LEN];
            nonce[..8].copy_from_slice(&stream);
            nonce[8..].copy_from_slice(&block.to_le_bytes());
            // The tag is not kept: only the keystream is wanted.
            let _tag = key
                .seal_in_place_separate_tag(
                    Nonce::assume_unique_for_key(nonce),
                    Aad::empty(),
                    &mut ks,
                )
                .map_err(|_| key_err("cannot encrypt a stream"))?;
            for (d, k) in data[pos..pos + n].iter_mut().zip(&ks[within..]) {
                *d ^= k;
            }
            pos += n;
        }
        Ok(())
    }
}

/// The head of a file sealed as a stream ([`Dse::stream_xor`]), 32 bytes: the file's magic
/// (8), version u16 LE, flags u16 LE (1: sealed), key id u32 LE, stream id (8), 8 reserved.
/// The bytes after it are sealed when the flag says so.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamHead {
    pub magic: [u8; 8],
    pub version: u16,
    /// The data key and stream id the rest is sealed under; `None`: in clear.
    pub sealed: Option<(u32, [u8; 8])>,
}

impl StreamHead {
    pub const LEN: usize = 32;

    pub fn encode(&self) -> [u8; StreamHead::LEN] {
        let mut h = [0u8; StreamHead::LEN];
        h[..8].copy_from_slice(&self.magic);
        h[8..10].copy_from_slice(&self.version.to_le_bytes());
        if let Some((key, stream)) = self.sealed {
            h[10..12].copy_from_slice(&1u16.to_le_bytes());
            h[12..16].copy_from_slice(&key.to_le_bytes());
            h[16..24].copy_from_slice(&stream);
        }
        h
    }

    /// `None` when `b` is shorter than a head or its flags are unknown.
    pub fn decode(b: &[u8]) -> Option<StreamHead> {
        let b = b.get(..StreamHead::LEN)?;
        let mut magic = [0u8; 8];
        magic.copy_from_slice(&b[..8]);
        let version = u16::from_le_bytes([b[8], b[9]]);
        let sealed = match u16::from_le_bytes([b[10], b[11]]) {
            0 => None,
            1 => {
                let key = u32::from_le_bytes([b[12], b[13], b[14], b[15]]);
                let mut stream = [0u8; 8];
                stream.copy_from_slice(&b[16..24]);
                Some((key, stream))
            }
            _ => return None,
        };
        Some(StreamHead {
            magic,
            version,
            sealed,
        })
    }
}

#[cfg(test)]
#[path = "dse_tests.rs"]
mod tests;

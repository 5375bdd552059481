//! Connection authentication (MQ's CONNAUTH with an AUTHINFO of AUTHTYPE(IDPWOS)): user ids
//! and passwords checked against the queue manager's password file `<QM dir>/passwd` (for
//! containers and hosts without the users as OS accounts), and for users it does not name,
//! against the operating system's users through PAM (`pam.rs`). Each line is `user:PHC-string`, an
//! Argon2id hash with its own salt; `#` starts a comment. The file is private to the queue
//! manager's user, read at start and by `REFRESH SECURITY TYPE(CONNAUTH)`; a file with a bad
//! line is refused whole, naming the line (nothing of it is used). Passwords never reach a log.

use argon2::password_hash::{PasswordHash, PasswordHasher, SaltString};
use argon2::{Algorithm, Argon2, Block, Params, Version};
use sealmq_types::sync::lock;
use sealmq_types::sync::{read, write};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::RwLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

/// The longest password taken (longer ones are refused before any hashing: no CPU for free).
pub const MAX_PASSWORD: usize = 256;
/// The longest user id.
pub const MAX_USER: usize = 64;

pub const FILE: &str = "passwd";

/// The users of the password file and their hashes.
#[derive(Debug, Default, Clone)]
pub struct PasswordFile {
    users: HashMap<String, String>,
}

fn valid_user(u: &str) -> bool {
    !u.is_empty()
        && u.len() <= MAX_USER
        && u.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '@'))
}

impl PasswordFile {
    /// Reads `path`; a missing file is an empty one.
    pub fn load(path: &Path) -> Result<PasswordFile, String> {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Self::default()),
            Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
        };
        Self::parse(&text).map_err(|e| format!("{}: {e}", path.display()))
    }

    pub fn parse(text: &str) -> Result<PasswordFile, String> {
        let mut users = HashMap::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let n = i + 1;
            let Some((user, hash)) = line.split_once(':') else {
                return Err(format!("line {n}: expected user:hash"));
            };
            if !valid_user(user) {
                return Err(format!(
                    "line {n}: user id '{user}' must be 1-{MAX_USER} of A-Z a-z 0-9 . _ - @"
                ));
            }
            let parsed = PasswordHash::new(hash)
                .map_err(|e| format!("line {n}: the hash of '{user}' does not read ({e})"))?;
            if parsed.algorithm.as_str() != "argon2id" {
                return Err(format!(
                    "line {n}: the hash of '{user}' is {}, not argon2id",
                    parsed.algorithm
                ));
            }
            if users.insert(user.to_string(), hash.to_string()).is_some() {
                return Err(format!("line {n}: user '{user}' appears twice"));
            }
        }
        Ok(PasswordFile { users })
    }

    /// Whether `password` is `user`'s. An unknown user costs a hash too, so timing does not
    /// tell which users exist.
    pub fn verify(&self, user: &str, password: &str) -> bool {
        if password.len() > MAX_PASSWORD {
            return false;
        }
        match self.users.get(user).and_then(|h| PasswordHash::new(h).ok()) {
            Some(h) => verify_hash(&h, password.as_bytes()),
            None => {
                // The same work against a hash nobody's password matches.
                if let Some(h) = dummy_hash().and_then(|h| PasswordHash::new(h).ok()) {
                    let _ = verify_hash(&h, password.as_bytes());
                }
                false
            }
        }
    }

    pub fn contains(&self, user: &str) -> bool {
        self.users.contains_key(user)
    }

    /// Sets (or with `None`, removes) a user's password in the file at `path`, written
    /// 0600 through a temporary file.
    pub fn update(path: &Path, user: &str, password: Option<&str>) -> Result<(), String> {
        if !valid_user(user) {
            return Err(format!(
                "user id '{user}' must be 1-{MAX_USER} of A-Z a-z 0-9 . _ - @"
            ));
        }
        let mut f = Self::load(path)?;
        match password {
            Some(p) => {
                f.users.insert(user.to_string(), hash_password(p)?);
            }
            None => {
                if f.users.remove(user).is_none() {
                    return Err(format!("user '{user}' is not in {}", path.display()));
                }
            }
        }
        let mut names: Vec<&String> = f.users.keys().collect();
        names.sort();
        let mut text = String::from("# sealmq password file: user:argon2id hash\n");
        for n in names {
            text.push_str(&format!("{n}:{}\n", f.users[n]));
        }
        let tmp = path.with_extension("tmp");
        write_private(&tmp, text.as_bytes())?;
        std::fs::rename(&tmp, path).map_err(|e| format!("cannot write {}: {e}", path.display()))
    }
}

/// Working memory of Argon2 checks kept for the next ones: as many as the authentication gate
/// runs at once. An Argon2id check of the default cost needs 19 MiB; allocated afresh for each
/// check on whichever thread ran it, a flood of wrong passwords left the allocator holding
/// hundreds of MiB it never gave back (issue 42: 80 wrong REST logins took a queue manager
/// from 14 MB to 1.2 GB). Reused, the memory of checks is bounded by this pool.
static WORK: Mutex<Vec<Vec<Block>>> = Mutex::new(Vec::new());
/// Buffers kept (the gate runs two checks at once).
const WORK_KEPT: usize = 2;
/// The largest memory cost a stored hash may ask for, in KiB (1 GiB): a hand-edited file
/// cannot make a check take the machine.
const MAX_M_COST: u32 = 1 << 20;

/// Whether `password` hashes to `h` (Argon2 with `h`'s parameters), with reused working
/// memory, compared in constant time.
fn verify_hash(h: &PasswordHash, password: &[u8]) -> bool {
    let (Some(salt), Some(expected)) = (h.salt, h.hash) else {
        return false;
    };
    let Ok(params) = Params::try_from(h) else {
        return false;
    };
    if params.m_cost() > MAX_M_COST {
        return false;
    }
    let Ok(alg) = Algorithm::try_from(h.algorithm) else {
        return false;
    };
    let version = match h.version.map(Version::try_from) {
        None => Version::default(),
        Some(Ok(v)) => v,
        Some(Err(_)) => return false,
    };
    let mut salt_buf = [0u8; 64];
    let Ok(salt) = salt.decode_b64(&mut salt_buf) else {
        return false;
    };
    let mut out = vec![0u8; expected.len()];
    let blocks = params.block_count();
    let argon = Argon2::new(alg, version, params);
    let mut mem = lock(&WORK).pop().unwrap_or_default();
    if mem.len() < blocks {
        mem = vec![Block::default(); blocks];
    }
    let ok = argon
        .hash_password_into_with_memory(password, salt, &mut out, &mut mem[..blocks])
        .is_ok();
    // What the password made is not left in memory kept for later.
    mem[..blocks].fill(Block::default());
    {
        let mut pool = lock(&WORK);
        if pool.len() < WORK_KEPT {
            pool.push(mem);
        }
    }
    let same = out
        .iter()
        .zip(expected.as_bytes())
        .fold(0u8, |acc, (a, b)| acc | (a ^ b));
    ok && same == 0
}

/// A hash of the default cost that no password is checked against for real: an unknown
/// user's check costs the same as a known one's.
fn dummy_hash() -> Option<&'static str> {
    static DUMMY: OnceLock<Option<String>> = OnceLock::new();
    DUMMY
        .get_or_init(|| hash_password("sealmq: no such user").ok())
        .as_deref()
}

/// Whether the operating system's passwd database names `user`.
fn os_user_exists(user: &str) -> bool {
    std::fs::read_to_string("/etc/passwd")
        .unwrap_or_default()
        .lines()
        .any(|l| l.split(':').next() == Some(user))
}

/// An Argon2id hash of `password` with a fresh random salt.
pub fn hash_password(password: &str) -> Result<String, String> {
    if password.is_empty() || password.len() > MAX_PASSWORD {
        return Err(format!("a password must be 1-{MAX_PASSWORD} bytes"));
    }
    let mut salt = [0u8; 16];
    aws_lc_rs::rand::fill(&mut salt).map_err(|_| "no random salt".to_string())?;
    let salt = SaltString::encode_b64(&salt).map_err(|e| e.to_string())?;
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| e.to_string())
}

/// Writes a file only the owner may read.
pub fn write_private(path: &Path, bytes: &[u8]) -> Result<(), String> {
    use std::io::Write;
    let mut f = sealmq_engine::host::create_private_file(path)
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    f.write_all(bytes)
        .and_then(|_| f.sync_all())
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// The password file in use, replaced by REFRESH SECURITY TYPE(CONNAUTH).
pub struct Users {
    path: PathBuf,
    file: RwLock<PasswordFile>,
    /// Counts the readings of the file (REFRESH SECURITY TYPE(CONNAUTH)).
    epoch: AtomicU64,
}

impl Users {
    pub fn load(dir: &Path) -> Result<Users, String> {
        let path = dir.join(FILE);
        Ok(Users {
            file: RwLock::new(PasswordFile::load(&path)?),
            path,
            epoch: AtomicU64::new(0),
        })
    }

    /// Reads the file again; on failure the one in use stays.
    pub fn refresh(&self) -> Result<usize, String> {
        let f = PasswordFile::load(&self.path)?;
        let n = f.users.len();
        *write(&self.file) = f;
        self.epoch.fetch_add(1, Ordering::AcqRel);
        Ok(n)
    }

    /// Changes at each refresh: what was decided on the old file is decided again.
    pub fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::Acquire)
    }

    /// Whether `user` can log in at all: the password file names it, or (for users it does
    /// not name) PAM is there and the operating system has the user.
    pub fn known(&self, user: &str) -> bool {
        if read(&self.file).contains(user) {
            return true;
        }
        crate::auth::pam::available() && valid_user(user) && os_user_exists(user)
    }

    /// A user the password file names is checked there; any other against the operating
    /// system's users (PAM).
    pub fn verify(&self, user: &str, password: &str) -> bool {
        let f = read(&self.file);
        if f.contains(user) || !crate::auth::pam::available() {
            f.verify(user, password)
        } else {
            drop(f);
            crate::auth::pam::verify(user, password)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn right_and_wrong_passwords_and_bad_files() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join(FILE);
        PasswordFile::update(&p, "alice", Some("correct horse")).unwrap();
        PasswordFile::update(&p, "bob", Some("battery")).unwrap();
        let f = PasswordFile::load(&p).unwrap();
        assert!(f.verify("alice", "correct horse"));
        assert!(!f.verify("alice", "battery"));
        assert!(!f.verify("carol", "battery"));
        assert!(!f.verify("alice", &"x".repeat(MAX_PASSWORD + 1)));
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&p).unwrap().permissions().mode() & 0o777,
            0o600
        );
        // Nothing of a bad file is used: the error names the line.
        for (bad, what) in [
            ("alice\n", "line 1"),
            ("alice:$argon2id$v=19$m=19456,t=2,p=1$bad\n", "line 1"),
            ("ok:x\n", "line 1"),
            (
                "# c\nbad user:$argon2id$v=19$m=19456,t=2,p=1$c2FsdHNhbHQ$aGFzaA\n",
                "line 2",
            ),
        ] {
            let e = PasswordFile::parse(bad).unwrap_err();
            assert!(e.contains(what), "{bad}: {e}");
        }
        let dup = format!("a:{h}\na:{h}\n", h = hash_password("pw").unwrap());
        assert!(PasswordFile::parse(&dup).unwrap_err().contains("twice"));
        assert!(hash_password(&"x".repeat(MAX_PASSWORD + 1)).is_err());
        PasswordFile::update(&p, "alice", None).unwrap();
        assert!(!PasswordFile::load(&p).unwrap().contains("alice"));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn garbage_files_never_panic(s in "[ -~\\n]{0,200}") {
            let _ = PasswordFile::parse(&s);
        }
    }
}

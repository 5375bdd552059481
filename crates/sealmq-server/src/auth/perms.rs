//! A queue manager's files are private to its user (SPEC §10): directories 0700 and files
//! 0600, or — when the administrator names a group at `sealmq create --group G` — the queue
//! manager's directory 0750 and its socket 0770 for that group, so that local applications of
//! other users in it can connect (authority records then decide what they may do). The data
//! (log, checkpoints, keystore, statistics) stays 0700 whatever the group.
//!
//! `sealmq start` refuses a directory others can read or write, naming the fix; the server
//! sets its umask to 077, so everything it creates is private.

#![allow(unsafe_code)]

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

/// The file naming the group of a queue manager's directory (written by `create --group`).
pub const GROUP_FILE: &str = "qm.group";

/// The subdirectories that hold data and must be the owner's alone.
const DATA_DIRS: [&str; 8] = [
    "log",
    "checkpoint",
    "keystore",
    "stats",
    "accounting",
    "queues",
    "ha",
    "errors",
];

/// Files directly in the queue manager's directory that its group may read: the group's
/// name. Every other file there (the policy key, the keyring, the process's log) must be
/// private even when the directory is shared with a group.
const SHARED_FILES: [&str; 1] = [GROUP_FILE];

/// How deep under a data directory files are checked (queue files sit two levels down).
const DEPTH: usize = 3;

fn exposed(path: &Path, mode: u32, fix: &Path, recursive: bool) -> String {
    format!(
        "{} is readable or writable by others (mode {:04o}); fix it with: chmod {}go-rwx {}",
        path.display(),
        mode & 0o777,
        if recursive { "-R " } else { "" },
        fix.display()
    )
}

/// The first file or directory under `dir` (to `depth` levels) that others may use.
fn first_exposed(dir: &Path, depth: usize) -> Option<(std::path::PathBuf, u32)> {
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let Ok(m) = std::fs::symlink_metadata(e.path()) else {
            continue;
        };
        let mode = m.permissions().mode();
        if !m.file_type().is_symlink() && mode & 0o077 != 0 {
            return Some((e.path(), mode));
        }
        if m.is_dir()
            && depth > 1
            && let Some(x) = first_exposed(&e.path(), depth - 1)
        {
            return Some(x);
        }
    }
    None
}

/// Every file and directory the server creates from now on is private to its user.
pub fn private_umask() {
    // SAFETY: umask only sets the process's file mode creation mask.
    unsafe {
        libc::umask(0o077);
    }
}

/// The group named at create, if any.
pub fn configured_group(dir: &Path) -> Option<String> {
    std::fs::read_to_string(dir.join(GROUP_FILE))
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// The gid of group `name`, from /etc/group.
pub fn group_gid(name: &str) -> Option<u32> {
    std::fs::read_to_string("/etc/group").ok().and_then(|g| {
        g.lines().find_map(|l| {
            let f: Vec<&str> = l.split(':').collect();
            (f.len() > 2 && f[0] == name)
                .then(|| f[2].parse().ok())
                .flatten()
        })
    })
}

/// Checks that `dir` and its data are private (or the directory shared with its group only),
/// so that no other local user can read a message from the log. Also private: every file
/// directly in a data directory (a log segment written 0644 by an older release).
pub fn check(dir: &Path) -> Result<(), String> {
    let group = configured_group(dir);
    let meta = std::fs::metadata(dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
    let mode = meta.permissions().mode() & 0o777;
    let me = unsafe { libc::geteuid() };
    if meta.uid() != me {
        return Err(format!(
            "{} belongs to uid {}, not to the user starting the queue manager (uid {me})",
            dir.display(),
            meta.uid()
        ));
    }
    let allowed = match &group {
        Some(g) if group_gid(g) == Some(meta.gid()) => 0o750,
        _ => 0o700,
    };
    let fix_top = match &group {
        Some(g) => format!("chgrp {g} {d} && chmod 0750 {d}", d = dir.display()),
        None => format!("chmod 0700 {}", dir.display()),
    };
    if mode & !allowed != 0 {
        return Err(format!(
            "the queue manager's directory {} is mode {mode:04o}: other users could read its \
             messages; fix it with: {fix_top}",
            dir.display()
        ));
    }
    for sub in DATA_DIRS {
        let p = dir.join(sub);
        let Ok(m) = std::fs::metadata(&p) else {
            continue;
        };
        // The keystore's certificates are no secret (its private key is refused by the
        // keystore itself when others may read it): only writing it is others' to be denied.
        let forbidden = if sub == "keystore" { 0o022 } else { 0o077 };
        if m.permissions().mode() & forbidden != 0 {
            return Err(format!(
                "{} is readable or writable by others (mode {:04o}); fix it with: chmod -R \
                 go-rwx {}",
                p.display(),
                m.permissions().mode() & 0o777,
                p.display()
            ));
        }
        // The keystore's private key is refused by the keystore itself when others may read
        // it; its certificates and trust list are no secret.
        if sub == "keystore" {
            continue;
        }
        if let Some((path, mode)) = first_exposed(&p, DEPTH) {
            return Err(exposed(&path, mode, &p, true));
        }
    }
    // Files directly in the directory (a group may traverse it): the policy key, the
    // keyring and the rest are the owner's alone.
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let name = e.file_name();
        if SHARED_FILES.iter().any(|f| name == std::ffi::OsStr::new(f)) {
            continue;
        }
        if let Ok(m) = std::fs::symlink_metadata(e.path())
            && m.is_file()
            && m.permissions().mode() & 0o077 != 0
        {
            return Err(exposed(&e.path(), m.permissions().mode(), &e.path(), false));
        }
    }
    Ok(())
}

/// After the socket is bound: open to the configured group, if any.
pub fn share_socket(dir: &Path, socket: &Path) -> Result<(), String> {
    let Some(g) = configured_group(dir) else {
        return Ok(());
    };
    let Some(gid) = group_gid(&g) else {
        return Err(format!(
            "group '{g}' (in {}) does not exist",
            dir.join(GROUP_FILE).display()
        ));
    };
    std::os::unix::fs::chown(socket, None, Some(gid))
        .and_then(|_| std::fs::set_permissions(socket, std::fs::Permissions::from_mode(0o770)))
        .map_err(|e| format!("cannot share {} with group {g}: {e}", socket.display()))
}

/// Takes the secrets out of this process's environment once they have been read (the master
/// key or passphrase of encryption at rest, passwords given to sealmq's commands): their
/// bytes are overwritten where the kernel shows them (`/proc/<pid>/environ` reads the
/// process's first environment block, which unsetting a variable leaves as it was), then the
/// variables are removed. The process is also made non-dumpable, so that other processes of
/// its user (a SERVICE's programs among them) cannot read its memory, environment or
/// descriptors through /proc or ptrace, and no core file holds its keys.
///
/// Called at start, before any thread of the queue manager's own is started.
pub fn scrub_secrets(names: &[String]) {
    // SAFETY: prctl with PR_SET_DUMPABLE takes integer arguments only.
    unsafe {
        libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
    }
    unsafe extern "C" {
        static mut environ: *mut *mut libc::c_char;
    }
    for name in names.iter().filter(|n| std::env::var_os(n).is_some()) {
        let prefix = format!("{name}=");
        // SAFETY: `environ` is the C library's NULL-terminated array of NUL-terminated
        // strings; it is walked before any other thread of ours runs, and each matching
        // string's value bytes are overwritten in place, never past its NUL.
        unsafe {
            let mut p = environ;
            while !p.is_null() && !(*p).is_null() {
                let entry = *p;
                let bytes = std::ffi::CStr::from_ptr(entry).to_bytes();
                if bytes.starts_with(prefix.as_bytes()) {
                    let value = entry.add(prefix.len());
                    std::ptr::write_bytes(value, b'0', bytes.len() - prefix.len());
                }
                p = p.add(1);
            }
            std::env::remove_var(name);
        }
    }
}

//! Room to drain a full disk. A queue manager whose disk fills must still let an administrator
//! get and clear messages — and each get and clear writes a log record. The log keeps a
//! reserve file of real (written, not sparse) bytes beside its directory; when a write fails
//! for want of space, the reserve is given back to the file system and the write tried again,
//! and the log is "short" of space: the queue manager then refuses what fills the log (puts of
//! persistent messages) while gets, commits and clears go on. A checkpoint taken while short
//! starts a new segment, so the one that filled the disk can be released, and then writes the
//! reserve again; once it is back, the log is no longer short.

use std::io::Write;
use std::path::{Path, PathBuf};

/// The reserve lies beside the log directory (same file system), named like it with this
/// extension: `<QM dir>/log.reserve`.
pub const RESERVE_EXT: &str = "reserve";
/// Its default size: room for some hundred thousand get and commit records.
pub const DEFAULT_RESERVE: u64 = 8 << 20;

/// Whether an I/O error is the file system being full (or over quota).
pub fn is_no_space(e: &std::io::Error) -> bool {
    matches!(e.raw_os_error(), Some(28) | Some(122)) // ENOSPC, EDQUOT
        || e.kind() == std::io::ErrorKind::StorageFull
}

pub(crate) fn path(dir: &Path) -> PathBuf {
    dir.with_extension(RESERVE_EXT)
}

/// Writes the reserve (`bytes` of zeros, synced) unless it is there already at full size.
/// Returns whether the reserve is in place; a partial one is removed.
pub(crate) fn ensure(dir: &Path, bytes: u64) -> bool {
    if bytes == 0 {
        return true;
    }
    let p = path(dir);
    if std::fs::metadata(&p).is_ok_and(|m| m.len() == bytes) {
        return true;
    }
    let write = || -> std::io::Result<()> {
        let mut f = crate::create_private_file(&p)?;
        let zeros = vec![0u8; 1 << 20];
        let mut left = bytes;
        while left > 0 {
            let n = left.min(zeros.len() as u64) as usize;
            f.write_all(&zeros[..n])?;
            left -= n as u64;
        }
        f.sync_all()
    };
    match write() {
        Ok(()) => true,
        Err(_) => {
            let _ = std::fs::remove_file(&p);
            false
        }
    }
}

/// Bytes free (for an unprivileged user) on the file system of `dir`, and its size.
pub fn free_space(dir: &Path) -> Option<(u64, u64)> {
    let s = rustix::fs::statvfs(dir).ok()?;
    Some((
        s.f_bavail.saturating_mul(s.f_frsize),
        s.f_blocks.saturating_mul(s.f_frsize),
    ))
}

/// The free space under which the log starts a new segment and a checkpoint releases the
/// old one before the disk fills (not after a refused write): twice the reserve, or a quarter
/// of a small file system.
pub fn low_water(total: u64, reserve: u64) -> u64 {
    reserve.saturating_mul(2).max(1 << 20).min(total / 4)
}

/// Gives the reserve back to the file system; whether there was one.
pub(crate) fn release(dir: &Path) -> bool {
    std::fs::remove_file(path(dir)).is_ok()
}

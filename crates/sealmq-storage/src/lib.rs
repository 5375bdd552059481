//! # sealmq-storage: the recovery log and checkpoints
//!
//! - [`log`]: a write-ahead log of checksummed records in segment files, with group commit (one
//!   flusher thread makes many committers durable with one `fdatasync`), torn-tail detection and
//!   truncation on open, clean failure on a full disk or an I/O error, and optional archiving of
//!   segments no longer needed.
//! - [`checkpoint`]: atomically written snapshot files, so a restart replays only the log tail.
//! - [`codec`]: the bounds-checked little-endian encoding records and snapshots use.
//!
//! Formats are in `docs/storage.md`. Every record and segment names the key that sealed it
//! (0 = stored in clear) so that encryption at rest can be added without a format change.

pub mod checkpoint;
/// The value encoding (kept in `sealmq-types`, which the wire protocol shares).
pub use sealmq_types::codec;
pub mod dse;
pub mod error;
pub mod log;
pub mod qstore;
pub mod space;

pub use error::{Result, StorageError};

/// Creates (or truncates) a file only this user may read or write (0600), whatever the umask.
pub fn create_private_file(path: &std::path::Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .mode(0o600)
        .open(path)
}

/// Creates `dir` and any missing parents private to this user (0700), whatever the umask:
/// a queue manager's data is no one else's to read.
pub fn create_private_dir(dir: &std::path::Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}
pub use log::{Log, LogConfig, Lsn, Recovered};

/// The queue manager's policy key (`<QM dir>/policy.key`, 32 bytes, 0600): the stored
/// policies' tags are made under it (the engine's `policies.rs`); the instances of a
/// replicated queue manager share it through their log.
pub const POLICY_KEY_FILE: &str = "policy.key";

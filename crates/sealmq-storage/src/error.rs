//! Storage errors, each mapping to an MQ reason code.

use sealmq_types::ReasonCode;
use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    /// Writing or syncing failed (disk full, I/O error). Nothing of the failed batch is durable.
    #[error(
        "writing {path} failed: {source}; nothing of this write was kept, and later ones will succeed once the cause is fixed"
    )]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The log cannot be written any more until the queue manager restarts.
    #[error(
        "the recovery log is unusable after an earlier failure ({0}); restart the queue manager"
    )]
    Broken(String),
    /// Opening or reading files failed.
    #[error("{what} {path}: {source}")]
    Io {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A record or file is damaged where it cannot be a torn tail: never skipped silently.
    #[error("{path} is damaged at offset {offset}: {detail}")]
    Corrupt {
        path: PathBuf,
        offset: u64,
        detail: String,
    },
    /// A record or snapshot value could not be decoded.
    #[error("malformed {0}")]
    Decode(String),
    /// The log is closed.
    #[error("the recovery log is closed")]
    Closed,
    /// Encryption at rest: a master or data key is missing, wrong or unreadable.
    #[error("encryption at rest: {0}")]
    Key(String),
}

impl StorageError {
    /// The reason code an application sees.
    pub fn reason(&self) -> ReasonCode {
        match self {
            StorageError::Write { .. } | StorageError::Broken(_) | StorageError::Io { .. } => {
                ReasonCode::ResourceProblem
            }
            StorageError::Corrupt { .. } | StorageError::Decode(_) => ReasonCode::ObjectDamaged,
            StorageError::Closed => ReasonCode::QMgrQuiescing,
            StorageError::Key(_) => ReasonCode::KeyRepositoryError,
        }
    }

    pub(crate) fn io(what: &'static str, path: &std::path::Path, source: std::io::Error) -> Self {
        StorageError::Io {
            what,
            path: path.to_path_buf(),
            source,
        }
    }
}

impl From<sealmq_types::codec::DecodeError> for StorageError {
    fn from(e: sealmq_types::codec::DecodeError) -> Self {
        StorageError::Decode(e.0)
    }
}

pub type Result<T> = std::result::Result<T, StorageError>;

//! MQI errors: an MQ reason code and what went wrong.

use sealmq_types::ReasonCode;
use std::fmt;

/// An MQI call failed with `reason`; `detail` says what and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MqError {
    pub reason: ReasonCode,
    pub detail: String,
}

impl MqError {
    pub fn new(reason: ReasonCode, detail: impl Into<String>) -> MqError {
        MqError {
            reason,
            detail: detail.into(),
        }
    }
}

impl fmt::Display for MqError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {}: {}",
            self.reason.code(),
            self.reason.name(),
            self.detail
        )
    }
}

impl std::error::Error for MqError {}

impl From<sealmq_storage::StorageError> for MqError {
    fn from(e: sealmq_storage::StorageError) -> Self {
        MqError::new(e.reason(), e.to_string())
    }
}

impl From<sealmq_types::codec::DecodeError> for MqError {
    fn from(e: sealmq_types::codec::DecodeError) -> Self {
        sealmq_storage::StorageError::from(e).into()
    }
}

pub type MqResult<T> = Result<T, MqError>;

/// `Err(MqError)` with a formatted detail.
macro_rules! mqerr {
    ($reason:ident, $($arg:tt)*) => {
        Err($crate::error::MqError::new(sealmq_types::ReasonCode::$reason, format!($($arg)*)))
    };
}
pub(crate) use mqerr;

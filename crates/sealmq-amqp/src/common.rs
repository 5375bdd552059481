//! What every part of the AMQP front end shares and nothing else: an MQ error as an AMQP
//! error condition (and its description), the blocking pool, a terminus's capabilities. A leaf:
//! it uses no other module of this crate.

use fe2o3_amqp::types::definitions::{AmqpError, Error};
use sealmq_engine::MqError;
use sealmq_types::ReasonCode;

/// An MQ error as the AMQP description carries it: `MQRC <code> <name>: <detail>`.
pub fn describe(e: &MqError) -> String {
    format!("MQRC {} {}: {}", e.reason.code(), e.reason.name(), e.detail)
}

/// The AMQP error condition of an MQ reason code, with the code and text in the description.
pub fn amqp_error(e: &MqError) -> Error {
    let cond = match e.reason {
        ReasonCode::NotAuthorized => AmqpError::UnauthorizedAccess,
        ReasonCode::UnknownObjectName => AmqpError::NotFound,
        ReasonCode::QFull | ReasonCode::QSpaceNotAvailable | ReasonCode::ResourceProblem => {
            AmqpError::ResourceLimitExceeded
        }
        ReasonCode::PutInhibited | ReasonCode::GetInhibited | ReasonCode::ObjectInUse => {
            AmqpError::NotAllowed
        }
        ReasonCode::MsgTooBigForQ | ReasonCode::MsgTooBigForQMgr => {
            AmqpError::ResourceLimitExceeded
        }
        _ => AmqpError::InternalError,
    };
    Error::new(cond, describe(e), None)
}

pub(crate) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Option<T> {
    tokio::task::spawn_blocking(f).await.ok()
}

/// The capabilities a source or target carries.
pub(crate) type Caps = fe2o3_amqp::types::primitives::Array<fe2o3_amqp::types::primitives::Symbol>;

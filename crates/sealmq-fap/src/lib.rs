//! # sealmq-fap: IBM MQ's client protocol
//!
//! The segments an MQ client (IBM's C, Java, .NET clients) exchanges with a SVRCONN channel,
//! and the structures inside them, read and written here without the queue manager: docs/fap.md
//! says what each is and where each fact comes from (IBM's documented MQI structures, the
//! Wireshark dissector's layouts, IBM's Java client observed on the wire).
//!
//! - [`tsh`]: the transmission segment header (`TSH `, `TSHM`, `TSHC`) and segment types.
//! - [`id`]: the initial data exchange (`ID  `): what the client asks, what sealmq answers.
//! - [`auth`]: the user id (`UID `) and connection authentication (`CAUT`) flows.
//! - [`sockact`]: socket actions (a further conversation on the socket) and STATUS_DATA.
//! - [`api`]: the API header of every MQI flow, and MQCONN.
//! - [`md`], [`od`], [`opts`]: MQMD, MQOD (with MQOPEN's `FOPA`), MQPMO and MQGMO, and the
//!   MQPUT, MQPUT1 and MQGET bodies.
//! - [`sub`]: SPI SUBSCRIBE (MQSUB as the Java client sends it).
//! - [`inq`]: MQINQ's selectors and answer; [`spi`]: the SPI QUERY and OPEN flows.
//! - [`consume`]: asynchronous consume: NOTIFICATION, REQUEST_MSGS and ASYNC_MESSAGE.
//! - [`rfh2`]: MQRFH2 and its folders, the properties of JMS messages.
//! - [`bytes`]: a bounds-checked reader of big- or little-endian fields and blank-padded names.
//!
//! Every parser takes untrusted bytes: it returns an error for anything short, lying or
//! unknown, never panics (property tests in each module).

pub mod api;
pub mod auth;
pub mod bytes;
pub mod consume;
pub mod id;
pub mod inq;
pub mod md;
pub mod od;
pub mod opts;
pub mod pcf;
pub mod rfh2;
pub mod sockact;
pub mod spi;
pub mod sub;
pub mod tsh;

/// Why bytes are not MQ's protocol: said to the error log, answered to the client as a
/// closed conversation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FapError(pub String);

impl std::fmt::Display for FapError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for FapError {}

pub type Result<T> = std::result::Result<T, FapError>;

pub(crate) fn err<T>(m: impl Into<String>) -> Result<T> {
    Err(FapError(m.into()))
}

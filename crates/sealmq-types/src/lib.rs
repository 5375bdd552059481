//! Types shared by every sealmq layer.
//!
//! - [`ReasonCode`]: the MQ reason codes (SPEC §2.3). Every layer reports failures with one of
//!   these numbers so that an operator's MQ knowledge carries over. Values are fixed and never
//!   reused: a retired code leaves a gap.
//! - [`codec`]: the bounds-checked value encoding that log records, snapshots and wire frames use.
//! - [`time`]: UTC civil time and MQ's date and time text.
//! - [`sync`]: lock guards that survive a panic elsewhere.
//! - [`named_enum!`]: keyword values with their MQSC names and stored bytes.
//! - [`slots`]: the connection table of a listener whose connections authenticate late.

pub mod codec;
pub mod named;
pub mod ports;
pub mod slots;
pub mod sync;
pub mod time;

use std::fmt;

/// MQ reason codes, with MQ's numbers and names for the same conditions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum ReasonCode {
    AlreadyConnected = 2002,
    BackedOut = 2003,
    ConnectionBroken = 2009,
    GetInhibited = 2016,
    HandleNotAvailable = 2017,
    HconnError = 2018,
    HobjError = 2019,
    SyncpointLimitReached = 2024,
    MsgTooBigForQ = 2030,
    MsgTooBigForQMgr = 2031,
    NoMsgAvailable = 2033,
    NotAuthorized = 2035,
    NotOpenForBrowse = 2036,
    NotOpenForInput = 2037,
    NotOpenForInquire = 2038,
    NotOpenForOutput = 2039,
    ObjectChanged = 2041,
    ObjectInUse = 2042,
    OptionNotValidForType = 2045,
    OptionsError = 2046,
    PriorityError = 2050,
    PutInhibited = 2051,
    QFull = 2053,
    QNotEmpty = 2055,
    QSpaceNotAvailable = 2056,
    QMgrNameError = 2058,
    QMgrNotAvailable = 2059,
    SecurityError = 2063,
    SelectorError = 2067,
    TruncatedMsgAccepted = 2079,
    TruncatedMsgFailed = 2080,
    UnknownAliasBaseQ = 2082,
    UnknownObjectName = 2085,
    UnknownRemoteQMgr = 2087,
    ObjectAlreadyExists = 2100,
    ObjectDamaged = 2101,
    ResourceProblem = 2102,
    ObjectNameError = 2152,
    QMgrQuiescing = 2161,
    QMgrStopping = 2162,
    UnexpectedError = 2195,
    ConnectionQuiescing = 2202,
    ConnectionStopping = 2203,
    MsgTooBigForChannel = 2218,
    FunctionNotSupported = 2298,
    KeyRepositoryError = 2381,
    SslInitializationError = 2393,
    RfhFormatError = 2421,
    TopicStringError = 2425,
    NoSubscription = 2428,
    SubscriptionInUse = 2429,
    SubAlreadyExists = 2432,
    PropertyNameError = 2442,
    SelectorSyntaxError = 2459,
    PropertyNameTooBig = 2465,
    PropertyValueTooBig = 2469,
    PropertyTypeError = 2473,
    PropertiesTooBig = 2478,
    PublicationFailure = 2502,
    SubInhibited = 2503,
    PubsubInhibited = 2531,
    ChannelNotAvailable = 2537,
    HostNotAvailable = 2538,
    UnknownChannelName = 2540,
    ReconnectFailed = 2548,
    CallInterrupted = 2549,
    /// A number this build does not name (a newer peer's): carried as it came, shown as
    /// `UNKNOWN`. [`ReasonCode::of`] makes it only for such a number.
    Other(u32),
}

impl ReasonCode {
    /// Every code, in numeric order.
    pub const ALL: [ReasonCode; 66] = [
        Self::AlreadyConnected,
        Self::BackedOut,
        Self::ConnectionBroken,
        Self::GetInhibited,
        Self::HconnError,
        Self::HobjError,
        Self::SyncpointLimitReached,
        Self::MsgTooBigForQ,
        Self::MsgTooBigForQMgr,
        Self::NoMsgAvailable,
        Self::HandleNotAvailable,
        Self::NotAuthorized,
        Self::NotOpenForBrowse,
        Self::NotOpenForInput,
        Self::NotOpenForInquire,
        Self::NotOpenForOutput,
        Self::ObjectChanged,
        Self::ObjectInUse,
        Self::OptionNotValidForType,
        Self::OptionsError,
        Self::PriorityError,
        Self::PutInhibited,
        Self::QFull,
        Self::QNotEmpty,
        Self::QSpaceNotAvailable,
        Self::QMgrNameError,
        Self::QMgrNotAvailable,
        Self::SecurityError,
        Self::SelectorError,
        Self::TruncatedMsgAccepted,
        Self::TruncatedMsgFailed,
        Self::UnknownAliasBaseQ,
        Self::UnknownObjectName,
        Self::UnknownRemoteQMgr,
        Self::ObjectAlreadyExists,
        Self::ObjectDamaged,
        Self::ResourceProblem,
        Self::ObjectNameError,
        Self::QMgrQuiescing,
        Self::QMgrStopping,
        Self::UnexpectedError,
        Self::ConnectionQuiescing,
        Self::ConnectionStopping,
        Self::MsgTooBigForChannel,
        Self::FunctionNotSupported,
        Self::KeyRepositoryError,
        Self::SslInitializationError,
        Self::RfhFormatError,
        Self::TopicStringError,
        Self::NoSubscription,
        Self::SubscriptionInUse,
        Self::SubAlreadyExists,
        Self::PropertyNameError,
        Self::SelectorSyntaxError,
        Self::PropertyNameTooBig,
        Self::PropertyValueTooBig,
        Self::PropertyTypeError,
        Self::PropertiesTooBig,
        Self::PublicationFailure,
        Self::SubInhibited,
        Self::PubsubInhibited,
        Self::ChannelNotAvailable,
        Self::HostNotAvailable,
        Self::UnknownChannelName,
        Self::ReconnectFailed,
        Self::CallInterrupted,
    ];

    /// The numeric code, as MQ numbers it.
    pub const fn code(self) -> u32 {
        match self {
            Self::AlreadyConnected => 2002,
            Self::BackedOut => 2003,
            Self::ConnectionBroken => 2009,
            Self::GetInhibited => 2016,
            Self::HandleNotAvailable => 2017,
            Self::HconnError => 2018,
            Self::HobjError => 2019,
            Self::SyncpointLimitReached => 2024,
            Self::MsgTooBigForQ => 2030,
            Self::MsgTooBigForQMgr => 2031,
            Self::NoMsgAvailable => 2033,
            Self::NotAuthorized => 2035,
            Self::NotOpenForBrowse => 2036,
            Self::NotOpenForInput => 2037,
            Self::NotOpenForInquire => 2038,
            Self::NotOpenForOutput => 2039,
            Self::ObjectChanged => 2041,
            Self::ObjectInUse => 2042,
            Self::OptionNotValidForType => 2045,
            Self::OptionsError => 2046,
            Self::PriorityError => 2050,
            Self::PutInhibited => 2051,
            Self::QFull => 2053,
            Self::QNotEmpty => 2055,
            Self::QSpaceNotAvailable => 2056,
            Self::QMgrNameError => 2058,
            Self::QMgrNotAvailable => 2059,
            Self::SecurityError => 2063,
            Self::SelectorError => 2067,
            Self::TruncatedMsgAccepted => 2079,
            Self::TruncatedMsgFailed => 2080,
            Self::UnknownAliasBaseQ => 2082,
            Self::UnknownObjectName => 2085,
            Self::UnknownRemoteQMgr => 2087,
            Self::ObjectAlreadyExists => 2100,
            Self::ObjectDamaged => 2101,
            Self::ResourceProblem => 2102,
            Self::ObjectNameError => 2152,
            Self::QMgrQuiescing => 2161,
            Self::QMgrStopping => 2162,
            Self::UnexpectedError => 2195,
            Self::ConnectionQuiescing => 2202,
            Self::ConnectionStopping => 2203,
            Self::MsgTooBigForChannel => 2218,
            Self::FunctionNotSupported => 2298,
            Self::KeyRepositoryError => 2381,
            Self::SslInitializationError => 2393,
            Self::RfhFormatError => 2421,
            Self::TopicStringError => 2425,
            Self::NoSubscription => 2428,
            Self::SubscriptionInUse => 2429,
            Self::SubAlreadyExists => 2432,
            Self::PropertyNameError => 2442,
            Self::SelectorSyntaxError => 2459,
            Self::PropertyNameTooBig => 2465,
            Self::PropertyValueTooBig => 2469,
            Self::PropertyTypeError => 2473,
            Self::PropertiesTooBig => 2478,
            Self::PublicationFailure => 2502,
            Self::SubInhibited => 2503,
            Self::PubsubInhibited => 2531,
            Self::ChannelNotAvailable => 2537,
            Self::HostNotAvailable => 2538,
            Self::UnknownChannelName => 2540,
            Self::ReconnectFailed => 2548,
            Self::CallInterrupted => 2549,
            Self::Other(n) => n,
        }
    }

    /// MQ's symbolic name without the `MQRC_` prefix.
    pub fn name(self) -> &'static str {
        match self {
            Self::AlreadyConnected => "ALREADY_CONNECTED",
            Self::BackedOut => "BACKED_OUT",
            Self::ConnectionBroken => "CONNECTION_BROKEN",
            Self::GetInhibited => "GET_INHIBITED",
            Self::HconnError => "HCONN_ERROR",
            Self::HobjError => "HOBJ_ERROR",
            Self::SyncpointLimitReached => "SYNCPOINT_LIMIT_REACHED",
            Self::MsgTooBigForQ => "MSG_TOO_BIG_FOR_Q",
            Self::MsgTooBigForQMgr => "MSG_TOO_BIG_FOR_Q_MGR",
            Self::NoMsgAvailable => "NO_MSG_AVAILABLE",
            Self::HandleNotAvailable => "HANDLE_NOT_AVAILABLE",
            Self::NotAuthorized => "NOT_AUTHORIZED",
            Self::NotOpenForBrowse => "NOT_OPEN_FOR_BROWSE",
            Self::NotOpenForInput => "NOT_OPEN_FOR_INPUT",
            Self::NotOpenForInquire => "NOT_OPEN_FOR_INQUIRE",
            Self::NotOpenForOutput => "NOT_OPEN_FOR_OUTPUT",
            Self::ObjectChanged => "OBJECT_CHANGED",
            Self::ObjectInUse => "OBJECT_IN_USE",
            Self::OptionNotValidForType => "OPTION_NOT_VALID_FOR_TYPE",
            Self::OptionsError => "OPTIONS_ERROR",
            Self::PriorityError => "PRIORITY_ERROR",
            Self::PutInhibited => "PUT_INHIBITED",
            Self::QFull => "Q_FULL",
            Self::QNotEmpty => "Q_NOT_EMPTY",
            Self::QSpaceNotAvailable => "Q_SPACE_NOT_AVAILABLE",
            Self::QMgrNameError => "Q_MGR_NAME_ERROR",
            Self::QMgrNotAvailable => "Q_MGR_NOT_AVAILABLE",
            Self::SecurityError => "SECURITY_ERROR",
            Self::SelectorError => "SELECTOR_ERROR",
            Self::TruncatedMsgAccepted => "TRUNCATED_MSG_ACCEPTED",
            Self::TruncatedMsgFailed => "TRUNCATED_MSG_FAILED",
            Self::UnknownAliasBaseQ => "UNKNOWN_ALIAS_BASE_Q",
            Self::UnknownObjectName => "UNKNOWN_OBJECT_NAME",
            Self::UnknownRemoteQMgr => "UNKNOWN_REMOTE_Q_MGR",
            Self::ObjectAlreadyExists => "OBJECT_ALREADY_EXISTS",
            Self::ObjectDamaged => "OBJECT_DAMAGED",
            Self::ResourceProblem => "RESOURCE_PROBLEM",
            Self::ObjectNameError => "OBJECT_NAME_ERROR",
            Self::QMgrQuiescing => "Q_MGR_QUIESCING",
            Self::QMgrStopping => "Q_MGR_STOPPING",
            Self::UnexpectedError => "UNEXPECTED_ERROR",
            Self::ConnectionQuiescing => "CONNECTION_QUIESCING",
            Self::ConnectionStopping => "CONNECTION_STOPPING",
            Self::MsgTooBigForChannel => "MSG_TOO_BIG_FOR_CHANNEL",
            Self::FunctionNotSupported => "FUNCTION_NOT_SUPPORTED",
            Self::KeyRepositoryError => "KEY_REPOSITORY_ERROR",
            Self::SslInitializationError => "SSL_INITIALIZATION_ERROR",
            Self::RfhFormatError => "RFH_FORMAT_ERROR",
            Self::TopicStringError => "TOPIC_STRING_ERROR",
            Self::NoSubscription => "NO_SUBSCRIPTION",
            Self::SubscriptionInUse => "SUBSCRIPTION_IN_USE",
            Self::SubAlreadyExists => "SUB_ALREADY_EXISTS",
            Self::PropertyNameError => "PROPERTY_NAME_ERROR",
            Self::SelectorSyntaxError => "SELECTOR_SYNTAX_ERROR",
            Self::PropertyNameTooBig => "PROPERTY_NAME_TOO_BIG",
            Self::PropertyValueTooBig => "PROPERTY_VALUE_TOO_BIG",
            Self::PropertyTypeError => "PROPERTY_TYPE_ERROR",
            Self::PropertiesTooBig => "PROPERTIES_TOO_BIG",
            Self::PublicationFailure => "PUBLICATION_FAILURE",
            Self::SubInhibited => "SUB_INHIBITED",
            Self::PubsubInhibited => "PUBSUB_INHIBITED",
            Self::ChannelNotAvailable => "CHANNEL_NOT_AVAILABLE",
            Self::HostNotAvailable => "HOST_NOT_AVAILABLE",
            Self::UnknownChannelName => "UNKNOWN_CHANNEL_NAME",
            Self::ReconnectFailed => "RECONNECT_FAILED",
            Self::CallInterrupted => "CALL_INTERRUPTED",
            Self::Other(_) => "UNKNOWN",
        }
    }

    /// The code for a number, if it is one of ours.
    pub fn from_code(code: u32) -> Option<Self> {
        Self::ALL.into_iter().find(|r| r.code() == code)
    }

    /// The code for any number: ours by name, another as [`ReasonCode::Other`] (what a client
    /// makes of the reason in a queue manager's answer).
    pub fn of(code: u32) -> Self {
        Self::from_code(code).unwrap_or(Self::Other(code))
    }
}

impl fmt::Display for ReasonCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.code(), self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_mqs_and_unique() {
        assert_eq!(ReasonCode::SecurityError.code(), 2063);
        assert_eq!(ReasonCode::NoMsgAvailable.code(), 2033);
        assert_eq!(ReasonCode::SslInitializationError.code(), 2393);
        let mut codes: Vec<u32> = ReasonCode::ALL.iter().map(|r| r.code()).collect();
        let n = codes.len();
        codes.sort_unstable();
        codes.dedup();
        assert_eq!(codes.len(), n, "a reason code is used twice");
        for r in ReasonCode::ALL {
            assert_eq!(ReasonCode::from_code(r.code()), Some(r));
        }
        assert_eq!(ReasonCode::from_code(1), None);
        assert_eq!(ReasonCode::of(2033), ReasonCode::NoMsgAvailable);
        assert_eq!(ReasonCode::of(2999), ReasonCode::Other(2999));
        assert_eq!(ReasonCode::Other(2999).code(), 2999);
        assert_eq!(ReasonCode::Other(2999).to_string(), "2999 (UNKNOWN)");
    }

    #[test]
    fn display_names_code_and_name() {
        assert_eq!(
            ReasonCode::SecurityError.to_string(),
            "2063 (SECURITY_ERROR)"
        );
    }
}

//! Attributes MQ defines that sealmq accepts, keeps and shows, but that have no mechanism
//! here (cluster workload weights, event switches, exits left blank, ...): an administrator's
//! script runs unchanged, DISPLAY shows what was set, and `sealmq dump` gives it back. Which
//! ones they are is the MQSC layer's list (docs/administration.md, "Accepted without effect").

use std::collections::BTreeMap;

/// Keyword → value as given (a keyword without a value, such as `NOHARDENBO`, has an empty
/// value). Ordered, so that a definition encodes the same way every time (a map of text:
/// `sealmq_types::codec::Field`).
pub type Noted = BTreeMap<String, String>;

/// A noted attribute that MQ keeps as a number (MAXHANDS, MSGCACHE, ...), if it is set to one.
pub fn num<T: std::str::FromStr>(n: &Noted, key: &str) -> Option<T> {
    n.get(key).and_then(|v| v.trim().parse().ok())
}

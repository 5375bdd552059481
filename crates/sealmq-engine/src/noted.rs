//! Attributes MQ defines that sealmq accepts, keeps and shows, but that have no mechanism
//! here (cluster workload weights, event switches, exits left blank, ...): an administrator's
//! script runs unchanged, DISPLAY shows what was set, and `sealmq dump` gives it back. Which
//! ones they are is the MQSC layer's list (docs/administration.md, "Accepted without effect").

use sealmq_storage::codec::Result;
use sealmq_storage::codec::{Dec, Enc};
use std::collections::BTreeMap;

/// Keyword → value as given (a keyword without a value, such as `NOHARDENBO`, has an empty
/// value). Ordered, so that a definition encodes the same way every time.
pub type Noted = BTreeMap<String, String>;

/// A noted attribute that MQ keeps as a number (MAXHANDS, MSGCACHE, ...), if it is set to one.
pub fn num<T: std::str::FromStr>(n: &Noted, key: &str) -> Option<T> {
    n.get(key).and_then(|v| v.trim().parse().ok())
}

pub fn encode(e: &mut Enc, n: &Noted) {
    e.u32(n.len() as u32);
    for (k, v) in n {
        e.str(k).str(v);
    }
}

pub fn decode(d: &mut Dec<'_>) -> Result<Noted> {
    let count = d.u32()?;
    let mut n = Noted::new();
    for _ in 0..count {
        let k = d.str()?;
        let v = d.str()?;
        n.insert(k, v);
    }
    Ok(n)
}

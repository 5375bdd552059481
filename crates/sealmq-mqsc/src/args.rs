//! What every MQSC command file shares and nothing else: a command's failure ([`Fail`]) and
//! the helpers that read an attribute's value (one value, a number in a range, one of a set of
//! choices, text), refuse keywords a command does not take, and match generic names. A leaf:
//! it uses no other command module, so each command file and the dispatcher (`exec`) use it
//! without a cycle.

use crate::parse::{Attr, Command};
use sealmq_engine::MqError;
use sealmq_types::ReasonCode;

/// One object in a DISPLAY response: `KEYWORD(value)` pairs in order.
pub type Block = Vec<(String, String)>;

pub(crate) struct Fail {
    pub(crate) at: Option<usize>,
    pub(crate) reason: Option<ReasonCode>,
    pub(crate) message: String,
}

impl From<MqError> for Fail {
    fn from(e: MqError) -> Self {
        Fail {
            at: None,
            reason: Some(e.reason),
            message: e.detail,
        }
    }
}

pub(crate) fn bad(a: &Attr, msg: impl Into<String>) -> Fail {
    Fail {
        at: Some(a.at),
        reason: None,
        message: format!("{}: {}", a.key, msg.into()),
    }
}

pub(crate) fn one(a: &Attr) -> Result<&str, Fail> {
    match a.values.as_slice() {
        [v] => Ok(v),
        _ => Err(bad(a, "expects one value in parentheses")),
    }
}

pub(crate) fn num(a: &Attr, min: u64, max: u64) -> Result<u32, Fail> {
    let v = one(a)?;
    match v.parse::<u64>() {
        Ok(n) if (min..=max).contains(&n) => Ok(n as u32),
        _ => Err(bad(a, format!("'{v}' is not a number in {min}..{max}"))),
    }
}

pub(crate) fn choice<'a>(a: &Attr, options: &[&'a str]) -> Result<&'a str, Fail> {
    let v = one(a)?;
    options
        .iter()
        .find(|o| o.eq_ignore_ascii_case(v))
        .copied()
        .ok_or_else(|| bad(a, format!("'{v}' is not one of {}", options.join(", "))))
}

pub(crate) fn onoff(b: bool) -> String {
    if b { "ENABLED" } else { "DISABLED" }.to_string()
}

/// `APP.*` matches names starting with `APP.`; `*` matches all.
pub(crate) fn generic_match(pattern: &str, name: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => pattern == name,
    }
}

/// Refuses the first keyword of `c` that is not one of `keys` (separated by blanks), as not
/// `what`.
pub(crate) fn only_keywords(c: &Command, keys: &str, what: &str) -> Result<(), Fail> {
    match c
        .attrs
        .iter()
        .find(|a| !keys.split_whitespace().any(|k| k == a.key))
    {
        Some(a) => Err(bad(a, format!("is not {what}"))),
        None => Ok(()),
    }
}

/// A text attribute's value, trimmed; MQ's blank (`' '`) and an absent value are empty.
pub(crate) fn text(a: &Attr) -> String {
    a.values
        .first()
        .map(|v| v.trim().to_string())
        .unwrap_or_default()
}

/// Fails naming every keyword in `unknown` (a command with several wrong keywords says so at
/// once); `kind` is what they are not: "channel attribute" gives "X is not a channel
/// attribute" or "X, Y are not channel attributes".
pub(crate) fn unknown_keywords(unknown: &[&Attr], kind: &str) -> Result<(), Fail> {
    match unknown {
        [] => Ok(()),
        [a] => {
            let article = if kind.starts_with(['A', 'E', 'I', 'O', 'U', 'a', 'e', 'i', 'o', 'u']) {
                "an"
            } else {
                "a"
            };
            Err(Fail {
                at: Some(a.at),
                reason: None,
                message: format!("{} is not {article} {kind}", a.key),
            })
        }
        many => Err(Fail {
            at: Some(many[0].at),
            reason: None,
            message: format!(
                "{} are not {kind}s",
                many.iter()
                    .map(|a| a.key.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }),
    }
}

/// A DISPLAY of a specific (non-generic) name that found nothing is an error (2085).
pub(crate) fn none_matched<T>(blocks: &[T], what: &str, name: &str) -> Result<(), Fail> {
    if blocks.is_empty() && !name.contains('*') {
        return Err(Fail {
            at: None,
            reason: Some(ReasonCode::UnknownObjectName),
            message: format!("no {what} matches '{name}'"),
        });
    }
    Ok(())
}

/// A named object that is not there (2085).
pub(crate) fn not_defined(what: &str, name: &str) -> Fail {
    Fail {
        at: None,
        reason: Some(ReasonCode::UnknownObjectName),
        message: format!("{what} '{name}' is not defined"),
    }
}

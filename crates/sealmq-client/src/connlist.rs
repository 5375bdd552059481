//! A connection name list (MQ's CONNAME list, issue 26): the addresses of a queue manager's
//! instances, tried in order until one serves. `h1:p1,h2:p2,h3:p3` and MQ's
//! `h1(p1),h2(p2),h3(p3)` are both read.
//!
//! An address that cannot be reached, or whose queue manager is not available there (2059:
//! a replica of a replicated queue manager answers so, naming the active instance; 2538;
//! 2009; 2393, a TLS handshake that failed — a replica answers a TLS client in clear), is
//! passed over for the next. Any other refusal (2035 not authorized, a channel error) ends
//! the attempt at once, as MQ's client does: every instance would refuse it the same way.

use crate::{Client, ClientError, Result};
use sealmq_types::ReasonCode;

/// The most addresses a list may name.
pub const MAX_ADDRESSES: usize = 16;

/// The addresses of a list, as `HOST:PORT`.
pub fn parse(spec: &str) -> std::result::Result<Vec<String>, String> {
    let mut out = Vec::new();
    // Split on commas outside parentheses (MQ's form has none inside, but be strict).
    for part in spec.split(',').map(str::trim) {
        if part.is_empty() {
            return Err(format!("connection list '{spec}': an empty address"));
        }
        let addr = match part.split_once('(') {
            Some((host, rest)) => {
                let Some(port) = rest.strip_suffix(')') else {
                    return Err(format!("'{part}' is not host(port)"));
                };
                format!("{}:{}", host.trim(), port.trim())
            }
            None => part.to_string(),
        };
        let ok = addr.rsplit_once(':').is_some_and(|(h, p)| {
            !h.is_empty() && !h.contains(['(', ')', ' ']) && p.parse::<u16>().is_ok_and(|p| p > 0)
        });
        if !ok {
            return Err(format!(
                "'{part}' is not host:port or host(port) (in the connection list '{spec}')"
            ));
        }
        out.push(addr);
    }
    if out.len() > MAX_ADDRESSES {
        return Err(format!(
            "the connection list names {} addresses; at most {MAX_ADDRESSES}",
            out.len()
        ));
    }
    Ok(out)
}

/// Whether a failed connection should go on to the next address of a list.
pub fn try_next(e: &ClientError) -> bool {
    [
        ReasonCode::QMgrNotAvailable,
        ReasonCode::HostNotAvailable,
        ReasonCode::ConnectionBroken,
        ReasonCode::SslInitializationError,
    ]
    .contains(&e.reason)
}

impl Client {
    /// Connects to the first address of `spec` that serves, with `connect` (plain TCP, TLS,
    /// a channel, credentials: the caller's choice). When none does, the reason is the last
    /// address's, as MQ gives for a CONNAME list (a single address's TLS handshake that fails
    /// is 2393, one that cannot be reached 2059), and the detail says what every one answered.
    pub fn connect_first(
        spec: &str,
        mut connect: impl FnMut(&str) -> Result<Client>,
    ) -> Result<Client> {
        let addrs = parse(spec).map_err(|detail| ClientError {
            reason: ReasonCode::HostNotAvailable,
            detail,
        })?;
        let mut said = Vec::new();
        let mut reason = ReasonCode::QMgrNotAvailable;
        for a in &addrs {
            match connect(a) {
                Ok(c) => return Ok(c),
                Err(e) if try_next(&e) => {
                    reason = e.reason;
                    said.push(format!("{a}: {}", e.detail));
                }
                Err(e) => return Err(e),
            }
        }
        Err(ClientError {
            reason,
            detail: format!("no address of the list serves ({})", said.join("; ")),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_forms_are_read_and_bad_ones_refused() {
        assert_eq!(
            parse("h1:1414, h2(1415),10.0.0.3(1416)").unwrap(),
            vec!["h1:1414", "h2:1415", "10.0.0.3:1416"]
        );
        for bad in [
            "",
            "h1",
            "h1:0",
            "h1(1414",
            "h1:1414,,h2:1",
            "(1414)",
            "h 1:1",
            "h1:x",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
        let many = vec!["h:1"; MAX_ADDRESSES + 1].join(",");
        assert!(parse(&many).is_err());
    }

    #[test]
    fn the_reason_is_the_last_addresss() {
        let tls = |_: &str| -> Result<Client> {
            Err(ClientError {
                reason: sealmq_types::ReasonCode::SslInitializationError,
                detail: "TLS handshake failed".into(),
            })
        };
        let r = Client::connect_first("a:1", tls)
            .err()
            .map(|e| e.reason.code());
        assert_eq!(r, Some(2393), "one address: its own reason");
        let mut n = 0;
        let r = Client::connect_first("a:1,b:2", |a| {
            n += 1;
            if a == "a:1" {
                tls(a)
            } else {
                Err(ClientError {
                    reason: sealmq_types::ReasonCode::QMgrNotAvailable,
                    detail: "refused".into(),
                })
            }
        });
        assert_eq!((r.err().map(|e| e.reason.code()), n), (Some(2059), 2));
    }

    #[test]
    fn a_refusal_that_every_instance_would_give_ends_the_attempt() {
        let mut tried = Vec::new();
        let r = Client::connect_first("a:1,b:2,c:3", |a| {
            tried.push(a.to_string());
            Err(ClientError {
                reason: if a == "b:2" {
                    sealmq_types::ReasonCode::NotAuthorized
                } else {
                    sealmq_types::ReasonCode::QMgrNotAvailable
                },
                detail: "no".into(),
            })
        });
        assert_eq!(
            r.err().map(|e| e.reason),
            Some(sealmq_types::ReasonCode::NotAuthorized)
        );
        assert_eq!(tried, vec!["a:1", "b:2"]);
    }

    proptest::proptest! {
        #[test]
        fn any_list_is_read_or_refused_without_panic(s in ".{0,120}") {
            let _ = parse(&s);
        }
    }
}

//! Object authority (SPEC §3): records granting operations to principals on objects named
//! exactly or by a generic profile (`*` matches any characters). The most specific matching
//! profile of a principal decides; without one the call fails with 2035. The administrator (the
//! queue manager's own user) may do everything.

use sealmq_storage::Result;
use sealmq_storage::codec::{Dec, Enc};

/// Authorities, as MQ names them.
pub mod auth {
    pub const CONNECT: u32 = 1;
    pub const PUT: u32 = 2;
    pub const GET: u32 = 4;
    pub const BROWSE: u32 = 8;
    pub const INQ: u32 = 16;
    pub const SET: u32 = 32;
    pub const CHG: u32 = 64;
    pub const DLT: u32 = 128;
    pub const DSP: u32 = 256;
    pub const ALL: u32 = 511;

    pub const NAMES: [(&str, u32); 9] = [
        ("CONNECT", CONNECT),
        ("PUT", PUT),
        ("GET", GET),
        ("BROWSE", BROWSE),
        ("INQ", INQ),
        ("SET", SET),
        ("CHG", CHG),
        ("DLT", DLT),
        ("DSP", DSP),
    ];

    /// Parses an authority name (`ALL` and `NONE` too).
    pub fn parse(s: &str) -> Option<u32> {
        match s.to_ascii_uppercase().as_str() {
            "ALL" => Some(ALL),
            "NONE" => Some(0),
            n => NAMES.iter().find(|(k, _)| *k == n).map(|(_, v)| *v),
        }
    }

    pub fn names(bits: u32) -> Vec<&'static str> {
        if bits == 0 {
            return vec!["NONE"];
        }
        NAMES
            .iter()
            .filter(|(_, v)| bits & v != 0)
            .map(|(k, _)| *k)
            .collect()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AuthObj {
    Queue,
    Qmgr,
}

impl AuthObj {
    pub fn name(self) -> &'static str {
        match self {
            AuthObj::Queue => "QUEUE",
            AuthObj::Qmgr => "QMGR",
        }
    }
}

/// One authority record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthRec {
    pub profile: String,
    pub objtype: AuthObj,
    pub principal: String,
    pub auths: u32,
}

impl AuthRec {
    pub fn encode(&self, e: &mut Enc) {
        e.str(&self.profile)
            .u8(matches!(self.objtype, AuthObj::Qmgr) as u8)
            .str(&self.principal)
            .u32(self.auths);
    }

    pub fn decode(d: &mut Dec<'_>) -> Result<AuthRec> {
        Ok(AuthRec {
            profile: d.str()?,
            objtype: if d.u8()? == 1 {
                AuthObj::Qmgr
            } else {
                AuthObj::Queue
            },
            principal: d.str()?,
            auths: d.u32()?,
        })
    }
}

/// Whether a generic profile matches a name (`*` any characters).
pub fn profile_matches(profile: &str, name: &str) -> bool {
    fn go(p: &[u8], n: &[u8]) -> bool {
        match p.split_first() {
            None => n.is_empty(),
            Some((b'*', rest)) => (0..=n.len()).any(|i| go(rest, &n[i..])),
            Some((c, rest)) => n.first() == Some(c) && go(rest, &n[1..]),
        }
    }
    go(profile.as_bytes(), name.as_bytes())
}

/// Specificity: exact profiles first, then longer ones with fewer wildcards.
fn specificity(profile: &str) -> (bool, usize, usize) {
    let stars = profile.matches('*').count();
    (stars == 0, profile.len() - stars, usize::MAX - stars)
}

/// The authorities `principal` has on `name` from `recs`.
pub fn authorities(recs: &[AuthRec], objtype: AuthObj, name: &str, principal: &str) -> u32 {
    recs.iter()
        .filter(|r| {
            r.objtype == objtype && r.principal == principal && profile_matches(&r.profile, name)
        })
        .max_by_key(|r| specificity(&r.profile))
        .map(|r| r.auths)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generic_profiles_and_most_specific_wins() {
        assert!(profile_matches("APP.*", "APP.ORDERS"));
        assert!(profile_matches("*", "X"));
        assert!(profile_matches("A*.Q", "ABC.Q"));
        assert!(!profile_matches("APP.*", "OTHER"));
        let recs = vec![
            AuthRec {
                profile: "APP.*".into(),
                objtype: AuthObj::Queue,
                principal: "alice".into(),
                auths: auth::PUT | auth::GET,
            },
            AuthRec {
                profile: "APP.SECRET".into(),
                objtype: AuthObj::Queue,
                principal: "alice".into(),
                auths: auth::BROWSE,
            },
        ];
        assert_eq!(
            authorities(&recs, AuthObj::Queue, "APP.ORDERS", "alice"),
            auth::PUT | auth::GET
        );
        assert_eq!(
            authorities(&recs, AuthObj::Queue, "APP.SECRET", "alice"),
            auth::BROWSE
        );
        assert_eq!(authorities(&recs, AuthObj::Queue, "APP.ORDERS", "bob"), 0);
        assert_eq!(auth::parse("put"), Some(auth::PUT));
        assert_eq!(auth::names(auth::PUT | auth::GET), vec!["PUT", "GET"]);
    }
}

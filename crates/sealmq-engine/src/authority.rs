//! Object authority (SPEC §3): records granting operations to principals on objects named
//! exactly or by a generic profile (`*` matches any characters). The most specific matching
//! profile of a principal decides; without one the call fails with 2035. The administrator (the
//! queue manager's own user) may do everything.

use sealmq_storage::codec::Result;
use sealmq_storage::codec::{Dec, Enc};
use sealmq_types::named_enum;

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
    pub const ALTUSR: u32 = 1 << 9;
    pub const PASSID: u32 = 1 << 10;
    pub const PASSALL: u32 = 1 << 11;
    pub const SETID: u32 = 1 << 12;
    pub const SETALL: u32 = 1 << 13;
    pub const CTRL: u32 = 1 << 14;
    pub const CTRLX: u32 = 1 << 15;
    pub const CLR: u32 = 1 << 16;
    pub const CRT: u32 = 1 << 17;
    /// Topics (issue 28): publish, subscribe, resume a durable subscription.
    pub const PUB: u32 = 1 << 18;
    pub const SUB: u32 = 1 << 19;
    pub const RESUME: u32 = 1 << 20;
    /// Every authority (records written before the MQI context authorities existed hold 511,
    /// and before topics 2^18 - 1, which still grant everything they granted then).
    pub const ALL: u32 = (1 << 21) - 1;
    /// MQ's ALLADM: the administration authorities.
    pub const ALLADM: u32 = CHG | CLR | DLT | DSP | CTRL | CTRLX;
    /// MQ's ALLMQI: every authority an application's MQI calls use.
    pub const ALLMQI: u32 = ALTUSR
        | BROWSE
        | CONNECT
        | GET
        | INQ
        | PUT
        | PASSALL
        | PASSID
        | SETALL
        | SETID
        | SET
        | PUB
        | SUB
        | RESUME;

    pub const NAMES: [(&str, u32); 21] = [
        ("CONNECT", CONNECT),
        ("PUT", PUT),
        ("GET", GET),
        ("BROWSE", BROWSE),
        ("INQ", INQ),
        ("SET", SET),
        ("CHG", CHG),
        ("DLT", DLT),
        ("DSP", DSP),
        ("ALTUSR", ALTUSR),
        ("PASSID", PASSID),
        ("PASSALL", PASSALL),
        ("SETID", SETID),
        ("SETALL", SETALL),
        ("CTRL", CTRL),
        ("CTRLX", CTRLX),
        ("CLR", CLR),
        ("CRT", CRT),
        ("PUB", PUB),
        ("SUB", SUB),
        ("RESUME", RESUME),
    ];

    /// Parses an authority name (`ALL`, `ALLADM`, `ALLMQI` and `NONE` too).
    pub fn parse(s: &str) -> Option<u32> {
        match s.to_ascii_uppercase().as_str() {
            "ALL" => Some(ALL),
            "ALLADM" => Some(ALLADM),
            "ALLMQI" => Some(ALLMQI),
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

named_enum! {
    pub enum AuthObj("OBJTYPE") {
        Queue = 0 "QUEUE", Qmgr = 1 "QMGR", Channel = 2 "CHANNEL", AuthInfo = 3 "AUTHINFO",
        Topic = 4 "TOPIC"
    }
}

/// Set in the object-type byte of a record that names a group rather than a user.
const GROUP_FLAG: u8 = 0x80;

/// One authority record: for a user principal, or (MQ's GROUP) for every member of an OS group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthRec {
    pub profile: String,
    pub objtype: AuthObj,
    pub principal: String,
    pub auths: u32,
    /// `principal` names an operating-system group.
    pub group: bool,
}

impl AuthRec {
    pub fn encode(&self, e: &mut Enc) {
        e.str(&self.profile)
            .u8(self.objtype.byte() | if self.group { GROUP_FLAG } else { 0 })
            .str(&self.principal)
            .u32(self.auths);
    }

    pub fn decode(d: &mut Dec<'_>) -> Result<AuthRec> {
        let profile = d.str()?;
        let t = d.u8()?;
        let objtype = AuthObj::from_byte(t & !GROUP_FLAG)
            .ok_or_else(|| d.error(&format!("unknown object type {}", t & !GROUP_FLAG)))?;
        Ok(AuthRec {
            profile,
            objtype,
            principal: d.str()?,
            auths: d.u32()?,
            group: t & GROUP_FLAG != 0,
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

/// The authorities of one principal (user or group) from its most specific matching profile.
fn of_one(recs: &[AuthRec], objtype: AuthObj, name: &str, principal: &str, group: bool) -> u32 {
    recs.iter()
        .filter(|r| {
            r.objtype == objtype
                && r.group == group
                && r.principal == principal
                && profile_matches(&r.profile, name)
        })
        .max_by_key(|r| specificity(&r.profile))
        .map(|r| r.auths)
        .unwrap_or(0)
}

/// The authorities `principal` has on `name` from `recs`: its own most specific profile,
/// united with the most specific profile of each group in `groups` (as MQ unites a user's
/// groups).
pub fn authorities_with_groups(
    recs: &[AuthRec],
    objtype: AuthObj,
    name: &str,
    principal: &str,
    groups: &[String],
) -> u32 {
    groups
        .iter()
        .fold(of_one(recs, objtype, name, principal, false), |acc, g| {
            acc | of_one(recs, objtype, name, g, true)
        })
}

/// The authorities `principal` (a user, no groups) has on `name` from `recs`.
pub fn authorities(recs: &[AuthRec], objtype: AuthObj, name: &str, principal: &str) -> u32 {
    authorities_with_groups(recs, objtype, name, principal, &[])
}

/// The operating-system groups of user `user`: its primary group (from the passwd database)
/// and every group listing it as a member. Empty for principals that are not OS users (a
/// certificate DN, `tcp`).
pub fn os_groups(user: &str) -> Vec<String> {
    os_groups_from(
        &std::fs::read_to_string("/etc/passwd").unwrap_or_default(),
        &std::fs::read_to_string("/etc/group").unwrap_or_default(),
        user,
    )
}

fn os_groups_from(passwd: &str, group: &str, user: &str) -> Vec<String> {
    if user.is_empty() || user.contains(['=', ',', ':', ' ']) {
        return Vec::new();
    }
    let primary_gid = passwd.lines().find_map(|l| {
        let f: Vec<&str> = l.split(':').collect();
        (f.len() > 3 && f[0] == user).then(|| f[3].to_string())
    });
    let mut out = Vec::new();
    for l in group.lines() {
        let f: Vec<&str> = l.split(':').collect();
        if f.len() < 4 {
            continue;
        }
        let member = f[3].split(',').any(|m| m.trim() == user);
        if member || primary_gid.as_deref() == Some(f[2]) {
            out.push(f[0].to_string());
        }
    }
    out
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
                group: false,
            },
            AuthRec {
                profile: "APP.SECRET".into(),
                objtype: AuthObj::Queue,
                principal: "alice".into(),
                auths: auth::BROWSE,
                group: false,
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

    #[test]
    fn groups_unite_and_names_read_as_mq_writes_them() {
        let passwd = "root:x:0:0::/root:/bin/sh\nalice:x:1000:1000::/home/alice:/bin/sh\n";
        let group = "root:x:0:\nalice:x:1000:\nmqapps:x:2000:bob,alice\nother:x:3000:bob\n";
        assert_eq!(
            os_groups_from(passwd, group, "alice"),
            vec!["alice", "mqapps"]
        );
        assert!(os_groups_from(passwd, group, "CN=x,O=y").is_empty());
        let recs = vec![
            AuthRec {
                profile: "APP.*".into(),
                objtype: AuthObj::Queue,
                principal: "mqapps".into(),
                auths: auth::PUT,
                group: true,
            },
            AuthRec {
                profile: "APP.Q".into(),
                objtype: AuthObj::Queue,
                principal: "alice".into(),
                auths: auth::GET,
                group: false,
            },
        ];
        let groups = vec!["alice".to_string(), "mqapps".to_string()];
        assert_eq!(
            authorities_with_groups(&recs, AuthObj::Queue, "APP.Q", "alice", &groups),
            auth::PUT | auth::GET
        );
        // A user record does not stand for a group of the same name, nor the reverse.
        assert_eq!(authorities(&recs, AuthObj::Queue, "APP.Q", "mqapps"), 0);
        assert_eq!(auth::parse("ALLMQI").unwrap() & auth::CTRL, 0);
        assert_ne!(auth::parse("ALLADM").unwrap() & auth::CTRL, 0);
        assert_eq!(auth::parse("passall"), Some(auth::PASSALL));
        let mut e = Enc::new();
        recs[0].encode(&mut e);
        assert_eq!(
            AuthRec::decode(&mut Dec::new(&e.buf, "a")).unwrap(),
            recs[0]
        );
    }
}

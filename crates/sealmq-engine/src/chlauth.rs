//! Channel authentication records (MQ's CHLAUTH): which partners may start which inbound
//! channels, and as whom their messages run. Applied when a SVRCONN, RCVR or SVR channel
//! instance starts on an inbound connection; `ALTER QMGR CHLAUTH(DISABLED)` turns them off.
//!
//! How a partner is judged (docs/security.md has the table):
//! 1. BLOCKADDR: an address in any ADDRLIST is refused before anything else.
//! 2. The mapping rules (SSLPEERMAP, USERMAP, QMGRMAP, ADDRESSMAP) whose channel profile and
//!    identity match the partner are ranked: the most specific channel profile first; then by
//!    type, SSLPEERMAP before USERMAP and QMGRMAP before ADDRESSMAP (an identity outranks an
//!    address); then the most specific identity pattern; then a rule whose ADDRESS filter
//!    matched before one without. The first decides: USERSRC(MAP) runs the channel as its
//!    MCAUSER, USERSRC(CHANNEL) as the channel would have run, USERSRC(NOACCESS) refuses.
//! 3. BLOCKUSER: the rule of the most specific profile matching the channel is checked against
//!    the user the channel will run as; `*MQADMIN` stands for the queue manager's own user.
//!
//! A rule with WARN(YES) that would refuse only reports it; the channel runs.

use crate::authority::profile_matches;
use crate::error::{MqResult, mqerr};
use sealmq_storage::codec::{Dec, Enc, Field, Result};
use sealmq_types::named_enum;

named_enum! {
    #[derive(PartialOrd, Ord)]
    pub enum RuleType("CHLAUTH TYPE") {
        BlockUser = 0 "BLOCKUSER", BlockAddr = 1 "BLOCKADDR", SslPeerMap = 2 "SSLPEERMAP",
        UserMap = 3 "USERMAP", QmgrMap = 4 "QMGRMAP", AddressMap = 5 "ADDRESSMAP"
    }
}

impl RuleType {
    pub fn is_block(self) -> bool {
        matches!(self, RuleType::BlockUser | RuleType::BlockAddr)
    }

    /// Rank among mapping rules of equally specific profiles (lower decides first).
    fn rank(self) -> u8 {
        match self {
            RuleType::SslPeerMap => 0,
            RuleType::UserMap | RuleType::QmgrMap => 1,
            _ => 2,
        }
    }
}

named_enum! {
    /// USERSRC: where a matched mapping rule takes the channel's user from.
    pub enum UserSrc("CHLAUTH USERSRC") {
        Map = 0 "MAP", NoAccess = 1 "NOACCESS", Channel = 2 "CHANNEL"
    }
    /// CHCKCLNT on a mapping rule: how the connection-authentication setting of the queue
    /// manager is tightened for the partners the rule matches.
    pub enum ChckClnt("CHLAUTH CHCKCLNT") {
        AsQmgr = 0 "ASQMGR", Required = 1 "REQUIRED", ReqdAdm = 2 "REQDADM"
    }
}

/// One channel authentication record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChlAuthRec {
    /// Channel profile (generic: `*` anywhere).
    pub profile: String,
    pub rtype: RuleType,
    /// BLOCKUSER: user names (`*MQADMIN`: the queue manager's own user).
    pub userlist: Vec<String>,
    /// BLOCKADDR: address patterns.
    pub addrlist: Vec<String>,
    /// Mapping rules: the partner's address filter (mandatory for ADDRESSMAP).
    pub address: String,
    pub sslpeer: String,
    pub clntuser: String,
    pub qmname: String,
    pub usersrc: UserSrc,
    pub mcauser: String,
    pub chckclnt: ChckClnt,
    pub warn: bool,
    pub descr: String,
}

impl ChlAuthRec {
    pub fn new(profile: &str, rtype: RuleType) -> ChlAuthRec {
        ChlAuthRec {
            profile: profile.to_string(),
            rtype,
            userlist: Vec::new(),
            addrlist: Vec::new(),
            address: String::new(),
            sslpeer: String::new(),
            clntuser: String::new(),
            qmname: String::new(),
            usersrc: UserSrc::Map,
            mcauser: String::new(),
            chckclnt: ChckClnt::AsQmgr,
            warn: false,
            descr: String::new(),
        }
    }

    /// What identifies a record: a second record with the same key replaces it.
    pub fn key(&self) -> (RuleType, String, String, String) {
        let ident = match self.rtype {
            RuleType::SslPeerMap => self.sslpeer.to_ascii_uppercase(),
            RuleType::UserMap => self.clntuser.clone(),
            RuleType::QmgrMap => self.qmname.clone(),
            _ => String::new(),
        };
        let addr = if self.rtype.is_block() {
            String::new()
        } else {
            self.address.clone()
        };
        (self.rtype, self.profile.clone(), ident, addr)
    }

    /// The checks SET CHLAUTH makes before anything is stored.
    pub fn validate(&self) -> MqResult<()> {
        validate_pattern("channel profile", &self.profile, 20)?;
        match self.rtype {
            RuleType::BlockAddr if self.profile != "*" => {
                return mqerr!(
                    OptionsError,
                    "TYPE(BLOCKADDR) applies to every channel: the profile must be '*'"
                );
            }
            _ => {}
        }
        // The attribute that identifies the partners of each type.
        let (needed, missing) = match self.rtype {
            RuleType::BlockAddr => ("ADDRLIST", self.addrlist.is_empty()),
            RuleType::BlockUser => ("USERLIST", self.userlist.is_empty()),
            RuleType::AddressMap => ("ADDRESS", self.address.is_empty()),
            RuleType::SslPeerMap => ("SSLPEER", self.sslpeer.is_empty()),
            RuleType::UserMap => ("CLNTUSER", self.clntuser.is_empty()),
            RuleType::QmgrMap => ("QMNAME", self.qmname.is_empty()),
        };
        if missing {
            return mqerr!(OptionsError, "TYPE({}) needs {needed}", self.rtype.name());
        }
        if !self.rtype.is_block() && self.usersrc == UserSrc::Map && self.mcauser.is_empty() {
            return mqerr!(
                OptionsError,
                "USERSRC(MAP) needs MCAUSER (or USERSRC(CHANNEL) or USERSRC(NOACCESS))"
            );
        }
        for a in self
            .addrlist
            .iter()
            .chain(std::iter::once(&self.address).filter(|a| !a.is_empty()))
        {
            validate_address(a)?;
        }
        for u in &self.userlist {
            validate_pattern("USERLIST entry", u, 1024)?;
        }
        if self.userlist.len() > 100 || self.addrlist.len() > 100 {
            return mqerr!(OptionsError, "a list holds at most 100 entries");
        }
        for (what, v, max) in [
            ("SSLPEER", &self.sslpeer, 1024),
            ("CLNTUSER", &self.clntuser, 1024),
            ("QMNAME", &self.qmname, 48),
            ("MCAUSER", &self.mcauser, 1024),
            ("DESCR", &self.descr, 64),
        ] {
            if v.len() > max || v.chars().any(|c| c.is_control()) {
                return mqerr!(
                    OptionsError,
                    "{what} must be at most {max} printable characters"
                );
            }
        }
        Ok(())
    }

    pub fn encode(&self, e: &mut Enc) {
        e.u8(1) // record version
            .str(&self.profile)
            .u8(self.rtype.byte())
            .u32(self.userlist.len() as u32);
        for u in &self.userlist {
            e.str(u);
        }
        e.u32(self.addrlist.len() as u32);
        for a in &self.addrlist {
            e.str(a);
        }
        e.str(&self.address)
            .str(&self.sslpeer)
            .str(&self.clntuser)
            .str(&self.qmname);
        self.usersrc.put(e);
        e.str(&self.mcauser);
        self.chckclnt.put(e);
        e.bool(self.warn).str(&self.descr);
    }

    pub fn decode(d: &mut Dec<'_>) -> Result<ChlAuthRec> {
        let v = d.u8()?;
        if v != 1 {
            return Err(d.error(&format!("CHLAUTH record version {v} is not 1")));
        }
        let profile = d.str()?;
        let mut r = ChlAuthRec::new(&profile, Field::take(d)?);
        let n = d.u32()?.min(1000);
        for _ in 0..n {
            r.userlist.push(d.str()?);
        }
        let n = d.u32()?.min(1000);
        for _ in 0..n {
            r.addrlist.push(d.str()?);
        }
        r.address = d.str()?;
        r.sslpeer = d.str()?;
        r.clntuser = d.str()?;
        r.qmname = d.str()?;
        r.usersrc = Field::take(d)?;
        r.mcauser = d.str()?;
        r.chckclnt = Field::take(d)?;
        r.warn = d.bool()?;
        r.descr = d.str()?;
        Ok(r)
    }

    /// How the rule reads in a refusal: enough for an administrator to find it.
    pub fn describe(&self) -> String {
        let ident = match self.rtype {
            RuleType::BlockUser => format!(" USERLIST('{}')", self.userlist.join("','")),
            RuleType::BlockAddr => format!(" ADDRLIST('{}')", self.addrlist.join("','")),
            RuleType::SslPeerMap => format!(" SSLPEER('{}')", self.sslpeer),
            RuleType::UserMap => format!(" CLNTUSER('{}')", self.clntuser),
            RuleType::QmgrMap => format!(" QMNAME('{}')", self.qmname),
            RuleType::AddressMap => String::new(),
        };
        let addr = if self.address.is_empty() || self.rtype.is_block() {
            String::new()
        } else {
            format!(" ADDRESS('{}')", self.address)
        };
        format!(
            "CHLAUTH('{}') TYPE({}){ident}{addr}",
            self.profile,
            self.rtype.name()
        )
    }
}

fn validate_pattern(what: &str, p: &str, max: usize) -> MqResult<()> {
    if p.is_empty() || p.len() > max || p.chars().any(|c| c.is_control() || c == '\'') {
        return mqerr!(
            OptionsError,
            "{what} '{p}' must be 1-{max} printable characters without quotes"
        );
    }
    Ok(())
}

/// An address pattern: IPv4 with `*` for any part or range `a-b` in one part, an IPv6
/// address, or `*`.
fn validate_address(a: &str) -> MqResult<()> {
    if a == "*" || a.parse::<std::net::IpAddr>().is_ok() {
        return Ok(());
    }
    let parts: Vec<&str> = a.split('.').collect();
    let part_ok = |p: &str| {
        p == "*"
            || p.parse::<u8>().is_ok()
            || p.split_once('-').is_some_and(
                |(lo, hi)| matches!((lo.parse::<u8>(), hi.parse::<u8>()), (Ok(l), Ok(h)) if l <= h),
            )
    };
    if (1..=4).contains(&parts.len()) && parts.iter().all(|p| part_ok(p)) {
        let trailing_star = parts.len() == 4 || parts.last() == Some(&"*");
        if trailing_star {
            return Ok(());
        }
    }
    mqerr!(
        OptionsError,
        "address pattern '{a}' is not an IP address, '*', or an IPv4 pattern such as \
         '192.168.1.*' or '10.0.0.1-99'"
    )
}

/// Whether IP address `ip` matches address pattern `pat`.
pub fn address_matches(pat: &str, ip: &str) -> bool {
    if pat == "*" {
        return true;
    }
    if let (Ok(p), Ok(i)) = (
        pat.parse::<std::net::IpAddr>(),
        ip.parse::<std::net::IpAddr>(),
    ) {
        return p == i;
    }
    let ip_parts: Vec<&str> = ip.split('.').collect();
    if ip_parts.len() != 4 {
        return false;
    }
    let pat_parts: Vec<&str> = pat.split('.').collect();
    for (i, ipp) in ip_parts.iter().enumerate() {
        let Some(pp) = pat_parts.get(i) else {
            return false;
        };
        if *pp == "*" {
            if i + 1 == pat_parts.len() {
                return true; // a trailing `*` covers the rest
            }
            continue;
        }
        let Ok(v) = ipp.parse::<u8>() else {
            return false;
        };
        let ok = match pp.split_once('-') {
            Some((lo, hi)) => matches!((lo.parse::<u8>(), hi.parse::<u8>()),
                (Ok(l), Ok(h)) if l <= v && v <= h),
            None => pp.parse::<u8>() == Ok(v),
        };
        if !ok {
            return false;
        }
    }
    pat_parts.len() == 4
}

/// Specificity of a generic pattern: more literal characters, then fewer wildcards.
fn specificity(p: &str) -> (usize, usize) {
    let stars = p.matches('*').count();
    (p.len() - stars, usize::MAX - stars)
}

/// The partner asking to start an inbound channel.
#[derive(Debug, Clone, Default)]
pub struct Partner<'a> {
    pub channel: &'a str,
    /// SVRCONN (USERMAP applies) or a message channel (QMGRMAP applies).
    pub svrconn: bool,
    /// The partner's IP address (no port).
    pub address: &'a str,
    /// The TLS certificate's subject DN, when TLS established one.
    pub sslpeer: Option<&'a str>,
    /// The user id the client asserted (SVRCONN).
    pub clntuser: Option<&'a str>,
    /// The partner queue manager's name (message channels).
    pub qmname: Option<&'a str>,
}

/// What the rules decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Run as `user`; `chckclnt` is what the deciding rule asks of connection authentication;
    /// `warnings` are rules with WARN(YES) that would have refused.
    Allow {
        user: String,
        chckclnt: ChckClnt,
        warnings: Vec<String>,
    },
    /// Refused by `rule`, with what to do about it.
    Block { rule: String, detail: String },
}

/// Judges `p` by `rules`. `channel_user` is the user the channel would run as without a
/// mapping (its MCAUSER, or the partner's identity, or the queue manager's own user);
/// `admin` is the queue manager's own user (`*MQADMIN`).
pub fn evaluate(
    rules: &[ChlAuthRec],
    p: &Partner<'_>,
    channel_user: &str,
    admin: &str,
) -> Decision {
    let mut warnings = Vec::new();
    // 1. Blocked addresses.
    for r in rules.iter().filter(|r| r.rtype == RuleType::BlockAddr) {
        if r.addrlist.iter().any(|a| address_matches(a, p.address)) {
            let why = format!("address {} is blocked by {}", p.address, r.describe());
            let fix = format!(
                "remove it with SET CHLAUTH('*') TYPE(BLOCKADDR) ADDRLIST('{}') ACTION(REMOVE)",
                p.address
            );
            if let Some(d) = refuse(r, why, fix, &mut warnings) {
                return d;
            }
        }
    }
    // 2. The mapping rule that decides.
    let best = deciding_rule(rules, p);
    let mut user = channel_user.to_string();
    let mut chckclnt = ChckClnt::AsQmgr;
    if let Some(r) = best {
        chckclnt = r.chckclnt;
        match r.usersrc {
            UserSrc::Map => user = r.mcauser.clone(),
            UserSrc::Channel => {}
            UserSrc::NoAccess => {
                let why = format!(
                    "channel {} from {} is refused by {} USERSRC(NOACCESS)",
                    p.channel,
                    p.address,
                    r.describe()
                );
                let fix = format!(
                    "allow it with a more specific rule, for example SET CHLAUTH('{}') \
                     TYPE(ADDRESSMAP) ADDRESS('{}') USERSRC(CHANNEL)",
                    p.channel, p.address
                );
                if let Some(d) = refuse(r, why, fix, &mut warnings) {
                    return d;
                }
            }
        }
    }
    // 3. Blocked users: the most specific BLOCKUSER rule for this channel.
    if let Some(d) = blocked_user(rules, p, &user, admin, &mut warnings) {
        return d;
    }
    Decision::Allow {
        user,
        chckclnt,
        warnings,
    }
}

/// The mapping rule that decides for `p`: of those matching its channel, address and
/// identity, the most specific (profile, then rule type, then identity, then address).
fn deciding_rule<'a>(rules: &'a [ChlAuthRec], p: &Partner<'_>) -> Option<&'a ChlAuthRec> {
    let matches = |r: &&ChlAuthRec| -> bool {
        if !profile_matches(&r.profile, p.channel) {
            return false;
        }
        if !r.address.is_empty() && !address_matches(&r.address, p.address) {
            return false;
        }
        match r.rtype {
            RuleType::SslPeerMap => p
                .sslpeer
                .is_some_and(|dn| crate::channels::sslpeer_matches(&r.sslpeer, dn)),
            RuleType::UserMap => p.svrconn && p.clntuser.is_some_and(|u| u == r.clntuser),
            RuleType::QmgrMap => {
                !p.svrconn && p.qmname.is_some_and(|q| profile_matches(&r.qmname, q))
            }
            RuleType::AddressMap => true,
            _ => false,
        }
    };
    let ident_spec = |r: &ChlAuthRec| match r.rtype {
        RuleType::SslPeerMap => specificity(&r.sslpeer),
        RuleType::QmgrMap => specificity(&r.qmname),
        RuleType::UserMap => specificity(&r.clntuser),
        _ => specificity(&r.address),
    };
    rules.iter().filter(matches).max_by(|a, b| {
        specificity(&a.profile)
            .cmp(&specificity(&b.profile))
            .then(b.rtype.rank().cmp(&a.rtype.rank()))
            .then(ident_spec(a).cmp(&ident_spec(b)))
            .then((!a.address.is_empty()).cmp(&!b.address.is_empty()))
            .then(specificity(&a.address).cmp(&specificity(&b.address)))
    })
}

/// The most specific BLOCKUSER rule for `p`'s channel, when it blocks `user` (`*MQADMIN`:
/// the queue manager's own user, `admin`): the refusal, or `None` (allowed, or only warned).
fn blocked_user(
    rules: &[ChlAuthRec],
    p: &Partner<'_>,
    user: &str,
    admin: &str,
    warnings: &mut Vec<String>,
) -> Option<Decision> {
    let block = rules
        .iter()
        .filter(|r| r.rtype == RuleType::BlockUser && profile_matches(&r.profile, p.channel))
        .max_by_key(|r| specificity(&r.profile));
    let r = block?;
    let hit = r.userlist.iter().any(|u| {
        u == user || (u.eq_ignore_ascii_case("*MQADMIN") && !admin.is_empty() && user == admin)
    });
    if !hit {
        return None;
    }
    let why = format!(
        "channel {} would run as '{user}', which {} blocks",
        p.channel,
        r.describe()
    );
    let fix = format!(
        "give the channel an MCAUSER that holds only the authority it needs (ALTER \
         CHANNEL({ch}) CHLTYPE(..) MCAUSER('user')), or, to let it run as '{user}', SET \
         CHLAUTH('{ch}') TYPE(BLOCKUSER) USERLIST('nobody')",
        ch = p.channel
    );
    refuse(r, why, fix, warnings)
}

/// What rule `r` does with a partner it would refuse: a warning under WARN(YES) (`None`: go
/// on), else the refusal with what to do about it.
fn refuse(
    r: &ChlAuthRec,
    why: String,
    fix: String,
    warnings: &mut Vec<String>,
) -> Option<Decision> {
    if r.warn {
        warnings.push(why);
        return None;
    }
    Some(Decision::Block {
        rule: r.describe(),
        detail: format!("{why}; {fix}"),
    })
}

/// The rules a new queue manager starts with, as MQ's: no SYSTEM.* channel from anywhere, no
/// channel running as the queue manager's own user.
pub fn default_rules() -> Vec<ChlAuthRec> {
    let mut sys = ChlAuthRec::new("SYSTEM.*", RuleType::AddressMap);
    sys.address = "*".into();
    sys.usersrc = UserSrc::NoAccess;
    sys.descr = "Default rule to disable all SYSTEM channels".into();
    let mut admin = ChlAuthRec::new("*", RuleType::BlockUser);
    admin.userlist = vec!["*MQADMIN".into()];
    admin.descr = "Default rule to disallow privileged users".into();
    vec![sys, admin]
}

#[cfg(test)]
#[path = "chlauth_tests.rs"]
mod tests;

//! SET and DISPLAY CHLAUTH; DEFINE, ALTER, DISPLAY and DELETE AUTHINFO.

use crate::args::{Block, Fail, bad, choice, not_defined, one, only_keywords, unknown_keywords};
use crate::display::Listing;
use crate::parse::Attr;
use crate::parse::{Command, Verb};
use sealmq_engine::authinfo::{AuthInfoDef, Check};
use sealmq_engine::authority::profile_matches;
use sealmq_engine::chlauth::{ChckClnt, ChlAuthRec, RuleType, UserSrc};
use sealmq_engine::{ChlAuthAction, QueueManager};
use sealmq_types::ReasonCode;
use sealmq_types::attrs;
use std::sync::Arc;

fn need(what: &str) -> Fail {
    Fail {
        at: None,
        reason: None,
        message: format!("{what} is required"),
    }
}

fn chlauth_block(r: &ChlAuthRec) -> Block {
    let mut b: Block = attrs![
        "CHLAUTH" => r.profile, "TYPE" => r.rtype.name(), "DESCR" => r.descr,
    ];
    match r.rtype {
        RuleType::BlockUser => b.push(("USERLIST".into(), r.userlist.join(","))),
        RuleType::BlockAddr => b.push(("ADDRLIST".into(), r.addrlist.join(","))),
        t => {
            match t {
                RuleType::SslPeerMap => b.push(("SSLPEER".into(), r.sslpeer.clone())),
                RuleType::UserMap => b.push(("CLNTUSER".into(), r.clntuser.clone())),
                RuleType::QmgrMap => b.push(("QMNAME".into(), r.qmname.clone())),
                _ => {}
            }
            b.push(("ADDRESS".into(), r.address.clone()));
            b.push(("USERSRC".into(), r.usersrc.name().into()));
            b.push(("MCAUSER".into(), r.mcauser.clone()));
            b.push(("CHCKCLNT".into(), r.chckclnt.name().into()));
        }
    }
    b.push(("WARN".into(), if r.warn { "YES" } else { "NO" }.into()));
    b
}

/// SET CHLAUTH(profile) TYPE(..) ... ACTION(..) and DISPLAY CHLAUTH(profile) [TYPE(..)].
pub(crate) fn chlauth(qm: &Arc<QueueManager>, c: &Command) -> Result<(String, Vec<Block>), Fail> {
    let profile = c
        .name
        .clone()
        .ok_or_else(|| need("a channel profile, CHLAUTH(name)"))?;
    let get = |k: &str| c.attrs.iter().find(|a| a.key == k);
    let rtype = match get("TYPE") {
        Some(a) => {
            let v = one(a)?;
            if c.verb == Verb::Display && v.eq_ignore_ascii_case("ALL") {
                None
            } else {
                Some(RuleType::parse(v).ok_or_else(|| {
                    bad(
                        a,
                        "expected BLOCKUSER, BLOCKADDR, SSLPEERMAP, ADDRESSMAP, USERMAP or QMGRMAP",
                    )
                })?)
            }
        }
        None => None,
    };
    if c.verb == Verb::Display {
        return display(qm, c, &profile, rtype);
    }
    let rtype = rtype
        .ok_or_else(|| need("TYPE(BLOCKUSER|BLOCKADDR|SSLPEERMAP|ADDRESSMAP|USERMAP|QMGRMAP)"))?;
    let (r, action) = rule_of(c, &profile, rtype)?;
    // REMOVE names the record (and list entries), REMOVEALL only its type and profile: the
    // rest need not validate as a full record.
    match action {
        ChlAuthAction::Add | ChlAuthAction::Replace => r.validate()?,
        ChlAuthAction::Remove
            if rtype.is_block() && r.userlist.is_empty() && r.addrlist.is_empty() =>
        {
            return Err(need(if rtype == RuleType::BlockUser {
                "USERLIST (the entries to remove; ACTION(REMOVEALL) removes the record)"
            } else {
                "ADDRLIST (the entries to remove; ACTION(REMOVEALL) removes the record)"
            }));
        }
        _ => {}
    }
    qm.chlauth_action(r, action)?;
    Ok((
        "AMQ8877I: IBM MQ channel authentication record set.".to_string(),
        vec![],
    ))
}

/// DISPLAY CHLAUTH(profile) [TYPE(..)]: the records whose profile the name matches.
fn display(
    qm: &Arc<QueueManager>,
    c: &Command,
    profile: &str,
    rtype: Option<RuleType>,
) -> Result<(String, Vec<Block>), Fail> {
    const KEYS: &str = "TYPE ALL MATCH DESCR USERLIST ADDRLIST SSLPEER CLNTUSER QMNAME \
        ADDRESS USERSRC MCAUSER CHCKCLNT WARN";
    only_keywords(c, KEYS, "a DISPLAY CHLAUTH attribute")?;
    let rules = qm.chlauth_rules();
    let matching = rules
        .iter()
        .filter(|r| profile == "*" || profile_matches(profile, &r.profile) || r.profile == profile)
        .filter(|r| rtype.is_none_or(|t| t == r.rtype))
        .map(chlauth_block);
    // MQ shows a record's identity, mapping and list without being asked.
    Listing {
        ids: &[
            "CHLAUTH", "TYPE", "USERLIST", "ADDRLIST", "SSLPEER", "CLNTUSER", "QMNAME", "ADDRESS",
            "USERSRC", "MCAUSER", "WARN",
        ],
        what: "channel authentication record",
        head: "AMQ8878I: Display channel authentication record details.",
        plural: "",
    }
    .answer(matching, &c.attrs, profile)
}

/// The record SET CHLAUTH describes, and its ACTION; an attribute of another TYPE fails.
fn rule_of(
    c: &Command,
    profile: &str,
    rtype: RuleType,
) -> Result<(ChlAuthRec, ChlAuthAction), Fail> {
    let mut r = ChlAuthRec::new(profile, rtype);
    let mut action = ChlAuthAction::Add;
    let mut unknown: Vec<&Attr> = Vec::new();
    for a in &c.attrs {
        let only = |types: &[RuleType]| -> Result<(), Fail> {
            if types.contains(&rtype) {
                Ok(())
            } else {
                Err(bad(a, format!("does not apply to TYPE({})", rtype.name())))
            }
        };
        use RuleType::*;
        match a.key.as_str() {
            "TYPE" => {}
            "ACTION" => {
                action = match choice(a, &["ADD", "REPLACE", "REMOVE", "REMOVEALL"])? {
                    "REPLACE" => ChlAuthAction::Replace,
                    "REMOVE" => ChlAuthAction::Remove,
                    "REMOVEALL" => ChlAuthAction::RemoveAll,
                    _ => ChlAuthAction::Add,
                }
            }
            "USERLIST" => {
                only(&[BlockUser])?;
                r.userlist = list(a)?;
            }
            "ADDRLIST" => {
                only(&[BlockAddr])?;
                r.addrlist = list(a)?;
            }
            "ADDRESS" => {
                only(&[SslPeerMap, AddressMap, UserMap, QmgrMap])?;
                r.address = one(a)?.to_string();
            }
            "SSLPEER" => {
                only(&[SslPeerMap])?;
                r.sslpeer = one(a)?.to_string();
            }
            "CLNTUSER" => {
                only(&[UserMap])?;
                r.clntuser = one(a)?.to_string();
            }
            "QMNAME" => {
                only(&[QmgrMap])?;
                r.qmname = one(a)?.to_string();
            }
            "USERSRC" => {
                only(&[SslPeerMap, AddressMap, UserMap, QmgrMap])?;
                r.usersrc = UserSrc::parse(one(a)?)
                    .ok_or_else(|| bad(a, "expected MAP, NOACCESS or CHANNEL"))?;
            }
            "MCAUSER" => {
                only(&[SslPeerMap, AddressMap, UserMap, QmgrMap])?;
                r.mcauser = a.values.first().cloned().unwrap_or_default();
            }
            "CHCKCLNT" => {
                only(&[SslPeerMap, AddressMap, UserMap])?;
                r.chckclnt = ChckClnt::parse(one(a)?)
                    .ok_or_else(|| bad(a, "expected ASQMGR, REQUIRED or REQDADM"))?;
            }
            "WARN" => r.warn = choice(a, &["YES", "NO"])? == "YES",
            "DESCR" => r.descr = one(a)?.trim_end().to_string(),
            "SSLCERTI" | "CUSTOM" => {
                return Err(bad(a, "is accepted by MQ but not available in sealmq"));
            }
            _ => unknown.push(a),
        }
    }
    unknown_keywords(&unknown, "SET CHLAUTH attribute")?;
    Ok((r, action))
}

/// A list value: `USERLIST('a','b')` or `USERLIST(a b)`.
fn list(a: &crate::parse::Attr) -> Result<Vec<String>, Fail> {
    let v: Vec<String> = a
        .values
        .iter()
        .flat_map(|v| v.split(','))
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect();
    if v.is_empty() {
        return Err(bad(a, "needs at least one entry"));
    }
    Ok(v)
}

fn authinfo_block(a: &AuthInfoDef) -> Block {
    attrs![
        "AUTHINFO" => a.name, "AUTHTYPE" => "IDPWOS", "DESCR" => a.descr,
        "CHCKLOCL" => a.chcklocl.name(), "CHCKCLNT" => a.chckclnt.name(),
        "ADOPTCTX" => if a.adoptctx { "YES" } else { "NO" },
        "PWCLEAR" => if a.allow_cleartext { "YES" } else { "NO" },
    ]
}

/// DEFINE / ALTER / DISPLAY / DELETE AUTHINFO(name) AUTHTYPE(IDPWOS) ...
pub(crate) fn authinfo(qm: &Arc<QueueManager>, c: &Command) -> Result<(String, Vec<Block>), Fail> {
    let name = c.name.clone().ok_or_else(|| need("AUTHINFO(name)"))?;
    let apply = |d: &mut AuthInfoDef| -> Result<(), Fail> {
        let mut unknown: Vec<&Attr> = Vec::new();
        for a in &c.attrs {
            let check = |a| -> Result<Check, Fail> {
                Check::parse(one(a)?)
                    .ok_or_else(|| bad(a, "expected NONE, OPTIONAL, REQUIRED or REQDADM"))
            };
            match a.key.as_str() {
                "AUTHTYPE" => {
                    let t = one(a)?;
                    if !t.eq_ignore_ascii_case("IDPWOS") {
                        return Err(bad(
                            a,
                            format!(
                                "'{t}' is not available: sealmq checks user ids and passwords \
                                 with AUTHTYPE(IDPWOS) (CRLLDAP, OCSP and IDPWLDAP are not \
                                 provided)"
                            ),
                        ));
                    }
                }
                "REPLACE" | "NOREPLACE" => {}
                "DESCR" => d.descr = one(a)?.trim_end().to_string(),
                "CHCKLOCL" => d.chcklocl = check(a)?,
                "CHCKCLNT" => d.chckclnt = check(a)?,
                "ADOPTCTX" => d.adoptctx = choice(a, &["YES", "NO"])? == "YES",
                "PWCLEAR" => d.allow_cleartext = choice(a, &["YES", "NO"])? == "YES",
                "FAILDLAY" | "AUTHENMD" => {}
                _ => unknown.push(a),
            }
        }
        unknown_keywords(&unknown, "AUTHINFO IDPWOS attribute")?;
        Ok(())
    };
    match c.verb {
        Verb::Define => {
            if !c.attrs.iter().any(|a| a.key == "AUTHTYPE") {
                return Err(need("AUTHTYPE(IDPWOS)"));
            }
            if qm.authinfo(&name).is_some() && !c.attrs.iter().any(|a| a.key == "REPLACE") {
                return Err(Fail {
                    at: None,
                    reason: Some(ReasonCode::ObjectAlreadyExists),
                    message: format!("AUTHINFO '{name}' already exists: use REPLACE"),
                });
            }
            let mut d = AuthInfoDef::new(&name);
            apply(&mut d)?;
            qm.define_authinfo(d)?;
            Ok((format!("SMQ0165I: AUTHINFO {name} defined."), vec![]))
        }
        Verb::Alter => {
            let mut d = qm
                .authinfo(&name)
                .ok_or_else(|| not_defined("AUTHINFO", &name))?;
            apply(&mut d)?;
            qm.define_authinfo(d)?;
            Ok((
                "AMQ8567I: IBM MQ authentication information changed.".to_string(),
                vec![],
            ))
        }
        Verb::Delete => {
            qm.delete_authinfo(&name)?;
            Ok((format!("SMQ0167I: AUTHINFO {name} deleted."), vec![]))
        }
        _ => {
            let shown = qm.authinfos();
            Listing {
                ids: &["AUTHINFO", "AUTHTYPE"],
                what: "AUTHINFO",
                head: "SMQ0168I: Display of",
                plural: "AUTHINFO object(s)",
            }
            .answer(
                shown
                    .iter()
                    .filter(|d| profile_matches(&name, &d.name))
                    .map(authinfo_block),
                &c.attrs,
                &name,
            )
        }
    }
}

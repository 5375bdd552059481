//! SET, DELETE and DISPLAY AUTHREC.

use crate::args::{Block, Fail, bad, choice, generic_match, one, only_keywords};
use crate::parse::{Command, Verb};
use sealmq_engine::QueueManager;
use sealmq_types::attrs;
use std::sync::Arc;

pub(crate) fn authrec(qm: &Arc<QueueManager>, c: &Command) -> Result<(String, Vec<Block>), Fail> {
    use sealmq_engine::authority::{AuthObj, AuthRec, auth};
    let get = |k: &str| c.attrs.iter().find(|a| a.key == k);
    let objtype = match get("OBJTYPE") {
        Some(a)
            if a.values.first().is_some_and(|v| {
                crate::known::object_not_provided(&v.to_ascii_uppercase()).is_some()
            }) =>
        {
            let v = a.values[0].to_ascii_uppercase();
            let why = crate::known::object_not_provided(&v).unwrap_or_default();
            return Err(bad(
                a,
                format!(
                    "authority records for {v} objects: {why} (docs/administration.md, \"Not provided\")"
                ),
            ));
        }
        Some(a) => Some(
            AuthObj::parse(choice(
                a,
                &["QUEUE", "QMGR", "CHANNEL", "AUTHINFO", "TOPIC"],
            )?)
            .ok_or_else(|| bad(a, "expected QUEUE, QMGR, CHANNEL, AUTHINFO or TOPIC"))?,
        ),
        None => None,
    };
    const KEYS: &str =
        "OBJTYPE PROFILE PRINCIPAL GROUP AUTHADD AUTHRMV ALL AUTHLIST MATCH SERVCOMP";
    only_keywords(c, KEYS, "an AUTHREC attribute")?;
    let text = |k: &str| -> Result<Option<String>, Fail> {
        match get(k) {
            Some(a) => Ok(Some(one(a)?.to_string())),
            None => Ok(None),
        }
    };
    // OBJTYPE(QMGR) names the queue manager itself: PROFILE may be left out.
    let profile = text("PROFILE")?
        .or_else(|| (objtype == Some(AuthObj::Qmgr) && c.verb != Verb::Display).then(|| qm.name()));
    let (principal, group) = match (text("PRINCIPAL")?, text("GROUP")?) {
        (Some(_), Some(_)) => {
            return Err(Fail {
                at: None,
                reason: None,
                message: "give PRINCIPAL or GROUP, not both".into(),
            });
        }
        (Some(p), None) => (Some(p), false),
        (None, Some(g)) => (Some(g), true),
        (None, None) => (None, false),
    };
    let auths = |k: &str| -> Result<u32, Fail> {
        let Some(a) = get(k) else { return Ok(0) };
        let mut bits = 0;
        for v in &a.values {
            bits |= auth::parse(v).ok_or_else(|| {
                bad(
                    a,
                    format!(
                        "'{v}' is not an authority ({}, ALL, ALLADM, ALLMQI, NONE)",
                        auth::NAMES.map(|(n, _)| n).join(", ")
                    ),
                )
            })?;
        }
        Ok(bits)
    };
    let need = |v: Option<String>, k: &str| -> Result<String, Fail> {
        v.ok_or_else(|| Fail {
            at: None,
            reason: None,
            message: format!("{k}(...) is required"),
        })
    };
    // What names one record: SET and DELETE need all of it.
    let record = || -> Result<(String, String, AuthObj), Fail> {
        let objtype = objtype.ok_or_else(|| Fail {
            at: None,
            reason: None,
            message: "OBJTYPE(QUEUE|QMGR|CHANNEL|AUTHINFO) is required".into(),
        })?;
        Ok((
            need(profile.clone(), "PROFILE")?,
            need(principal.clone(), "PRINCIPAL or GROUP")?,
            objtype,
        ))
    };
    match c.verb {
        Verb::Set => {
            let (profile, principal, objtype) = record()?;
            valid_name(&profile, "PROFILE")?;
            valid_name(&principal, if group { "GROUP" } else { "PRINCIPAL" })?;
            let current = qm
                .authrecs()
                .into_iter()
                .find(|r| {
                    r.profile == profile
                        && r.objtype == objtype
                        && r.principal == principal
                        && r.group == group
                })
                .map(|r| r.auths)
                .unwrap_or(0);
            let new = (current | auths("AUTHADD")?) & !auths("AUTHRMV")?;
            qm.set_authrec(AuthRec {
                profile: profile.clone(),
                objtype,
                principal: principal.clone(),
                auths: new,
                group,
            })?;
            Ok((
                format!(
                    "SMQ0110I Authority record for {principal} on {profile} set: {}.",
                    auth::names(new).join(",")
                ),
                vec![],
            ))
        }
        Verb::Delete => {
            let (profile, principal, objtype) = record()?;
            qm.delete_authrec(&profile, objtype, &principal, group)?;
            Ok((
                format!("SMQ0111I Authority record for {principal} on {profile} deleted."),
                vec![],
            ))
        }
        _ => {
            let blocks: Vec<Block> = qm
                .authrecs()
                .into_iter()
                .filter(|r| {
                    profile
                        .as_deref()
                        .is_none_or(|p| generic_match(p, &r.profile))
                })
                .filter(|r| {
                    principal
                        .as_deref()
                        .is_none_or(|p| p == r.principal && r.group == group)
                })
                .filter(|r| objtype.is_none_or(|t| t == r.objtype))
                .map(|r| {
                    vec![
                        ("PROFILE".into(), r.profile),
                        ("OBJTYPE".into(), r.objtype.name().into()),
                        (
                            if r.group { "GROUP" } else { "PRINCIPAL" }.into(),
                            r.principal,
                        ),
                        ("AUTHLIST".into(), auth::names(r.auths).join(",")),
                    ]
                })
                .collect();
            Ok((
                format!("SMQ0112I Display of {} authority record(s).", blocks.len()),
                blocks,
            ))
        }
    }
}

/// Principal and group names and profiles: printable, no quotes, at most 1024 characters.
fn valid_name(v: &str, what: &str) -> Result<(), Fail> {
    if v.is_empty() || v.len() > 1024 || v.chars().any(|c| c.is_control() || c == '\'') {
        return Err(Fail {
            at: None,
            reason: None,
            message: format!("{what} must be 1-1024 printable characters without quotes"),
        });
    }
    Ok(())
}

/// DISPLAY ENTAUTH PRINCIPAL(p)|GROUP(g) OBJNAME(n) OBJTYPE(t): what the principal may do on
/// the object, from every record that applies (its own, and its groups').
pub(crate) fn entauth(qm: &Arc<QueueManager>, c: &Command) -> Result<(String, Vec<Block>), Fail> {
    use sealmq_engine::authority::{AuthObj, auth};
    let mut principal = None;
    let mut group = None;
    let mut objname = None;
    let mut objtype = None;
    for a in &c.attrs {
        match a.key.as_str() {
            "PRINCIPAL" => principal = Some(one(a)?.to_string()),
            "GROUP" => group = Some(one(a)?.to_string()),
            "OBJNAME" => objname = Some(one(a)?.to_string()),
            "OBJTYPE" => {
                objtype =
                    Some(AuthObj::parse(one(a)?).ok_or_else(|| {
                        bad(a, "expected QUEUE, QMGR, CHANNEL, AUTHINFO or TOPIC")
                    })?)
            }
            "ALL" | "AUTHLIST" | "SERVCOMP" => {}
            _ => return Err(bad(a, "is not a DISPLAY ENTAUTH attribute")),
        }
    }
    let missing = |m: &str| Fail {
        at: None,
        reason: None,
        message: format!("{m} is required"),
    };
    let objtype = objtype.ok_or_else(|| missing("OBJTYPE"))?;
    let objname = match objname {
        Some(n) => n,
        None if objtype == AuthObj::Qmgr => qm.name(),
        None => return Err(missing("OBJNAME")),
    };
    let (who, bits) = match (principal, group) {
        (Some(p), None) => {
            let bits = if qm.admin() == Some(p.as_str()) {
                auth::ALL
            } else {
                qm.authorities_of(&p, objtype, &objname)
            };
            (("PRINCIPAL", p), bits)
        }
        (None, Some(g)) => {
            let recs: Vec<_> = qm.authrecs().into_iter().filter(|r| r.group).collect();
            let bits = sealmq_engine::authority::authorities_with_groups(
                &recs,
                objtype,
                &objname,
                "",
                std::slice::from_ref(&g),
            );
            (("GROUP", g), bits)
        }
        _ => return Err(missing("PRINCIPAL or GROUP (one of them)")),
    };
    Ok((
        "SMQ0113I Display entity authority.".into(),
        vec![attrs![
            "ENTITY" => who.1, "ENTTYPE" => who.0, "OBJNAME" => objname,
            "OBJTYPE" => objtype.name(), "AUTHLIST" => auth::names(bits).join(","),
        ]],
    ))
}

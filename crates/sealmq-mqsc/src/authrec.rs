//! SET, DELETE and DISPLAY AUTHREC.

use crate::args::{Block, Fail, bad, choice, generic_match, one, only_keywords};
use crate::parse::{Command, Verb};
use sealmq_engine::QueueManager;
use sealmq_engine::authority::{AuthObj, AuthRec, auth};
use sealmq_types::attrs;
use std::sync::Arc;

pub(crate) fn authrec(qm: &Arc<QueueManager>, c: &Command) -> Result<(String, Vec<Block>), Fail> {
    const KEYS: &str =
        "OBJTYPE PROFILE PRINCIPAL GROUP AUTHADD AUTHRMV ALL AUTHLIST MATCH SERVCOMP";
    let objtype = objtype(c)?;
    only_keywords(c, KEYS, "an AUTHREC attribute")?;
    // OBJTYPE(QMGR) names the queue manager itself: PROFILE may be left out.
    let profile = text(c, "PROFILE")?
        .or_else(|| (objtype == Some(AuthObj::Qmgr) && c.verb != Verb::Display).then(|| qm.name()));
    let (principal, group) = match (text(c, "PRINCIPAL")?, text(c, "GROUP")?) {
        (Some(_), Some(_)) => return Err(fail("give PRINCIPAL or GROUP, not both".into())),
        (Some(p), None) => (Some(p), false),
        (None, Some(g)) => (Some(g), true),
        (None, None) => (None, false),
    };
    let named = Named {
        objtype,
        profile,
        principal,
        group,
    };
    match c.verb {
        Verb::Set => set(qm, c, &named),
        Verb::Delete => {
            let (profile, principal, objtype) = named.record()?;
            qm.delete_authrec(&profile, objtype, &principal, group)?;
            Ok((
                format!("SMQ0111I: Authority record for {principal} on {profile} deleted."),
                vec![],
            ))
        }
        _ => Ok(display(qm, &named)),
    }
}

/// What the command names: records of one object type, profile, principal or group (each
/// left out: any, for DISPLAY).
struct Named {
    objtype: Option<AuthObj>,
    profile: Option<String>,
    principal: Option<String>,
    /// `principal` is a group.
    group: bool,
}

impl Named {
    /// What names one record: SET and DELETE need all of it.
    fn record(&self) -> Result<(String, String, AuthObj), Fail> {
        let objtype = self
            .objtype
            .ok_or_else(|| fail("OBJTYPE(QUEUE|QMGR|CHANNEL|AUTHINFO) is required".into()))?;
        let need = |v: &Option<String>, k: &str| {
            v.clone()
                .ok_or_else(|| fail(format!("{k}(...) is required")))
        };
        Ok((
            need(&self.profile, "PROFILE")?,
            need(&self.principal, "PRINCIPAL or GROUP")?,
            objtype,
        ))
    }
}

/// SET AUTHREC: the record's authorities with AUTHADD's added and AUTHRMV's removed.
fn set(qm: &Arc<QueueManager>, c: &Command, n: &Named) -> Result<(String, Vec<Block>), Fail> {
    let (profile, principal, objtype) = n.record()?;
    let group = n.group;
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
    let new = (current | auths(c, "AUTHADD")?) & !auths(c, "AUTHRMV")?;
    qm.set_authrec(AuthRec {
        profile: profile.clone(),
        objtype,
        principal: principal.clone(),
        auths: new,
        group,
    })?;
    Ok((
        format!(
            "AMQ8862I: IBM MQ authority record set.\n\
             SMQ0110I: Authority record for {principal} on {profile} set: {}.",
            auth::names(new).join(",")
        ),
        vec![],
    ))
}

/// DISPLAY AUTHREC: the records the command's profile (generic), principal or group and
/// object type select.
fn display(qm: &Arc<QueueManager>, n: &Named) -> (String, Vec<Block>) {
    let blocks: Vec<Block> = qm
        .authrecs()
        .into_iter()
        .filter(|r| {
            n.profile
                .as_deref()
                .is_none_or(|p| generic_match(p, &r.profile))
        })
        .filter(|r| {
            n.principal
                .as_deref()
                .is_none_or(|p| p == r.principal && r.group == n.group)
        })
        .filter(|r| n.objtype.is_none_or(|t| t == r.objtype))
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
    (
        "AMQ8864I: Display authority record details.".to_string(),
        blocks,
    )
}

/// OBJTYPE: an object type sealmq keeps authority records for (one it does not provide is
/// refused with why).
fn objtype(c: &Command) -> Result<Option<AuthObj>, Fail> {
    let Some(a) = c.attrs.iter().find(|a| a.key == "OBJTYPE") else {
        return Ok(None);
    };
    if let Some(v) = a.values.first().map(|v| v.to_ascii_uppercase())
        && let Some(why) = crate::known::object_not_provided(&v)
    {
        return Err(bad(
            a,
            format!(
                "authority records for {v} objects: {why} (docs/administration.md, \"Not provided\")"
            ),
        ));
    }
    let v = choice(a, &["QUEUE", "QMGR", "CHANNEL", "AUTHINFO", "TOPIC"])?;
    AuthObj::parse(v)
        .map(Some)
        .ok_or_else(|| bad(a, "expected QUEUE, QMGR, CHANNEL, AUTHINFO or TOPIC"))
}

/// Attribute `k`'s one value, when given.
fn text(c: &Command, k: &str) -> Result<Option<String>, Fail> {
    match c.attrs.iter().find(|a| a.key == k) {
        Some(a) => Ok(Some(one(a)?.to_string())),
        None => Ok(None),
    }
}

/// The authorities attribute `k` lists (AUTHADD, AUTHRMV), as bits.
fn auths(c: &Command, k: &str) -> Result<u32, Fail> {
    let Some(a) = c.attrs.iter().find(|a| a.key == k) else {
        return Ok(0);
    };
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
}

/// A failure not tied to one attribute.
fn fail(message: String) -> Fail {
    Fail {
        at: None,
        reason: None,
        message,
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
        "SMQ0113I: Display entity authority.".into(),
        vec![attrs![
            "ENTITY" => who.1, "ENTTYPE" => who.0, "OBJNAME" => objname,
            "OBJTYPE" => objtype.name(), "AUTHLIST" => auth::names(bits).join(","),
        ]],
    ))
}

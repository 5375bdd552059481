//! SET, DELETE and DISPLAY AUTHREC.

use crate::exec::{Block, Fail, bad, choice, generic_match, one};
use crate::parse::{Command, Verb};
use sealmq_engine::QueueManager;
use std::sync::Arc;

pub(crate) fn authrec(qm: &Arc<QueueManager>, c: &Command) -> Result<(String, Vec<Block>), Fail> {
    use sealmq_engine::authority::{AuthObj, AuthRec, auth};
    let get = |k: &str| c.attrs.iter().find(|a| a.key == k);
    let objtype = match get("OBJTYPE") {
        Some(a) => match choice(a, &["QUEUE", "QMGR"])? {
            "QMGR" => Some(AuthObj::Qmgr),
            _ => Some(AuthObj::Queue),
        },
        None => None,
    };
    let text = |k: &str| -> Result<Option<String>, Fail> {
        match get(k) {
            Some(a) => Ok(Some(one(a)?.to_string())),
            None => Ok(None),
        }
    };
    let profile = text("PROFILE")?;
    let principal = text("PRINCIPAL")?;
    let auths = |k: &str| -> Result<u32, Fail> {
        let Some(a) = get(k) else { return Ok(0) };
        let mut bits = 0;
        for v in &a.values {
            bits |= auth::parse(v).ok_or_else(|| bad(a, format!("'{v}' is not an authority (CONNECT, PUT, GET, BROWSE, INQ, SET, CHG, DLT, DSP, ALL, NONE)")))?;
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
    match c.verb {
        Verb::Set => {
            let profile = need(profile, "PROFILE")?;
            let principal = need(principal, "PRINCIPAL")?;
            let objtype = objtype.ok_or_else(|| Fail {
                at: None,
                reason: None,
                message: "OBJTYPE(QUEUE|QMGR) is required".into(),
            })?;
            let current = qm
                .authrecs()
                .into_iter()
                .find(|r| r.profile == profile && r.objtype == objtype && r.principal == principal)
                .map(|r| r.auths)
                .unwrap_or(0);
            let new = (current | auths("AUTHADD")?) & !auths("AUTHRMV")?;
            qm.set_authrec(AuthRec {
                profile: profile.clone(),
                objtype,
                principal: principal.clone(),
                auths: new,
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
            let profile = need(profile, "PROFILE")?;
            let principal = need(principal, "PRINCIPAL")?;
            let objtype = objtype.ok_or_else(|| Fail {
                at: None,
                reason: None,
                message: "OBJTYPE(QUEUE|QMGR) is required".into(),
            })?;
            qm.delete_authrec(&profile, objtype, &principal)?;
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
                .filter(|r| principal.as_deref().is_none_or(|p| p == r.principal))
                .filter(|r| objtype.is_none_or(|t| t == r.objtype))
                .map(|r| {
                    vec![
                        ("PROFILE".into(), r.profile),
                        ("OBJTYPE".into(), r.objtype.name().into()),
                        ("PRINCIPAL".into(), r.principal),
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

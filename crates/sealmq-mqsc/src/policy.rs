//! SET, DISPLAY and DELETE POLICY (SPEC §5.1), and the MQSC that recreates a policy.

use crate::args::{Block, Fail, bad, choice, generic_match, one};
use crate::parse::{Attr, Command, Verb};
use sealmq_engine::QueueManager;
use sealmq_types::ReasonCode;
use sealmq_types::attrs;
use std::sync::Arc;

/// A policy as DISPLAY shows it (RECIP and SIGNER repeat).
pub fn policy_block(p: &sealmq_protect::Policy) -> Block {
    let mut b: Block = attrs![
        "POLICY" => p.name, "QOP" => p.qop().name(), "SIGNALG" => p.sign_alg.name(),
        "ENCALG" => p.enc_alg.name(),
    ];
    for r in &p.recipients {
        b.push(("RECIP".into(), r.to_string()));
    }
    for s in &p.signers {
        b.push(("SIGNER".into(), s.to_string()));
    }
    b.push((
        "TOLERATE".into(),
        if p.tolerate { "YES" } else { "NO" }.into(),
    ));
    b.push(("KEYREUSE".into(), p.key_reuse.to_string()));
    b.push(("ENVELOPE".into(), p.envelope.name().into()));
    b
}

fn quote(v: &str) -> String {
    format!("'{}'", v.replace('\'', "''"))
}

/// The MQSC command that recreates a policy exactly.
pub fn policy_command(p: &sealmq_protect::Policy) -> String {
    let mut s = format!(
        "SET POLICY({}) SIGNALG({}) ENCALG({})",
        p.name,
        p.sign_alg.name(),
        p.enc_alg.name()
    );
    for r in &p.recipients {
        s.push_str(&format!(" RECIP({})", quote(&r.to_string())));
    }
    for g in &p.signers {
        s.push_str(&format!(" SIGNER({})", quote(&g.to_string())));
    }
    s.push_str(if p.tolerate { " TOLERATE" } else { " ENFORCE" });
    s.push_str(&format!(" KEYREUSE({})", p.key_reuse));
    if p.envelope != sealmq_protect::Envelope::Sealmq {
        s.push_str(&format!(" ENVELOPE({})", p.envelope.name()));
    }
    s.push_str(" ACTION(REPLACE)");
    s
}

pub(crate) fn policy(qm: &Arc<QueueManager>, c: &Command) -> Result<(String, Vec<Block>), Fail> {
    use sealmq_protect::{Dn, EncAlg, Envelope, KeyReuse, Policy, SignAlg};
    let name = c.name.clone().unwrap_or_default();
    let perr = |a: Option<&Attr>, e: sealmq_protect::ProtectError| Fail {
        at: a.map(|a| a.at),
        reason: None,
        message: e.to_string(),
    };
    match c.verb {
        Verb::Set => {
            let action = match c.attrs.iter().find(|a| a.key == "ACTION") {
                Some(a) => choice(a, &["REPLACE", "ADD", "REMOVE"])?,
                None => "REPLACE",
            };
            let mut p = match action {
                "REPLACE" => Policy::none(&name),
                _ => qm.policy(&name).ok_or_else(|| Fail {
                    at: None,
                    reason: Some(ReasonCode::UnknownObjectName),
                    message: format!(
                        "queue '{name}' has no security policy to {}",
                        action.to_lowercase()
                    ),
                })?,
            };
            let mut recips = Vec::new();
            let mut signers = Vec::new();
            for a in &c.attrs {
                match a.key.as_str() {
                    "ACTION" => {}
                    "SIGNALG" => {
                        p.sign_alg = SignAlg::parse(one(a)?).map_err(|e| perr(Some(a), e))?
                    }
                    "ENCALG" => p.enc_alg = EncAlg::parse(one(a)?).map_err(|e| perr(Some(a), e))?,
                    "KEYREUSE" => {
                        p.key_reuse = KeyReuse::parse(one(a)?).map_err(|e| perr(Some(a), e))?
                    }
                    "TOLERATE" => {
                        p.tolerate = a
                            .values
                            .first()
                            .is_none_or(|v| !v.eq_ignore_ascii_case("NO"))
                    }
                    "ENFORCE" => p.tolerate = false,
                    "ENVELOPE" => {
                        p.envelope = Envelope::parse(one(a)?).map_err(|e| perr(Some(a), e))?
                    }
                    "RECIP" => {
                        for v in &a.values {
                            recips.push(Dn::parse(v).map_err(|e| perr(Some(a), e))?);
                        }
                    }
                    "SIGNER" => {
                        for v in &a.values {
                            signers.push(Dn::parse(v).map_err(|e| perr(Some(a), e))?);
                        }
                    }
                    _ => {
                        return Err(bad(
                            a,
                            "is not a policy attribute (SIGNALG, ENCALG, RECIP, SIGNER, ENFORCE, TOLERATE, KEYREUSE, ENVELOPE, ACTION)",
                        ));
                    }
                }
            }
            match action {
                "REMOVE" => {
                    p.remove_recipients(&recips);
                    p.remove_signers(&signers);
                }
                _ => {
                    p.add_recipients(recips);
                    p.add_signers(signers);
                }
            }
            sealmq_engine::policies::set(qm, p.clone())?;
            Ok((
                format!("SMQ0130I: Policy {name} set: {}.", p.qop().name()),
                vec![],
            ))
        }
        Verb::Delete => {
            sealmq_engine::policies::delete(qm, &name)?;
            Ok((format!("SMQ0132I: Policy {name} deleted."), vec![]))
        }
        _ => {
            let blocks: Vec<Block> = qm
                .policies()
                .iter()
                .filter(|p| generic_match(&name, &p.name))
                .map(policy_block)
                .collect();
            if blocks.is_empty() && !name.contains('*') {
                return Ok((
                    format!("SMQ0131I: Queue {name} has no security policy."),
                    vec![],
                ));
            }
            Ok((
                format!("SMQ0133I: Display of {} policy(ies).", blocks.len()),
                blocks,
            ))
        }
    }
}

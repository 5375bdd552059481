//! What MQ's command server asks of a user who is not the queue manager's administrator
//! before it runs an MQSC command for them (`runmqsc -c`, `sealmq mqsc --conn`): the
//! authority each verb needs on its object, as MQ names them — DSP to display, CRT to define,
//! CHG to alter, DLT to delete, CLR to clear, CTRL to start, stop and ping a channel, CTRLX
//! to reset or resolve it — and, for a DISPLAY of a generic name, only the objects the user
//! may display. Objects without authority records of their own (listeners, services,
//! processes, subscriptions, authority and CHLAUTH records, policies, the queue manager
//! itself) need the authority on the queue manager object (`OBJTYPE(QMGR)`), as setting
//! authority and security does in MQ. A leaf: uses no command module.

use crate::args::{Block, Fail};
use crate::parse::{Command, Obj, Verb};
use sealmq_engine::QueueManager;
use sealmq_engine::authority::{AuthObj, auth};

/// The object class, profile name and authority a command needs.
fn needs(qm: &QueueManager, c: &Command) -> (AuthObj, String, u32) {
    let name = c.name.clone().unwrap_or_default();
    let bits = match c.verb {
        Verb::Display => auth::DSP,
        Verb::Define => auth::CRT,
        Verb::Alter | Verb::Set | Verb::Refresh => auth::CHG,
        Verb::Delete => auth::DLT,
        Verb::Clear => auth::CLR,
        Verb::Start | Verb::Stop | Verb::Ping => auth::CTRL,
        Verb::Reset | Verb::Resolve => auth::CTRLX,
    };
    let class = match c.obj {
        Obj::QLocal | Obj::QAlias | Obj::QRemote | Obj::QModel | Obj::Queue | Obj::QStatus => {
            Some(AuthObj::Queue)
        }
        // RESET QSTATS reads and zeroes a queue's statistics: MQ asks for DSP and CHG.
        Obj::QStats => return (AuthObj::Queue, name, auth::DSP | auth::CHG),
        Obj::Channel | Obj::ChStatus => Some(AuthObj::Channel),
        Obj::Topic | Obj::TpStatus => Some(AuthObj::Topic),
        Obj::AuthInfo => Some(AuthObj::AuthInfo),
        _ => None,
    };
    match class {
        Some(t) => (t, name, bits),
        None => (AuthObj::Qmgr, qm.name().to_string(), bits),
    }
}

/// 2035 unless `principal` holds what the command needs. A DISPLAY of a generic name passes
/// here and is filtered by [`visible`].
pub(crate) fn allowed(qm: &QueueManager, c: &Command, principal: &str) -> Result<(), Fail> {
    let (t, name, bits) = needs(qm, c);
    if c.verb == Verb::Display && t != AuthObj::Qmgr && is_generic(&name) {
        return Ok(());
    }
    qm.check_authority(principal, t, &name, bits).map_err(|e| {
        tracing::warn!(%principal, command = ?c.verb, object = ?c.obj, "MQSC refused: {}", e.detail);
        Fail::from(e)
    })?;
    // LIKE reads another object of the class: it must be displayable too.
    if let Some(like) = c.attrs.iter().find(|a| a.key == "LIKE")
        && let Some(n) = like.values.first()
        && t != AuthObj::Qmgr
    {
        qm.check_authority(principal, t, n, auth::DSP)?;
    }
    Ok(())
}

/// The blocks of a DISPLAY that `principal` may see: for a generic name, those of objects it
/// holds DSP on (each block opens with its object's name).
pub(crate) fn visible(
    qm: &QueueManager,
    c: &Command,
    principal: &str,
    blocks: Vec<Block>,
) -> Vec<Block> {
    let (t, name, _) = needs(qm, c);
    if c.verb != Verb::Display || t == AuthObj::Qmgr || !is_generic(&name) {
        return blocks;
    }
    blocks
        .into_iter()
        .filter(|b| {
            b.first().is_some_and(|(_, object)| {
                qm.check_authority(principal, t, object, auth::DSP).is_ok()
            })
        })
        .collect()
}

fn is_generic(name: &str) -> bool {
    name.is_empty() || name.ends_with('*')
}

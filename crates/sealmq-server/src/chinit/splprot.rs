//! SPLPROT (SPEC §5.5.3): protection at the edge of a protected island.
//! - REMOVE (sending end): the message is unprotected with the transmission queue's policy and
//!   the queue manager's keystore before it is sent; one that fails a check goes to
//!   SYSTEM.PROTECTION.ERROR.QUEUE (in the batch's unit of work) and the channel goes on.
//! - ASPOLICY (receiving end): the message is protected with the target queue's policy before it
//!   is put; a message that is already protected is left as it is (never protected twice).
//!
//! No policy (or a policy with no protection): the message passes unchanged.

use sealmq_engine::channels::{ChannelDef, SplProt};
use sealmq_engine::xqh::TransmissionHeader;
use sealmq_engine::{Connection, Md, MqError, MqResult, QueueManager};
use sealmq_protect::{Protector, Qop};
use sealmq_types::ReasonCode;

fn no_keystore(def: &ChannelDef) -> MqError {
    MqError::new(
        ReasonCode::SecurityError,
        format!(
            "channel {} has SPLPROT({}) but the queue manager has no keystore (<QM dir>/keystore)",
            def.name,
            def.splprot.name()
        ),
    )
}

/// The bytes to send for a transmission-queue message (`stored`: header and payload as got);
/// `None` when it failed to unprotect and was moved to the protection error queue.
pub fn remove(
    qm: &QueueManager,
    conn: &Connection,
    def: &ChannelDef,
    stored: Vec<u8>,
    protector: Option<&Protector>,
) -> MqResult<Option<Vec<u8>>> {
    if def.splprot != SplProt::Remove {
        return Ok(Some(stored));
    }
    let Some(policy) = qm.policy(&def.xmitq).filter(|p| p.qop() != Qop::None) else {
        return Ok(Some(stored));
    };
    let p = protector.ok_or_else(|| no_keystore(def))?;
    let (mut h, payload) = TransmissionHeader::unwrap(&stored).map_err(|e| {
        MqError::new(
            ReasonCode::UnexpectedError,
            format!("transmission queue {}: {e}", def.xmitq),
        )
    })?;
    match p.unprotect_bound(&policy, &payload, sealmq_protect::Binds::AnyName) {
        Ok(u) => {
            if let Some(o) = &u.original {
                h.md.restore_original(o);
            }
            Ok(Some(h.wrap(&u.payload)))
        }
        Err(e) => {
            let failure = sealmq_engine::dlh::ProtectionFailure {
                check: e.check().map(|c| c.name().to_string()).unwrap_or_default(),
                detail: format!("channel {} SPLPROT(REMOVE): {e}", def.name),
                signer: sealmq_protect::inspect(&payload, false)
                    .ok()
                    .and_then(|i| i.signer)
                    .unwrap_or_default(),
            };
            conn.put_protection_error(&def.xmitq, failure, &h.md, &payload, true)?;
            Ok(None)
        }
    }
}

/// The payload to put for a message arriving for `queue` on this queue manager.
pub fn apply(
    qm: &QueueManager,
    def: &ChannelDef,
    queue: &str,
    md: &Md,
    payload: Vec<u8>,
    protector: Option<&Protector>,
) -> MqResult<Vec<u8>> {
    if def.splprot != SplProt::AsPolicy || sealmq_protect::is_protected(&payload) {
        return Ok(payload);
    }
    let Some(policy) = qm.policy(queue).filter(|p| p.qop() != Qop::None) else {
        return Ok(payload);
    };
    let p = protector.ok_or_else(|| no_keystore(def))?;
    p.protect(&policy, &payload, md.protection_original())
        .map_err(|e| {
            MqError::new(
                ReasonCode::SecurityError,
                format!("channel {} SPLPROT(ASPOLICY) for '{queue}': {e}", def.name),
            )
        })
}

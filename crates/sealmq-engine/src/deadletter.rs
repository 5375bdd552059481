//! Moving a message aside with a dead-letter header (SPEC §3, §5.4, §6): to the protection
//! error queue when it fails a protection check, to the dead-letter queue when a channel cannot
//! deliver it. The queue manager does this on the connection's behalf (no authority on those
//! queues is needed), in the connection's unit of work when asked.

use crate::dlh::{DeadLetterHeader, ProtectionFailure};
use crate::error::{MqError, MqResult, mqerr};
use crate::md::{Md, NONE_ID, Persistence, now_ms};
use crate::mqi::{Connection, OpenOptions, PutOptions};
use crate::qm::read;
use sealmq_types::ReasonCode;

impl Connection {
    /// Moves a message that failed a protection check to SYSTEM.PROTECTION.ERROR.QUEUE with a
    /// dead-letter header, in this connection's unit of work when `syncpoint` (SPEC §5.4).
    /// `queue` is the queue the message was got from.
    pub fn put_protection_error(
        &self,
        queue: &str,
        failure: ProtectionFailure,
        original: &Md,
        payload: &[u8],
        syncpoint: bool,
    ) -> MqResult<()> {
        let header = DeadLetterHeader {
            reason: ReasonCode::SecurityError.code(),
            check: failure.check,
            detail: failure.detail,
            dest_q: queue.to_string(),
            dest_qm: self.qm.name(),
            orig_format: original.format.clone(),
            put_appl: original.put_appl_name.clone(),
            put_time_ms: original.put_time_ms,
            getter: self.user.clone(),
            signer: failure.signer,
            time_ms: now_ms(),
        };
        let mut md = original.clone();
        md.msg_id = NONE_ID;
        md.persistence = Persistence::Persistent;
        self.put_with_header(
            crate::objects::PROTECTION_ERROR_Q,
            header,
            md,
            payload,
            syncpoint,
            false,
        )
    }

    /// Puts an undeliverable message to the queue manager's dead-letter queue (DEADQ) with a
    /// header that says why (`why`: reason and detail) and where it was going; its descriptor is kept. Fails
    /// with 2085 when the queue manager has no dead-letter queue: the caller must then keep
    /// the message where it is.
    pub fn put_dead_letter(
        &self,
        why: &MqError,
        dest_q: &str,
        dest_qm: &str,
        original: &Md,
        payload: &[u8],
        syncpoint: bool,
    ) -> MqResult<()> {
        let dlq = read(&self.qm.qmgr).dead_letter_q.trim().to_string();
        if dlq.is_empty() {
            return mqerr!(
                UnknownObjectName,
                "queue manager {} has no dead-letter queue (ALTER QMGR DEADQ)",
                self.qm.name()
            );
        }
        let header = DeadLetterHeader {
            reason: why.reason.code(),
            detail: why.detail.clone(),
            dest_q: dest_q.to_string(),
            dest_qm: dest_qm.to_string(),
            orig_format: original.format.clone(),
            put_appl: original.put_appl_name.clone(),
            put_time_ms: original.put_time_ms,
            time_ms: now_ms(),
            ..Default::default()
        };
        self.put_with_header(&dlq, header, original.clone(), payload, syncpoint, true)
    }

    fn put_with_header(
        &self,
        queue: &str,
        header: DeadLetterHeader,
        mut md: Md,
        payload: &[u8],
        syncpoint: bool,
        pass_context: bool,
    ) -> MqResult<()> {
        let internal = self.internal_twin();
        let h = internal.open(queue, OpenOptions::output())?;
        md.format = crate::dlh::FORMAT.into();
        // Put through this connection so that the move joins its unit of work.
        let r = self.put(
            &h,
            &mut md,
            &header.wrap(payload),
            PutOptions {
                syncpoint,
                pass_context,
            },
        );
        let _ = internal.close(&h);
        r
    }
}

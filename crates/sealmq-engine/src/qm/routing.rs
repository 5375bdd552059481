//! Queue-manager name resolution (SPEC §6): which transmission queue carries a message for
//! another queue manager, and opening a queue by (queue, queue manager) as MQOPEN does with an
//! object queue-manager name.
//!
//! Resolution of a queue-manager name, in order: this queue manager; a queue-manager alias (a
//! QREMOTE of that name with no RNAME), which may rename the queue manager and name a
//! transmission queue; a transmission queue of that name; the default transmission queue
//! (DEFXMITQ). Nothing found: 2087.

use super::*;
use crate::objects::Usage;
use sealmq_types::sync::read;

impl QueueManager {
    /// The transmission queue for queue manager `rqm` and the name the message is addressed to
    /// there; `None` when `rqm` is this queue manager (or empty).
    pub fn route(&self, rqm: &str) -> MqResult<Option<(Arc<LocalQueue>, String)>> {
        let me = self.name();
        if rqm.is_empty() || rqm == me {
            return Ok(None);
        }
        // A queue-manager alias.
        if let Ok(d) = self.queue_def(rqm)
            && d.qtype == QType::Remote
            && d.remote_name.is_empty()
        {
            let target = if d.remote_qmgr.is_empty() {
                rqm.to_string()
            } else {
                d.remote_qmgr.clone()
            };
            if target == me {
                return Ok(None);
            }
            if !d.xmitq.is_empty() {
                return Ok(Some((self.xmitq_named(&d.xmitq, &target)?, target)));
            }
            if target != rqm {
                return self.route_plain(&target).map(|q| Some((q, target)));
            }
        }
        self.route_plain(rqm).map(|q| Some((q, rqm.to_string())))
    }

    /// A transmission queue named like the queue manager, else DEFXMITQ.
    fn route_plain(&self, rqm: &str) -> MqResult<Arc<LocalQueue>> {
        if let Some(q) = self.local(rqm)
            && q.lock().def.usage == Usage::Xmitq
        {
            return Ok(q);
        }
        let def = read(&self.qmgr).def_xmitq.clone();
        if def.is_empty() {
            return mqerr!(
                UnknownRemoteQMgr,
                "no route to queue manager '{rqm}': define a transmission queue named '{rqm}', a \
                 queue-manager alias (QREMOTE with RQMNAME and XMITQ), or ALTER QMGR DEFXMITQ"
            );
        }
        self.xmitq_named(&def, rqm)
    }

    /// The local queue `xq`, which must be a transmission queue.
    pub(crate) fn xmitq_named(&self, xq: &str, rqm: &str) -> MqResult<Arc<LocalQueue>> {
        match self.local(xq) {
            Some(q) if q.lock().def.usage == Usage::Xmitq => Ok(q),
            Some(_) => mqerr!(
                UnknownRemoteQMgr,
                "'{xq}' (for queue manager '{rqm}') is not a transmission queue (USAGE(XMITQ))"
            ),
            None => mqerr!(
                UnknownRemoteQMgr,
                "transmission queue '{xq}' for queue manager '{rqm}' is not defined"
            ),
        }
    }
}

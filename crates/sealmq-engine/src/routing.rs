//! Queue-manager name resolution (SPEC §6): which transmission queue carries a message for
//! another queue manager, and opening a queue by (queue, queue manager) as MQOPEN does with an
//! object queue-manager name.
//!
//! Resolution of a queue-manager name, in order: this queue manager; a queue-manager alias (a
//! QREMOTE of that name with no RNAME), which may rename the queue manager and name a
//! transmission queue; a transmission queue of that name; the default transmission queue
//! (DEFXMITQ). Nothing found: 2087.

use crate::authority::{AuthObj, auth};
use crate::error::{MqResult, mqerr};
use crate::mqi::{Connection, Hobj, OpenOptions, Target};
use crate::objects::{QType, Usage};
use crate::qm::{QueueManager, read};
use crate::queue::LocalQueue;
use std::sync::Arc;

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

impl Connection {
    /// MQOPEN of `name` on queue manager `qmgr` (empty: this one). For another queue manager
    /// the handle puts to the transmission queue that resolution finds (output only).
    pub fn open_at(&self, name: &str, qmgr: &str, opts: OpenOptions) -> MqResult<Hobj> {
        let Some((xmitq, rqm)) = self.qm().route(qmgr)? else {
            return self.open(name, opts);
        };
        if opts.input_shared || opts.input_exclusive || opts.input_as_q_def || opts.browse {
            return mqerr!(
                OptionNotValidForType,
                "'{name}' on queue manager '{qmgr}' can only be opened for output"
            );
        }
        if !opts.output {
            return mqerr!(
                OptionsError,
                "open '{name}' at '{qmgr}': no open option given"
            );
        }
        // The same authority as any route to a queue: PUT on the object the resolution went
        // through — the queue-manager alias when one named `qmgr`, else the transmission queue.
        if !self.internal {
            let via = match self.qm().queue_def(qmgr) {
                Ok(d) if d.qtype == QType::Remote && d.remote_name.is_empty() => d.name,
                _ => xmitq.name.clone(),
            };
            self.qm()
                .check_authority(&self.user, AuthObj::Queue, &via, auth::PUT)?;
        }
        let put_allowed = xmitq.lock().def.put_enabled;
        Ok(Hobj::new(
            name.to_string(),
            xmitq.name.clone(),
            Target::Remote {
                xmitq,
                rname: name.to_string(),
                rqm,
            },
            opts,
            put_allowed,
        ))
    }
}

//! MQOPEN with an object queue-manager name (SPEC §6): a queue on another queue manager is
//! opened as the transmission queue that resolution (`qm/routing.rs`) finds, output only.

use super::{Connection, Hobj, OpenOptions, Target};
use crate::authority::{AuthObj, auth};
use crate::error::{MqResult, mqerr};
use crate::objects::QType;

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

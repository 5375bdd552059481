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
        let routed = self.qm().route(qmgr);
        if let Ok(None) = routed {
            return self.open(name, opts);
        }
        // Authority first, whatever the resolution found: a user who may not put there learns
        // 2035 alike whether a route to `qmgr` exists or not (not 2087, not an option error).
        // The object checked is the one the resolution went through — the queue-manager alias
        // when one named `qmgr`, else the transmission queue — or, with no route, the name
        // asked for (an alias or transmission queue of that name is what would route it).
        if !self.internal {
            let via = match &routed {
                Ok(Some((xmitq, _))) => match self.qm().queue_def(qmgr) {
                    Ok(d) if d.qtype == QType::Remote && d.remote_name.is_empty() => d.name,
                    _ => xmitq.name.clone(),
                },
                _ => qmgr.to_string(),
            };
            self.qm()
                .check_authority(&self.user, AuthObj::Queue, &via, auth::PUT)?;
        }
        let Some((xmitq, rqm)) = routed? else {
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

//! Triggering (MQ's trigger events): a message arriving on a queue with TRIGGER set makes a
//! trigger message (MQTM) on the queue's initiation queue, when MQ's conditions hold —
//! FIRST: the queue went from empty to one message, or a message arrived on a queue that is
//! still not empty TRIGINT after its last trigger message, and no one has it open for input; EVERY:
//! each message; DEPTH: the depth reached TRIGDPTH and no one has it open for input, after
//! which TRIGGER is switched off until the application sets it again; in every case the
//! message's priority is at least TRIGMPRI. An application queue needs a PROCESS naming the
//! program to start; a transmission queue's TRIGDATA names the channel to start (SPEC §6).
//! Trigger messages are non-persistent, as MQ's. Opening an initiation queue for input (a
//! trigger monitor, the channel initiator) is a trigger event for each FIRST or DEPTH queue
//! served by it that has messages and no reader: trigger messages lost with a restart, or
//! never made, are made again then.

use super::*;
use crate::objects::{TrigType, Usage};
use crate::queue::QueueState;
use crate::trigger::{FORMAT, TriggerMsg, appl_type_number};
use sealmq_types::sync::read;

impl QueueState {
    /// Whether `msg`, just made visible, is a trigger event for this queue; `trig_int_ms` is
    /// asked only for a FIRST queue that was not empty.
    pub(crate) fn trigger_due(&mut self, msg: &Message, trig_int_ms: impl FnOnce() -> u64) -> bool {
        let d = &self.def;
        if !d.trigger || d.init_q.is_empty() || msg.md.priority < i32::from(d.trig_msg_pri) {
            return false;
        }
        let visible = self.entries.len() - self.uncommitted_puts;
        let due = match d.trig_type {
            TrigType::None => false,
            TrigType::First => {
                self.open_input == 0
                    && (visible == 1
                        || self
                            .last_trigger
                            .is_some_and(|t| t.elapsed().as_millis() >= u128::from(trig_int_ms())))
            }
            TrigType::Every => true,
            TrigType::Depth => visible >= d.trig_depth as usize && self.open_input == 0,
        };
        if due {
            self.last_trigger = Some(std::time::Instant::now());
        }
        due
    }

    /// Whether this queue, served by an initiation queue just opened for input, is a trigger
    /// event: FIRST or DEPTH, with its messages waiting and no reader.
    fn trigger_due_at_initq_open(&mut self) -> bool {
        let d = &self.def;
        let visible = self.entries.len() - self.uncommitted_puts;
        let due = d.trigger
            && self.open_input == 0
            && visible > 0
            && match d.trig_type {
                TrigType::First => true,
                TrigType::Depth => visible >= d.trig_depth as usize,
                TrigType::Every | TrigType::None => false,
            };
        if due {
            self.last_trigger = Some(std::time::Instant::now());
        }
        due
    }
}

impl QueueManager {
    /// `initq` was just opened for input: the queues it serves that have a trigger event now,
    /// but none whose trigger message already waits there (the opener will read it).
    pub(crate) fn triggers_at_initq_open(&self, initq: &str) -> Vec<QueueDef> {
        // Most queues opened for input serve no one: the definitions say so without locking
        // any queue.
        let names: Vec<String> = read(&self.defs)
            .values()
            .filter(|d| d.trigger && d.init_q == initq)
            .map(|d| d.name.clone())
            .collect();
        if names.is_empty() {
            return Vec::new();
        }
        let (init, served): (Option<Arc<LocalQueue>>, Vec<Arc<LocalQueue>>) = {
            let locals = read(&self.locals);
            (
                locals.get(initq).cloned(),
                names
                    .iter()
                    .filter_map(|n| locals.get(n).cloned())
                    .collect(),
            )
        };
        let Some(init) = init else {
            return Vec::new();
        };
        let waiting: Vec<String> = {
            let st = init.lock();
            st.entries
                .iter()
                .filter_map(|(_, e)| st.message(e).ok())
                .filter(|m| m.md.format == FORMAT)
                .filter_map(|m| TriggerMsg::decode(&m.payload).ok().map(|t| t.queue))
                .collect()
        };
        served
            .iter()
            .filter(|q| !waiting.contains(&q.name))
            .filter_map(|q| {
                let mut st = q.lock();
                (st.def.init_q == initq && st.trigger_due_at_initq_open()).then(|| st.def.clone())
            })
            .collect()
    }

    /// The trigger message for `def` (a trigger event happened on it), for its initiation
    /// queue (the MQI puts it there: `mqi/triggers.rs`). A condition MQ checks here that does
    /// not hold (no initiation queue, no process for an application queue) is logged and no
    /// trigger message is made.
    pub(crate) fn trigger_message(&self, def: &QueueDef) -> Option<TriggerMsg> {
        let why_not = |m: String| {
            tracing::warn!("no trigger message for queue {}: {m}", def.name);
            None
        };
        match self.queue_def(&def.init_q) {
            Ok(q) if q.qtype == QType::Local => {}
            _ => {
                return why_not(format!(
                    "its initiation queue INITQ({}) is not a local queue",
                    def.init_q
                ));
            }
        }
        let process = if def.process.is_empty() {
            None
        } else {
            match self.object::<crate::services::ProcessDef>(&def.process) {
                Some(p) => Some(p),
                None => {
                    return why_not(format!("PROCESS({}) is not defined", def.process));
                }
            }
        };
        if process.is_none() && def.usage != Usage::Xmitq {
            return why_not("an application queue needs PROCESS naming the program".into());
        }
        if def.trig_type == TrigType::Depth {
            // MQ switches triggering off after a depth event; the application sets it again.
            // The definition as it is now (another ALTER may have come since the event).
            let off = QueueDef {
                trigger: false,
                ..self.queue_def(&def.name).unwrap_or_else(|_| def.clone())
            };
            if let Err(e) = self.alter(off) {
                return why_not(format!(
                    "cannot switch TRIGGER off after a depth event: {e}"
                ));
            }
        }
        let p = process.unwrap_or_else(|| crate::services::ProcessDef::new(""));
        Some(TriggerMsg {
            queue: def.name.clone(),
            process: p.name.clone(),
            trig_data: def.trig_data.clone(),
            appl_type: appl_type_number(&p.appltype),
            appl_id: p.applicid.clone(),
            env_data: p.envrdata.clone(),
            user_data: p.userdata.clone(),
        })
    }
}

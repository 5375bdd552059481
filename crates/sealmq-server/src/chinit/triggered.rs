//! Channel triggering: the channel initiator serves SYSTEM.CHANNEL.INITQ, as MQ's does. A
//! transmission queue defined with `TRIGGER INITQ(SYSTEM.CHANNEL.INITQ) TRIGDATA(channel)`
//! gets a trigger message there when a message arrives on it (TRIGTYPE(FIRST): when it was
//! empty and no sender has it open), and the initiator starts the sender channel it names —
//! or, with TRIGDATA blank, the sender whose XMITQ is that queue. A channel an administrator
//! stopped (STOP CHANNEL) is not started by a trigger; one already running is left as it is.

use super::Initiator;
use super::sync::{Role, SyncQ};
use sealmq_engine::Connection;
use sealmq_engine::channels::ChlType;
use sealmq_engine::objects::CHANNEL_INITQ;
use sealmq_engine::trigger::TriggerMsg;
use sealmq_engine::{GetOptions, OpenOptions};
use sealmq_types::ReasonCode;
use std::sync::Arc;
use std::time::Duration;

impl Initiator {
    /// Starts the thread that reads SYSTEM.CHANNEL.INITQ (it ends with the queue manager).
    pub(crate) fn serve_initq(self: &Arc<Self>) {
        let ci = self.clone();
        let _ = std::thread::Builder::new()
            .name("channel initq".into())
            .spawn(move || ci.initq_loop());
    }

    fn initq_loop(self: Arc<Self>) {
        let Ok(conn) = Connection::connect_internal(&self.qm) else {
            return;
        };
        let h = match conn.open(CHANNEL_INITQ, OpenOptions::input()) {
            Ok(h) => h,
            Err(e) => {
                tracing::warn!("channel triggering is off: cannot open {CHANNEL_INITQ}: {e}");
                return;
            }
        };
        loop {
            let got = conn.get(
                &h,
                GetOptions {
                    wait: Some(Duration::from_millis(1000)),
                    ..Default::default()
                },
            );
            match got {
                // Only the queue manager's own trigger messages start channels.
                Ok(g) => match sealmq_engine::trigger::from_queue_manager(&g.md) {
                    Ok(()) => self.triggered(&g.payload),
                    Err(why) => tracing::warn!("{CHANNEL_INITQ}: {why}"),
                },
                Err(e) if e.reason == ReasonCode::NoMsgAvailable => {}
                Err(_) => break,
            }
            if self.qm.is_quiescing() {
                break;
            }
        }
        let _ = conn.close(&h);
    }

    /// One trigger message: start the sender channel it names.
    fn triggered(self: &Arc<Self>, payload: &[u8]) {
        let tm = match TriggerMsg::decode(payload) {
            Ok(t) => t,
            Err(e) => {
                tracing::warn!("a message on {CHANNEL_INITQ} is not a trigger message: {e}");
                return;
            }
        };
        let name = if tm.trig_data.trim().is_empty() {
            self.qm
                .channels()
                .into_iter()
                .find(|c| c.chltype == ChlType::Sdr && c.xmitq == tm.queue)
                .map(|c| c.name)
        } else {
            Some(tm.trig_data.trim().to_string())
        };
        let Some(name) = name else {
            tracing::warn!(
                "trigger for transmission queue {}: no sender channel names it (set TRIGDATA \
                 to the channel)",
                tm.queue
            );
            return;
        };
        let Some(def) = self.qm.channel(&name) else {
            tracing::warn!(
                "trigger for transmission queue {}: channel {name} is not defined",
                tm.queue
            );
            return;
        };
        if def.chltype != ChlType::Sdr {
            tracing::warn!(
                "trigger for {}: channel {name} is a {} channel; only senders are triggered",
                tm.queue,
                def.chltype.name()
            );
            return;
        }
        let stopped = Connection::connect_internal(&self.qm).ok().and_then(|c| {
            let sq = SyncQ::open(&c, Role::Sender, &name).ok()?;
            let r = sq.load_opt(&c).ok().flatten();
            sq.close(&c);
            r.map(|r| r.stopped)
        });
        if stopped == Some(true) {
            tracing::info!(
                "trigger for {}: channel {name} is STOPPED; START CHANNEL({name}) to run it",
                tm.queue
            );
            return;
        }
        if self.running(&name).is_some() {
            return;
        }
        tracing::info!(
            "channel {name} triggered by transmission queue {}",
            tm.queue
        );
        self.spawn_sender(&name);
    }
}

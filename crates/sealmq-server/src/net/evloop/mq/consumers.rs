//! A conversation's asynchronous consumers (`consume.rs` serves their flows): one per handle
//! a REQUEST_MSGS started, the session's push channel once its first consumer started, and
//! the batches sent under syncpoint that wait for the client's MQCMIT or MQBACK.

use crate::consume::pushchan::PushRx;
use sealmq_types::sync::lock;
use sealmq_wire::Delivery;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The request id of ASYNC_MESSAGEs when no REQUEST_MSGS without a confirmation asked for
/// them (IBM's client uses 1 for its async consume; it takes a message carrying the id of a
/// request it waits on as that request's answer, and drops one of an id it does not know).
pub(super) const ASYNC_REQUEST_ID: u32 = 1;

/// Where the session's push channel is left by its maker (`Conv::connect`).
pub(super) type PushSlot = Arc<Mutex<Option<PushRx>>>;

/// One handle's consumer.
pub(super) struct Consumer {
    /// The session's name for it (a handle's consumer may be stopped and started again, its
    /// old batches still to settle).
    pub(super) tag: u32,
    /// The REQUEST_MSGS this consumer answers (its request id).
    pub(super) req: u32,
    pub(super) gmo_options: u32,
    /// The queue's PROPCTL, for a get asking properties as the queue defines.
    pub(super) propctl: sealmq_engine::objects::PropCtl,
    pub(super) md_version: u32,
    pub(super) selection_index: u16,
    /// Messages of this handle sent.
    pub(super) sent: u32,
    /// Bytes the client's last REQUEST_MSGS still lets be sent: one more message is credited
    /// while this is above zero (1, as the Java client asks without read-ahead: one message
    /// per request).
    pub(super) allowance: i64,
    /// The pusher found nothing for this consumer since its last message.
    pub(super) empty: bool,
    /// More credit was held back after a persistent message (see `send_message`): the next
    /// REQUEST_MSGS gives it.
    pub(super) paused: bool,
    /// A REQUEST_MSGS that must be answered now (CHECK): answered by the next message, or
    /// by MQRC_NO_MSG_AVAILABLE once the pusher finds none.
    pub(super) check: Option<u32>,
    /// The pusher's deliveries of the batch it is pushing.
    pub(super) batch: Vec<Delivery>,
    pub(super) resolved: String,
}

/// A conversation's consumers.
#[derive(Default)]
pub(super) struct Consumers {
    pub(super) by_hobj: HashMap<u32, Consumer>,
    pub(super) slot: PushSlot,
    pub(super) rx: Option<PushRx>,
    /// Messages of the conversation sent.
    pub(super) global: u32,
    pub(super) last_tag: u32,
    /// Batches sent under syncpoint, settled by MQCMIT or MQBACK: (tag, batch).
    pub(super) held: Vec<(u32, u32)>,
}

impl Consumers {
    /// The session's pushes, once its first consumer started.
    pub(super) fn rx(&mut self) -> Option<&mut PushRx> {
        if self.rx.is_none() {
            self.rx = lock(&self.slot).take();
        }
        self.rx.as_mut()
    }

    /// The channel ended (the session's consumers are all gone).
    pub(super) fn rx_ended(&mut self) {
        self.rx = None;
    }

    pub(super) fn forget(&mut self, hobj: u32) {
        self.by_hobj.remove(&hobj);
    }

    /// The handle of consumer `tag`.
    pub(super) fn hobj_of(&self, tag: u32) -> Option<u32> {
        self.by_hobj
            .iter()
            .find(|(_, c)| c.tag == tag)
            .map(|(h, _)| *h)
    }

    /// Batches held for MQCMIT or MQBACK, taken.
    pub(super) fn take_held(&mut self) -> Vec<(u32, u32)> {
        std::mem::take(&mut self.held)
    }
}

/// Waits for the session's next pushes; never, when no consumer has started.
pub(super) async fn next_push(rx: Option<&mut PushRx>) -> Option<(Vec<u8>, u32)> {
    match rx {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}

//! Read-ahead (MQ's DEFREADA on queues, MQOO_READ_AHEAD on open): on a handle that reads
//! ahead, gets outside a unit of work without match options take messages the queue manager
//! pushed ahead ([`ConsumeMode::ReadAhead`]) instead of one round trip each. A get with other
//! options on such a handle stops the read-ahead (what was pushed and not taken goes back,
//! or, non-persistent in a batch partly taken, is gone as with MQ) and is served directly;
//! the next plain get starts it again. Closing the handle stops it the same way.

use crate::consume::{ConsumeMode, ConsumeOptions, Consumer};
use crate::{Client, ClientError, Result};
use sealmq_mqi::{Browse, GetOptions, Got};
use std::collections::HashMap;

/// Messages pushed ahead per handle, and per batch.
const WINDOW: u32 = 256;
const BATCH: u32 = 64;

#[derive(Default)]
pub(crate) struct ReadAheads(HashMap<u32, Option<Consumer>>);

impl ReadAheads {
    /// A handle was opened: it reads ahead when asked to (`want`), or, not asked, when the
    /// queue's DEFREADA is YES; never when it is DISABLED or the handle is not for input.
    pub(crate) fn opened(
        &mut self,
        hobj: u32,
        input: bool,
        want: Option<bool>,
        defreada: Option<u8>,
    ) {
        use sealmq_wire::read_ahead::{DISABLED, YES};
        let on = input
            && defreada.is_some_and(|d| d != DISABLED)
            && want.unwrap_or(defreada == Some(YES));
        if on {
            self.0.insert(hobj, None);
        }
    }

    /// The handle is being closed: its read-ahead stops first.
    pub(crate) fn closed(&mut self, hobj: u32) {
        if let Some(Some(c)) = self.0.remove(&hobj) {
            let _ = c.stop();
        }
    }
}

fn plain(gmo: &GetOptions) -> bool {
    !gmo.syncpoint
        && gmo.browse == Browse::None
        && gmo.matching.msg_id.is_none()
        && gmo.matching.correl_id.is_none()
        && gmo.buffer.is_none()
        && !gmo.accept_truncated
}

impl Client {
    /// A get served from what was read ahead: `None` when the handle does not read ahead,
    /// the get is not a plain one, or nothing was pushed yet and the get does not wait (it is
    /// then served directly).
    pub(crate) fn read_ahead_get(&mut self, hobj: u32, gmo: &GetOptions) -> Result<Option<Got>> {
        let Some(slot) = self.ra.0.get_mut(&hobj) else {
            return Ok(None);
        };
        if !plain(gmo) {
            if let Some(c) = slot.take() {
                c.stop()?;
            }
            return Ok(None);
        }
        if slot.is_none() {
            let opts = ConsumeOptions {
                mode: ConsumeMode::ReadAhead,
                window: WINDOW,
                batch: BATCH,
                batch_ms: 20,
                ..Default::default()
            };
            let c = self.consume(hobj, opts)?;
            if let Some(slot) = self.ra.0.get_mut(&hobj) {
                *slot = Some(c);
            }
        }
        let Some(Some(c)) = self.ra.0.get_mut(&hobj) else {
            return Ok(None);
        };
        match gmo.wait {
            Some(w) if !w.is_zero() => match c.next(w)? {
                Some(g) => Ok(Some(g)),
                None => Err(ClientError {
                    reason: sealmq_types::ReasonCode::NoMsgAvailable,
                    detail: "no message arrived within the wait interval".into(),
                }),
            },
            _ => c.next_now(),
        }
    }
}

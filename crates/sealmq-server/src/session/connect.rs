//! The connection itself: a second Hello, a heartbeat, the client's disconnect, and the
//! connection's end (the Hello is answered before the session begins: `net/welcome.rs`).

use super::{Flow, Session};
use sealmq_types::ReasonCode;
use sealmq_wire::{Request, Response};

impl Session {
    /// Hello (already connected), Heartbeat, Disconnect.
    pub(super) fn connection(&self, req: Request) -> Flow {
        match req {
            Request::Disconnect => Flow::End,
            Request::Heartbeat => Flow::Reply(Response::Ok),
            _ => Flow::Reply(Response::Err {
                reason: ReasonCode::UnexpectedError.code(),
                detail: "already connected".into(),
            }),
        }
    }

    /// The connection ends: its pushers first (their unsettled batches are backed out), then
    /// its handles are closed (its unit of work is backed out as the engine connection
    /// drops). May wait for the log: on the blocking pool.
    pub(crate) fn end(mut self) {
        drop(std::mem::take(&mut self.consumers));
        let mut queues = std::collections::HashMap::new();
        for (k, h) in self.handles.drain() {
            let _ = self.conn.close(&h);
            queues.insert(k, h.name.clone());
        }
        for (k, n) in std::mem::take(&mut self.nondurable) {
            let shared = queues
                .get(&k)
                .is_some_and(|q| super::shared_still(&self.qm, q));
            if !shared {
                let _ = self.qm.delete_sub(&n);
            }
        }
        if let Some(a) = self.acct.take() {
            a.finish();
        }
    }
}

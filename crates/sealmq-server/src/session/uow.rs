//! MQCMIT and MQBACK. A commit with persistent records awaits its log force on the event
//! loop, holding no thread; a backout runs on the blocking pool (a message past its backout
//! threshold moves to its backout queue by a durable record).

use super::Session;
use crate::wiremap::err;
use sealmq_engine::mqi::CommitStep;
use sealmq_wire::Response;

impl Session {
    /// MQCMIT.
    pub(super) async fn commit(&mut self) -> Response {
        let r = match self.conn.commit_step() {
            CommitStep::Done(r) => r,
            CommitStep::Durable(d) => {
                let waited = self.qm.durable(d.ticket()).await;
                self.conn.commit_durable(d, waited)
            }
        };
        r.map(|_| Response::Ok).unwrap_or_else(err)
    }

    /// MQBACK.
    pub(super) async fn backout(&mut self) -> Response {
        let conn = self.conn.clone();
        self.on_pool(move || conn.backout().map(|_| Response::Ok).unwrap_or_else(err))
            .await
    }
}

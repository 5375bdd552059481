//! `sealmq reprotect` through the client (wire version 8): one batch per call.

use super::{Client, ClientError, Result};
use sealmq_types::ReasonCode;
use sealmq_wire::{Request, Response};

/// Where a re-protection stands after a batch.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reprotected {
    pub scanned: u32,
    /// Rewritten for the current recipients (in a dry run: to be rewritten).
    pub rewritten: u32,
    /// Already for exactly the current recipients.
    pub current: u32,
    /// Not encrypted (signed only, or unprotected), or IBM's envelope.
    pub other: u32,
    /// Not rewritten: no key of the keystore opens them, or they are damaged (`detail`).
    pub failed: u32,
    pub detail: String,
    /// Where the next batch starts; `None`: the queue's end.
    pub next: Option<(u8, u64)>,
    pub depth: u64,
    /// Private-key operations the queue manager made so far for this connection.
    pub unwraps: u64,
}

impl Client {
    /// Re-protects up to `batch` messages of `queue` from `after` (`None`: the first) for its
    /// policy's current recipients with the keys of the keystore in directory `keystore`, which
    /// the queue manager reads. The queue manager's own user only.
    pub fn reprotect(
        &mut self,
        queue: &str,
        keystore: &str,
        after: Option<(u8, u64)>,
        batch: u32,
        dry_run: bool,
    ) -> Result<Reprotected> {
        if self.version < sealmq_wire::V_REPROTECT {
            return Err(ClientError {
                reason: ReasonCode::UnexpectedError,
                detail: format!(
                    "the queue manager speaks protocol version {}, which cannot re-protect a \
                     queue; upgrade it",
                    self.version
                ),
            });
        }
        let (rank, seq) = after.unwrap_or((0, 0));
        let req = Request::Reprotect {
            queue: queue.to_string(),
            keystore: keystore.to_string(),
            start: after.is_none(),
            rank,
            seq,
            batch,
            dry_run,
        };
        match self.call(req)? {
            Response::Reprotected {
                scanned,
                rewritten,
                current,
                other,
                failed,
                detail,
                more,
                rank,
                seq,
                depth,
                unwraps,
            } => Ok(Reprotected {
                scanned,
                rewritten,
                current,
                other,
                failed,
                detail,
                next: more.then_some((rank, seq)),
                depth,
                unwraps,
            }),
            r => Self::unexpected(r),
        }
    }
}

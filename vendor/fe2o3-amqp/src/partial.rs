//! sealmq patch: a bound on the bytes of the messages a connection's links are still
//! receiving (multi-frame transfers not yet complete), shared by its links.
//!
//! Each link buffers a message until its last frame; the link's max-message-size bounds one
//! message, but a peer could start one on each of hundreds of links and finish none, making
//! the process hold hundreds of maximum-size messages per connection. A link whose next
//! frame would take its connection past the budget is detached with
//! `amqp:resource-limit-exceeded`; what it held is given back.

use std::sync::atomic::{AtomicU64, Ordering};

/// The bytes a connection's links hold of messages still arriving, and the most they may.
#[derive(Debug)]
pub struct PartialBudget {
    bytes: AtomicU64,
    limit: u64,
}

impl PartialBudget {
    /// A budget of `limit` bytes.
    pub fn new(limit: u64) -> Self {
        Self {
            bytes: AtomicU64::new(0),
            limit,
        }
    }

    /// Takes `n` bytes; `false` (nothing taken) when that would pass the limit.
    pub fn take(&self, n: u64) -> bool {
        let before = self.bytes.fetch_add(n, Ordering::AcqRel);
        if before.saturating_add(n) > self.limit {
            self.bytes.fetch_sub(n, Ordering::AcqRel);
            return false;
        }
        true
    }

    /// Gives `n` bytes back.
    pub fn give(&self, n: u64) {
        self.bytes.fetch_sub(n, Ordering::AcqRel);
    }

    /// The bytes held now.
    pub fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Acquire)
    }

    /// The most that may be held.
    pub fn limit(&self) -> u64 {
        self.limit
    }
}

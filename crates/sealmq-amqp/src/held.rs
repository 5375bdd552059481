//! What an AMQP connection's receiving links hold for it: the bytes of the messages they sent
//! and that its application has not settled yet. Each is got (in a unit of work), kept for
//! its outcome and held by the AMQP library until settled; a client that stops settling would
//! otherwise make the queue manager hold every message its credit covers — 256 deliveries per
//! link, MAXHANDS links, in every session. A link gets its next message only while the
//! connection holds less than [`HELD_BYTES`]; a check and the get that follows run with no
//! await between them, so the bound is passed by at most one message per runtime worker.
//!
//! The bound is large (256 MiB) on purpose: a transacted or client-acknowledging consumer
//! settles only after many messages, and one that needs more unsettled than the bound waits
//! for ever. A client that stops *reading* is stopped long before, by the frames its
//! connection's channels hold (crate::listener, `FRAMES_BUFFERED`).

use std::sync::atomic::{AtomicU64, Ordering};
use tokio::sync::Notify;

/// Unsettled bytes an AMQP connection's receiving links may hold before they stop getting
/// (docs/amqp.md, "Pipelining").
pub const HELD_BYTES: u64 = 256 << 20;

/// One connection's unsettled bytes.
#[derive(Default)]
pub struct Held {
    bytes: AtomicU64,
    freed: Notify,
}

impl Held {
    /// Whether a link may get another message now.
    pub fn room(&self) -> bool {
        self.bytes.load(Ordering::Acquire) < HELD_BYTES
    }

    /// Waits until a link may get another message. A settlement between the look and the
    /// wait is not missed (the wait is enabled before the look).
    pub async fn wait_room(&self) {
        loop {
            let freed = self.freed.notified();
            tokio::pin!(freed);
            freed.as_mut().enable();
            if self.room() {
                return;
            }
            freed.await;
        }
    }

    /// `n` bytes sent and not settled.
    pub fn take(&self, n: u64) {
        self.bytes.fetch_add(n, Ordering::AcqRel);
    }

    /// `n` bytes settled (or their link gone): links waiting for room look again.
    pub fn give(&self, n: u64) {
        self.bytes.fetch_sub(n, Ordering::AcqRel);
        self.freed.notify_waiters();
    }

    pub fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[tokio::test]
    async fn a_wait_for_room_ends_when_enough_is_settled() {
        let h = Arc::new(Held::default());
        h.take(HELD_BYTES);
        assert!(!h.room());
        let h2 = h.clone();
        let waiting = tokio::spawn(async move { h2.wait_room().await });
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished());
        h.give(1);
        tokio::time::timeout(std::time::Duration::from_secs(5), waiting)
            .await
            .expect("room, once a byte is settled")
            .expect("the waiter ends");
        assert_eq!(h.bytes(), HELD_BYTES - 1);
    }
}

//! The channel from a connection's asynchronous-consume pushers to its writer, bounded in
//! frames ([`PUSHED_IN_FLIGHT`] buffers) and in bytes ([`PUSHED_BYTES`]): what waits for a
//! client that reads slowly, or not at all, is bounded per connection whatever window and batch
//! size its consumers asked for (a batch larger than the whole budget waits for all of it, and
//! goes alone). Answers that must follow the pushes (docs/wire.md: a ConsumeStop's) pass
//! through it outside the byte budget: one small frame each.

use std::sync::Arc;
use tokio::sync::{Semaphore, mpsc};

/// Buffers a connection's pushers may have waiting before they wait themselves.
pub(crate) const PUSHED_IN_FLIGHT: usize = 64;

/// Bytes a connection's pushers may have waiting for its writer (besides the sockets'
/// buffers): back-pressure on the pushers, never on the queue manager.
pub(crate) const PUSHED_BYTES: usize = 8 << 20;

/// Frames, with the part of the byte budget they hold.
struct Frames {
    bytes: Vec<u8>,
    room: u32,
}

/// Where a connection's pushers send their frames.
#[derive(Clone)]
pub(crate) struct PushTx {
    tx: mpsc::Sender<Frames>,
    room: Arc<Semaphore>,
}

/// The writer's end: what was sent, in order.
pub(crate) struct PushRx {
    rx: mpsc::Receiver<Frames>,
    room: Arc<Semaphore>,
}

pub(crate) fn channel() -> (PushTx, PushRx) {
    let (tx, rx) = mpsc::channel(PUSHED_IN_FLIGHT);
    let room = Arc::new(Semaphore::new(PUSHED_BYTES));
    (
        PushTx {
            tx,
            room: room.clone(),
        },
        PushRx { rx, room },
    )
}

/// The budget `len` bytes take: all of it at most.
fn room_for(len: usize) -> u32 {
    len.clamp(1, PUSHED_BYTES) as u32
}

impl PushTx {
    /// Queues `bytes` once the budget has room for them. Cancel-safe: nothing is taken unless
    /// queued. False: the writer ended.
    pub(crate) async fn send(&self, bytes: Vec<u8>) -> bool {
        let n = room_for(bytes.len());
        let Ok(room) = self.room.acquire_many(n).await else {
            return false;
        };
        let Ok(slot) = self.tx.reserve().await else {
            return false;
        };
        room.forget();
        slot.send(Frames { bytes, room: n });
        true
    }

    /// An answer that must follow the pushes (outside the byte budget). False: the writer
    /// ended.
    pub(crate) async fn send_answer(&self, bytes: Vec<u8>) -> bool {
        self.tx.send(Frames { bytes, room: 0 }).await.is_ok()
    }
}

impl PushRx {
    /// What waits, several buffers in one when they queued up, with the budget they hold;
    /// `None` once every sender is gone.
    pub(crate) async fn recv(&mut self) -> Option<(Vec<u8>, u32)> {
        let first = self.rx.recv().await?;
        Some(self.gather(first))
    }

    /// What waits now, without waiting.
    pub(crate) fn try_recv(&mut self) -> Option<(Vec<u8>, u32)> {
        let first = self.rx.try_recv().ok()?;
        Some(self.gather(first))
    }

    fn gather(&mut self, first: Frames) -> (Vec<u8>, u32) {
        let (mut bytes, mut room) = (first.bytes, first.room);
        while let Ok(more) = self.rx.try_recv() {
            bytes.extend_from_slice(&more.bytes);
            room = room.saturating_add(more.room);
        }
        (bytes, room)
    }

    /// What a `recv` returned was written: its budget is the pushers' again.
    pub(crate) fn written(&self, room: u32) {
        self.room.add_permits(room as usize);
    }
}

impl Drop for PushRx {
    /// The writer ended: pushers waiting for room learn it (their sends fail) instead of
    /// waiting for a budget nobody gives back.
    fn drop(&mut self) {
        self.room.close();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_budget_bounds_bytes_and_comes_back_once_written() {
        let (tx, mut rx) = channel();
        assert!(tx.send(vec![1; PUSHED_BYTES / 2]).await);
        assert!(tx.send(vec![2; PUSHED_BYTES / 2]).await);
        // The budget is spent: a third send waits until something is written.
        let third =
            tokio::time::timeout(std::time::Duration::from_millis(100), tx.send(vec![3; 10])).await;
        assert!(third.is_err(), "no room: the send waits");
        // An answer passes beside the budget.
        assert!(tx.send_answer(vec![9; 5]).await);
        let (bytes, room) = rx.recv().await.unwrap();
        assert_eq!(bytes.len(), PUSHED_BYTES + 5);
        assert_eq!(room as usize, PUSHED_BYTES);
        rx.written(room);
        // A frame larger than the budget takes all of it, and goes.
        assert!(tx.send(vec![4; PUSHED_BYTES * 2]).await);
        let (bytes, room) = rx.recv().await.unwrap();
        assert_eq!(
            (bytes.len(), room as usize),
            (PUSHED_BYTES * 2, PUSHED_BYTES)
        );
        // The writer gone, a sender waiting for room is told at once.
        let waiting = tokio::spawn({
            let tx = tx.clone();
            async move { tx.send(vec![5; 10]).await }
        });
        drop(rx);
        assert!(!waiting.await.unwrap());
    }
}

//! A connection's writing side on the event loop: answers written by its task, and what
//! asynchronous consume's pushers (tasks) hand over through a bounded channel. A write that
//! makes no progress for the write-stall limit ends the connection.

use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncWrite, AsyncWriteExt, WriteHalf};
use tokio::sync::{Mutex, Notify};

use crate::consume::PushTx;

/// The writing half of a connection, shared by its task and its pushers' forwarder.
pub(crate) struct Writer<S> {
    half: Mutex<WriteHalf<S>>,
    /// How long a write may make no progress.
    stall: Duration,
    /// Notified when the connection must end (a write failed or stalled).
    ended: Arc<Notify>,
}

impl<S: AsyncWrite + Send + 'static> Writer<S> {
    pub(crate) fn new(half: WriteHalf<S>, stall: Duration, ended: Arc<Notify>) -> Arc<Self> {
        Arc::new(Writer {
            half: Mutex::new(half),
            stall,
            ended,
        })
    }

    /// Writes one or more whole frames; a failure or stall ends the connection.
    pub(crate) async fn write(&self, bytes: &[u8]) -> std::io::Result<()> {
        let mut w = self.half.lock().await;
        let write = async {
            w.write_all(bytes).await?;
            w.flush().await
        };
        let r = within(self.stall, write).await.unwrap_or_else(|| {
            Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "the client read nothing for the write-stall limit",
            ))
        });
        if r.is_err() {
            let _ = w.shutdown().await;
            self.ended.notify_one();
        }
        r
    }

    /// The channel of the connection's pushers (tasks on their own runtime): a task of the
    /// loop writes what they send, several batches in one write when they queue up.
    pub(crate) fn for_pushers(self: &Arc<Self>, rt: &tokio::runtime::Handle) -> PushTx {
        let (tx, mut rx) = crate::consume::pushchan::channel();
        let me = self.clone();
        rt.spawn(async move {
            // What else is waiting goes out in the same write.
            while let Some((b, room)) = rx.recv().await {
                if me.write(&b).await.is_err() {
                    break;
                }
                rx.written(room);
            }
        });
        tx
    }
}

/// `f`'s output, or `None` when it takes longer than `limit`. A future that completes at
/// once (most writes and reads: the socket had room, the bytes were there) costs no timer.
pub(crate) async fn within<F: std::future::Future>(limit: Duration, f: F) -> Option<F::Output> {
    let mut f = std::pin::pin!(f);
    let first = std::future::poll_fn(|cx| std::task::Poll::Ready(f.as_mut().poll(cx))).await;
    match first {
        std::task::Poll::Ready(v) => Some(v),
        std::task::Poll::Pending => tokio::time::timeout(limit, f).await.ok(),
    }
}

//! Where a request goes when it must block: the event loop's blocking pool (QM-side
//! interception's cryptography, a record that must be durable before the call returns), or
//! for the administrator's MQSC and stop a thread of their own, never queued behind a pool
//! that others' requests may have filled. The futures here hold nothing of the session.

use super::Session;
use sealmq_types::ReasonCode;
use sealmq_wire::Response;
use std::future::Future;

impl Session {
    /// `f` on the blocking pool; `Err` is the answer when the pool could not run it (the
    /// server is ending, or `f` failed unexpectedly).
    pub(super) fn pool<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> impl Future<Output = Result<T, Response>> + Send + 'static {
        let (qm, conn) = (self.qm.clone(), self.conn.id);
        let task = tokio::task::spawn_blocking(f);
        async move {
            task.await.map_err(|e| {
                if e.is_cancelled() {
                    return Response::Err {
                        reason: ReasonCode::QMgrQuiescing.code(),
                        detail: format!("queue manager {} is ending", qm.name()),
                    };
                }
                tracing::error!(conn, "a request failed on the blocking pool: {e}");
                failed()
            })
        }
    }

    /// `f`, answering the request, on the blocking pool.
    pub(super) fn on_pool(
        &self,
        f: impl FnOnce() -> Response + Send + 'static,
    ) -> impl Future<Output = Response> + Send + 'static {
        let task = self.pool(f);
        async move { task.await.unwrap_or_else(|r| r) }
    }

    /// `f` on a thread of its own (the administrator's lifeline).
    pub(super) fn on_own_thread(
        &self,
        f: impl FnOnce() -> Response + Send + 'static,
    ) -> impl Future<Output = Response> + Send + 'static {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let spawned = std::thread::Builder::new()
            .name("sealmq-admin".into())
            .spawn(move || {
                let _ = tx.send(f());
            });
        async move {
            if let Err(e) = spawned {
                return Response::Err {
                    reason: ReasonCode::ResourceProblem.code(),
                    detail: format!("cannot start a thread for the command: {e}"),
                };
            }
            rx.await.unwrap_or_else(|_| failed())
        }
    }
}

fn failed() -> Response {
    Response::Err {
        reason: ReasonCode::UnexpectedError.code(),
        detail: "the request failed inside the queue manager: see its error log".into(),
    }
}

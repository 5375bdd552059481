//! Bounds on connections: MAXCHL counted over accepted sockets, and how a connection refused
//! before its Hello is answered (docs/wire.md).

use sealmq_wire::Response;
use std::io::Write;
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// After a failed accept (out of descriptors, say): log it and wait a little, instead of
/// spinning on accept while the failure lasts.
pub(crate) fn accept_failed(what: &str, e: &std::io::Error) {
    tracing::warn!("accept on {what} failed: {e}");
    std::thread::sleep(Duration::from_millis(50));
}

/// Connections counted against MAXCHL.
#[derive(Default)]
pub(crate) struct Limit(std::sync::atomic::AtomicU32);

/// One counted connection; dropping it uncounts it.
pub(crate) struct LimitSlot(Arc<Limit>);

impl Drop for LimitSlot {
    fn drop(&mut self) {
        self.0.0.fetch_sub(1, Ordering::AcqRel);
    }
}

pub(crate) trait TakeSlot {
    fn take(&self, max: u32) -> Option<LimitSlot>;
}

impl TakeSlot for Arc<Limit> {
    /// A slot unless `max` connections are counted already.
    fn take(&self, max: u32) -> Option<LimitSlot> {
        self.0
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < max).then_some(n + 1)
            })
            .ok()
            .map(|_| LimitSlot(self.clone()))
    }
}

/// A socket a connection arrived on, as far as refusing it early needs.
pub(crate) trait EarlySock {
    fn set_write_timeout_ms(&self, ms: u64);
    fn set_read_timeout_ms(&self, ms: u64);
    fn close(&self);
}

macro_rules! early_sock {
    ($($t:ty),*) => {$(
        impl EarlySock for $t {
            fn set_write_timeout_ms(&self, ms: u64) {
                let _ = self.set_write_timeout(Some(Duration::from_millis(ms)));
            }
            fn set_read_timeout_ms(&self, ms: u64) {
                let _ = self.set_read_timeout(Some(Duration::from_millis(ms)));
            }
            fn close(&self) {
                let _ = self.shutdown(std::net::Shutdown::Both);
            }
        }
    )*};
}
early_sock!(TcpStream, UnixStream);

/// Answers a connection refused before its Hello (docs/wire.md: an Err frame, then close).
pub(crate) fn refuse_early<S: EarlySock>(s: &S, reason: u32, detail: &str)
where
    for<'a> &'a S: Write,
{
    s.set_write_timeout_ms(200);
    let mut w = s;
    let _ = sealmq_wire::write_response(
        &mut w,
        0,
        &Response::Err {
            reason,
            detail: detail.into(),
        },
    );
    s.close();
}

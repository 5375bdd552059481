//! The error log's lines about refused AMQP connections, at most [`PER_SECOND`] a second per
//! process, as for the other listeners (issue 42: a flood of sockets that failed their
//! handshake wrote a line each, 18,000 in ten seconds, and rotated the rest of the log away).
//! The first line after suppressed ones says how many.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Lines written in one second at most.
pub(crate) const PER_SECOND: u32 = 20;

struct Window {
    began: Option<Instant>,
    written: u32,
    suppressed: u64,
}

static STATE: Mutex<Window> = Mutex::new(Window {
    began: None,
    written: 0,
    suppressed: 0,
});

/// Logs that a connection of `channel` from `peer` was refused or closed, and why, unless
/// [`PER_SECOND`] lines were written this second (then it is counted for the next line).
pub(crate) fn refused(channel: &str, peer: &std::net::SocketAddr, why: &str) {
    let suppressed = {
        let mut w = sealmq_types::sync::lock(&STATE);
        if w.began
            .is_none_or(|t| t.elapsed() >= Duration::from_secs(1))
        {
            w.began = Some(Instant::now());
            w.written = 0;
        }
        if w.written >= PER_SECOND {
            w.suppressed += 1;
            return;
        }
        w.written += 1;
        std::mem::take(&mut w.suppressed)
    };
    if suppressed > 0 {
        tracing::warn!(
            channel, %peer,
            "AMQP connection refused: {why} ({suppressed} more refused and not logged before this line)"
        );
    } else {
        tracing::warn!(channel, %peer, "AMQP connection refused: {why}");
    }
}

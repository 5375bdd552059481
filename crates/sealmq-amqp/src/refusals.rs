//! The error log's lines about refused AMQP connections, at most one a second per process
//! (issue 42: a flood of sockets that fail their handshake wrote a line each, 18,000 in ten
//! seconds, and rotated the rest of the log away). A line that follows suppressed ones says
//! how many.

use std::sync::Mutex;
use std::time::{Duration, Instant};

const EVERY: Duration = Duration::from_secs(1);

static STATE: Mutex<(u64, Option<Instant>)> = Mutex::new((0, None));

/// Logs that a connection of `channel` from `peer` was refused or closed, and why, unless a
/// line was written less than a second ago (then it is counted for the next line).
pub(crate) fn refused(channel: &str, peer: &std::net::SocketAddr, why: &str) {
    let suppressed = {
        let mut s = crate::link::lock(&STATE);
        if s.1.is_some_and(|t| t.elapsed() < EVERY) {
            s.0 += 1;
            return;
        }
        s.1 = Some(Instant::now());
        std::mem::take(&mut s.0)
    };
    if suppressed > 0 {
        tracing::warn!(
            channel, %peer,
            "AMQP connection refused: {why} ({suppressed} more refused since the last such line)"
        );
    } else {
        tracing::warn!(channel, %peer, "AMQP connection refused: {why}");
    }
}

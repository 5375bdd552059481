//! Security events written to the queue manager's error log (`errors/SEALMQ01.LOG`): refused connections and
//! channels, protocol errors, authentication failures. A flood (a port scan, 4,000 sockets)
//! must not fill the disk or drown the log: at most [`PER_SECOND`] lines a second are written,
//! and the next line written says how many were left out.

use sealmq_types::sync::lock;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

pub const PER_SECOND: u32 = 20;

#[derive(Default)]
pub struct Events {
    /// (the second, lines written in it, lines suppressed since the last written one)
    state: Mutex<(u64, u32, u64)>,
}

impl Events {
    /// Writes `line` unless this second's quota is used up. Never include a secret.
    pub fn log(&self, line: &str) {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        let sec = now.as_secs();
        let mut s = lock(&self.state);
        if s.0 != sec {
            s.0 = sec;
            s.1 = 0;
        }
        if s.1 >= PER_SECOND {
            s.2 += 1;
            return;
        }
        s.1 += 1;
        let skipped = std::mem::take(&mut s.2);
        drop(s);
        let note = if skipped > 0 {
            format!(" ({skipped} similar events not logged)")
        } else {
            String::new()
        };
        tracing::warn!("{line}{note}");
    }
}

pub use sealmq_types::time::utc;

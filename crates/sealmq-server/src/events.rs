//! Security events written to the queue manager's log (`qm.log`): refused connections and
//! channels, protocol errors, authentication failures. A flood (a port scan, 4,000 sockets)
//! must not fill the disk or drown the log: at most [`PER_SECOND`] lines a second are written,
//! and the next line written says how many were left out.

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
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
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
        eprintln!("{} sealmq: {line}{note}", utc(sec, now.subsec_millis()));
    }
}

/// `YYYY-MM-DDTHH:MM:SS.mmmZ` for seconds since the epoch.
pub fn utc(secs: u64, millis: u32) -> String {
    let rem = secs % 86_400;
    let (y, m, d) = civil((secs / 86_400) as i64);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{millis:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// (year, month, day) of a day counted from 1970-01-01 (Howard Hinnant's civil-from-days).
pub(crate) fn civil(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

#[cfg(test)]
mod tests {
    #[test]
    fn utc_dates() {
        assert_eq!(super::utc(0, 5), "1970-01-01T00:00:00.005Z");
        assert_eq!(super::utc(1_795_431_316, 765), "2026-11-23T10:55:16.765Z");
        assert_eq!(super::utc(951_782_400, 0), "2000-02-29T00:00:00.000Z");
    }
}

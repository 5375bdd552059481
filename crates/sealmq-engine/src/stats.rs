//! Queue statistics (SPEC §8): what each local queue saw — puts, gets and browses with their
//! bytes, and its depth high-water mark — kept under the queue's own lock (the MQI holds it at
//! every point that counts, so counting costs no extra synchronisation).
//!
//! Two readers each have their own view: `RESET QSTATS` (MSGSIN, MSGSOUT, HIQDEPTH,
//! TIMESINCERESET since its last reset, as MQ's command) and the interval statistics the
//! server writes every STATINT seconds (deltas of the running totals, and the high-water mark
//! since the previous interval). Neither disturbs the other. Counts live in memory: they start
//! from zero when the queue manager starts.

use std::time::Instant;

/// Running totals of one queue since the queue manager started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueueCounters {
    /// Successful MQPUT/MQPUT1 calls (in a unit of work or not, as MQ counts them).
    pub puts: u64,
    pub put_bytes: u64,
    /// Successful destructive MQGET calls.
    pub gets: u64,
    pub get_bytes: u64,
    /// Successful browses.
    pub browses: u64,
    /// Of the bytes put, those of persistent messages; of the browses, those of persistent
    /// messages (IBM's dashboards show both kinds).
    pub persistent_put_bytes: u64,
    pub persistent_browses: u64,
}

/// The statistics state of one queue, inside its `QueueState`.
#[derive(Debug, Clone)]
pub struct QueueStats {
    pub total: QueueCounters,
    /// When the last message was put and got (ms since the epoch; 0: none since start).
    pub last_put_ms: i64,
    pub last_get_ms: i64,
    reset_base: QueueCounters,
    reset_at: Instant,
    hw_reset: usize,
    hw_interval: usize,
}

impl Default for QueueStats {
    fn default() -> Self {
        QueueStats {
            total: QueueCounters::default(),
            last_put_ms: 0,
            last_get_ms: 0,
            reset_base: QueueCounters::default(),
            reset_at: Instant::now(),
            hw_reset: 0,
            hw_interval: 0,
        }
    }
}

/// What `RESET QSTATS` returns for one queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QStatsReset {
    pub queue: String,
    pub msgs_in: u64,
    pub msgs_out: u64,
    pub hi_depth: usize,
    pub secs_since_reset: u64,
}

/// One queue's figures for a statistics interval: running totals (the caller takes deltas)
/// and the high-water mark since the previous interval.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueInterval {
    pub queue: String,
    pub depth: usize,
    pub hi_depth: usize,
    pub total: QueueCounters,
}

impl QueueStats {
    /// The queue's depth changed to `depth`.
    pub fn on_depth(&mut self, depth: usize) {
        self.hw_reset = self.hw_reset.max(depth);
        self.hw_interval = self.hw_interval.max(depth);
    }

    pub fn put(&mut self, bytes: usize, persistent: bool) {
        self.last_put_ms = sealmq_mqi::md::now_ms();
        self.total.puts += 1;
        self.total.put_bytes += bytes as u64;
        if persistent {
            self.total.persistent_put_bytes += bytes as u64;
        }
    }

    /// Takes back a put that did not happen after all (its log write failed).
    pub fn unput(&mut self, bytes: usize, persistent: bool) {
        self.total.puts = self.total.puts.saturating_sub(1);
        self.total.put_bytes = self.total.put_bytes.saturating_sub(bytes as u64);
        if persistent {
            self.total.persistent_put_bytes =
                self.total.persistent_put_bytes.saturating_sub(bytes as u64);
        }
    }

    pub fn got(&mut self, bytes: usize) {
        self.last_get_ms = sealmq_mqi::md::now_ms();
        self.total.gets += 1;
        self.total.get_bytes += bytes as u64;
    }

    pub fn browsed(&mut self, persistent: bool) {
        self.total.browses += 1;
        if persistent {
            self.total.persistent_browses += 1;
        }
    }

    /// RESET QSTATS: the figures since the last reset; the high-water mark starts again from
    /// the current depth.
    pub(crate) fn reset(&mut self, queue: &str, depth: usize) -> QStatsReset {
        let r = QStatsReset {
            queue: queue.to_string(),
            msgs_in: self.total.puts - self.reset_base.puts,
            msgs_out: self.total.gets - self.reset_base.gets,
            hi_depth: self.hw_reset.max(depth),
            secs_since_reset: self.reset_at.elapsed().as_secs(),
        };
        self.reset_base = self.total;
        self.reset_at = Instant::now();
        self.hw_reset = depth;
        r
    }

    pub(crate) fn take_interval(&mut self, queue: &str, depth: usize) -> QueueInterval {
        let r = QueueInterval {
            queue: queue.to_string(),
            depth,
            hi_depth: self.hw_interval.max(depth),
            total: self.total,
        };
        self.hw_interval = depth;
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reset_and_interval_views_do_not_disturb_each_other() {
        let mut s = QueueStats::default();
        for depth in 1..=5 {
            s.put(100, false);
            s.on_depth(depth);
        }
        for depth in (2..=4).rev() {
            s.got(100);
            s.on_depth(depth);
        }
        s.browsed(false);
        let i = s.take_interval("Q", 2);
        assert_eq!((i.hi_depth, i.total.puts, i.total.gets), (5, 5, 3));
        assert_eq!(
            (i.total.put_bytes, i.total.get_bytes, i.total.browses),
            (500, 300, 1)
        );
        let r = s.reset("Q", 2);
        assert_eq!((r.msgs_in, r.msgs_out, r.hi_depth), (5, 3, 5));
        // After a reset: nothing since, and the high-water mark is the current depth.
        let r = s.reset("Q", 2);
        assert_eq!((r.msgs_in, r.msgs_out, r.hi_depth), (0, 0, 2));
        // The interval view kept its own high-water mark.
        s.put(10, true);
        s.on_depth(3);
        s.unput(10, true);
        s.on_depth(2);
        let i = s.take_interval("Q", 2);
        assert_eq!((i.hi_depth, i.total.puts, i.total.put_bytes), (3, 5, 500));
    }
}

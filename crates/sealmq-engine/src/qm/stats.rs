//! The queue manager's side of queue statistics (SPEC §8): RESET QSTATS, the metrics
//! endpoint's totals and the interval records, each read queue by queue under the queue's own
//! lock (the counting itself is in `stats.rs`).

use super::*;
use crate::stats::{QStatsReset, QueueCounters, QueueInterval};
use sealmq_types::sync::read;

impl QueueManager {
    /// `f` on every local queue whose name `keep` accepts, in name order, each under its own
    /// lock (taken one at a time, after the list of queues is read).
    fn each_local<T>(
        &self,
        keep: impl Fn(&str) -> bool,
        mut f: impl FnMut(&str, &mut crate::queue::QueueState) -> T,
    ) -> Vec<T> {
        let mut queues: Vec<_> = read(&self.locals)
            .iter()
            .filter(|(name, _)| keep(name))
            .map(|(name, q)| (name.clone(), q.clone()))
            .collect();
        queues.sort_by(|a, b| a.0.cmp(&b.0));
        queues
            .into_iter()
            .map(|(name, q)| f(&name, &mut q.lock()))
            .collect()
    }

    /// RESET QSTATS for the local queues matching `pattern` (`*` for any characters).
    pub fn reset_queue_stats(&self, pattern: &str) -> MqResult<Vec<QStatsReset>> {
        let out = self.each_local(
            |name| crate::authority::profile_matches(pattern, name),
            |name, st| {
                let depth = st.depth();
                st.stats.reset(name, depth)
            },
        );
        if out.is_empty() {
            return mqerr!(
                UnknownObjectName,
                "no local queue matches '{pattern}' for RESET QSTATS"
            );
        }
        Ok(out)
    }

    /// Every local queue's depth and running totals, resetting nothing (the metrics endpoint).
    pub fn queue_totals(&self) -> Vec<(String, usize, QueueCounters)> {
        self.each_local(
            |_| true,
            |name, st| (name.to_string(), st.depth(), st.stats.total),
        )
    }

    /// Every local queue's status for the metrics endpoint: its definition's DESCR and USAGE
    /// (XMITQ or NORMAL), its status, and the age of its oldest committed message in seconds
    /// (MSGAGE; 0 when empty, or when that message cannot be read).
    pub fn queue_gauges(&self) -> Vec<(String, String, String, QueueStatus, u64)> {
        let now = sealmq_mqi::md::now_ms();
        self.each_local(
            |_| true,
            |name, st| {
                let age = oldest_age(st, now);
                let usage = st.def.usage.name();
                let status = QueueStatus::of(st);
                (
                    name.to_string(),
                    st.def.descr.clone(),
                    usage.to_string(),
                    status,
                    age,
                )
            },
        )
    }

    /// For the local queues `names` holds (one pass, no other queue read): the age of the
    /// oldest committed message in seconds (as [`QueueManager::queue_gauges`]) and the puts
    /// and destructive gets since the start (the REST API's queue status).
    pub fn queue_activity(
        &self,
        names: &std::collections::HashSet<String>,
    ) -> Vec<(String, u64, u64, u64)> {
        let now = sealmq_mqi::md::now_ms();
        self.each_local(
            |name| names.contains(name),
            |name, st| {
                let c = st.stats.total;
                (name.to_string(), oldest_age(st, now), c.puts, c.gets)
            },
        )
    }

    /// The figures of every local queue for a statistics interval (see [`QueueInterval`]).
    pub fn queue_intervals(&self) -> Vec<QueueInterval> {
        self.each_local(
            |_| true,
            |name, st| {
                let depth = st.depth();
                st.stats.take_interval(name, depth)
            },
        )
    }
}

/// Seconds since the oldest committed message of `st` was put (MSGAGE; 0 when empty, or
/// when that message cannot be read), at `now_ms`.
fn oldest_age(st: &crate::queue::QueueState, now_ms: i64) -> u64 {
    st.entries
        .oldest()
        .and_then(|e| st.message(e).ok())
        .map(|m| (now_ms - m.md.put_time_ms).max(0) as u64 / 1000)
        .unwrap_or(0)
}

//! The Prometheus names of IBM's MQ exporter (mq_prometheus from ibm-messaging's
//! mq-metric-samples, issue 29), so that the dashboards operators already have read a sealmq
//! queue manager: `ibmmq_qmgr_*`, `ibmmq_queue_*`, `ibmmq_channel_*`, with its labels (`qmgr`,
//! `platform`, `queue`, `description`, `usage`, `channel`, `type`, `connname`, `rqmname`) and
//! its status numbers (a queue manager RUNNING is 2, a channel RUNNING 3: MQ's MQQMSTA_* and
//! MQCHS_* values). Beside them, what IBM's exporter lacks: the protection error queue's depth
//! (`sealmq_protection_error_queue_depth`). Written into the same exposition as the `sealmq_*`
//! families (`metrics.rs`); docs/statistics.md lists both, and `metrics_res.rs` adds IBM's
//! resource families.

use crate::chinit::{Initiator, State};
use sealmq_engine::QueueManager;
use std::sync::Arc;

use super::out::Out;

/// MQ's platform name for this queue manager's (MQPL_UNIX for Linux and the other Unixes).
pub const PLATFORM: &str = "UNIX";

/// MQCHS_* of a channel state.
fn mqchs(s: State) -> f64 {
    match s {
        State::Binding => 1.0,
        State::Starting => 2.0,
        State::Running => 3.0,
        State::Stopping => 4.0,
        State::Retrying => 5.0,
        State::Stopped => 6.0,
    }
}

pub(crate) fn render(o: &mut Out, qm: &QueueManager, chinit: &Arc<Initiator>) {
    qmgr(o, qm);
    queues(o, qm);
    channels(o, chinit);
}

/// The queue manager's own gauges.
fn qmgr(o: &mut Out, qm: &QueueManager) {
    let p = [("platform", PLATFORM)];
    let g = |o: &mut Out, name: &str, help: &str, v: f64| {
        o.family(name, "gauge", help);
        o.sample(name, &p, v);
    };
    g(
        o,
        "ibmmq_qmgr_status",
        "Queue manager status (MQQMSTA: 2 RUNNING).",
        2.0,
    );
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    g(
        o,
        "ibmmq_qmgr_uptime",
        "Seconds since the queue manager started.",
        now.saturating_sub(qm.started) as f64,
    );
    let conns = qm.connections().iter().filter(|c| !c.internal).count();
    g(
        o,
        "ibmmq_qmgr_connection_count",
        "Application connections.",
        conns as f64,
    );
    g(
        o,
        "ibmmq_qmgr_channel_initiator_status",
        "Channel initiator status (2 RUNNING, 0 STOPPED).",
        if qm.chinit().is_some() { 2.0 } else { 0.0 },
    );
    g(
        o,
        "ibmmq_qmgr_command_server_status",
        "Command server status (2 RUNNING).",
        2.0,
    );
    g(
        o,
        "ibmmq_qmgr_max_channels",
        "MAXCHL: client connections allowed at once.",
        f64::from(qm.qmgr().maxchl),
    );
    let log = qm.log_stats();
    g(
        o,
        "ibmmq_qmgr_log_write_latency_seconds",
        "Time to write and sync a log batch (moving average).",
        log.write_nanos_avg as f64 / 1e9,
    );
    g(
        o,
        "ibmmq_qmgr_log_written_bytes",
        "Bytes written to the recovery log since start.",
        log.bytes as f64,
    );
}

/// Each queue's gauges, and the protection error queue's depth.
fn queues(o: &mut Out, qm: &QueueManager) {
    let queues = qm.queue_gauges();
    let totals: std::collections::HashMap<String, sealmq_engine::stats::QueueCounters> = qm
        .queue_totals()
        .into_iter()
        .map(|(n, _, c)| (n, c))
        .collect();
    type Field = fn(&sealmq_engine::QueueStatus, u64, &sealmq_engine::stats::QueueCounters) -> f64;
    let fields: [(&str, &str, Field); 7] = [
        ("ibmmq_queue_depth", "Messages on the queue.", |s, _, _| {
            s.depth as f64
        }),
        (
            "ibmmq_queue_oldest_message_age",
            "Age in seconds of the oldest message on the queue.",
            |_, age, _| age as f64,
        ),
        (
            "ibmmq_queue_input_handles",
            "Handles open for input.",
            |s, _, _| f64::from(s.input_opens),
        ),
        (
            "ibmmq_queue_output_handles",
            "Handles open for output.",
            |s, _, _| f64::from(s.output_opens),
        ),
        (
            "ibmmq_queue_mqput_mqput1_count",
            "MQPUT and MQPUT1 calls that put a message since start.",
            |_, _, c| c.puts as f64,
        ),
        (
            "ibmmq_queue_mqget_count",
            "Destructive MQGET calls that got a message since start.",
            |_, _, c| c.gets as f64,
        ),
        (
            "ibmmq_queue_qfile_current_size",
            "Bytes of the queue's files.",
            |s, _, _| s.file_bytes as f64,
        ),
    ];
    for (name, help, f) in fields {
        o.family(name, "gauge", help);
        for (q, descr, usage, st, age) in &queues {
            let c = totals.get(q).copied().unwrap_or_default();
            let labels = [
                ("platform", PLATFORM),
                ("queue", q.as_str()),
                ("description", descr.as_str()),
                ("usage", usage.as_str()),
            ];
            o.sample(name, &labels, f(st, *age, &c));
        }
    }
    let perr = queues
        .iter()
        .find(|(q, ..)| q == sealmq_engine::objects::PROTECTION_ERROR_Q)
        .map(|(_, _, _, s, _)| s.depth)
        .unwrap_or(0);
    o.family(
        "sealmq_protection_error_queue_depth",
        "gauge",
        "Messages that failed a protection check, on SYSTEM.PROTECTION.ERROR.QUEUE.",
    );
    o.sample("sealmq_protection_error_queue_depth", &[], perr as f64);
}

/// Each running channel's gauges.
fn channels(o: &mut Out, chinit: &Initiator) {
    let channels = chinit.statuses("*");
    type ChannelField = fn(&crate::chinit::Status) -> f64;
    let fields: [(&str, &str, ChannelField); 4] = [
        (
            "ibmmq_channel_status",
            "Channel status (MQCHS: 3 RUNNING, 5 RETRYING, 6 STOPPED, ...).",
            |s| mqchs(s.state),
        ),
        (
            "ibmmq_channel_messages",
            "Messages moved by the channel's current instance.",
            |s| s.msgs as f64,
        ),
        (
            "ibmmq_channel_bytes_sent",
            "Bytes sent by the channel's current instance.",
            |s| s.bytes_sent as f64,
        ),
        (
            "ibmmq_channel_bytes_received",
            "Bytes received by the channel's current instance.",
            |s| s.bytes_rcvd as f64,
        ),
    ];
    for (name, help, f) in fields {
        o.family(name, "gauge", help);
        for (run, s) in &channels {
            let labels = [
                ("platform", PLATFORM),
                ("channel", run.name.as_str()),
                ("type", run.chltype.name()),
                ("connname", s.conname.as_str()),
                ("rqmname", s.rqmname.as_str()),
            ];
            o.sample(name, &labels, f(s));
        }
    }
}

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
    totals(o, qm);
    queues(o, qm);
    channels(o, qm, chinit);
    subscriptions(o, qm);
    topics(o, qm);
}

/// Each topic string published on since the start (at most the engine keeps): publications
/// (`type="pub"`) and the copies subscribers received (`type="sub"`), the time since the last
/// of each, and the subscriptions its publications reach now.
fn topics(o: &mut Out, qm: &QueueManager) {
    let now = sealmq_mqi::md::now_ms().max(0) as u64;
    let stats = qm.topic_stats();
    // (family, type label, help, the figure: a count, or when it last happened)
    type Figure = fn(&sealmq_engine::qm::TopicStats) -> Reading;
    enum Reading {
        Count(u64),
        Last(u64),
    }
    let families: [(&str, &str, &str, Figure); 4] = [
        (
            "ibmmq_topic_messages_published",
            "pub",
            "Publications on the topic string since start.",
            |t| Reading::Count(t.published),
        ),
        (
            "ibmmq_topic_messages_received",
            "sub",
            "Copies of its publications subscribers received since start.",
            |t| Reading::Count(t.received),
        ),
        (
            "ibmmq_topic_time_since_msg_published",
            "pub",
            "Seconds since the last publication on the topic string.",
            |t| Reading::Last(t.last_published_ms),
        ),
        (
            "ibmmq_topic_time_since_msg_received",
            "sub",
            "Seconds since a subscriber last received one of its publications.",
            |t| Reading::Last(t.last_received_ms),
        ),
    ];
    for (name, kind, help, f) in families {
        o.family(name, "gauge", help);
        for (topic, t) in &stats {
            let v = match f(t) {
                Reading::Count(n) => n as f64,
                Reading::Last(0) => continue,
                Reading::Last(ms) => (now.saturating_sub(ms) / 1000) as f64,
            };
            let labels = [
                ("platform", PLATFORM),
                ("topic", topic.as_str()),
                ("type", kind),
            ];
            o.sample(name, &labels, v);
        }
    }
    o.family(
        "ibmmq_topic_subscriber_count",
        "gauge",
        "Subscriptions the topic string's publications reach now.",
    );
    for (topic, _) in &stats {
        let n = qm.subs_for(topic).len();
        o.sample(
            "ibmmq_topic_subscriber_count",
            &[
                ("platform", PLATFORM),
                ("topic", topic.as_str()),
                ("type", "sub"),
            ],
            n as f64,
        );
    }
}

/// The queue manager's running totals under IBM's names, as counters (the dashboards take
/// their rate): puts and destructive gets over every queue, publications and their copies to
/// subscribers; and what is counted at this instant: listeners running, FDC files (sealmq
/// writes none: its failures go to the error log).
fn totals(o: &mut Out, qm: &QueueManager) {
    let p = [("platform", PLATFORM)];
    let mut all = sealmq_engine::stats::QueueCounters::default();
    for (_, _, c) in qm.queue_totals() {
        all.puts += c.puts;
        all.gets += c.gets;
        all.put_bytes += c.put_bytes;
        all.persistent_put_bytes += c.persistent_put_bytes;
        all.browses += c.browses;
        all.persistent_browses += c.persistent_browses;
    }
    let (pubs, copies) = qm.publication_totals();
    let listeners = qm.listener_control().map(|l| l.status().len()).unwrap_or(0);
    let families: [(&str, &str, &str, f64); 10] = [
        (
            "ibmmq_qmgr_interval_mqput_mqput1_total_count",
            "counter",
            "MQPUT and MQPUT1 calls that put a message, every queue, since start.",
            all.puts as f64,
        ),
        (
            "ibmmq_qmgr_interval_destructive_get_total_count",
            "counter",
            "Destructive MQGET calls that got a message, every queue, since start.",
            all.gets as f64,
        ),
        (
            "ibmmq_qmgr_put_persistent_messages_bytes",
            "counter",
            "Bytes of persistent messages put, every queue, since start.",
            all.persistent_put_bytes as f64,
        ),
        (
            "ibmmq_qmgr_put_non_persistent_messages_bytes",
            "counter",
            "Bytes of non-persistent messages put, every queue, since start.",
            all.put_bytes.saturating_sub(all.persistent_put_bytes) as f64,
        ),
        (
            "ibmmq_qmgr_persistent_message_browse_count",
            "counter",
            "Browses of persistent messages, every queue, since start.",
            all.persistent_browses as f64,
        ),
        (
            "ibmmq_qmgr_non_persistent_message_browse_count",
            "counter",
            "Browses of non-persistent messages, every queue, since start.",
            all.browses.saturating_sub(all.persistent_browses) as f64,
        ),
        (
            "ibmmq_qmgr_topic_mqput_mqput1_interval_total",
            "counter",
            "Publications (MQPUT and MQPUT1 to topics) since start.",
            pubs as f64,
        ),
        (
            "ibmmq_qmgr_published_to_subscribers_message_count",
            "counter",
            "Copies of publications delivered to subscriptions since start.",
            copies as f64,
        ),
        (
            "ibmmq_qmgr_active_listeners",
            "gauge",
            "Listeners running.",
            listeners as f64,
        ),
        (
            "ibmmq_qmgr_mq_fdc_file_count",
            "gauge",
            "FDC files (sealmq writes none; failures are in the error log).",
            0.0,
        ),
    ];
    for (name, kind, help, v) in families {
        o.family(name, kind, help);
        o.sample(name, &p, v);
    }
}

/// Each subscription's deliveries and the time since its last, under IBM's names (the
/// exporter's own spelling `messsages` kept: the dashboards query it).
fn subscriptions(o: &mut Out, qm: &QueueManager) {
    let now = sealmq_mqi::md::now_ms().max(0) as u64;
    let subs = qm.subs();
    let stats: Vec<_> = subs.iter().map(|s| qm.sub_stats(&s.name)).collect();
    o.family(
        "ibmmq_subscription_messsages_received",
        "gauge",
        "Publications delivered to the subscription since start (NUMMSGS).",
    );
    let labels: Vec<[(&str, String); 5]> = subs
        .iter()
        .map(|s| {
            [
                ("platform", PLATFORM.to_string()),
                ("subscription", s.name.clone()),
                ("subid", s.subid.clone()),
                ("topic", s.topicstr.clone()),
                ("type", s.subtype.name().to_string()),
            ]
        })
        .collect();
    let put = |o: &mut Out, name: &str, l: &[(&str, String); 5], v: f64| {
        let l: Vec<(&str, &str)> = l.iter().map(|(k, v)| (*k, v.as_str())).collect();
        o.sample(name, &l, v);
    };
    for (l, st) in labels.iter().zip(&stats) {
        put(
            o,
            "ibmmq_subscription_messsages_received",
            l,
            st.delivered as f64,
        );
    }
    o.family(
        "ibmmq_subscription_time_since_message_published",
        "gauge",
        "Seconds since a publication was last delivered to the subscription.",
    );
    for (l, st) in labels.iter().zip(&stats).filter(|(_, st)| st.last_ms > 0) {
        let secs = now.saturating_sub(st.last_ms) / 1000;
        put(
            o,
            "ibmmq_subscription_time_since_message_published",
            l,
            secs as f64,
        );
    }
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
    g(
        o,
        "ibmmq_qmgr_max_active_channels",
        "Channel instances that may be active at once (MAXCHL: sealmq has one limit for both).",
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
    type Field =
        fn(&sealmq_engine::QueueStatus, u64, &sealmq_engine::stats::QueueCounters) -> Option<f64>;
    // Seconds since `ms` (none when it never happened since the queue manager started).
    fn since(ms: i64) -> Option<f64> {
        (ms > 0).then(|| ((sealmq_mqi::md::now_ms() - ms).max(0) / 1000) as f64)
    }
    let fields: [(&str, &str, Field); 12] = [
        ("ibmmq_queue_depth", "Messages on the queue.", |s, _, _| {
            Some(s.depth as f64)
        }),
        (
            "ibmmq_queue_oldest_message_age",
            "Age in seconds of the oldest message on the queue.",
            |_, age, _| Some(age as f64),
        ),
        (
            "ibmmq_queue_input_handles",
            "Handles open for input.",
            |s, _, _| Some(f64::from(s.input_opens)),
        ),
        (
            "ibmmq_queue_output_handles",
            "Handles open for output.",
            |s, _, _| Some(f64::from(s.output_opens)),
        ),
        (
            "ibmmq_queue_mqput_mqput1_count",
            "MQPUT and MQPUT1 calls that put a message since start.",
            |_, _, c| Some(c.puts as f64),
        ),
        (
            "ibmmq_queue_mqget_count",
            "Destructive MQGET calls that got a message since start.",
            |_, _, c| Some(c.gets as f64),
        ),
        (
            "ibmmq_queue_qfile_current_size",
            "Bytes of the queue's files.",
            |s, _, _| Some(s.file_bytes as f64),
        ),
        (
            "ibmmq_queue_qfile_max_size",
            "The largest the queue's files may grow to, bytes (MAXFSIZE).",
            |s, _, _| Some(s.max_file_bytes as f64),
        ),
        (
            "ibmmq_queue_attribute_max_depth",
            "MAXDEPTH: the most messages the queue takes.",
            |s, _, _| Some(f64::from(s.max_depth)),
        ),
        (
            "ibmmq_queue_uncommitted_messages",
            "Messages put or got in units of work not yet committed.",
            |s, _, _| Some(s.uncommitted as f64),
        ),
        (
            "ibmmq_queue_time_since_put",
            "Seconds since a message was last put (none before the first since start).",
            |s, _, _| since(s.last_put_ms),
        ),
        (
            "ibmmq_queue_time_since_get",
            "Seconds since a message was last got (none before the first since start).",
            |s, _, _| since(s.last_get_ms),
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
            if let Some(v) = f(st, *age, &c) {
                o.sample(name, &labels, v);
            }
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

/// IBM's squashed status (`ibmmq_channel_status_squash`): 2 running, 0 stopped or inactive,
/// 1 on the way (binding, starting, stopping, retrying).
fn squash(s: State) -> f64 {
    match s {
        State::Running => 2.0,
        State::Stopped => 0.0,
        _ => 1.0,
    }
}

/// Every channel instance's gauges: those the channel initiator runs (sender, receiver, ...)
/// and the connections of SVRCONN and AMQP channels (each RUNNING, with its CONNAME); then each
/// SVRCONN and AMQP channel's instance count and MAXINST/MAXINSTC.
fn channels(o: &mut Out, qm: &QueueManager, chinit: &Initiator) {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let defs = qm.channels();
    // (channel, type, connname, rqmname, [status, squashed, msgs, sent, rcvd, batches,
    // seconds since the last message]): a value the instance does not have is none.
    type Row = (String, &'static str, String, String, [Option<f64>; 9]);
    let mut rows: Vec<Row> = chinit
        .statuses("*")
        .into_iter()
        .map(|(run, s)| {
            let since = (s.last_msg > 0).then(|| now.saturating_sub(s.last_msg) as f64);
            (
                run.name.clone(),
                run.chltype.name(),
                s.conname.clone(),
                s.rqmname.clone(),
                [
                    Some(mqchs(s.state)),
                    Some(squash(s.state)),
                    Some(s.msgs as f64),
                    Some(s.bytes_sent as f64),
                    Some(s.bytes_rcvd as f64),
                    Some(s.batches as f64),
                    since,
                    (s.batches > 0).then_some(s.batchsz_short),
                    (s.batches > 0).then_some(s.batchsz_long),
                ],
            )
        })
        .collect();
    let mut instances: std::collections::BTreeMap<(String, &'static str), u64> =
        std::collections::BTreeMap::new();
    for c in qm.connections().iter().filter(|c| !c.internal) {
        let name = &c.origin.channel;
        let Some(d) = defs.iter().find(|d| &d.name == name) else {
            continue;
        };
        let t = d.chltype.name();
        *instances.entry((name.clone(), t)).or_default() += 1;
        rows.push((
            name.clone(),
            t,
            c.origin.conname.clone(),
            String::new(),
            [
                Some(3.0),
                Some(2.0),
                None,
                None,
                None,
                None,
                None,
                None,
                None,
            ],
        ));
    }
    let fields: [(&str, &str); 9] = [
        (
            "ibmmq_channel_status",
            "Channel status (MQCHS: 3 RUNNING, 5 RETRYING, 6 STOPPED, ...).",
        ),
        (
            "ibmmq_channel_status_squash",
            "Channel status squashed: 2 running, 1 on the way, 0 stopped.",
        ),
        (
            "ibmmq_channel_messages",
            "Messages moved by the channel's current instance.",
        ),
        (
            "ibmmq_channel_bytes_sent",
            "Bytes sent by the channel's current instance.",
        ),
        (
            "ibmmq_channel_bytes_rcvd",
            "Bytes received by the channel's current instance.",
        ),
        (
            "ibmmq_channel_batches",
            "Batches the channel's current instance completed.",
        ),
        (
            "ibmmq_channel_time_since_msg",
            "Seconds since the channel's current instance last moved a message.",
        ),
        (
            "ibmmq_channel_batchsz_short",
            "Messages per batch, weighted toward the last few batches (BATCHSZ short term).",
        ),
        (
            "ibmmq_channel_batchsz_long",
            "Messages per batch over many batches (BATCHSZ long term).",
        ),
    ];
    for (i, (name, help)) in fields.into_iter().enumerate() {
        o.family(name, "gauge", help);
        for (channel, t, conname, rqmname, v) in &rows {
            let Some(v) = v[i] else { continue };
            let labels = [
                ("platform", PLATFORM),
                ("channel", channel.as_str()),
                ("type", *t),
                ("connname", conname.as_str()),
                ("rqmname", rqmname.as_str()),
            ];
            o.sample(name, &labels, v);
        }
    }
    let served: Vec<_> = defs
        .iter()
        .filter(|d| matches!(d.chltype.name(), "SVRCONN" | "AMQP"))
        .collect();
    type Attr = fn(&sealmq_engine::channels::ChannelDef, u64) -> f64;
    let attrs: [(&str, &str, Attr); 3] = [
        (
            "ibmmq_channel_cur_inst",
            "Instances of the channel running now.",
            |_, n| n as f64,
        ),
        (
            "ibmmq_channel_attribute_max_inst",
            "MAXINST: instances the channel may run.",
            |d, _| f64::from(d.maxinst),
        ),
        (
            "ibmmq_channel_attribute_max_instc",
            "MAXINSTC: instances one client address may run.",
            |d, _| f64::from(d.maxinstc),
        ),
    ];
    for (name, help, f) in attrs {
        o.family(name, "gauge", help);
        for d in &served {
            let t = d.chltype.name();
            let n = instances.get(&(d.name.clone(), t)).copied().unwrap_or(0);
            let labels = [
                ("platform", PLATFORM),
                ("channel", d.name.as_str()),
                ("type", t),
            ];
            o.sample(name, &labels, f(d, n));
        }
    }
}

/// A replicated queue manager's group under IBM's Native HA names, as its active instance sees
/// it: per other instance (`nha`), the log it lacks and the log sent to it. sealmq does not
/// compress what it replicates: the compressed figure is the bytes sent.
pub(crate) fn nha(o: &mut Out, r: &sealmq_engine::ReplicationStatus) {
    let others: Vec<_> = r
        .instances
        .iter()
        .filter(|i| i.name != r.instance)
        .collect();
    let families: [(&str, &str); 3] = [
        (
            "ibmmq_nha_backlog_bytes",
            "Bytes of log the instance lacks.",
        ),
        (
            "ibmmq_nha_synchronous_log_sent_bytes",
            "Bytes of log replicated to the instance since this one became active.",
        ),
        (
            "ibmmq_nha_synchronous_compressed_log_sent_bytes",
            "The same bytes, as sent (sealmq does not compress the log it replicates).",
        ),
    ];
    for (i, (name, help)) in families.into_iter().enumerate() {
        o.family(name, "gauge", help);
        for inst in &others {
            let v = match i {
                0 => match inst.backlog {
                    Some(b) => b as f64,
                    None => continue,
                },
                _ => r.bytes as f64,
            };
            o.sample(
                name,
                &[("platform", PLATFORM), ("nha", inst.name.as_str())],
                v,
            );
        }
    }
}

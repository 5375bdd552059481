//! The Prometheus text endpoint (SPEC §8): `sealmq start QM --metrics HOST:PORT` serves
//! `GET /metrics` in Prometheus' text exposition format 0.0.4 — running totals since the queue
//! manager started, read at each scrape (nothing is reset by a scrape, so it can sit beside
//! the interval files and RESET QSTATS): per local queue depth, puts, gets, browses and bytes;
//! per channel instance messages, bytes and batches; the channel initiator's tasks; the QM's
//! own protection work per primitive and its key-reuse hits and misses; and the names of IBM's
//! MQ exporter (`ibm.rs`); the process's own resources (`res.rs`); `out.rs` writes the text for the dashboards built on it.

mod ibm;
mod out;
mod res;

use out::Out;

use crate::auth::security::Security;
use crate::chinit::Initiator;
use sealmq_engine::QueueManager;
use sealmq_engine::host::Dse;
use std::net::SocketAddr;
use std::sync::Arc;

/// A running endpoint; dropping it does not stop it, [`Endpoint::stop`] does.
pub struct Endpoint {
    web: sealmq_web::Web,
    pub addr: SocketAddr,
}

impl Endpoint {
    pub fn stop(self) {
        self.web.stop();
    }
}

/// Listens on `addr` (port 0: any free port) and serves scrapes on the HTTP stack of the REST
/// API (`sealmq_web::plain`: bounded connections, no thread per connection).
pub fn start(
    addr: SocketAddr,
    qm: Arc<QueueManager>,
    security: Arc<Security>,
    chinit: Arc<Initiator>,
    dse: Option<Arc<Dse>>,
) -> Result<Endpoint, String> {
    let handler = move |path: &str| {
        if path == "/metrics" {
            let text = render(&qm, &security, &chinit, dse.as_deref());
            (200, "text/plain; version=0.0.4; charset=utf-8", text)
        } else {
            (
                404,
                "text/plain",
                "not found: scrape /metrics\n".to_string(),
            )
        }
    };
    let web = sealmq_web::plain::start(addr, "metrics", Arc::new(handler))?;
    Ok(Endpoint {
        addr: web.addr.unwrap_or(addr),
        web,
    })
}

/// The whole exposition, read now.
pub fn render(
    qm: &QueueManager,
    security: &Security,
    chinit: &Arc<Initiator>,
    dse: Option<&Dse>,
) -> String {
    let mut o = Out {
        text: String::new(),
        qmgr: qm.name(),
    };
    queue_metrics(&mut o, qm);
    channel_metrics(&mut o, chinit);
    task_metrics(&mut o, chinit);
    if let Some(p) = security.protector() {
        crypto_metrics(&mut o, &p);
    }
    pubsub(&mut o, qm);
    if let Some(d) = dse {
        dse_ages(&mut o, d);
    }
    crate::observe::metrics::ibm::render(&mut o, qm, chinit);
    crate::observe::metrics::res::render(&mut o, qm);
    if let Some(r) = qm.replication() {
        replication(&mut o, &r);
        crate::observe::metrics::ibm::nha(&mut o, &r);
    }
    o.text
}

/// Each local queue's depth and counters.
fn queue_metrics(o: &mut Out, qm: &QueueManager) {
    let queues = qm.queue_totals();
    type Field = fn(&sealmq_engine::stats::QueueCounters) -> u64;
    o.family(
        "sealmq_queue_depth",
        "gauge",
        "Messages on the local queue.",
    );
    for (q, depth, _) in &queues {
        o.sample("sealmq_queue_depth", &[("queue", q)], *depth as f64);
    }
    let counters: [(&str, &str, Field); 5] = [
        ("sealmq_queue_puts_total", "Successful puts.", |c| c.puts),
        ("sealmq_queue_put_bytes_total", "Message bytes put.", |c| {
            c.put_bytes
        }),
        (
            "sealmq_queue_gets_total",
            "Successful destructive gets.",
            |c| c.gets,
        ),
        ("sealmq_queue_get_bytes_total", "Message bytes got.", |c| {
            c.get_bytes
        }),
        ("sealmq_queue_browses_total", "Successful browses.", |c| {
            c.browses
        }),
    ];
    for (name, help, f) in counters {
        o.family(name, "counter", help);
        for (q, _, c) in &queues {
            o.sample(name, &[("queue", q)], f(c) as f64);
        }
    }
}

/// Each running channel's current instance.
fn channel_metrics(o: &mut Out, chinit: &Initiator) {
    type ChannelField = fn(&crate::chinit::Status) -> u64;
    let channels = chinit.statuses("*");
    let fields: [(&str, &str, ChannelField); 4] = [
        (
            "sealmq_channel_messages",
            "Messages moved by the channel's current instance.",
            |s| s.msgs,
        ),
        (
            "sealmq_channel_bytes_sent",
            "Bytes sent by the channel's current instance.",
            |s| s.bytes_sent,
        ),
        (
            "sealmq_channel_bytes_received",
            "Bytes received by the channel's current instance.",
            |s| s.bytes_rcvd,
        ),
        (
            "sealmq_channel_batches",
            "Batches of the channel's current instance.",
            |s| s.batches,
        ),
    ];
    for (name, help, f) in fields {
        o.family(name, "gauge", help);
        for (run, s) in &channels {
            let labels = [("channel", run.name.as_str()), ("status", s.state.name())];
            o.sample(name, &labels, f(s) as f64);
        }
    }
}

/// The channel initiator's task slots.
fn task_metrics(o: &mut Out, chinit: &Initiator) {
    let tasks = chinit.adapters.totals();
    let wall_ns = chinit.adapters.since().elapsed().as_nanos().max(1) as f64;
    o.family(
        "sealmq_chinit_task_requests_total",
        "counter",
        "Requests run in the task slot.",
    );
    for (task, requests, _, _) in &tasks {
        o.sample(
            "sealmq_chinit_task_requests_total",
            &[("task", task)],
            *requests as f64,
        );
    }
    o.family(
        "sealmq_chinit_task_busy_percent",
        "gauge",
        "Share of time the task slot was busy since start.",
    );
    for (task, _, _, elapsed_ns) in &tasks {
        let busy = (*elapsed_ns as f64 / wall_ns * 100.0).min(100.0);
        o.sample("sealmq_chinit_task_busy_percent", &[("task", task)], busy);
    }
}

/// The queue manager's own protection operations (SPLPROT, QM-side interception).
fn crypto_metrics(o: &mut Out, p: &sealmq_protect::Protector) {
    let s = p.counters();
    o.family(
        "sealmq_crypto_operations_total",
        "counter",
        "Protection operations of the queue manager (SPLPROT, QM-side interception).",
    );
    let ops = [
        ("sign", s.sign, s.sign_nanos),
        ("verify", s.verify, s.verify_nanos),
        ("key_wrap", s.key_wrap, s.key_wrap_nanos),
        ("key_unwrap", s.key_unwrap, s.key_unwrap_nanos),
        ("encrypt", s.encrypt, s.encrypt_nanos),
        ("decrypt", s.decrypt, s.decrypt_nanos),
    ];
    for (op, n, _) in ops {
        o.sample("sealmq_crypto_operations_total", &[("op", op)], n as f64);
    }
    // The same counts under the name and label issue 29's dashboards use.
    o.family(
        "sealmq_protect_operations_total",
        "counter",
        "Protection operations of the queue manager, per primitive.",
    );
    for (op, n, _) in ops {
        o.sample(
            "sealmq_protect_operations_total",
            &[("primitive", op)],
            n as f64,
        );
    }
    o.family(
        "sealmq_crypto_seconds_total",
        "counter",
        "Time spent in protection operations.",
    );
    for (op, _, ns) in ops {
        o.sample(
            "sealmq_crypto_seconds_total",
            &[("op", op)],
            ns as f64 / 1e9,
        );
    }
    o.family(
        "sealmq_crypto_symmetric_bytes_total",
        "counter",
        "Bytes encrypted or decrypted.",
    );
    o.sample(
        "sealmq_crypto_symmetric_bytes_total",
        &[],
        s.sym_bytes as f64,
    );
    o.family(
        "sealmq_key_reuse_total",
        "counter",
        "Key-reuse cache hits and misses on put and get.",
    );
    for (side, result, n) in [
        ("put", "hit", s.put_reuse_hits),
        ("put", "miss", s.put_reuse_misses),
        ("get", "hit", s.get_reuse_hits),
        ("get", "miss", s.get_reuse_misses),
    ] {
        o.sample(
            "sealmq_key_reuse_total",
            &[("side", side), ("result", result)],
            n as f64,
        );
    }
}

/// Encryption at rest: how old its keys are (issue 29).
fn dse_ages(o: &mut Out, d: &Dse) {
    o.family(
        "sealmq_dse_data_key_age_seconds",
        "gauge",
        "Seconds since the data key that seals what is written now was made (a new one at each start and log segment).",
    );
    o.sample(
        "sealmq_dse_data_key_age_seconds",
        &[],
        d.data_key_age() as f64,
    );
    o.family(
        "sealmq_dse_master_key_age_seconds",
        "gauge",
        "Seconds since the master key last wrapped the keyring (made, or sealmq dse rotate).",
    );
    o.sample(
        "sealmq_dse_master_key_age_seconds",
        &[],
        d.master_key_age() as f64,
    );
}

/// Publications, subscriptions and fan-out (issue 28).
fn pubsub(o: &mut Out, qm: &QueueManager) {
    let (pubs, copies) = qm.publication_totals();
    o.family(
        "sealmq_publications_total",
        "counter",
        "Publications since the queue manager started.",
    );
    o.sample("sealmq_publications_total", &[], pubs as f64);
    o.family(
        "sealmq_publication_deliveries_total",
        "counter",
        "Copies of publications put to subscriptions' queues since the start (fan-out).",
    );
    o.sample("sealmq_publication_deliveries_total", &[], copies as f64);
    let subs = qm.subs();
    o.family(
        "sealmq_subscriptions",
        "gauge",
        "Subscriptions, durable and not.",
    );
    for (label, durable) in [("yes", true), ("no", false)] {
        let n = subs.iter().filter(|s| s.durable == durable).count();
        o.sample("sealmq_subscriptions", &[("durable", label)], n as f64);
    }
    o.family(
        "sealmq_subscription_messages_total",
        "counter",
        "Publications delivered to each subscription since the start (NUMMSGS).",
    );
    for s in &subs {
        let n = qm.sub_stats(&s.name).delivered;
        o.sample(
            "sealmq_subscription_messages_total",
            &[("subscription", &s.name), ("topic", &s.topicstr)],
            n as f64,
        );
    }
}

/// A replicated queue manager's group (docs/ha.md), as its active instance sees it.
fn replication(o: &mut Out, r: &sealmq_engine::ReplicationStatus) {
    let families: [(&str, &str, &str, f64); 9] = [
        (
            "sealmq_ha_instances_in_sync",
            "gauge",
            "Instances holding every committed entry of the replicated log.",
            r.instances
                .iter()
                .filter(|i| i.in_sync == Some(true))
                .count() as f64,
        ),
        (
            "sealmq_ha_instances",
            "gauge",
            "Instances of the replicated queue manager's group.",
            r.instances.len() as f64,
        ),
        (
            "sealmq_ha_term",
            "gauge",
            "The Raft term (one more at every election that elects).",
            r.term as f64,
        ),
        (
            "sealmq_ha_log_index",
            "gauge",
            "The last entry of the replicated log this instance holds.",
            r.log_index as f64,
        ),
        (
            "sealmq_ha_replication_wait_max_seconds",
            "gauge",
            "The longest wait of a batch for a majority since the instance became active.",
            r.wait_us_max as f64 / 1e6,
        ),
        (
            "sealmq_ha_elections_total",
            "counter",
            "Elections this instance saw begin since it started.",
            r.elections as f64,
        ),
        (
            "sealmq_ha_replicated_batches_total",
            "counter",
            "Log batches made durable on a majority.",
            r.batches as f64,
        ),
        (
            "sealmq_ha_replicated_bytes_total",
            "counter",
            "Log bytes made durable on a majority.",
            r.bytes as f64,
        ),
        (
            "sealmq_ha_replication_wait_seconds_total",
            "counter",
            "Time batches waited for a majority (divided by the batches: the mean latency).",
            r.wait_us as f64 / 1e6,
        ),
    ];
    for (name, kind, help, v) in families {
        o.family(name, kind, help);
        o.sample(name, &[("instance", &r.instance)], v);
    }
    o.family(
        "sealmq_ha_backlog_bytes",
        "gauge",
        "Bytes of replicated log an instance lacks (-1: not known).",
    );
    for i in &r.instances {
        let v = i.backlog.map_or(-1.0, |b| b as f64);
        o.sample(
            "sealmq_ha_backlog_bytes",
            &[
                ("instance", &i.name),
                ("role", &i.role.to_ascii_lowercase()),
            ],
            v,
        );
    }
}

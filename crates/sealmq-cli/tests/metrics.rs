//! The Prometheus endpoint under IBM's exporter names (issue 29): a scrape parsed by a real
//! Prometheus text parser (Python's `prometheus_client`), the `ibmmq_*` families with their
//! labels and values asserted, and the Grafana dashboard in `docs/grafana/` loaded and checked
//! to ask only for families the endpoint exports.

mod common;

use common::Home;
use serde_json::Value;
use std::collections::HashSet;
use std::time::Duration;

/// The parser: every sample of the scrape at URL as `{name, labels, value}`, and the
/// families declared (a family without samples included).
const PARSE: &str = r#"
import json, sys, urllib.request
from prometheus_client.parser import text_string_to_metric_families
text = urllib.request.urlopen(sys.argv[1], timeout=10).read().decode()
out = {"families": [], "samples": []}
for f in text_string_to_metric_families(text):
    out["families"].append(f.name)
    for s in f.samples:
        out["samples"].append({"name": s.name, "labels": s.labels, "value": s.value})
print(json.dumps(out))
"#;

fn scrape(url: &str) -> Value {
    let o = std::process::Command::new("python3")
        .args(["-c", PARSE, url])
        .output()
        .expect("python3 runs");
    assert!(
        o.status.success(),
        "the Prometheus parser refused the scrape (./test installs prometheus_client): {}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).expect("the parser's JSON")
}

/// The value of the sample `name` whose labels include all of `want`.
fn value(s: &Value, name: &str, want: &[(&str, &str)]) -> Option<f64> {
    s["samples"].as_array()?.iter().find_map(|x| {
        let ok = x["name"] == name
            && want
                .iter()
                .all(|(k, v)| x["labels"][*k].as_str() == Some(*v));
        ok.then(|| x["value"].as_f64()).flatten()
    })
}

#[test]
fn ibm_exporter_names_parse_and_the_dashboard_asks_only_for_them() {
    let h = Home::new();
    // With encryption at rest, so that its key ages are exported too.
    let key = h.dir.path().join("master.key");
    h.ok(&["dse", "keygen", key.to_str().unwrap()]);
    h.ok(&["create", "QMX", "--dse", &format!("file:{}", key.display())]);
    h.ok(&["start", "QMX", "--background", "--metrics", "127.0.0.1:0"]);
    h.mqsc(
        "QMX",
        "DEFINE QLOCAL(ORDERS.IN) DESCR('orders from partners')\n\
         DEFINE QLOCAL(QMX.XMIT) USAGE(XMITQ)\n\
         DEFINE CHANNEL(TO.QMY) CHLTYPE(SDR) CONNAME('127.0.0.1(1)') XMITQ(QMX.XMIT)\n",
    );
    h.ok(&["put", "QMX", "ORDERS.IN", "--message", "a", "--count", "3"]);
    h.ok(&["get", "QMX", "ORDERS.IN", "--quiet"]);
    let addr = h.listener("QMX", "metrics");
    let url = format!("http://{addr}/metrics");
    // The oldest message's age counts in whole seconds: scrape until it shows one.
    let mut s = Value::Null;
    sealmq_testkit::poll(Duration::from_secs(20), Duration::from_millis(200), || {
        s = scrape(&url);
        let age = value(
            &s,
            "ibmmq_queue_oldest_message_age",
            &[("queue", "ORDERS.IN")],
        );
        age.is_some_and(|a| a >= 1.0)
    });
    let q = [
        ("qmgr", "QMX"),
        ("platform", "UNIX"),
        ("queue", "ORDERS.IN"),
        ("description", "orders from partners"),
        ("usage", "NORMAL"),
    ];
    assert_eq!(value(&s, "ibmmq_queue_depth", &q), Some(2.0));
    assert_eq!(value(&s, "ibmmq_queue_mqput_mqput1_count", &q), Some(3.0));
    assert_eq!(value(&s, "ibmmq_queue_mqget_count", &q), Some(1.0));
    assert_eq!(value(&s, "ibmmq_queue_input_handles", &q), Some(0.0));
    assert!(value(&s, "ibmmq_queue_oldest_message_age", &q).is_some_and(|a| a >= 1.0));
    assert!(value(&s, "ibmmq_queue_qfile_current_size", &q).is_some());
    assert_eq!(
        value(
            &s,
            "ibmmq_queue_depth",
            &[("queue", "QMX.XMIT"), ("usage", "XMITQ")]
        ),
        Some(0.0)
    );
    let qm = [("qmgr", "QMX"), ("platform", "UNIX")];
    assert_eq!(
        value(&s, "ibmmq_qmgr_status", &qm),
        Some(2.0),
        "RUNNING is 2"
    );
    assert!(value(&s, "ibmmq_qmgr_uptime", &qm).is_some_and(|u| u >= 0.0));
    assert!(value(&s, "ibmmq_qmgr_connection_count", &qm).is_some());
    assert!(
        value(&s, "ibmmq_qmgr_log_write_latency_seconds", &qm).is_some_and(|l| l > 0.0),
        "three persistent puts were written"
    );
    assert_eq!(
        value(&s, "sealmq_protection_error_queue_depth", &[]),
        Some(0.0)
    );
    // The resource families (IBM's resource publications): percentages within 0-100, sizes
    // and the queue manager's own memory above nothing.
    for name in [
        "ibmmq_qmgr_user_cpu_time_percentage",
        "ibmmq_qmgr_system_cpu_time_percentage",
        "ibmmq_qmgr_user_cpu_time_estimate_for_queue_manager_percentage",
        "ibmmq_qmgr_system_cpu_time_estimate_for_queue_manager_percentage",
        "ibmmq_qmgr_ram_free_percentage",
        "ibmmq_qmgr_queue_manager_file_system_free_space_percentage",
        "ibmmq_qmgr_log_file_system_free_space_percentage",
        "ibmmq_qmgr_mq_errors_file_system_free_space_percentage",
    ] {
        let v = value(&s, name, &qm);
        assert!(
            v.is_some_and(|v| (0.0..=100.0).contains(&v)),
            "{name}: {v:?}"
        );
    }
    for name in [
        "ibmmq_qmgr_ram_total_bytes",
        "ibmmq_qmgr_ram_total_estimate_for_queue_manager_bytes",
        "ibmmq_qmgr_queue_manager_file_system_in_use_bytes",
        "ibmmq_qmgr_log_in_use_bytes",
    ] {
        let v = value(&s, name, &qm);
        assert!(v.is_some_and(|v| v > 0.0), "{name}: {v:?}");
    }
    assert!(value(&s, "ibmmq_qmgr_cpu_load_one_minute_average_percentage", &qm).is_some());

    // The dashboard: valid JSON, and every family its queries name is one the endpoint
    // declares.
    let families: HashSet<String> = s["families"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f.as_str().map(str::to_string))
        .collect();
    let dash_path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../docs/grafana/sealmq-overview.json");
    let dash: Value = serde_json::from_str(&std::fs::read_to_string(dash_path).unwrap()).unwrap();
    let mut exprs = Vec::new();
    for p in dash["panels"].as_array().unwrap() {
        for t in p["targets"].as_array().unwrap() {
            exprs.push(t["expr"].as_str().unwrap().to_string());
        }
    }
    assert!(exprs.len() >= 10, "{exprs:?}");
    let mut asked = HashSet::new();
    for e in &exprs {
        for (i, _) in e.match_indices("ibmmq_").chain(e.match_indices("sealmq_")) {
            let name: String = e[i..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            asked.insert(name);
        }
    }
    for name in &asked {
        // prometheus_client names a counter's family without its `_total`.
        let family = name.strip_suffix("_total").unwrap_or(name);
        assert!(
            families.contains(family) || families.contains(name.as_str()),
            "the dashboard asks for {name}, which the endpoint does not export"
        );
    }
    for must in [
        "ibmmq_channel_status",
        "ibmmq_qmgr_status",
        "sealmq_protect_operations",
        "sealmq_dse_data_key_age_seconds",
        "sealmq_dse_master_key_age_seconds",
    ] {
        assert!(families.contains(must), "{must} not exported: {families:?}");
    }
    h.ok(&["stop", "QMX"]);
}

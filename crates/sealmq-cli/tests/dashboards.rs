//! IBM's Grafana dashboards read sealmq unchanged: the PromQL of the six Prometheus dashboards
//! of ibm-messaging/mq-metric-samples (z/OS aside; shipped as queries only in
//! `tests/dashboards/`) replayed against a live scrape of a queue manager doing a bit of
//! everything — a queue put to and got from, a sender channel to a second queue manager, a
//! client connected through a SVRCONN, a subscription fed by publications. A panel has its data
//! when every series selector of every query matches a sample; the panels that cannot (listed
//! with their reason in docs/statistics.md) are named here, and both lists are held to.

mod common;
use common::*;
use std::collections::BTreeMap;
use std::time::Duration;

/// Panels that do not get all their data, and why (docs/statistics.md says the same).
const WITHOUT_ALL: &[(&str, &str, &str)] = &[
    (
        "Channel_Status",
        "Channel Messages",
        "buffers are not counted",
    ),
    (
        "Channel_Status",
        "Network Transfer Time",
        "NETTIME is not measured",
    ),
    (
        "Channel_Status",
        "Transmission Queue Time",
        "XQTIME is not measured",
    ),
    (
        "Logging",
        "HA Replica",
        "a replicated queue manager's (tests/ha/follow.rs)",
    ),
    ("Logging", "CRR Recovery", "no cross-region replication"),
    ("Logging", "Recovery LSN", "no cross-region replication"),
    (
        "MQ_Prometheus_Overview",
        "Subscriptions",
        "no non-durable subscriber marks",
    ),
    (
        "Queue_Manager_Status",
        "Cluster Status",
        "clusters are not provided",
    ),
    (
        "Queue_Manager_Status",
        "Processed Publications",
        "no exporter in between",
    ),
    (
        "Queue_Manager_Status",
        "Native HA",
        "no backlog average is kept",
    ),
    ("Queue_Status", "Message Lifetime", "QTIME is not measured"),
    (
        "Topic_Status",
        "Publishers and Subscribers",
        "publishers are not counted",
    ),
];

/// A series selector: a metric name and its label matchers (`k`, op, value).
type Selector = (String, Vec<(String, String, String)>);

/// Every `ibmmq_...{...}` selector of a PromQL query.
fn selectors(q: &str) -> Vec<Selector> {
    let b = q.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(at) = q[i..].find("ibmmq_") {
        let start = i + at;
        let mut end = start;
        while end < b.len() && (b[end].is_ascii_alphanumeric() || b[end] == b'_') {
            end += 1;
        }
        let name = q[start..end].to_string();
        let mut matchers = Vec::new();
        i = end;
        if b.get(end) == Some(&b'{') {
            let close = q[end..].find('}').map_or(b.len(), |c| end + c);
            for m in q[end + 1..close]
                .split(',')
                .filter(|m| !m.trim().is_empty())
            {
                let m = m.trim();
                let op_at = m.find(['=', '!']).unwrap_or(m.len());
                let (k, rest) = m.split_at(op_at);
                let op_len =
                    if rest.starts_with("=~") || rest.starts_with("!~") || rest.starts_with("!=") {
                        2
                    } else {
                        1
                    };
                let (op, v) = rest.split_at(op_len.min(rest.len()));
                matchers.push((
                    k.trim().into(),
                    op.into(),
                    v.trim().trim_matches('"').into(),
                ));
            }
            i = close;
        }
        out.push((name, matchers));
    }
    out
}

/// PromQL's anchored regular expressions as these dashboards write them: literals, `.` and
/// `.*`.
fn re(p: &[u8], s: &[u8]) -> bool {
    match p {
        [] => s.is_empty(),
        [b'.', b'*', rest @ ..] => (0..=s.len()).any(|k| re(rest, &s[k..])),
        [b'\\', c, rest @ ..] => s.first() == Some(c) && re(rest, &s[1..]),
        [b'.', rest @ ..] => !s.is_empty() && re(rest, &s[1..]),
        [c, rest @ ..] => s.first() == Some(c) && re(rest, &s[1..]),
    }
}

/// The scrape's samples: name and labels.
fn samples(text: &str) -> Vec<(String, BTreeMap<String, String>)> {
    let mut out = Vec::new();
    for l in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
    {
        let (head, _value) = l.rsplit_once(' ').unwrap_or((l, ""));
        let (name, labels) = match head.split_once('{') {
            Some((n, rest)) => (n, rest.trim_end_matches('}')),
            None => (head, ""),
        };
        let mut m = BTreeMap::new();
        // Our label values hold no `",` sequence: split on it.
        for kv in labels.split("\",").filter(|kv| !kv.is_empty()) {
            if let Some((k, v)) = kv.split_once("=\"") {
                m.insert(k.to_string(), v.trim_end_matches('"').to_string());
            }
        }
        out.push((name.to_string(), m));
    }
    out
}

fn matches(sel: &Selector, all: &[(String, BTreeMap<String, String>)]) -> bool {
    all.iter().any(|(name, labels)| {
        *name == sel.0
            && sel.1.iter().all(|(k, op, v)| {
                let have = labels.get(k).map(String::as_str).unwrap_or("");
                match op.as_str() {
                    "=" => have == v,
                    "!=" => have != v,
                    "=~" => re(v.as_bytes(), have.as_bytes()),
                    "!~" => !re(v.as_bytes(), have.as_bytes()),
                    _ => false,
                }
            })
    })
}

#[test]
fn the_selector_reader_reads_the_dashboards_queries() {
    let s = selectors(
        r#"count by (qmgr)(ibmmq_channel_status_squash{type!="SVRCONN",queue=~"APP.*"}==2) / ibmmq_queue_depth"#,
    );
    assert_eq!(s.len(), 2);
    assert_eq!(s[0].0, "ibmmq_channel_status_squash");
    assert_eq!(s[0].1[0], ("type".into(), "!=".into(), "SVRCONN".into()));
    assert_eq!(s[0].1[1], ("queue".into(), "=~".into(), "APP.*".into()));
    assert_eq!(s[1], ("ibmmq_queue_depth".into(), vec![]));
    assert!(re(b"APP.*", b"APP.Q") && !re(b"APP.*", b"SYSTEM.X") && re(b"SYSTEM.*", b"SYSTEM."));
}

#[test]
fn ibms_dashboards_get_their_data_from_a_live_scrape() {
    let h = Home::new();
    let (pd, pe) = (free_port(), free_port());
    for (qm, port, metrics) in [("QD", pd, true), ("QE", pe, false)] {
        h.ok(&["create", qm]);
        let listen = format!("127.0.0.1:{port}");
        let mut args = vec!["start", qm, "--background", "--listen", &listen];
        if metrics {
            args.extend(["--metrics", "127.0.0.1:0"]);
        }
        h.ok(&args);
    }
    h.mqsc(
        "QD",
        &format!(
            "DEFINE QLOCAL(APP.Q) DESCR('orders')\n\
             DEFINE QLOCAL(QE) USAGE(XMITQ)\n\
             DEFINE QREMOTE(APP.TO.QE) RNAME(APP.IN) RQMNAME(QE) XMITQ(QE)\n\
             DEFINE CHANNEL(QD.QE) CHLTYPE(SDR) CONNAME('127.0.0.1({pe})') XMITQ(QE)\n\
             DEFINE CHANNEL(APP.SVRCONN) CHLTYPE(SVRCONN) MCAUSER('app')\n\
             SET AUTHREC OBJTYPE(QMGR) PRINCIPAL('app') AUTHADD(CONNECT)\n\
             SET AUTHREC PROFILE('APP.*') OBJTYPE(QUEUE) PRINCIPAL('app') AUTHADD(PUT,GET,BROWSE)\n"
        ),
    );
    h.mqsc(
        "QE",
        "DEFINE QLOCAL(APP.IN)\nDEFINE CHANNEL(QD.QE) CHLTYPE(RCVR)\n\
         SET CHLAUTH('QD.QE') TYPE(BLOCKUSER) USERLIST('nobody')\n",
    );
    h.mqsc("QD", "START CHANNEL(QD.QE)\n");
    h.ok(&["put", "QD", "APP.Q", "--message", "one", "--count", "3"]);
    h.ok(&["get", "QD", "APP.Q", "--count", "1"]);
    h.ok(&["browse", "QD", "APP.Q", "--count", "1"]);
    h.ok(&[
        "put",
        "QD",
        "APP.TO.QE",
        "--message",
        "over",
        "--count",
        "2",
    ]);
    wait_for(Duration::from_secs(30), "the channel to move both", || {
        h.depth("QE", "APP.IN") == 2
    });
    // A subscription an application made (SUBTYPE API), fed by publications.
    h.ok(&[
        "sub",
        "QD",
        "prices/#",
        "--name",
        "AUDIT",
        "--durable",
        "--wait",
        "0",
    ]);
    h.ok(&["pub", "QD", "prices/fruit", "--message", "apples 3"]);
    // A client connected through the SVRCONN while the scrape is taken.
    let mut client = h
        .cmd(&[
            "get",
            "QD",
            "APP.Q",
            "--count",
            "9",
            "--wait",
            "30000",
            "--conn",
            &format!("127.0.0.1:{pd}"),
            "--channel",
            "APP.SVRCONN",
        ])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let url = format!("http://{}/metrics", h.listener("QD", "metrics"));
    let text =
        sealmq_testkit::wait_some(Duration::from_secs(30), "the client on APP.SVRCONN", || {
            let o = std::process::Command::new("curl")
                .args(["-s", "--max-time", "10", &url])
                .output()
                .ok()?;
            let t = String::from_utf8_lossy(&o.stdout).into_owned();
            t.contains("type=\"SVRCONN\"").then_some(t)
        });
    let _ = client.kill();
    let _ = client.wait();
    let all = samples(&text);
    let panels = include_str!("dashboards/ibm-mq-prometheus.promql");
    let mut with_all = Vec::new();
    let mut short = Vec::new();
    for l in panels
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
    {
        let mut parts = l.splitn(3, " | ");
        let (d, p, q) = (
            parts.next().unwrap_or_default(),
            parts.next().unwrap_or_default(),
            parts.next().unwrap_or_default(),
        );
        let missing: Vec<String> = q
            .split(" ;; ")
            .flat_map(selectors)
            .filter(|s| !matches(s, &all))
            .map(|s| format!("{}{:?}", s.0, s.1))
            .collect();
        if missing.is_empty() {
            with_all.push((d, p));
        } else {
            short.push((d, p, missing));
        }
    }
    assert_eq!(
        with_all.len() + short.len(),
        40,
        "the six dashboards hold 40 panels"
    );
    let expected: Vec<(&str, &str)> = WITHOUT_ALL.iter().map(|(d, p, _)| (*d, *p)).collect();
    let got: Vec<(&str, &str)> = short.iter().map(|(d, p, _)| (*d, *p)).collect();
    for (d, p, missing) in &short {
        assert!(
            expected.contains(&(*d, *p)),
            "{d} / {p} lacks data it should have: {missing:?}\n{text}"
        );
    }
    for e in &expected {
        assert!(
            got.contains(e),
            "{e:?} has all its data now: take it off the list"
        );
    }
    eprintln!("{} of 40 panels get all their data", with_all.len());
    h.ok(&["stop", "QD"]);
    h.ok(&["stop", "QE"]);
}

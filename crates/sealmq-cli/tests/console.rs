//! The web console in a real browser (issue 29): Debian's Chromium, driven headless through
//! playwright-core (both installed by `./test`), loads the page from `sealmq start --web`, logs
//! in with the keyboard, lists the queues, puts a message through the form and sees the depth
//! change; the message is really on the queue (sealmq's own depth), and the page fits a
//! phone's width. Screenshots go to `SEALMQ_SCREENSHOTS` when set (docs/console.md's).

mod common;

use common::Home;
use std::path::PathBuf;

/// Where screenshots go: `SEALMQ_SCREENSHOTS` (docs/ when making them), else the test's home.
fn shots_dir(h: &Home) -> PathBuf {
    std::env::var_os("SEALMQ_SCREENSHOTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| h.dir.path().to_path_buf())
}

/// Runs the browser script `script` (under tests/console/) with `env`: the JSON it printed.
fn drive(script: &str, env: &[(&str, String)]) -> serde_json::Value {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    assert!(
        std::path::Path::new("/usr/bin/chromium").exists(),
        "Chromium is missing: ./test installs Debian's chromium package"
    );
    let mut c = std::process::Command::new("node");
    c.arg(root.join("crates/sealmq-cli/tests/console").join(script))
        .env("PLAYWRIGHT", root.join("target/node"));
    for (k, v) in env {
        c.env(k, v);
    }
    let o = c
        .output()
        .expect("node runs (./test installs Node.js and playwright-core)");
    let text = String::from_utf8_lossy(&o.stdout);
    serde_json::from_str(text.trim())
        .unwrap_or_else(|e| panic!("{e}: {text}\n{}", String::from_utf8_lossy(&o.stderr)))
}

#[test]
fn the_console_lists_queues_and_a_put_through_its_form_changes_the_depth() {
    let h = Home::new();
    h.ok(&["create", "QC"]);
    h.passwd("QC", "opsuser", "ops-horse-battery");
    h.passwd("QC", "appuser", "app-horse-battery");
    h.ok(&[
        "start",
        "QC",
        "--background",
        "--web",
        "127.0.0.1:0",
        "--web-admin",
        "opsuser",
        "--web-messaging",
        "opsuser,appuser",
    ]);
    h.mqsc(
        "QC",
        "SET AUTHREC OBJTYPE(QMGR) PRINCIPAL('opsuser') AUTHADD(CONNECT)\n\
         SET AUTHREC OBJTYPE(QMGR) PRINCIPAL('appuser') AUTHADD(CONNECT)\n\
         SET AUTHREC PROFILE('APP.**') OBJTYPE(QUEUE) PRINCIPAL('appuser') AUTHADD(PUT,BROWSE)\n\
         DEFINE QLOCAL(APP.Q) DESCR('orders in')\nDEFINE QLOCAL(APP.REPLY)\n\
         SET AUTHREC PROFILE('APP.**') OBJTYPE(QUEUE) PRINCIPAL('opsuser') AUTHADD(PUT,GET,BROWSE)\n\
         DEFINE QLOCAL(PAY.Q)\nSET POLICY(PAY.Q) SIGNALG(SHA256) ENCALG(AES256) RECIP('CN=QC')\n\
         DEFINE QLOCAL(TO.PARTNER.XMIT) USAGE(XMITQ)\n\
         DEFINE CHANNEL(TO.PARTNER) CHLTYPE(SDR) CONNAME('127.0.0.1(1)') XMITQ(TO.PARTNER.XMIT)\n\
         SET AUTHREC PROFILE('PAY.Q') OBJTYPE(QUEUE) PRINCIPAL('opsuser') AUTHADD(BROWSE)\n\
         DEFINE TOPIC(APP.PRICES) TOPICSTR('prices')\n\
         DEFINE SUB(APP.AUDIT) TOPICSTR('prices/#') DEST(APP.REPLY)\n\
         DEFINE LISTENER(APP.LSTR) TRPTYPE(TCP) PORT(0) CONTROL(MANUAL) DESCR('spare')\n\
         DEFINE SERVICE(APP.SVC) SERVTYPE(COMMAND) STARTCMD('/bin/true') DESCR('housekeeping')\n",
    );
    // A protected message on PAY.Q (for CN=QC, the queue manager's own identity here).
    let ks = h.qm_dir("QC").join("keystore");
    h.ok(&[
        "put",
        "QC",
        "PAY.Q",
        "--message",
        "pay 100",
        "--keystore",
        &ks.to_string_lossy(),
    ]);
    // An application connected while the console looks: a get that waits.
    let mut waiting = h
        .cmd(&["get", "QC", "APP.REPLY", "--wait", "120000"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let addr = h.listener("QC", "web");
    let shots = shots_dir(&h);
    let v = drive(
        "drive.js",
        &[
            ("BASE", format!("https://{addr}")),
            ("USER", "opsuser".into()),
            ("PASSWORD", "ops-horse-battery".into()),
            ("QUEUE", "APP.Q".into()),
            ("MSG_USER", "appuser".into()),
            ("MSG_PASSWORD", "app-horse-battery".into()),
            ("PROTECTED_QUEUE", "PAY.Q".into()),
            ("SHOTS", shots.display().to_string()),
        ],
    );
    assert!(v["failure"].is_null(), "{v}");
    assert_eq!(v["title"], "sealmq console", "{v}");
    assert_eq!(v["qmgr"], "QC", "{v}");
    let queues: Vec<&str> = v["queues"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|q| q.as_str())
        .collect();
    assert!(
        queues.contains(&"APP.Q") && queues.contains(&"APP.REPLY"),
        "{v}"
    );
    assert!(!queues.iter().any(|q| q.starts_with("SYSTEM.")), "{v}");
    assert_eq!(v["depth_before"], "0", "{v}");
    assert_eq!(v["depth_after"], "1", "{v}");
    assert!(
        v["browse"]
            .as_str()
            .is_some_and(|b| b.contains("put through the console form")),
        "{v}"
    );
    assert_eq!(
        v["phone_overflow"], false,
        "the page is wider than a phone: {v}"
    );
    assert_eq!(v["errors"], serde_json::json!([]), "script errors: {v}");
    // The browse list: the one message, its length and persistence, no payload.
    let listed = v["browse_list"].as_array().unwrap();
    assert_eq!(listed.len(), 1, "{v}");
    assert_eq!(listed[0][2], "28", "{v}");
    assert_eq!(listed[0][3], "nonPersistent", "{v}");
    // The application waiting on APP.REPLY is among the connections, with its user.
    let conns = v["connections"].to_string();
    assert!(conns.contains("sealmq"), "{v}");
    let channels = v["channels"].as_array().unwrap();
    assert!(
        channels
            .iter()
            .any(|c| c[0] == "TO.PARTNER" && c[1] == "SDR"),
        "{v}"
    );
    let policies = v["policies"].as_array().unwrap();
    assert!(
        policies
            .iter()
            .any(|p| p[0] == "PAY.Q" && p[1] == "SHA256" && p[2] == "AES256"),
        "{v}"
    );
    // The queue's row: depth 1, the put counted, the oldest message's age shown.
    let row = &v["queue_row"];
    assert_eq!(row[1], "1", "{v}");
    assert!(
        row[4].as_str().is_some_and(|a| a.parse::<u64>().is_ok()),
        "{v}"
    );
    assert!(v["ha"].as_str().unwrap().contains("Not replicated"), "{v}");
    assert!(v["errorlog"].as_str().unwrap().contains("REST API"), "{v}");
    // A message opened: its descriptor, its text, its bytes in hexadecimal.
    let text_of = |k: &str| v[k].as_str().unwrap_or_default().to_string();
    assert!(
        text_of("message_text").contains("put through the console form"),
        "{v}"
    );
    assert!(text_of("message_hex").contains("70 75 74 20"), "{v}");
    assert!(text_of("message_md").contains("ibm-mq-md-messageid"), "{v}");
    // The protected one is marked, with its policy and reader.
    let badge = text_of("badge");
    assert!(
        badge.starts_with("Protected (sealmq's envelope)") && badge.contains("CN=QC"),
        "{v}"
    );
    // Its bytes are shown in hexadecimal from the start (the envelope's magic first), and the
    // first-message preview does not print them as text.
    assert!(
        text_of("protected_hex").starts_with("000000  53 4d 51 45"),
        "{v}"
    );
    assert!(
        text_of("protected_preview").contains("bytes, not text"),
        "{v}"
    );
    // One view at a time; the MQSC panel answers as runmqsc.
    assert_eq!(v["queues_hidden_in_mqsc_view"], true, "{v}");
    let mqsc = text_of("mqsc");
    assert!(
        mqsc.contains("AMQ8409I") && mqsc.contains("AMQ8415I"),
        "{v}"
    );
    let has = |k: &str, first: &str| {
        v[k].as_array()
            .is_some_and(|rs| rs.iter().any(|r| r[0] == first))
    };
    assert!(
        has("topics", "APP.PRICES") && has("subscriptions", "APP.AUDIT"),
        "{v}"
    );
    assert!(
        has("authrecs", "APP.**") && !v["chlauth"].as_array().unwrap().is_empty(),
        "{v}"
    );
    // Listener and service definitions, AUTHINFO; ALTER through the form (MQ's PATCH).
    assert!(
        has("listener_defs", "APP.LSTR") && has("services", "APP.SVC"),
        "{v}"
    );
    assert!(has("authinfo", "SYSTEM.DEFAULT.AUTHINFO.IDPWOS"), "{v}");
    assert!(text_of("altered").contains("altered"), "{v}");
    let out = h.mqsc("QC", "DISPLAY QLOCAL(APP.REPLY) MAXDEPTH DESCR\n");
    assert!(
        out.contains("MAXDEPTH(500)") && out.contains("replies out"),
        "{out}"
    );
    // Channel actions answer where they were clicked.
    assert!(text_of("channel_started").contains("AMQ8018I"), "{v}");
    assert!(text_of("channel_stopped").contains("AMQ8019I"), "{v}");
    // A refused delete (the queue holds messages) is shown beside the queues.
    // (The queue's two messages at the end show it took nothing.)
    assert!(text_of("delete_refused").contains("2055"), "{v}");
    // The chart has axes and units, and its history survives a page load.
    let chart = v["chart_texts"].to_string();
    for want in ["messages", "time", "now", "-60 min"] {
        assert!(chart.contains(want), "{want}: {v}");
    }
    assert!(v["chart_kept"].as_u64().unwrap_or(0) >= 1, "{v}");
    // Rates and protection cost charted with their units and legends.
    let rates = v["rate_texts"].to_string();
    for want in ["messages/s", "puts", "gets", "now"] {
        assert!(rates.contains(want), "{want}: {v}");
    }
    let cost = v["protection_texts"].to_string();
    for want in ["per second", "ms/s", "operations/s", "-60 min"] {
        assert!(cost.contains(want), "{want}: {v}");
    }
    assert!(
        v["chart_kept_after_reload"].as_u64().unwrap_or(0) >= 1,
        "{v}"
    );
    let _ = waiting.kill();
    let _ = waiting.wait();
    for shot in [
        "console.png",
        "console-message.png",
        "console-mqsc.png",
        "console-security.png",
        "console-channels.png",
        "console-queues.png",
    ] {
        assert!(shots.join(shot).exists(), "{shot}");
    }
    // A messaging-only user sees no administration, and put and browsed by name.
    assert!(
        v["msg_who"]
            .as_str()
            .is_some_and(|w| w.starts_with("appuser")),
        "{v}"
    );
    assert_eq!(v["msg_admin_hidden"], true, "{v}");
    assert_eq!(v["msg_browse_rows"], 2, "{v}");
    // The forms' puts are on the queue.
    assert_eq!(h.depth("QC", "APP.Q"), 2);
    h.ok(&["stop", "QC"]);
}

/// `sealmq web` in a real browser: every queue manager of the installation with its state; an
/// admin starts an ended one, opens it (its queues), and stops it.
#[test]
fn the_installation_console_starts_opens_and_stops_queue_managers() {
    let h = Home::new();
    h.ok(&["create", "QA"]);
    h.ok(&["create", "QB"]);
    h.ok(&["start", "QB", "--background"]);
    h.mqsc("QB", "DEFINE QLOCAL(APP.Q) DESCR('orders in')\n");
    h.ok(&["stop", "QB"]);
    h.ok(&["start", "QA", "--background"]);
    h.web_passwd("boss", "boss-horse-battery");
    let server = h.web_server(&["--admin", "boss"]);
    let shots = shots_dir(&h);
    let v = drive(
        "installation.js",
        &[
            ("BASE", format!("https://{}", server.addr)),
            ("USER", "boss".into()),
            ("PASSWORD", "boss-horse-battery".into()),
            ("ENDED", "QB".into()),
            ("QUEUE", "APP.Q".into()),
            ("SHOTS", shots.display().to_string()),
        ],
    );
    assert!(v["failure"].is_null(), "{v}");
    assert_eq!(v["errors"], serde_json::json!([]), "script errors: {v}");
    let pairs = |k: &str| v[k].to_string();
    assert_eq!(
        pairs("before"),
        r#"[["QA","running"],["QB","ended"]]"#,
        "{v}"
    );
    assert_eq!(v["opened_first"], "QA", "the running one opens first: {v}");
    assert!(
        v["started_says"]
            .as_str()
            .is_some_and(|s| s.contains("QB started")),
        "{v}"
    );
    assert_eq!(v["opened"], "QB", "{v}");
    assert!(v["queues"].to_string().contains("APP.Q"), "{v}");
    assert_eq!(
        pairs("after"),
        r#"[["QA","running"],["QB","ended"]]"#,
        "{v}"
    );
    assert_eq!(v["opened_after_stop"], "", "{v}");
    assert!(shots.join("console-installation.png").exists());
    assert!(h.ok(&["status", "QB"]).contains("STATUS(ENDED)"));
    drop(server);
    h.ok(&["stop", "QA"]);
}

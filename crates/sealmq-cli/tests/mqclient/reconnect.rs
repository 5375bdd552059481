//! IBM's JMS client reconnecting (MQCNO_RECONNECT) through a JSON CCDT whose first address is
//! dead: kill -9 of the queue manager under a transacted producer, a restart on the same
//! port, and every batch the producer saw committed is on the queue exactly once.

use super::{Home, ibm_classpath, setup};
use sealmq_client::Client;
use sealmq_engine::mqi::{GetOptions, OpenOptions};
use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A JSON CCDT for channel APP.SVRCONN of `qm`: a closed port first, then `port`.
fn ccdt(h: &Home, qm: &str, port: u16) -> String {
    let dead = super::free_port();
    let json = serde_json::json!({
        "channel": [{
            "name": "APP.SVRCONN",
            "type": "clientConnection",
            "clientConnection": {
                "connection": [
                    {"host": "127.0.0.1", "port": dead},
                    {"host": "127.0.0.1", "port": port}
                ],
                "queueManager": qm
            }
        }]
    });
    let path = h.dir.path().join("ccdt.json");
    std::fs::write(&path, json.to_string()).unwrap();
    format!("file://{}", path.display())
}

#[test]
fn kill_9_under_a_reconnecting_transacted_jms_producer_keeps_every_committed_batch_once() {
    let h = Home::new();
    let port = setup(&h, "QK");
    h.mqsc("QK", "ALTER QLOCAL(APP.Q) MAXDEPTH(100000)\n");
    let (batches, size) = (400, 10);
    let mut child = Command::new("java")
        .current_dir(env!("CARGO_TARGET_TMPDIR"))
        .arg("-Dsealmq.reconnect=60")
        .arg(format!("-Dsealmq.ccdt={}", ccdt(&h, "QK", port)))
        .arg("-Dsealmq.qmgr=QK")
        .args(["-cp", &ibm_classpath(), "IbmJms", "0", "-", "-", "-"])
        .args(["produce", "APP.Q", &batches.to_string(), &size.to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("java runs");
    let (tx, rx) = std::sync::mpsc::channel::<serde_json::Value>();
    let out = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if let Ok(v) = serde_json::from_str(&line) {
                let _ = tx.send(v);
            }
        }
    });
    let mut lines = Vec::new();
    // Killed once the producer is well under way (50 batches committed).
    let deadline = Instant::now() + Duration::from_secs(120);
    while lines
        .iter()
        .filter(|l: &&serde_json::Value| l["outcome"] == "committed")
        .count()
        < 50
    {
        assert!(
            Instant::now() < deadline,
            "the producer never got going: {lines:?}"
        );
        if let Ok(v) = rx.recv_timeout(Duration::from_secs(1)) {
            lines.push(v);
        }
    }
    h.kill9("QK");
    h.start_tcp("QK", port);
    let status = child.wait().unwrap();
    reader.join().unwrap();
    lines.extend(rx.try_iter());
    assert!(status.success(), "the producer failed: {lines:?}");
    assert_eq!(
        lines.last().map(|l| l["done"].clone()),
        Some(serde_json::json!(true)),
        "{lines:?}"
    );
    let outcome: HashMap<u64, String> = lines
        .iter()
        .filter_map(|l| Some((l["batch"].as_u64()?, l["outcome"].as_str()?.to_string())))
        .collect();
    let committed = outcome.values().filter(|o| *o == "committed").count();
    eprintln!(
        "batches rolled back by the kill and sent again: {}",
        outcome.len() - committed
    );
    assert_eq!(committed, batches, "{lines:?}");
    // Every message on the queue belongs to a committed batch, each exactly once.
    let mut c = Client::connect_local(&h.qm_dir("QK"), "check").unwrap();
    let (q, _) = c.open("APP.Q", OpenOptions::input()).unwrap();
    let mut seen: HashMap<String, u32> = HashMap::new();
    while let Ok(g) = c.get(q, &GetOptions::default()) {
        let text = String::from_utf8_lossy(&g.payload).into_owned();
        *seen.entry(text).or_default() += 1;
    }
    for (text, n) in &seen {
        assert_eq!(*n, 1, "{text} is on the queue {n} times");
        let batch: u64 = text[1..text.find('-').unwrap()].parse().unwrap();
        assert_eq!(
            outcome.get(&batch).map(String::as_str),
            Some("committed"),
            "{text}"
        );
    }
    assert_eq!(
        seen.len(),
        batches * size,
        "every committed message is there"
    );
}

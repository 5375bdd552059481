//! `tshark -d tcp.port==PORT,mq` (Wireshark's own MQ dissector) decodes what IBM's JMS client
//! and sealmq exchange in a whole JMS session — connect, puts and gets, a transaction, a
//! listener, a durable subscription, a shared one — with no malformed, unknown or suspect
//! segment.

use super::{Home, NONE, ibm, setup};
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn tshark_decodes_a_whole_jms_session_against_sealmq_with_nothing_malformed() {
    let h = Home::new();
    let port = setup(&h, "QW");
    let pcap = h.dir.path().join("jms.pcap");
    let mut cap = Command::new("tshark")
        .args(["-i", "lo", "-f", &format!("tcp port {port}"), "-w"])
        .arg(&pcap)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("tshark runs (./test installs it)");
    // Capturing once tshark says so.
    let err = cap.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(err).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let line = rx
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .expect("tshark starts capturing on lo (it needs the right to capture)");
        if line.contains("Capturing on") {
            break;
        }
    }
    assert_eq!(ibm(port, NONE, &["send", "APP.Q", "3"])[0]["sent"], 3);
    assert_eq!(
        ibm(port, NONE, &["receive", "APP.Q", "1", "500"])[0]["text"],
        "ibm 0"
    );
    assert_eq!(
        ibm(port, NONE, &["transacted", "APP.Q"])[0]["transacted"],
        true
    );
    let o = &ibm(port, NONE, &["listen", "APP.Q", "3", "2000", "auto"])[0];
    assert_eq!(o["distinct"], 3, "{o}");
    ibm(port, NONE, &["durable", "wire/t", "w", "1", "100"]);
    ibm(port, NONE, &["publish", "wire/t", "2"]);
    let got = &ibm(
        port,
        NONE,
        &["durable", "wire/t", "w", "5", "300", "unsubscribe"],
    )[0];
    assert_eq!(got["got"], serde_json::json!(["pub 0", "pub 1"]));
    ibm(port, NONE, &["shared", "wire/s", "s", "4", "200"]);
    // Stopped with SIGINT, tshark writes out what it captured.
    let _ = Command::new("kill")
        .args(["-INT", &cap.id().to_string()])
        .status();
    let _ = cap.wait();
    let tshark = |extra: &[&str]| {
        let out = Command::new("tshark")
            .arg("-r")
            .arg(&pcap)
            .args(["-d", &format!("tcp.port=={port},mq")])
            .args(extra)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let info = tshark(&["-Y", "mq", "-T", "fields", "-e", "_ws.col.Info"]);
    for seen in [
        "INITIAL_DATA",
        "MQCONN_REPLY",
        "MQPUT_REPLY",
        "MQGET_REPLY",
        "MQCMIT_REPLY",
        "MQBACK_REPLY",
        "SPI_REPLY",
        "REQUEST_MSGS",
        "ASYNC_MESSAGE",
        "NOTIFICATION",
        "SOCKET_ACTION",
        "MQDISC_REPLY",
    ] {
        assert!(info.contains(seen), "no {seen} decoded:\n{info}");
    }
    assert!(!info.to_lowercase().contains("unknown"), "{info}");
    let bad = tshark(&["-Y", "_ws.malformed || _ws.expert.severity >= warning"]);
    assert!(
        bad.trim().is_empty(),
        "malformed or suspect segments:\n{bad}"
    );
}

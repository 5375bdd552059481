//! Networks of queue managers (issue 6), with real processes on loopback: request/reply over a
//! channel pair, a gateway hop, `kill -9` of either end mid-stream, a socket cut mid-batch
//! (settled automatically and by RESOLVE CHANNEL), and a full target queue with and without a
//! dead-letter queue. Every stream is checked with self-checking payloads: each message
//! delivered exactly once, none corrupt.

mod common;
#[path = "channels/cuts.rs"]
mod cuts;
#[path = "channels/pq.rs"]
mod pq;

use common::{Home, field, free_port, wait_for};
use sealmq_client::Client;
use sealmq_engine::Md;
use sealmq_engine::mqi::{GetOptions, OpenOptions};
use std::time::Duration;

const LONG: Duration = Duration::from_secs(60);

/// Creates and starts queue managers on free ports; returns their ports.
fn qms(h: &Home, names: &[&str]) -> Vec<u16> {
    names
        .iter()
        .map(|n| {
            let port = free_port();
            h.ok(&["create", n]);
            h.start_tcp(n, port);
            port
        })
        .collect()
}

/// A sender from `from` to `to` (transmission queue named like `to`) and its receiver.
fn link(h: &Home, from: &str, to: &str, port: u16, extra: &str) {
    h.mqsc(
        from,
        &format!(
            "DEFINE QLOCAL({to}) USAGE(XMITQ) MAXDEPTH(100000)\n\
             DEFINE CHANNEL({from}.{to}) CHLTYPE(SDR) CONNAME('127.0.0.1({port})') XMITQ({to}) \
             SHORTTMR(0) BATCHSZ(20) {extra}\n"
        ),
    );
    // The receiver runs as the queue manager's own user, which the default CHLAUTH rules
    // refuse: these tests allow it the documented way.
    h.mqsc(
        to,
        &format!(
            "DEFINE CHANNEL({from}.{to}) CHLTYPE(RCVR)\n\
             SET CHLAUTH('{from}.{to}') TYPE(BLOCKUSER) USERLIST('nobody')\n"
        ),
    );
}

/// Queue managers `a` and `b` each trusting the other's own identity (for TLS channels).
fn trust_each_other(h: &Home, a: &str, b: &str) {
    for (who, whose) in [(a, b), (b, a)] {
        let cert = h.qm_dir(whose).join("keystore/identity.pem");
        h.trust(&h.qm_dir(who).join("keystore"), &cert);
    }
}

fn chstatus(h: &Home, qm: &str, ch: &str) -> String {
    h.mqsc(qm, &format!("DISPLAY CHSTATUS({ch}) ALL\n"))
}

fn verify_all(h: &Home, qm: &str, q: &str, n: u64) {
    let out = h.ok(&["get", qm, q, "--all", "--verify"]);
    assert!(
        out.contains(&format!("got {n} ok {n} corrupt 0 duplicate 0")),
        "expected exactly {n} intact messages on {qm}/{q}: {out}"
    );
}

#[test]
fn request_reply_over_a_channel_pair_and_a_gateway_hop() {
    let h = Home::new();
    let ports = qms(&h, &["QMA", "QMB", "QMC"]);
    link(&h, "QMA", "QMB", ports[1], "");
    link(&h, "QMB", "QMA", ports[0], "");
    link(&h, "QMB", "QMC", ports[2], "");
    h.mqsc(
        "QMA",
        "DEFINE QREMOTE(SVC.REQ) RNAME(SVC.REQ) RQMNAME(QMB) XMITQ(QMB)\n\
         DEFINE QLOCAL(APP.REPLY)\n\
         * QMC is reached through QMB: a queue-manager alias.\n\
         DEFINE QREMOTE(QMC) RQMNAME(QMC) XMITQ(QMB)\n",
    );
    h.mqsc("QMB", "DEFINE QLOCAL(SVC.REQ)\n");
    h.mqsc("QMC", "DEFINE QLOCAL(FAR.Q)\n");
    for ch in ["QMA.QMB", "QMB.QMA", "QMB.QMC"] {
        let from = &ch[..3];
        assert!(
            h.mqsc(from, &format!("START CHANNEL({ch})\n"))
                .contains("started")
        );
    }

    // The requester on QMA names its reply queue; the responder on QMB replies to it by
    // (queue, queue manager), which routes through QMB's transmission queue QMA.
    let mut req = Client::connect_local(&h.qm_dir("QMA"), "requester").unwrap();
    let mut rsp = Client::connect_local(&h.qm_dir("QMB"), "responder").unwrap();
    let (rq, _) = req.open("SVC.REQ", OpenOptions::output()).unwrap();
    let (rp, _) = req.open("APP.REPLY", OpenOptions::input()).unwrap();
    let (sq, _) = rsp.open("SVC.REQ", OpenOptions::input()).unwrap();
    let wait = |s: u64| GetOptions {
        wait: Some(Duration::from_secs(s)),
        ..Default::default()
    };
    for i in 0..20 {
        let mut md = Md {
            reply_to_q: "APP.REPLY".into(),
            ..Default::default()
        };
        md.set_property("attempt", sealmq_mqi::PropValue::Int(i))
            .unwrap();
        req.put(rq, &mut md, format!("request {i}").as_bytes(), false)
            .unwrap();
        let got = rsp.get(sq, &wait(30)).unwrap();
        assert_eq!(
            got.md.property("attempt"),
            Some(&sealmq_mqi::PropValue::Int(i)),
            "message properties travel over the channel"
        );
        assert_eq!(
            got.md.reply_to_qmgr, "QMA",
            "the queue manager fills ReplyToQMgr"
        );
        assert_eq!(
            got.md.user_id, md.user_id,
            "context travels with the message"
        );
        let (back, _) = rsp
            .open_at(
                &got.md.reply_to_q,
                &got.md.reply_to_qmgr,
                OpenOptions::output(),
            )
            .unwrap();
        let mut rmd = Md {
            correl_id: got.md.msg_id,
            ..Default::default()
        };
        let answer = format!("reply to {}", String::from_utf8_lossy(&got.payload));
        rsp.put(back, &mut rmd, answer.as_bytes(), false).unwrap();
        rsp.close(back).unwrap();
        let reply = req.get(rp, &wait(30)).unwrap();
        assert_eq!(reply.payload, format!("reply to request {i}").as_bytes());
        assert_eq!(reply.md.correl_id, md.msg_id);
    }
    // Unknown queue managers are refused at open with 2087.
    let e = req
        .open_at("X", "NOWHERE", OpenOptions::output())
        .unwrap_err();
    assert_eq!(e.reason, sealmq_types::ReasonCode::UnknownRemoteQMgr, "{e}");
    // Applications disconnect (a controlled stop would wait for them).
    drop(req);
    drop(rsp);

    // A gateway hop: QMA → QMB → QMC, persistent, through the alias.
    h.ok(&[
        "put",
        "QMA",
        "FAR.Q",
        "--qmgr",
        "QMC",
        "--size",
        "300",
        "--count",
        "200",
        "--persistent",
    ]);
    wait_for(LONG, "200 messages at QMC", || {
        h.depth("QMC", "FAR.Q") == 200
    });
    verify_all(&h, "QMC", "FAR.Q", 200);
    let st = chstatus(&h, "QMB", "QMB.QMC");
    assert_eq!(field(&st, "STATUS"), "RUNNING");
    assert_eq!(field(&st, "MSGS"), "200", "{st}");
    for qm in ["QMA", "QMB", "QMC"] {
        h.ok(&["stop", qm]);
    }
}

#[test]
fn kill_dash_nine_of_either_end_mid_stream_delivers_every_message_once() {
    let h = Home::new();
    let ports = qms(&h, &["QMS", "QMR"]);
    link(&h, "QMS", "QMR", ports[1], "");
    h.mqsc(
        "QMS",
        "DEFINE QREMOTE(DEST) RNAME(DEST) RQMNAME(QMR) XMITQ(QMR)\n",
    );
    h.mqsc("QMR", "DEFINE QLOCAL(DEST) MAXDEPTH(100000)\n");
    let total = 20000u64;
    h.ok(&[
        "put",
        "QMS",
        "DEST",
        "--size",
        "512",
        "--count",
        "20000",
        "--persistent",
        "--syncpoint",
        "100",
    ]);
    h.mqsc("QMS", "START CHANNEL(QMS.QMR)\n");
    // Kill the receiving end mid-stream, then the sending end, restarting each.
    wait_for(LONG, "the stream to begin", || {
        h.depth("QMR", "DEST") >= 500
    });
    h.kill9("QMR");
    h.start_tcp("QMR", ports[1]);
    wait_for(LONG, "the stream to resume", || {
        h.depth("QMR", "DEST") >= 2500
    });
    let left = h.depth("QMS", "QMR");
    assert!(
        left > 0,
        "the stream ended before the sender could be killed mid-way"
    );
    h.kill9("QMS");
    h.start_tcp("QMS", ports[0]);
    // The channel was running, so it starts again with its queue manager.
    wait_for(LONG, "every message to arrive", || {
        h.depth("QMS", "QMR") == 0 && h.depth("QMR", "DEST") >= total
    });
    verify_all(&h, "QMR", "DEST", total);
    h.ok(&["stop", "QMS"]);
    h.ok(&["stop", "QMR"]);
}

#[test]
fn a_full_target_queue_goes_to_the_dlq_or_stops_the_channel_without_one() {
    let h = Home::new();
    let ports = qms(&h, &["QMS", "QMR"]);
    link(&h, "QMS", "QMR", ports[1], "");
    h.mqsc("QMR", "DEFINE QLOCAL(SMALL) MAXDEPTH(5)\nALTER CHANNEL(QMS.QMR) CHLTYPE(RCVR) MRRTY(2) MRTMR(10)\n");
    h.mqsc(
        "QMS",
        "DEFINE QREMOTE(SMALL) RNAME(SMALL) RQMNAME(QMR) XMITQ(QMR)\nSTART CHANNEL(QMS.QMR)\n",
    );
    h.ok(&[
        "put",
        "QMS",
        "SMALL",
        "--size",
        "64",
        "--count",
        "8",
        "--persistent",
    ]);
    wait_for(LONG, "the overflow on the DLQ", || {
        h.depth("QMR", "SYSTEM.DEAD.LETTER.QUEUE") == 3
    });
    assert_eq!(h.depth("QMR", "SMALL"), 5);
    let dl = h.ok(&["browse", "QMR", "SYSTEM.DEAD.LETTER.QUEUE"]);
    assert!(
        dl.contains("reason 2053") && dl.contains("queue SMALL qmgr QMR"),
        "{dl}"
    );

    // Without a dead-letter queue the channel stops and the messages stay with the sender.
    h.mqsc("QMR", "ALTER QMGR DEADQ(' ')\n");
    h.ok(&[
        "put",
        "QMS",
        "SMALL",
        "--size",
        "64",
        "--count",
        "4",
        "--persistent",
    ]);
    wait_for(LONG, "the channel to stop", || {
        field(&chstatus(&h, "QMS", "QMS.QMR"), "STATUS") == "STOPPED"
    });
    let st = chstatus(&h, "QMS", "QMS.QMR");
    assert!(
        st.contains("[2053]") && st.contains("has no dead-letter queue"),
        "{st}"
    );
    assert_eq!(h.depth("QMS", "QMR"), 4, "nothing is lost");
    assert_eq!(h.depth("QMR", "SMALL"), 5);
    // Room made, channel started: they arrive.
    h.mqsc("QMR", "CLEAR QLOCAL(SMALL)\n");
    h.mqsc("QMS", "START CHANNEL(QMS.QMR)\n");
    wait_for(LONG, "the held messages", || h.depth("QMR", "SMALL") == 4);
    assert_eq!(h.depth("QMS", "QMR"), 0);
    h.ok(&["stop", "QMS"]);
    h.ok(&["stop", "QMR"]);
}

#[test]
fn tls_channels_check_the_partner_and_refresh_their_keys() {
    let h = Home::new();
    let (ps, pr) = (free_port(), free_port());
    h.ok(&["create", "QMS"]);
    h.ok(&["create", "QMR"]);
    trust_each_other(&h, "QMS", "QMR");
    h.start_tcp("QMS", ps);
    h.ok(&[
        "start",
        "QMR",
        "--background",
        "--tls",
        "--listen",
        &format!("127.0.0.1:{pr}"),
    ]);
    h.mqsc("QMR", "DEFINE QLOCAL(DEST) MAXDEPTH(100000)\n");
    h.mqsc(
        "QMS",
        "DEFINE QREMOTE(DEST) RNAME(DEST) RQMNAME(QMR) XMITQ(QMR)\n",
    );
    link(
        &h,
        "QMS",
        "QMR",
        pr,
        "SSLCIPH(TLS_AES_256_GCM_SHA384) SSLPEER('CN=QMR') SSLRKEYC(65536)",
    );
    h.mqsc(
        "QMR",
        "ALTER CHANNEL(QMS.QMR) CHLTYPE(RCVR) SSLCIPH(ANY) SSLPEER('CN=QMX')\n",
    );
    // The receiver expects CN=QMX: refused, and the sender retries saying why.
    h.mqsc("QMS", "START CHANNEL(QMS.QMR)\n");
    wait_for(LONG, "the refusal", || {
        h.mqsc("QMS", "DISPLAY CHSTATUS(QMS.QMR) ALL\n")
            .contains("does not match SSLPEER('CN=QMX')")
    });
    h.mqsc(
        "QMR",
        "ALTER CHANNEL(QMS.QMR) CHLTYPE(RCVR) SSLPEER('CN=QMS')\n",
    );
    h.ok(&[
        "put",
        "QMS",
        "DEST",
        "--size",
        "2000",
        "--count",
        "200",
        "--persistent",
    ]);
    wait_for(LONG, "200 messages over TLS", || {
        h.depth("QMR", "DEST") == 200
    });
    verify_all(&h, "QMR", "DEST", 200);
    let st = chstatus(&h, "QMS", "QMS.QMR");
    assert_eq!(field(&st, "STATUS"), "RUNNING");
    // 200 × 2 KB past a 64 KB SSLRKEYC: several TLS 1.3 key updates.
    let resets: u64 = field(&st, "SSLRKEYS").parse().unwrap();
    assert!(resets >= 3, "{st}");
    h.ok(&["stop", "QMS"]);
    h.ok(&["stop", "QMR"]);
}

#[test]
fn a_requester_pulls_from_a_server_channel() {
    let h = Home::new();
    let ports = qms(&h, &["QMS", "QMR"]);
    h.mqsc(
        "QMS",
        "DEFINE QLOCAL(QMR) USAGE(XMITQ)\n\
         DEFINE QREMOTE(DEST) RNAME(DEST) RQMNAME(QMR) XMITQ(QMR)\n\
         DEFINE CHANNEL(QMS.QMR) CHLTYPE(SVR) XMITQ(QMR)\n\
         SET CHLAUTH('QMS.QMR') TYPE(BLOCKUSER) USERLIST('nobody')\n",
    );
    h.mqsc(
        "QMR",
        &format!(
            "DEFINE QLOCAL(DEST)\n\
             DEFINE CHANNEL(QMS.QMR) CHLTYPE(RQSTR) CONNAME('127.0.0.1({})') SHORTTMR(0)\n",
            ports[0]
        ),
    );
    h.ok(&[
        "put",
        "QMS",
        "DEST",
        "--size",
        "700",
        "--count",
        "300",
        "--persistent",
    ]);
    // A requester cannot be defined with SPLPROT(REMOVE); a server can.
    let bad = h.run(
        &["mqsc", "QMR"],
        Some("ALTER CHANNEL(QMS.QMR) CHLTYPE(RQSTR) SPLPROT(REMOVE)\n"),
    );
    assert!(!bad.status.success());
    assert!(
        String::from_utf8_lossy(&bad.stdout).contains("applies only to SDR and SVR"),
        "{}",
        String::from_utf8_lossy(&bad.stdout)
    );
    h.mqsc("QMR", "START CHANNEL(QMS.QMR)\n");
    wait_for(LONG, "300 messages pulled", || {
        h.depth("QMR", "DEST") == 300
    });
    verify_all(&h, "QMR", "DEST", 300);
    let st = chstatus(&h, "QMS", "QMS.QMR");
    assert_eq!(field(&st, "CHLTYPE"), "SVR");
    assert_eq!(field(&st, "MSGS"), "300", "{st}");
    // The requester's queue manager restarts: the channel comes back by itself.
    h.ok(&["stop", "QMR"]);
    h.start_tcp("QMR", ports[1]);
    h.ok(&[
        "put",
        "QMS",
        "DEST",
        "--size",
        "700",
        "--count",
        "20",
        "--persistent",
    ]);
    wait_for(LONG, "20 more", || h.depth("QMR", "DEST") == 20);
    h.ok(&["stop", "QMS"]);
    h.ok(&["stop", "QMR"]);
}

#[test]
fn batchint_holds_a_batch_open_for_stragglers() {
    let h = Home::new();
    let ports = qms(&h, &["QMS", "QMR"]);
    link(
        &h,
        "QMS",
        "QMR",
        ports[1],
        "BATCHSZ(50) BATCHINT(3000) NPMSPEED(NORMAL)",
    );
    h.mqsc(
        "QMS",
        "DEFINE QREMOTE(DEST) RNAME(DEST) RQMNAME(QMR) XMITQ(QMR)\nSTART CHANNEL(QMS.QMR)\n",
    );
    h.mqsc("QMR", "DEFINE QLOCAL(DEST)\n");
    wait_for(LONG, "the channel", || {
        field(&chstatus(&h, "QMS", "QMS.QMR"), "STATUS") == "RUNNING"
    });
    // Eight separate applications, one message each, well apart: with BATCHINT(3000) the
    // sender keeps its batch open for them, so they travel as one batch.
    for i in 0..8 {
        h.ok(&["put", "QMS", "DEST", "--message", &format!("m{i}")]);
    }
    wait_for(LONG, "eight messages", || h.depth("QMR", "DEST") == 8);
    let st = chstatus(&h, "QMS", "QMS.QMR");
    assert_eq!(field(&st, "MSGS"), "8", "{st}");
    assert_eq!(field(&st, "BATCHES"), "1", "{st}");
    h.ok(&["stop", "QMS"]);
    h.ok(&["stop", "QMR"]);
    // Both ends' statistics (the last interval is written at stop) count the channel.
    for (qm, bytes) in [("QMS", "bytes_sent"), ("QMR", "bytes_received")] {
        let (mut msgs, mut batches, mut moved, mut adapter_requests) = (0, 0, 0, 0);
        for f in std::fs::read_dir(h.qm_dir(qm).join("stats"))
            .unwrap()
            .flatten()
        {
            let v: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(f.path()).unwrap()).unwrap();
            for t in v["chinit_tasks"].as_array().unwrap() {
                if t["task"].as_str().unwrap().starts_with("ADAPTER.") {
                    adapter_requests += t["requests"].as_u64().unwrap();
                    let busy = t["busy_pct"].as_f64().unwrap();
                    assert!((0.0..=100.0).contains(&busy), "{t}");
                }
            }
            for c in v["channels"].as_array().unwrap() {
                if c["name"] == "QMS.QMR" {
                    msgs += c["msgs"].as_u64().unwrap();
                    batches += c["batches"].as_u64().unwrap();
                    moved += c[bytes].as_u64().unwrap();
                    assert_eq!(c["avg_batch_size"], 8.0, "{c}");
                }
            }
        }
        assert_eq!((msgs, batches), (8, 1), "{qm}");
        assert!(
            adapter_requests > 0,
            "{qm}: the channel's work ran in adapter slots"
        );
        assert!(moved > 8 * 2, "{qm}: {bytes} {moved}");
    }
}

#[test]
fn a_receiver_with_mcauser_puts_only_where_that_user_may() {
    let h = Home::new();
    let ports = qms(&h, &["QMS", "QMR"]);
    link(&h, "QMS", "QMR", ports[1], "");
    h.mqsc(
        "QMR",
        "DEFINE QLOCAL(APP.IN)\nDEFINE QLOCAL(SECRET.Q)\n\
         ALTER CHANNEL(QMS.QMR) CHLTYPE(RCVR) MCAUSER('partner')\n\
         SET AUTHREC PROFILE('APP.*') OBJTYPE(QUEUE) PRINCIPAL('partner') AUTHADD(PUT)\n",
    );
    h.mqsc(
        "QMS",
        "DEFINE QREMOTE(APP.IN) RNAME(APP.IN) RQMNAME(QMR) XMITQ(QMR)\n\
         DEFINE QREMOTE(SECRET.Q) RNAME(SECRET.Q) RQMNAME(QMR) XMITQ(QMR)\n\
         START CHANNEL(QMS.QMR)\n",
    );
    h.ok(&[
        "put",
        "QMS",
        "APP.IN",
        "--message",
        "allowed",
        "--persistent",
    ]);
    h.ok(&[
        "put",
        "QMS",
        "SECRET.Q",
        "--message",
        "not for you",
        "--persistent",
    ]);
    wait_for(LONG, "both delivered or dead-lettered", || {
        h.depth("QMR", "APP.IN") == 1 && h.depth("QMR", "SYSTEM.DEAD.LETTER.QUEUE") == 1
    });
    assert_eq!(h.depth("QMR", "SECRET.Q"), 0);
    let dl = h.ok(&["browse", "QMR", "SYSTEM.DEAD.LETTER.QUEUE"]);
    assert!(
        dl.contains("reason 2035") && dl.contains("queue SECRET.Q"),
        "{dl}"
    );
    h.ok(&["stop", "QMS"]);
    h.ok(&["stop", "QMR"]);
}

#[test]
fn a_sender_retries_then_stops_when_its_retries_are_exhausted() {
    let h = Home::new();
    qms(&h, &["QMS"]);
    // Nothing listens on this port.
    let dead = free_port();
    h.mqsc(
        "QMS",
        &format!(
            "DEFINE QLOCAL(QMX) USAGE(XMITQ)\n\
             DEFINE CHANNEL(QMS.QMX) CHLTYPE(SDR) CONNAME('127.0.0.1({dead})') XMITQ(QMX) \
             SHORTRTY(3) SHORTTMR(0) LONGRTY(0)\n\
             START CHANNEL(QMS.QMX)\n"
        ),
    );
    wait_for(LONG, "the retries to run out", || {
        field(&chstatus(&h, "QMS", "QMS.QMX"), "STATUS") == "STOPPED"
    });
    let st = chstatus(&h, "QMS", "QMS.QMX");
    assert!(
        st.contains("cannot connect to 127.0.0.1") && st.contains("retries exhausted"),
        "{st}"
    );
    h.ok(&["stop", "QMS"]);
}

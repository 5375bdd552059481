//! AMQP channels (issue 15) against a real third-party AMQP 1.0 client, Apache Qpid Proton for
//! Python (`pip install python-qpid-proton`, installed by `.ci/run`), and a real queue manager
//! process: put and get both ways between AMQP and sealmq applications, durable messages
//! accepted only once put, rejected to the dead-letter queue, released with a delivery count,
//! authority on every attach, application properties ↔ message properties, JMS selectors and
//! local transactions.

#[path = "amqp/clients.rs"]
mod clients;
mod common;
#[path = "amqp/tls.rs"]
mod tls;

use common::{Home, free_port, json_lines};
use sealmq_client::Client;
use sealmq_engine::mqi::{GetOptions, OpenOptions};
use sealmq_engine::{Md, Persistence};
use sealmq_mqi::PropValue;
use std::process::Command;

const CLIENT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/amqp/proton_client.py");

/// Runs the proton client; its JSON lines.
fn proton(url: &str, args: &[&str]) -> Vec<serde_json::Value> {
    let mut cmd = Command::new("python3");
    cmd.arg(CLIENT).arg(url);
    json_lines(cmd, "proton", args)
}

fn setup(h: &Home, qm: &str) -> String {
    h.amqp_qm(qm, "DEFINE QLOCAL(SECRET.Q)\n")
}

/// Waits until APP.Q holds `depth` messages: outcomes are settled as they arrive, apart from
/// the link's next deliveries, so an application may be gone before its last commit is done;
/// a link that ends waits up to 10 s for outcomes before it backs out what it still holds.
fn settled(h: &Home, qm: &str, depth: u64) {
    common::wait_for(
        std::time::Duration::from_secs(30),
        &format!("APP.Q on {qm} to hold {depth} once outcomes are settled"),
        || h.depth(qm, "APP.Q") == depth,
    );
}

#[test]
fn an_amqp_application_and_a_sealmq_application_exchange_messages_both_ways() {
    let h = Home::new();
    let url = setup(&h, "QA");
    // AMQP → sealmq: durable, ids and reply-to kept.
    assert_eq!(proton(&url, &["send", "APP.Q", "5"])[0]["sent"], 5);
    assert_eq!(h.depth("QA", "APP.Q"), 5, "accepted means put");
    let mut c = Client::connect_local(&h.qm_dir("QA"), "mq-app").unwrap();
    let (q, _) = c.open("APP.Q", OpenOptions::input()).unwrap();
    let g = c.get(q, &GetOptions::default()).unwrap();
    assert_eq!(g.payload, b"hello 0");
    assert_eq!(g.md.persistence, Persistence::Persistent);
    assert_eq!(g.md.priority, 3);
    assert_eq!(&g.md.msg_id[..6], b"amqp-0");
    assert_eq!(&g.md.correl_id[..6], b"corr-0");
    assert_eq!(g.md.reply_to_q, "REPLY.Q");
    assert_eq!(g.md.format, "MQSTR");
    // Application properties are message properties.
    assert_eq!(
        g.md.property("colour"),
        Some(&PropValue::String("red".into()))
    );
    assert_eq!(g.md.property("n").map(|v| v.to_string()), Some("0".into()));
    assert_eq!(g.md.property("half"), Some(&PropValue::Double(0.0)));
    c.close(q).unwrap();
    // The other four, got over AMQP in order.
    let got = proton(&url, &["receive", "APP.Q", "4"]);
    let bodies: Vec<&str> = got.iter().map(|m| m["body"].as_str().unwrap()).collect();
    assert_eq!(bodies, ["hello 1", "hello 2", "hello 3", "hello 4"]);
    assert_eq!(got[0]["id"], "amqp-1");
    assert_eq!(got[0]["correlation_id"], "corr-1");
    assert_eq!(got[0]["durable"], true);
    assert_eq!(got[0]["properties"]["colour"], "blue");
    assert_eq!(got[0]["properties"]["n"], 1);
    assert_eq!(got[0]["properties"]["half"], 0.5);
    settled(&h, "QA", 0);
    // Copies (distribution-mode copy) leave the queue as it was.
    proton(&url, &["send", "APP.Q", "2"]);
    let b = proton(&url, &["browse", "APP.Q", "2"]);
    assert_eq!(b[0]["browsed"], serde_json::json!(["hello 0", "hello 1"]));
    assert_eq!(h.depth("QA", "APP.Q"), 2, "browsing takes nothing");
    proton(&url, &["receive", "APP.Q", "2"]);
    // A dynamic receiving link: a temporary queue from the model, gone with its link.
    let d = proton(&url, &["dynamic", "-"]);
    let temp = d[0]["address"].as_str().unwrap().to_string();
    assert!(temp.starts_with("AMQP."), "{temp}");
    assert_eq!(d[0]["body"], "reply");
    common::wait_for(
        std::time::Duration::from_secs(10),
        "the temporary queue to go with its link",
        || {
            let o = h.run(&["mqsc", "QA"], Some(&format!("DISPLAY QLOCAL({temp})\n")));
            !o.status.success()
        },
    );
    // A temporary topic (JMS TemporaryTopic), where the administrator lets 'app' publish and
    // subscribe under TEMP/: its connection subscribes and another replies to it; the other
    // may not subscribe to it (as if it did not exist), nor ask a dynamic source for one;
    // closed, it takes no more publishers.
    h.mqsc(
        "QA",
        "DEFINE TOPIC(TEMP.TOPICS) TOPICSTR('TEMP')\n\
         SET AUTHREC PROFILE('TEMP.TOPICS') OBJTYPE(TOPIC) PRINCIPAL('app') AUTHADD(PUB,SUB)\n",
    );
    let t = &proton(&url, &["temptopic", "-"])[0];
    assert!(
        t["address"]
            .as_str()
            .unwrap_or_default()
            .starts_with("TEMP/QA/"),
        "{t}"
    );
    assert_eq!(t["body"], "reply", "{t}");
    for (k, said) in [
        ("other_receiver", "does not exist"),
        ("dynamic_source", "dynamic target"),
        ("late", "does not exist"),
    ] {
        let e = t[k].as_str().unwrap_or_default();
        assert!(e.contains(said), "{k}: {t}");
    }
    common::wait_for(
        std::time::Duration::from_secs(10),
        "the temporary topic's subscriptions to end",
        || !h.mqsc("QA", "DISPLAY SUB(*) TOPICSTR\n").contains("TEMP/"),
    );
    // sealmq → AMQP.
    let (o, _) = c.open("APP.Q", OpenOptions::output()).unwrap();
    let mut md = Md {
        persistence: Persistence::Persistent,
        format: "MQSTR".into(),
        reply_to_q: "BACK.Q".into(),
        ..Md::default()
    };
    md.correl_id[..3].copy_from_slice(b"abc");
    md.set_property("region", PropValue::String("EMEA".into()))
        .unwrap();
    md.set_property("amount", PropValue::Int(250)).unwrap();
    md.set_property("urgent", PropValue::Bool(true)).unwrap();
    c.put(o, &mut md, b"from sealmq", false).unwrap();
    let got = proton(&url, &["receive", "APP.Q", "1"]);
    assert_eq!(got[0]["body"], "from sealmq");
    assert_eq!(got[0]["properties"]["region"], "EMEA");
    assert_eq!(got[0]["properties"]["amount"], 250);
    assert_eq!(got[0]["properties"]["urgent"], true);
    assert_eq!(got[0]["correlation_id"], "abc");
    assert_eq!(got[0]["reply_to"], "BACK.Q");
    assert_eq!(got[0]["durable"], true);
    c.close(o).unwrap();
}

#[test]
fn released_comes_back_counted_rejected_goes_to_the_dead_letter_queue_and_authority_holds() {
    let h = Home::new();
    let url = setup(&h, "QB");
    proton(&url, &["send", "APP.Q", "2"]);
    // Released: back on the queue, its delivery count (backout count) raised.
    assert_eq!(proton(&url, &["release", "APP.Q"])[0]["release"], "hello 0");
    let again = proton(&url, &["receive", "APP.Q", "1"]);
    assert_eq!(again[0]["body"], "hello 0");
    // At least the release; the link's prefetch may have taken it once more before closing.
    assert!(
        again[0]["delivery_count"].as_u64().unwrap() >= 1,
        "{again:?}"
    );
    // Accepted: gone once its outcome is settled (the link's other deliveries back out when
    // it ends, and the queue is whole again).
    settled(&h, "QB", 1);
    // Rejected: to SYSTEM.DEAD.LETTER.QUEUE.
    assert_eq!(proton(&url, &["reject", "APP.Q"])[0]["reject"], "hello 1");
    // Outcomes are settled as they come, apart from the link's next deliveries.
    common::wait_for(
        std::time::Duration::from_secs(30),
        "the rejected message on the dead-letter queue",
        || h.depth("QB", "SYSTEM.DEAD.LETTER.QUEUE") == 1,
    );
    // The move commits after the dead-letter put is counted: polled, not read once.
    common::wait_for(
        std::time::Duration::from_secs(30),
        "the rejected message gone from APP.Q",
        || h.depth("QB", "APP.Q") == 0,
    );
    // No authority on SECRET.Q: the attach is refused with amqp:unauthorized-access.
    let e = proton(&url, &["forbidden", "SECRET.Q"]);
    let text = e[0]["error"].as_str().unwrap_or_default().to_string();
    assert!(
        text.contains("unauthorized-access") && text.contains("2035"),
        "{text}"
    );
    assert_eq!(h.depth("QB", "SECRET.Q"), 0);
    // A selector that does not parse refuses the link with the reason; it is never ignored.
    let e = proton(&url, &["badselect", "APP.Q", "colour == 'red'"]);
    let text = e[0]["error"].as_str().unwrap_or_default().to_string();
    assert!(text.contains("2459"), "{text}");
    // A topic (JMS Topic: capability 'topic') needs PUB and SUB on the topic tree, which
    // 'app' has not here: refused both ways (2035), and no subscription is made of it.
    let e = proton(&url, &["topic", "APP.Q"]);
    for kind in ["sender", "receiver"] {
        let text = e[0][kind].as_str().unwrap_or_default().to_string();
        assert!(
            text.contains("unauthorized-access") && text.contains("2035"),
            "{kind}: {text}"
        );
    }
    let subs = h.mqsc("QB", "DISPLAY SUB(*)\n");
    assert!(
        subs.contains("AMQ8096I") && !subs.contains("SUBID("),
        "{subs}"
    );
    // The queue manager goes on serving.
    proton(&url, &["send", "APP.Q", "1"]);
    assert_eq!(h.depth("QB", "APP.Q"), 1);
    // CHLAUTH's backstop: SYSTEM.* channels are refused until the administrator allows them.
    let port = free_port();
    h.mqsc(
        "QB",
        &format!(
            "ALTER CHANNEL(SYSTEM.DEF.AMQP) CHLTYPE(AMQP) PORT({port}) IPADDR(127.0.0.1) \
             MCAUSER('app')\nSTART CHANNEL(SYSTEM.DEF.AMQP)\n"
        ),
    );
    let e = proton(&format!("amqp://127.0.0.1:{port}"), &["forbidden", "APP.Q"]);
    let text = e[0]["error"].as_str().unwrap_or_default().to_string();
    assert!(text.contains("unauthorized-access"), "{text}");
    assert_eq!(
        h.depth("QB", "APP.Q"),
        1,
        "nothing put through the refused channel"
    );
    // A principal without authority on the model queue makes no temporary queue (2035).
    let port = free_port();
    h.mqsc(
        "QB",
        &format!(
            "DEFINE CHANNEL(LOW.AMQP) CHLTYPE(AMQP) PORT({port}) IPADDR(127.0.0.1) \
             MCAUSER('low')\nSET AUTHREC OBJTYPE(QMGR) PRINCIPAL('low') AUTHADD(CONNECT)\n\
             START CHANNEL(LOW.AMQP)\n"
        ),
    );
    let e = proton(&format!("amqp://127.0.0.1:{port}"), &["dynforbidden", "-"]);
    assert!(e[0]["error"].is_string(), "{e:?}");
    let queues = h.mqsc("QB", "DISPLAY QLOCAL(AMQP.*)\n");
    assert!(!queues.contains("QUEUE(AMQP."), "{queues}");
    let st = h.mqsc("QB", "DISPLAY CHSTATUS(APP.AMQP)\n");
    assert!(st.contains("AMQP") && st.contains("RUNNING"), "{st}");
    h.mqsc("QB", "STOP CHANNEL(APP.AMQP)\n");
}

#[test]
fn selectors_choose_and_transactions_commit_or_roll_back() {
    let h = Home::new();
    let url = setup(&h, "QS");
    // Six messages: colour red for even n, blue for odd.
    proton(&url, &["send", "APP.Q", "6"]);
    let sel = proton(&url, &["select", "APP.Q", "2", "colour = 'red' AND n > 0"]);
    assert_eq!(
        sel[0]["selected"],
        serde_json::json!(["hello 2", "hello 4"])
    );
    settled(&h, "QS", 4);
    let sel = proton(
        &url,
        &[
            "select",
            "APP.Q",
            "1",
            "half BETWEEN 2 AND 3 OR JMSPriority > 8",
        ],
    );
    assert_eq!(sel[0]["selected"], serde_json::json!(["hello 5"]));
    // The rest, in order, for a plain receiver.
    let rest = proton(&url, &["receive", "APP.Q", "3"]);
    let bodies: Vec<&str> = rest.iter().map(|m| m["body"].as_str().unwrap()).collect();
    assert_eq!(bodies, ["hello 0", "hello 1", "hello 3"]);
    // A sealmq application's properties, selected over AMQP.
    h.ok(&[
        "put",
        "QS",
        "APP.Q",
        "--message",
        "small",
        "--property",
        "amount:int=5",
    ]);
    h.ok(&[
        "put",
        "QS",
        "APP.Q",
        "--message",
        "large",
        "--property",
        "amount:long=5000",
    ]);
    let sel = proton(&url, &["select", "APP.Q", "1", "amount >= 1000"]);
    assert_eq!(sel[0]["selected"], serde_json::json!(["large"]));
    proton(&url, &["receive", "APP.Q", "1"]);

    // Transactional sends: nothing of a rolled-back transaction is put; a committed one is.
    let r = proton(&url, &["txsend", "APP.Q", "3", "rollback"]);
    assert_eq!(r[0]["transaction"], "rolled back");
    let r = proton(&url, &["txsend", "APP.Q", "2", "commit"]);
    assert_eq!(r[0]["transaction"], "committed");
    common::wait_for(
        std::time::Duration::from_secs(10),
        "the committed transaction's messages",
        || h.depth("QS", "APP.Q") >= 2,
    );
    assert_eq!(
        h.depth("QS", "APP.Q"),
        2,
        "the rolled-back three never arrive"
    );
    // Transactional acceptance: rolled back, the messages come back; committed, they go.
    let r = proton(&url, &["txreceive", "APP.Q", "2", "rollback"]);
    assert_eq!(r[0]["transaction"], "rolled back");
    assert_eq!(r[0]["bodies"], serde_json::json!(["tx 0", "tx 1"]));
    common::wait_for(
        std::time::Duration::from_secs(10),
        "rolled-back acceptances to leave the messages on the queue",
        || h.depth("QS", "APP.Q") == 2,
    );
    let r = proton(&url, &["txreceive", "APP.Q", "2", "commit"]);
    assert_eq!(r[0]["transaction"], "committed");
    assert_eq!(r[0]["bodies"], serde_json::json!(["tx 0", "tx 1"]));
    common::wait_for(
        std::time::Duration::from_secs(30),
        "committed acceptances to take the messages",
        || h.depth("QS", "APP.Q") == 0,
    );
}

/// Message properties from the command line: shown by browse, kept across a restart.
#[test]
fn message_properties_are_kept_through_a_restart_and_shown_by_browse() {
    let h = Home::new();
    h.ok(&["create", "QP"]);
    h.ok(&["start", "QP", "--background"]);
    h.mqsc(
        "QP",
        "DEFINE QLOCAL(P.Q)
",
    );
    h.ok(&[
        "put",
        "QP",
        "P.Q",
        "--message",
        "m",
        "--persistent",
        "--property",
        "colour=red",
        "--property",
        "n:int=-5",
        "--property",
        "ok:boolean=true",
    ]);
    let bad = h.fails(&["put", "QP", "P.Q", "--property", "JMSType=x"]);
    assert!(bad.contains("2442"), "{bad}");
    let bad = h.fails(&["put", "QP", "P.Q", "--property", "n:int=many"]);
    assert!(bad.contains("int"), "{bad}");
    h.ok(&["stop", "QP"]);
    h.ok(&["start", "QP", "--background"]);
    let b = h.ok(&["browse", "QP", "P.Q"]);
    assert!(b.contains("colour(string): red"), "{b}");
    assert!(b.contains("n(int): -5"), "{b}");
    assert!(b.contains("ok(boolean): true"), "{b}");
    assert!(b.contains("1 message(s)"), "{b}");
}

/// A transfer is accepted only once its put is durable: every accepted durable message of a
/// burst (many unsettled at once, so they are committed in groups) is there after a kill -9.
#[test]
fn accepted_durable_messages_survive_a_kill_9_of_the_queue_manager() {
    let h = Home::new();
    let url = setup(&h, "QK");
    let r = proton(&url, &["burst", "APP.Q", "2000"]);
    assert_eq!(r[0]["accepted"], 2000, "{r:?}");
    h.kill9("QK");
    h.ok(&["start", "QK", "--background"]);
    assert_eq!(h.depth("QK", "APP.Q"), 2000);
    let b = h.ok(&["browse", "QK", "APP.Q"]);
    assert!(b.contains("burst 0") && b.contains("burst 1999"), "{b}");
    h.ok(&["stop", "QK"]);
}

/// An AMQP transaction is one unit of work: a message accepted from one queue and its body
/// sent to another in one transaction move together. Rolled back, neither happens (the
/// accepted message is back at once, its backout count raised); committed, both do, and are
/// durable once the commit is answered (kill -9 of the queue manager right after).
#[test]
fn an_amqp_transaction_moves_a_message_as_one_unit_of_work() {
    let h = Home::new();
    let url = setup(&h, "QT");
    h.mqsc("QT", "DEFINE QLOCAL(APP.OUT)\n");
    h.ok(&["put", "QT", "APP.Q", "--message", "order 1", "--persistent"]);
    let r = proton(&url, &["txmove", "APP.Q", "APP.OUT", "rollback"]);
    assert_eq!(r[0]["transaction"], "rolled back", "{r:?}");
    assert_eq!(r[0]["bodies"], serde_json::json!(["order 1"]));
    // Back on the queue when the rollback is answered, not when the link ends.
    assert_eq!(h.depth("QT", "APP.Q"), 1);
    assert_eq!(h.depth("QT", "APP.OUT"), 0);
    let r = proton(&url, &["txmove", "APP.Q", "APP.OUT", "commit"]);
    assert_eq!(r[0]["transaction"], "committed", "{r:?}");
    h.kill9("QT");
    h.ok(&["start", "QT", "--background"]);
    assert_eq!(h.depth("QT", "APP.Q"), 0, "the accepted message went");
    let b = h.ok(&["browse", "QT", "APP.OUT"]);
    assert!(b.contains("order 1"), "the sent one came: {b}");
    // A commit whose work cannot all be done does none of it: the third put to a queue of
    // MAXDEPTH(2) fails, the discharge is refused and the other two are not there either.
    h.mqsc("QT", "DEFINE QLOCAL(APP.SMALL) MAXDEPTH(2)\n");
    let r = proton(&url, &["txsend", "APP.SMALL", "3", "commit"]);
    assert_eq!(r[0]["transaction"], "commit failed", "{r:?}");
    assert_eq!(h.depth("QT", "APP.SMALL"), 0);
    h.ok(&["stop", "QT"]);
}

/// A sending and a receiving link of one session may share a name (AMQP 1.0 §2.6.1; proton
/// names both directions of one address alike): both are attached and used.
#[test]
fn a_sending_and_a_receiving_link_of_one_name_both_work() {
    let h = Home::new();
    let url = setup(&h, "QN");
    let r = proton(&url, &["samename", "APP.Q"]);
    assert_eq!(r[0]["body"], "same name", "{r:?}");
    settled(&h, "QN", 0);
    h.ok(&["stop", "QN"]);
}

/// ACCTMQI(ON): an AMQP application's connection writes its accounting record like any other
/// (puts, gets, commits, bytes as stored), when it ends.
#[test]
fn mqi_accounting_counts_an_amqp_applications_calls() {
    let h = Home::new();
    let url = setup(&h, "QC");
    h.mqsc("QC", "ALTER QMGR ACCTMQI(ON)\n");
    proton(&url, &["send", "APP.Q", "3"]);
    proton(&url, &["receive", "APP.Q", "3"]);
    let records = || -> Vec<serde_json::Value> {
        common::accounting_records(&h.qm_dir("QC"))
            .into_iter()
            .filter(|r| r["appl"] == "amqp:APP.AMQP" && r["final"] == true)
            .collect()
    };
    common::wait_for(
        std::time::Duration::from_secs(10),
        "both AMQP connections' accounting records",
        || records().len() == 2,
    );
    let all = records();
    let count = |op: &str| -> u64 {
        all.iter()
            .map(|r| r["calls"][op]["count"].as_u64().unwrap_or(0))
            .sum()
    };
    assert_eq!(count("put"), 3, "{all:?}");
    assert_eq!(count("get"), 3, "{all:?}");
    assert!(count("commit") >= 4, "{all:?}");
    let bytes = |k: &str| -> u64 { all.iter().map(|r| r[k].as_u64().unwrap_or(0)).sum() };
    assert_eq!(bytes("put_bytes"), bytes("get_bytes"), "{all:?}");
    assert!(bytes("put_bytes") >= 3 * 7, "{all:?}");
    assert!(all.iter().all(|r| r["user"] == "app"), "{all:?}");
    h.ok(&["stop", "QC"]);
}

/// DISPLAY CHSTATUS shows an AMQP channel's connections (CONNS) and, with CLIENTID, each one
/// (named by its container id) with its principal, counts and links, while the application is
/// connected.
#[test]
fn display_chstatus_shows_each_amqp_connection_and_its_links() {
    use std::io::BufRead;
    let h = Home::new();
    let url = setup(&h, "QS");
    let mut held = Command::new("python3")
        .arg(CLIENT)
        .args([url.as_str(), "hold", "APP.Q"])
        .env("SEALMQ_AMQP_CONTAINER", "orders (EU) 'blue'")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(held.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert!(line.contains("ready"), "{line}");
    let sum = h.mqsc("QS", "DISPLAY CHSTATUS(APP.AMQP) CONNS\n");
    assert_eq!(common::field(&sum, "CONNS"), "1", "{sum}");
    let one = h.mqsc(
        "QS",
        "DISPLAY CHSTATUS(APP.*) CHLTYPE(AMQP) CLIENTID(*) ALL\n",
    );
    // The answer, after the command echoed.
    let one = one
        .split_once("AMQ8417I")
        .map(|(_, a)| a)
        .unwrap_or_default();
    // The client's container id, as MQ shows it; what could not stand in MQSC output is `_`.
    assert_eq!(
        common::field(one, "CLIENTID"),
        "orders__EU___blue_",
        "{one}"
    );
    assert_eq!(common::field(one, "MCAUSER"), "app", "{one}");
    assert_eq!(common::field(one, "MSGRCVD"), "1", "{one}");
    assert_eq!(common::field(one, "MSGSNT"), "0", "{one}");
    assert!(
        common::field(one, "CONNAME").starts_with("127.0.0.1("),
        "{one}"
    );
    let links = common::field(one, "LINKS");
    assert!(
        links.contains("PUT:APP.Q") && links.contains("GET:APP.Q"),
        "{one}"
    );
    assert!(!common::field(one, "LSTMSGTI").is_empty(), "{one}");
    // DISPLAY CONN names the AMQP connection's channel and address, as for a SVRCONN's.
    let conn = h.mqsc(
        "QS",
        "DISPLAY CONN(*) WHERE(CHANNEL EQ APP.AMQP) CHANNEL CONNAME USERID\n",
    );
    assert_eq!(common::field(&conn, "CHANNEL"), "APP.AMQP", "{conn}");
    assert_eq!(common::field(&conn, "USERID"), "app", "{conn}");
    assert!(
        common::field(&conn, "CONNAME").starts_with("127.0.0.1("),
        "{conn}"
    );
    drop(held.stdin.take());
    held.wait().unwrap();
    // AMQPKA (milliseconds, or AUTO) is an AMQP channel's; other channel types refuse it.
    // (as IBM's own AMQP definitions write them: TPROOT kept for when topics exist, USECLTID(NO)).
    let ka = h.mqsc(
        "QS",
        "ALTER CHANNEL(APP.AMQP) CHLTYPE(AMQP) AMQPKA(10000) TPROOT('SYSTEM.BASE.TOPIC') \
         USECLTID(NO)\nDISPLAY CHANNEL(APP.AMQP) AMQPKA TPROOT USECLTID\n",
    );
    let shown = ka
        .split_once("AMQ8414I")
        .map(|(_, a)| a)
        .unwrap_or_default();
    assert!(shown.contains("AMQPKA(10000)"), "{ka}");
    assert!(
        shown.contains("TPROOT(SYSTEM.BASE.TOPIC)") && shown.contains("USECLTID(NO)"),
        "{ka}"
    );
    let o = h.run(
        &["mqsc", "QS"],
        Some("ALTER CHANNEL(APP.AMQP) CHLTYPE(AMQP) USECLTID(YES)\n"),
    );
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("not provided"),
        "{o:?}"
    );
    let o = h.run(
        &["mqsc", "QS"],
        Some("DEFINE CHANNEL(KA.SVRCONN) CHLTYPE(SVRCONN) AMQPKA(5)\n"),
    );
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("AMQP channels only"),
        "{o:?}"
    );
    common::wait_for(
        std::time::Duration::from_secs(10),
        "the connection to leave the status",
        || {
            let o = h.run(
                &["mqsc", "QS"],
                Some("DISPLAY CHSTATUS(APP.AMQP) CLIENTID(*)\n"),
            );
            String::from_utf8_lossy(&o.stdout).contains("no AMQP connection matches")
        },
    );
    h.ok(&["stop", "QS"]);
}

/// `sealmq bench amqp` runs both protocols side by side and reports their ratios.
#[test]
fn bench_amqp_reports_both_protocols_side_by_side() {
    let h = Home::new();
    let out = h.ok(&[
        "bench",
        "amqp",
        "--messages",
        "300",
        "--size",
        "256",
        "--rounds",
        "1",
        "--json",
    ]);
    let lines: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {out}")))
        .collect();
    for k in [
        "native_put_per_s",
        "amqp_put_per_s",
        "native_get_per_s",
        "amqp_get_per_s",
        "amqp_round_trip_us",
    ] {
        assert!(lines[0][k].as_f64().unwrap() > 0.0, "{k}: {out}");
    }
    assert!(
        lines[1]["median_get_ratio"].as_f64().unwrap() > 0.0,
        "{out}"
    );
    // Protected: the native application protects itself, the AMQP one goes through TLS and
    // an intercepting channel; each reads what the other put.
    let out = h.ok(&[
        "bench",
        "amqp",
        "--messages",
        "100",
        "--size",
        "256",
        "--rounds",
        "1",
        "--qop",
        "privacy",
        "--key",
        "p256",
        "--json",
    ]);
    let first: serde_json::Value = serde_json::from_str(out.lines().next().unwrap()).unwrap();
    assert_eq!(first["qop"], "privacy", "{out}");
    // Never on an administrator's queue manager: it would trust the bench's certificate.
    h.ok(&["create", "QK"]);
    h.ok(&["start", "QK", "--background"]);
    let e = h.fails(&["bench", "amqp", "--qm", "QK", "--qop", "privacy"]);
    assert!(e.contains("throw-away"), "{e}");
    let trusted = h.ok(&[
        "keystore",
        "list",
        &h.qm_dir("QK").join("keystore").to_string_lossy(),
    ]);
    assert!(!trusted.contains("bench-"), "{trusted}");
    h.ok(&["stop", "QK"]);
    assert!(first["amqp_get_per_s"].as_f64().unwrap() > 0.0, "{out}");
    assert!(first["native_get_per_s"].as_f64().unwrap() > 0.0, "{out}");
}

/// Issue 42: through a channel without INTERCEPT(YES), a message to a queue or a topic whose
/// policy has a quality of protection was stored as sent, in clear. It is rejected with 2063
/// unless it is already a protected message (the application protected it itself).
#[test]
fn plaintext_to_a_protected_queue_or_topic_is_rejected_without_interception() {
    let h = Home::new();
    let url = setup(&h, "QX");
    h.mqsc(
        "QX",
        "DEFINE QLOCAL(APP.PAY)\nDEFINE TOPIC(PAY) TOPICSTR('pay')\n\
         DEFINE QLOCAL(PAY.AUDIT)\nDEFINE SUB(PAY.AUDIT) TOPICSTR('pay/#') DEST(PAY.AUDIT)\n\
         SET AUTHREC PROFILE('PAY') OBJTYPE(TOPIC) PRINCIPAL('app') AUTHADD(PUB)\n",
    );
    for p in ["APP.PAY", "PAY"] {
        h.ok(&[
            "policy",
            "set",
            "-m",
            "QX",
            "-p",
            p,
            "-s",
            "SHA256",
            "-e",
            "AES256",
            "-r",
            "CN=bob,O=Example",
            "-a",
            "CN=alice,O=Example",
        ]);
    }
    for target in ["APP.PAY", "topic://pay/salaries"] {
        let out = proton(&url, &["forbidden", target]);
        // Rejected (proton's SendException carries the outcome, not its text).
        let e = out[0]["error"].as_str().unwrap_or_default();
        assert!(e.contains("SendException"), "{target}: {out:?}");
    }
    assert_eq!(h.depth("QX", "APP.PAY"), 0);
    assert_eq!(h.depth("QX", "PAY.AUDIT"), 0);
    // Unprotected targets still take plaintext.
    assert!(proton(&url, &["forbidden", "APP.Q"])[0]["error"].is_null());
    assert_eq!(h.depth("QX", "APP.Q"), 1);
}

//! MQ's client protocol (issue 44) against IBM's own client: a JMS application on IBM MQ
//! classes for JMS (`com.ibm.mq.allclient` from Maven Central, in target/ibm-mq-lib, fetched
//! by ./test) connects unchanged to a real sealmq queue manager's TCP listener — the same port
//! sealmq's own clients use — and exchanges messages with sealmq's native client both ways,
//! descriptor fields and properties checked one by one.

#[path = "mqclient/amqp.rs"]
mod amqp;
#[path = "mqclient/ams.rs"]
mod ams;
mod common;
#[path = "mqclient/hostile.rs"]
mod hostile;
#[path = "mqclient/mqi.rs"]
mod mqi;
#[path = "mqclient/reconnect.rs"]
mod reconnect;
#[path = "mqclient/tls.rs"]
mod tls;
#[path = "mqclient/wire.rs"]
mod wire;

use common::{Home, free_port, ibm_classpath, json_lines};
use sealmq_client::Client;
use sealmq_engine::mqi::{GetOptions, OpenOptions};
use sealmq_engine::{Md, Persistence};
use sealmq_mqi::PropValue;
use std::process::Command;
use std::time::Duration;

/// Runs the IBM JMS application as `user` (`-`: none) through channel APP.SVRCONN; its JSON
/// lines.
fn ibm(port: u16, user: &[&str], args: &[&str]) -> Vec<serde_json::Value> {
    ibm_on(port, "APP.SVRCONN", user, args)
}

/// As [`ibm`], through `channel`.
fn ibm_on(port: u16, channel: &str, user: &[&str], args: &[&str]) -> Vec<serde_json::Value> {
    ibm_with(&[], port, channel, user, args)
}

/// As [`ibm_on`], with system properties for the JVM (`-Dname=value`: TLS stores, cipher).
fn ibm_with(
    jvm: &[String],
    port: u16,
    channel: &str,
    user: &[&str],
    args: &[&str],
) -> Vec<serde_json::Value> {
    let mut cmd = Command::new("java");
    // FFDC reports of refused calls go to the test's own directory.
    cmd.current_dir(env!("CARGO_TARGET_TMPDIR"));
    cmd.args(jvm);
    cmd.args([
        "-cp",
        &ibm_classpath(),
        "IbmJms",
        &port.to_string(),
        channel,
    ]);
    cmd.args(user);
    json_lines(cmd, "IBM JMS", args)
}

/// A queue manager listening on a loopback port, with a SVRCONN for the JMS application
/// (running as `app`) and what `app` may do.
fn setup(h: &Home, qm: &str) -> u16 {
    h.ok(&["create", qm]);
    let port = free_port();
    h.ok(&[
        "start",
        qm,
        "--background",
        "--listen",
        &format!("127.0.0.1:{port}"),
    ]);
    h.mqsc(
        qm,
        "DEFINE QLOCAL(APP.Q)\n\
         DEFINE CHANNEL(APP.SVRCONN) CHLTYPE(SVRCONN) MCAUSER('app')\n\
         SET AUTHREC OBJTYPE(QMGR) PRINCIPAL('app') AUTHADD(CONNECT,INQ)\n\
         SET AUTHREC PROFILE('APP.*') OBJTYPE(QUEUE) PRINCIPAL('app') AUTHADD(PUT,GET,BROWSE,INQ)\n\
         SET AUTHREC PROFILE('SYSTEM.DEFAULT.MODEL.QUEUE') OBJTYPE(QUEUE) PRINCIPAL('app') AUTHADD(PUT,GET,BROWSE,INQ,DSP)\n\
         SET AUTHREC PROFILE('SYSTEM.BASE.TOPIC') OBJTYPE(TOPIC) PRINCIPAL('app') AUTHADD(PUB,SUB,RESUME)\n",
    );
    port
}

const NONE: &[&str] = &["-", "-"];

#[test]
fn an_ibm_jms_application_and_a_sealmq_application_exchange_messages_both_ways() {
    let h = Home::new();
    let port = setup(&h, "QI");
    // IBM JMS → sealmq: a TextMessage's descriptor and its JMS properties.
    assert_eq!(ibm(port, NONE, &["send", "APP.Q", "3"])[0]["sent"], 3);
    assert_eq!(h.depth("QI", "APP.Q"), 3);
    let mut c = Client::connect_local(&h.qm_dir("QI"), "sealmq-app").unwrap();
    let (q, _) = c.open("APP.Q", OpenOptions::input()).unwrap();
    let g = c.get(q, &GetOptions::default()).unwrap();
    assert_eq!(g.payload, b"ibm 0");
    assert_eq!(
        g.md.format, "MQSTR",
        "the MQRFH2 is taken off into properties"
    );
    assert_eq!(g.md.ccsid, 1208);
    assert_eq!(
        g.md.persistence,
        Persistence::Persistent,
        "JMS sends persistent by default"
    );
    assert_eq!(g.md.priority, 4);
    assert_eq!(g.md.user_id, "app", "the channel's MCAUSER");
    assert_eq!(g.md.put_appl_name, "IbmJms");
    assert_eq!(&g.md.correl_id[..6], b"corr-0");
    assert_eq!(g.md.property("n"), Some(&PropValue::Int(0)));
    assert_eq!(
        g.md.property("colour"),
        Some(&PropValue::String("red".into()))
    );
    assert_eq!(
        g.md.property("mcd.Msd"),
        Some(&PropValue::String("jms_text".into())),
        "the JMS body type, as IBM MQ names the property"
    );
    c.close(q).unwrap();
    // sealmq → IBM JMS: a plain MQSTR message with a property and a correlation id.
    let (q, _) = c.open("APP.Q", OpenOptions::output()).unwrap();
    let mut md = Md {
        format: "MQSTR".into(),
        correl_id: *b"from-sealmq-000000000000",
        persistence: Persistence::NotPersistent,
        priority: 7,
        ..Md::default()
    };
    md.set_property("region", PropValue::String("emea".into()))
        .unwrap();
    md.set_property("count", PropValue::Long(42)).unwrap();
    c.put(q, &mut md, b"hello from sealmq", false).unwrap();
    c.close(q).unwrap();
    let got = ibm(port, NONE, &["receive", "APP.Q", "10", "2000"]);
    let texts: Vec<&str> = got.iter().filter_map(|m| m["text"].as_str()).collect();
    // Priority 7 comes before the JMS messages' 4 (MSGDLVSQ(PRIORITY)).
    assert_eq!(texts, ["hello from sealmq", "ibm 1", "ibm 2"]);
    let ours = &got[0];
    assert_eq!(ours["type"], "JMSTextMessage");
    assert_eq!(ours["persistent"], false);
    assert_eq!(ours["priority"], 7);
    // A correlation id of bytes reads in JMS as IBM MQ gives it: "ID:" and its hex.
    let hex: String = b"from-sealmq-000000000000"
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(ours["correl"], format!("ID:{hex}"));
    assert_eq!(ours["props"]["region"], "emea");
    assert_eq!(ours["props"]["count"], 42);
    assert_eq!(
        got[1]["props"]["n"], 1,
        "JMS properties round-trip through sealmq"
    );
    assert_eq!(h.depth("QI", "APP.Q"), 0);
    // An alias and a remote queue definition naming this queue manager resolve to APP.Q.
    h.mqsc(
        "QI",
        "DEFINE QALIAS(APP.ALIAS) TARGET(APP.Q)\n\
         DEFINE QREMOTE(APP.REMOTE) RNAME(APP.Q) RQMNAME(QI)\n",
    );
    assert_eq!(ibm(port, NONE, &["send", "APP.ALIAS", "1"])[0]["sent"], 1);
    assert_eq!(ibm(port, NONE, &["send", "APP.REMOTE", "1"])[0]["sent"], 1);
    assert_eq!(h.depth("QI", "APP.Q"), 2);
    let got = ibm(port, NONE, &["receive", "APP.ALIAS", "3", "500"]);
    assert_eq!(got.iter().filter(|m| m["text"] == "ibm 0").count(), 2);
}

#[test]
fn jms_sessions_share_one_socket_transactions_commit_and_roll_back_and_refusals_carry_mq_reasons() {
    let h = Home::new();
    let port = setup(&h, "QJ");
    // Ten sessions: ten conversations on the socket (SHARECNV 10, MQ's default).
    let s = ibm(port, NONE, &["sessions", "APP.Q", "10"]);
    assert_eq!(
        (s[0]["sessions"].as_u64(), s[0]["got"].as_u64()),
        (Some(10), Some(10))
    );
    // A transacted session: what it rolled back never arrives, what it committed does.
    assert_eq!(
        ibm(port, NONE, &["transacted", "APP.Q"])[0]["transacted"],
        true
    );
    let got = ibm(port, NONE, &["receive", "APP.Q", "5", "1000"]);
    let texts: Vec<&str> = got.iter().filter_map(|m| m["text"].as_str()).collect();
    assert_eq!(texts, ["committed"]);
    // An unknown queue: 2085, as IBM MQ answers.
    let e = ibm(port, NONE, &["send", "NO.SUCH.Q", "1"]);
    assert_eq!(
        (e[0]["error"].as_u64(), e[0]["class"].as_str()),
        (Some(2085), Some("DetailedInvalidDestinationException"))
    );
    // A user and password refused: JMSSecurityException carrying 2035 (here because the
    // password came over TCP without TLS, which a new queue manager refuses).
    let e = ibm(port, &["app", "wrong"], &["send", "APP.Q", "1"]);
    assert_eq!(
        (e[0]["error"].as_u64(), e[0]["class"].as_str()),
        (Some(2035), Some("DetailedJMSSecurityException"))
    );
    // A channel the queue manager does not have: 2540, told before the socket closes; a
    // channel of another type: 2539 (as IBM MQ answers both).
    let e = ibm_on(port, "NO.SUCH.SVRCONN", NONE, &["send", "APP.Q", "1"]);
    assert_eq!(e[0]["error"].as_u64(), Some(2540));
    let e = ibm_on(port, "SYSTEM.DEF.SENDER", NONE, &["send", "APP.Q", "1"]);
    assert_eq!(e[0]["error"].as_u64(), Some(2539));
    // MQCONN naming another queue manager: 2059.
    let e = ibm_with(
        &["-Dsealmq.qmgr=OTHER".into()],
        port,
        "APP.SVRCONN",
        NONE,
        &["send", "APP.Q", "1"],
    );
    assert_eq!(e[0]["error"].as_u64(), Some(2059));
    // A channel CHLAUTH blocks (SYSTEM.*): 2035 too.
    let e = ibm_on(port, "SYSTEM.DEF.SVRCONN", NONE, &["send", "APP.Q", "1"]);
    assert_eq!(e[0]["error"].as_u64(), Some(2035));
    // A queue the channel's user has no authority to: 2035 at the open, as for sealmq's own
    // clients (every MQ client route goes through the session's authority checks).
    h.mqsc("QJ", "DEFINE QLOCAL(SECRET.Q)\n");
    let e = ibm(port, NONE, &["send", "SECRET.Q", "1"]);
    assert_eq!(e[0]["error"].as_u64(), Some(2035));
    let e = ibm(port, NONE, &["receive", "SECRET.Q", "1", "100"]);
    assert_eq!(e[0]["error"].as_u64(), Some(2035));
    assert_eq!(h.depth("QJ", "SECRET.Q"), 0);
    assert_eq!(h.depth("QJ", "APP.Q"), 0, "nothing refused was put");
}

#[test]
fn jms_request_reply_over_a_temporary_queue_with_a_sealmq_responder() {
    let h = Home::new();
    let port = setup(&h, "QR");
    let requester = std::thread::spawn(move || ibm(port, NONE, &["request", "APP.Q", "20000"]));
    // The responder: sealmq's native client answers on the request's reply-to queue.
    let mut c = Client::connect_local(&h.qm_dir("QR"), "responder").unwrap();
    let (q, _) = c.open("APP.Q", OpenOptions::input()).unwrap();
    let g = c
        .get(
            q,
            &GetOptions {
                wait: Some(std::time::Duration::from_secs(20)),
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(g.payload, b"request");
    assert!(
        g.md.reply_to_q.starts_with("AMQ."),
        "a temporary dynamic queue: {}",
        g.md.reply_to_q
    );
    let (r, _) = c.open(&g.md.reply_to_q, OpenOptions::output()).unwrap();
    let mut md = Md {
        format: "MQSTR".into(),
        correl_id: g.md.msg_id,
        ..Md::default()
    };
    c.put(r, &mut md, b"reply", false).unwrap();
    let out = requester.join().unwrap();
    assert_eq!(out[0]["reply"], "reply");
    assert_eq!(
        out[0]["replyTo"]
            .as_str()
            .map(|s| s.contains(&g.md.reply_to_q)),
        Some(true)
    );
}

#[test]
fn jms_bytes_map_and_stream_messages_keep_their_types_through_sealmq() {
    let h = Home::new();
    let port = setup(&h, "QM");
    assert_eq!(ibm(port, NONE, &["types", "APP.Q"])[0]["sent"], 4);
    // Stored as IBM MQ stores them: the JMS body type in mcd.Msd, a map or stream as XML.
    let mut c = Client::connect_local(&h.qm_dir("QM"), "check").unwrap();
    let (q, _) = c
        .open(
            "APP.Q",
            OpenOptions {
                browse: true,
                ..Default::default()
            },
        )
        .unwrap();
    let mut stored = Vec::new();
    for i in 0..4 {
        let g = c
            .get(
                q,
                &GetOptions {
                    browse: if i == 0 {
                        sealmq_engine::mqi::Browse::First
                    } else {
                        sealmq_engine::mqi::Browse::Next
                    },
                    ..Default::default()
                },
            )
            .unwrap();
        let msd = match g.md.property("mcd.Msd") {
            Some(PropValue::String(s)) => s.clone(),
            other => panic!("mcd.Msd: {other:?}"),
        };
        stored.push((msd, g.md.format.clone(), g.payload));
    }
    assert_eq!(
        (stored[0].0.as_str(), stored[0].1.as_str()),
        ("jms_bytes", "")
    );
    assert_eq!(stored[0].2, b"raw\0\x01");
    assert_eq!(stored[1].0, "jms_map");
    let map = String::from_utf8_lossy(&stored[1].2);
    assert!(
        map.starts_with("<map>") && map.contains(r#"<elt name="b">two</elt>"#),
        "{map}"
    );
    assert_eq!(stored[2].0, "jms_stream");
    assert_eq!(stored[3].0, "jms_text");
    // Read back by IBM's client as the same JMS types with the same contents.
    let got = ibm(port, NONE, &["receive", "APP.Q", "4", "1000"]);
    let types: Vec<&str> = got.iter().filter_map(|m| m["type"].as_str()).collect();
    assert_eq!(
        types,
        [
            "JMSBytesMessage",
            "JMSMapMessage",
            "JMSStreamMessage",
            "JMSTextMessage"
        ]
    );
    assert_eq!(got[0]["bytes"], "raw\u{0}\u{1}");
    assert_eq!(
        got[1]["map"],
        serde_json::json!({"a": "Integer:1", "b": "String:two", "c": "Double:3.5"})
    );
    assert_eq!(
        got[2]["stream"],
        serde_json::json!(["Integer:1", "String:two", "Boolean:true"])
    );
    // Texts near IBM's first get buffer (4 KiB): the MQRFH2 before the payload counts against
    // it, so one whose payload fits but whose header does not is refused (2080) and left for
    // the client's retry with a larger buffer, never written past the buffer.
    let sizes = ["3900", "4096", "5000", "40000"];
    let mut args = vec!["sized", "APP.Q"];
    args.extend(sizes);
    assert_eq!(ibm(port, NONE, &args)[0]["sent"], 4);
    let got = ibm(port, NONE, &["receive", "APP.Q", "4", "1000"]);
    let lens: Vec<usize> = got
        .iter()
        .filter_map(|m| m["text"].as_str().map(str::len))
        .collect();
    assert_eq!(lens, [3900, 4096, 5000, 40000], "{:?}", got.last());
    assert_eq!(got[0]["props"]["pad"].as_str().map(str::len), Some(200));
    // A sealmq application's message of bytes (no format) reads as a BytesMessage.
    let (o, _) = c.open("APP.Q", OpenOptions::output()).unwrap();
    c.put(o, &mut Md::default(), b"\x00\x01binary", false)
        .unwrap();
    let got = ibm(port, NONE, &["receive", "APP.Q", "1", "1000"]);
    assert_eq!(got[0]["type"], "JMSBytesMessage");
}

#[test]
fn a_listener_whose_queue_inhibits_gets_is_told_and_loses_nothing() {
    let h = Home::new();
    let port = setup(&h, "QG");
    // (The client's close fails once its connection is reported broken: its output is read
    // whatever its exit status.)
    let listener = std::thread::spawn(move || {
        let out = Command::new("java")
            .current_dir(env!("CARGO_TARGET_TMPDIR"))
            .args(["-cp", &ibm_classpath(), "IbmJms", &port.to_string()])
            .args([
                "APP.SVRCONN",
                "-",
                "-",
                "listen",
                "APP.Q",
                "2",
                "4000",
                "auto",
            ])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .collect::<Vec<_>>()
    });
    load(&h, "QG", "APP.Q", "first", 1, Persistence::NotPersistent);
    common::wait_for(
        Duration::from_secs(20),
        "the listener to take the first message",
        || h.depth("QG", "APP.Q") == 0,
    );
    // GET(DISABLED) under the running listener: its consumer ends with 2016, which IBM's client
    // reports to the application as a broken connection; nothing is lost.
    h.mqsc("QG", "ALTER QLOCAL(APP.Q) GET(DISABLED)\n");
    load(&h, "QG", "APP.Q", "second", 1, Persistence::NotPersistent);
    let out = listener.join().unwrap();
    assert!(
        out.iter()
            .any(|o| o["error"].is_number() || o["received"] == 1),
        "{out:?}"
    );
    assert_eq!(
        h.depth("QG", "APP.Q"),
        1,
        "what came after stays on the queue"
    );
    let log =
        std::fs::read_to_string(h.qm_dir("QG").join("errors/SEALMQ01.LOG")).unwrap_or_default();
    assert!(log.contains("consumer ended (2016)"), "{log}");
}

/// Puts `n` messages "{prefix}{i}" (MQSTR) with sealmq's own client, a thousand per unit of
/// work.
fn load(h: &Home, qm: &str, queue: &str, prefix: &str, n: usize, persistence: Persistence) {
    let mut c = Client::connect_local(&h.qm_dir(qm), "loader").unwrap();
    let (q, _) = c.open(queue, OpenOptions::output()).unwrap();
    for i in 0..n {
        let mut md = Md {
            format: "MQSTR".into(),
            persistence,
            ..Md::default()
        };
        c.put(q, &mut md, format!("{prefix}{i}").as_bytes(), true)
            .unwrap();
        if i % 1000 == 999 {
            c.commit().unwrap();
        }
    }
    c.commit().unwrap();
}

#[test]
fn a_message_listener_drains_ten_thousand_persistent_messages_each_once() {
    let h = Home::new();
    let port = setup(&h, "QL");
    h.mqsc("QL", "ALTER QLOCAL(APP.Q) MAXDEPTH(20000)\n");
    load(&h, "QL", "APP.Q", "m", 10_000, Persistence::Persistent);
    // AUTO_ACKNOWLEDGE: the client takes each message under syncpoint (persistent) and
    // commits it once its listener returned.
    let out = ibm(port, NONE, &["listen", "APP.Q", "10000", "20000", "auto"]);
    let o = &out[0];
    assert_eq!(o["failed"], serde_json::Value::Null, "{o}");
    assert_eq!(
        (o["received"].as_u64(), o["distinct"].as_u64()),
        (Some(10_000), Some(10_000)),
        "each message once: {o}"
    );
    assert_eq!(o["redelivered"], 0);
    assert_eq!(h.depth("QL", "APP.Q"), 0);
}

#[test]
fn a_listener_rollback_redelivers_and_a_read_ahead_receive_takes_what_was_streamed() {
    let h = Home::new();
    let port = setup(&h, "QB");
    // A transacted session's listener rolls back each message's first delivery (MQBACK puts
    // it back) and commits its second.
    load(&h, "QB", "APP.Q", "r", 20, Persistence::Persistent);
    let o = &ibm(port, NONE, &["listen", "APP.Q", "20", "5000", "rollback"])[0];
    assert_eq!(o["failed"], serde_json::Value::Null, "{o}");
    assert_eq!(
        (
            o["received"].as_u64(),
            o["distinct"].as_u64(),
            o["redelivered"].as_u64()
        ),
        (Some(40), Some(20), Some(20)),
        "{o}"
    );
    assert_eq!(h.depth("QB", "APP.Q"), 0);
    // DEFREADA(YES): the client streams non-persistent messages ahead of its receives, and a
    // receive that finds its buffer empty flushes (answered: nothing more on its way).
    h.mqsc("QB", "DEFINE QLOCAL(APP.RA) DEFREADA(YES)\n");
    load(&h, "QB", "APP.RA", "a", 30, Persistence::NotPersistent);
    let got = ibm(port, NONE, &["receive", "APP.RA", "40", "300"]);
    let texts: Vec<&str> = got.iter().filter_map(|m| m["text"].as_str()).collect();
    let want: Vec<String> = (0..30).map(|i| format!("a{i}")).collect();
    assert_eq!(texts, want, "in order, each once");
    assert_eq!(got.last().unwrap()["done"], true);
    assert_eq!(h.depth("QB", "APP.RA"), 0);
}

#[test]
fn jms_topics_a_durable_subscription_gets_what_was_published_while_away_and_shared_ones_split() {
    let h = Home::new();
    let port = setup(&h, "QT");
    let durable = |extra: &[&str]| {
        let mut args = vec!["durable", "prices/eur", "away", "5", "300"];
        args.extend_from_slice(extra);
        ibm(port, NONE, &args)[0]["got"].clone()
    };
    // The durable subscription is made, then its subscriber goes away.
    assert_eq!(durable(&[]), serde_json::json!([]));
    assert_eq!(
        ibm(port, NONE, &["publish", "prices/eur", "3"])[0]["published"],
        3
    );
    let subs = h.mqsc("QT", "DISPLAY SUB(*)\n");
    assert!(subs.contains("JMS:QT:sealmq-it:away"), "{subs}");
    // Back, it gets what was published meanwhile, then unsubscribes.
    assert_eq!(
        durable(&["unsubscribe"]),
        serde_json::json!(["pub 0", "pub 1", "pub 2"])
    );
    let subs = h.mqsc("QT", "DISPLAY SUB(*)\n");
    assert!(!subs.contains("away"), "unsubscribed: {subs}");
    // A principal without SUB on the topic: the subscription is refused with 2035 and none is
    // made.
    h.mqsc(
        "QT",
        "DEFINE CHANNEL(NOSUB.SVRCONN) CHLTYPE(SVRCONN) MCAUSER('nosub')\n\
         SET AUTHREC OBJTYPE(QMGR) PRINCIPAL('nosub') AUTHADD(CONNECT,INQ)\n",
    );
    let e = ibm_on(
        port,
        "NOSUB.SVRCONN",
        NONE,
        &["durable", "prices/eur", "denied", "1", "100"],
    );
    assert_eq!(e[0]["error"].as_u64(), Some(2035), "{e:?}");
    assert!(!h.mqsc("QT", "DISPLAY SUB(*)\n").contains("denied"));
    // Two consumers of one shared subscription: each publication reaches one of them.
    let o = &ibm(port, NONE, &["shared", "prices/gbp", "pool", "10", "300"])[0];
    assert_eq!(
        (o["got"].as_u64(), o["distinct"].as_u64()),
        (Some(10), Some(10)),
        "{o}"
    );
    assert!(
        o["first"].as_u64() > Some(0) && o["second"].as_u64() > Some(0),
        "{o}"
    );
    assert_eq!(
        o["after"], 3,
        "one consumer's close leaves the subscription to the other: {o}"
    );
}

/// Reads until the queue manager closes the socket; `true` if it did within `limit`.
fn closed_within(s: &mut std::net::TcpStream, limit: std::time::Duration) -> bool {
    use std::io::Read;
    s.set_read_timeout(Some(limit)).unwrap();
    let mut b = [0u8; 256];
    loop {
        match s.read(&mut b) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) => return e.kind() == std::io::ErrorKind::ConnectionReset,
        }
    }
}

#[test]
fn hostile_mq_segments_close_the_socket_and_the_listener_still_serves_both_protocols() {
    use std::io::Write;
    let h = Home::new();
    let port = setup(&h, "QH");
    let addr = format!("127.0.0.1:{port}");
    // A first segment claiming 2 GiB: refused from its header, nothing allocated.
    let mut s = std::net::TcpStream::connect(&addr).unwrap();
    s.write_all(b"TSH \x80\x00\x00\x00\x01\x01\x30\x00")
        .unwrap();
    assert!(
        closed_within(&mut s, std::time::Duration::from_secs(5)),
        "a 2 GiB claim closes the socket"
    );
    // A segment id that is TSH-like but none of MQ's.
    let mut s = std::net::TcpStream::connect(&addr).unwrap();
    s.write_all(b"TSHX\x00\x00\x00\x24").unwrap();
    assert!(
        closed_within(&mut s, std::time::Duration::from_secs(5)),
        "an unknown header closes the socket"
    );
    // A segment shorter than its own header.
    let mut s = std::net::TcpStream::connect(&addr).unwrap();
    s.write_all(b"TSH \x00\x00\x00\x04").unwrap();
    assert!(
        closed_within(&mut s, std::time::Duration::from_secs(5)),
        "a lying length closes the socket"
    );
    // A first segment that is not the initial data (a heartbeat) is refused too.
    let mut s = std::net::TcpStream::connect(&addr).unwrap();
    let mut seg = b"TSH \x00\x00\x00\x1c\x01\x09\x30\x00".to_vec();
    seg.extend_from_slice(&[0; 8]);
    seg.extend_from_slice(&[0, 0, 1, 0x11, 0x03, 0x33, 0, 0]);
    s.write_all(&seg).unwrap();
    assert!(
        closed_within(&mut s, std::time::Duration::from_secs(5)),
        "no initial data closes the socket"
    );
    // The same port still serves IBM's client and sealmq's own.
    assert_eq!(ibm(port, NONE, &["send", "APP.Q", "1"])[0]["sent"], 1);
    let mut c = Client::connect_local(&h.qm_dir("QH"), "sealmq-app").unwrap();
    let (q, _) = c.open("APP.Q", OpenOptions::input()).unwrap();
    assert_eq!(c.get(q, &GetOptions::default()).unwrap().payload, b"ibm 0");
}

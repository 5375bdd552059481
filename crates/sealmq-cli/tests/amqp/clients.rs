//! AMQP applications on other clients than proton: a Node.js application on rhea, and a JMS
//! application on Apache Qpid JMS (queues, selectors, transactions, temporary queues).

use super::*;

/// rhea (Node.js), installed by `.ci/run` under target/node: a JavaScript application sends
/// and receives over the same channel.
#[test]
fn a_node_application_on_rhea_sends_and_receives() {
    let h = Home::new();
    let url = setup(&h, "QN");
    let port = url.rsplit(':').next().unwrap().to_string();
    let rhea = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../target/node/node_modules/rhea");
    assert!(
        rhea.exists(),
        "rhea is not installed: npm install --prefix target/node rhea@3 (.ci/run does)"
    );
    let out = Command::new("node")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/amqp/rhea_client.js"
        ))
        .args([port.as_str(), "APP.Q", "5"])
        .env("RHEA_PATH", &rhea)
        .output()
        .expect("node runs");
    assert!(
        out.status.success(),
        "rhea failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["sent"], 5);
    let want: Vec<String> = (0..5).map(|i| format!("rhea {i}")).collect();
    assert_eq!(v["received"], serde_json::json!(want));
    settled(&h, "QN", 0);
}

/// Runs the Qpid JMS client; its JSON lines.
fn jms(url: &str, args: &[&str]) -> Vec<serde_json::Value> {
    super::common::qpid_jms(url, args)
}

/// Apache Qpid JMS (Java): JMS 2 producer and consumer, JMS properties both ways with sealmq
/// applications, a message selector, transacted sessions, a temporary queue.
#[test]
fn a_jms_application_on_qpid_jms_uses_queues_selectors_transactions_and_temporary_queues() {
    let h = Home::new();
    let url = setup(&h, "QJ");
    assert_eq!(jms(&url, &["send", "APP.Q", "4"])[0]["sent"], 4);
    assert_eq!(h.depth("QJ", "APP.Q"), 4);
    // JMS properties and header fields, as a sealmq application sees them.
    let mut c = Client::connect_local(&h.qm_dir("QJ"), "mq-app").unwrap();
    let (q, _) = c.open("APP.Q", OpenOptions::input()).unwrap();
    let g = c.get(q, &GetOptions::default()).unwrap();
    assert_eq!(g.payload, b"jms 0");
    assert_eq!(g.md.persistence, Persistence::Persistent);
    assert_eq!(g.md.priority, 6);
    assert_eq!(&g.md.correl_id[..10], b"jms-corr-0");
    assert_eq!(
        g.md.property("colour"),
        Some(&PropValue::String("red".into()))
    );
    assert_eq!(g.md.property("n"), Some(&PropValue::Int(0)));
    assert_eq!(g.md.property("big"), Some(&PropValue::Long(1 << 40)));
    assert_eq!(g.md.property("ok"), Some(&PropValue::Bool(true)));
    assert_eq!(g.md.property("ratio"), Some(&PropValue::Double(0.25)));
    c.close(q).unwrap();
    // A selector: only the blue ones (n = 1, 3), in order.
    let sel = jms(
        &url,
        &["select", "APP.Q", "2", "colour = 'blue' AND big > 1000"],
    );
    assert_eq!(sel[0]["body"], "jms 1");
    assert_eq!(sel[1]["body"], "jms 3");
    assert_eq!(sel[0]["properties"]["n"], 1);
    assert_eq!(sel[0]["properties"]["n.type"], "Integer");
    assert_eq!(sel[0]["properties"]["big.type"], "Long");
    assert_eq!(sel[0]["correlation_id"], "jms-corr-1");
    assert_eq!(sel[0]["persistent"], true);
    // A sealmq application's message and properties, read by JMS.
    h.ok(&[
        "put",
        "QJ",
        "APP.Q",
        "--message",
        "from sealmq",
        "--persistent",
        "--correl",
        "c-42",
        "--property",
        "region=EMEA",
        "--property",
        "amount:long=250",
        "--property",
        "urgent:boolean=true",
    ]);
    let got = jms(&url, &["receive", "APP.Q", "2"]);
    assert_eq!(got[0]["body"], "jms 2");
    assert_eq!(got[1]["body"], "from sealmq");
    assert_eq!(got[1]["type"], "text");
    assert_eq!(got[1]["correlation_id"], "c-42");
    assert_eq!(got[1]["properties"]["region"], "EMEA");
    assert_eq!(got[1]["properties"]["amount"], 250);
    assert_eq!(got[1]["properties"]["urgent"], true);
    settled(&h, "QJ", 0);
    // Transacted sessions.
    let tx = jms(&url, &["tx", "APP.Q"]);
    assert_eq!(tx[0]["produced"], "committed");
    assert_eq!(tx[1]["first"], "kept 1");
    assert_eq!(
        tx[1]["again"], "kept 1",
        "rolled back, it comes again: {tx:?}"
    );
    assert_eq!(tx[1]["redelivered"], true);
    assert_eq!(tx[2]["committed"], serde_json::json!(["kept 1", "kept 2"]));
    common::wait_for(
        std::time::Duration::from_secs(30),
        "the committed consumer transaction to take both",
        || h.depth("QJ", "APP.Q") == 0,
    );
    // A temporary queue (JMS 2 simplified API).
    let t = jms(&url, &["temp"]);
    assert_eq!(t[0]["body"], "to the temporary queue");
    let temp = t[0]["temporary"].as_str().unwrap().to_string();
    assert!(temp.starts_with("AMQP."), "{temp}");
    common::wait_for(
        std::time::Duration::from_secs(10),
        "the temporary queue to go",
        || {
            let o = h.run(&["mqsc", "QJ"], Some(&format!("DISPLAY QLOCAL({temp})\n")));
            !o.status.success()
        },
    );
    // No authority: JMS fails the producer's and the consumer's creation with a security
    // exception carrying MQ's reason (the attach is refused before it is answered).
    let f = jms(&url, &["forbidden", "SECRET.Q"]);
    for k in ["producer", "consumer"] {
        let e = f[0][k].as_str().unwrap_or_default();
        assert!(
            e.starts_with("JMSSecurityException") && e.contains("2035"),
            "{k}: {f:?}"
        );
    }
    // Without authority on the model queue a temporary queue is refused as MQ refuses it:
    // 2035, a security exception, not a complaint about the link.
    h.mqsc(
        "QJ",
        "SET AUTHREC PROFILE('SYSTEM.DEFAULT.MODEL.QUEUE') OBJTYPE(QUEUE) PRINCIPAL('app') AUTHRMV(GET,DSP)\n",
    );
    let t = jms(&url, &["tempforbidden"]);
    let e = t[0]["temporary"].as_str().unwrap_or_default();
    assert!(
        e.starts_with("JMSSecurityException") && e.contains("2035"),
        "{t:?}"
    );
    h.mqsc(
        "QJ",
        "SET AUTHREC PROFILE('SYSTEM.DEFAULT.MODEL.QUEUE') OBJTYPE(QUEUE) PRINCIPAL('app') AUTHADD(GET,DSP)\n",
    );
    // A MapMessage and a StreamMessage keep their type and contents through the queue (kept
    // as IBM MQ keeps them: docs/amqp.md, "Message mapping").
    h.mqsc("QJ", "DEFINE QLOCAL(APP.TYPED)\n");
    let t = &jms(&url, &["typed", "APP.TYPED"])[0];
    assert_eq!(
        t["map"],
        serde_json::json!({"name": "widget", "count": 42, "ok": true, "price": 9.5}),
        "{t}"
    );
    assert_eq!(t["stream"], serde_json::json!(["first", 7]), "{t}");
    // A JMS TemporaryTopic, under TEMP/ where the administrator lets the application publish
    // and subscribe: its connection subscribes, another connection replies to it; deleted,
    // it takes no more publishers. A topic subscriber whose selector does not parse is
    // refused.
    h.mqsc(
        "QJ",
        "DEFINE TOPIC(TEMP.TOPICS) TOPICSTR('TEMP')\n\
         SET AUTHREC PROFILE('TEMP.TOPICS') OBJTYPE(TOPIC) PRINCIPAL('app') AUTHADD(PUB,SUB)\n",
    );
    let t = jms(&url, &["topic", "PRICES"]);
    let name = t[0]["temporary"].as_str().unwrap_or_default();
    assert!(name.starts_with("TEMP/QJ/"), "{t:?}");
    assert_eq!(t[0]["body"], "to the temporary topic", "{t:?}");
    let late = t[0]["late"].as_str().unwrap_or_default();
    assert!(
        late.starts_with("InvalidDestinationException") && late.contains("does not exist"),
        "{t:?}"
    );
    assert!(
        t[0]["consumer"].is_string(),
        "a bad selector is refused: {t:?}"
    );
    // Its subscription went with its consumer.
    common::wait_for(
        std::time::Duration::from_secs(20),
        "the temporary topic's subscription to end",
        || !h.mqsc("QJ", "DISPLAY SUB(*) TOPICSTR\n").contains("TEMP/"),
    );
}

/// JMS topics on Qpid JMS (issue 28): a publisher and three subscribers — one with a
/// selector, one durable that leaves and comes back for what it missed — and a sealmq
/// subscriber beside them.
#[test]
fn jms_topics_with_qpid_jms_publish_to_durable_and_non_durable_subscribers() {
    let h = Home::new();
    let url = setup(&h, "QT");
    h.mqsc(
        "QT",
        "SET AUTHREC PROFILE('SYSTEM.BASE.TOPIC') OBJTYPE(TOPIC) PRINCIPAL('app') AUTHADD(PUB,SUB)\n\
         DEFINE QLOCAL(NATIVE.Q)\nDEFINE SUB(NATIVE) TOPICSTR('prices') DEST(NATIVE.Q)\n",
    );
    let got = jms(&url, &["pubsub", "prices"]);
    let g = &got[0];
    assert_eq!(
        g["all"],
        serde_json::json!(["price 0", "price 1", "price 2", "while away"])
    );
    assert_eq!(g["red"], serde_json::json!(["price 1"]));
    assert_eq!(g["red_extra"], false, "the selector let one through: {g}");
    assert_eq!(
        g["durable"],
        serde_json::json!(["price 0", "price 1", "price 2"])
    );
    assert_eq!(g["durable_again"], serde_json::json!(["while away"]));
    // The JMS publications reached a sealmq administrative subscription too.
    assert_eq!(h.depth("QT", "NATIVE.Q"), 4);
    // The durable subscription is kept under the client id and the subscription name; the
    // non-durable ones went with their links.
    let subs = h.mqsc("QT", "DISPLAY SBSTATUS(*) DURABLE\n");
    assert!(subs.contains("SUB(jms-audit:AUDIT)"), "{subs}");
    // A noLocal subscriber (the no-local filter) gets none of its own connection's
    // publications, and the other connection's.
    let n = &jms(&url, &["nolocal", "local/news"])[0];
    assert_eq!(n["all"], serde_json::json!(["own", "elsewhere"]), "{n}");
    assert_eq!(n["no_local"], serde_json::json!(["elsewhere"]), "{n}");
    assert_eq!(n["no_local_extra"], false, "{n}");
    // Session.unsubscribe removes the durable one (and its managed queue); a second one finds
    // nothing.
    let u = jms(&url, &["unsubscribe", "AUDIT"]);
    assert!(u[0]["first"].is_null(), "{u:?}");
    let second = u[0]["second"].as_str().unwrap_or_default();
    assert!(second.contains("InvalidDestinationException"), "{u:?}");
    // (The client's unsubscribe returns when its detach is answered; the removal follows.)
    common::wait_for(
        std::time::Duration::from_secs(20),
        "the unsubscribed subscription to go",
        || !h.mqsc("QT", "DISPLAY SUB(*)\n").contains("jms-audit:AUDIT"),
    );
    // JMS 2 shared subscriptions: two connections without a client id take the publications
    // between them, each once, from a durable one and from a non-durable one.
    let sh = jms(&url, &["shared", "rates", "RATES"]);
    let s = &sh[0];
    let all: Vec<String> = (0..10).map(|i| format!("m{i}")).collect();
    let mut want = all.clone();
    want.sort();
    assert_eq!(s["got"], serde_json::json!(want), "{s}");
    // The shared non-durable one: every publication once, between its consumers; a
    // consumer asking another selector of it while it is in use is refused (2429).
    let mut vwant: Vec<String> = (0..10).map(|i| format!("v{i}")).collect();
    vwant.sort();
    assert_eq!(s["volatile"], serde_json::json!(vwant), "{s}");
    assert_eq!(s["volatile_extra"], false, "{s}");
    assert!(
        s["volatile_mismatch"]
            .as_str()
            .is_some_and(|e| e.contains("2429")),
        "{s}"
    );
    assert!(s["unsubscribe"].is_null(), "{s}");
    common::wait_for(
        std::time::Duration::from_secs(20),
        "the shared subscription to go",
        || !h.mqsc("QT", "DISPLAY SUB(*)\n").contains("RATES"),
    );
    common::wait_for(
        std::time::Duration::from_secs(20),
        "the JMS non-durable subscriptions to end",
        || !h.mqsc("QT", "DISPLAY SUB(*)\n").contains("NDURABLE"),
    );
}

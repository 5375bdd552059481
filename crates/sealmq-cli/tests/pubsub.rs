//! Publish/subscribe with real processes (issue 28): wildcard and selector subscriptions get
//! exactly the publications they should; a durable subscription keeps what was published
//! while its subscriber was away, across a restart and a `kill -9`; a unit of work that
//! publishes then backs out delivers nothing; PUB and SUB authority are checked up the topic
//! tree (2035 otherwise); WILDCARD(BLOCK) keeps wildcards made above a topic object out.

mod common;

use common::{Home, field, free_port};

fn publish(h: &Home, qm: &str, topic: &str, msg: &str, extra: &[&str]) {
    let mut a = vec!["pub", qm, topic, "--message", msg];
    a.extend_from_slice(extra);
    h.ok(&a);
}

/// The payloads on `q`, taken off it, sorted.
fn drain(h: &Home, qm: &str, q: &str) -> Vec<String> {
    let out = h.ok(&["get", qm, q, "--all"]);
    let mut v: Vec<String> = out.lines().map(str::to_string).collect();
    v.sort();
    v
}

#[test]
fn wildcard_and_selector_subscriptions_get_exactly_theirs() {
    let h = Home::new();
    h.ok(&["create", "PS1"]);
    h.ok(&["start", "PS1", "--background"]);
    h.mqsc(
        "PS1",
        "DEFINE QLOCAL(ALL.Q)\nDEFINE QLOCAL(FRUIT.Q)\nDEFINE QLOCAL(APPLES.Q)\nDEFINE QLOCAL(RED.Q)\n\
         DEFINE QLOCAL(CHAR.Q)\n\
         DEFINE SUB(ALL) TOPICSTR('#') DEST(ALL.Q)\n\
         DEFINE SUB(FRUIT) TOPICSTR('price/fruit/#') DEST(FRUIT.Q)\n\
         DEFINE SUB(APPLES) TOPICSTR('price/+/apples') DEST(APPLES.Q)\n\
         DEFINE SUB(RED) TOPICSTR('price/fruit/+') DEST(RED.Q) SELECTOR('colour = ''red''')\n\
         DEFINE SUB(CHARS) TOPICSTR('price/*s') WSCHEMA(CHAR) DEST(CHAR.Q)\n",
    );
    publish(
        &h,
        "PS1",
        "price/fruit/apples",
        "fa",
        &["--property", "colour=red"],
    );
    publish(
        &h,
        "PS1",
        "price/fruit/pears",
        "fp",
        &["--property", "colour=green"],
    );
    publish(&h, "PS1", "price/veg/apples", "va", &[]);
    publish(&h, "PS1", "price/fruit", "f", &[]);
    publish(&h, "PS1", "stock/x", "sx", &[]);
    assert_eq!(drain(&h, "PS1", "ALL.Q"), ["f", "fa", "fp", "sx", "va"]);
    assert_eq!(
        drain(&h, "PS1", "FRUIT.Q"),
        ["f", "fa", "fp"],
        "# matches no level too"
    );
    assert_eq!(drain(&h, "PS1", "APPLES.Q"), ["fa", "va"]);
    assert_eq!(drain(&h, "PS1", "RED.Q"), ["fa"]);
    assert_eq!(drain(&h, "PS1", "CHAR.Q"), ["fa", "fp", "va"]);
    let st = h.mqsc("PS1", "DISPLAY SBSTATUS(FRUIT) NUMMSGS\n");
    assert_eq!(field(&st, "NUMMSGS"), "3");
    // Publishing on a wildcard is refused; so is a topic with PUB(DISABLED) (2051).
    let o = h.run(&["pub", "PS1", "price/#", "--message", "x"], None);
    assert!(String::from_utf8_lossy(&o.stderr).contains("2425"), "{o:?}");
    h.mqsc(
        "PS1",
        "DEFINE TOPIC(CLOSED) TOPICSTR('closed') PUB(DISABLED) SUB(DISABLED)\n",
    );
    let o = h.run(&["pub", "PS1", "closed/a", "--message", "x"], None);
    assert!(String::from_utf8_lossy(&o.stderr).contains("2051"), "{o:?}");
    let o = h.run(
        &["mqsc", "PS1"],
        Some("DEFINE SUB(NO) TOPICSTR('closed/#') DEST(ALL.Q)\n"),
    );
    assert!(String::from_utf8_lossy(&o.stdout).contains("2503"), "{o:?}");
    // WILDCARD(BLOCK) on price/fruit: wildcard subscriptions made above it (ALL's '#',
    // APPLES's 'price/+/apples', CHARS's 'price/*s') no longer get what is published under it;
    // FRUIT's 'price/fruit/#', made at it, still does.
    h.mqsc(
        "PS1",
        "DEFINE TOPIC(FRUIT) TOPICSTR('price/fruit') WILDCARD(BLOCK)
",
    );
    publish(&h, "PS1", "price/fruit/apples", "fa2", &[]);
    publish(&h, "PS1", "price/veg/apples", "va2", &[]);
    assert_eq!(drain(&h, "PS1", "ALL.Q"), ["va2"]);
    assert_eq!(drain(&h, "PS1", "APPLES.Q"), ["va2"]);
    assert_eq!(drain(&h, "PS1", "CHAR.Q"), ["va2"]);
    assert_eq!(drain(&h, "PS1", "FRUIT.Q"), ["fa2"]);
    h.ok(&["stop", "PS1"]);
}

#[test]
fn a_durable_subscription_keeps_what_was_published_while_away() {
    let h = Home::new();
    h.ok(&["create", "PS2"]);
    h.ok(&["start", "PS2", "--background"]);
    // Made and left by a subscriber; what comes meanwhile waits on its managed queue.
    h.ok(&[
        "sub",
        "PS2",
        "orders/#",
        "--name",
        "AUDIT",
        "--durable",
        "--count",
        "0",
    ]);
    publish(&h, "PS2", "orders/new", "one", &["--persistent"]);
    h.ok(&["stop", "PS2"]);
    h.ok(&["start", "PS2", "--background"]);
    publish(&h, "PS2", "orders/paid", "two", &["--persistent"]);
    h.kill9("PS2");
    h.ok(&["start", "PS2", "--background"]);
    let out = h.ok(&["sub", "PS2", "orders/#", "--name", "AUDIT", "--resume"]);
    let mut got: Vec<&str> = out.lines().collect();
    got.sort();
    assert_eq!(got, ["one", "two"]);
    // A non-durable subscription ends with its subscriber: nothing is kept for it.
    h.ok(&["sub", "PS2", "orders/#", "--count", "0"]);
    let subs = h.mqsc("PS2", "DISPLAY SUB(*)\n");
    assert!(
        subs.contains("SUB(AUDIT)") && !subs.contains("NDURABLE"),
        "{subs}"
    );
    h.ok(&[
        "sub", "PS2", "orders/#", "--name", "AUDIT", "--resume", "--remove",
    ]);
    let o = h.run(&["mqsc", "PS2"], Some("DISPLAY SUB(AUDIT)\n"));
    assert!(!o.status.success(), "AUDIT was removed");
    h.ok(&["stop", "PS2"]);
}

#[test]
fn publications_in_a_unit_of_work_arrive_at_commit_or_not_at_all() {
    let h = Home::new();
    h.ok(&["create", "PS3"]);
    h.ok(&["start", "PS3", "--background"]);
    h.mqsc(
        "PS3",
        "DEFINE QLOCAL(A.Q)\nDEFINE QLOCAL(B.Q) MAXDEPTH(1)\n\
         DEFINE SUB(A) TOPICSTR('t') DEST(A.Q)\nDEFINE SUB(B) TOPICSTR('t') DEST(B.Q)\n",
    );
    h.ok(&[
        "pub",
        "PS3",
        "t",
        "--message",
        "x",
        "--count",
        "3",
        "--syncpoint",
        "--backout",
    ]);
    assert_eq!(h.depth("PS3", "A.Q"), 0);
    assert_eq!(h.depth("PS3", "B.Q"), 0);
    h.ok(&["pub", "PS3", "t", "--message", "y", "--syncpoint"]);
    assert_eq!(h.depth("PS3", "A.Q"), 1);
    assert_eq!(h.depth("PS3", "B.Q"), 1);
    // B.Q is full: a persistent publication to its durable subscription fails as a whole
    // (PMSGDLV ALLDUR), and A.Q gets nothing either.
    let o = h.run(&["pub", "PS3", "t", "--message", "z", "--persistent"], None);
    assert!(String::from_utf8_lossy(&o.stderr).contains("2502"), "{o:?}");
    assert_eq!(h.depth("PS3", "A.Q"), 1);
    // Non-persistent ones go where they can (NPMSGDLV ALLAVAIL).
    h.ok(&["pub", "PS3", "t", "--message", "n", "--nonpersistent"]);
    assert_eq!(h.depth("PS3", "A.Q"), 2);
    h.ok(&["stop", "PS3"]);
}

#[test]
fn pub_and_sub_authority_is_checked_up_the_tree() {
    let h = Home::new();
    h.ok(&["create", "PS4"]);
    let port = free_port();
    h.start_tcp("PS4", port);
    let addr = format!("127.0.0.1:{port}");
    h.mqsc(
        "PS4",
        "DEFINE CHANNEL(APP.SVRCONN) CHLTYPE(SVRCONN) MCAUSER('app')\n\
         SET AUTHREC OBJTYPE(QMGR) PRINCIPAL('app') AUTHADD(CONNECT)\n\
         DEFINE TOPIC('DEV.BASE.TOPIC') TOPICSTR('dev/')\n\
         SET AUTHREC PROFILE('DEV.**') PRINCIPAL('app') OBJTYPE(TOPIC) AUTHADD(PUB)\n",
    );
    let via = |args: &[&str]| {
        let mut a = args.to_vec();
        a.extend_from_slice(&["--conn", &addr, "--channel", "APP.SVRCONN"]);
        h.run(&a, None)
    };
    let err = |o: &std::process::Output| String::from_utf8_lossy(&o.stderr).into_owned();
    // PUB under dev/ (granted on DEV.BASE.TOPIC, found up the tree), not elsewhere.
    assert!(
        via(&["pub", "PS4", "dev/news", "--message", "m"])
            .status
            .success()
    );
    let o = via(&["pub", "PS4", "prod/news", "--message", "m"]);
    assert!(err(&o).contains("2035"), "{o:?}");
    // SUB is refused until granted; then the subscriber gets the publication.
    let o = via(&["sub", "PS4", "dev/#"]);
    assert!(err(&o).contains("2035"), "{o:?}");
    h.mqsc(
        "PS4",
        "SET AUTHREC PROFILE('DEV.**') PRINCIPAL('app') OBJTYPE(TOPIC) AUTHADD(SUB)\n",
    );
    let o = via(&[
        "sub",
        "PS4",
        "dev/#",
        "--name",
        "S",
        "--durable",
        "--count",
        "0",
    ]);
    assert!(o.status.success(), "{o:?}");
    assert!(
        via(&["pub", "PS4", "dev/news", "--message", "hello"])
            .status
            .success()
    );
    let o = via(&["sub", "PS4", "dev/#", "--name", "S", "--resume", "--remove"]);
    assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), "hello", "{o:?}");
    h.ok(&["stop", "PS4"]);
}

#[test]
fn a_retained_publication_reaches_late_subscribers_until_cleared() {
    let h = Home::new();
    h.ok(&["create", "PS5"]);
    h.ok(&["start", "PS5", "--background"]);
    publish(
        &h,
        "PS5",
        "weather/today",
        "rain",
        &["--retain", "--persistent"],
    );
    publish(
        &h,
        "PS5",
        "weather/today",
        "sun",
        &["--retain", "--persistent"],
    );
    publish(&h, "PS5", "weather/tomorrow", "snow", &["--retain"]);
    let st = h.mqsc("PS5", "DISPLAY TPSTATUS('weather/today') RETAINED\n");
    assert_eq!(field(&st, "RETAINED"), "YES");
    // A persistent retained publication survives a restart; a non-persistent one does not.
    h.ok(&["stop", "PS5"]);
    h.ok(&["start", "PS5", "--background"]);
    h.mqsc(
        "PS5",
        "DEFINE QLOCAL(LATE.Q)\nDEFINE SUB(LATE) TOPICSTR('weather/#') DEST(LATE.Q)\n",
    );
    assert_eq!(
        drain(&h, "PS5", "LATE.Q"),
        ["sun"],
        "only the last, persistent one"
    );
    // A subscriber that arrives later gets it too, then what is published after.
    let out = h.ok(&["sub", "PS5", "weather/+", "--count", "1"]);
    assert_eq!(out.trim(), "sun");
    h.mqsc("PS5", "CLEAR TOPICSTR('weather/today') CLRTYPE(RETAINED)\n");
    let st = h.mqsc("PS5", "DISPLAY TPSTATUS('weather/today') RETAINED\n");
    assert_eq!(field(&st, "RETAINED"), "NO");
    let out = h.ok(&["sub", "PS5", "weather/+"]);
    assert_eq!(out.trim(), "", "cleared: nothing for a new subscriber");
    let o = h.run(
        &["mqsc", "PS5"],
        Some("CLEAR TOPICSTR('weather/today') CLRTYPE(RETAINED)\n"),
    );
    assert!(!o.status.success(), "nothing left to clear");
    h.ok(&["stop", "PS5"]);
}

#[test]
fn fan_out_is_counted_and_psmode_disabled_stops_publish_subscribe() {
    let h = Home::new();
    h.ok(&["create", "PS6"]);
    h.ok(&["start", "PS6", "--background", "--metrics", "127.0.0.1:0"]);
    h.mqsc(
        "PS6",
        "DEFINE QLOCAL(A.Q)\nDEFINE QLOCAL(B.Q)\n\
         DEFINE SUB(A) TOPICSTR('f/#') DEST(A.Q)\nDEFINE SUB(B) TOPICSTR('f/x') DEST(B.Q)\n",
    );
    h.ok(&["pub", "PS6", "f/x", "--count", "3"]);
    h.ok(&["pub", "PS6", "f/y"]);
    let addr = h.listener("PS6", "metrics");
    let m = {
        use std::io::{Read, Write};
        let mut s = std::net::TcpStream::connect(&addr).unwrap();
        write!(s, "GET /metrics HTTP/1.0\r\nHost: x\r\n\r\n").unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        out
    };
    for line in [
        "sealmq_publications_total{qmgr=\"PS6\"} 4",
        "sealmq_publication_deliveries_total{qmgr=\"PS6\"} 7",
        "sealmq_subscriptions{qmgr=\"PS6\",durable=\"yes\"} 2",
        "sealmq_subscription_messages_total{qmgr=\"PS6\",subscription=\"B\",topic=\"f/x\"} 3",
    ] {
        assert!(m.lines().any(|l| l == line), "no '{line}' in\n{m}");
    }
    let ps = h.mqsc("PS6", "DISPLAY PUBSUB ALL\n");
    assert_eq!(field(&ps, "STATUS"), "ACTIVE");
    assert_eq!(field(&ps, "SUBCOUNT"), "2");
    h.mqsc("PS6", "ALTER QMGR PSMODE(DISABLED)\n");
    let o = h.run(&["pub", "PS6", "f/x"], None);
    assert!(String::from_utf8_lossy(&o.stderr).contains("2531"), "{o:?}");
    assert_eq!(
        field(&h.mqsc("PS6", "DISPLAY PUBSUB\n"), "STATUS"),
        "INACTIVE"
    );
    h.mqsc("PS6", "ALTER QMGR PSMODE(ENABLED)\n");
    h.ok(&["pub", "PS6", "f/x"]);
    assert_eq!(h.depth("PS6", "B.Q"), 4);
    h.ok(&["stop", "PS6"]);
    // The interval statistics files (the last written at stop) count the same: 5
    // publications (the refused one not among them) delivering 9 copies.
    let (mut p, mut d) = (0, 0);
    for f in std::fs::read_dir(h.qm_dir("PS6").join("stats"))
        .unwrap()
        .flatten()
    {
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(f.path()).unwrap()).unwrap();
        p += v["pubsub"]["publications"].as_u64().unwrap();
        d += v["pubsub"]["deliveries"].as_u64().unwrap();
        assert_eq!(v["pubsub"]["subscriptions"], 2, "{v}");
    }
    assert_eq!((p, d), (5, 9));
}

/// A connection that keeps subscribing is stopped at 256 non-durable subscriptions (2017);
/// the refused ones leave nothing behind, and when the connection goes its subscriptions and
/// their queues go with it.
#[test]
fn a_subscription_flood_stops_at_its_limit_and_leaves_nothing_behind() {
    use sealmq_client::Client;
    use sealmq_client::pubsub::Subscription;
    let h = Home::new();
    h.ok(&["create", "PS7"]);
    h.ok(&["start", "PS7", "--background"]);
    h.mqsc("PS7", "ALTER QMGR MAXHANDS(1000)\n");
    let mut c = Client::connect_local(&h.qm_dir("PS7"), "flood").unwrap();
    let s = Subscription {
        topic: "flood/#".into(),
        ..Default::default()
    };
    let mut made = 0;
    let mut refused = 0;
    for _ in 0..300 {
        match c.subscribe(&s) {
            Ok(_) => made += 1,
            Err(e) => {
                assert_eq!(
                    e.reason,
                    sealmq_types::ReasonCode::HandleNotAvailable,
                    "{e:?}"
                );
                refused += 1;
            }
        }
    }
    assert_eq!((made, refused), (256, 44));
    let ps = h.mqsc("PS7", "DISPLAY PUBSUB SUBCOUNT\n");
    assert_eq!(field(&ps, "SUBCOUNT"), "256");
    drop(c);
    common::wait_for(
        std::time::Duration::from_secs(20),
        "the flood's subscriptions and queues to go",
        || {
            field(&h.mqsc("PS7", "DISPLAY PUBSUB SUBCOUNT\n"), "SUBCOUNT") == "0"
                && !h
                    .mqsc("PS7", "DISPLAY QLOCAL(SYSTEM.MANAGED.*)\n")
                    .contains("QUEUE(")
        },
    );
    h.ok(&["stop", "PS7"]);
}

/// Persistent publications to a durable subscription under a unit of work, across `kill -9`:
/// cut before the commit, none arrives; committed, all do.
#[test]
fn publications_in_a_unit_of_work_are_all_or_none_across_kill_9() {
    use sealmq_client::Client;
    use sealmq_engine::{Md, Persistence};
    let h = Home::new();
    h.ok(&["create", "PS8"]);
    h.ok(&["start", "PS8", "--background"]);
    h.mqsc(
        "PS8",
        "DEFINE QLOCAL(KEEP.Q)\nDEFINE SUB(KEEP) TOPICSTR('orders/#') DEST(KEEP.Q)\n",
    );
    let publish = |n: usize, commit: bool| {
        let mut c = Client::connect_local(&h.qm_dir("PS8"), "uow-pub").unwrap();
        for i in 0..n {
            let mut md = Md {
                persistence: Persistence::Persistent,
                ..Md::default()
            };
            c.publish("orders/new", &mut md, format!("order {i}").as_bytes(), true)
                .unwrap();
        }
        if commit {
            c.commit().unwrap();
        }
        c
    };
    // Cut before its commit: the connection is still open when the queue manager dies.
    let open = publish(3, false);
    // (CURDEPTH counts uncommitted puts, as MQ's does: a get shows what is visible.)
    let o = h.run(&["get", "PS8", "KEEP.Q"], None);
    let seen = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        !seen.contains("order"),
        "not visible before the commit: {seen}"
    );
    h.kill9("PS8");
    drop(open);
    h.ok(&["start", "PS8", "--background"]);
    assert_eq!(
        h.depth("PS8", "KEEP.Q"),
        0,
        "none of a unit of work cut off"
    );
    drop(publish(3, true));
    h.kill9("PS8");
    h.ok(&["start", "PS8", "--background"]);
    assert_eq!(h.depth("PS8", "KEEP.Q"), 3, "all of a committed one");
    h.ok(&["stop", "PS8"]);
}

#[test]
fn a_subscription_with_destqmgr_delivers_to_another_queue_manager_through_a_channel() {
    let h = Home::new();
    let (p1, p2) = (free_port(), free_port());
    for (qm, port) in [("PSA", p1), ("PSB", p2)] {
        h.ok(&["create", qm]);
        h.start_tcp(qm, port);
    }
    h.mqsc(
        "PSA",
        &format!(
            "DEFINE QLOCAL(PSB) USAGE(XMITQ)\n\
             DEFINE CHANNEL(PSA.PSB) CHLTYPE(SDR) CONNAME('127.0.0.1({p2})') XMITQ(PSB) SHORTTMR(0)\n"
        ),
    );
    h.mqsc(
        "PSB",
        "DEFINE QLOCAL(PRICES.IN)\nDEFINE CHANNEL(PSA.PSB) CHLTYPE(RCVR)\n\
         SET CHLAUTH('PSA.PSB') TYPE(BLOCKUSER) USERLIST('nobody')\n",
    );
    // No route to a queue manager: refused when defined (2087), not at the first publication.
    let o = h.run(
        &["mqsc", "PSA"],
        Some("DEFINE SUB(LOST) TOPICSTR('prices/#') DEST(PRICES.IN) DESTQMGR(NOWHERE)\n"),
    );
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(!o.status.success() && out.contains("2087"), "{out}");
    let o = h.run(
        &["mqsc", "PSA"],
        Some("DEFINE SUB(MANAGED) TOPICSTR('prices/#') DESTCLAS(MANAGED) DESTQMGR(PSB)\n"),
    );
    assert!(
        !o.status.success(),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    h.mqsc(
        "PSA",
        "DEFINE QLOCAL(LOCAL.COPY)\n\
         DEFINE SUB(TO.PSB) TOPICSTR('prices/#') DEST(PRICES.IN) DESTQMGR(PSB)\n\
         DEFINE SUB(HERE) TOPICSTR('prices/#') DEST(LOCAL.COPY)\n\
         START CHANNEL(PSA.PSB)\n",
    );
    let shown = h.mqsc("PSA", "DISPLAY SUB(TO.PSB) DESTQMGR\n");
    assert!(shown.contains("DESTQMGR(PSB)"), "{shown}");
    for i in 0..5 {
        publish(
            &h,
            "PSA",
            "prices/fruit",
            &format!("apples {i}"),
            &["--persistent"],
        );
    }
    common::wait_for(
        std::time::Duration::from_secs(60),
        "the copies on PSB's PRICES.IN",
        || h.depth("PSB", "PRICES.IN") == 5,
    );
    let got = drain(&h, "PSB", "PRICES.IN");
    assert_eq!(got.len(), 5, "{got:?}");
    assert!(got.iter().all(|m| m.contains("apples")), "{got:?}");
    assert_eq!(h.depth("PSA", "LOCAL.COPY"), 5);
    // It survives a restart, DESTQMGR and all.
    h.ok(&["stop", "PSA"]);
    h.start_tcp("PSA", p1);
    let shown = h.mqsc("PSA", "DISPLAY SUB(TO.PSB) DESTQMGR\n");
    assert!(shown.contains("DESTQMGR(PSB)"), "{shown}");
    for qm in ["PSA", "PSB"] {
        h.ok(&["stop", qm]);
    }
}

#[test]
fn a_topic_opened_to_publish_and_a_subscription_for_new_publications_only() {
    let h = Home::new();
    let port = free_port();
    h.ok(&["create", "PST"]);
    h.start_tcp("PST", port);
    let addr = format!("127.0.0.1:{port}");
    h.mqsc(
        "PST",
        "DEFINE TOPIC(NEWS) TOPICSTR('news')\n\
         DEFINE QLOCAL(NEWS.Q)\nDEFINE SUB(NEWS.ALL) TOPICSTR('news/#') DEST(NEWS.Q)\n\
         DEFINE CHANNEL(APP.SVRCONN) CHLTYPE(SVRCONN) MCAUSER('app')\n\
         SET AUTHREC OBJTYPE(QMGR) PRINCIPAL('app') AUTHADD(CONNECT)\n",
    );
    // MQOPEN of topic object NEWS with a topic string under it: puts through the handle are
    // publications on news/today; with '' on the object's own string.
    let out = h.ok(&[
        "pub",
        "PST",
        "today",
        "--topic-object",
        "NEWS",
        "--message",
        "m",
        "--count",
        "3",
    ]);
    assert!(out.contains("on 'news/today'"), "{out}");
    h.ok(&["pub", "PST", "", "--topic-object", "NEWS", "--message", "m"]);
    assert_eq!(h.depth("PST", "NEWS.Q"), 4);
    for (object, topic, reason) in [("NO.SUCH.TOPIC", "x", "2085"), ("NEWS", "#", "2425")] {
        let err = h.fails(&["pub", "PST", topic, "--topic-object", object]);
        assert!(err.contains(reason), "{object} {topic}: {err}");
    }
    // Authority is checked at the open, before anything is published.
    let via = |args: &[&str]| {
        let mut a = args.to_vec();
        a.extend_from_slice(&["--conn", &addr, "--channel", "APP.SVRCONN"]);
        h.run(&a, None)
    };
    let o = via(&["pub", "PST", "today", "--topic-object", "NEWS"]);
    assert!(String::from_utf8_lossy(&o.stderr).contains("2035"), "{o:?}");
    assert_eq!(h.depth("PST", "NEWS.Q"), 4);
    h.mqsc(
        "PST",
        "SET AUTHREC PROFILE('NEWS') OBJTYPE(TOPIC) PRINCIPAL('app') AUTHADD(PUB,SUB)\n",
    );
    let o = via(&["pub", "PST", "today", "--topic-object", "NEWS"]);
    assert!(o.status.success(), "{o:?}");
    assert_eq!(h.depth("PST", "NEWS.Q"), 5);
    // A subscription to a queue of the subscriber's (MQSUB without MQSO_MANAGED): it must be
    // one the subscriber may put to (2035 otherwise), and copies wait there while it is away.
    h.mqsc(
        "PST",
        "DEFINE QLOCAL(APP.NEWS)
         SET AUTHREC PROFILE('APP.NEWS') OBJTYPE(QUEUE) PRINCIPAL('app') AUTHADD(GET)
",
    );
    let mine = [
        "sub",
        "PST",
        "news/#",
        "--name",
        "APP.OWN",
        "--durable",
        "--dest",
        "APP.NEWS",
    ];
    let o = via(&mine);
    assert!(String::from_utf8_lossy(&o.stderr).contains("2035"), "{o:?}");
    h.mqsc(
        "PST",
        "SET AUTHREC PROFILE('APP.NEWS') OBJTYPE(QUEUE) PRINCIPAL('app') AUTHADD(PUT)
",
    );
    // PUT but no GET on a queue: refused when it is opened, and the durable subscription the
    // call made is not left behind delivering there.
    h.mqsc(
        "PST",
        "DEFINE QLOCAL(APP.DROP)
         SET AUTHREC PROFILE('APP.DROP') OBJTYPE(QUEUE) PRINCIPAL('app') AUTHADD(PUT)
",
    );
    let o = via(&[
        "sub",
        "PST",
        "news/#",
        "--name",
        "APP.HALF",
        "--durable",
        "--dest",
        "APP.DROP",
    ]);
    assert!(String::from_utf8_lossy(&o.stderr).contains("2035"), "{o:?}");
    let shown = h.mqsc("PST", "DISPLAY SUB(*)\n");
    assert!(!shown.contains("APP.HALF"), "{shown}");
    let o = via(&mine);
    assert!(o.status.success(), "{o:?}");
    h.ok(&["pub", "PST", "news/sport", "--message", "goal"]);
    assert_eq!(h.depth("PST", "APP.DROP"), 0);
    assert_eq!(h.depth("PST", "APP.NEWS"), 1);
    let mut again = mine.to_vec();
    again.extend_from_slice(&["--resume", "--count", "1", "--remove"]);
    let o = via(&again);
    assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), "goal", "{o:?}");
    let shown = h.mqsc(
        "PST",
        "DISPLAY SUB(*)
",
    );
    assert!(!shown.contains("APP.OWN"), "{shown}");
    // A retained publication: a new subscription gets it, unless it asks for new
    // publications only.
    h.ok(&[
        "pub",
        "PST",
        "news/weather",
        "--message",
        "sunny",
        "--retain",
    ]);
    let got = h.ok(&[
        "sub",
        "PST",
        "news/weather",
        "--count",
        "1",
        "--wait",
        "2000",
    ]);
    assert_eq!(got.trim(), "sunny");
    let got = h.ok(&[
        "sub",
        "PST",
        "news/weather",
        "--new-publications-only",
        "--count",
        "1",
        "--wait",
        "500",
    ]);
    assert_eq!(got.trim(), "", "a retained publication given anyway");
    // A connection holds at most 256 topics open to publish; one closed makes room; a topic
    // handle is not one to get from (2037).
    use sealmq_engine::mqi::GetOptions;
    let mut c = sealmq_client::Client::connect_local(&h.qm_dir("PST"), "many").unwrap();
    let mut open = Vec::new();
    for i in 0..256 {
        open.push(c.open_topic("NEWS", &format!("t{i}")).unwrap().0);
    }
    let e = c.open_topic("NEWS", "one.more").unwrap_err();
    assert_eq!(
        e.reason,
        sealmq_types::ReasonCode::HandleNotAvailable,
        "{e}"
    );
    assert_eq!(
        c.get(open[0], &GetOptions::default()).unwrap_err().reason,
        sealmq_types::ReasonCode::NotOpenForInput
    );
    c.close(open[0]).unwrap();
    let (h2, topic) = c.open_topic("NEWS", "one.more").unwrap();
    assert_eq!(topic, "news/one.more");
    c.put(
        h2,
        &mut sealmq_engine::Md::default(),
        b"via a handle",
        false,
    )
    .unwrap();
    // (NEWS.ALL took "goal" and the retained publication too: 7 before this one.)
    assert_eq!(h.depth("PST", "NEWS.Q"), 8);
    drop(c);
    h.ok(&["stop", "PST"]);
}

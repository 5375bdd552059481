//! Asynchronous consume (issue 14) against real queue manager processes: kill -9 of the queue
//! manager and of a consumer with pushed messages in flight, a consumer that stops mid-window,
//! windows of 1 and 10,000, matching, browse, and a version 1 client still served.

mod common;

use common::{Home, uncom, wait_for};
use sealmq_client::{Client, ConsumeMode, ConsumeOptions};
use sealmq_engine::Match;
use sealmq_engine::mqi::{GetOptions, OpenOptions};
use sealmq_engine::{Md, Persistence};
use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::Duration;

fn qm(h: &Home, name: &str) -> Client {
    h.ok(&["create", name]);
    h.ok(&["start", name, "--background"]);
    h.mqsc(name, "DEFINE QLOCAL(C.Q) MAXDEPTH(100000)\n");
    Client::connect_local(&h.qm_dir(name), "consume-test").unwrap()
}

/// Puts `n` persistent messages `m00000`... (padded to 1 KB), correlation id `A` or `B`
/// alternating.
fn fill(c: &mut Client, n: u32) {
    let (h, _) = c.open("C.Q", OpenOptions::output()).unwrap();
    for i in 0..n {
        let mut md = Md {
            persistence: Persistence::Persistent,
            ..Md::default()
        };
        md.correl_id[0] = if i % 2 == 0 { b'A' } else { b'B' };
        // 1 KB: a consumer printing them fills its output pipe quickly.
        let body = format!("m{i:05}{}", " ".repeat(1018));
        c.put(h, &mut md, body.as_bytes(), true).unwrap();
        if i % 500 == 499 {
            c.commit().unwrap();
        }
    }
    c.commit().unwrap();
    c.close(h).unwrap();
}

fn text(p: &[u8]) -> String {
    String::from_utf8_lossy(p).trim_end().to_string()
}

/// Every message left, with its backout count, by plain gets.
fn drain(c: &mut Client) -> Vec<(String, u32)> {
    let (h, _) = c.open("C.Q", OpenOptions::input()).unwrap();
    let mut v = Vec::new();
    while let Ok(g) = c.get(h, &GetOptions::default()) {
        v.push((text(&g.payload), g.md.backout_count));
    }
    c.close(h).unwrap();
    v
}

fn opts(mode: ConsumeMode, window: u32, batch: u32) -> ConsumeOptions {
    ConsumeOptions {
        mode,
        window,
        batch,
        batch_ms: 1000,
        ..Default::default()
    }
}

#[test]
fn kill_dash_nine_of_the_queue_manager_mid_window_loses_nothing_and_never_redelivers_a_settled_message()
 {
    let h = Home::new();
    let mut c = qm(&h, "QK");
    fill(&mut c, 2000);
    let (hobj, _) = c.open("C.Q", OpenOptions::input()).unwrap();
    let mut consumer = c
        .consume(hobj, opts(ConsumeMode::Syncpoint, 500, 50))
        .unwrap();
    let mut seen = Vec::new();
    while seen.len() < 777 {
        let g = consumer.next(Duration::from_secs(10)).unwrap().unwrap();
        seen.push(text(&g.payload));
    }
    // Let the settlements of the processed batches be confirmed, with more pushed meanwhile.
    wait_for(Duration::from_secs(10), "commits confirmed", || {
        if let Ok(Some(g)) = consumer.next(Duration::from_millis(1)) {
            seen.push(text(&g.payload));
        }
        consumer.committed() >= 700
    });
    let committed = consumer.committed() as usize;
    h.kill9("QK");
    drop(consumer);
    drop(c);
    h.ok(&["start", "QK", "--background"]);
    let mut c = Client::connect_local(&h.qm_dir("QK"), "after").unwrap();
    let left = drain(&mut c);
    let left_names: HashSet<&str> = left.iter().map(|(n, _)| n.as_str()).collect();
    // Nothing confirmed committed comes back; nothing the application was not handed is
    // gone (a batch whose commit was on its way may be either); nothing is there twice.
    for n in &seen[..committed] {
        assert!(
            !left_names.contains(n.as_str()),
            "{n} was settled but is back"
        );
    }
    let handed: HashSet<&str> = seen.iter().map(String::as_str).collect();
    for i in 0..2000 {
        let n = format!("m{i:05}");
        assert!(
            left_names.contains(n.as_str()) || handed.contains(n.as_str()),
            "{n} is lost"
        );
    }
    assert_eq!(left_names.len(), left.len(), "none twice");
    assert!(left.len() <= 2000 - committed);
}

#[test]
fn kill_dash_nine_of_a_consumer_returns_its_unsettled_messages_with_backout_counts() {
    let h = Home::new();
    let mut c = qm(&h, "QC");
    fill(&mut c, 5000);
    let mut child = h
        .cmd(&[
            "get",
            "QC",
            "C.Q",
            "--async",
            "--syncpoint",
            "20",
            "--window",
            "400",
            "--count",
            "5000",
            "--wait",
            "5000",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Read some of what it printed, then stop reading: it blocks on its full pipe, pushed
    // messages unsettled; then SIGKILL.
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut printed = Vec::new();
    while printed.len() < 500 {
        let mut l = String::new();
        assert!(
            out.read_line(&mut l).unwrap() > 0,
            "the consumer ended early"
        );
        printed.push(l.trim().to_string());
    }
    common::once_steady("the consumer to stop, blocked on its pipe", || {
        uncom(&h, "QC", "C.Q")
    });
    child.kill().unwrap();
    let _ = child.wait();
    // Whatever it printed after we stopped reading is still in the pipe.
    for l in out.lines().map_while(Result::ok) {
        printed.push(l.trim().to_string());
    }
    // Gets take what is there; the killed consumer's unsettled messages come back as the
    // queue manager sees its connection end.
    let mut left = Vec::new();
    let mut all: HashSet<String> = printed.iter().cloned().collect();
    wait_for(Duration::from_secs(10), "its connection to end", || {
        let more = drain(&mut c);
        all.extend(more.iter().map(|(n, _)| n.clone()));
        left.extend(more);
        all.len() == 5000
    });
    assert_eq!(
        all.len(),
        5000,
        "every message processed or back on the queue"
    );
    assert!(
        left.iter().any(|(_, b)| *b >= 1),
        "messages pushed to the killed consumer come back with a backout count"
    );
}

#[test]
fn a_consumer_that_stops_mid_window_returns_its_unsettled_messages_with_backout_counts() {
    let h = Home::new();
    let mut c = qm(&h, "QS");
    fill(&mut c, 300);
    let (hobj, _) = c.open("C.Q", OpenOptions::input()).unwrap();
    let mut consumer = c
        .consume(hobj, opts(ConsumeMode::Syncpoint, 100, 10))
        .unwrap();
    for i in 0..30 {
        let g = consumer.next(Duration::from_secs(10)).unwrap().unwrap();
        assert_eq!(text(&g.payload), format!("m{i:05}"));
        assert_eq!(g.md.backout_count, 0);
    }
    assert!(consumer.stop().unwrap().is_empty());
    c.close(hobj).unwrap();
    assert_eq!(h.depth("QS", "C.Q"), 270, "the 30 processed are committed");
    let left = drain(&mut c);
    assert_eq!(left[0].0, "m00030");
    assert_eq!(left[0].1, 1, "pushed, not processed: backed out");
    let backed: usize = left.iter().filter(|(_, b)| *b == 1).count();
    assert!(
        (10..=70).contains(&backed),
        "{backed} messages were pushed and returned"
    );
}

#[test]
fn windows_of_one_and_ten_thousand_deliver_every_message_in_order() {
    let h = Home::new();
    let mut c = qm(&h, "QW");
    for (mode, window, batch) in [
        (ConsumeMode::Auto, 1, 1),
        (ConsumeMode::Syncpoint, 1, 1),
        (ConsumeMode::Auto, 10_000, 500),
        (ConsumeMode::Syncpoint, 10_000, 1000),
    ] {
        fill(&mut c, 1200);
        let (hobj, _) = c.open("C.Q", OpenOptions::input()).unwrap();
        let mut consumer = c.consume(hobj, opts(mode, window, batch)).unwrap();
        let mut got = Vec::new();
        while let Some(g) = consumer.next(Duration::from_millis(500)).unwrap() {
            got.push(text(&g.payload));
        }
        got.extend(consumer.stop().unwrap().iter().map(|g| text(&g.payload)));
        let want: Vec<String> = (0..1200).map(|i| format!("m{i:05}")).collect();
        assert!(got == want, "{mode:?} window {window}: {} got", got.len());
        c.close(hobj).unwrap();
        assert_eq!(h.depth("QW", "C.Q"), 0, "{mode:?} window {window}");
    }
}

#[test]
fn async_consume_matches_correlation_ids_and_browses_without_taking() {
    let h = Home::new();
    let mut c = qm(&h, "QM");
    fill(&mut c, 400);
    let (hobj, _) = c
        .open(
            "C.Q",
            OpenOptions {
                input_shared: true,
                browse: true,
                ..Default::default()
            },
        )
        .unwrap();
    // Browse (read ahead): copies of all 400, in order; nothing taken.
    let mut consumer = c.consume(hobj, opts(ConsumeMode::Browse, 64, 16)).unwrap();
    let mut browsed = 0;
    while let Some(g) = consumer.next(Duration::from_millis(500)).unwrap() {
        assert_eq!(text(&g.payload), format!("m{browsed:05}"));
        browsed += 1;
    }
    drop(consumer);
    assert_eq!(browsed, 400);
    assert_eq!(h.depth("QM", "C.Q"), 400);
    // Only correlation id A: the even ones.
    let mut correl = [0u8; 24];
    correl[0] = b'A';
    let mut o = opts(ConsumeMode::Auto, 50, 10);
    o.matching = Match {
        correl_id: Some(correl),
        ..Match::default()
    };
    let mut consumer = c.consume(hobj, o).unwrap();
    let mut got = Vec::new();
    while let Some(g) = consumer.next(Duration::from_millis(500)).unwrap() {
        assert_eq!(g.md.correl_id, correl);
        got.push(text(&g.payload));
    }
    got.extend(consumer.stop().unwrap().iter().map(|g| text(&g.payload)));
    let want: Vec<String> = (0..400).step_by(2).map(|i| format!("m{i:05}")).collect();
    assert!(got == want, "{} matched", got.len());
    c.close(hobj).unwrap();
    let left: HashMap<String, u32> = drain(&mut c).into_iter().collect();
    assert_eq!(left.len(), 200);
    assert!(left.keys().all(|k| k[1..].parse::<u32>().unwrap() % 2 == 1));
}

#[test]
fn a_version_one_client_is_still_served_and_cannot_consume() {
    use sealmq_wire::{Request, Response};
    let h = Home::new();
    drop(qm(&h, "QV"));
    let mut s = std::os::unix::net::UnixStream::connect(h.qm_dir("QV").join("qm.sock")).unwrap();
    let hello = Request::Hello(sealmq_wire::Hello {
        versions: vec![1],
        max_msg: 1 << 20,
        appl: "old".into(),
        channel: String::new(),
        user: String::new(),
        password: Default::default(),
    });
    sealmq_wire::write_request(&mut s, 1, &hello).unwrap();
    let (_, r) = sealmq_wire::read_response(&mut s, 1 << 20)
        .unwrap()
        .unwrap();
    assert!(matches!(r, Response::HelloOk { version: 1, .. }), "{r:?}");
    let open = Request::Open {
        name: "C.Q".into(),
        options: sealmq_wire::open::INPUT_SHARED,
        dyn_name: String::new(),
    };
    sealmq_wire::write_request(&mut s, 2, &open).unwrap();
    let (_, r) = sealmq_wire::read_response(&mut s, 1 << 20)
        .unwrap()
        .unwrap();
    let Response::Opened(sealmq_wire::Opened { hobj, .. }) = r else {
        panic!("{r:?}")
    };
    let consume = Request::Consume(sealmq_wire::ConsumeReq {
        hobj,
        tag: 1,
        mode: 0,
        window: 10,
        batch: 1,
        batch_ms: 0,
        match_msg_id: None,
        match_correl_id: None,
    });
    sealmq_wire::write_request(&mut s, 3, &consume).unwrap();
    let (_, r) = sealmq_wire::read_response(&mut s, 1 << 20)
        .unwrap()
        .unwrap();
    assert!(
        matches!(&r, Response::Err { reason: 2195, detail } if detail.contains("version 2")),
        "{r:?}"
    );
    // A message with properties reaches it without them: its descriptor reads as version 1's.
    h.ok(&[
        "put",
        "QV",
        "C.Q",
        "--message",
        "p",
        "--property",
        "colour=red",
    ]);
    let get = Request::Get(sealmq_wire::GetReq::from_options(
        hobj,
        &sealmq_engine::mqi::GetOptions::default(),
    ));
    sealmq_wire::write_request(&mut s, 4, &get).unwrap();
    let (_, r) = sealmq_wire::read_response(&mut s, 1 << 20)
        .unwrap()
        .unwrap();
    let Response::Got { md, payload, .. } = r else {
        panic!("{r:?}")
    };
    assert_eq!(payload, b"p");
    assert!(md.properties.is_empty(), "{:?}", md.properties);
    // Nor MQMD's report options and feedback (wire version 6).
    let mut c = Client::connect_local(&h.qm_dir("QV"), "consume-test").unwrap();
    let (o, _) = c.open("C.Q", OpenOptions::output()).unwrap();
    let mut md = Md {
        report: 0x40,
        feedback: 65537,
        ..Md::default()
    };
    c.put(o, &mut md, b"r", false).unwrap();
    sealmq_wire::write_request(&mut s, 5, &get).unwrap();
    let (_, r) = sealmq_wire::read_response(&mut s, 1 << 20)
        .unwrap()
        .unwrap();
    let Response::Got { md, payload, .. } = r else {
        panic!("{r:?}")
    };
    assert_eq!(payload, b"r");
    assert_eq!((md.report, md.feedback), (0, 0));
}

/// Read-ahead (DEFREADA, MQOO_READ_AHEAD): plain gets take what was pushed ahead, in order;
/// a persistent message is never handed over before its removal is durable, and one pushed
/// but not taken when the handle closes stays on the queue. DISABLED wins over the open.
#[test]
fn read_ahead_serves_plain_gets_in_order_and_never_loses_a_persistent_message() {
    let h = Home::new();
    let mut c = qm(&h, "QR");
    h.mqsc(
        "QR",
        "DEFINE QLOCAL(RA.Q) DEFREADA(YES)\nDEFINE QLOCAL(NR.Q) DEFREADA(DISABLED)\n",
    );
    let out = h.mqsc("QR", "DISPLAY QLOCAL(RA.Q) DEFREADA\n");
    assert_eq!(common::field(&out, "DEFREADA"), "YES");
    let bad = h.run(
        &["mqsc", "QR"],
        Some("ALTER QLOCAL(RA.Q) DEFREADA(MAYBE)\n"),
    );
    assert!(!bad.status.success());
    for q in ["RA.Q", "NR.Q"] {
        let (o, _) = c.open(q, OpenOptions::output()).unwrap();
        for i in 0..300u32 {
            let mut md = Md {
                persistence: if i % 3 == 0 {
                    Persistence::Persistent
                } else {
                    Persistence::NotPersistent
                },
                ..Md::default()
            };
            c.put(o, &mut md, format!("m{i:05}").as_bytes(), false)
                .unwrap();
        }
        c.close(o).unwrap();
    }
    let (r, _) = c.open("RA.Q", OpenOptions::input()).unwrap();
    let mut taken = Vec::new();
    for i in 0..150u32 {
        let g = c.get(r, &GetOptions::default()).unwrap();
        assert_eq!(text(&g.payload), format!("m{i:05}"));
        taken.push(i);
        if i == 0 {
            wait_for(Duration::from_secs(10), "messages read ahead", || {
                uncom(&h, "QR", "RA.Q") > 0
            });
        }
    }
    c.close(r).unwrap();
    // Every persistent message not taken is still there, once; nothing taken is back.
    let no_ra = OpenOptions {
        read_ahead: Some(false),
        ..OpenOptions::input()
    };
    let (r, _) = c.open("RA.Q", no_ra).unwrap();
    let mut left = Vec::new();
    while let Ok(g) = c.get(r, &GetOptions::default()) {
        left.push(text(&g.payload)[1..].parse::<u32>().unwrap());
    }
    c.close(r).unwrap();
    for i in (150..300).step_by(3) {
        assert!(left.contains(&i), "persistent m{i:05} lost: {left:?}");
    }
    assert!(
        left.iter().all(|i| *i >= 150),
        "nothing taken comes back: {left:?}"
    );
    let mut dedup = left.clone();
    dedup.dedup();
    assert_eq!(dedup, left, "in order, once");
    // DISABLED on the queue: an open asking for read-ahead gets none.
    let want = OpenOptions {
        read_ahead: Some(true),
        ..OpenOptions::input()
    };
    let (n, _) = c.open("NR.Q", want).unwrap();
    assert_eq!(
        text(&c.get(n, &GetOptions::default()).unwrap().payload),
        "m00000"
    );
    assert_eq!(uncom(&h, "QR", "NR.Q"), 0, "nothing pushed ahead");
    c.close(n).unwrap();
}

/// MQCB with a callback: each message once, in order; under syncpoint committed as the
/// callback returns; stop ends it cleanly.
#[test]
fn a_callback_consumer_gets_every_message_once_and_stops_cleanly() {
    let h = Home::new();
    let mut c = qm(&h, "QB");
    fill(&mut c, 200);
    let (hobj, _) = c.open("C.Q", OpenOptions::input()).unwrap();
    let consumer = c
        .consume(hobj, opts(ConsumeMode::Syncpoint, 50, 10))
        .unwrap();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = seen.clone();
    let running = consumer.start_callback(move |g| sink.lock().unwrap().push(text(&g.payload)));
    wait_for(Duration::from_secs(10), "200 callbacks", || {
        seen.lock().unwrap().len() >= 200
    });
    assert_eq!(running.stop().unwrap(), 200);
    let want: Vec<String> = (0..200).map(|i| format!("m{i:05}")).collect();
    assert!(*seen.lock().unwrap() == want);
    c.close(hobj).unwrap();
    assert_eq!(h.depth("QB", "C.Q"), 0, "every processed batch committed");
}

/// A connection runs at most 32 consumers at once (2017 HANDLE_NOT_AVAILABLE past that); a
/// stopped one makes room again.
#[test]
fn a_connection_runs_at_most_thirty_two_consumers() {
    let h = Home::new();
    let mut c = qm(&h, "QL");
    let (hobj, _) = c.open("C.Q", OpenOptions::input()).unwrap();
    let mut running: Vec<_> = (0..32)
        .map(|_| c.consume(hobj, opts(ConsumeMode::Auto, 10, 1)).unwrap())
        .collect();
    let e = c
        .consume(hobj, opts(ConsumeMode::Auto, 10, 1))
        .err()
        .expect("a 33rd consumer is refused");
    assert_eq!(
        e.reason,
        sealmq_types::ReasonCode::HandleNotAvailable,
        "{e}"
    );
    running.pop().unwrap().stop().unwrap();
    running.push(c.consume(hobj, opts(ConsumeMode::Auto, 10, 1)).unwrap());
    drop(running);
    c.close(hobj).unwrap();
}

/// A client that grants credit of 2^32-1 after a window of 10 and never settles holds at most
/// MAXUMSGS messages unsettled (before the fix: 50,000 of 50,000).
#[test]
fn a_huge_credit_holds_no_more_than_maxumsgs_unsettled() {
    let h = Home::new();
    let mut c = qm(&h, "QH");
    fill(&mut c, 2000);
    h.mqsc("QH", "ALTER QMGR MAXUMSGS(300)\n");
    let mut app = Client::connect_local(&h.qm_dir("QH"), "hostile").unwrap();
    let (hobj, _) = app.open("C.Q", OpenOptions::input()).unwrap();
    let consumer = app
        .consume(hobj, opts(ConsumeMode::Syncpoint, 10, 10))
        .unwrap();
    consumer.grant_unchecked(u32::MAX).unwrap();
    consumer.grant_unchecked(u32::MAX).unwrap();
    wait_for(
        Duration::from_secs(30),
        "the pushes to reach the bound",
        || uncom(&h, "QH", "C.Q") >= 300,
    );
    // Given time, nothing more is pushed: MAXUMSGS unsettled at most.
    sealmq_testkit::holds_for(
        Duration::from_millis(1500),
        Duration::from_millis(100),
        "at most MAXUMSGS(300) unsettled",
        || uncom(&h, "QH", "C.Q") <= 300,
    );
    assert_eq!(uncom(&h, "QH", "C.Q"), 300);
    drop(consumer);
    drop(app);
    wait_for(Duration::from_secs(30), "the unsettled ones back", || {
        uncom(&h, "QH", "C.Q") == 0
    });
    assert_eq!(drain(&mut c).len(), 2000, "nothing lost");
}

fn threads_of(pid: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("Threads:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

/// Idle consumers cost the queue manager no thread each (200 × 32 idle consumers made 6,606
/// threads when each pusher was a thread): 4,096 of them run as tasks on one thread; past
/// that a consumer is refused with 2102, the administrator is served, and the consumers'
/// twins and tasks go with them.
#[test]
fn idle_consumers_are_tasks_bounded_by_the_pusher_limit() {
    let h = Home::new();
    let _admin = qm(&h, "QB");
    let pid = h.pid("QB");
    let base = threads_of(&pid);
    let (mut apps, mut running, mut refused) = (Vec::new(), 0, 0);
    for _ in 0..136 {
        let mut app = Client::connect_local(&h.qm_dir("QB"), "idle").unwrap();
        let (hobj, _) = app.open("C.Q", OpenOptions::input()).unwrap();
        let mut mine = Vec::new();
        for _ in 0..32 {
            match app.consume(hobj, opts(ConsumeMode::Auto, 10, 1)) {
                Ok(c) => mine.push(c),
                Err(e) => {
                    assert_eq!(e.reason, sealmq_types::ReasonCode::ResourceProblem, "{e}");
                    refused += 1;
                }
            }
        }
        running += mine.len();
        apps.push((app, mine));
    }
    let peak = threads_of(&pid);
    eprintln!(
        "136 x 32 idle consumers: {running} running, {refused} refused; queue manager threads \
         {base} -> {peak}"
    );
    assert_eq!((running, refused), (4096, 256));
    // The pushers' runtime (1) and the blocking pool the consume requests passed through
    // (at most 64): nothing per consumer.
    assert!(
        peak <= base + 2 + 64 + 8,
        "{peak} threads for 4,096 consumers"
    );
    // Every consumer still works: a message put now reaches one of them.
    let mut p = Client::connect_local(&h.qm_dir("QB"), "p").unwrap();
    let (ph, _) = p.open("C.Q", OpenOptions::output()).unwrap();
    p.put(ph, &mut Md::default(), b"to one of 4096", false)
        .unwrap();
    wait_for(
        Duration::from_secs(30),
        "a consumer to take the message",
        || uncom(&h, "QB", "C.Q") == 1,
    );
    assert!(h.mqsc("QB", "DISPLAY QMGR MAXUMSGS\n").contains("MAXUMSGS"));
    // Half the applications end their consumers one by one, half just disconnect.
    std::thread::scope(|s| {
        for (i, (app, mine)) in apps.into_iter().enumerate() {
            s.spawn(move || {
                if i % 2 == 0 {
                    drop(mine);
                } else {
                    std::mem::forget(mine);
                }
                drop(app);
            });
        }
    });
    wait_for(Duration::from_secs(60), "the pushers to end", || {
        threads_of(&pid) <= base + 8
    });
}

/// Issue 27: asynchronous consume over TLS. The connection's reader waits for the next request
/// while the pusher writes to the same TLS connection, and the application's credits and
/// settles cross the pushes the other way: 2,000 messages in syncpoint batches, in order, none
/// twice, the queue empty afterwards; plain gets on the same connection still work.
#[test]
fn async_consume_over_tls_delivers_every_message_once() {
    let h = Home::new();
    let port = common::free_port();
    h.ok(&["create", "QT"]);
    let app = h.dir.path().join("app");
    let addr = h.start_tls_for("QT", port, &app, "CN=consumer,O=Example");
    h.mqsc(
        "QT",
        "DEFINE QLOCAL(C.Q) MAXDEPTH(100000)\n\
         DEFINE CHANNEL(TLS.SVRCONN) CHLTYPE(SVRCONN) SSLCIPH(ANY)\n\
         SET CHLAUTH('TLS.SVRCONN') TYPE(SSLPEERMAP) SSLPEER('CN=consumer,O=Example') USERSRC(MAP) MCAUSER('app')\n\
         SET AUTHREC OBJTYPE(QMGR) PRINCIPAL('app') AUTHADD(CONNECT)\n\
         SET AUTHREC PROFILE('C.Q') OBJTYPE(QUEUE) PRINCIPAL('app') AUTHADD(GET,PUT,BROWSE)\n",
    );
    let mut local = Client::connect_local(&h.qm_dir("QT"), "filler").unwrap();
    fill(&mut local, 2000);
    let mut c = Client::connect_tls_channel(&addr, &app, Some("QT"), "TLS.SVRCONN", "tls-consumer")
        .unwrap();
    let (hobj, _) = c.open("C.Q", OpenOptions::input()).unwrap();
    let mut consumer = c
        .consume(hobj, opts(ConsumeMode::Syncpoint, 100, 25))
        .unwrap();
    let mut got = Vec::new();
    while let Some(g) = consumer.next(Duration::from_millis(1000)).unwrap() {
        got.push(text(&g.payload));
    }
    got.extend(consumer.stop().unwrap().iter().map(|g| text(&g.payload)));
    let want: Vec<String> = (0..2000).map(|i| format!("m{i:05}")).collect();
    assert!(got == want, "{} got over TLS", got.len());
    assert_eq!(h.depth("QT", "C.Q"), 0);
    // The same connection goes on with plain calls.
    fill(&mut local, 1);
    let g = c.get(hobj, &GetOptions::default()).unwrap();
    assert_eq!(text(&g.payload), "m00000");
    drop(c);
    drop(local);
    h.ok(&["stop", "QT"]);
}

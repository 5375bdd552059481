//! MQSC against a real queue manager: define/display/alter/delete round trips, JSON, errors
//! that point at the wrong token.

use proptest::prelude::*;
use sealmq_engine::Connection;
use sealmq_engine::{QmConfig, QueueManager};
use sealmq_mqsc::{render_json, render_text, run};
use std::sync::Arc;

fn qm() -> (tempfile::TempDir, Arc<QueueManager>) {
    let d = tempfile::tempdir().unwrap();
    let qm = sealmq_engine::create(QmConfig::new("QM1", d.path().join("QM1"))).unwrap();
    (d, qm)
}

fn attr<'a>(b: &'a [(String, String)], k: &str) -> &'a str {
    b.iter()
        .find(|(key, _)| key == k)
        .map(|(_, v)| v.as_str())
        .unwrap_or_else(|| panic!("no {k} in {b:?}"))
}

#[test]
fn define_display_alter_delete_round_trip() {
    let (_d, qm) = qm();
    let script = "\
* orders
DEFINE QLOCAL(app.orders) DESCR('Order intake') +
       MAXDEPTH(100) DEFPSIST(YES) BOTHRESH(3) BOQNAME(APP.BACKOUT)
DEFINE QLOCAL(APP.ORDERS) NOREPLACE
DEFINE QLOCAL(APP.COPY) LIKE(APP.ORDERS)
DEFINE QALIAS(APP.ALIAS) TARGET(APP.ORDERS)
ALTER QLOCAL(APP.ORDERS) MAXDEPTH(200)
DISPLAY QLOCAL(APP.*) ALL
";
    let r = run(&qm, script);
    assert!(r[0].ok, "{}", r[0].message);
    assert!(!r[1].ok && r[1].reason == Some(2100), "{}", r[1].message);
    assert!(r[2].ok && r[3].ok && r[4].ok);
    let blocks = &r[5].objects;
    assert_eq!(blocks.len(), 2, "{blocks:?}");
    let orders = blocks
        .iter()
        .find(|b| attr(b, "QUEUE") == "APP.ORDERS")
        .unwrap();
    assert_eq!(attr(orders, "MAXDEPTH"), "200", "ALTER changed MAXDEPTH");
    assert_eq!(
        attr(orders, "DESCR"),
        "Order intake",
        "ALTER kept what it did not name"
    );
    assert_eq!(attr(orders, "DEFPSIST"), "YES");
    assert_eq!(attr(orders, "BOQNAME"), "APP.BACKOUT");
    assert_eq!(attr(orders, "CURDEPTH"), "0");
    let copy = blocks
        .iter()
        .find(|b| attr(b, "QUEUE") == "APP.COPY")
        .unwrap();
    assert_eq!(
        attr(copy, "MAXDEPTH"),
        "100",
        "LIKE copied the attributes at the time"
    );
    // Without ALL: the identifying attributes and those asked for.
    let r = run(&qm, "DIS QUEUE(APP.ALIAS) TARGET");
    assert_eq!(
        r[0].objects[0],
        vec![
            ("QUEUE".into(), "APP.ALIAS".into()),
            ("TYPE".into(), "QALIAS".into()),
            ("TARGET".into(), "APP.ORDERS".into())
        ]
    );
    let r = run(
        &qm,
        "DELETE QALIAS(APP.ALIAS)\nDELETE QLOCAL(APP.COPY)\nDISPLAY QLOCAL(APP.COPY)",
    );
    assert!(r[0].ok && r[1].ok);
    assert_eq!(r[2].reason, Some(2085));
}

#[test]
fn errors_point_at_the_wrong_token() {
    let (_d, qm) = qm();
    let r = run(
        &qm,
        "DEFINE QLOCAL(Q1) MAXDEPTH(lots)\nDEFINE QLOCAL(Q2) COLOUR(BLUE)\nDEFINE QLOCAL Q3\nFROB QLOCAL(Q4)\nDEFINE QALIAS(A1) MAXDEPTH(5) TARGET(Q1)",
    );
    assert!(
        r[0].message.contains("column 19 ('MAXDEPTH(lots)')")
            && r[0].message.contains("not a number"),
        "{}",
        r[0].message
    );
    assert!(
        r[1].message.contains("COLOUR is not a QLOCAL keyword"),
        "{}",
        r[1].message
    );
    assert!(r[2].message.contains("column 15"), "{}", r[2].message);
    assert!(
        r[3].message.contains("column 1") && r[3].message.contains("expected a verb"),
        "{}",
        r[3].message
    );
    assert!(
        r[4].message.contains("not an attribute of QALIAS"),
        "{}",
        r[4].message
    );
    assert!(r.iter().all(|x| !x.ok));
    // runmqsc's count: what the parser refused (DEFINE QLOCAL Q3, FROB) are syntax errors,
    // the rest could not be processed; each syntax error shows the segment up to its fault.
    let syntax: Vec<bool> = r.iter().map(|x| x.syntax).collect();
    assert_eq!(syntax, [false, false, true, true, false], "{r:?}");
    assert!(
        r[3].message.starts_with(
            "AMQ8405I: Syntax error detected at or near end of command segment below:-\nFROB"
        ),
        "{}",
        r[3].message
    );
    assert!(
        render_text(&r).ends_with(
            "5 MQSC commands read.\n2 commands have a syntax error.\n\
             3 valid MQSC commands could not be processed.\n"
        ),
        "{}",
        render_text(&r)
    );
    assert_eq!(
        qm.queue_defs()
            .iter()
            .filter(|d| !d.name.starts_with("SYSTEM."))
            .count(),
        0,
        "nothing was defined"
    );
}

#[test]
fn status_qmgr_json_and_later_verbs() {
    let (_d, qm) = qm();
    let r = run(
        &qm,
        "DEFINE QL(S1)\nDIS QSTATUS(S1)\nALTER QMGR DESCR('test qm') MAXMSGL(1048576)\nDIS QMGR\nDEFINE CHANNEL(TO.QM2) CHLTYPE(SDR) CONNAME('127.0.0.1(1414)') XMITQ(QM2) SPLPROT(REMOVE)\nCLEAR QLOCAL(S1)",
    );
    assert_eq!(attr(&r[1].objects[0], "CURDEPTH"), "0");
    assert_eq!(attr(&r[1].objects[0], "IPPROCS"), "0");
    assert!(r[2].ok);
    assert_eq!(attr(&r[3].objects[0], "DESCR"), "test qm");
    assert_eq!(attr(&r[3].objects[0], "MAXMSGL"), "1048576");
    assert!(r[4].ok, "{}", r[4].message);
    assert!(r[5].ok);
    let c = run(
        &qm,
        "DISPLAY CHANNEL(TO.QM2) SPLPROT BATCHINT NPMSPEED\nALTER CHANNEL(TO.QM2) SPLPROT(ASPOLICY)\nDEFINE CHANNEL(IN.QM2) CHLTYPE(RCVR) SPLPROT(REMOVE)\nSTART CHANNEL(TO.QM2)\nALTER QMGR DEFXMITQ(QM2)\nDISPLAY QMGR DEFXMITQ",
    );
    assert_eq!(attr(&c[0].objects[0], "SPLPROT"), "REMOVE");
    assert_eq!(attr(&c[0].objects[0], "NPMSPEED"), "FAST");
    assert!(
        !c[1].ok
            && c[1]
                .message
                .contains("SPLPROT(ASPOLICY) applies only to RCVR and RQSTR"),
        "{}",
        c[1].message
    );
    assert!(
        !c[2].ok
            && c[2]
                .message
                .contains("SPLPROT(REMOVE) applies only to SDR and SVR"),
        "{}",
        c[2].message
    );
    // An embedded queue manager has no channel initiator.
    assert!(
        !c[3].ok && c[3].message.contains("no channel initiator"),
        "{}",
        c[3].message
    );
    assert_eq!(attr(&c[5].objects[0], "DEFXMITQ"), "QM2");
    let c = run(
        &qm,
        "DEFINE CHANNEL(APP.SVRCONN) CHLTYPE(SVRCONN) MCAUSER('app') SSLCIPH(ANY)\nDISPLAY CHANNEL(*) ALL\nDEFINE CHANNEL(BAD) CHLTYPE(SDR)",
    );
    assert!(c[0].ok, "{}", c[0].message);
    let names: Vec<&str> = c[1].objects.iter().map(|b| attr(b, "CHANNEL")).collect();
    // MQ's default channels are there too (a DEFINE without LIKE copies them).
    assert_eq!(
        names,
        vec![
            "APP.SVRCONN",
            "SYSTEM.DEF.AMQP",
            "SYSTEM.DEF.RECEIVER",
            "SYSTEM.DEF.REQUESTER",
            "SYSTEM.DEF.SENDER",
            "SYSTEM.DEF.SERVER",
            "SYSTEM.DEF.SVRCONN",
            "TO.QM2"
        ]
    );
    assert_eq!(attr(&c[1].objects[0], "MCAUSER"), "app");
    assert!(
        !c[2].ok && c[2].message.contains("needs CONNAME"),
        "{}",
        c[2].message
    );
    let json: serde_json::Value = serde_json::from_str(&render_json(&r)).unwrap();
    assert_eq!(json[3]["objects"][0]["QMNAME"], "QM1");
    assert_eq!(json[4]["ok"], true);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]
    #[test]
    fn any_script_gets_responses_not_panics(script in "(\\PC{0,40}\n){0,5}") {
        thread_local! {
            static QM: (tempfile::TempDir, Arc<QueueManager>) = qm();
        }
        QM.with(|(_, qm)| {
            let r = run(qm, &script);
            let _ = render_text(&r);
            let _ = render_json(&r);
        });
    }

    #[test]
    fn structured_garbage(words in proptest::collection::vec("(DEFINE|DISPLAY|ALTER|QLOCAL|QMGR|\\(|\\)|'|MAXDEPTH|[A-Z]{1,5}|[0-9]{1,3})", 0..12)) {
        thread_local! {
            static QM: (tempfile::TempDir, Arc<QueueManager>) = qm();
        }
        QM.with(|(_, qm)| {
            let _ = run(qm, &words.join(" "));
        });
    }
}

#[test]
fn policies_set_add_remove_display_and_export_round_trip() {
    let (_d, qm) = qm();
    let r = run(
        &qm,
        "SET POLICY(APP.Q) SIGNALG(SHA256) ENCALG(AES256) RECIP('CN=bob,O=Example') SIGNER('CN=alice,O=Example')\n\
         SET POLICY(APP.Q) RECIP('CN=carol,O=Example') ACTION(ADD)\n\
         SET POLICY(APP.Q) SIGNER('CN=alice,O=Example') ACTION(REMOVE)\n\
         SET POLICY(CONF.Q) ENCALG(AES128) RECIP('CN=bob,O=Example') KEYREUSE(32) TOLERATE\n\
         SET POLICY(BAD.Q) SIGNALG(MD5)\n\
         SET POLICY(BAD.Q) ENCALG(AES256)\n\
         DISPLAY POLICY(APP.Q)\n\
         DISPLAY POLICY(NONE.Q)",
    );
    assert!(
        r[0].ok && r[1].ok && r[2].ok && r[3].ok,
        "{:?}",
        r.iter().map(|x| &x.message).collect::<Vec<_>>()
    );
    assert!(r[4].message.contains("insecure"), "{}", r[4].message);
    assert!(
        r[5].message.contains("needs at least one RECIP"),
        "{}",
        r[5].message
    );
    let b = &r[6].objects[0];
    let recips: Vec<&str> = b
        .iter()
        .filter(|(k, _)| k == "RECIP")
        .map(|(_, v)| v.as_str())
        .collect();
    assert_eq!(recips, vec!["CN=bob,O=Example", "CN=carol,O=Example"]);
    assert!(!b.iter().any(|(k, _)| k == "SIGNER"), "{b:?}");
    assert_eq!(attr(b, "QOP"), "PRIVACY");
    assert!(
        r[7].ok && r[7].message.contains("has no security policy"),
        "{}",
        r[7].message
    );
    // Export, delete all, replay: identical export.
    let export = |qm: &Arc<QueueManager>| {
        qm.policies()
            .iter()
            .map(sealmq_mqsc::exec::policy_command)
            .collect::<Vec<_>>()
            .join("\n")
    };
    let before = export(&qm);
    assert!(
        before.contains("KEYREUSE(32)") && before.contains("TOLERATE"),
        "{before}"
    );
    for p in qm.policies() {
        sealmq_engine::policies::delete(&qm, &p.name).unwrap();
    }
    assert!(qm.policies().is_empty());
    let r = run(&qm, &before);
    assert!(
        r.iter().all(|x| x.ok),
        "{:?}",
        r.iter().map(|x| &x.message).collect::<Vec<_>>()
    );
    assert_eq!(export(&qm), before);
    // Policies live on the policy queue and survive a restart.
    assert_eq!(qm.depth("SYSTEM.PROTECTION.POLICY.QUEUE").unwrap(), 2);
    let json: serde_json::Value =
        serde_json::from_str(&render_json(&run(&qm, "DISPLAY POLICY(APP.Q)"))).unwrap();
    assert_eq!(json[0]["objects"][0]["RECIP"].as_array().unwrap().len(), 2);
}

/// DISPLAY output keeps every attribute readable as `KEY(value)` after whitespace, two to a
/// line, and a value too long for its column on a line of its own.
#[test]
fn long_values_never_run_into_the_next_attribute() {
    let (_d, qm) = qm();
    let descr = "a description long enough to overflow its column";
    let r = run(
        &qm,
        &format!(
            "DEFINE QLOCAL(LONG.Q) DESCR('{descr}')\nDISPLAY QLOCAL(LONG.Q) DESCR MAXDEPTH CURDEPTH"
        ),
    );
    assert!(r.iter().all(|x| x.ok), "{r:?}");
    let text = render_text(&r);
    let lines: Vec<&str> = text.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.trim_start().starts_with("DESCR("))
        .expect("DESCR shown");
    assert_eq!(lines[at].trim(), format!("DESCR({descr})"), "{text}");
    for key in ["QUEUE(LONG.Q)", "MAXDEPTH(", "CURDEPTH("] {
        assert!(
            lines
                .iter()
                .any(|l| l.trim_start().starts_with(key) || l.contains(&format!(" {key}"))),
            "{key} not at a word start in {text}"
        );
    }
}

#[test]
fn several_unknown_keywords_are_all_named_and_display_filters_with_where() {
    let (_d, qm) = qm();
    let r = sealmq_mqsc::run(
        &qm,
        "DEFINE QLOCAL(Q1) FOO BAR(1) MAXDEPTH(9)\n\
         DEFINE QLOCAL(DEEP) MAXDEPTH(20)\n\
         DISPLAY QLOCAL(*) WHERE(MAXDEPTH GT 10) FOO QUX\n\
         DISPLAY QLOCAL(*) WHERE(MAXDEPTH LT 100)\n\
         DISPLAY QLOCAL(*) WHERE(MAXDEPTH)\n",
    );
    assert!(
        !r[0].ok && r[0].message.contains("FOO, BAR are not QLOCAL keywords"),
        "{}",
        r[0].message
    );
    assert!(qm.queue_def("Q1").is_err(), "nothing half-defined");
    assert!(
        !r[2].ok && r[2].message.contains("FOO, QUX are not"),
        "{}",
        r[2].message
    );
    assert!(r[3].ok);
    let names: Vec<&str> = r[3].objects.iter().map(|b| b[0].1.as_str()).collect();
    assert_eq!(names, ["DEEP"], "only the queue under 100");
    assert!(
        r[3].objects[0]
            .iter()
            .any(|(k, v)| k == "MAXDEPTH" && v == "20")
    );
    assert!(
        !r[4].ok && r[4].message.contains("WHERE"),
        "{}",
        r[4].message
    );
}

/// MAXFSIZE takes MQ's range (MB) or DEFAULT, shows DEFAULT when not set, and a persistent put
/// that would take the queue's files past it gets 2056 until messages are got.
#[test]
fn maxfsize_is_checked_shown_and_enforced() {
    use sealmq_engine::{GetOptions, Md, OpenOptions, Persistence, PutOptions};
    let (_d, qm) = qm();
    let r = run(
        &qm,
        "DEFINE QLOCAL(F.Q) MAXFSIZE(19)\n\
         DEFINE QLOCAL(F.Q) MAXFSIZE(BIG)\n\
         DEFINE QLOCAL(F.Q) MAXFSIZE(267386881)\n\
         DEFINE QALIAS(F.A) TARGET(F.Q) MAXFSIZE(20)\n\
         DEFINE QLOCAL(F.Q)\n\
         DISPLAY QLOCAL(F.Q) MAXFSIZE\n\
         ALTER QLOCAL(F.Q) MAXFSIZE(-1)\n\
         DISPLAY QLOCAL(F.Q) MAXFSIZE\n\
         ALTER QLOCAL(F.Q) MAXFSIZE(20)\n\
         DISPLAY QLOCAL(F.Q) MAXFSIZE",
    );
    for (i, want) in [(0, "'19'"), (1, "'BIG'"), (2, "'267386881'")] {
        assert!(!r[i].ok, "{i}: {}", r[i].message);
        assert!(
            r[i].message.contains(want) && r[i].message.contains("20..267386880"),
            "{i}: {}",
            r[i].message
        );
    }
    assert!(
        !r[3].ok && r[3].message.contains("not an attribute"),
        "{}",
        r[3].message
    );
    assert!(r[4].ok && r[6].ok && r[8].ok);
    assert_eq!(attr(&r[5].objects[0], "MAXFSIZE"), "DEFAULT");
    assert_eq!(attr(&r[7].objects[0], "MAXFSIZE"), "DEFAULT");
    assert_eq!(attr(&r[9].objects[0], "MAXFSIZE"), "20");

    // 1 MB persistent messages: the 20th or so no longer fits in 20 MB.
    let c = Connection::connect(&qm, "t", "t").unwrap();
    let h = c.open("F.Q", OpenOptions::output()).unwrap();
    let put = |c: &sealmq_engine::Connection| {
        let mut md = Md {
            persistence: Persistence::Persistent,
            ..Md::default()
        };
        c.put(&h, &mut md, &vec![7u8; 1 << 20], PutOptions::default())
    };
    let mut fitted = 0;
    let refused = loop {
        match put(&c) {
            Ok(_) => fitted += 1,
            Err(e) => break e,
        }
        assert!(fitted < 40, "MAXFSIZE(20) never refused a put");
    };
    assert_eq!(
        refused.reason,
        sealmq_types::ReasonCode::QSpaceNotAvailable,
        "{refused}"
    );
    assert!(refused.to_string().contains("MAXFSIZE"), "{refused}");
    assert!((15..=20).contains(&fitted), "{fitted} puts of 1 MB fitted");
    let st = run(&qm, "DISPLAY QSTATUS(F.Q) CURDEPTH CURFSIZE CURMAXFS");
    assert_eq!(attr(&st[0].objects[0], "CURMAXFS"), "20");
    assert_eq!(attr(&st[0].objects[0], "CURDEPTH"), fitted.to_string());
    // Nothing committed was lost; once messages are got (and a checkpoint returns their
    // space) puts fit again.
    let g = c.open("F.Q", OpenOptions::input()).unwrap();
    for _ in 0..fitted {
        c.get(&g, GetOptions::default()).unwrap();
    }
    qm.checkpoint().unwrap();
    put(&c).unwrap();
}

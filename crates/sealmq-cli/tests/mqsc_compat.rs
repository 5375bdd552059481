//! MQ administrators' habits (issue 12), through a real queue manager: DISPLAY filtered with
//! WHERE on queues and channels, unknown keywords all named.

mod common;
use common::*;

#[test]
fn where_filters_queues_and_channels() {
    let h = Home::new();
    h.ok(&["create", "QW"]);
    h.ok(&["start", "QW", "--background"]);
    h.mqsc(
        "QW",
        "DEFINE QLOCAL(APP.BUSY)\nDEFINE QLOCAL(APP.IDLE)\n\
         DEFINE CHANNEL(APP.SVRCONN) CHLTYPE(SVRCONN)\n\
         DEFINE CHANNEL(TO.QM2) CHLTYPE(SDR) CONNAME('127.0.0.1(1)') XMITQ(APP.IDLE)\n",
    );
    h.ok(&["put", "QW", "APP.BUSY", "--message", "one"]);
    let out = h.mqsc("QW", "DISPLAY QLOCAL(*) WHERE(CURDEPTH GT 0)\n");
    assert!(
        out.contains("QUEUE(APP.BUSY)") && out.contains("CURDEPTH(1)"),
        "{out}"
    );
    assert!(!out.contains("APP.IDLE"), "{out}");
    let out = h.mqsc("QW", "DISPLAY QSTATUS(APP.*) WHERE(CURDEPTH EQ 0)\n");
    assert!(
        out.contains("APP.IDLE") && !out.contains("APP.BUSY"),
        "{out}"
    );
    let out = h.mqsc("QW", "DISPLAY CHANNEL(*) WHERE(CHLTYPE EQ SDR) CONNAME\n");
    assert!(
        out.contains("CHANNEL(TO.QM2)") && !out.contains("APP.SVRCONN"),
        "{out}"
    );
    assert!(out.contains("CONNAME(127.0.0.1(1))"), "{out}");
    let out = h.mqsc("QW", "DISPLAY CHANNEL(*) WHERE(CHANNEL LK APP.*)\n");
    assert!(
        out.contains("APP.SVRCONN") && !out.contains("TO.QM2"),
        "{out}"
    );
    // Wrong input: every unknown keyword named, a malformed WHERE refused; nothing defined.
    let o = h.run(
        &["mqsc", "QW"],
        Some("DEFINE QLOCAL(X) FOOBAR SHINY(1)\nDIS QL(X) FOOBAR\nDIS QL(*) WHERE(CURDEPTH)\n"),
    );
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(!o.status.success());
    assert!(
        out.contains("FOOBAR, SHINY are not QLOCAL keywords"),
        "{out}"
    );
    assert!(
        out.contains("no local queue matches 'X'") || out.contains("2085"),
        "{out}"
    );
    assert!(
        out.contains("WHERE: expects") || out.contains("WHERE"),
        "{out}"
    );
    h.ok(&["stop", "QW"]);
}

#[test]
fn scripts_as_mq_writes_them_trptype_targq_and_end() {
    let h = Home::new();
    h.ok(&["create", "QE"]);
    h.ok(&["start", "QE", "--background"]);
    let out = h.mqsc(
        "QE",
        "DEFINE QLOCAL(BASE.Q)\n\
         DEFINE QALIAS(ALIAS.Q) TARGQ(BASE.Q) TARGTYPE(QUEUE)\n\
         DEFINE CHANNEL(APP.SVRCONN) CHLTYPE(SVRCONN) TRPTYPE(TCP)\n\
         DISPLAY QALIAS(ALIAS.Q) TARGET TARGTYPE\n\
         DISPLAY CHANNEL(APP.SVRCONN) TRPTYPE\n\
         END\n\
         DEFINE QLOCAL(AFTER.END)\n",
    );
    assert!(
        out.contains("TARGET(BASE.Q)") && out.contains("TARGTYPE(QUEUE)"),
        "{out}"
    );
    assert!(out.contains("TRPTYPE(TCP)"), "{out}");
    assert!(
        out.contains("     6 : END\n5 MQSC commands read.\nNo commands have a syntax error.\n")
            && !out.contains("AFTER.END"),
        "END ends the script: {out}"
    );
    let o = h.run(
        &["mqsc", "QE"],
        Some("DEFINE CHANNEL(X) CHLTYPE(SVRCONN) TRPTYPE(LU62)\nDEFINE QALIAS(T) TARGET(BASE.Q) TARGTYPE(TOPIC)\n"),
    );
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("TCP only") && out.contains("publish/subscribe"),
        "{out}"
    );
    let o = h.run(&["mqsc", "QE"], Some("DISPLAY QLOCAL(AFTER.END)\n"));
    assert!(!o.status.success(), "nothing after END ran");
    h.ok(&["stop", "QE"]);
}

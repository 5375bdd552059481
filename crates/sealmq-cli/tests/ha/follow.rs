//! Channels follow a replicated queue manager (issue 26, item 4): a sender whose CONNAME lists
//! the group's three instances reaches the active one, passing over the replicas (each answers
//! 2059), and after the active instance is killed mid-stream settles its in-doubt batch with
//! the new active instance: every persistent message arrives exactly once.

use super::{Group, LONG, QM};
use common::Home;
use sealmq_testkit::wait_for;

use super::common;

#[test]
fn a_sender_with_a_conname_list_follows_a_failover_and_delivers_every_message_once() {
    let (g, a) = Group::with_queue();
    g.instances[a].home.mqsc(
        QM,
        "DEFINE CHANNEL(SRC.HAQM) CHLTYPE(RCVR)\n\
         SET CHLAUTH('SRC.HAQM') TYPE(BLOCKUSER) USERLIST('nobody')\n",
    );
    // The list names the replicas first: the sender must pass over them.
    let mut order: Vec<usize> = (0..3).filter(|i| *i != a).collect();
    order.push(a);
    let list: Vec<String> = order
        .iter()
        .map(|i| format!("127.0.0.1({})", g.instances[*i].app_port))
        .collect();
    let src = Home::new();
    src.ok(&["create", "SRC"]);
    src.ok(&["start", "SRC", "--background"]);
    src.mqsc(
        "SRC",
        &format!(
            "DEFINE QLOCAL(HAQM) USAGE(XMITQ) MAXDEPTH(100000)\n\
             DEFINE CHANNEL(SRC.HAQM) CHLTYPE(SDR) CONNAME('{}') XMITQ(HAQM) \
             BATCHSZ(20) SHORTTMR(1) SHORTRTY(120)\n\
             DEFINE QREMOTE(HA.REMOTE) RNAME(HA.Q) RQMNAME({QM}) XMITQ(HAQM)\n",
            list.join(",")
        ),
    );
    let total = 3000u64;
    src.ok(&[
        "put",
        "SRC",
        "HA.REMOTE",
        "--size",
        "256",
        "--count",
        &total.to_string(),
        "--persistent",
        "--syncpoint",
        "50",
    ]);
    src.mqsc("SRC", "START CHANNEL(SRC.HAQM)\n");
    let active = &g.instances[a].home;
    wait_for(LONG, "the stream to begin", || {
        active.depth(QM, "HA.Q") >= 300
    });
    let st = src.mqsc("SRC", "DISPLAY CHSTATUS(SRC.HAQM) CONNAME\n");
    assert!(
        st.contains(&format!("127.0.0.1({})", g.instances[a].app_port)),
        "the sender should be connected to the active instance: {st}"
    );
    let left = src.depth("SRC", "HAQM");
    assert!(
        left > 0,
        "the stream ended before the active instance could be killed"
    );
    g.instances[a].home.kill9(QM);
    let b = g.wait_active();
    assert_ne!(a, b);
    g.start(a);
    let active = &g.instances[b].home;
    wait_for(LONG, "every message at the new active instance", || {
        src.depth("SRC", "HAQM") == 0 && active.depth(QM, "HA.Q") >= total
    });
    let out = active.ok(&["get", QM, "HA.Q", "--all", "--verify"]);
    assert!(
        out.contains(&format!("got {total} ok {total} corrupt 0 duplicate 0")),
        "expected exactly {total} intact messages after the failover: {out}"
    );
    let st = src.mqsc("SRC", "DISPLAY CHSTATUS(SRC.HAQM) CONNAME STATUS\n");
    assert!(
        st.contains(&format!("127.0.0.1({})", g.instances[b].app_port)),
        "the sender should have moved to the new active instance: {st}"
    );
    src.ok(&["stop", "SRC"]);
}

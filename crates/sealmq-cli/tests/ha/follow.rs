//! Channels follow a replicated queue manager (issue 26, item 4): a sender whose CONNAME lists
//! the group's three instances reaches the active one, passing over the replicas (each answers
//! 2059), and after the active instance is killed mid-stream settles its in-doubt batch with
//! the new active instance: every persistent message arrives exactly once.

use super::{Group, LONG, QM};
use common::Home;
use sealmq_testkit::wait_for;
use sealmq_types::ReasonCode;

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
    let list = g.list(&g.replicas_first(a));
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
            list
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

/// Runs `app` in the background; once `ready` holds, kills the active instance `a` with
/// `kill -9`, restarts it as a replica, and returns the application's output (it must end
/// well) and the new active instance.
fn across_a_kill(
    g: &Group,
    a: usize,
    mut app: std::process::Command,
    ready: impl Fn() -> bool,
) -> (String, String, usize) {
    use std::process::Stdio;
    let what = format!("{app:?}");
    let mut app = app
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the application");
    // The kill follows the first sight of `ready` at once (the application may be near its
    // end): it is looked at once a round, never again after.
    let every = std::time::Duration::from_millis(50);
    let mut going = false;
    sealmq_testkit::poll(LONG, every, || {
        going = ready();
        going || app.try_wait().ok().flatten().is_some()
    });
    if !going {
        give_up(app, &format!("{what} did not get going before the kill"));
    }
    g.instances[a].home.kill9(QM);
    let b = g.wait_active();
    assert_ne!(a, b);
    g.start(a);
    let out = finish(app, &what);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).to_string(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    );
    assert!(
        out.status.success(),
        "{what} should have followed the failover:\n{stdout}\n{stderr}"
    );
    g.wait_in_sync();
    (stdout, stderr, b)
}

/// Kills an application and fails the test with `why` and what it printed.
fn give_up(mut app: std::process::Child, why: &str) -> ! {
    let _ = app.kill();
    let out = app.wait_with_output().expect("the application's output");
    panic!(
        "{why}:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Waits for an application to end (3 minutes at most: one that does not is killed and its
/// output shown).
fn finish(mut app: std::process::Child, what: &str) -> std::process::Output {
    let every = std::time::Duration::from_millis(50);
    if !sealmq_testkit::poll(3 * LONG, every, || app.try_wait().ok().flatten().is_some()) {
        give_up(app, &format!("{what} did not end after the failover"));
    }
    app.wait_with_output().expect("the application's output")
}

/// [`across_a_kill`] of a `sealmq` application with --reconnect, which must say it saw the
/// connection lost (or the test would prove nothing).
fn sealmq_across_a_kill(
    g: &Group,
    a: usize,
    args: &[&str],
    ready: impl Fn() -> bool,
) -> (String, usize) {
    let (stdout, stderr, b) = across_a_kill(g, a, g.instances[a].home.cmd(args), ready);
    assert!(
        stderr.contains("connection was lost"),
        "{args:?} ended before the kill:\n{stdout}\n{stderr}"
    );
    eprintln!("{args:?} across a kill: {}", stderr.trim());
    (stdout, b)
}

#[test]
fn applications_with_reconnect_follow_failovers_and_lose_or_repeat_nothing() {
    let (g, a) = Group::with_queue();
    let list = app_channel(&g, a, &[0, 1, 2]);
    let app = |extra: &[&str]| -> Vec<String> {
        let mut v: Vec<String> = ["--conn", &list, "--channel", "APP.SVRCONN", "--reconnect"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        v.extend(extra.iter().map(|s| s.to_string()));
        v
    };
    // A producer in units of work of 20: the active instance dies under it.
    let put = app(&[
        "--size",
        "200",
        "--count",
        "2000",
        "--persistent",
        "--syncpoint",
        "20",
    ]);
    let mut args = vec!["put", QM, "HA.Q"];
    args.extend(put.iter().map(String::as_str));
    let depth = |i: usize| g.instances[i].home.depth(QM, "HA.Q");
    let (out, b) = sealmq_across_a_kill(&g, a, &args, || depth(a) >= 400);
    assert!(out.contains("put 2000 message(s)"), "{out}");
    assert_eq!(depth(b), 2000, "every message put once, none lost");
    // A consumer in units of work of 10 (MQGET), then one by asynchronous consume, each
    // message its own unit of work within a window of 20: pushed in one go and settled ten
    // at a time, the 1,000 were all got before the kill could land, and the test proved
    // nothing — on a quiet machine even with the window of 20 (a fresh clone's run, between
    // the depth seen and the kill landing). The consumer by consume therefore has 3,000 more
    // to get, put before it starts.
    let by_get: &[&str] = &["--syncpoint", "10"];
    let by_consume: &[&str] = &["--syncpoint", "1", "--async", "--window", "20"];
    for (a, mode, top_up) in [(b, by_get, 0u64), (usize::MAX, by_consume, 3000)] {
        let a = if a == usize::MAX { g.wait_active() } else { a };
        if top_up > 0 {
            let n = top_up.to_string();
            let fill = app(&[
                "--size",
                "200",
                "--count",
                &n,
                "--persistent",
                "--syncpoint",
                "100",
            ]);
            let mut args = vec!["put", QM, "HA.Q"];
            args.extend(fill.iter().map(String::as_str));
            g.instances[a].home.ok(&args);
        }
        let before = depth(a);
        let n = if top_up > 0 { before } else { 1000 };
        let count = n.to_string();
        let mut get = vec!["--count", &count, "--wait", "10000", "--verify"];
        get.extend(mode);
        let get = app(&get);
        let mut args = vec!["get", QM, "HA.Q"];
        args.extend(get.iter().map(String::as_str));
        let (out, c) = sealmq_across_a_kill(&g, a, &args, || depth(a) + 50 <= before);
        assert!(
            out.contains(&format!("got {n} ok {n} corrupt 0 duplicate 0")),
            "{mode:?}: {out}"
        );
        assert_eq!(depth(c), before - n, "{mode:?}: every message got once");
    }
    // The active instance shows the group in DISPLAY QMSTATUS and its metrics.
    let a = g.wait_active();
    let st = g.instances[a].home.mqsc(QM, "DISPLAY QMSTATUS ALL\n");
    for want in [
        "HA(REPLICATED)",
        "ROLE(ACTIVE)",
        "QUORUM(3/3)",
        &format!("INSTANCE({})", g.instances[a].name),
    ] {
        assert!(st.contains(want), "{want} in {st}");
    }
    assert_eq!(st.matches("INSYNC(YES)").count(), 3, "{st}");
    assert_eq!(st.matches("ROLE(REPLICA)").count(), 2, "{st}");
    let one = g.instances[a].home.mqsc(QM, "DISPLAY QMSTATUS QUORUM\n");
    assert!(
        one.contains("QUORUM(3/3)") && !one.contains("INSYNC"),
        "{one}"
    );
    let batches: u64 = common::field(&st, "REPLBATCH").parse().unwrap_or(0);
    assert!(batches > 0, "{st}");
    let metrics = scrape(g.instances[a].metrics_port);
    for want in [
        "sealmq_ha_instances_in_sync{qmgr=\"HAQM\",instance=",
        "sealmq_ha_elections_total{",
        "sealmq_ha_replication_wait_seconds_total{",
        "sealmq_ha_backlog_bytes{",
        // IBM's Native HA names, per other instance (the dashboards' HA Replica panel).
        "ibmmq_nha_backlog_bytes{qmgr=\"HAQM\",platform=\"UNIX\",nha=",
        "ibmmq_nha_synchronous_log_sent_bytes{",
        "ibmmq_nha_synchronous_compressed_log_sent_bytes{",
    ] {
        assert!(metrics.contains(want), "{want} in\n{metrics}");
    }
    let in_sync = format!(
        "sealmq_ha_instances_in_sync{{qmgr=\"{QM}\",instance=\"{}\"}} 3\n",
        g.instances[a].name
    );
    assert!(metrics.contains(&in_sync), "{in_sync} in\n{metrics}");
}

/// `GET /metrics` of the Prometheus endpoint on `port`.
fn scrape(port: u16) -> String {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).expect("the metrics endpoint");
    let _ = s.write_all(b"GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n");
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out
}

const PROTON: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/amqp/proton_failover.py");

/// The JSON line an AMQP application printed.
fn json(out: &str) -> serde_json::Value {
    out.lines()
        .find_map(|l| serde_json::from_str(l).ok())
        .unwrap_or_else(|| panic!("no JSON line in {out}"))
}

#[test]
fn amqp_clients_with_a_failover_list_follow_a_failover() {
    use sealmq_engine::{GetOptions, Md, OpenOptions};
    let (g, a) = Group::with_queue();
    let port = sealmq_testkit::free_port();
    // The AMQP channel is replicated like every definition: the active instance runs it.
    g.instances[a].home.mqsc(
        QM,
        &format!(
            "DEFINE CHANNEL(APP.AMQP) CHLTYPE(AMQP) PORT({port}) IPADDR(127.0.0.1) MCAUSER('app')\n\
             SET AUTHREC OBJTYPE(QMGR) PRINCIPAL('app') AUTHADD(CONNECT)\n\
             SET AUTHREC PROFILE('HA.Q') OBJTYPE(QUEUE) PRINCIPAL('app') AUTHADD(PUT,GET,BROWSE,INQ)\n\
             START CHANNEL(APP.AMQP)\n"
        ),
    );
    // The list starts with an address where nothing listens: Proton passes it over.
    let urls = format!(
        "amqp://127.0.0.1:{},amqp://127.0.0.1:{port}",
        sealmq_testkit::free_port()
    );
    let proton = |cmd: &str, n: &str| {
        let mut c = std::process::Command::new("python3");
        c.args([PROTON, &urls, cmd, "HA.Q", n]);
        c
    };
    let depth = |i: usize| g.instances[i].home.depth(QM, "HA.Q");
    let (out, _, b) = across_a_kill(&g, a, proton("send", "3000"), || depth(a) >= 300);
    let sent = json(&out);
    assert_eq!(sent["accepted"], 3000, "{out}");
    assert!(
        sent["reconnects"].as_u64() >= Some(1),
        "no failover seen: {out}"
    );
    // Every message accepted is there; one whose outcome the failover cut off may be there
    // twice (AMQP's at-least-once), never more than were sent again.
    let mut c = g.client(b);
    let (h, _) = c.open("HA.Q", OpenOptions::input()).unwrap();
    let mut seen = std::collections::HashMap::<String, u32>::new();
    while let Ok(m) = c.get(h, &GetOptions::default()) {
        *seen
            .entry(String::from_utf8_lossy(&m.payload).to_string())
            .or_default() += 1;
    }
    let twice: u64 = seen.values().map(|k| u64::from(*k - 1)).sum();
    assert_eq!(seen.len(), 3000, "every message accepted is there");
    assert!(
        twice <= sent["resent"].as_u64().unwrap_or(0),
        "{sent} {twice}"
    );
    // A receiver follows the next failover and sees every message.
    let (out_h, _) = c.open("HA.Q", OpenOptions::output()).unwrap();
    for i in 0..2000 {
        let mut md = Md::default();
        c.put(out_h, &mut md, format!("fo {i}").as_bytes(), false)
            .unwrap();
    }
    drop(c);
    let before = depth(b);
    let (out, _, _) = across_a_kill(&g, b, proton("receive", "2000"), || {
        depth(b) + 100 <= before
    });
    let got = json(&out);
    assert_eq!(got["distinct"], 2000, "{out}");
    assert!(
        got["reconnects"].as_u64() >= Some(1),
        "no failover seen: {out}"
    );
}

/// Defines APP.SVRCONN for the application user `app` (on the active instance `a`); the
/// connection list of the instances in `order`.
fn app_channel(g: &Group, a: usize, order: &[usize]) -> String {
    g.instances[a].home.mqsc(
        QM,
        "DEFINE CHANNEL(APP.SVRCONN) CHLTYPE(SVRCONN) MCAUSER('app')\n\
         SET AUTHREC OBJTYPE(QMGR) PRINCIPAL('app') AUTHADD(CONNECT)\n\
         SET AUTHREC PROFILE('HA.Q') OBJTYPE(QUEUE) PRINCIPAL('app') AUTHADD(PUT,GET,BROWSE)\n",
    );
    g.list(order)
}

#[test]
fn an_application_with_a_call_timeout_leaves_a_hung_active_instance() {
    use std::process::Stdio;
    let (g, a) = Group::with_queue();
    // The hung instance last: an address that accepts and never answers costs a connection
    // its Hello wait (30 s) before the next is tried.
    let list = app_channel(&g, a, &g.replicas_first(a));
    let app = g.instances[a]
        .home
        .cmd(&[
            "put",
            QM,
            "HA.Q",
            "--conn",
            &list,
            "--channel",
            "APP.SVRCONN",
            "--reconnect",
            "--call-timeout",
            "3",
            "--size",
            "200",
            "--count",
            "1500",
            "--persistent",
            "--syncpoint",
            "20",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the application");
    let depth = |i: usize| g.instances[i].home.depth(QM, "HA.Q");
    wait_for(LONG, "the application to get going", || depth(a) >= 300);
    // The active instance hangs (SIGSTOP): its connections stay open and say nothing.
    super::signal(&g, a, "-STOP");
    let b = g.wait_active();
    assert_ne!(a, b);
    let out = finish(app, "the producer");
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(
        out.status.success(),
        "the application should have left the hung instance: {stderr}"
    );
    assert!(stderr.contains("did not answer within"), "{stderr}");
    // Woken, it finds it lost the role and comes back as a replica.
    super::signal(&g, a, "-CONT");
    wait_for(LONG, "the woken instance to refuse applications", || {
        sealmq_client::Client::connect_local(&g.dir(a), "ha-probe")
            .is_err_and(|e| e.reason == ReasonCode::QMgrNotAvailable)
    });
    g.wait_in_sync();
    let b = g.wait_active();
    let got = g.instances[b]
        .home
        .ok(&["get", QM, "HA.Q", "--all", "--verify"]);
    assert!(
        got.contains("got 1500 ok 1500 corrupt 0 duplicate 0"),
        "every message put once: {got}"
    );
}

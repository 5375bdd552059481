//! MQ administrators' habits (issue 12) through real processes: default objects that DEFINE
//! copies, LISTENER objects (START/STOP, CONTROL(QMGR), a port in use), triggering (a trigger
//! monitor starting a program with the trigger message; a triggered transmission queue
//! starting its sender channel), SERVICE objects (a server service started and stopped with
//! the queue manager, a command service, refusals), a SVRCONN's DISCINT, and `stop
//! --immediate` never returning early.

mod common;

use common::{Home, field, free_port, wait_for};
use std::time::Duration;

const LONG: Duration = Duration::from_secs(60);

#[test]
fn define_without_like_copies_the_default_object() {
    let h = Home::new();
    h.ok(&["create", "QD"]);
    h.ok(&["start", "QD", "--background"]);
    let out = h.mqsc(
        "QD",
        "DISPLAY QUEUE(SYSTEM.DEFAULT.*)\nDISPLAY CHANNEL(SYSTEM.DEF.*)\n\
         DISPLAY LISTENER(SYSTEM.DEFAULT.LISTENER.TCP)\nDISPLAY AUTHINFO(SYSTEM.DEFAULT.AUTHINFO.IDPWOS)\n\
         DISPLAY QLOCAL(SYSTEM.CHANNEL.INITQ)\n",
    );
    for name in [
        "SYSTEM.DEFAULT.LOCAL.QUEUE",
        "SYSTEM.DEFAULT.MODEL.QUEUE",
        "SYSTEM.DEFAULT.ALIAS.QUEUE",
        "SYSTEM.DEFAULT.REMOTE.QUEUE",
        "SYSTEM.DEF.SENDER",
        "SYSTEM.DEF.RECEIVER",
        "SYSTEM.DEF.SERVER",
        "SYSTEM.DEF.REQUESTER",
        "SYSTEM.DEF.SVRCONN",
        "SYSTEM.DEFAULT.LISTENER.TCP",
        "SYSTEM.DEFAULT.AUTHINFO.IDPWOS",
        "SYSTEM.CHANNEL.INITQ",
    ] {
        assert!(out.contains(&format!("({name})")), "{name} missing: {out}");
    }
    // Altering a default changes later definitions, not earlier ones, as in MQ.
    h.mqsc(
        "QD",
        "DEFINE QLOCAL(BEFORE)\n\
         ALTER QLOCAL(SYSTEM.DEFAULT.LOCAL.QUEUE) MAXDEPTH(1234) DEFPSIST(YES) NOSHARE\n\
         ALTER CHANNEL(SYSTEM.DEF.SVRCONN) CHLTYPE(SVRCONN) MAXMSGL(1000000)\n\
         DEFINE QLOCAL(AFTER)\nDEFINE CHANNEL(APP.SVRCONN) CHLTYPE(SVRCONN)\n",
    );
    let after = h.mqsc("QD", "DISPLAY QLOCAL(AFTER) MAXDEPTH DEFPSIST NOSHARE\n");
    assert_eq!(field(&after, "MAXDEPTH"), "1234", "{after}");
    assert_eq!(field(&after, "DEFPSIST"), "YES", "{after}");
    let before = h.mqsc("QD", "DISPLAY QLOCAL(BEFORE) MAXDEPTH\n");
    assert_eq!(field(&before, "MAXDEPTH"), "5000", "{before}");
    let ch = h.mqsc("QD", "DISPLAY CHANNEL(APP.SVRCONN) MAXMSGL\n");
    assert_eq!(field(&ch, "MAXMSGL"), "1000000", "{ch}");
    // A restart keeps every object (no default object defined twice).
    h.ok(&["stop", "QD"]);
    h.ok(&["start", "QD", "--background"]);
    let after = h.mqsc("QD", "DISPLAY QLOCAL(AFTER) MAXDEPTH\n");
    assert_eq!(field(&after, "MAXDEPTH"), "1234", "{after}");
    h.ok(&["stop", "QD"]);
}

#[test]
fn listeners_start_stop_with_the_queue_manager_and_say_why_they_cannot() {
    let h = Home::new();
    h.ok(&["create", "QL"]);
    h.ok(&["start", "QL", "--background"]);
    let (p1, p2) = (free_port(), free_port());
    h.mqsc(
        "QL",
        &format!(
            "DEFINE LISTENER(L.AUTO) TRPTYPE(TCP) PORT({p1}) IPADDR('127.0.0.1') CONTROL(QMGR)\n\
             DEFINE LISTENER(L.MANUAL) TRPTYPE(TCP) PORT({p2}) IPADDR('127.0.0.1') BACKLOG(20)\n\
             SET CHLAUTH('SYSTEM.DEF.SVRCONN') TYPE(ADDRESSMAP) ADDRESS('127.0.0.1') USERSRC(MAP) MCAUSER('app') ACTION(REPLACE)\n\
             SET AUTHREC PROFILE('APP.Q') OBJTYPE(QUEUE) PRINCIPAL('app') AUTHADD(PUT,GET)\n\
             SET AUTHREC OBJTYPE(QMGR) PRINCIPAL('app') AUTHADD(CONNECT)\n\
             DEFINE QLOCAL(APP.Q)\n\
             START LISTENER(L.MANUAL)\n"
        ),
    );
    let st = h.mqsc("QL", "DISPLAY LSSTATUS(*) ALL\n");
    assert!(
        st.contains("LISTENER(L.MANUAL)") && st.contains("STATUS(RUNNING)"),
        "{st}"
    );
    assert_eq!(field(&st, "PORT"), p2.to_string(), "{st}");
    // CONTROL(MANUAL) does not start with a START of the queue manager's; QMGR does.
    assert!(!st.contains("L.AUTO"), "{st}");
    let conn = format!("127.0.0.1:{p2}");
    h.ok(&[
        "put",
        "QL",
        "APP.Q",
        "--message",
        "over L.MANUAL",
        "--persistent",
        "--conn",
        &conn,
    ]);
    // A second listener on a port in use: refused, saying so; nothing half-started.
    let o = h.run(
        &["mqsc", "QL"],
        Some(&format!(
            "DEFINE LISTENER(L.CLASH) TRPTYPE(TCP) PORT({p2}) IPADDR('127.0.0.1')\nSTART LISTENER(L.CLASH)\n\
             DEFINE LISTENER(L.BAD) TRPTYPE(LU62)\n"
        )),
    );
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("the port is in use"), "{out}");
    assert!(out.contains("sealmq listens over TCP only"), "{out}");
    let st = h.mqsc("QL", "DISPLAY LSSTATUS(*)\n");
    assert!(!st.contains("L.CLASH"), "{st}");
    assert!(
        h.run(&["mqsc", "QL"], Some("DISPLAY LISTENER(L.BAD)\n"))
            .status
            .code()
            != Some(0)
    );
    // STOP frees the port; a running listener cannot be deleted.
    let o = h.run(&["mqsc", "QL"], Some("DELETE LISTENER(L.MANUAL)\n"));
    assert!(String::from_utf8_lossy(&o.stdout).contains("STOP LISTENER(L.MANUAL) first"));
    h.mqsc("QL", "STOP LISTENER(L.MANUAL)\n");
    wait_for(LONG, "the port to be free", || {
        std::net::TcpListener::bind(("127.0.0.1", p2)).is_ok()
    });
    // Restart: CONTROL(QMGR) comes up with the queue manager.
    h.ok(&["stop", "QL"]);
    h.ok(&["start", "QL", "--background"]);
    let st = h.mqsc("QL", "DISPLAY LSSTATUS(L.AUTO) CONTROL\n");
    assert_eq!(field(&st, "CONTROL"), "QMGR", "{st}");
    let conn = format!("127.0.0.1:{p1}");
    h.ok(&[
        "put",
        "QL",
        "APP.Q",
        "--message",
        "over L.AUTO",
        "--conn",
        &conn,
    ]);
    assert_eq!(h.depth("QL", "APP.Q"), 2);
    h.ok(&["stop", "QL"]);
    // Stopped with the queue manager: the port is free again.
    assert!(std::net::TcpListener::bind(("127.0.0.1", p1)).is_ok());
}

fn executable(path: &std::path::Path, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn alive(pid: &str) -> bool {
    // A zombie is not alive: the queue manager must reap what it started.
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        s.rsplit(')')
            .next()
            .is_some_and(|r| !r.trim_start().starts_with('Z'))
    })
}

#[test]
fn services_start_and_stop_with_the_queue_manager_and_say_why_they_cannot() {
    let h = Home::new();
    h.ok(&["create", "QS"]);
    h.ok(&["start", "QS", "--background"]);
    let d = h.dir.path();
    let server = d.join("server.sh");
    executable(
        &server,
        "#!/bin/sh\necho \"args:$#:$1|$2|$3\"\nexec sleep 600\n",
    );
    let command = d.join("command.sh");
    executable(
        &command,
        &format!(
            "#!/bin/sh\necho \"ran $1\" >> {}\n",
            d.join("cmd.log").display()
        ),
    );
    // Nothing half-defined: a relative program and unknown keywords are refused.
    let o = h.run(
        &["mqsc", "QS"],
        Some("DEFINE SERVICE(BAD) STARTCMD('runmqtrm')\nDEFINE SERVICE(BAD) FOO(1) BAR\nDISPLAY SERVICE(BAD)\n"),
    );
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("STARTCMD('runmqtrm') is not a full path"),
        "{out}"
    );
    assert!(out.contains("FOO, BAR are not service attributes"), "{out}");
    assert!(out.contains("no service matches 'BAD'"), "{out}");
    h.mqsc(
        "QS",
        &format!(
            "DEFINE SERVICE(MON) SERVTYPE(SERVER) CONTROL(QMGR) STARTCMD('{}') \
             STARTARG('-m +QMNAME+ \"two words\"') STOPCMD('/bin/kill') STOPARG('+MQ_SERVER_PID+') \
             STDOUT('+MQ_Q_MGR_DATA_PATH+/mon.out')\n\
             DEFINE SERVICE(ONCE) SERVTYPE(COMMAND) STARTCMD('{}') STARTARG('+MQ_SERVICE_NAME+')\n\
             DEFINE SERVICE(GONE) SERVTYPE(SERVER) STARTCMD('/no/such/program')\n",
            server.display(),
            command.display()
        ),
    );
    h.mqsc("QS", "START SERVICE(MON)\n");
    let st = h.mqsc("QS", "DISPLAY SVSTATUS(MON)\n");
    assert_eq!(field(&st, "STATUS"), "RUNNING");
    let pid = field(&st, "PID");
    assert!(alive(&pid));
    let out_file = h.qm_dir("QS").join("mon.out");
    wait_for(LONG, "the service's output", || {
        std::fs::read_to_string(&out_file).is_ok_and(|s| s.contains("args:"))
    });
    assert_eq!(
        std::fs::read_to_string(&out_file).unwrap().trim(),
        "args:3:-m|QS|two words"
    );
    // One instance of a server; IGNSTATE(YES) makes that not an error; running, it cannot go.
    let o = h.run(
        &["mqsc", "QS"],
        Some("START SERVICE(MON)\nDELETE SERVICE(MON)\n"),
    );
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("already running"), "{out}");
    assert!(out.contains("STOP SERVICE(MON) first"), "{out}");
    h.mqsc("QS", "START SERVICE(MON) IGNSTATE(YES)\n");
    // A missing program and a service without STOPCMD say so.
    let o = h.run(
        &["mqsc", "QS"],
        Some("START SERVICE(GONE)\nSTOP SERVICE(ONCE)\n"),
    );
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("STARTCMD('/no/such/program') is not an executable file"),
        "{out}"
    );
    assert!(out.contains("has no STOPCMD"), "{out}");
    // A command service runs each time it is started.
    h.mqsc("QS", "START SERVICE(ONCE)\nSTART SERVICE(ONCE)\n");
    let log = d.join("cmd.log");
    wait_for(LONG, "two runs of the command", || {
        std::fs::read_to_string(&log).is_ok_and(|s| s.lines().count() == 2)
    });
    assert!(
        std::fs::read_to_string(&log)
            .unwrap()
            .starts_with("ran ONCE")
    );
    // STOP SERVICE runs STOPCMD with the server's pid: the program ends and is reaped.
    h.mqsc("QS", "STOP SERVICE(MON)\n");
    wait_for(LONG, "the service to end", || !alive(&pid));
    wait_for(LONG, "SVSTATUS to forget it", || {
        let o = h.run(&["mqsc", "QS"], Some("DISPLAY SVSTATUS(MON)\n"));
        String::from_utf8_lossy(&o.stdout).contains("is not running")
    });
    // CONTROL(QMGR): started with the queue manager, stopped when it ends.
    h.ok(&["stop", "QS"]);
    h.ok(&["start", "QS", "--background"]);
    let st = h.mqsc("QS", "DISPLAY SVSTATUS(*)\n");
    assert_eq!(field(&st, "SERVICE"), "MON");
    let pid = field(&st, "PID");
    assert!(alive(&pid));
    h.ok(&["stop", "QS"]);
    wait_for(LONG, "the service to end with the queue manager", || {
        !alive(&pid)
    });
}

#[test]
fn the_trigger_monitor_starts_the_program_with_the_trigger_message() {
    let h = Home::new();
    h.ok(&["create", "QT"]);
    h.ok(&["start", "QT", "--background"]);
    let out_file = h.dir.path().join("triggered.out");
    let script = h.dir.path().join("app.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nprintf '%s|%s' \"$1\" \"$2\" > {}\n",
            out_file.display()
        ),
    )
    .unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    // A process naming a missing program is refused at DEFINE, nothing defined.
    let o = h.run(
        &["mqsc", "QT"],
        Some("DEFINE PROCESS(NOPE) APPLICID('/no/such/program')\nDISPLAY PROCESS(NOPE)\n"),
    );
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("'/no/such/program', which is not an executable"),
        "{out}"
    );
    assert!(out.contains("no process matches 'NOPE'"), "{out}");
    h.mqsc(
        "QT",
        &format!(
            "DEFINE PROCESS(APP.PROC) APPLICID('{}') USERDATA('orders') ENVRDATA('extra')\n\
             DEFINE QLOCAL(APP.IN) TRIGGER TRIGTYPE(FIRST) PROCESS(APP.PROC) \
             INITQ(SYSTEM.DEFAULT.INITIATION.QUEUE) TRIGDATA('batch 7')\n",
            script.display()
        ),
    );
    // FIRST: one trigger message for the first of several messages.
    for m in ["one", "two", "three"] {
        h.ok(&["put", "QT", "APP.IN", "--message", m]);
    }
    assert_eq!(h.depth("QT", "SYSTEM.DEFAULT.INITIATION.QUEUE"), 1);
    let out = h.ok(&["trigger-monitor", "QT", "--count", "1", "--allow-root"]);
    assert!(out.contains("trigger for queue APP.IN: started"), "{out}");
    let got = std::fs::read_to_string(&out_file).unwrap();
    let (tmc2, env) = got.split_once('|').unwrap();
    // MQTMC2 as MQ's runmqtrm passes it: fixed-width fields, the queue manager's name last.
    assert_eq!(tmc2.len(), 732, "{tmc2:?}");
    assert!(tmc2.starts_with("TMC    2APP.IN "), "{tmc2:?}");
    assert_eq!(tmc2[56..104].trim(), "APP.PROC");
    assert_eq!(tmc2[104..168].trim(), "batch 7");
    assert_eq!(tmc2[556..684].trim(), "orders");
    assert_eq!(tmc2[684..].trim(), "QT");
    assert_eq!(env, "extra");
    // EVERY and DEPTH: each message, and TRIGGER switched off after a depth event.
    h.mqsc(
        "QT",
        "DEFINE QLOCAL(APP.EVERY) TRIGGER TRIGTYPE(EVERY) PROCESS(APP.PROC) INITQ(SYSTEM.DEFAULT.INITIATION.QUEUE)\n\
         DEFINE QLOCAL(APP.DEPTH) TRIGGER TRIGTYPE(DEPTH) TRIGDPTH(3) PROCESS(APP.PROC) INITQ(SYSTEM.DEFAULT.INITIATION.QUEUE)\n",
    );
    for _ in 0..2 {
        h.ok(&["put", "QT", "APP.EVERY", "--message", "e"]);
    }
    for _ in 0..4 {
        h.ok(&["put", "QT", "APP.DEPTH", "--message", "d"]);
    }
    assert_eq!(h.depth("QT", "SYSTEM.DEFAULT.INITIATION.QUEUE"), 3);
    let d = h.mqsc("QT", "DISPLAY QLOCAL(APP.DEPTH) NOTRIGGER\n");
    assert!(d.contains("NOTRIGGER"), "{d}");
    // TRIGINT: a FIRST queue still not empty TRIGINT after its last trigger message makes
    // another (with MQ's default, 999999999 ms, it never does, as above).
    h.mqsc(
        "QT",
        "ALTER QMGR TRIGINT(0)\nCLEAR QLOCAL(SYSTEM.DEFAULT.INITIATION.QUEUE)\n\
         DEFINE QLOCAL(APP.RETRIG) TRIGGER TRIGTYPE(FIRST) PROCESS(APP.PROC) INITQ(SYSTEM.DEFAULT.INITIATION.QUEUE)\n",
    );
    assert_eq!(
        field(&h.mqsc("QT", "DISPLAY QMGR TRIGINT\n"), "TRIGINT"),
        "0"
    );
    for _ in 0..2 {
        h.ok(&["put", "QT", "APP.RETRIG", "--message", "r"]);
    }
    assert_eq!(h.depth("QT", "SYSTEM.DEFAULT.INITIATION.QUEUE"), 2);
    h.ok(&["stop", "QT"]);
}

#[test]
fn trigger_messages_lost_with_a_restart_are_made_when_the_monitor_opens_the_initq() {
    let h = Home::new();
    h.ok(&["create", "QR"]);
    h.ok(&["start", "QR", "--background"]);
    let out_file = h.dir.path().join("ran");
    let script = h.dir.path().join("app.sh");
    executable(
        &script,
        &format!("#!/bin/sh\necho ran >> {}\n", out_file.display()),
    );
    h.mqsc(
        "QR",
        &format!(
            "DEFINE PROCESS(P) APPLICID('{}')\n\
             DEFINE QLOCAL(ORDERS) TRIGGER TRIGTYPE(FIRST) PROCESS(P) \
             INITQ(SYSTEM.DEFAULT.INITIATION.QUEUE)\n",
            script.display()
        ),
    );
    h.ok(&["put", "QR", "ORDERS", "--message", "kept", "--persistent"]);
    assert_eq!(h.depth("QR", "SYSTEM.DEFAULT.INITIATION.QUEUE"), 1);
    // Trigger messages are not persistent: the restart loses it, the order stays.
    h.ok(&["stop", "QR"]);
    h.ok(&["start", "QR", "--background"]);
    assert_eq!(h.depth("QR", "SYSTEM.DEFAULT.INITIATION.QUEUE"), 0);
    assert_eq!(h.depth("QR", "ORDERS"), 1);
    // The monitor opening the initiation queue is a trigger event: the program runs.
    let out = h.ok(&["trigger-monitor", "QR", "--count", "1", "--allow-root"]);
    assert!(out.contains("trigger for queue ORDERS: started"), "{out}");
    wait_for(LONG, "the program to run", || {
        std::fs::read_to_string(&out_file).is_ok_and(|s| s.contains("ran"))
    });
    h.ok(&["stop", "QR"]);
}

#[test]
fn a_triggered_transmission_queue_starts_its_sender_channel() {
    let h = Home::new();
    let (pa, pb) = (free_port(), free_port());
    for (qm, p) in [("QA", pa), ("QB", pb)] {
        h.ok(&["create", qm]);
        h.start_tcp(qm, p);
    }
    h.mqsc(
        "QB",
        "DEFINE CHANNEL(QA.QB) CHLTYPE(RCVR) TRPTYPE(TCP)\n\
         SET CHLAUTH('QA.QB') TYPE(BLOCKUSER) USERLIST('nobody')\nDEFINE QLOCAL(ORDERS)\n",
    );
    // The way most MQ networks start channels: the sender is never started by hand.
    h.mqsc(
        "QA",
        &format!(
            "DEFINE QLOCAL(QB) USAGE(XMITQ) TRIGGER TRIGTYPE(FIRST) INITQ(SYSTEM.CHANNEL.INITQ) TRIGDATA(QA.QB)\n\
             DEFINE CHANNEL(QA.QB) CHLTYPE(SDR) TRPTYPE(TCP) CONNAME('127.0.0.1({pb})') XMITQ(QB) DISCINT(2) SHORTTMR(0)\n\
             DEFINE QREMOTE(ORDERS) RNAME(ORDERS) RQMNAME(QB) XMITQ(QB)\n"
        ),
    );
    let st = h.run(&["mqsc", "QA"], Some("DISPLAY CHSTATUS(QA.QB)\n"));
    assert!(!String::from_utf8_lossy(&st.stdout).contains("RUNNING"));
    // PING: the partner answers, nothing is sent, the channel stays inactive.
    let ping = h.mqsc("QA", "PING CHANNEL(QA.QB)\n");
    assert!(ping.contains("QB answered"), "{ping}");
    let dead = free_port();
    let o = h.run(
        &["mqsc", "QA"],
        Some(&format!(
            "DEFINE CHANNEL(QA.NOWHERE) CHLTYPE(SDR) CONNAME('127.0.0.1({dead})') XMITQ(QB)\n\
             PING CHANNEL(QA.NOWHERE)\n"
        )),
    );
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("PING CHANNEL(QA.NOWHERE): cannot connect") && out.contains("[2537"),
        "{out}"
    );
    h.ok(&["put", "QA", "ORDERS", "--message", "first", "--persistent"]);
    wait_for(LONG, "the triggered channel to deliver", || {
        h.depth("QB", "ORDERS") == 1
    });
    let st = h.mqsc("QA", "DISPLAY CHSTATUS(QA.QB) ALL\n");
    assert!(st.contains("CONNAME(127.0.0.1("), "{st}");
    for k in [
        "CHSTADA", "CHSTATI", "LSTMSGDA", "LSTMSGTI", "XQMSGSA", "SUBSTATE",
    ] {
        field(&st, k);
    }
    // DISCINT ends it when the queue stays empty; the next message triggers it again.
    wait_for(LONG, "DISCINT to end the channel", || {
        !h.ok_in(&["mqsc", "QA"], Some("DISPLAY CHSTATUS(*)\n"))
            .contains("CHANNEL(QA.QB)")
    });
    h.ok(&["put", "QA", "ORDERS", "--message", "second", "--persistent"]);
    wait_for(LONG, "the channel to be triggered again", || {
        h.depth("QB", "ORDERS") == 2
    });
    let log = std::fs::read_to_string(h.qm_dir("QA").join("errors/SEALMQ01.LOG")).unwrap();
    assert!(
        log.contains("channel QA.QB triggered by transmission queue QB"),
        "{log}"
    );
    for qm in ["QA", "QB"] {
        h.ok(&["stop", qm]);
    }
}

#[test]
fn display_conn_qstatus_handles_and_qmstatus_show_who_is_connected() {
    let h = Home::new();
    h.ok(&["create", "QV"]);
    h.ok(&["start", "QV", "--background"]);
    h.mqsc("QV", "DEFINE QLOCAL(WORK)\n");
    let mut getter = h
        .cmd(&["get", "QV", "WORK", "--wait", "8000"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid = getter.id().to_string();
    wait_for(LONG, "the getter to connect", || {
        h.mqsc("QV", "DISPLAY QSTATUS(WORK) TYPE(HANDLE)\n")
            .contains("APPLTAG(sealmq-get)")
    });
    let hs = h.mqsc("QV", "DISPLAY QSTATUS(WORK) TYPE(HANDLE)\n");
    assert_eq!(field(&hs, "PID"), pid, "{hs}");
    assert_eq!(field(&hs, "INPUT"), "SHARED", "{hs}");
    let c = h.mqsc(
        "QV",
        "DISPLAY CONN(*) TYPE(ALL) WHERE(APPLTAG EQ sealmq-get)\n",
    );
    assert!(
        c.contains("OBJNAME(WORK)") && c.contains("MQOO_INPUT_SHARED"),
        "{c}"
    );
    assert_eq!(field(&c, "UOWSTATE"), "NONE", "{c}");
    let s = h.mqsc("QV", "DISPLAY QMSTATUS\n");
    assert_eq!(field(&s, "STATUS"), "RUNNING", "{s}");
    assert!(field(&s, "CONNS").parse::<u32>().unwrap() >= 2, "{s}");
    let _ = getter.kill();
    let _ = getter.wait();
    wait_for(LONG, "the handle to go", || {
        !h.mqsc("QV", "DISPLAY QSTATUS(WORK) TYPE(HANDLE)\n")
            .contains("sealmq-get")
    });
    h.ok(&["stop", "QV"]);
}

#[test]
fn a_dump_replayed_on_a_new_queue_manager_dumps_the_same() {
    let h = Home::new();
    for qm in ["Q1", "Q2"] {
        h.ok(&["create", qm]);
        h.ok(&["start", qm, "--background"]);
    }
    h.mqsc(
        "Q1",
        "DEFINE PROCESS(P1) APPLICID('/bin/true') USERDATA('x y') ENVRDATA('&')\n\
         DEFINE QLOCAL(APP.IN) DESCR('it''s orders') MAXDEPTH(77) TRIGGER PROCESS(P1) \
         INITQ(SYSTEM.DEFAULT.INITIATION.QUEUE) QDEPTHHI(70) NOSHARE\n\
         DEFINE QALIAS(APP.A) TARGET(APP.IN)\nDEFINE QLOCAL(XQ) USAGE(XMITQ)\n\
         DEFINE QREMOTE(APP.R) RNAME(X) RQMNAME(QM9) XMITQ(XQ)\n\
         DEFINE QMODEL(APP.MODEL) DEFTYPE(PERMDYN)\n\
         DEFINE CHANNEL(TO.QM9) CHLTYPE(SDR) CONNAME('h(1)') XMITQ(XQ) DISCINT(60) SHARECNV(5)\n\
         DEFINE CHANNEL(APP.SVRCONN) CHLTYPE(SVRCONN) MCAUSER('app') SSLCIPH(ANY) INTERCEPT(YES)\n\
         DEFINE LISTENER(L1) TRPTYPE(TCP) PORT(1999)\n\
         DEFINE SERVICE(S1) SERVTYPE(SERVER) STARTCMD('+MQ_INSTALL_PATH+bin/x') STARTARG('-m +QMNAME+')\n\
         SET AUTHREC PROFILE('APP.*') OBJTYPE(QUEUE) PRINCIPAL('app') AUTHADD(PUT,GET)\n\
         SET AUTHREC OBJTYPE(QMGR) GROUP('grp') AUTHADD(CONNECT)\n\
         SET CHLAUTH('APP.SVRCONN') TYPE(ADDRESSMAP) ADDRESS('10.*') USERSRC(MAP) MCAUSER('app')\n\
         DEFINE AUTHINFO(MY.IDPW) AUTHTYPE(IDPWOS) CHCKCLNT(REQUIRED)\n\
         ALTER QMGR CONNAUTH(MY.IDPW) TRIGINT(5000) DESCR('prod')\n\
         ALTER QLOCAL(SYSTEM.DEFAULT.LOCAL.QUEUE) MAXDEPTH(999)\n",
    );
    let first = h.ok(&["dump", "Q1"]);
    for want in [
        "DEFINE QLOCAL('APP.IN')",
        "DESCR('it''s orders')",
        "NOSHARE",
        "QDEPTHHI('70')",
        "DEFINE PROCESS('P1')",
        "DEFINE CHANNEL('TO.QM9') CHLTYPE(SDR)",
        "DEFINE LISTENER('L1')",
        "DEFINE SERVICE('S1')",
        "STARTARG('-m +QMNAME+')",
        "SET AUTHREC PROFILE('APP.*') OBJTYPE(QUEUE) PRINCIPAL('app') AUTHADD(PUT,GET)",
        "SET CHLAUTH('APP.SVRCONN')",
        "CONNAUTH('MY.IDPW')",
    ] {
        assert!(first.contains(want), "{want} missing:\n{first}");
    }
    h.ok_in(&["mqsc", "Q2"], Some(&first));
    let second = h.ok(&["dump", "Q2"]);
    let body = |d: &str| d.lines().skip(1).collect::<Vec<_>>().join("\n");
    assert_eq!(body(&first), body(&second));
    for qm in ["Q1", "Q2"] {
        h.ok(&["stop", qm]);
    }
}

#[test]
fn stop_immediate_never_returns_before_the_queue_manager_has_ended() {
    let h = Home::new();
    h.ok(&["create", "QS"]);
    for i in 0..50 {
        h.ok(&["start", "QS", "--background"]);
        let pid = h.pid("QS");
        let out = h.ok(&["stop", "QS", "--immediate"]);
        assert!(out.contains("ended"), "round {i}: {out}");
        let alive = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|s| {
                s.rsplit_once(')')
                    .map(|(_, r)| r.trim_start().starts_with('Z'))
                    .map(|z| !z)
            })
            .unwrap_or(false);
        assert!(
            !alive,
            "round {i}: process {pid} still running after stop returned"
        );
    }
}

#[test]
fn a_svrconn_discint_ends_idle_clients_only() {
    use sealmq_client::Client;
    use sealmq_engine::{GetOptions, OpenOptions};
    let h = Home::new();
    let port = free_port();
    h.ok(&["create", "QD"]);
    h.start_tcp("QD", port);
    h.mqsc(
        "QD",
        "DEFINE CHANNEL(APP.SVRCONN) CHLTYPE(SVRCONN) MCAUSER('app') DISCINT(1)\n\
         SET AUTHREC OBJTYPE(QMGR) PRINCIPAL('app') AUTHADD(CONNECT)\n\
         DEFINE QLOCAL(WORK)\n\
         SET AUTHREC PROFILE('WORK') OBJTYPE(QUEUE) PRINCIPAL('app') AUTHADD(GET)\n",
    );
    let addr = format!("127.0.0.1:{port}");
    let mut busy = Client::connect_tcp_channel(&addr, "APP.SVRCONN", "busy").unwrap();
    let mut idle = Client::connect_tcp_channel(&addr, "APP.SVRCONN", "idle").unwrap();
    let (hq, _) = busy.open("WORK", OpenOptions::input()).unwrap();
    let conns = || {
        let o = h.run(&["mqsc", "QD"], Some("DISPLAY CONN(*) APPLTAG\n"));
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    assert!(conns().contains("APPLTAG(idle)"));
    // A get waiting longer than DISCINT is the client waiting for a message, not idleness.
    let wait = GetOptions {
        wait: Some(Duration::from_millis(2500)),
        ..Default::default()
    };
    assert_eq!(
        busy.get(hq, &wait).unwrap_err().reason,
        sealmq_types::ReasonCode::NoMsgAvailable
    );
    wait_for(LONG, "the idle client to be disconnected", || {
        !conns().contains("APPLTAG(idle)")
    });
    assert!(conns().contains("APPLTAG(busy)"));
    let e = idle.open("WORK", OpenOptions::input()).unwrap_err();
    assert_eq!(e.reason, sealmq_types::ReasonCode::ConnectionBroken, "{e}");
    assert_eq!(
        busy.get(hq, &GetOptions::default()).unwrap_err().reason,
        sealmq_types::ReasonCode::NoMsgAvailable
    );
    let log = std::fs::read_to_string(h.qm_dir("QD").join("errors/SEALMQ01.LOG")).unwrap();
    assert!(log.contains("client idle for DISCINT(1) seconds"), "{log}");
    h.ok(&["stop", "QD"]);
}

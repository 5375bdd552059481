//! Issue 24's probes of the local surfaces, kept as tests (the AMQP ones are in
//! amqp_hostile.rs): a forged trigger message starts nothing and the trigger monitor starts
//! nothing as root unless told; MAXFSIZE holds for non-persistent messages; a damaged record
//! in a queue data file is set aside and the rest of the queue served.

#![allow(unsafe_code)]

mod common;

use common::{Home, wait_for};
use sealmq_client::Client;
use sealmq_engine::trigger::TriggerMsg;
use sealmq_mqi::Md;
use std::path::Path;
use std::time::Duration;

const LONG: Duration = Duration::from_secs(60);

fn executable(path: &Path, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn me() -> String {
    let o = std::process::Command::new("id")
        .arg("-un")
        .output()
        .unwrap();
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

#[test]
fn a_forged_trigger_message_starts_nothing_and_root_is_not_lent() {
    let h = Home::new();
    h.ok(&["create", "QT"]);
    h.ok(&["start", "QT", "--background"]);
    // A directory the program's user can reach and write.
    let dir = h.dir.path().join("work");
    std::fs::create_dir(&dir).unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        for d in [h.dir.path(), dir.as_path()] {
            std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o777)).unwrap();
        }
    }
    let ran = dir.join("ran");
    let pwned = dir.join("pwned");
    let script = dir.join("app.sh");
    executable(&script, &format!("#!/bin/sh\nid -u >> {}\n", ran.display()));
    h.mqsc(
        "QT",
        &format!(
            "DEFINE PROCESS(APP.PROC) APPLICID('{}')\n\
             DEFINE QLOCAL(APP.IN) TRIGGER TRIGTYPE(EVERY) PROCESS(APP.PROC) \
             INITQ(SYSTEM.DEFAULT.INITIATION.QUEUE)\n\
             SET AUTHREC PROFILE('SYSTEM.DEFAULT.INITIATION.QUEUE') OBJTYPE(QUEUE) \
             PRINCIPAL('{}') AUTHADD(PUT)\n",
            script.display(),
            me()
        ),
    );
    // An application that may put to the initiation queue (as some must) forges a trigger message naming
    // a command of its own, in the queue manager's own format.
    let forged = TriggerMsg {
        queue: "APP.IN".into(),
        process: "APP.PROC".into(),
        appl_type: 6,
        appl_id: format!("/usr/bin/touch {}; /bin/true", pwned.display()),
        ..Default::default()
    };
    let mut c = Client::connect_local(&h.qm_dir("QT"), "forger").unwrap();
    let mut md = Md {
        format: "MQTRIG  ".into(),
        user_id: "SYSTEM".into(),
        put_appl_name: "sealmq".into(),
        ..Default::default()
    };
    c.put1(
        "SYSTEM.DEFAULT.INITIATION.QUEUE",
        &mut md,
        &forged.encode(),
        false,
    )
    .unwrap();
    // The context it asked for is not what the queue manager recorded.
    assert_ne!(md.user_id.trim(), "SYSTEM");
    // Whatever it names, a message an application put is skipped.
    let other = TriggerMsg {
        queue: "SYSTEM.DEFAULT.LOCAL.QUEUE".into(),
        process: "APP.PROC".into(),
        appl_type: 6,
        ..Default::default()
    };
    c.put1(
        "SYSTEM.DEFAULT.INITIATION.QUEUE",
        &mut Md {
            format: "MQTRIG  ".into(),
            ..Default::default()
        },
        &other.encode(),
        false,
    )
    .unwrap();
    c.disconnect().unwrap();
    // Running as root, the monitor refuses to start programs as root unless told to.
    if is_root() {
        let o = h.fails(&["trigger-monitor", "QT", "--count", "1"]);
        assert!(
            o.contains("--run-as USER") && o.contains("--allow-root"),
            "{o}"
        );
        assert_eq!(h.depth("QT", "SYSTEM.DEFAULT.INITIATION.QUEUE"), 2);
    }
    // A real trigger after the forged ones: the monitor serves all three.
    h.ok(&["put", "QT", "APP.IN", "--message", "work"]);
    assert_eq!(h.depth("QT", "SYSTEM.DEFAULT.INITIATION.QUEUE"), 3);
    let who: &[&str] = if is_root() {
        &["--run-as", "nobody"]
    } else {
        &[]
    };
    let o = h.run(
        &[&["trigger-monitor", "QT", "--count", "3"], who].concat(),
        None,
    );
    let (out, err) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert!(o.status.success(), "{out}{err}");
    assert!(err.contains("not made by the queue manager"), "{err}");
    assert_eq!(
        err.matches("not made by the queue manager").count(),
        2,
        "{err}"
    );
    assert!(
        out.contains("trigger for queue APP.IN: started"),
        "{out}{err}"
    );
    wait_for(LONG, "the defined program to run", || ran.exists());
    assert!(!pwned.exists(), "the forged command ran");
    let uid = std::fs::read_to_string(&ran).unwrap();
    if is_root() {
        assert_ne!(uid.trim(), "0", "the program ran as root");
        assert!(out.contains("as nobody"), "{out}");
    }
    assert_eq!(uid.lines().count(), 1, "{uid}");
    h.ok(&["stop", "QT"]);
}

#[test]
fn maxfsize_holds_for_non_persistent_messages() {
    let h = Home::new();
    h.ok(&["create", "QF"]);
    h.ok(&["start", "QF", "--background"]);
    // A 1 MiB message cache: non-persistent messages past it go to the queue's spill files,
    // which MAXFSIZE(20) bounds as it bounds the files of persistent ones.
    h.mqsc(
        "QF",
        "ALTER QMGR MSGCACHE(1)\nDEFINE QLOCAL(NP.Q) MAXDEPTH(999999) DEFPSIST(NO) MAXFSIZE(20)\n",
    );
    let mut sent = 0;
    let err = loop {
        let o = h.run(
            &["put", "QF", "NP.Q", "--size", "65536", "--count", "50"],
            None,
        );
        if !o.status.success() {
            break String::from_utf8_lossy(&o.stderr).into_owned();
        }
        sent += 50;
        assert!(sent < 1000, "MAXFSIZE(20) let {sent} messages of 64 KiB in");
    };
    assert!(err.contains("2056") && err.contains("MAXFSIZE"), "{err}");
    let st = h.mqsc("QF", "DISPLAY QSTATUS(NP.Q) CURFSIZE CURMAXFS\n");
    let cur: u64 = common::field(&st, "CURFSIZE").parse().unwrap();
    assert_eq!(common::field(&st, "CURMAXFS"), "20", "{st}");
    assert!((1..=20).contains(&cur), "{st}");
    // Emptying the queue gives its files back (a spill file goes when its last message does).
    let depth = h.depth("QF", "NP.Q");
    assert!(depth > 0);
    h.ok(&["get", "QF", "NP.Q", "--count", &depth.to_string()]);
    // (What is left is the queue's index, a few bytes: MQ shows a started megabyte as 1.)
    let st = h.mqsc("QF", "DISPLAY QSTATUS(NP.Q) CURFSIZE\n");
    assert_eq!(common::field(&st, "CURFSIZE"), "1", "{st}");
    h.ok(&["put", "QF", "NP.Q", "--size", "65536", "--count", "10"]);
    h.ok(&["stop", "QF"]);
}

fn errlog(h: &Home, qm: &str) -> String {
    std::fs::read_to_string(h.qm_dir(qm).join("errors/SEALMQ01.LOG")).unwrap_or_default()
}

/// Flips one byte in the middle of the queue's (only) data file: one record is damaged.
fn damage_data_file(h: &Home, qm: &str, queue: &str) -> std::path::PathBuf {
    use std::os::unix::fs::FileExt;
    let dir = common::queue_dir(&h.qm_dir(qm), queue);
    let data: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "qd"))
        .collect();
    assert_eq!(data.len(), 1, "{data:?}");
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&data[0])
        .unwrap();
    let at = f.metadata().unwrap().len() / 2;
    let mut b = [0u8; 1];
    f.read_exact_at(&mut b, at).unwrap();
    f.write_all_at(&[b[0] ^ 0x5a], at).unwrap();
    f.sync_all().unwrap();
    data[0].clone()
}

/// A queue manager, stopped, whose queue ORDERS holds 217 persistent messages of 300 bytes in
/// its data file.
fn stored_orders(h: &Home, qm: &str) {
    h.ok(&["create", qm]);
    h.ok(&["start", qm, "--background"]);
    h.mqsc(qm, "DEFINE QLOCAL(ORDERS) MAXDEPTH(100000)\n");
    h.ok(&[
        "put",
        qm,
        "ORDERS",
        "--size",
        "300",
        "--count",
        "217",
        "--persistent",
    ]);
    h.ok(&["stop", qm]);
}

#[test]
fn a_damaged_record_is_set_aside_and_the_rest_of_the_queue_served() {
    let h = Home::new();
    stored_orders(&h, "QX");
    // One of the stored messages is damaged.
    let file = damage_data_file(&h, "QX", "ORDERS");
    h.ok(&["start", "QX", "--background"]);
    // Found at start, reported in the error log, set aside with its file and offset.
    // (This start's line, not the first start's, which found nothing to verify.)
    wait_for(LONG, "the start's verification", || {
        errlog(&h, "QX")
            .matches("queue files verified at start")
            .count()
            >= 2
    });
    let log = errlog(&h, "QX");
    assert!(
        log.contains("1 damaged message(s) of 217 set aside"),
        "{log}"
    );
    assert!(log.contains(&file.display().to_string()), "{log}");
    let aside = h.qm_dir("QX").join("damaged");
    let note = std::fs::read_to_string(aside.join("damaged.log")).unwrap();
    assert!(
        note.contains("queue=ORDERS") && note.contains(&format!("file={}", file.display())),
        "{note}"
    );
    assert!(note.contains("offset="), "{note}");
    {
        use std::os::unix::fs::PermissionsExt;
        let recs: Vec<_> = std::fs::read_dir(&aside)
            .unwrap()
            .flatten()
            .filter(|e| e.path().extension().is_some_and(|x| x == "rec"))
            .collect();
        assert_eq!(recs.len(), 1);
        let m = recs[0].metadata().unwrap();
        assert!(m.len() > 300, "the record's bytes are kept");
        assert_eq!(m.permissions().mode() & 0o777, 0o600);
    }
    // The other 216 are served, every one intact.
    assert_eq!(h.depth("QX", "ORDERS"), 216);
    let got = h.ok(&["get", "QX", "ORDERS", "--count", "216", "--verify"]);
    assert!(got.contains("got 216 ok 216"), "{got}");
    // Set aside for good: a restart does not bring it back.
    h.ok(&["stop", "QX"]);
    h.ok(&["start", "QX", "--background"]);
    assert_eq!(h.depth("QX", "ORDERS"), 0);
    h.ok(&["stop", "QX"]);
}

#[test]
fn a_record_damaged_while_running_does_not_block_gets() {
    let h = Home::new();
    stored_orders(&h, "QY");
    h.ok(&["start", "QY", "--background"]);
    wait_for(LONG, "the start's verification", || {
        errlog(&h, "QY").contains("217 stored message(s) readable")
    });
    // Damaged after the start's pass (the messages are in the file, not in memory): the get
    // that reaches it sets it aside and goes on.
    damage_data_file(&h, "QY", "ORDERS");
    let got = h.ok(&["get", "QY", "ORDERS", "--count", "216", "--verify"]);
    assert!(got.contains("got 216 ok 216"), "{got}");
    assert_eq!(h.depth("QY", "ORDERS"), 0);
    assert!(
        errlog(&h, "QY").contains("a damaged message was set aside"),
        "{}",
        errlog(&h, "QY")
    );
    h.ok(&["stop", "QY"]);
}

/// The trigger monitor reads definitions through MQSC: a monitor that is not the queue
/// manager's administrator (here: connected through a channel as 'app') is refused with 2035
/// and says what it needs, before it takes any trigger message.
#[test]
fn a_trigger_monitor_that_is_not_the_administrator_is_refused() {
    let h = Home::new();
    h.ok(&["create", "QN"]);
    let port = common::free_port();
    h.start_tcp("QN", port);
    h.mqsc(
        "QN",
        "DEFINE CHANNEL(APP.SVRCONN) CHLTYPE(SVRCONN) MCAUSER('app')\n\
         SET AUTHREC OBJTYPE(QMGR) PRINCIPAL('app') AUTHADD(CONNECT)\n\
         SET AUTHREC PROFILE('SYSTEM.DEFAULT.INITIATION.QUEUE') OBJTYPE(QUEUE) PRINCIPAL('app') AUTHADD(GET)\n",
    );
    let err = h.fails(&[
        "trigger-monitor",
        "QN",
        "--count",
        "1",
        "--allow-root",
        "--conn",
        &format!("127.0.0.1:{port}"),
        "--channel",
        "APP.SVRCONN",
    ]);
    assert!(
        err.contains("2035") && err.contains("administrator"),
        "{err}"
    );
    h.ok(&["stop", "QN"]);
}

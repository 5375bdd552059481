//! Issue 24's probes of the local surfaces, kept as tests (the AMQP ones are in
//! amqp_hostile.rs): a forged trigger message starts nothing and the trigger monitor starts
//! nothing as root unless told; MAXFSIZE holds for non-persistent messages; a damaged record
//! in a queue data file is set aside and the rest of the queue served.

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

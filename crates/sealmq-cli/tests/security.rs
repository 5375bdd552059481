//! Issue 11: the holes hostile testing found, each closed, tried through real processes as an
//! attacker or an administrator would.

mod common;
use common::*;
use std::time::{Duration, Instant};

fn alive(pid: &str) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            let state = s.rsplit_once(')').unwrap().1.split_whitespace().next();
            !matches!(state, Some("Z") | Some("X"))
        })
        .unwrap_or(false)
}

#[test]
fn stop_returns_once_the_process_has_exited() {
    let h = Home::new();
    h.ok(&["create", "QS"]);
    for _ in 0..3 {
        h.ok(&["start", "QS", "--background"]);
        let pid = h.pid("QS");
        assert!(alive(&pid));
        h.ok(&["stop", "QS"]);
        assert!(
            !alive(&pid),
            "sealmq stop returned while pid {pid} still runs"
        );
    }
}

#[test]
fn a_checkpoint_that_fails_at_stop_is_reported_and_leaves_no_temporary_file() {
    let h = Home::new();
    h.ok(&["create", "QC"]);
    h.ok(&["start", "QC", "--background"]);
    h.mqsc("QC", "DEFINE QLOCAL(KEEP) DEFPSIST(YES)\n");
    h.ok(&["put", "QC", "KEEP", "--message", "kept", "--persistent"]);
    // The checkpoint directory turns into a file: the final checkpoint cannot be written.
    let cp = h.qm_dir("QC").join("checkpoint");
    let aside = h.qm_dir("QC").join("checkpoint.aside");
    std::fs::rename(&cp, &aside).unwrap();
    std::fs::write(&cp, b"not a directory").unwrap();
    let err = h.fails(&["stop", "QC"]);
    assert!(err.contains("checkpoint"), "{err}");
    std::fs::remove_file(&cp).unwrap();
    std::fs::rename(&aside, &cp).unwrap();
    let leftovers: Vec<_> = std::fs::read_dir(&cp)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    // Nothing was lost: the next start replays the log.
    h.ok(&["start", "QC", "--background"]);
    assert_eq!(h.depth("QC", "KEEP"), 1);
    h.ok(&["stop", "QC"]);
}

fn log_of(h: &Home, qm: &str) -> String {
    std::fs::read_to_string(h.qm_dir(qm).join("qm.log")).unwrap_or_default()
}

fn s(p: &std::path::Path) -> String {
    p.to_str().unwrap().to_string()
}

/// Polls `f` every 300 ms (for conditions that need a command run each time).
fn poll_slow(limit: Duration, what: &str, f: impl FnMut() -> bool) {
    common::wait_every(limit, Duration::from_millis(300), what, f)
}

#[test]
fn forged_channel_traffic_is_refused_and_the_policy_stays() {
    let h = Home::new();
    let (pv, pa) = (free_port(), free_port());
    for (qm, port) in [("QMV", pv), ("QMA", pa)] {
        h.ok(&["create", qm]);
        h.start_tcp(qm, port);
    }
    h.mqsc(
        "QMV",
        "DEFINE QLOCAL(PAY.Q)\n\
         SET POLICY(PAY.Q) SIGNALG(SHA256) ENCALG(AES256) RECIP('CN=bank')\n\
         DEFINE CHANNEL(QMA.QMV) CHLTYPE(RCVR)\n",
    );
    h.mqsc(
        "QMA",
        &format!(
            "DEFINE QLOCAL(QMV) USAGE(XMITQ)\n\
             DEFINE CHANNEL(QMA.QMV) CHLTYPE(SDR) CONNAME('127.0.0.1({pv})') XMITQ(QMV) \
             SHORTRTY(0) SHORTTMR(0) LONGRTY(0)\n"
        ),
    );
    // The attacker addresses the victim's policy queue, with any user id it likes.
    for q in ["SYSTEM.PROTECTION.POLICY.QUEUE", "PAY.Q"] {
        h.ok(&[
            "put",
            "QMA",
            q,
            "--qmgr",
            "QMV",
            "--message",
            "forged",
            "--persistent",
        ]);
    }
    h.mqsc("QMA", "START CHANNEL(QMA.QMV)\n");
    // The default rules: a receiver running as the queue manager's own user is refused.
    wait_for(
        Duration::from_secs(30),
        "the refusal in the victim's log",
        || log_of(&h, "QMV").contains("TYPE(BLOCKUSER) USERLIST('*MQADMIN')"),
    );
    assert!(
        log_of(&h, "QMV").contains("SET CHLAUTH('QMA.QMV') TYPE(BLOCKUSER) USERLIST('nobody')"),
        "the refusal says how to allow the channel"
    );
    assert_eq!(h.depth("QMV", "PAY.Q"), 0);
    // Allowed the documented way, it runs as the queue manager's user: still, a system queue
    // takes no put from a channel; that message goes to the dead-letter queue with 2035.
    h.mqsc(
        "QMV",
        "SET CHLAUTH('QMA.QMV') TYPE(BLOCKUSER) USERLIST('nobody')\n",
    );
    poll_slow(Duration::from_secs(60), "both messages delivered", || {
        let _ = h.run(&["mqsc", "QMA"], Some("START CHANNEL(QMA.QMV)\n"));
        h.depth("QMV", "SYSTEM.DEAD.LETTER.QUEUE") == 1 && h.depth("QMV", "PAY.Q") == 1
    });
    assert_eq!(h.depth("QMV", "SYSTEM.PROTECTION.POLICY.QUEUE"), 1);
    let dlq = h.ok(&["browse", "QMV", "SYSTEM.DEAD.LETTER.QUEUE"]);
    assert!(dlq.contains("2035"), "{dlq}");
    h.ok(&["stop", "QMV"]);
    h.start_tcp("QMV", pv);
    let shown = h.mqsc("QMV", "DISPLAY POLICY(PAY.Q)\n");
    assert!(shown.contains("ENCALG(AES256)"), "{shown}");
    h.ok(&["stop", "QMV"]);
    h.ok(&["stop", "QMA"]);
}

fn app_qm(h: &Home, qm: &str) -> String {
    let port = free_port();
    h.ok(&["create", qm]);
    h.start_tcp(qm, port);
    h.mqsc(
        qm,
        "DEFINE CHANNEL(APP.SVRCONN) CHLTYPE(SVRCONN) MCAUSER('app')\n\
         SET AUTHREC OBJTYPE(QMGR) PRINCIPAL('app') AUTHADD(CONNECT)\n",
    );
    format!("127.0.0.1:{port}")
}

fn app_put(h: &Home, qm: &str, addr: &str, q: &str, qmgr: Option<&str>) -> std::process::Output {
    let mut a = vec![
        "put",
        qm,
        q,
        "--message",
        "m",
        "--conn",
        addr,
        "--channel",
        "APP.SVRCONN",
    ];
    if let Some(x) = qmgr {
        a.extend(["--qmgr", x]);
    }
    h.run(&a, None)
}

#[test]
fn every_route_to_a_queue_checks_the_same_authority() {
    let h = Home::new();
    let addr = app_qm(&h, "QMO");
    h.mqsc(
        "QMO",
        "DEFINE QLOCAL(FAR) USAGE(XMITQ)\n\
         DEFINE QREMOTE(FAR.ALIAS) RQMNAME(FAR) XMITQ(FAR)\n\
         DEFINE QREMOTE(REMOTE.Q) RNAME(X) RQMNAME(FAR) XMITQ(FAR)\n\
         DEFINE QLOCAL(LOCAL.Q)\n\
         DEFINE QALIAS(ALIAS.Q) TARGET(LOCAL.Q)\n",
    );
    // 'app' may only connect: every route is refused.
    for (q, qmgr) in [
        ("LOCAL.Q", None),
        ("ALIAS.Q", None),
        ("REMOTE.Q", None),
        ("ANY.Q", Some("FAR")),
        ("ANY.Q", Some("FAR.ALIAS")),
        ("LOCAL.Q", Some("QMO")),
    ] {
        let o = app_put(&h, "QMO", &addr, q, qmgr);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            !o.status.success() && err.contains("2035"),
            "{q} at {qmgr:?}: {err}"
        );
    }
    assert_eq!(h.depth("QMO", "FAR"), 0);
    assert_eq!(h.depth("QMO", "LOCAL.Q"), 0);
    // A queue manager with no route is refused alike (2035, not 2087): an unauthorized user
    // does not learn which routes exist. The administrator is told there is no route.
    let o = app_put(&h, "QMO", &addr, "ANY.Q", Some("NOWHERE"));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && err.contains("2035") && !err.contains("2087"),
        "{err}"
    );
    let err = h.fails(&["put", "QMO", "ANY.Q", "--qmgr", "NOWHERE", "--message", "x"]);
    assert!(err.contains("2087"), "{err}");
    // PUT on the transmission queue opens the way by queue-manager name, not by the alias.
    h.mqsc(
        "QMO",
        "SET AUTHREC PROFILE('FAR') OBJTYPE(QUEUE) PRINCIPAL('app') AUTHADD(PUT)\n",
    );
    assert!(
        app_put(&h, "QMO", &addr, "ANY.Q", Some("FAR"))
            .status
            .success()
    );
    assert!(
        !app_put(&h, "QMO", &addr, "ANY.Q", Some("FAR.ALIAS"))
            .status
            .success()
    );
    h.mqsc(
        "QMO",
        "SET AUTHREC PROFILE('FAR.ALIAS') OBJTYPE(QUEUE) PRINCIPAL('app') AUTHADD(PUT)\n",
    );
    assert!(
        app_put(&h, "QMO", &addr, "ANY.Q", Some("FAR.ALIAS"))
            .status
            .success()
    );
    assert_eq!(h.depth("QMO", "FAR"), 2);
    // Authorized for a name with no route: now 2087 (what is missing is the route).
    h.mqsc(
        "QMO",
        "SET AUTHREC PROFILE('NOWHERE') OBJTYPE(QUEUE) PRINCIPAL('app') AUTHADD(PUT)\n",
    );
    let o = app_put(&h, "QMO", &addr, "ANY.Q", Some("NOWHERE"));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("2087"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // The administrator too needs a record to put to a system queue.
    let err = h.fails(&[
        "put",
        "QMO",
        "SYSTEM.PROTECTION.ERROR.QUEUE",
        "--message",
        "x",
    ]);
    assert!(
        err.contains("2035") && err.contains("system queue"),
        "{err}"
    );
    h.ok(&["stop", "QMO"]);
}

#[test]
fn interception_without_tls_is_refused_at_define() {
    let h = Home::new();
    h.ok(&["create", "QMI"]);
    h.ok(&["start", "QMI", "--background"]);
    for bad in [
        "DEFINE CHANNEL(ICPT) CHLTYPE(SVRCONN) INTERCEPT(YES)\n",
        "DEFINE CHANNEL(ICPT) CHLTYPE(SVRCONN) SSLCIPH(ANY) SSLCAUTH(OPTIONAL) INTERCEPT(YES)\n",
    ] {
        let o = h.run(&["mqsc", "QMI"], Some(bad));
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(
            !o.status.success() && out.contains("needs TLS with client authentication"),
            "{out}"
        );
    }
    h.mqsc(
        "QMI",
        "DEFINE CHANNEL(ICPT) CHLTYPE(SVRCONN) SSLCIPH(ANY) INTERCEPT(YES)\n",
    );
    let o = h.run(
        &["mqsc", "QMI"],
        Some("ALTER CHANNEL(ICPT) CHLTYPE(SVRCONN) SSLCIPH(' ')\n"),
    );
    assert!(
        !o.status.success(),
        "ALTER cannot take TLS away from an intercepting channel"
    );
    h.ok(&["stop", "QMI"]);
}

#[test]
fn policy_and_protection_error_requests_need_authority() {
    use sealmq_client::Client;
    use sealmq_engine::{Got, Md, OpenOptions};
    let h = Home::new();
    let addr = app_qm(&h, "QMP");
    h.mqsc(
        "QMP",
        "DEFINE QLOCAL(PAY.Q)\n\
         SET POLICY(PAY.Q) SIGNALG(SHA256) ENCALG(AES256) RECIP('CN=bank') SIGNER('CN=shop')\n\
         DEFINE QLOCAL(IN.Q)\n\
         SET AUTHREC PROFILE('IN.Q') OBJTYPE(QUEUE) PRINCIPAL('app') AUTHADD(GET)\n",
    );
    let mut app = Client::connect_tcp_channel(&addr, "APP.SVRCONN", "probe").unwrap();
    let e = app.policy("PAY.Q").unwrap_err();
    assert_eq!(e.reason, sealmq_types::ReasonCode::NotAuthorized, "{e}");
    h.mqsc(
        "QMP",
        "SET AUTHREC PROFILE('PAY.Q') OBJTYPE(QUEUE) PRINCIPAL('app') AUTHADD(INQ)\n",
    );
    let p = app.policy("PAY.Q").unwrap().unwrap();
    assert_eq!(p.recipients.len(), 1);
    // A forged protection error: a message the handle never got.
    let (hin, _) = app.open("IN.Q", OpenOptions::input()).unwrap();
    let forged = Got {
        md: Md::default(),
        payload: b"forged entry".to_vec(),
        data_len: 12,
        warning: None,
        seq: 0,
    };
    let e = app
        .report_protection_error(hin, &forged, "SIGNATURE", "forged", false)
        .unwrap_err();
    assert_eq!(e.reason, sealmq_types::ReasonCode::NotAuthorized, "{e}");
    assert_eq!(h.depth("QMP", "SYSTEM.PROTECTION.ERROR.QUEUE"), 0);
    // For a message it did get from a queue with a policy, once.
    h.ok(&["put", "QMP", "IN.Q", "--message", "really got"]);
    h.mqsc("QMP", "SET POLICY(IN.Q) SIGNALG(SHA256)\n");
    drop(app);
    let mut app = Client::connect_tcp_channel(&addr, "APP.SVRCONN", "probe").unwrap();
    app.set_raw(true);
    let (hin, _) = app.open("IN.Q", OpenOptions::input()).unwrap();
    let got = app.get(hin, &Default::default()).unwrap();
    app.report_protection_error(hin, &got, "SIGNATURE", "bad", false)
        .unwrap();
    assert_eq!(h.depth("QMP", "SYSTEM.PROTECTION.ERROR.QUEUE"), 1);
    let e = app
        .report_protection_error(hin, &got, "SIGNATURE", "again", false)
        .unwrap_err();
    assert_eq!(e.reason, sealmq_types::ReasonCode::NotAuthorized);
    drop(app);
    h.ok(&["stop", "QMP"]);
}

#[test]
fn a_model_queue_survives_a_clean_restart_of_the_process() {
    let h = Home::new();
    h.ok(&["create", "QMM"]);
    h.ok(&["start", "QMM", "--background"]);
    h.mqsc("QMM", "DEFINE QMODEL(APP.REPLY.MODEL)\n");
    h.ok(&["stop", "QMM"]);
    h.ok(&["start", "QMM", "--background"]);
    let out = h.mqsc("QMM", "DISPLAY QMODEL(APP.REPLY.MODEL) DEFTYPE\n");
    assert!(out.contains("DEFTYPE(TEMPDYN)"), "{out}");
    h.ok(&["stop", "QMM"]);
}

/// Makes (once) an OS user other than the queue manager's, when the tests run as root.
fn other_user() -> Option<&'static str> {
    const NAME: &str = "sealmqother";
    if !std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"))
    {
        return None;
    }
    let exists = std::fs::read_to_string("/etc/passwd")
        .unwrap_or_default()
        .lines()
        .any(|l| l.starts_with(&format!("{NAME}:")));
    if !exists {
        let _ = std::process::Command::new("useradd")
            .args(["--system", "--no-create-home", NAME])
            .status();
    }
    std::fs::read_to_string("/etc/passwd")
        .unwrap_or_default()
        .lines()
        .any(|l| l.starts_with(&format!("{NAME}:")))
        .then_some(NAME)
}

#[test]
fn data_files_are_private_to_the_queue_managers_user() {
    use std::os::unix::fs::PermissionsExt;
    let h = Home::new();
    // The home open to everyone, as a home directory often is: only the queue manager's own
    // modes protect its data.
    for d in [h.dir.path().to_path_buf(), h.dir.path().join("qmgrs")] {
        std::fs::create_dir_all(&d).unwrap();
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    h.ok(&["create", "QMF"]);
    h.ok(&["start", "QMF", "--background"]);
    h.mqsc("QMF", "DEFINE QLOCAL(SECRET.Q) DEFPSIST(YES)\n");
    h.ok(&[
        "put",
        "QMF",
        "SECRET.Q",
        "--message",
        "card 4111-1111",
        "--persistent",
    ]);
    let dir = h.qm_dir("QMF");
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&dir), 0o700);
    let mut files = 0;
    for sub in ["log", "checkpoint", "keystore"] {
        assert_eq!(mode(&dir.join(sub)), 0o700, "{sub}");
        for f in std::fs::read_dir(dir.join(sub)).unwrap().flatten() {
            assert_eq!(mode(&f.path()) & 0o077, 0, "{}", f.path().display());
            files += 1;
        }
    }
    assert!(files > 3);
    assert_eq!(mode(&dir.join("qm.log")) & 0o077, 0);
    if let Some(other) = other_user() {
        let seg = std::fs::read_dir(dir.join("log"))
            .unwrap()
            .flatten()
            .next()
            .unwrap()
            .path();
        let o = std::process::Command::new("runuser")
            .args(["-u", other, "--", "cat", &s(&seg)])
            .output()
            .unwrap();
        assert!(!o.status.success(), "{other} read {}", seg.display());
        let o = std::process::Command::new("runuser")
            .args([
                "-u",
                other,
                "--",
                env!("CARGO_BIN_EXE_sealmq"),
                "get",
                "QMF",
                "SECRET.Q",
            ])
            .env("SEALMQ_HOME", h.dir.path())
            .output()
            .unwrap();
        assert!(!o.status.success(), "{other} reached the queue manager");
    } else {
        eprintln!("not root: the other-user part of this test is skipped");
    }
    h.ok(&["stop", "QMF"]);
    // A directory others can read is refused at start, naming the fix.
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let err = h.fails(&["start", "QMF", "--background"]);
    assert!(err.contains("chmod 0700"), "{err}");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::fs::set_permissions(dir.join("log"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let err = h.fails(&["start", "QMF", "--background"]);
    assert!(err.contains("go-rwx"), "{err}");
}

#[test]
fn a_group_named_at_create_reaches_the_socket_and_authority_decides() {
    let Some(other) = other_user() else {
        eprintln!("not root: skipped");
        return;
    };
    let _ = std::process::Command::new("groupadd")
        .args(["--system", "sealmqapps"])
        .status();
    let _ = std::process::Command::new("usermod")
        .args(["-a", "-G", "sealmqapps", other])
        .status();
    use std::os::unix::fs::PermissionsExt;
    let h = Home::new();
    for d in [h.dir.path().to_path_buf(), h.dir.path().join("qmgrs")] {
        std::fs::create_dir_all(&d).unwrap();
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    h.ok(&["create", "QMG", "--group", "sealmqapps"]);
    h.ok(&["start", "QMG", "--background"]);
    h.mqsc("QMG", "DEFINE QLOCAL(APP.Q)\n");
    let as_other = |args: &[&str]| {
        std::process::Command::new("runuser")
            .args(["-u", other, "--", env!("CARGO_BIN_EXE_sealmq")])
            .args(args)
            .env("SEALMQ_HOME", h.dir.path())
            .output()
            .unwrap()
    };
    // It reaches the queue manager, which refuses it until a record grants it.
    let o = as_other(&["put", "QMG", "APP.Q", "--message", "hi"]);
    assert!(String::from_utf8_lossy(&o.stderr).contains("2035"), "{o:?}");
    h.mqsc(
        "QMG",
        "SET AUTHREC OBJTYPE(QMGR) GROUP('sealmqapps') AUTHADD(CONNECT)\n\
         SET AUTHREC PROFILE('APP.*') OBJTYPE(QUEUE) GROUP('sealmqapps') AUTHADD(PUT)\n",
    );
    let o = as_other(&["put", "QMG", "APP.Q", "--message", "hi"]);
    assert!(o.status.success(), "{o:?}");
    assert_eq!(h.depth("QMG", "APP.Q"), 1);
    // MQSC from another user runs with that user's authority, which grants none of it here.
    let o = {
        use std::io::Write;
        let mut c = std::process::Command::new("runuser")
            .args([
                "-u",
                other,
                "--",
                env!("CARGO_BIN_EXE_sealmq"),
                "mqsc",
                "QMG",
            ])
            .env("SEALMQ_HOME", h.dir.path())
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let _ = c
            .stdin
            .take()
            .unwrap()
            .write_all(b"DEFINE SERVICE(EVIL) STARTCMD('/bin/sh')\nDISPLAY QLOCAL(APP.Q)\n");
        c.wait_with_output().unwrap()
    };
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(10), "{out}");
    assert_eq!(out.matches("AMQ8135E: Not authorized.").count(), 2, "{out}");
    assert!(!h.mqsc("QMG", "DISPLAY SERVICE(*)\n").contains("EVIL"));
    let ent = h.mqsc(
        "QMG",
        &format!("DISPLAY ENTAUTH PRINCIPAL('{other}') OBJNAME(APP.Q) OBJTYPE(QUEUE)\n"),
    );
    assert!(ent.contains("AUTHLIST(PUT)"), "{ent}");
    h.ok(&["stop", "QMG"]);
    // The directory is shared with the group: every file in it but the group's name must
    // still be the owner's alone. Made readable by an administrator's slip, each is refused
    // at start, naming the fix, and the start succeeds once it is fixed.
    let dir = h.dir.path().join("qmgrs").join("QMG");
    let errlog = std::fs::read_dir(dir.join("errors"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .next()
        .expect("an error log");
    for (path, mode) in [
        (dir.join("policy.key"), 0o640),
        (errlog, 0o644),
        (dir.join("qm.log"), 0o604),
    ] {
        let was = std::fs::metadata(&path).unwrap().permissions().mode();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        let err = h.fails(&["start", "QMG", "--background"]);
        assert!(
            err.contains(&*path.to_string_lossy()) && err.contains("go-rwx"),
            "{}: {err}",
            path.display()
        );
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(was)).unwrap();
    }
    h.ok(&["start", "QMG", "--background"]);
    h.ok(&["stop", "QMG"]);
}

#[test]
fn idle_sockets_do_not_lock_out_the_administrator_or_clients() {
    use std::io::Read;
    let h = Home::new();
    let port = free_port();
    h.ok(&["create", "QMX"]);
    // Started with a soft descriptor limit of 256: without raising it, 500 idle sockets (3
    // descriptors each) would exhaust it.
    let o = std::process::Command::new("bash")
        .arg("-c")
        .arg(format!(
            "ulimit -Sn 256 && exec {} start QMX --background --listen 127.0.0.1:{port}",
            env!("CARGO_BIN_EXE_sealmq")
        ))
        .env("SEALMQ_HOME", h.dir.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    h.mqsc(
        "QMX",
        "DEFINE QLOCAL(APP.Q)\n\
         DEFINE CHANNEL(APP.SVRCONN) CHLTYPE(SVRCONN) MCAUSER('app')\n\
         SET AUTHREC OBJTYPE(QMGR) PRINCIPAL('app') AUTHADD(CONNECT)\n\
         SET AUTHREC PROFILE('APP.Q') OBJTYPE(QUEUE) PRINCIPAL('app') AUTHADD(PUT,GET)\n",
    );
    let addr = format!("127.0.0.1:{port}");
    let idle: Vec<std::net::TcpStream> = (0..500)
        .map(|_| std::net::TcpStream::connect(&addr).unwrap())
        .collect();
    let started = Instant::now();
    // The administrator and a normal client still work.
    h.mqsc("QMX", "DISPLAY QMGR MAXCHL\n");
    h.ok(&[
        "put",
        "QMX",
        "APP.Q",
        "--message",
        "through",
        "--conn",
        &addr,
        "--channel",
        "APP.SVRCONN",
    ]);
    assert_eq!(h.depth("QMX", "APP.Q"), 1);
    // Sockets that never say Hello: past the budget of those waiting (per address too) the
    // oldest are closed to make room at once; the rest at the handshake deadline.
    let closed_by = |s: &std::net::TcpStream| {
        let mut s = s.try_clone().unwrap();
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let mut b = [0u8; 1];
        assert!(matches!(s.read(&mut b), Ok(0) | Err(_)));
        started.elapsed()
    };
    assert!(closed_by(&idle[0]) < Duration::from_secs(5));
    assert!(closed_by(idle.last().unwrap()) < Duration::from_secs(25));
    drop(idle);
    let log = log_of(&h, "QMX");
    assert!(log.contains("closed to make room"), "{log}");
    assert!(log.contains("no complete first frame"), "{log}");
    // MAXCHL: beyond it, a connection is refused with 2537; the administrator still gets in.
    // Sockets that said nothing yet do not count (they have a budget of their own).
    h.mqsc("QMX", "ALTER QMGR MAXCHL(3)\n");
    let silent: Vec<std::net::TcpStream> = (0..3)
        .map(|_| std::net::TcpStream::connect(&addr).unwrap())
        .collect();
    let held: Vec<sealmq_client::Client> = (0..3)
        .map(|_| sealmq_client::Client::connect_tcp_channel(&addr, "APP.SVRCONN", "held").unwrap())
        .collect();
    let err = h.fails(&[
        "put",
        "QMX",
        "APP.Q",
        "--message",
        "x",
        "--conn",
        &addr,
        "--channel",
        "APP.SVRCONN",
    ]);
    assert!(err.contains("2537"), "{err}");
    h.mqsc("QMX", "ALTER QMGR MAXCHL(1000)\n");
    drop(held);
    drop(silent);
    h.ok(&["stop", "QMX"]);
}

/// A small file system of its own (tmpfs), when the tests run as root; unmounted on drop.
struct SmallDisk(std::path::PathBuf);

impl SmallDisk {
    fn mount(at: &std::path::Path, size: &str) -> Option<SmallDisk> {
        std::fs::create_dir_all(at).ok()?;
        let ok = std::process::Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={size},mode=0700"),
                "tmpfs",
            ])
            .arg(at)
            .status()
            .ok()?
            .success();
        ok.then(|| SmallDisk(at.to_path_buf()))
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(&self.0)
            .status();
    }
}

#[test]
fn a_full_disk_is_drained_cleared_and_used_again_without_a_restart() {
    let h = Home::new();
    let qmgrs = h.dir.path().join("qmgrs");
    let Some(_disk) = SmallDisk::mount(&qmgrs, "40m") else {
        eprintln!("cannot mount a small file system (not root?): skipped");
        return;
    };
    h.ok(&["create", "QD"]);
    h.ok(&["start", "QD", "--background"]);
    h.mqsc(
        "QD",
        // A 1 MiB message cache: most of what fills the disk waits in queue files.
        "ALTER QMGR MSGCACHE(1)\nDEFINE QLOCAL(FILL.Q) MAXDEPTH(999999) DEFPSIST(YES)\n",
    );
    // Fill until the disk refuses: every put that returned is committed.
    let mut committed = 0u64;
    let err = loop {
        let o = h.run(
            &[
                "put",
                "QD",
                "FILL.Q",
                "--size",
                "65536",
                "--count",
                "50",
                "--persistent",
                "--log-commits",
                "--syncpoint",
                "1",
            ],
            None,
        );
        committed += String::from_utf8_lossy(&o.stdout)
            .lines()
            .filter(|l| l.starts_with("committed"))
            .count() as u64;
        if !o.status.success() {
            break stderr_of(&o);
        }
        assert!(committed < 2000, "the disk never filled");
    };
    assert!(err.contains("2102") || err.contains("disk"), "{err}");
    let data_files = common::queue_data_files(&h.qm_dir("QD"), "FILL.Q");
    assert!(data_files > 0, "messages were stored in queue files");
    assert_eq!(
        h.depth("QD", "FILL.Q"),
        committed,
        "every committed message is there"
    );
    // Gets still work on the full disk, and so does CLEAR.
    let got = h.ok(&["get", "QD", "FILL.Q", "--count", "5", "--verify"]);
    assert!(got.contains("got 5 ok 5"), "{got}");
    h.mqsc("QD", "CLEAR QLOCAL(FILL.Q)\n");
    assert_eq!(h.depth("QD", "FILL.Q"), 0);
    // Then the queue manager goes on, without a restart: the space comes back.
    wait_for(Duration::from_secs(10), "the reserve back", || {
        log_of(&h, "QD").contains("reserve of")
    });
    wait_for(Duration::from_secs(30), "puts accepted again", || {
        h.run(
            &["put", "QD", "FILL.Q", "--message", "again", "--persistent"],
            None,
        )
        .status
        .success()
    });
    assert!(log_of(&h, "QD").contains("reserve"));
    h.ok(&["stop", "QD"]);
    h.ok(&["start", "QD", "--background"]);
    assert_eq!(h.depth("QD", "FILL.Q"), 1);
    h.ok(&["stop", "QD"]);
}

/// Issue 27: a queue manager whose 40 MiB file system was filled by persistent puts, then
/// killed, starts again (it does not need the queued messages' size again before serving),
/// says what it waits for, serves gets, drains, fills again; and with the queue kept empty,
/// 20,000 persistent puts of 4 KiB (twice the file system) never meet a full disk: the log's
/// space comes back before it runs out, not after a refused put.
#[test]
fn a_full_disk_restarts_and_steady_traffic_never_fills_it() {
    let h = Home::new();
    let qmgrs = h.dir.path().join("qmgrs");
    let Some(_disk) = SmallDisk::mount(&qmgrs, "40m") else {
        eprintln!("cannot mount a small file system (not root?): skipped");
        return;
    };
    h.ok(&["create", "QN"]);
    h.ok(&["start", "QN", "--background"]);
    h.mqsc("QN", "DEFINE QLOCAL(F.Q) MAXDEPTH(999999) DEFPSIST(YES)\n");
    let put = |n: &str| {
        h.run(
            &[
                "put",
                "QN",
                "F.Q",
                "--size",
                "4096",
                "--count",
                n,
                "--persistent",
            ],
            None,
        )
    };
    let fill = || {
        for _ in 0..100 {
            let o = put("500");
            if !o.status.success() {
                let err = stderr_of(&o);
                assert!(err.contains("2102"), "{err}");
                return;
            }
        }
        panic!("the disk never filled");
    };
    fill();
    let depth = h.depth("QN", "F.Q");
    assert!(depth > 5000, "{depth}");
    // Killed on the full disk: the next start replays the log and must not need the queued
    // messages' size again before it serves.
    let pid = h.pid("QN");
    assert!(
        std::process::Command::new("kill")
            .args(["-9", &pid])
            .status()
            .unwrap()
            .success()
    );
    wait_for(Duration::from_secs(20), "the killed process to go", || {
        !std::path::Path::new(&format!("/proc/{pid}")).exists()
    });
    h.ok(&["start", "QN", "--background"]);
    assert_eq!(h.depth("QN", "F.Q"), depth, "nothing lost");
    let log = log_of(&h, "QN");
    assert!(log.contains("waits for room"), "{log}");
    // It serves gets, drains and fills again.
    let got = h.ok(&["get", "QN", "F.Q", "--count", "100", "--verify"]);
    assert!(got.contains("got 100 ok 100"), "{got}");
    h.ok(&["get", "QN", "F.Q", "--count", &(depth - 100).to_string()]);
    assert_eq!(h.depth("QN", "F.Q"), 0);
    wait_for(Duration::from_secs(30), "puts accepted again", || {
        put("1").status.success()
    });
    fill();
    h.mqsc("QN", "CLEAR QLOCAL(F.Q)\n");
    h.ok(&["stop", "QN"]);
    h.ok(&["start", "QN", "--background"]);
    assert_eq!(h.depth("QN", "F.Q"), 0);
    // Steady traffic at depth 0: 20,000 puts of 4 KiB, each message got again at once.
    let mut refused = Vec::new();
    for round in 0..40 {
        let o = put("500");
        if !o.status.success() {
            refused.push(format!("round {round}: {}", stderr_of(&o)));
        }
        h.ok(&["get", "QN", "F.Q", "--count", "500"]);
    }
    assert!(refused.is_empty(), "{refused:?}");
    h.ok(&["stop", "QN"]);
}

fn stderr_of(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn putaut_ctx_puts_with_the_senders_user_but_never_the_queue_managers() {
    let h = Home::new();
    let (ps, pr) = (free_port(), free_port());
    for (qm, port) in [("QMS", ps), ("QMR", pr)] {
        h.ok(&["create", qm]);
        h.start_tcp(qm, port);
    }
    h.mqsc(
        "QMS",
        &format!(
            "DEFINE QLOCAL(QMR) USAGE(XMITQ)\n\
             DEFINE QREMOTE(DEST) RNAME(DEST) RQMNAME(QMR) XMITQ(QMR)\n\
             DEFINE CHANNEL(QMS.QMR) CHLTYPE(SDR) CONNAME('127.0.0.1({pr})') XMITQ(QMR) SHORTTMR(0)\n\
             DEFINE CHANNEL(APP.SVRCONN) CHLTYPE(SVRCONN) MCAUSER('app')\n\
             SET AUTHREC OBJTYPE(QMGR) PRINCIPAL('app') AUTHADD(CONNECT)\n\
             SET AUTHREC PROFILE('DEST') OBJTYPE(QUEUE) PRINCIPAL('app') AUTHADD(PUT)\n"
        ),
    );
    h.mqsc(
        "QMR",
        "DEFINE QLOCAL(DEST)\n\
         DEFINE CHANNEL(QMS.QMR) CHLTYPE(RCVR) MCAUSER('partner') PUTAUT(CTX)\n\
         SET AUTHREC PROFILE('DEST') OBJTYPE(QUEUE) PRINCIPAL('app') AUTHADD(PUT)\n",
    );
    let shown = h.mqsc("QMR", "DISPLAY CHANNEL(QMS.QMR) PUTAUT MCAUSER\n");
    assert!(shown.contains("PUTAUT(CTX)"), "{shown}");
    // 'app' may put to DEST at QMR; the channel's own user 'partner' may not (not needed).
    let addr = format!("127.0.0.1:{ps}");
    h.ok(&[
        "put",
        "QMS",
        "DEST",
        "--message",
        "from app",
        "--persistent",
        "--conn",
        &addr,
        "--channel",
        "APP.SVRCONN",
    ]);
    // The administrator's messages carry QMS's own user id — the same name as QMR's own
    // user: PUTAUT(CTX) never puts as the queue manager.
    h.ok(&[
        "put",
        "QMS",
        "DEST",
        "--message",
        "from the admin",
        "--persistent",
    ]);
    h.mqsc("QMS", "START CHANNEL(QMS.QMR)\n");
    wait_for(Duration::from_secs(30), "both messages delivered", || {
        h.depth("QMR", "DEST") == 1 && h.depth("QMR", "SYSTEM.DEAD.LETTER.QUEUE") == 1
    });
    assert_eq!(h.ok(&["get", "QMR", "DEST"]), "from app\n");
    let dlq = h.ok(&["browse", "QMR", "SYSTEM.DEAD.LETTER.QUEUE"]);
    assert!(dlq.contains("2035"), "{dlq}");
    h.ok(&["stop", "QMS"]);
    h.ok(&["stop", "QMR"]);
}

/// The creator of a permanent dynamic queue holds every authority on it, through a restart (a
/// record of its own, as MQ's OAM keeps one), and the record goes when the queue is deleted:
/// a queue defined later under the name does not let the creator in.
#[test]
fn a_permanent_dynamic_queues_creator_holds_it_until_it_is_deleted() {
    use sealmq_client::Client;
    use sealmq_engine::mqi::{GetOptions, OpenOptions};
    let h = Home::new();
    let addr = app_qm(&h, "QPD");
    h.mqsc(
        "QPD",
        "DEFINE QMODEL(APP.PERM.MODEL) DEFTYPE(PERMDYN)\n\
         SET AUTHREC PROFILE('APP.PERM.MODEL') OBJTYPE(QUEUE) PRINCIPAL('app') AUTHADD(GET)\n",
    );
    let mut c = Client::connect_tcp_channel(&addr, "APP.SVRCONN", "pd").unwrap();
    let (q, name) = c
        .open_dynamic("APP.PERM.MODEL", OpenOptions::input(), "APP.MINE")
        .unwrap();
    assert_eq!(name, "APP.MINE");
    c.close(q).unwrap();
    let recs = h.mqsc(
        "QPD",
        "DISPLAY AUTHREC PROFILE('APP.MINE') OBJTYPE(QUEUE)\n",
    );
    assert!(recs.contains("PRINCIPAL(app)"), "{recs}");
    drop(c);
    h.ok(&["stop", "QPD"]);
    let port: u16 = addr.rsplit(':').next().unwrap().parse().unwrap();
    h.start_tcp("QPD", port);
    let mut c = Client::connect_tcp_channel(&addr, "APP.SVRCONN", "pd").unwrap();
    let (q, _) = c.open("APP.MINE", OpenOptions::output()).unwrap();
    let mut md = sealmq_engine::Md::default();
    c.put(q, &mut md, b"mine", false).unwrap();
    c.close(q).unwrap();
    let (q, _) = c.open("APP.MINE", OpenOptions::input()).unwrap();
    assert_eq!(c.get(q, &GetOptions::default()).unwrap().payload, b"mine");
    c.close(q).unwrap();
    drop(c);
    h.mqsc("QPD", "DELETE QLOCAL(APP.MINE)\nDEFINE QLOCAL(APP.MINE)\n");
    let recs = h.run(
        &["mqsc", "QPD"],
        Some("DISPLAY AUTHREC PROFILE('APP.MINE') OBJTYPE(QUEUE)\n"),
    );
    assert!(
        !String::from_utf8_lossy(&recs.stdout).contains("PRINCIPAL(app)"),
        "{recs:?}"
    );
    let mut c = Client::connect_tcp_channel(&addr, "APP.SVRCONN", "pd").unwrap();
    let e = c.open("APP.MINE", OpenOptions::output()).unwrap_err();
    assert_eq!(e.reason.code(), 2035, "{e:?}");
}

//! Channel authentication records and connection authentication as an MQ administrator
//! writes them, tried through real queue managers and clients.

#![allow(unsafe_code)]

mod common;
use common::*;

fn s(p: &std::path::Path) -> String {
    p.to_str().unwrap().to_string()
}

fn log_of(h: &Home, qm: &str) -> String {
    std::fs::read_to_string(h.qm_dir(qm).join("qm.log")).unwrap_or_default()
}

fn qm_tcp(h: &Home, qm: &str) -> String {
    let port = free_port();
    h.ok(&["create", qm]);
    h.start_tcp(qm, port);
    format!("127.0.0.1:{port}")
}

fn put_via(h: &Home, qm: &str, addr: &str, channel: &str, extra: &[&str]) -> std::process::Output {
    let mut a = vec![
        "put",
        qm,
        "APP.Q",
        "--message",
        "m",
        "--conn",
        addr,
        "--channel",
        channel,
    ];
    a.extend_from_slice(extra);
    h.run(&a, None)
}

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

const APP_SETUP: &str = "DEFINE QLOCAL(APP.Q)\n\
    SET AUTHREC OBJTYPE(QMGR) PRINCIPAL('app') AUTHADD(CONNECT)\n\
    SET AUTHREC PROFILE('APP.Q') OBJTYPE(QUEUE) PRINCIPAL('app') AUTHADD(PUT,GET)\n";

#[test]
fn blockuser_refuses_and_the_log_names_the_rule() {
    let h = Home::new();
    let addr = qm_tcp(&h, "QB");
    h.mqsc("QB", APP_SETUP);
    h.mqsc(
        "QB",
        "DEFINE CHANNEL(APP.SVRCONN) CHLTYPE(SVRCONN) MCAUSER('app')\n\
         DEFINE CHANNEL(GUEST.SVRCONN) CHLTYPE(SVRCONN) MCAUSER('guest')\n\
         SET CHLAUTH('*.SVRCONN') TYPE(BLOCKUSER) USERLIST('guest','nobody')\n",
    );
    assert!(
        put_via(&h, "QB", &addr, "APP.SVRCONN", &[])
            .status
            .success()
    );
    let o = put_via(&h, "QB", &addr, "GUEST.SVRCONN", &[]);
    assert!(stderr(&o).contains("2035"), "{o:?}");
    assert!(log_of(&h, "QB").contains("would run as 'guest'"));
    let shown = h.mqsc("QB", "DISPLAY CHLAUTH('*.SVRCONN') ALL\n");
    assert!(shown.contains("USERLIST(guest,nobody)"), "{shown}");
    // ACTION(REMOVE) takes an entry out of the list: guest gets in.
    h.mqsc(
        "QB",
        "SET CHLAUTH('*.SVRCONN') TYPE(BLOCKUSER) USERLIST('guest') ACTION(REMOVE)\n\
         SET AUTHREC OBJTYPE(QMGR) PRINCIPAL('guest') AUTHADD(CONNECT)\n\
         SET AUTHREC PROFILE('APP.Q') OBJTYPE(QUEUE) PRINCIPAL('guest') AUTHADD(PUT)\n",
    );
    assert!(
        put_via(&h, "QB", &addr, "GUEST.SVRCONN", &[])
            .status
            .success()
    );
    // CHLAUTH(DISABLED) turns the records off; BLOCKADDR refuses by address.
    h.mqsc(
        "QB",
        "SET CHLAUTH('*') TYPE(BLOCKADDR) ADDRLIST('127.0.0.*')\n",
    );
    // The client gets 2035 and nothing of the rule; the log names it (issue 24).
    let o = stderr(&put_via(&h, "QB", &addr, "APP.SVRCONN", &[]));
    assert!(o.contains("2035") && !o.contains("BLOCKADDR"), "{o}");
    assert!(log_of(&h, "QB").contains("BLOCKADDR"));
    h.mqsc("QB", "ALTER QMGR CHLAUTH(DISABLED)\n");
    assert!(
        put_via(&h, "QB", &addr, "APP.SVRCONN", &[])
            .status
            .success()
    );
    h.ok(&["stop", "QB"]);
}

#[test]
fn an_addressmap_backstop_with_an_exception() {
    let h = Home::new();
    let addr = qm_tcp(&h, "QA");
    h.mqsc("QA", APP_SETUP);
    h.mqsc(
        "QA",
        "DEFINE CHANNEL(APP.SVRCONN) CHLTYPE(SVRCONN) MCAUSER('app')\n\
         DEFINE CHANNEL(OTHER.SVRCONN) CHLTYPE(SVRCONN) MCAUSER('app')\n\
         SET CHLAUTH('*') TYPE(ADDRESSMAP) ADDRESS('*') USERSRC(NOACCESS) DESCR('backstop')\n\
         SET CHLAUTH('APP.SVRCONN') TYPE(ADDRESSMAP) ADDRESS('127.0.0.1') USERSRC(CHANNEL)\n",
    );
    assert!(
        put_via(&h, "QA", &addr, "APP.SVRCONN", &[])
            .status
            .success()
    );
    let o = put_via(&h, "QA", &addr, "OTHER.SVRCONN", &[]);
    assert!(
        stderr(&o).contains("2035") && !stderr(&o).contains("NOACCESS"),
        "{o:?}"
    );
    assert!(log_of(&h, "QA").contains("NOACCESS"));
    // A record that exists cannot be ADDed again; REPLACE changes it.
    let o = h.run(
        &["mqsc", "QA"],
        Some(
            "SET CHLAUTH('APP.SVRCONN') TYPE(ADDRESSMAP) ADDRESS('127.0.0.1') USERSRC(NOACCESS)\n",
        ),
    );
    assert!(!o.status.success());
    h.mqsc(
        "QA",
        "SET CHLAUTH('APP.SVRCONN') TYPE(ADDRESSMAP) ADDRESS('127.0.0.1') USERSRC(NOACCESS) ACTION(REPLACE)\n",
    );
    assert!(
        !put_via(&h, "QA", &addr, "APP.SVRCONN", &[])
            .status
            .success()
    );
    h.ok(&["stop", "QA"]);
}

#[test]
fn sslpeermap_maps_a_certificate_to_an_mcauser_whose_authority_applies() {
    let h = Home::new();
    let port = free_port();
    h.ok(&["create", "QT"]);
    let alice = h.dir.path().join("alice");
    let addr = h.start_tls_for("QT", port, &alice, "CN=alice,O=Example");
    h.mqsc(
        "QT",
        "DEFINE QLOCAL(APP.Q)\n\
         DEFINE CHANNEL(TLS.SVRCONN) CHLTYPE(SVRCONN) SSLCIPH(ANY)\n\
         SET CHLAUTH('TLS.SVRCONN') TYPE(SSLPEERMAP) SSLPEER('CN=alice,O=Example') USERSRC(MAP) MCAUSER('payments')\n",
    );
    let tls = ["--tls", "--keystore", &s(&alice)];
    // Mapped to 'payments', which has no authority yet: the DN's own records do not count.
    h.mqsc(
        "QT",
        "SET AUTHREC OBJTYPE(QMGR) PRINCIPAL('CN=alice,O=Example') AUTHADD(CONNECT)\n\
         SET AUTHREC PROFILE('APP.Q') OBJTYPE(QUEUE) PRINCIPAL('CN=alice,O=Example') AUTHADD(PUT)\n",
    );
    let o = put_via(&h, "QT", &addr, "TLS.SVRCONN", &tls);
    assert!(stderr(&o).contains("'payments'"), "{o:?}");
    h.mqsc(
        "QT",
        "SET AUTHREC OBJTYPE(QMGR) PRINCIPAL('payments') AUTHADD(CONNECT)\n\
         SET AUTHREC PROFILE('APP.Q') OBJTYPE(QUEUE) PRINCIPAL('payments') AUTHADD(PUT,BROWSE)\n",
    );
    let o = put_via(&h, "QT", &addr, "TLS.SVRCONN", &tls);
    assert!(o.status.success(), "{o:?}");
    let c =
        sealmq_client::Client::connect_tls_channel(&addr, &alice, Some("QT"), "TLS.SVRCONN", "t")
            .unwrap();
    assert_eq!(c.user, "payments", "the connection runs as the mapped user");
    drop(c);
    h.ok(&["stop", "QT"]);
}

#[test]
fn connection_authentication_with_the_password_file() {
    let h = Home::new();
    let addr = qm_tcp(&h, "QP");
    h.mqsc("QP", "DEFINE QLOCAL(APP.Q)\n");
    let new_pw = |user: &str, pw: &str| h.passwd("QP", user, pw);
    new_pw("payuser", "right horse battery");
    h.mqsc(
        "QP",
        "DEFINE CHANNEL(APP.SVRCONN) CHLTYPE(SVRCONN)\n\
         DEFINE AUTHINFO(APP.IDPW) AUTHTYPE(IDPWOS) CHCKCLNT(REQUIRED) ADOPTCTX(YES) PWCLEAR(YES)\n\
         ALTER QMGR CONNAUTH(APP.IDPW)\n\
         REFRESH SECURITY TYPE(CONNAUTH)\n\
         SET AUTHREC OBJTYPE(QMGR) PRINCIPAL('payuser') AUTHADD(CONNECT)\n\
         SET AUTHREC PROFILE('APP.Q') OBJTYPE(QUEUE) PRINCIPAL('payuser') AUTHADD(PUT)\n",
    );
    let put = |pw: Option<&str>, clear: bool| {
        let mut c = h.cmd(&[
            "put",
            "QP",
            "APP.Q",
            "--message",
            "m",
            "--conn",
            &addr,
            "--channel",
            "APP.SVRCONN",
        ]);
        if let Some(p) = pw {
            c.args(["--user", "payuser"]).env("SEALMQ_PASSWORD", p);
        }
        if clear {
            c.arg("--allow-cleartext-password");
        }
        c.output().unwrap()
    };
    // REQUIRED without a password; a wrong one; the client itself refusing clear text.
    assert!(stderr(&put(None, false)).contains("2035"));
    let o = put(Some("wrong"), true);
    assert!(stderr(&o).contains("2035"), "{o:?}");
    assert!(!stderr(&o).contains("payuser"), "{o:?}");
    assert!(log_of(&h, "QP").contains("not accepted"));
    assert!(stderr(&put(Some("right horse battery"), false)).contains("in clear"));
    let o = put(Some("right horse battery"), true);
    assert!(o.status.success(), "{o:?}");
    assert_eq!(h.depth("QP", "APP.Q"), 1);
    // No password in the log, ever.
    assert!(!log_of(&h, "QP").contains("right horse"));
    assert!(!log_of(&h, "QP").contains("wrong"));
    // Without PWCLEAR(YES) the queue manager refuses a password that crossed in clear.
    h.mqsc(
        "QP",
        "ALTER AUTHINFO(APP.IDPW) AUTHTYPE(IDPWOS) PWCLEAR(NO)\n",
    );
    assert!(stderr(&put(Some("right horse battery"), true)).contains("without TLS"));
    h.mqsc(
        "QP",
        "ALTER AUTHINFO(APP.IDPW) AUTHTYPE(IDPWOS) PWCLEAR(YES)\n",
    );
    // An oversized password is refused before any work.
    let o = put(Some(&"x".repeat(5000)), true);
    assert!(stderr(&o).contains("too long"), "{o:?}");
    // A password file with a bad line: the refresh fails naming it, the old users still work.
    let pf = h.qm_dir("QP").join("passwd");
    let good = std::fs::read_to_string(&pf).unwrap();
    std::fs::write(&pf, format!("{good}bad line without a hash\n")).unwrap();
    let o = h.run(&["mqsc", "QP"], Some("REFRESH SECURITY TYPE(CONNAUTH)\n"));
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(!o.status.success() && out.contains("line"), "{out}");
    assert!(put(Some("right horse battery"), true).status.success());
    std::fs::write(&pf, good).unwrap();
    // Passwords from a file descriptor: nothing in the environment or the shell's history.
    let secret = h.dir.path().join("pw");
    std::fs::write(&secret, "fd horse battery\n").unwrap();
    let o = with_fd3(
        h.cmd(&["passwd", "QP", "payuser", "--password-fd", "3"]),
        &secret,
    );
    assert!(o.status.success(), "{o:?}");
    h.mqsc("QP", "REFRESH SECURITY TYPE(CONNAUTH)\n");
    let mut c = h.cmd(&[
        "put",
        "QP",
        "APP.Q",
        "--message",
        "fd",
        "--conn",
        &addr,
        "--channel",
        "APP.SVRCONN",
        "--user",
        "payuser",
        "--password-fd",
        "3",
        "--allow-cleartext-password",
    ]);
    c.env_remove("SEALMQ_PASSWORD");
    let o = with_fd3(c, &secret);
    assert!(o.status.success(), "{o:?}");
    assert_eq!(h.depth("QP", "APP.Q"), 3);
    // A descriptor that is not open is named, not waited on.
    let o = h
        .cmd(&[
            "put",
            "QP",
            "APP.Q",
            "--message",
            "x",
            "--conn",
            &addr,
            "--user",
            "payuser",
            "--password-fd",
            "7",
        ])
        .output()
        .unwrap();
    assert!(
        stderr(&o).contains("--password-fd 7: no such open file descriptor"),
        "{o:?}"
    );
    h.ok(&["stop", "QP"]);
}

/// Runs `c` with `file` open for reading as its descriptor 3 (as `3<file` in a shell).
fn with_fd3(mut c: std::process::Command, file: &std::path::Path) -> std::process::Output {
    use std::os::fd::AsRawFd;
    use std::os::unix::process::CommandExt;
    let f = std::fs::File::open(file).unwrap();
    let fd = f.as_raw_fd();
    // SAFETY: dup2 is async-signal-safe; it runs in the child between fork and exec.
    unsafe {
        c.pre_exec(move || {
            // dup2 onto itself keeps close-on-exec: clear it then.
            let r = if fd == 3 {
                libc::fcntl(3, libc::F_SETFD, 0)
            } else {
                libc::dup2(fd, 3)
            };
            if r < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let o = c.output().unwrap();
    drop(f);
    o
}

#[test]
fn group_authority_unites_with_the_users_own() {
    // 'daemon' is a user whose primary group is 'daemon' on Debian.
    let passwd = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
    if !passwd.lines().any(|l| l.starts_with("daemon:")) {
        eprintln!("no daemon user: skipped");
        return;
    }
    let h = Home::new();
    let addr = qm_tcp(&h, "QG");
    h.mqsc(
        "QG",
        "DEFINE QLOCAL(APP.Q)\n\
         DEFINE CHANNEL(D.SVRCONN) CHLTYPE(SVRCONN) MCAUSER('daemon')\n\
         SET AUTHREC OBJTYPE(QMGR) GROUP('daemon') AUTHADD(CONNECT)\n",
    );
    assert!(stderr(&put_via(&h, "QG", &addr, "D.SVRCONN", &[])).contains("PUT"));
    h.mqsc(
        "QG",
        "SET AUTHREC PROFILE('APP.*') OBJTYPE(QUEUE) GROUP('daemon') AUTHADD(ALLMQI)\n",
    );
    assert!(put_via(&h, "QG", &addr, "D.SVRCONN", &[]).status.success());
    let shown = h.mqsc("QG", "DISPLAY AUTHREC GROUP('daemon') OBJTYPE(QUEUE)\n");
    assert!(
        shown.contains("GROUP(daemon)") && shown.contains("PASSALL"),
        "{shown}"
    );
    h.ok(&["stop", "QG"]);
}

#[test]
fn bad_security_commands_are_clear_errors_and_store_nothing() {
    let h = Home::new();
    h.ok(&["create", "QE"]);
    h.ok(&["start", "QE", "--background"]);
    for (bad, says) in [
        (
            "SET CHLAUTH('X') TYPE(ADDRESSMAP) ADDRESS('1.2.3.999') USERSRC(CHANNEL)\n",
            "address pattern",
        ),
        (
            "SET CHLAUTH('X') TYPE(ADDRESSMAP) USERSRC(CHANNEL)\n",
            "needs ADDRESS",
        ),
        (
            "SET CHLAUTH('X*') TYPE(BLOCKADDR) ADDRLIST('1.2.3.4')\n",
            "must be '*'",
        ),
        (
            "SET CHLAUTH('X') TYPE(SSLPEERMAP) SSLPEER('CN=a')\n",
            "MCAUSER",
        ),
        ("SET CHLAUTH('X') TYPE(NOSUCH)\n", "expected BLOCKUSER"),
        (
            "SET CHLAUTH('X') TYPE(BLOCKUSER) USERLIST('a') QMNAME(Q)\n",
            "does not apply",
        ),
        (
            "DEFINE AUTHINFO(LDAP) AUTHTYPE(IDPWLDAP)\n",
            "not available",
        ),
        ("ALTER QMGR CONNAUTH(NOT.DEFINED)\n", "not defined"),
        (
            "SET AUTHREC PROFILE('Q') OBJTYPE(QUEUE) PRINCIPAL('a') GROUP('b') AUTHADD(PUT)\n",
            "not both",
        ),
        (
            "SET AUTHREC PROFILE('Q') OBJTYPE(QUEUE) PRINCIPAL('a') AUTHADD(FLY)\n",
            "not an authority",
        ),
    ] {
        let o = h.run(&["mqsc", "QE"], Some(bad));
        let out = String::from_utf8_lossy(&o.stdout).into_owned();
        assert!(!o.status.success() && out.contains(says), "{bad}: {out}");
    }
    let o = h.run(&["mqsc", "QE"], Some("DISPLAY CHLAUTH('X')\n"));
    assert!(!o.status.success(), "nothing was stored");
    let o = h.run(&["mqsc", "QE"], Some("DISPLAY AUTHINFO(LDAP)\n"));
    assert!(!o.status.success());
    // The defaults a new queue manager has.
    let shown = h.mqsc(
        "QE",
        "DISPLAY CHLAUTH(*) ALL\nDISPLAY AUTHINFO(*) ALL\nDISPLAY QMGR CHLAUTH CONNAUTH\n",
    );
    for want in [
        "CHLAUTH(SYSTEM.*)",
        "USERSRC(NOACCESS)",
        "USERLIST(*MQADMIN)",
        "AUTHINFO(SYSTEM.DEFAULT.AUTHINFO.IDPWOS)",
        "CHCKCLNT(REQDADM)",
        "CONNAUTH(SYSTEM.DEFAULT.AUTHINFO.IDPWOS)",
    ] {
        assert!(shown.contains(want), "{want}: {shown}");
    }
    // The records survive a restart.
    h.mqsc(
        "QE",
        "SET CHLAUTH('APP.*') TYPE(BLOCKUSER) USERLIST('guest')\n",
    );
    h.ok(&["stop", "QE"]);
    h.ok(&["start", "QE", "--background"]);
    assert!(
        h.mqsc("QE", "DISPLAY CHLAUTH('APP.*')\n")
            .contains("USERLIST(guest)")
    );
    h.ok(&["stop", "QE"]);
}

#[test]
fn operating_system_users_are_checked_through_pam() {
    let is_root = std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"));
    if !is_root || !std::path::Path::new("/etc/pam.d/other").exists() {
        eprintln!("not root or no PAM: skipped");
        return;
    }
    let user = "sealmqpam";
    let _ = std::process::Command::new("useradd")
        .args(["--system", "--no-create-home", user])
        .status();
    let mut c = std::process::Command::new("chpasswd")
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    c.stdin
        .take()
        .unwrap()
        .write_all(format!("{user}:Os-pass-42\n").as_bytes())
        .unwrap();
    assert!(c.wait().unwrap().success());
    let h = Home::new();
    let addr = qm_tcp(&h, "QO");
    h.mqsc(
        "QO",
        &format!(
            "DEFINE QLOCAL(APP.Q)\n\
             DEFINE CHANNEL(APP.SVRCONN) CHLTYPE(SVRCONN)\n\
             ALTER AUTHINFO(SYSTEM.DEFAULT.AUTHINFO.IDPWOS) AUTHTYPE(IDPWOS) CHCKCLNT(REQUIRED) PWCLEAR(YES)\n\
             SET AUTHREC OBJTYPE(QMGR) PRINCIPAL('{user}') AUTHADD(CONNECT)\n\
             SET AUTHREC PROFILE('APP.Q') OBJTYPE(QUEUE) PRINCIPAL('{user}') AUTHADD(PUT)\n"
        ),
    );
    let put = |pw: &str| {
        h.cmd(&[
            "put",
            "QO",
            "APP.Q",
            "--message",
            "m",
            "--conn",
            &addr,
            "--channel",
            "APP.SVRCONN",
            "--user",
            user,
            "--allow-cleartext-password",
        ])
        .env("SEALMQ_PASSWORD", pw)
        .output()
        .unwrap()
    };
    assert!(stderr(&put("wrong")).contains("2035"));
    let o = put("Os-pass-42");
    assert!(o.status.success(), "{o:?}");
    assert_eq!(h.depth("QO", "APP.Q"), 1);
    h.ok(&["stop", "QO"]);
}

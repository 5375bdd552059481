//! `sealmq web`, the installation's server (issue 46): every queue manager under SEALMQ_HOME
//! listed with its state, the running ones administered and messaged through it with each
//! queue manager's own authority, the ended ones answered with 2059, started and stopped by an
//! admin only; the principal it asserts to a queue manager's private socket cannot be asserted
//! by anyone else.

use super::{Answer, Web};
use crate::common::{Home, WebServer, wait_for};
use std::time::Duration;

const BOSS: &str = "boss:boss-horse-battery";
const OPS: &str = "ops:ops-horse-battery";
const APP: &str = "app:app-horse-battery";
const CSRF: &str = "ibm-mq-rest-csrf-token: x";

fn installation() -> (Web, WebServer) {
    let h = Home::new();
    h.ok(&["create", "QA"]);
    h.ok(&["create", "QB"]);
    h.ok(&["start", "QA", "--background"]);
    for (u, p) in [BOSS, OPS, APP].iter().filter_map(|c| c.split_once(':')) {
        h.web_passwd(u, p);
    }
    let server = h.web_server(&["--admin", "boss", "--readonly", "ops", "--messaging", "app"]);
    let base = format!("https://{}", server.addr);
    (Web { h, base }, server)
}

fn states(a: &Answer) -> Vec<(String, String)> {
    a.json()["qmgr"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| {
            (
                q["name"].as_str().unwrap().to_string(),
                q["state"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn pair(n: &str, s: &str) -> (String, String) {
    (n.to_string(), s.to_string())
}

#[test]
fn sealmq_web_serves_every_queue_manager_and_starts_and_stops_them_for_an_admin() {
    let (w, _server) = installation();
    let h = &w.h;
    // Every queue manager, running or not.
    let a = w.curl(&["-u", OPS], "admin/qmgr");
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(states(&a), [pair("QA", "running"), pair("QB", "ended")]);
    let a = w.curl(&["-u", OPS], "admin/qmgr?state=ended");
    assert_eq!(states(&a), [pair("QB", "ended")]);
    assert_eq!(w.curl(&["-u", OPS], "admin/qmgr?bogus=1").status, 400);
    assert_eq!(w.curl(&[], "admin/qmgr").status, 401);
    // The login session: no queue manager of its own.
    let who = w.curl(&["-u", OPS], "login").json();
    assert!(who["user"][0]["queueManager"].is_null(), "{who}");
    // A running queue manager's objects, through it, as MQ's REST API answers them.
    let a = w.curl(&["-u", OPS], "admin/qmgr/QA/queue?name=SYSTEM.DEAD*");
    assert_eq!(a.status, 200, "{}", a.body);
    assert!(a.body.contains("SYSTEM.DEAD.LETTER.QUEUE"), "{}", a.body);
    // An ended one: MQ's 503 with 2059; an unknown one: 404 with 2058.
    let a = w.curl(&["-u", OPS], "admin/qmgr/QB/queue");
    assert_eq!(a.status, 503, "{}", a.body);
    assert_eq!(a.json()["error"][0]["reasonCode"], 2059);
    let a = w.curl(&["-u", OPS], "admin/qmgr/NOPE/queue");
    assert_eq!(
        (a.status, a.json()["error"][0]["reasonCode"].clone()),
        (404, 2058.into())
    );
    // Only an admin starts and stops: the read-only user is refused, even claiming the
    // roles the installation's server asserts to a queue manager.
    for extra in [
        [].as_slice(),
        &[
            "-H",
            "x-sealmq-user: boss",
            "-H",
            "x-sealmq-roles: MQWebAdmin",
        ],
    ] {
        let mut args = vec!["-u", OPS, "-X", "POST", "-H", CSRF];
        args.extend_from_slice(extra);
        let a = w.curl(&args, "admin/action/qmgr/QB/start");
        assert_eq!(a.status, 403, "{}", a.body);
    }
    assert!(h.ok(&["status", "QB"]).contains("STATUS(ENDED)"));
    let a = w.curl(
        &["-u", BOSS, "-X", "POST", "-H", CSRF],
        "admin/action/qmgr/QB/start",
    );
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(states(&a), [pair("QB", "running")]);
    assert!(h.ok(&["status", "QB"]).contains("STATUS(RUNNING)"));
    // MQSC through it, run by the queue manager (logged there with the web user).
    let a = w.curl(
        &[
            "-u",
            BOSS,
            "-H",
            CSRF,
            "-H",
            "Content-Type: application/json",
            "--data-binary",
            r#"{"type":"runCommand","parameters":{"command":"DEFINE QLOCAL(WEB.Q)"}}"#,
        ],
        "admin/action/qmgr/QB/mqsc",
    );
    assert!(a.body.contains("AMQ8006I"), "{}", a.body);
    // Messaging with the queue manager's own authority: refused until an AUTHREC allows it.
    let put = |who: &str| {
        w.curl(
            &[
                "-u",
                who,
                "-H",
                CSRF,
                "-H",
                "Content-Type: text/plain",
                "--data-binary",
                "via web",
            ],
            "messaging/qmgr/QB/queue/WEB.Q/message",
        )
    };
    let a = put(APP);
    assert_eq!(a.status, 403, "{}", a.body);
    assert_eq!(a.json()["error"][0]["reasonCode"], 2035);
    h.mqsc(
        "QB",
        "SET AUTHREC OBJTYPE(QMGR) PRINCIPAL('app') AUTHADD(CONNECT)\n\
         SET AUTHREC PROFILE('WEB.Q') OBJTYPE(QUEUE) PRINCIPAL('app') AUTHADD(PUT,GET)\n",
    );
    assert_eq!(put(APP).status, 201);
    assert_eq!(h.depth("QB", "WEB.Q"), 1);
    let a = w.curl(
        &["-u", APP, "-X", "DELETE", "-H", CSRF],
        "messaging/qmgr/QB/queue/WEB.Q/message",
    );
    assert_eq!((a.status, a.body.as_str()), (200, "via web"));
    // The read-only role does not put, whatever the queue manager would allow.
    assert_eq!(put(OPS).status, 403);
    // A login session works across queue managers.
    let jar = h.dir.path().join("jar");
    let jar = jar.to_string_lossy();
    let a = w.curl(
        &[
            "-c",
            &jar,
            "-H",
            "Content-Type: application/json",
            "--data-binary",
            r#"{"username":"boss","password":"boss-horse-battery"}"#,
        ],
        "login",
    );
    assert_eq!(a.status, 204, "{}", a.body);
    let a = w.curl(&["-b", &jar], "admin/qmgr?state=running");
    assert_eq!(states(&a), [pair("QA", "running"), pair("QB", "running")]);
    let a = w.curl(
        &["-b", &jar, "-X", "POST", "-H", CSRF],
        "admin/action/qmgr/QB/stop",
    );
    assert_eq!(
        (a.status, states(&a)),
        (200, vec![pair("QB", "ended")]),
        "{}",
        a.body
    );
    assert!(h.ok(&["status", "QB"]).contains("STATUS(ENDED)"));
    // Starts and stops are in the server's error log with the user who asked.
    let log = std::fs::read_to_string(h.dir.path().join("web/errors/SEALMQ01.LOG")).unwrap();
    assert!(
        log.contains("start QB") && log.contains("user=boss"),
        "{log}"
    );
    h.ok(&["stop", "QA"]);
}

/// The private socket trusts the principal it is told only from the queue manager's own
/// user: another user who could reach it (the directory opened up here on purpose) is
/// refused before a byte is read, and the queue manager's own HTTPS listener ignores the
/// assertion headers.
#[test]
fn a_queue_managers_private_socket_refuses_other_users_and_https_ignores_assertions() {
    let h = Home::new();
    h.ok(&["create", "QS"]);
    h.passwd("QS", "reader", "reader-horse-battery");
    h.ok(&["start", "QS", "--background", "--web", "127.0.0.1:0"]);
    let sock = h.qm_dir("QS").join("web.sock");
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&sock).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "the socket is private");
    let request = "GET /ibmmq/rest/v2/admin/qmgr HTTP/1.1\r\nHost: x\r\n\
                   x-sealmq-user: root\r\nx-sealmq-roles: MQWebAdmin\r\nConnection: close\r\n\r\n";
    // The owner's own connection gets its answer.
    let own = raw_unix(&sock, request, None);
    assert!(own.starts_with("HTTP/1.1 200"), "{own}");
    // Opened up to everyone, it still answers nobody else.
    for d in [
        h.dir.path().to_path_buf(),
        h.dir.path().join("qmgrs"),
        h.qm_dir("QS"),
    ] {
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    std::fs::set_permissions(&sock, std::fs::Permissions::from_mode(0o666)).unwrap();
    let other = raw_unix(&sock, request, Some(65534));
    assert!(
        !other.contains("HTTP/1.1"),
        "another user was answered: {other}"
    );
    std::fs::set_permissions(h.qm_dir("QS"), std::fs::Permissions::from_mode(0o700)).unwrap();
    // The HTTPS listener reads no assertion.
    let w = Web {
        base: format!("https://{}", h.listener("QS", "web")),
        h: Home::new(),
    };
    let forged = [
        "-H",
        "x-sealmq-user: root",
        "-H",
        "x-sealmq-roles: MQWebAdmin",
    ];
    assert_eq!(w.curl(&forged, "admin/qmgr").status, 401);
    let mut as_reader = vec![
        "-u",
        "reader:reader-horse-battery",
        "-X",
        "POST",
        "-H",
        CSRF,
    ];
    as_reader.extend_from_slice(&forged);
    as_reader.extend_from_slice(&[
        "-H",
        "Content-Type: application/json",
        "--data-binary",
        r#"{"type":"runCommand","parameters":{"command":"DEFINE QLOCAL(X)"}}"#,
    ]);
    assert_eq!(w.curl(&as_reader, "admin/action/qmgr/QS/mqsc").status, 403);
    wait_for(Duration::from_secs(5), "the socket's log line", || {
        std::fs::read_to_string(h.qm_dir("QS").join("errors/SEALMQ01.LOG"))
            .is_ok_and(|l| l.contains("a connection from another user refused"))
    });
    h.ok(&["stop", "QS"]);
}

/// Sends `request` on the Unix socket `sock` (as user `uid`, through python3, when given)
/// and returns what came back before the socket closed.
fn raw_unix(sock: &std::path::Path, request: &str, uid: Option<u32>) -> String {
    let script = "import os,socket,sys\n\
        u=int(sys.argv[2])\n\
        if u>=0:\n os.setgid(u); os.setuid(u)\n\
        s=socket.socket(socket.AF_UNIX); s.settimeout(10)\n\
        try:\n s.connect(sys.argv[1]); s.sendall(sys.argv[3].encode())\n \
        d=b''\n while True:\n  c=s.recv(65536)\n  if not c: break\n  d+=c\n \
        sys.stdout.write(d.decode('latin-1'))\n\
        except Exception as e:\n sys.stdout.write('error: %s' % e)\n";
    let o = std::process::Command::new("python3")
        .args(["-c", script])
        .arg(sock)
        .arg(uid.map(i64::from).unwrap_or(-1).to_string())
        .arg(request)
        .output()
        .expect("python3 runs");
    String::from_utf8_lossy(&o.stdout).into_owned()
}

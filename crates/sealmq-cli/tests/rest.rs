//! IBM MQ's REST API on `sealmq start --web` (issue 29), driven by an ordinary HTTP client
//! (curl): runCommand and runCommandJSON for define, display, alter and delete; a read-only
//! user refused a DEFINE with nothing changed; the CSRF header required; bad JSON, an unknown
//! qualifier and an oversized body answered 400 with MQ's error JSON; login sessions; and
//! messages put, got and browsed with their headers, round-tripping with sealmq's own put and
//! get.

#[path = "rest/ams.rs"]
mod ams;
#[path = "rest/certs.rs"]
mod certs;
mod common;
#[path = "rest/installation.rs"]
mod installation;
#[path = "rest/limits.rs"]
mod limits;
#[path = "rest/queues.rs"]
mod queues;

use certs::{cert_args, client_identity};
use common::Home;
use serde_json::Value;

struct Web {
    h: Home,
    base: String,
}

struct Answer {
    status: u16,
    headers: String,
    body: String,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.body))
    }
    fn header(&self, name: &str) -> Option<String> {
        self.headers.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim()
                .eq_ignore_ascii_case(name)
                .then(|| v.trim().to_string())
        })
    }
}

impl Web {
    /// curl with `args`, then the URL under /ibmmq/rest/v2/.
    fn curl(&self, args: &[&str], path: &str) -> Answer {
        self.curl_api("v2", args, path)
    }

    /// curl with `args`, then the URL under /ibmmq/rest/`api`/.
    fn curl_api(&self, api: &str, args: &[&str], path: &str) -> Answer {
        let dir = self.h.dir.path();
        let (hdr, body) = (dir.join("curl.h"), dir.join("curl.b"));
        let o = std::process::Command::new("curl")
            .args(["-s", "-k", "--max-time", "30", "-D"])
            .arg(&hdr)
            .arg("-o")
            .arg(&body)
            .args(["-w", "%{http_code}"])
            .args(args)
            .arg(format!("{}/ibmmq/rest/{api}/{path}", self.base))
            .output()
            .expect("curl runs (./test installs it)");
        let status = String::from_utf8_lossy(&o.stdout)
            .trim()
            .parse()
            .unwrap_or(0);
        Answer {
            status,
            headers: std::fs::read_to_string(&hdr).unwrap_or_default(),
            body: std::fs::read_to_string(&body).unwrap_or_default(),
        }
    }

    fn mqsc_json(&self, user: &str, body: &str) -> Answer {
        self.curl(
            &[
                "-u",
                user,
                "-H",
                "ibm-mq-rest-csrf-token: x",
                "-H",
                "Content-Type: application/json",
                "--data-binary",
                body,
            ],
            "admin/action/qmgr/QW/mqsc",
        )
    }
}

fn web() -> Web {
    let h = Home::new();
    h.ok(&["create", "QW"]);
    h.passwd("QW", "mqadmin", "admin-horse-battery");
    h.passwd("QW", "reader", "reader-horse-battery");
    h.passwd("QW", "app", "app-horse-battery");
    // A certificate the keystore trusts, naming the administrator (no --web-client-certs).
    client_identity(&h, "QW", &h.dir.path().join("admin-ks"), "CN=mqadmin", true);
    h.ok(&[
        "start",
        "QW",
        "--background",
        "--web",
        "127.0.0.1:0",
        "--web-admin",
        "mqadmin",
        "--web-readonly",
        "reader",
        "--web-messaging",
        "app",
    ]);
    h.mqsc(
        "QW",
        "SET AUTHREC OBJTYPE(QMGR) PRINCIPAL('app') AUTHADD(CONNECT)\n\
         DEFINE QLOCAL(APP.Q)\n\
         SET AUTHREC PROFILE('APP.Q') OBJTYPE(QUEUE) PRINCIPAL('app') AUTHADD(PUT,GET,BROWSE)\n\
         DEFINE QLOCAL(SECRET.Q)\n",
    );
    let addr = h.listener("QW", "web");
    Web {
        h,
        base: format!("https://{addr}"),
    }
}

const ADMIN: &str = "mqadmin:admin-horse-battery";
const READER: &str = "reader:reader-horse-battery";
const APP: &str = "app:app-horse-battery";

#[test]
fn run_command_and_run_command_json_define_display_alter_delete() {
    let w = web();
    let r = w.mqsc_json(
        ADMIN,
        r#"{"type":"runCommandJSON","command":"define","qualifier":"qlocal","name":"REST.Q",
            "parameters":{"maxdepth":42,"descr":"made over REST"}}"#,
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["overallCompletionCode"], 0, "{}", r.body);
    assert!(
        r.json()["commandResponse"][0]["message"][0]
            .as_str()
            .is_some_and(|m| m == "AMQ8006I: IBM MQ queue created."),
        "the command's message, as MQ gives it: {}",
        r.body
    );
    let r = w.mqsc_json(
        ADMIN,
        r#"{"type":"runCommandJSON","command":"display","qualifier":"qlocal","name":"REST.Q",
            "responseParameters":["maxdepth","descr","curdepth"]}"#,
    );
    let v = r.json();
    let p = &v["commandResponse"][0]["parameters"];
    assert_eq!(p["queue"], "REST.Q", "{v}");
    assert_eq!(p["maxdepth"], 42, "{v}");
    assert_eq!(p["descr"], "made over REST", "case kept: {v}");
    assert_eq!(p["curdepth"], 0, "{v}");
    // runCommand: MQSC text in, text lines out.
    let r = w.mqsc_json(
        ADMIN,
        r#"{"type":"runCommand","parameters":{"command":"ALTER QLOCAL(REST.Q) MAXDEPTH(7)"}}"#,
    );
    assert_eq!(r.json()["overallCompletionCode"], 0, "{}", r.body);
    let r = w.mqsc_json(
        ADMIN,
        r#"{"type":"runCommand","parameters":{"command":"DISPLAY QLOCAL(REST.Q) MAXDEPTH"}}"#,
    );
    let v = r.json();
    // As runmqsc prints it (what scripts grep): MQ's message id, then two attributes a line.
    assert_eq!(
        v["commandResponse"][0]["text"],
        serde_json::json!([
            "AMQ8409I: Display Queue details.",
            format!("   {:<38}TYPE(QLOCAL)", "QUEUE(REST.Q)"),
            "   MAXDEPTH(7)"
        ]),
        "{v}"
    );
    // A command that fails: 200 with the failure in the codes, as MQ answers.
    let r = w.mqsc_json(
        ADMIN,
        r#"{"type":"runCommand","parameters":{"command":"DELETE QLOCAL(NO.SUCH.Q)"}}"#,
    );
    let v = r.json();
    assert_eq!(r.status, 200);
    assert_eq!(v["overallCompletionCode"], 2, "{v}");
    assert_eq!(v["overallReasonCode"], 3008, "{v}");
    assert_eq!(v["commandResponse"][0]["reasonCode"], 2085, "{v}");
    assert_eq!(
        v["commandResponse"][0]["text"][0], "AMQ8147E: IBM MQ object NO.SUCH.Q not found.",
        "{v}"
    );
    let r = w.mqsc_json(
        ADMIN,
        r#"{"type":"runCommandJSON","command":"delete","qualifier":"qlocal","name":"REST.Q"}"#,
    );
    assert_eq!(r.json()["overallCompletionCode"], 0, "{}", r.body);
    assert!(!w.h.mqsc("QW", "DISPLAY QLOCAL(*)\n").contains("REST.Q"));
    // The GET resources.
    let r = w.curl(&["-u", READER], "admin/qmgr/QW/queue/APP.Q");
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["queue"][0]["name"], "APP.Q", "{}", r.body);
    assert_eq!(
        r.json()["queue"][0]["type"],
        "local",
        "MQ's name: {}",
        r.body
    );
    assert_eq!(
        r.json()["queue"][0]["status"]["currentDepth"],
        0,
        "{}",
        r.body
    );
    // The queue manager's certificate names localhost: a client that checks the server by
    // its name and the certificate (no -k) gets in.
    let port = w.base.rsplit(':').next().unwrap_or_default().to_string();
    let ca = w.h.qm_dir("QW").join("keystore").join("identity.pem");
    let o = std::process::Command::new("curl")
        .args([
            "-s",
            "--max-time",
            "30",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code}",
        ])
        .arg("--cacert")
        .arg(&ca)
        .args(["-u", READER])
        .arg(format!(
            "https://localhost:{port}/ibmmq/rest/v2/admin/qmgr/QW"
        ))
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&o.stdout), "200", "{o:?}");
    let r = w.curl(&["-u", READER], "admin/qmgr");
    assert_eq!(r.json()["qmgr"][0]["name"], "QW", "{}", r.body);
    let st = &r.json()["qmgr"][0]["status"];
    assert_eq!(st["publishSubscribeState"], "running", "{}", r.body);
    assert!(st["connectionCount"].is_u64(), "{}", r.body);
    assert!(
        st["started"].as_str().is_some_and(|t| t.ends_with(".000Z")),
        "{}",
        r.body
    );
    // sealmq's resources: policies, the keystore's certificates with their expiry, and the
    // protection work.
    w.h.mqsc("QW", "SET POLICY(APP.Q) SIGNALG(SHA256)\n");
    let r = w.curl(&["-u", READER], "admin/qmgr/QW/policy");
    assert_eq!(r.json()["policy"][0]["name"], "APP.Q", "{}", r.body);
    assert_eq!(
        r.json()["policy"][0]["attributes"]["signalg"],
        "SHA256",
        "{}",
        r.body
    );
    let r = w.curl(&["-u", READER], "admin/qmgr/QW/certificate");
    let v = r.json();
    let id = &v["certificate"][0];
    assert_eq!(id["use"], "identity", "{v}");
    assert_eq!(id["subject"], "CN=QW", "{v}");
    assert!(id["daysToExpiry"].as_i64().is_some_and(|d| d > 300), "{v}");
    let r = w.curl(&["-u", READER], "admin/qmgr/QW/protection");
    let v = r.json();
    assert_eq!(v["protection"]["keystore"], true, "{v}");
    assert!(
        v["protection"]["operations"]["sign"]["count"].is_u64(),
        "{v}"
    );
    assert_eq!(v["protection"]["errorQueueDepth"], 0, "{v}");
    let r = w.curl(&["-u", APP], "admin/qmgr/QW/protection");
    assert_eq!(r.status, 403, "the messaging role sees no administration");
    // A protected message read without interception is its envelope: octets, not text, though
    // its descriptor says MQSTR.
    let ks = w.h.qm_dir("QW").join("keystore");
    w.h.ok(&[
        "put",
        "QW",
        "APP.Q",
        "--message",
        "signed text",
        "--keystore",
        &ks.to_string_lossy(),
    ]);
    let r = w.curl(&["-u", APP], "messaging/qmgr/QW/queue/APP.Q/message");
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        r.header("Content-Type").as_deref(),
        Some("application/octet-stream"),
        "{}",
        r.headers
    );
    let r = w.curl(&["-u", READER], "admin/qmgr/NOPE");
    assert_eq!(r.status, 404);
    assert_eq!(r.json()["error"][0]["messageId"], "MQWB0009E", "{}", r.body);
    installation(&w);
    w.h.ok(&["stop", "QW"]);
}

/// MQ's installation resource: name, version and platform to every role, on every API
/// version; the extended attributes (paths, the operating system) to the administrative roles
/// only; another installation's name 404, an unknown attribute 400, a POST 405.
fn installation(w: &Web) {
    for api in ["v1", "v2", "v3"] {
        for user in [READER, APP, ADMIN] {
            let r = w.curl_api(api, &["-u", user], "admin/installation");
            assert_eq!(r.status, 200, "{api} {user}: {}", r.body);
            let i = &r.json()["installation"][0];
            assert_eq!(i["name"], "Installation1", "{}", r.body);
            assert_eq!(i["version"], env!("CARGO_PKG_VERSION"), "{}", r.body);
            assert_eq!(i["platform"], "unix", "{}", r.body);
            assert!(i.get("extended").is_none(), "{}", r.body);
        }
    }
    let r = w.curl(
        &["-u", READER],
        "admin/installation/Installation1?attributes=*",
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let e = &r.json()["installation"][0]["extended"];
    assert_eq!(e["dataPath"], w.h.dir.path().display().to_string(), "{e}");
    let exe = std::path::Path::new(env!("CARGO_BIN_EXE_sealmq"));
    assert_eq!(
        e["installationPath"],
        exe.parent().unwrap().display().to_string(),
        "{e}"
    );
    assert!(
        e["operatingSystem"]
            .as_str()
            .is_some_and(|o| o.starts_with("Linux (")),
        "{e}"
    );
    assert_eq!(
        e["level"],
        format!("sealmq-{}", env!("CARGO_PKG_VERSION")),
        "{e}"
    );
    let r = w.curl(
        &["-u", ADMIN],
        "admin/installation?attributes=extended.dataPath",
    );
    let e = r.json()["installation"][0]["extended"].clone();
    assert_eq!(e.as_object().map(|o| o.len()), Some(1), "{e}");
    let r = w.curl(&["-u", APP], "admin/installation?attributes=extended");
    assert_eq!(r.status, 403, "{}", r.body);
    assert_eq!(r.json()["error"][0]["messageId"], "MQWB0103E", "{}", r.body);
    let r = w.curl(&["-u", READER], "admin/installation/Installation2");
    assert_eq!(r.status, 404, "{}", r.body);
    assert_eq!(r.json()["error"][0]["messageId"], "MQWB0913E", "{}", r.body);
    let r = w.curl(
        &["-u", READER],
        "admin/installation?attributes=extended.secret",
    );
    assert_eq!(r.status, 400, "{}", r.body);
    let r = w.curl(
        &["-u", ADMIN, "-X", "POST", "-H", "ibm-mq-rest-csrf-token: x"],
        "admin/installation",
    );
    assert_eq!(r.status, 405, "{}", r.body);
    let r = w.curl(&[], "admin/installation");
    assert_eq!(r.status, 401, "no answer before authentication: {}", r.body);
}

#[test]
fn roles_csrf_and_bad_requests_are_refused_with_mq_errors() {
    let w = web();
    // A read-only user may DISPLAY, not DEFINE: refused, and nothing was made.
    let r = w.mqsc_json(
        READER,
        r#"{"type":"runCommandJSON","command":"define","qualifier":"qlocal","name":"RO.Q"}"#,
    );
    assert_eq!(r.status, 403, "{}", r.body);
    assert_eq!(r.json()["error"][0]["messageId"], "MQWB0103E");
    assert!(!w.h.mqsc("QW", "DISPLAY QLOCAL(*)\n").contains("RO.Q"));
    let r = w.mqsc_json(
        READER,
        r#"{"type":"runCommand","parameters":{"command":"DISPLAY QLOCAL(APP.Q)"}}"#,
    );
    assert_eq!(r.status, 200, "{}", r.body);
    // The messaging user has no admin role at all; nobody unauthenticated gets in.
    let r = w.mqsc_json(
        APP,
        r#"{"type":"runCommand","parameters":{"command":"DISPLAY QLOCAL(APP.Q)"}}"#,
    );
    assert_eq!(r.status, 403);
    let r = w.mqsc_json("mqadmin:wrong-password", r#"{"type":"runCommand"}"#);
    assert_eq!(r.status, 401);
    assert_eq!(r.json()["error"][0]["messageId"], "MQWB0104E");
    // No CSRF header: refused before anything runs.
    let r = w.curl(
        &[
            "-u",
            ADMIN,
            "-H",
            "Content-Type: application/json",
            "--data-binary",
            r#"{"type":"runCommandJSON","command":"define","qualifier":"qlocal","name":"CSRF.Q"}"#,
        ],
        "admin/action/qmgr/QW/mqsc",
    );
    assert_eq!(r.status, 403, "{}", r.body);
    assert_eq!(r.json()["error"][0]["messageId"], "MQWB0100E");
    assert!(!w.h.mqsc("QW", "DISPLAY QLOCAL(*)\n").contains("CSRF.Q"));
    // Bad JSON, an unknown qualifier, a second command smuggled into a value.
    for body in [
        "{not json",
        r#"{"type":"runCommandJSON","command":"define","qualifier":"qwidget","name":"X"}"#,
        r#"{"type":"runCommandJSON","command":"define","qualifier":"qlocal","name":"X","parameters":{"descr":"a\nDELETE QLOCAL(APP.Q)"}}"#,
        r#"{"type":"runCommand","parameters":{"command":"DISPLAY QMGR\nDELETE QLOCAL(APP.Q)"}}"#,
    ] {
        let r = w.mqsc_json(ADMIN, body);
        assert_eq!(r.status, 400, "{body}: {}", r.body);
        let e = &r.json()["error"][0];
        assert_eq!(e["type"], "rest", "{}", r.body);
        assert!(e["messageId"].as_str().unwrap().starts_with("MQWB"), "{e}");
        assert!(
            e["explanation"].is_string() && e["action"].is_string(),
            "{e}"
        );
    }
    assert!(w.h.mqsc("QW", "DISPLAY QLOCAL(*)\n").contains("APP.Q"));
    // An oversized body: 400 too, and the server goes on.
    let big = w.h.dir.path().join("big.json");
    std::fs::write(&big, vec![b' '; (4 << 20) + 1]).unwrap();
    let r = w.curl(
        &[
            "-u",
            ADMIN,
            "-H",
            "ibm-mq-rest-csrf-token: x",
            "--data-binary",
            &format!("@{}", big.display()),
        ],
        "admin/action/qmgr/QW/mqsc",
    );
    assert_eq!(r.status, 400, "{}", r.body);
    assert_eq!(r.json()["error"][0]["messageId"], "MQWB0901E");
    let r = w.curl(&["-u", READER], "admin/qmgr/QW");
    assert_eq!(r.status, 200);
    // Sockets that never finish TLS: one address holds at most 16; the 17th is closed at
    // once, and a real client still gets served meanwhile (from another address).
    let addr = w.base.trim_start_matches("https://").to_string();
    let idle: Vec<std::net::TcpStream> = (0..16)
        .map(|_| std::net::TcpStream::connect(&addr).unwrap())
        .collect();
    let mut extra = std::net::TcpStream::connect(&addr).unwrap();
    extra
        .set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .unwrap();
    let mut b = [0u8; 1];
    use std::io::Read;
    assert!(
        matches!(extra.read(&mut b), Ok(0) | Err(_)),
        "the 17th socket from one address is closed"
    );
    let o = std::process::Command::new("curl")
        .args([
            "-s",
            "-k",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code}",
            "-u",
            READER,
        ])
        .args(["--interface", "127.0.0.3"])
        .arg(format!("{}/ibmmq/rest/v2/admin/qmgr/QW", w.base))
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&o.stdout), "200", "{o:?}");
    drop(idle);
    // Without --web-client-certs a certificate the keystore trusts logs nobody in.
    let cert = cert_args(&w.h.dir.path().join("admin-ks"));
    let cert: Vec<&str> = cert.iter().map(String::as_str).collect();
    let r = w.curl(&cert, "admin/qmgr/QW");
    assert_eq!(r.status, 401, "{}", r.body);
    // A --host a certificate cannot carry is refused before anything is made.
    let err = w.h.fails(&["create", "QBAD", "--host", "bad host!"]);
    assert!(err.contains("--host"), "{err}");
    assert!(!w.h.qm_dir("QBAD").join("log").exists());
    // No password in the queue manager's log.
    let log = std::fs::read_to_string(w.h.qm_dir("QW").join("qm.log")).unwrap_or_default();
    assert!(!log.contains("horse-battery"), "a password reached the log");
    w.h.ok(&["stop", "QW"]);
}

#[test]
fn a_login_session_is_a_cookie_and_logout_ends_it() {
    let w = web();
    let jar = w.h.dir.path().join("jar");
    let jar = jar.to_str().unwrap();
    let r = w.curl(
        &[
            "-c",
            jar,
            "-H",
            "Content-Type: application/json",
            "--data-binary",
            r#"{"username":"reader","password":"reader-horse-battery"}"#,
        ],
        "login",
    );
    assert_eq!(r.status, 204, "{}", r.body);
    let cookie = r.header("set-cookie").unwrap_or_default();
    assert!(
        cookie.contains("LtpaToken2=") && cookie.contains("HttpOnly") && cookie.contains("Secure"),
        "{cookie}"
    );
    let r = w.curl(&["-b", jar], "login");
    assert_eq!(r.json()["user"][0]["name"], "reader", "{}", r.body);
    assert_eq!(
        r.json()["user"][0]["authenticationMechanism"],
        "ltpaToken",
        "{}",
        r.body
    );
    let r = w.curl(&["-b", jar], "admin/qmgr/QW");
    assert_eq!(r.status, 200);
    // Logout needs the CSRF header too; then the cookie is worth nothing.
    let r = w.curl(&["-b", jar, "-X", "DELETE"], "login");
    assert_eq!(r.status, 403);
    let r = w.curl(
        &["-b", jar, "-X", "DELETE", "-H", "ibm-mq-rest-csrf-token: x"],
        "login",
    );
    assert_eq!(r.status, 204);
    let r = w.curl(&["-b", jar], "admin/qmgr/QW");
    assert_eq!(r.status, 401, "{}", r.body);
    let r = w.curl(
        &[
            "-H",
            "Content-Type: application/json",
            "--data-binary",
            r#"{"username":"reader","password":"wrong"}"#,
        ],
        "login",
    );
    assert_eq!(r.status, 401);
    // Twelve parallel logins with wrong passwords are each refused (401: the authentication
    // gate checks 4 per address at once and refuses the rest as busy); afterwards the right
    // user still gets in (after the delay the address owes, within the client's 30 s).
    let attempts: Vec<_> = (0..12)
        .map(|i| {
            let base = w.base.clone();
            std::thread::spawn(move || {
                let user = format!("intruder{i}:wrong");
                let o = std::process::Command::new("curl")
                    .args([
                        "-s",
                        "-k",
                        "--max-time",
                        "30",
                        "-o",
                        "/dev/null",
                        "-w",
                        "%{http_code}",
                    ])
                    .args(["-u", &user])
                    .arg(format!("{base}/ibmmq/rest/v2/admin/qmgr/QW"))
                    .output()
                    .unwrap();
                String::from_utf8_lossy(&o.stdout).to_string()
            })
        })
        .collect();
    for t in attempts {
        assert_eq!(t.join().unwrap(), "401");
    }
    let r = w.curl(&["-u", READER], "admin/qmgr/QW");
    assert_eq!(r.status, 200, "{}", r.body);
    w.h.ok(&["stop", "QW"]);
}

#[test]
fn messages_put_get_and_browse_with_their_headers() {
    let w = web();
    let msg = "messaging/qmgr/QW/queue/APP.Q/message";
    let correl = "0a".repeat(24);
    let r = w.curl(
        &[
            "-u",
            APP,
            "-H",
            "ibm-mq-rest-csrf-token: x",
            "-H",
            "Content-Type: text/plain;charset=utf-8",
            "-H",
            "ibm-mq-md-persistence: persistent",
            "-H",
            &format!("ibm-mq-md-correlationId: {correl}"),
            "-H",
            "ibm-mq-md-replyTo: REPLY.Q@QW",
            "-H",
            "ibm-mq-md-expiry: 600000",
            "-H",
            "ibm-mq-usr-colour: red",
            "-H",
            "ibm-mq-usr-count: 42,int",
            "--data-binary",
            "hello from REST",
        ],
        msg,
    );
    assert_eq!(r.status, 201, "{}", r.body);
    let id = r.header("ibm-mq-md-messageId").unwrap();
    assert_eq!(id.len(), 48);
    // sealmq's own browse sees what the headers said.
    let seen = w.h.ok(&["browse", "QW", "APP.Q"]);
    assert!(seen.contains("hello from REST"), "{seen}");
    assert!(seen.contains("colour") && seen.contains("red"), "{seen}");
    assert!(seen.contains("count") && seen.contains("42"), "{seen}");
    assert!(seen.contains("Persistence(PERSISTENT)"), "{seen}");
    assert!(
        seen.contains(&format!("CorrelId(X'{}')", correl.to_uppercase())) || seen.contains(&correl),
        "{seen}"
    );
    // Browse over REST: the message stays.
    let r = w.curl(&["-u", APP], msg);
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body, "hello from REST");
    assert_eq!(
        r.header("ibm-mq-md-messageId").as_deref(),
        Some(id.as_str())
    );
    assert_eq!(
        r.header("ibm-mq-md-persistence").as_deref(),
        Some("persistent")
    );
    assert_eq!(r.header("ibm-mq-md-replyTo").as_deref(), Some("REPLY.Q@QW"));
    assert_eq!(r.header("ibm-mq-usr-colour").as_deref(), Some("red"));
    assert_eq!(r.header("ibm-mq-usr-count").as_deref(), Some("42,int"));
    assert_eq!(w.h.depth("QW", "APP.Q"), 1);
    // A get matching the correlation id takes it.
    let r = w.curl(
        &["-u", APP, "-X", "DELETE", "-H", "ibm-mq-rest-csrf-token: x"],
        &format!("{msg}?correlationId={correl}&wait=1000"),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        r.header("ibm-mq-md-correlationId").as_deref(),
        Some(correl.as_str())
    );
    assert_eq!(w.h.depth("QW", "APP.Q"), 0);
    // Empty: 204 after the wait.
    let r = w.curl(
        &["-u", APP, "-X", "DELETE", "-H", "ibm-mq-rest-csrf-token: x"],
        &format!("{msg}?wait=200"),
    );
    assert_eq!(r.status, 204);
    // A message sealmq put, got over REST.
    w.h.ok(&["put", "QW", "APP.Q", "--message", "from the CLI"]);
    let r = w.curl(
        &["-u", APP, "-X", "DELETE", "-H", "ibm-mq-rest-csrf-token: x"],
        msg,
    );
    assert_eq!(r.body, "from the CLI");
    // Authority is the user's: no PUT on SECRET.Q (2035); a bad header is a 400.
    let r = w.curl(
        &[
            "-u",
            APP,
            "-H",
            "ibm-mq-rest-csrf-token: x",
            "--data-binary",
            "x",
        ],
        "messaging/qmgr/QW/queue/SECRET.Q/message",
    );
    assert_eq!(r.status, 403, "{}", r.body);
    assert_eq!(r.json()["error"][0]["reasonCode"], 2035, "{}", r.body);
    // The administrator grants it over REST (SET AUTHREC as runCommandJSON); then it works.
    let r = w.mqsc_json(
        ADMIN,
        r#"{"type":"runCommandJSON","command":"set","qualifier":"authrec","name":"SECRET.Q",
            "parameters":{"objtype":"queue","principal":"app","authadd":["put"]}}"#,
    );
    assert_eq!(r.json()["overallCompletionCode"], 0, "{}", r.body);
    let r = w.curl(
        &[
            "-u",
            APP,
            "-H",
            "ibm-mq-rest-csrf-token: x",
            "--data-binary",
            "x",
        ],
        "messaging/qmgr/QW/queue/SECRET.Q/message",
    );
    assert_eq!(r.status, 201, "{}", r.body);
    let r = w.curl(
        &[
            "-u",
            APP,
            "-H",
            "ibm-mq-rest-csrf-token: x",
            "-H",
            "ibm-mq-md-persistence: sometimes",
            "--data-binary",
            "x",
        ],
        msg,
    );
    assert_eq!(r.status, 400, "{}", r.body);
    // Version 3's ids: `ID:` before the hex, and an application's own correlation id.
    let r = w.curl_api(
        "v3",
        &[
            "-u",
            APP,
            "-H",
            "ibm-mq-rest-csrf-token: x",
            "-H",
            "ibm-mq-md-correlationId: order-42",
            "-H",
            "Content-Type: text/plain;charset=utf-8",
            "--data-binary",
            "v3 message",
        ],
        msg,
    );
    assert_eq!(r.status, 201, "{}", r.body);
    let id3 = r.header("ibm-mq-md-messageId").unwrap_or_default();
    assert!(id3.starts_with("ID:") && id3.len() == 51, "{id3}");
    let r = w.curl_api(
        "v3",
        &["-u", APP, "-X", "DELETE", "-H", "ibm-mq-rest-csrf-token: x"],
        &format!("{msg}?correlationId=order-42"),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body, "v3 message");
    let correl3 = r.header("ibm-mq-md-correlationId").unwrap_or_default();
    assert!(correl3.starts_with("ID:6f726465722d3432"), "{correl3}");
    assert_eq!(
        r.header("ibm-mq-md-messageId").as_deref(),
        Some(id3.as_str())
    );
    // The message list (MQ's messagelist): summaries, no payload, nothing taken.
    let r = w.curl(
        &[
            "-u",
            APP,
            "-H",
            "ibm-mq-rest-csrf-token: x",
            "-H",
            &format!("ibm-mq-md-correlationId: {correl}"),
            "-H",
            "ibm-mq-md-persistence: persistent",
            "-H",
            "ibm-mq-md-replyTo: REPLY.Q",
            "-H",
            "Content-Type: text/plain;charset=utf-8",
            "--data-binary",
            "listed message",
        ],
        msg,
    );
    let id = r.header("ibm-mq-md-messageId").unwrap_or_default();
    w.h.ok(&["put", "QW", "APP.Q", "--message", "second", "--count", "2"]);
    let list_path = "messaging/qmgr/QW/queue/APP.Q/messagelist";
    let r = w.curl(&["-u", APP], list_path);
    assert_eq!(r.status, 200, "{}", r.body);
    let list = r.json()["messages"].as_array().cloned().unwrap_or_default();
    assert_eq!(list.len(), 3, "{}", r.body);
    assert_eq!(list[0]["messageId"], id.as_str(), "{}", r.body);
    assert_eq!(list[0]["correlationId"], correl.as_str(), "{}", r.body);
    assert_eq!(list[0]["persistence"], "persistent", "{}", r.body);
    assert_eq!(list[0]["messageLength"], 14, "{}", r.body);
    assert_eq!(list[0]["replyToQueue"], "REPLY.Q", "{}", r.body);
    assert_eq!(list[0]["format"], "MQSTR", "{}", r.body);
    assert!(
        list[0]["putDateTime"]
            .as_str()
            .is_some_and(|t| t.ends_with('Z')),
        "{}",
        r.body
    );
    assert!(!r.body.contains("listed message"), "no payload in a list");
    assert_eq!(w.h.depth("QW", "APP.Q"), 3, "nothing taken");
    let r = w.curl(
        &["-u", APP],
        &format!("{list_path}?limit=5&correlationId={correl}"),
    );
    assert_eq!(
        r.json()["messages"].as_array().map(Vec::len),
        Some(1),
        "{}",
        r.body
    );
    let r = w.curl(&["-u", APP], &format!("{list_path}?limit=2"));
    assert_eq!(
        r.json()["messages"].as_array().map(Vec::len),
        Some(2),
        "{}",
        r.body
    );
    for bad in ["limit=0", "limit=x", "messageId=zz"] {
        let r = w.curl(&["-u", APP], &format!("{list_path}?{bad}"));
        assert_eq!(r.status, 400, "{bad}: {}", r.body);
    }
    // Without BROWSE on a queue its list is refused (2035).
    let r = w.curl(&["-u", APP], "messaging/qmgr/QW/queue/SECRET.Q/messagelist");
    assert_eq!(r.status, 403, "{}", r.body);
    assert_eq!(r.json()["error"][0]["reasonCode"], 2035, "{}", r.body);
    let r = w.curl(&["-u", READER], list_path);
    assert_eq!(r.status, 403, "the read-only role browses no messages");
    // The read-only user has no messaging role.
    let r = w.curl(&["-u", READER], msg);
    assert_eq!(r.status, 403);
    w.h.ok(&["stop", "QW"]);
}

//! AMQP channels with TLS (SSLCIPH, SSLCAUTH, SSLPEER), SASL EXTERNAL and QM-side
//! interception (INTERCEPT(YES)), against python-qpid-proton over `amqps://`.

use super::{Home, free_port, json_lines};
use sealmq_client::Client;
use sealmq_engine::mqi::{Browse, GetOptions, OpenOptions};
use std::process::Command;

fn s(p: &std::path::Path) -> String {
    p.to_string_lossy().into_owned()
}

/// The proton client with its TLS and SASL settings in the environment.
fn proton_with(url: &str, env: &[(&str, String)], args: &[&str]) -> Vec<serde_json::Value> {
    let mut cmd = Command::new("python3");
    cmd.arg(super::CLIENT).arg(url);
    for (k, v) in env {
        cmd.env(k, v);
    }
    json_lines(cmd, "proton", args)
}

/// A refusal the proton client printed (`None`: it got through).
fn refusal(url: &str, env: &[(&str, String)], queue: &str) -> Option<String> {
    proton_with(url, env, &["forbidden", queue])[0]["error"]
        .as_str()
        .map(String::from)
}

const ALICE: &str = "CN=alice,O=Example";

/// Queue manager `qm` (identity CN=<qm>) trusting two applications' certificates, alice's
/// and bob's (bob is given no authority). The TLS settings of each for the proton client.
struct World {
    h: Home,
    alice: Vec<(&'static str, String)>,
    bob: Vec<(&'static str, String)>,
    /// Trusts the queue manager but presents no certificate.
    anonymous: Vec<(&'static str, String)>,
}

fn world(qm: &str) -> World {
    let h = Home::new();
    h.ok(&["create", qm]);
    let qm_ks = h.qm_dir(qm).join("keystore");
    let ca = s(&qm_ks.join("identity.pem"));
    let app = |name: &str, dn: &str| {
        let dir = h.dir.path().join(name);
        h.ok(&["keystore", "init", &s(&dir), "--dn", dn]);
        h.trust(&qm_ks, &dir.join("identity.pem"));
        vec![
            ("SEALMQ_AMQP_MECHS", "EXTERNAL".to_string()),
            ("SEALMQ_TLS_CA", ca.clone()),
            ("SEALMQ_TLS_CERT", s(&dir.join("identity.pem"))),
            ("SEALMQ_TLS_KEY", s(&dir.join("identity.key"))),
        ]
    };
    let alice = app("alice", ALICE);
    let bob = app("bob", "CN=bob,O=Example");
    h.ok(&["start", qm, "--background"]);
    let anonymous = vec![
        ("SEALMQ_AMQP_MECHS", "ANONYMOUS".to_string()),
        ("SEALMQ_TLS_CA", ca),
    ];
    World {
        h,
        alice,
        bob,
        anonymous,
    }
}

#[test]
fn an_amqp_channel_over_tls_takes_the_client_certificate_as_the_principal() {
    let w = world("QT");
    let port = free_port();
    w.h.mqsc(
        "QT",
        &format!(
            "DEFINE QLOCAL(APP.Q)\n\
             DEFINE CHANNEL(TLS.AMQP) CHLTYPE(AMQP) PORT({port}) IPADDR(127.0.0.1) SSLCIPH(ANY) SSLCAUTH(REQUIRED)\n\
             SET AUTHREC OBJTYPE(QMGR) PRINCIPAL('{ALICE}') AUTHADD(CONNECT)\n\
             SET AUTHREC PROFILE('APP.*') OBJTYPE(QUEUE) PRINCIPAL('{ALICE}') AUTHADD(PUT,GET)\n\
             START CHANNEL(TLS.AMQP)\n"
        ),
    );
    let url = format!("amqps://127.0.0.1:{port}");
    // SASL EXTERNAL: the certificate's DN is the principal, and its authority applies.
    assert_eq!(
        proton_with(&url, &w.alice, &["send", "APP.Q", "2"])[0]["sent"],
        2
    );
    let got = proton_with(&url, &w.alice, &["receive", "APP.Q", "2"]);
    assert_eq!(got[1]["body"], "hello 1");
    shows_what_tls_negotiated(&w, &url);
    // Bob's certificate is trusted, but his DN has no authority: 2035 at the connection.
    let e = refusal(&url, &w.bob, "APP.Q").expect("bob is refused");
    assert!(
        e.contains("unauthorized-access") && e.contains("2035"),
        "{e}"
    );
    // SSLCAUTH(REQUIRED): no certificate, no connection.
    assert!(refusal(&url, &w.anonymous, "APP.Q").is_some());
    // Not TLS at all: the channel speaks nothing else.
    let plain = format!("amqp://127.0.0.1:{port}");
    assert!(refusal(&plain, &[], "APP.Q").is_some());
    // SSLPEER filters the certificate's DN (taken at the next START).
    w.h.mqsc(
        "QT",
        "STOP CHANNEL(TLS.AMQP)\n\
         ALTER CHANNEL(TLS.AMQP) CHLTYPE(AMQP) SSLPEER('CN=carol*')\n\
         START CHANNEL(TLS.AMQP)\n",
    );
    assert!(refusal(&url, &w.alice, "APP.Q").is_some(), "SSLPEER");
    let log =
        std::fs::read_to_string(w.h.qm_dir("QT").join("errors/SEALMQ01.LOG")).unwrap_or_default();
    assert!(log.contains("does not match SSLPEER"), "{log}");
    w.h.mqsc(
        "QT",
        &format!(
            "STOP CHANNEL(TLS.AMQP)\n\
             ALTER CHANNEL(TLS.AMQP) CHLTYPE(AMQP) SSLPEER('{ALICE}')\n\
             START CHANNEL(TLS.AMQP)\n"
        ),
    );
    assert_eq!(refusal(&url, &w.alice, "APP.Q"), None);
    // SSLCIPH naming one suite: the channel offers only that one, so a client offering it
    // among others (OpenSSL prefers AES-256) negotiates it and is served.
    w.h.mqsc(
        "QT",
        "STOP CHANNEL(TLS.AMQP)\n\
         ALTER CHANNEL(TLS.AMQP) CHLTYPE(AMQP) SSLCIPH(TLS_AES_128_GCM_SHA256)\n\
         START CHANNEL(TLS.AMQP)\n",
    );
    assert_eq!(refusal(&url, &w.alice, "APP.Q"), None, "one suite");
    let o = w.h.run(
        &["mqsc", "QT"],
        Some("STOP CHANNEL(TLS.AMQP)\nALTER CHANNEL(TLS.AMQP) CHLTYPE(AMQP) SSLCIPH(NO_SUCH_SUITE)\nSTART CHANNEL(TLS.AMQP)\n"),
    );
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("no cipher suite"), "{out}");
    w.h.mqsc(
        "QT",
        "ALTER CHANNEL(TLS.AMQP) CHLTYPE(AMQP) SSLCIPH(ANY)\nSTART CHANNEL(TLS.AMQP)\n",
    );
    // A running AMQP channel runs again when the queue manager does; a stopped one does not.
    w.h.ok(&["stop", "QT"]);
    w.h.ok(&["start", "QT", "--background"]);
    let st = w.h.mqsc("QT", "DISPLAY CHSTATUS(TLS.AMQP)\n");
    assert!(st.contains("STATUS(RUNNING)"), "{st}");
    assert_eq!(refusal(&url, &w.alice, "APP.Q"), None, "restarted");
    w.h.mqsc("QT", "STOP CHANNEL(TLS.AMQP)\n");
    w.h.ok(&["stop", "QT"]);
    w.h.ok(&["start", "QT", "--background"]);
    let st =
        w.h.run(&["mqsc", "QT"], Some("DISPLAY CHSTATUS(TLS.AMQP)\n"));
    let st = String::from_utf8_lossy(&st.stdout);
    assert!(st.contains("no channel status"), "{st}");
    assert!(
        refusal(&url, &w.alice, "APP.Q").is_some(),
        "stopped stays stopped"
    );
    w.h.ok(&["stop", "QT"]);
}

#[test]
fn an_intercepting_amqp_channel_protects_and_unprotects_for_python_applications() {
    let w = world("QI");
    let (icpt, clear) = (free_port(), free_port());
    w.h.mqsc(
        "QI",
        &format!(
            "DEFINE QLOCAL(SECRET.Q)\n\
             SET POLICY(SECRET.Q) SIGNALG(SHA256) ENCALG(AES256) RECIP('CN=QI')\n\
             DEFINE QLOCAL(SECRET.FORGED)\n\
             SET POLICY(SECRET.FORGED) SIGNALG(SHA256) ENCALG(AES256) RECIP('CN=QI')\n\
             DEFINE CHANNEL(ICPT.AMQP) CHLTYPE(AMQP) PORT({icpt}) IPADDR(127.0.0.1) SSLCIPH(ANY) INTERCEPT(YES)\n\
             DEFINE CHANNEL(CLEAR.AMQP) CHLTYPE(AMQP) PORT({clear}) IPADDR(127.0.0.1) SSLCIPH(ANY)\n\
             SET AUTHREC OBJTYPE(QMGR) PRINCIPAL('{ALICE}') AUTHADD(CONNECT)\n\
             SET AUTHREC PROFILE('SECRET.Q') OBJTYPE(QUEUE) PRINCIPAL('{ALICE}') AUTHADD(PUT,GET)\n\
             SET AUTHREC PROFILE('SECRET.FORGED') OBJTYPE(QUEUE) PRINCIPAL('{ALICE}') AUTHADD(PUT,GET)\n\
             START CHANNEL(ICPT.AMQP)\nSTART CHANNEL(CLEAR.AMQP)\n"
        ),
    );
    let url = format!("amqps://127.0.0.1:{icpt}");
    assert_eq!(
        proton_with(&url, &w.alice, &["send", "SECRET.Q", "3"])[0]["sent"],
        3
    );
    // The queue holds envelopes only.
    let mut raw = Client::connect_local(&w.h.qm_dir("QI"), "raw").unwrap();
    raw.set_raw(true);
    let (rh, _) = raw
        .open(
            "SECRET.Q",
            OpenOptions {
                browse: true,
                output: true,
                ..Default::default()
            },
        )
        .unwrap();
    for i in 0..3 {
        let g = raw
            .get(
                rh,
                &GetOptions {
                    browse: if i == 0 { Browse::First } else { Browse::Next },
                    ..Default::default()
                },
            )
            .unwrap();
        assert!(sealmq_protect::header::has_magic(&g.payload), "message {i}");
        assert!(
            !String::from_utf8_lossy(&g.payload).contains("hello"),
            "message {i} is stored in the clear"
        );
    }
    // Without interception an AMQP application gets the envelope, never the plaintext.
    let curl = format!("amqps://127.0.0.1:{clear}");
    let env = proton_with(&curl, &w.alice, &["receive", "SECRET.Q", "1"]);
    let body = env[0]["body"].as_str().unwrap();
    assert!(!body.contains("hello") && body.len() > 100, "{body}");
    common_wait(&w.h, "QI", "SECRET.Q", 2);
    // Through the intercepting channel: plaintext, with its properties. (The other two were
    // out to the first application too, and may come back from its end in either order.)
    let mut got = proton_with(&url, &w.alice, &["receive", "SECRET.Q", "2"]);
    got.sort_by_key(|m| m["body"].as_str().map(String::from));
    assert_eq!(got[0]["body"], "hello 1");
    assert_eq!(got[1]["body"], "hello 2");
    assert_eq!(got[0]["properties"]["colour"], "blue");
    assert_eq!(got[1]["properties"]["n"], 2);
    common_wait(&w.h, "QI", "SECRET.Q", 0);
    // A message that fails its checks (a forged envelope: the magic, then garbage, on a queue
    // whose policy encrypts; plaintext itself is refused at the put) is moved to
    // the protection error queue and never delivered; the next one is. (A queue no earlier
    // link read: a link of an application that has gone may still be waiting on SECRET.Q, and
    // what it takes as it ends goes back, after the next application's get.)
    let (fh, _) = raw
        .open(
            "SECRET.FORGED",
            OpenOptions {
                output: true,
                ..Default::default()
            },
        )
        .unwrap();
    // Priority 9: taken before "hello 0" (an AMQP message's default priority is 4), so the
    // link meets it before it delivers anything; at the same or a lower priority the
    // application could take "hello 0" and leave before its link got to the forged one.
    let mut forged = sealmq_engine::Md {
        priority: 9,
        ..Default::default()
    };
    raw.put(fh, &mut forged, b"SMQEforged", false).unwrap();
    proton_with(&url, &w.alice, &["send", "SECRET.FORGED", "1"]);
    let got = proton_with(&url, &w.alice, &["receive", "SECRET.FORGED", "1"]);
    assert_eq!(got[0]["body"], "hello 0");
    common_wait(&w.h, "QI", "SYSTEM.PROTECTION.ERROR.QUEUE", 1);
    common_wait(&w.h, "QI", "SECRET.FORGED", 0);
    // A protected topic: a publication through the intercepting channel is protected once by
    // the queue manager (every subscription's copy an envelope), and an AMQP subscriber on the
    // same channel reads it in clear.
    w.h.mqsc(
        "QI",
        &format!(
            "DEFINE TOPIC(PAYROLL) TOPICSTR('payroll')
             SET POLICY(PAYROLL) SIGNALG(SHA256) ENCALG(AES256) RECIP('CN=QI')
             SET AUTHREC PROFILE('PAYROLL') OBJTYPE(TOPIC) PRINCIPAL('{ALICE}') AUTHADD(PUB,SUB)
             DEFINE QLOCAL(AUDIT.Q)
DEFINE SUB(AUDIT) TOPICSTR('payroll/#') DEST(AUDIT.Q)
"
        ),
    );
    let mut sub = Command::new("python3");
    sub.arg(super::CLIENT)
        .arg(&url)
        .args(["receive", "topic://payroll/#", "1"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    for (k, v) in &w.alice {
        sub.env(k, v);
    }
    let sub = sub.spawn().unwrap();
    super::common::wait_for(
        std::time::Duration::from_secs(30),
        "the AMQP subscriber's subscription",
        || {
            let subs = w.h.mqsc("QI", "DISPLAY SUB(*)\n");
            subs.lines()
                .filter(|l| l.trim_start().starts_with("SUB("))
                .count()
                >= 2
        },
    );
    assert_eq!(
        proton_with(&url, &w.alice, &["send", "topic://payroll/march", "1"])[0]["sent"],
        1
    );
    let out = sub.wait_with_output().unwrap();
    let got: serde_json::Value = serde_json::from_str(
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .next()
            .unwrap_or(""),
    )
    .unwrap_or_else(|e| panic!("{e}: {out:?}"));
    assert_eq!(got["body"], "hello 0", "{got}");
    let (ah, _) = raw
        .open(
            "AUDIT.Q",
            OpenOptions {
                browse: true,
                ..Default::default()
            },
        )
        .unwrap();
    let g = raw
        .get(
            ah,
            &GetOptions {
                browse: Browse::First,
                ..Default::default()
            },
        )
        .unwrap();
    assert!(sealmq_protect::header::has_magic(&g.payload));
    assert!(!String::from_utf8_lossy(&g.payload).contains("hello"));
    drop(raw);
    w.h.ok(&["stop", "QI"]);
}

/// (A link that ends waits up to 10 s for outcomes before it backs out what it still holds:
/// a loaded machine needs the margin.)
fn common_wait(h: &Home, qm: &str, q: &str, depth: u64) {
    super::common::wait_for(
        std::time::Duration::from_secs(30),
        &format!("{q} on {qm} to hold {depth}"),
        || h.depth(qm, q) == depth,
    );
}

#[test]
fn sasl_plain_needs_tls_unless_the_queue_manager_takes_passwords_in_the_clear() {
    let w = world("QW");
    let o =
        w.h.cmd(&["passwd", "QW", "payuser"])
            .env("SEALMQ_NEW_PASSWORD", "right-horse-battery")
            .output()
            .unwrap();
    assert!(o.status.success(), "{o:?}");
    let (clear, tls) = (free_port(), free_port());
    w.h.mqsc(
        "QW",
        &format!(
            "REFRESH SECURITY TYPE(CONNAUTH)\nDEFINE QLOCAL(APP.Q)\n\
             DEFINE CHANNEL(CLEAR.AMQP) CHLTYPE(AMQP) PORT({clear}) IPADDR(127.0.0.1)\n\
             DEFINE CHANNEL(TLS.AMQP) CHLTYPE(AMQP) PORT({tls}) IPADDR(127.0.0.1) SSLCIPH(ANY) SSLCAUTH(OPTIONAL)\n\
             SET AUTHREC OBJTYPE(QMGR) PRINCIPAL('payuser') AUTHADD(CONNECT)\n\
             SET AUTHREC PROFILE('APP.*') OBJTYPE(QUEUE) PRINCIPAL('payuser') AUTHADD(PUT)\n\
             START CHANNEL(CLEAR.AMQP)\nSTART CHANNEL(TLS.AMQP)\n"
        ),
    );
    let plain = vec![("SEALMQ_AMQP_MECHS", "PLAIN".to_string())];
    let with_ca = vec![
        ("SEALMQ_AMQP_MECHS", "PLAIN".to_string()),
        w.anonymous[1].clone(),
    ];
    let clear_url = format!("amqp://payuser:right-horse-battery@127.0.0.1:{clear}");
    // A password without TLS is refused (the queue manager does not take them in the clear).
    assert!(refusal(&clear_url, &plain, "APP.Q").is_some());
    let log = w.h.qm_dir("QW").join("errors/SEALMQ01.LOG");
    super::common::wait_for(
        std::time::Duration::from_secs(10),
        "the error log to say why",
        || {
            std::fs::read_to_string(&log)
                .unwrap_or_default()
                .contains("PLAIN is not offered")
        },
    );
    // Over TLS the same user and password are taken; a wrong password is not.
    let tls_url = format!("amqps://payuser:right-horse-battery@127.0.0.1:{tls}");
    assert_eq!(refusal(&tls_url, &with_ca, "APP.Q"), None);
    let wrong = format!("amqps://payuser:wrong@127.0.0.1:{tls}");
    assert!(refusal(&wrong, &with_ca, "APP.Q").is_some());
    // An administrator who allows passwords in the clear (PWCLEAR(YES)) allows them here too.
    w.h.mqsc(
        "QW",
        "DEFINE AUTHINFO(CLEAR.IDPW) AUTHTYPE(IDPWOS) PWCLEAR(YES)\n\
         ALTER QMGR CONNAUTH(CLEAR.IDPW)\nREFRESH SECURITY TYPE(CONNAUTH)\n",
    );
    assert_eq!(refusal(&clear_url, &plain, "APP.Q"), None);
    w.h.ok(&["stop", "QW"]);
}

/// While alice is connected, the channel's status and her connection's name what TLS
/// negotiated: the distribution's OpenSSL 3.0 under proton has no ML-KEM, so X25519 (which a
/// queue manager preferring post-quantum still accepts).
fn shows_what_tls_negotiated(w: &World, url: &str) {
    use std::io::BufRead;
    let mut cmd = Command::new("python3");
    cmd.arg(super::CLIENT).args([url, "hold", "APP.Q"]);
    for (k, v) in &w.alice {
        cmd.env(k, v);
    }
    let mut held = cmd
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("run python3");
    let mut line = String::new();
    if let Some(out) = held.stdout.take() {
        let _ = std::io::BufReader::new(out).read_line(&mut line);
    }
    assert!(line.contains("ready"), "{line}");
    let st =
        w.h.mqsc("QT", "DISPLAY CHSTATUS(TLS.AMQP) CLIENTID(*) ALL\n");
    assert!(
        st.contains("SECPROT(TLSV13)") && st.contains("SSLGROUP(X25519)"),
        "{st}"
    );
    let conn = w.h.mqsc(
        "QT",
        "DISPLAY CONN(*) WHERE(CHANNEL EQ TLS.AMQP) SECPROT SSLGROUP\n",
    );
    assert!(conn.contains("SSLGROUP(X25519)"), "{conn}");
    drop(held.stdin.take());
    let _ = held.wait();
}

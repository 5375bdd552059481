//! REST with client certificates, topics and QM-side protection (`--web-client-certs`,
//! `--web-intercept`), and the resources the console reads beyond IBM's (the error log, HA).

use super::{READER, Web};
use crate::common::Home;

/// A keystore at `dir` whose identity is `dn`, trusted by queue manager `qm` when `trusted`.
pub(crate) fn client_identity(h: &Home, qm: &str, dir: &std::path::Path, dn: &str, trusted: bool) {
    let s = |p: &std::path::Path| p.to_string_lossy().into_owned();
    h.ok(&["keystore", "init", &s(dir), "--dn", dn]);
    if trusted {
        let qm_ks = h.qm_dir(qm).join("keystore");
        h.trust(&qm_ks, &dir.join("identity.pem"));
    }
}

pub(crate) fn cert_args(dir: &std::path::Path) -> Vec<String> {
    vec![
        "--cert".into(),
        dir.join("identity.pem").to_string_lossy().into_owned(),
        "--key".into(),
        dir.join("identity.key").to_string_lossy().into_owned(),
    ]
}

#[test]
fn client_certificates_topics_interception_and_the_console_resources() {
    let h = Home::new();
    h.ok(&["create", "QC"]);
    h.passwd("QC", "reader", "reader-horse-battery");
    let (app_ks, stranger_ks) = (h.dir.path().join("app-ks"), h.dir.path().join("stranger"));
    client_identity(&h, "QC", &app_ks, "CN=app", true);
    client_identity(&h, "QC", &stranger_ks, "CN=app", false);
    // Trusted, but its CN is no user id: it logs nobody in.
    let odd_ks = h.dir.path().join("odd");
    client_identity(&h, "QC", &odd_ks, "CN=app x", true);
    h.ok(&[
        "start",
        "QC",
        "--background",
        "--web",
        "127.0.0.1:0",
        "--web-readonly",
        "reader",
        "--web-messaging",
        "app",
        "--web-client-certs",
        "--web-intercept",
    ]);
    h.mqsc(
        "QC",
        "SET AUTHREC OBJTYPE(QMGR) PRINCIPAL('app') AUTHADD(CONNECT)\n\
         DEFINE QLOCAL(PAY.Q)\n\
         SET AUTHREC PROFILE('PAY.Q') OBJTYPE(QUEUE) PRINCIPAL('app') AUTHADD(PUT,GET,BROWSE)\n\
         SET POLICY(PAY.Q) SIGNALG(SHA256) ENCALG(AES256) RECIP('CN=QC')\n\
         DEFINE TOPIC(PRICES) TOPICSTR('prices')\n\
         SET AUTHREC PROFILE('PRICES') OBJTYPE(TOPIC) PRINCIPAL('app') AUTHADD(PUB)\n\
         DEFINE QLOCAL(PRICES.Q)\n\
         DEFINE SUB(PRICES.SUB) TOPICSTR('prices/#') DEST(PRICES.Q)\n",
    );
    let w = Web {
        base: format!("https://{}", h.listener("QC", "web")),
        h,
    };
    let app = cert_args(&app_ks);
    let app: Vec<&str> = app.iter().map(String::as_str).collect();
    fn with<'a>(app: &[&'a str], extra: &[&'a str]) -> Vec<&'a str> {
        app.iter().chain(extra).copied().collect()
    }
    // A trusted certificate logs its CN in, without a password.
    let r = w.curl(&app, "login");
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["user"][0]["name"], "app", "{}", r.body);
    assert_eq!(r.json()["user"][0]["role"][0], "MQWebUser", "{}", r.body);
    assert_eq!(
        r.json()["user"][0]["authenticationMechanism"],
        "clientCertificate",
        "{}",
        r.body
    );
    // One the keystore does not trust, though its CN is the same, gets no TLS session.
    let cert = cert_args(&stranger_ks);
    let cert: Vec<&str> = cert.iter().map(String::as_str).collect();
    let r = w.curl(&cert, "login");
    assert_eq!(
        r.status, 0,
        "an untrusted certificate was served: {}",
        r.body
    );
    let cert = cert_args(&odd_ks);
    let cert: Vec<&str> = cert.iter().map(String::as_str).collect();
    let r = w.curl(&cert, "login");
    assert_eq!(r.status, 401, "{}", r.body);
    // Interception: plaintext in, an envelope stored, plaintext out.
    let msg = "messaging/qmgr/QC/queue/PAY.Q/message";
    let r = w.curl(
        &with(
            &app,
            &[
                "-H",
                "ibm-mq-rest-csrf-token: x",
                "--data-binary",
                "pay 100 to alice",
            ],
        ),
        msg,
    );
    assert_eq!(r.status, 201, "{}", r.body);
    let raw = w.h.ok(&["browse", "QC", "PAY.Q", "--raw"]);
    assert!(!raw.contains("pay 100 to alice"), "stored in clear: {raw}");
    let r = w.curl(&app, msg);
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body, "pay 100 to alice");
    let r = w.curl(
        &with(&app, &["-X", "DELETE", "-H", "ibm-mq-rest-csrf-token: x"]),
        msg,
    );
    assert_eq!(r.body, "pay 100 to alice");
    assert_eq!(w.h.depth("QC", "PAY.Q"), 0);
    // A stored envelope that fails its check (its signer no longer an authorized one) moves to the protection error queue; the client learns 2063 and no more.
    let r = w.curl(
        &with(
            &app,
            &[
                "-H",
                "ibm-mq-rest-csrf-token: x",
                "--data-binary",
                "pay 200 to bob",
            ],
        ),
        msg,
    );
    assert_eq!(r.status, 201, "{}", r.body);
    w.h.mqsc(
        "QC",
        "SET POLICY(PAY.Q) SIGNALG(SHA256) ENCALG(AES256) RECIP('CN=QC') SIGNER('CN=nobody')\n",
    );
    let r = w.curl(
        &with(&app, &["-X", "DELETE", "-H", "ibm-mq-rest-csrf-token: x"]),
        msg,
    );
    assert_eq!(r.status, 403, "{}", r.body);
    assert_eq!(r.json()["error"][0]["reasonCode"], 2063, "{}", r.body);
    assert_eq!(w.h.depth("QC", "PAY.Q"), 0);
    assert_eq!(w.h.depth("QC", "SYSTEM.PROTECTION.ERROR.QUEUE"), 1);
    // A publication over REST reaches the subscription; one on a topic with a policy is
    // protected on its way.
    let r = w.curl(
        &with(
            &app,
            &[
                "-H",
                "ibm-mq-rest-csrf-token: x",
                "--data-binary",
                "apples 3",
            ],
        ),
        "messaging/qmgr/QC/topic/prices/fruit/message",
    );
    assert_eq!(r.status, 201, "{}", r.body);
    let got = w.h.ok(&["get", "QC", "PRICES.Q"]);
    assert!(got.contains("apples 3"), "{got}");
    w.h.mqsc(
        "QC",
        "SET POLICY(PRICES) SIGNALG(SHA256) ENCALG(AES256) RECIP('CN=QC')\n",
    );
    let r = w.curl(
        &with(
            &app,
            &[
                "-H",
                "ibm-mq-rest-csrf-token: x",
                "--data-binary",
                "pears 4",
            ],
        ),
        "messaging/qmgr/QC/topic/prices/fruit/message",
    );
    assert_eq!(r.status, 201, "{}", r.body);
    let raw = w.h.ok(&["browse", "QC", "PRICES.Q", "--raw"]);
    assert!(!raw.contains("pears 4"), "published in clear: {raw}");
    // A wildcard is no topic to publish on (2425 TOPIC_STRING_ERROR).
    let r = w.curl(
        &with(
            &app,
            &["-H", "ibm-mq-rest-csrf-token: x", "--data-binary", "x"],
        ),
        "messaging/qmgr/QC/topic/prices/%23/message",
    );
    assert_eq!(r.status, 400, "{}", r.body);
    assert_eq!(r.json()["error"][0]["reasonCode"], 2425, "{}", r.body);
    // PUB is granted under prices only: elsewhere 2035, and nothing is delivered.
    let r = w.curl(
        &with(
            &app,
            &["-H", "ibm-mq-rest-csrf-token: x", "--data-binary", "x"],
        ),
        "messaging/qmgr/QC/topic/weather/message",
    );
    assert_eq!(r.status, 403, "{}", r.body);
    assert_eq!(r.json()["error"][0]["reasonCode"], 2035, "{}", r.body);
    let r = w.curl(
        &with(&app, &["-X", "GET"]),
        "messaging/qmgr/QC/topic/prices/fruit/message",
    );
    assert_eq!(
        r.status, 405,
        "a topic is published to, not read: {}",
        r.body
    );
    // The console's resources: the queues' oldest message age and counts, the error log's
    // last lines, and the HA view (not replicated here).
    let r = w.curl(&["-u", READER], "admin/qmgr/QC/queue/PRICES.Q");
    let s = &r.json()["queue"][0]["status"];
    assert_eq!(s["currentDepth"], 1, "{}", r.body);
    assert!(s["oldestMessageAge"].is_u64(), "{}", r.body);
    assert_eq!(s["putCount"], 2, "{}", r.body);
    assert_eq!(s["getCount"], 1, "{}", r.body);
    let r = w.curl(&["-u", READER], "admin/qmgr/QC/errorlog?lines=500");
    let lines = r.json()["errorLog"].as_array().cloned().unwrap_or_default();
    assert!(
        lines
            .iter()
            .any(|l| l.as_str().is_some_and(|l| l.contains("REST API"))),
        "{}",
        r.body
    );
    assert!(
        !r.body.contains("horse-battery") && !r.body.contains("pay 100"),
        "no secret in the error log"
    );
    for bad in [
        "lines=0",
        "lines=-1",
        "lines=many",
        "lines=99999999999999999999999",
    ] {
        let r = w.curl(&["-u", READER], &format!("admin/qmgr/QC/errorlog?{bad}"));
        assert_eq!(r.status, 400, "{bad}: {}", r.body);
    }
    let r = w.curl(&["-u", READER], "admin/qmgr/QC/errorlog?lines=2");
    assert_eq!(
        r.json()["errorLog"].as_array().map(Vec::len),
        Some(2),
        "{}",
        r.body
    );
    let r = w.curl(&app, "admin/qmgr/QC/errorlog");
    assert_eq!(r.status, 403, "the messaging role reads no error log");
    let r = w.curl(&["-u", READER], "admin/qmgr/QC/ha");
    assert_eq!(r.json()["ha"]["replicated"], false, "{}", r.body);
    w.h.ok(&["stop", "QC"]);
}

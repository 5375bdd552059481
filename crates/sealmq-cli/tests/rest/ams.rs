//! IBM MQ AMS's envelope through the queue manager's own interception (issue 45): the REST API
//! started with `--web-intercept`, whose queue manager holds an RSA identity, reads what IBM's
//! AMS interceptor protected and protects in IBM's format what IBM's interceptor then reads,
//! under a policy marked ENVELOPE(IBM).

use super::*;
use common::ams::{ams, dn, pki};

#[test]
fn the_rest_api_with_interception_reads_and_writes_ibms_envelope() {
    let h = Home::new();
    h.ok(&["create", "QW"]);
    let d = pki(&h);
    // The queue manager protects as bob (IBM's format transports keys with RSA).
    let qm_ks = h.qm_dir("QW").join("keystore");
    common::ams::import(&h, &qm_ks, &d, "bob");
    // It verifies alice's signatures and encrypts for bob (its own certificate, as a recipient).
    h.trust(&qm_ks, &d.join("alice.pem"));
    h.trust(&qm_ks, &d.join("bob.pem"));
    h.passwd("QW", "app", "app-horse-battery-staple");
    let port = common::free_port();
    h.ok(&[
        "start",
        "QW",
        "--background",
        "--listen",
        &format!("127.0.0.1:{port}"),
        "--web",
        "127.0.0.1:0",
        "--web-messaging",
        "app",
        "--web-intercept",
    ]);
    let (alice, bob) = (dn("alice"), dn("bob"));
    h.mqsc(
        "QW",
        &format!(
            "DEFINE QLOCAL(APP.Q)\n\
             DEFINE CHANNEL(APP.SVRCONN) CHLTYPE(SVRCONN) MCAUSER('app')\n\
             SET AUTHREC OBJTYPE(QMGR) PRINCIPAL('app') AUTHADD(CONNECT,INQ)\n\
             SET AUTHREC PROFILE('APP.Q') OBJTYPE(QUEUE) PRINCIPAL('app') AUTHADD(PUT,GET,BROWSE,INQ)\n\
             SET AUTHREC PROFILE('SYSTEM.PROTECTION.ERROR.QUEUE') OBJTYPE(QUEUE) PRINCIPAL('app') AUTHADD(PUT)\n\
             SET POLICY(APP.Q) SIGNALG(SHA256) ENCALG(AES256) SIGNER('{alice}') SIGNER('{bob}') RECIP('{bob}') ENVELOPE(IBM)\n"
        ),
    );
    let w = Web {
        base: format!("https://{}", h.listener("QW", "web")),
        h,
    };
    let user = [
        "-u",
        "app:app-horse-battery-staple",
        "-H",
        "ibm-mq-rest-csrf-token: x",
    ];
    let msg = "messaging/qmgr/QW/queue/APP.Q/message";
    // IBM → the queue manager's interception.
    assert_eq!(
        ams(&d, port, "alice", &["put", "APP.Q", "pay 100 to bob", "1"])[0]["sent"],
        1
    );
    let r = w.curl(&[&user[..], &["-X", "DELETE"]].concat(), msg);
    assert_eq!(
        (r.status, r.body.as_str()),
        (200, "pay 100 to bob 0"),
        "{}",
        r.body
    );
    // The queue manager's interception → IBM: stored in IBM's format, read by IBM's interceptor.
    let r = w.curl(
        &[&user[..], &["--data-binary", "pay 5 to alice"]].concat(),
        msg,
    );
    assert_eq!(r.status, 201, "{}", r.body);
    let raw = w.h.ok(&["browse", "QW", "APP.Q", "--raw"]);
    assert!(raw.contains("50444d51"), "not IBM's format: {raw}");
    let got = ams(&d, port, "bob", &["get", "APP.Q", "1"]);
    assert_eq!(got[0]["data"], "pay 5 to alice", "{got:?}");
}

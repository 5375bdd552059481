//! IBM's JMS client over TLS: MQ's CipherSpec names on SSLCIPH (TLS 1.3 and 1.2), the client
//! certificate's DN as the principal, SSLCAUTH(REQUIRED), and INTERCEPT(YES) protecting and
//! unprotecting for an IBM application that does not protect messages itself.

use super::{Home, NONE, free_port, ibm_with};
use sealmq_client::Client;
use sealmq_engine::mqi::{Browse, GetOptions, OpenOptions};
use std::path::Path;
use std::process::Command;

const ALICE: &str = "CN=alice,O=Example";
const PASS: &str = "changeit";

fn s(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

fn run(cmd: &mut Command) {
    let out = cmd.output().expect("the tool runs");
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The JVM's TLS settings: the queue manager's certificate trusted, `identity` (a keystore
/// directory) as the client's certificate when given, `cipher` as the CipherSpec (a JSSE
/// suite name, as IBM's client takes it without IBM's own JRE).
fn jvm(dir: &Path, identity: Option<&Path>, cipher: &str) -> Vec<String> {
    let mut v = vec![
        "-Dcom.ibm.mq.cfg.useIBMCipherMappings=false".to_string(),
        format!("-Djavax.net.ssl.trustStore={}", s(&dir.join("trust.p12"))),
        format!("-Djavax.net.ssl.trustStorePassword={PASS}"),
        format!("-Dsealmq.cipher={cipher}"),
    ];
    if let Some(id) = identity {
        let p12 = dir.join("client.p12");
        if !p12.exists() {
            run(Command::new("openssl").args([
                "pkcs12",
                "-export",
                "-in",
                &s(&id.join("identity.pem")),
                "-inkey",
                &s(&id.join("identity.key")),
                "-out",
                &s(&p12),
                "-passout",
                &format!("pass:{PASS}"),
                "-name",
                "client",
            ]));
        }
        v.push(format!("-Djavax.net.ssl.keyStore={}", s(&p12)));
        v.push(format!("-Djavax.net.ssl.keyStorePassword={PASS}"));
    }
    v
}

/// The Java clients' trust store (`trust.p12` in the home) made to hold the queue manager's
/// certificate `pem`.
fn java_trusts(h: &Home, pem: &std::path::Path) {
    run(Command::new("keytool").args([
        "-importcert",
        "-noprompt",
        "-alias",
        "qm",
        "-file",
        &s(pem),
        "-keystore",
        &s(&h.dir.path().join("trust.p12")),
        "-storetype",
        "PKCS12",
        "-storepass",
        PASS,
    ]));
}

/// Queue manager `qm` with a TLS listener (client certificates required), alice's certificate
/// trusted and given authority; the Java trust store holding the queue manager's certificate.
fn world(qm: &str) -> (Home, u16, std::path::PathBuf) {
    let h = Home::new();
    h.ok(&["create", qm]);
    let qm_ks = h.qm_dir(qm).join("keystore");
    let alice = h.dir.path().join("alice");
    h.ok(&["keystore", "init", &s(&alice), "--dn", ALICE]);
    h.trust(&qm_ks, &alice.join("identity.pem"));
    java_trusts(&h, &qm_ks.join("identity.pem"));
    let port = free_port();
    h.ok(&[
        "start",
        qm,
        "--background",
        "--tls",
        "--listen",
        &format!("127.0.0.1:{port}"),
    ]);
    h.mqsc(
        qm,
        &format!(
            "DEFINE QLOCAL(APP.Q)\n\
             DEFINE CHANNEL(TLS13.SVRCONN) CHLTYPE(SVRCONN) SSLCIPH(TLS_AES_256_GCM_SHA384) SSLCAUTH(REQUIRED)\n\
             DEFINE CHANNEL(TLS12.SVRCONN) CHLTYPE(SVRCONN) SSLCIPH(ECDHE_ECDSA_AES_256_GCM_SHA384) SSLCAUTH(REQUIRED)\n\
             SET AUTHREC OBJTYPE(QMGR) PRINCIPAL('{ALICE}') AUTHADD(CONNECT,INQ)\n\
             SET AUTHREC PROFILE('APP.*') OBJTYPE(QUEUE) PRINCIPAL('{ALICE}') AUTHADD(PUT,GET,BROWSE,INQ)\n"
        ),
    );
    (h, port, alice)
}

#[test]
fn ibm_jms_over_tls_with_mq_cipherspec_names_and_the_certificate_as_principal() {
    let (h, port, alice) = world("QS");
    let dir = h.dir.path().to_path_buf();
    let with = |identity: Option<&Path>, cipher: &str, channel: &str, args: &[&str]| {
        ibm_with(&jvm(&dir, identity, cipher), port, channel, NONE, args)
    };
    // TLS 1.3 and TLS 1.2 CipherSpecs, each on the channel naming it.
    let o = with(
        Some(&alice),
        "TLS_AES_256_GCM_SHA384",
        "TLS13.SVRCONN",
        &["send", "APP.Q", "1"],
    );
    assert_eq!(o[0]["sent"], 1, "{o:?}");
    let o = with(
        Some(&alice),
        "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
        "TLS12.SVRCONN",
        &["send", "APP.Q", "1"],
    );
    assert_eq!(o[0]["sent"], 1, "{o:?}");
    // The certificate's DN is the principal: the messages carry it.
    let mut c = Client::connect_local(&h.qm_dir("QS"), "check").unwrap();
    let (q, _) = c.open("APP.Q", OpenOptions::input()).unwrap();
    let g = c.get(q, &GetOptions::default()).unwrap();
    assert_eq!(g.md.user_id, ALICE);
    c.close(q).unwrap();
    // A CipherSpec the channel does not name: refused (2393), as IBM MQ refuses it.
    let o = with(
        Some(&alice),
        "TLS_AES_256_GCM_SHA384",
        "TLS12.SVRCONN",
        &["send", "APP.Q", "1"],
    );
    assert_eq!(o[0]["error"].as_u64(), Some(2393), "{o:?}");
    let log =
        std::fs::read_to_string(h.qm_dir("QS").join("errors/SEALMQ01.LOG")).unwrap_or_default();
    assert!(
        log.contains("requires cipher suite ECDHE_ECDSA_AES_256_GCM_SHA384"),
        "{log}"
    );
    // No client certificate: the handshake fails (IBM's client: 2397).
    let o = with(
        None,
        "TLS_AES_256_GCM_SHA384",
        "TLS13.SVRCONN",
        &["send", "APP.Q", "1"],
    );
    assert!(o[0]["error"].as_u64().is_some_and(|e| e != 0), "{o:?}");
    assert_eq!(h.depth("QS", "APP.Q"), 1, "nothing refused was put");
}

#[test]
fn an_intercepting_svrconn_protects_and_unprotects_for_an_ibm_jms_application() {
    let (h, port, alice) = world("QX");
    h.mqsc(
        "QX",
        "DEFINE QLOCAL(APP.SECRET)\n\
         SET POLICY(APP.SECRET) SIGNALG(SHA256) ENCALG(AES256) RECIP('CN=QX')\n\
         DEFINE CHANNEL(ICPT.SVRCONN) CHLTYPE(SVRCONN) SSLCIPH(ANY_TLS13) SSLCAUTH(REQUIRED) INTERCEPT(YES)\n",
    );
    let jvm = jvm(h.dir.path(), Some(&alice), "TLS_AES_256_GCM_SHA384");
    let ibm = |args: &[&str]| ibm_with(&jvm, port, "ICPT.SVRCONN", NONE, args);
    assert_eq!(ibm(&["send", "APP.SECRET", "3"])[0]["sent"], 3);
    // The queue holds envelopes only.
    let mut raw = Client::connect_local(&h.qm_dir("QX"), "raw").unwrap();
    raw.set_raw(true);
    let browse = OpenOptions {
        browse: true,
        ..Default::default()
    };
    let (rh, _) = raw.open("APP.SECRET", browse).unwrap();
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
            !String::from_utf8_lossy(&g.payload).contains("ibm "),
            "message {i} in the clear"
        );
    }
    // A receive and a listener through the channel: plaintext, with the JMS properties.
    let got = ibm(&["receive", "APP.SECRET", "1", "1000"]);
    assert_eq!(got[0]["text"], "ibm 0");
    assert_eq!(got[0]["props"]["colour"], "red");
    let o = &ibm(&["listen", "APP.SECRET", "2", "3000", "auto"])[0];
    assert_eq!(
        (o["received"].as_u64(), o["distinct"].as_u64()),
        (Some(2), Some(2)),
        "{o}"
    );
    assert_eq!(h.depth("QX", "APP.SECRET"), 0);
}

/// INTERCEPT(YES) under a policy in IBM's format (issue 45): the queue manager, holding an RSA
/// identity, protects in IBM's format what an IBM JMS application without AMS sends, which an
/// IBM application with AMS's interceptor reads; and unprotects for the first what the second
/// protected.
#[test]
fn an_intercepting_svrconn_writes_and_reads_ibms_envelope() {
    use super::common::ams::{ams_with, dn, import, pki};
    let h = Home::new();
    h.ok(&["create", "QJ"]);
    let d = pki(&h);
    let qm_ks = h.qm_dir("QJ").join("keystore");
    import(&h, &qm_ks, &d, "bob");
    for who in ["alice", "bob"] {
        h.trust(&qm_ks, &d.join(format!("{who}.pem")));
    }
    // IBM's clients trust the queue manager's certificate (now bob's) for TLS.
    java_trusts(&h, &d.join("bob.pem"));
    let port = free_port();
    h.ok(&[
        "start",
        "QJ",
        "--background",
        "--tls",
        "--listen",
        &format!("127.0.0.1:{port}"),
    ]);
    let (alice, bob) = (dn("alice"), dn("bob"));
    h.mqsc(
        "QJ",
        &format!(
            "DEFINE QLOCAL(APP.SECRET)\n\
             DEFINE CHANNEL(ICPT.SVRCONN) CHLTYPE(SVRCONN) SSLCIPH(ANY_TLS13) SSLCAUTH(REQUIRED) INTERCEPT(YES)\n\
             DEFINE CHANNEL(TLS13.SVRCONN) CHLTYPE(SVRCONN) SSLCIPH(TLS_AES_256_GCM_SHA384) SSLCAUTH(REQUIRED)\n\
             SET AUTHREC OBJTYPE(QMGR) PRINCIPAL('{alice}') AUTHADD(CONNECT,INQ)\n\
             SET AUTHREC PROFILE('APP.*') OBJTYPE(QUEUE) PRINCIPAL('{alice}') AUTHADD(PUT,GET,BROWSE,INQ)\n\
             SET AUTHREC PROFILE('SYSTEM.PROTECTION.ERROR.QUEUE') OBJTYPE(QUEUE) PRINCIPAL('{alice}') AUTHADD(PUT)\n\
             SET POLICY(APP.SECRET) SIGNALG(SHA256) ENCALG(AES256) SIGNER('{alice}') SIGNER('{bob}') \
             RECIP('{alice}') RECIP('{bob}') ENVELOPE(IBM)\n"
        ),
    );
    let jvm = jvm(
        h.dir.path(),
        Some(&d.join("ks-alice")),
        "TLS_AES_256_GCM_SHA384",
    );
    // IBM JMS without AMS, through the intercepting channel: IBM's format at rest.
    let sent = ibm_with(
        &jvm,
        port,
        "ICPT.SVRCONN",
        NONE,
        &["send", "APP.SECRET", "2"],
    );
    assert_eq!(sent[0]["sent"], 2);
    let raw = h.ok(&["browse", "QJ", "APP.SECRET", "--raw"]);
    assert_eq!(raw.matches(" 50444d51").count(), 2, "{raw}");
    // IBM's AMS interceptor reads what the queue manager protected (signed as bob, for alice).
    let ams = |args: &[&str]| ams_with(&jvm, &d, port, "TLS13.SVRCONN", "alice", args);
    let got = ams(&["get", "APP.SECRET", "2"]);
    for g in &got {
        assert!(
            g["data"].as_str().is_some_and(|t| t.starts_with("ibm ")),
            "{got:?}"
        );
    }
    // And the queue manager unprotects for IBM JMS what IBM's interceptor protected.
    assert_eq!(ams(&["put", "APP.SECRET", "from ams", "1"])[0]["sent"], 1);
    let got = ibm_with(
        &jvm,
        port,
        "ICPT.SVRCONN",
        NONE,
        &["receive", "APP.SECRET", "1", "2000"],
    );
    assert_eq!(got[0]["text"], "from ams 0", "{got:?}");
}

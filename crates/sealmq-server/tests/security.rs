//! Who the server lets do what: authority records on every call, TLS with client certificates
//! and a keystore read again without a restart, SVRCONN channels (MCAUSER, SSLCIPH, SSLPEER),
//! and interception on the queue manager's side for clients without a keystore.

use sealmq_client::Client;
use sealmq_engine::Md;
use sealmq_engine::mqi::{GetOptions, OpenOptions};
use sealmq_server::Server;

mod common;
use common::{poll, setup};
use sealmq_testkit::pki;

#[test]
fn authority_records_govern_every_call_and_persist() {
    let (_d, mut cfg) = setup("QMA");
    cfg.listen = Some("127.0.0.1:0".parse().unwrap());
    let server = Server::start(&cfg).unwrap();
    let addr = server.tcp_addr().unwrap().to_string();
    // TCP clients are principal 'tcp' (until TLS client certificates map DNs): no authority yet.
    assert_eq!(
        Client::connect_tcp(&addr, "app").err().unwrap().reason,
        sealmq_types::ReasonCode::NotAuthorized
    );
    let mut admin = Client::connect_local(&cfg.dir, "admin").unwrap();
    let (out, failed) = admin
        .mqsc(
            "DEFINE QLOCAL(APP.Q)\nSET AUTHREC PROFILE('QMA') OBJTYPE(QMGR) PRINCIPAL('tcp') AUTHADD(CONNECT)\nSET AUTHREC PROFILE('APP.*') OBJTYPE(QUEUE) PRINCIPAL('tcp') AUTHADD(PUT,BROWSE)\nDISPLAY AUTHREC PRINCIPAL('tcp')",
            false,
        )
        .unwrap();
    assert_eq!(failed, 0, "{out}");
    assert!(out.contains("AUTHLIST(PUT,BROWSE)"), "{out}");
    let mut app = Client::connect_tcp(&addr, "app").unwrap();
    assert_eq!(app.user, "tcp");
    app.put1("APP.Q", &mut Md::default(), b"allowed", false)
        .unwrap();
    let e = app.open("APP.Q", OpenOptions::input()).unwrap_err();
    assert_eq!(e.reason, sealmq_types::ReasonCode::NotAuthorized);
    assert!(e.detail.contains("GET"), "{e}");
    app.open("APP.Q", OpenOptions::browse()).unwrap();
    assert_eq!(
        app.put1("SYSTEM.DEAD.LETTER.QUEUE", &mut Md::default(), b"x", false)
            .unwrap_err()
            .reason,
        sealmq_types::ReasonCode::NotAuthorized
    );
    // MQSC runs with the user's authority (DSP on the queue manager to display it): refused.
    let (out, failed) = app.mqsc("DISPLAY QMGR", false).unwrap();
    assert!(
        failed == 1 && out.starts_with("AMQ8135E: Not authorized."),
        "{out}"
    );
    // Programs run as the queue manager's user: no one else may define or start one.
    let marker = cfg.dir.join("ran");
    let script = format!(
        "DEFINE SERVICE(SH) SERVTYPE(COMMAND) STARTCMD('/usr/bin/touch') STARTARG('{}')\nSTART SERVICE(SH)",
        marker.display()
    );
    let (out, failed) = app.mqsc(&script, false).unwrap();
    assert_eq!(failed, 2, "{out}");
    assert_eq!(out.matches("AMQ8135E").count(), 2, "{out}");
    let (out, _) = admin.mqsc("DISPLAY SERVICE(SH)", false).unwrap();
    assert!(out.contains("no service matches"), "{out}");
    assert!(!marker.exists());
    drop(app);
    admin.stop(true).unwrap();
    drop(admin);
    server.wait().unwrap();
    // Records survive a restart; removing one takes the authority away.
    let server = Server::start(&cfg).unwrap();
    let addr = server.tcp_addr().unwrap().to_string();
    let mut app = Client::connect_tcp(&addr, "app").unwrap();
    app.put1("APP.Q", &mut Md::default(), b"again", false)
        .unwrap();
    let mut admin = Client::connect_local(&cfg.dir, "admin").unwrap();
    let (_, failed) = admin
        .mqsc(
            "DELETE AUTHREC PROFILE('APP.*') OBJTYPE(QUEUE) PRINCIPAL('tcp')",
            false,
        )
        .unwrap();
    assert_eq!(failed, 0);
    assert_eq!(
        app.put1("APP.Q", &mut Md::default(), b"no", false)
            .unwrap_err()
            .reason,
        sealmq_types::ReasonCode::NotAuthorized
    );
    drop(app);
    admin.stop(true).unwrap();
    drop(admin);
    server.wait().unwrap();
}

/// REFRESH SECURITY TYPE(SSL): a partner trusted after the start is refused until the refresh
/// and accepted after it; a keystore that no longer reads leaves the one in use in place.
#[test]
fn refresh_security_ssl_reads_the_keystore_again_without_a_restart() {
    let (d, mut cfg) = setup("QMR");
    let qm_ks = cfg.dir.join("keystore");
    pki::keystore(&qm_ks, "CN=QMR");
    let (alice, bob) = (d.home().join("alice"), d.home().join("bob"));
    pki::keystore(&alice, "CN=alice");
    pki::keystore(&bob, "CN=bob");
    for app in [&alice, &bob] {
        pki::trust(app, &qm_ks);
    }
    let trust_in_qm = |who: &std::path::Path| pki::trust(&qm_ks, who);
    trust_in_qm(&alice);
    cfg.listen = Some("127.0.0.1:0".parse().unwrap());
    cfg.tls = true;
    let server = Server::start(&cfg).unwrap();
    let addr = server.tcp_addr().unwrap().to_string();
    let mut admin = Client::connect_local(&cfg.dir, "admin").unwrap();
    let mut mqsc = |script: &str| admin.mqsc(script, false).unwrap();
    let (out, failed) = mqsc(
        "SET AUTHREC PROFILE('QMR') OBJTYPE(QMGR) PRINCIPAL('CN=alice') AUTHADD(CONNECT)\nSET AUTHREC PROFILE('QMR') OBJTYPE(QMGR) PRINCIPAL('CN=bob') AUTHADD(CONNECT)",
    );
    assert_eq!(failed, 0, "{out}");
    let reason = |who: &std::path::Path| {
        Client::connect_tls(&addr, who, Some("QMR"), "app")
            .err()
            .map(|e| e.reason)
    };
    assert_eq!(reason(&alice), None);
    assert_eq!(
        reason(&bob),
        Some(sealmq_types::ReasonCode::SslInitializationError),
        "bob is not trusted yet"
    );
    trust_in_qm(&bob);
    assert_eq!(
        reason(&bob),
        Some(sealmq_types::ReasonCode::SslInitializationError),
        "trusted on disk, but the keystore in use is the one read at start"
    );
    let (out, failed) = mqsc("REFRESH SECURITY TYPE(SSL)");
    assert_eq!(failed, 0, "{out}");
    assert!(out.contains("Keystore read again"), "{out}");
    assert_eq!(reason(&bob), None, "bob is trusted after the refresh");
    assert_eq!(reason(&alice), None);

    // A keystore that no longer reads: the refresh fails with 2381 and changes nothing.
    std::fs::write(qm_ks.join("keystore.toml"), "not = [valid").unwrap();
    let (out, failed) = mqsc("REF SECURITY(*) TYPE(SSL)");
    assert_eq!(failed, 1, "{out}");
    assert!(out.contains("2381") && out.contains("unchanged"), "{out}");
    assert_eq!(reason(&alice), None, "the keystore in use stayed");
    assert_eq!(reason(&bob), None);

    // MQ's default type has nothing to refresh here; other shapes are refused.
    let (out, failed) = mqsc("REFRESH SECURITY");
    assert_eq!(failed, 0, "{out}");
    let (out, failed) =
        mqsc("REFRESH SECURITY TYPE(SSL) FROB\nREFRESH SECURITY TYPE(X)\nREFRESH QLOCAL(Q)");
    assert_eq!(failed, 3, "{out}");
    admin.stop(true).unwrap();
    drop(admin);
    server.wait().unwrap();
}

#[test]
fn tls_with_client_certificates_maps_the_subject_dn_to_the_principal() {
    let (d, mut cfg) = setup("QMT");
    let qm_ks = cfg.dir.join("keystore");
    pki::keystore(&qm_ks, "CN=QMT");
    let alice = d.home().join("alice");
    pki::keystore(&alice, "CN=alice,O=Example");
    let mallory = d.home().join("mallory");
    pki::keystore(&mallory, "CN=mallory");
    pki::trust_each_other(&alice, &qm_ks);
    pki::trust(&mallory, &qm_ks);
    cfg.listen = Some("127.0.0.1:0".parse().unwrap());
    cfg.tls = true;
    let server = Server::start(&cfg).unwrap();
    let addr = server.tcp_addr().unwrap().to_string();
    // Trusted, but no authority yet.
    assert_eq!(
        Client::connect_tls(&addr, &alice, Some("QMT"), "app")
            .err()
            .unwrap()
            .reason,
        sealmq_types::ReasonCode::NotAuthorized
    );
    let mut admin = Client::connect_local(&cfg.dir, "admin").unwrap();
    let (out, failed) = admin
        .mqsc("SET AUTHREC PROFILE('QMT') OBJTYPE(QMGR) PRINCIPAL('CN=alice,O=Example') AUTHADD(CONNECT)\nSET AUTHREC PROFILE('Q') OBJTYPE(QUEUE) PRINCIPAL('CN=alice,O=Example') AUTHADD(PUT)", false)
        .unwrap();
    assert_eq!(failed, 0, "{out}");
    let mut c = Client::connect_tls(&addr, &alice, Some("QMT"), "app").unwrap();
    assert_eq!(c.user, "CN=alice,O=Example");
    c.put1("Q", &mut Md::default(), b"over tls", false).unwrap();
    // A client the queue manager does not trust, a server that is not the expected queue
    // manager, and a plain client on the TLS port all fail.
    let e = Client::connect_tls(&addr, &mallory, Some("QMT"), "x")
        .err()
        .unwrap();
    assert_eq!(
        e.reason,
        sealmq_types::ReasonCode::SslInitializationError,
        "{e}"
    );
    assert_eq!(
        Client::connect_tls(&addr, &alice, Some("OTHER"), "x")
            .err()
            .unwrap()
            .reason,
        sealmq_types::ReasonCode::SslInitializationError
    );
    assert_eq!(
        Client::connect_tcp(&addr, "plain").err().unwrap().reason,
        sealmq_types::ReasonCode::ConnectionBroken
    );
    assert_eq!(server.queue_manager().depth("Q").unwrap(), 1);
    drop(c);
    admin.stop(true).unwrap();
    drop(admin);
    server.wait().unwrap();
}

#[test]
fn svrconn_channels_set_mcauser_sslciph_and_sslpeer() {
    let (d, mut cfg) = setup("QMH");
    cfg.listen = Some("127.0.0.1:0".parse().unwrap());
    let server = Server::start(&cfg).unwrap();
    let addr = server.tcp_addr().unwrap().to_string();
    let mut admin = Client::connect_local(&cfg.dir, "admin").unwrap();
    let (out, failed) = admin
        .mqsc(
            "DEFINE CHANNEL(APP.SVRCONN) CHLTYPE(SVRCONN) MCAUSER('appuser')\nDEFINE CHANNEL(TLS.ONLY) CHLTYPE(SVRCONN) SSLCIPH(ANY)\nSET AUTHREC PROFILE('QMH') OBJTYPE(QMGR) PRINCIPAL('appuser') AUTHADD(CONNECT)\nSET AUTHREC PROFILE('Q') OBJTYPE(QUEUE) PRINCIPAL('appuser') AUTHADD(PUT)",
            false,
        )
        .unwrap();
    assert_eq!(failed, 0, "{out}");
    let mut c = Client::connect_tcp_channel(&addr, "APP.SVRCONN", "app").unwrap();
    assert_eq!(c.user, "appuser", "MCAUSER is the principal");
    c.put1("Q", &mut Md::default(), b"via channel", false)
        .unwrap();
    assert_eq!(
        Client::connect_tcp_channel(&addr, "NO.SUCH", "app")
            .err()
            .unwrap()
            .reason,
        sealmq_types::ReasonCode::UnknownChannelName
    );
    assert_eq!(
        Client::connect_tcp_channel(&addr, "TLS.ONLY", "app")
            .err()
            .unwrap()
            .reason,
        sealmq_types::ReasonCode::SslInitializationError
    );
    drop(c);
    admin.stop(true).unwrap();
    drop(admin);
    server.wait().unwrap();

    // SSLPEER on a TLS listener.
    let qm_ks = cfg.dir.join("keystore");
    pki::keystore(&qm_ks, "CN=QMH");
    let alice = d.home().join("alice");
    pki::keystore(&alice, "CN=alice,O=Example");
    pki::trust_each_other(&alice, &qm_ks);
    cfg.tls = true;
    let server = Server::start(&cfg).unwrap();
    let addr = server.tcp_addr().unwrap().to_string();
    let mut admin = Client::connect_local(&cfg.dir, "admin").unwrap();
    let (out, failed) = admin
        .mqsc("DEFINE CHANNEL(PEER.CHK) CHLTYPE(SVRCONN) SSLCIPH(ANY) SSLPEER('CN=alice*') MCAUSER('appuser')\nDEFINE CHANNEL(PEER.BOB) CHLTYPE(SVRCONN) SSLPEER('CN=bob*')", false)
        .unwrap();
    assert_eq!(failed, 0, "{out}");
    let c = Client::connect_tls_channel(&addr, &alice, Some("QMH"), "PEER.CHK", "app").unwrap();
    assert_eq!(c.user, "appuser");
    assert_eq!(
        Client::connect_tls_channel(&addr, &alice, Some("QMH"), "PEER.BOB", "app")
            .err()
            .unwrap()
            .reason,
        sealmq_types::ReasonCode::SslInitializationError
    );
    drop(c);
    admin.stop(true).unwrap();
    drop(admin);
    server.wait().unwrap();
}

/// Queue manager `qm` (identity `CN=<qm>`) started with TLS on loopback, and an application
/// keystore holding only a TLS identity `CN=app` (it does no protection of its own), each
/// trusting the other: what QM-side interception needs (TLS with a client certificate).
fn intercepting(
    qm: &str,
) -> (
    sealmq_testkit::TempQm,
    sealmq_server::ServerConfig,
    std::path::PathBuf,
    Server,
) {
    let (d, mut cfg) = setup(qm);
    let qm_ks = cfg.dir.join("keystore");
    pki::keystore(&qm_ks, &format!("CN={qm}"));
    let tls_ks = d.home().join("app-tls");
    pki::keystore(&tls_ks, "CN=app");
    pki::trust_each_other(&tls_ks, &qm_ks);
    cfg.tls = true;
    cfg.listen = Some("127.0.0.1:0".parse().unwrap());
    let server = Server::start(&cfg).unwrap();
    (d, cfg, tls_ks, server)
}

#[test]
fn qm_side_interception_protects_for_clients_without_a_keystore() {
    use sealmq_protect::{Keystore, Original, Protector};
    let (_d, cfg, tls_ks, server) = intercepting("QMI");
    let qm_ks = cfg.dir.join("keystore");
    let addr = server.tcp_addr().unwrap().to_string();
    let mut admin = Client::connect_local(&cfg.dir, "admin").unwrap();
    let (out, failed) = admin
        .mqsc(
            "DEFINE QALIAS(Q.RAW) TARGET(Q)\nDEFINE CHANNEL(APP.ICPT) CHLTYPE(SVRCONN) MCAUSER('app') SSLCIPH(ANY) INTERCEPT(YES)\nSET POLICY(Q) SIGNALG(SHA256) ENCALG(AES256) RECIP('CN=QMI')\nSET AUTHREC PROFILE('QMI') OBJTYPE(QMGR) PRINCIPAL('app') AUTHADD(CONNECT)\nSET AUTHREC PROFILE('Q') OBJTYPE(QUEUE) PRINCIPAL('app') AUTHADD(PUT,GET)\nALTER QMGR ACCTMQI(ON)",
            false,
        )
        .unwrap();
    assert_eq!(failed, 0, "{out}");
    let mut app =
        Client::connect_tls_channel(&addr, &tls_ks, Some("QMI"), "APP.ICPT", "no-keystore-app")
            .unwrap();
    app.put1("Q", &mut Md::default(), b"protected by the QM", false)
        .unwrap();
    // Stored as an envelope.
    let mut raw = Client::connect_local(&cfg.dir, "raw").unwrap();
    raw.set_raw(true);
    let (rh, _) = raw
        .open(
            "Q.RAW",
            OpenOptions {
                browse: true,
                input_shared: true,
                output: true,
                ..Default::default()
            },
        )
        .unwrap();
    let stored = raw
        .get(
            rh,
            &GetOptions {
                browse: sealmq_engine::mqi::Browse::First,
                ..Default::default()
            },
        )
        .unwrap();
    assert!(sealmq_protect::header::has_magic(&stored.payload));
    let first_envelope = stored.payload.len() as u64;
    let (ah, _) = app.open("Q", OpenOptions::input()).unwrap();
    assert_eq!(
        app.get(ah, &GetOptions::default()).unwrap().payload,
        b"protected by the QM"
    );
    // Already protected: stored as sent, not protected twice, and unprotected once.
    let qm_protector = Protector::new(Keystore::load(&qm_ks).unwrap());
    let policy = server.queue_manager().policy("Q").unwrap();
    let envelope = qm_protector
        .protect(&policy, b"pre-protected", Original::default())
        .unwrap();
    app.set_raw(true);
    app.put1("Q", &mut Md::default(), &envelope, false).unwrap();
    let stored = raw
        .get(
            rh,
            &GetOptions {
                browse: sealmq_engine::mqi::Browse::First,
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(stored.payload, envelope, "not protected twice");
    assert_eq!(
        app.get(ah, &GetOptions::default()).unwrap().payload,
        b"pre-protected"
    );
    // A message that fails its checks under ENFORCE (plaintext is refused at the put since
    // issue 42; a forged envelope, the magic then garbage, gets in): 2063 for the
    // application, the message on the error queue — here for a get that waited (the event
    // loop takes the message, the pool unprotects it).
    assert_eq!(
        raw.put(rh, &mut Md::default(), b"plain", false)
            .unwrap_err()
            .reason,
        sealmq_types::ReasonCode::SecurityError
    );
    raw.put(rh, &mut Md::default(), b"SMQE, not an envelope", false)
        .unwrap();
    let waiting = GetOptions {
        wait: Some(std::time::Duration::from_secs(5)),
        ..Default::default()
    };
    assert_eq!(
        app.get(ah, &waiting).unwrap_err().reason,
        sealmq_types::ReasonCode::SecurityError
    );
    assert_eq!(
        server
            .queue_manager()
            .depth("SYSTEM.PROTECTION.ERROR.QUEUE")
            .unwrap(),
        1
    );
    assert_eq!(server.queue_manager().depth("Q").unwrap(), 0);
    drop(app);
    // Accounting counts the sizes as stored: the envelopes the queue manager made and read.
    let acct = cfg.dir.join("accounting");
    let line = || -> Option<serde_json::Value> {
        let dir = std::fs::read_dir(&acct).ok()?;
        dir.flatten()
            .flat_map(|f| {
                std::fs::read_to_string(f.path())
                    .unwrap_or_default()
                    .lines()
                    .map(String::from)
                    .collect::<Vec<_>>()
            })
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(&l).ok())
            .find(|v| v["appl"] == "no-keystore-app")
    };
    poll(|| line().is_some());
    let rec = line().unwrap();
    let envelopes = first_envelope + envelope.len() as u64;
    assert_eq!(rec["put_bytes"], envelopes, "{rec}");
    // The plain message's get failed its checks (2063): a failed call, no bytes got.
    assert_eq!(rec["get_bytes"], envelopes, "{rec}");
    assert_eq!(rec["failed"], 1, "{rec}");
    assert_eq!(rec["calls"]["put1"]["count"], 2, "{rec}");
    // A waiting get whose buffer is too small for the unprotected message: 2080 and the
    // message stays; a waiting get with room takes it whole, in clear.
    let mut app =
        Client::connect_tls_channel(&addr, &tls_ks, Some("QMI"), "APP.ICPT", "icpt-buffers")
            .unwrap();
    let (ah, _) = app.open("Q", OpenOptions::input()).unwrap();
    app.put1("Q", &mut Md::default(), b"0123456789", false)
        .unwrap();
    let small = GetOptions {
        buffer: Some(4),
        ..waiting.clone()
    };
    assert_eq!(
        app.get(ah, &small).unwrap_err().reason,
        sealmq_types::ReasonCode::TruncatedMsgFailed
    );
    assert_eq!(server.queue_manager().depth("Q").unwrap(), 1);
    assert_eq!(app.get(ah, &waiting).unwrap().payload, b"0123456789");
    assert_eq!(server.queue_manager().depth("Q").unwrap(), 0);
    drop(app);
    drop(raw);
    admin.stop(true).unwrap();
    drop(admin);
    server.wait().unwrap();
}

#[test]
fn a_protected_message_too_big_for_the_buffer_stays_on_the_queue() {
    let (d, cfg) = setup("QMB");
    let app_ks = d.home().join("app-ks");
    pki::keystore(&app_ks, "CN=app");
    let server = Server::start(&cfg).unwrap();
    let mut admin = Client::connect_local(&cfg.dir, "admin").unwrap();
    let (out, failed) = admin
        .mqsc(
            "SET POLICY(Q) ENCALG(AES256) RECIP('CN=app')\nSET AUTHREC PROFILE('QMB') OBJTYPE(QMGR) PRINCIPAL('app') AUTHADD(CONNECT)\nSET AUTHREC PROFILE('Q') OBJTYPE(QUEUE) PRINCIPAL('app') AUTHADD(PUT,GET)",
            false,
        )
        .unwrap();
    assert_eq!(failed, 0, "{out}");
    let mut app = Client::connect_local(&cfg.dir, "app").unwrap();
    app.set_keystore(&app_ks).unwrap();
    let body = vec![0x42u8; 300];
    app.put1("Q", &mut Md::default(), &body, false).unwrap();
    let (h, _) = app.open("Q", OpenOptions::input()).unwrap();
    // Outside a unit of work, a buffer too small: 2080, and the message is not lost.
    let small = GetOptions {
        buffer: Some(100),
        ..Default::default()
    };
    assert_eq!(
        app.get(h, &small).unwrap_err().reason,
        sealmq_types::ReasonCode::TruncatedMsgFailed
    );
    assert_eq!(server.queue_manager().depth("Q").unwrap(), 1);
    // Truncation accepted: the first 100 bytes and a warning; the message is taken.
    let trunc = GetOptions {
        buffer: Some(100),
        accept_truncated: true,
        ..Default::default()
    };
    app.put1("Q", &mut Md::default(), &body, false).unwrap();
    let got = app.get(h, &trunc).unwrap();
    assert_eq!(got.payload, &body[..100]);
    assert_eq!(got.data_len, 300);
    assert!(got.warning.is_some());
    // A big enough buffer gets the whole message.
    let big = GetOptions {
        buffer: Some(1000),
        ..Default::default()
    };
    assert_eq!(app.get(h, &big).unwrap().payload, body);
    assert_eq!(server.queue_manager().depth("Q").unwrap(), 0);
    drop(app);
    admin.stop(true).unwrap();
    drop(admin);
    server.wait().unwrap();
}

#[test]
fn qm_side_interception_protects_publications_once_and_unprotects_each_subscribers_copy() {
    use sealmq_client::pubsub::Subscription;
    let (_d, cfg, tls_ks, server) = intercepting("QMT");
    let addr = server.tcp_addr().unwrap().to_string();
    let mut admin = Client::connect_local(&cfg.dir, "admin").unwrap();
    let (out, failed) = admin
        .mqsc(
            "DEFINE CHANNEL(APP.ICPT) CHLTYPE(SVRCONN) MCAUSER('app') SSLCIPH(ANY) INTERCEPT(YES)\n\
             SET AUTHREC PROFILE('QMT') OBJTYPE(QMGR) PRINCIPAL('app') AUTHADD(CONNECT)\n\
             DEFINE TOPIC(PAYROLL) TOPICSTR('payroll')\n\
             SET POLICY(PAYROLL) SIGNALG(SHA256) ENCALG(AES256) RECIP('CN=QMT')\n\
             SET AUTHREC PROFILE('PAYROLL') OBJTYPE(TOPIC) PRINCIPAL('app') AUTHADD(PUB,SUB)\n\
             DEFINE QLOCAL(AUDIT.Q)\n\
             DEFINE SUB(AUDIT) TOPICSTR('payroll/#') DEST(AUDIT.Q)\n",
            false,
        )
        .unwrap();
    assert_eq!(failed, 0, "{out}");
    let connect = |appl: &str| {
        Client::connect_tls_channel(&addr, &tls_ks, Some("QMT"), "APP.ICPT", appl).unwrap()
    };
    let mut subscriber = connect("subscriber");
    let (sh, _) = subscriber
        .subscribe(&Subscription {
            topic: "payroll/#".into(),
            ..Default::default()
        })
        .unwrap();
    let mut publisher = connect("publisher");
    publisher
        .publish("payroll/march", &mut Md::default(), b"alice 4200", false)
        .unwrap();
    // Each subscription's copy is the one envelope the queue manager made.
    let mut raw = Client::connect_local(&cfg.dir, "raw").unwrap();
    raw.set_raw(true);
    let (rh, _) = raw
        .open(
            "AUDIT.Q",
            OpenOptions {
                browse: true,
                ..Default::default()
            },
        )
        .unwrap();
    let stored = raw
        .get(
            rh,
            &GetOptions {
                browse: sealmq_engine::mqi::Browse::First,
                ..Default::default()
            },
        )
        .unwrap();
    assert!(sealmq_protect::header::has_magic(&stored.payload));
    assert!(
        !stored.payload.windows(10).any(|w| w == b"alice 4200"),
        "published in clear"
    );
    // The intercepting subscriber reads it in clear, unprotected by the queue manager.
    let got = subscriber
        .get(
            sh,
            &GetOptions {
                wait: Some(std::time::Duration::from_secs(10)),
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(got.payload, b"alice 4200");
    // A publication the queue manager cannot protect (no recipient certificate): 2063, and
    // nothing was delivered.
    let (out, failed) = admin
        .mqsc(
            "SET POLICY(PAYROLL) SIGNALG(SHA256) ENCALG(AES256) RECIP('CN=nobody')\n",
            false,
        )
        .unwrap();
    assert_eq!(failed, 0, "{out}");
    let e = publisher
        .publish("payroll/april", &mut Md::default(), b"bob 3900", false)
        .unwrap_err();
    assert_eq!(e.reason, sealmq_types::ReasonCode::SecurityError, "{e}");
    assert_eq!(server.queue_manager().depth("AUDIT.Q").unwrap(), 1);
    drop((subscriber, publisher, raw));
    admin.stop(true).unwrap();
    drop(admin);
    server.wait().unwrap();
}

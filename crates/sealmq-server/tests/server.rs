//! The server as applications meet it: many connections, a controlled stop (2161, units of work
//! backed out), a broken connection mid-unit-of-work, and malformed frames.

use proptest::prelude::*;
use sealmq_client::Client;
use sealmq_engine::mqi::{GetOptions, OpenOptions};
use sealmq_engine::{Md, Persistence, QmConfig};
use sealmq_server::{Server, ServerConfig};
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

fn setup(name: &str) -> (sealmq_testkit::TempQm, ServerConfig) {
    // These tests use the default channel, which the default CHLAUTH rules refuse: allowed
    // the documented way (a more specific rule).
    let t = sealmq_testkit::queue_manager(
        name,
        "DEFINE QLOCAL(Q)\n\
         SET CHLAUTH('SYSTEM.DEF.SVRCONN') TYPE(ADDRESSMAP) ADDRESS('*') USERSRC(CHANNEL)\n",
    );
    let cfg = ServerConfig {
        name: name.into(),
        dir: t.dir.clone(),
        listen: None,
        tls: false,
        metrics: None,
    };
    (t, cfg)
}

fn persistent() -> Md {
    Md {
        persistence: Persistence::Persistent,
        ..Md::default()
    }
}

fn poll(cond: impl FnMut() -> bool) {
    sealmq_testkit::wait_for(Duration::from_secs(20), "the condition", cond)
}

#[test]
fn five_hundred_concurrent_connections() {
    let (_d, cfg) = setup("QMC");
    let server = Server::start(&cfg).unwrap();
    let mut clients: Vec<Client> = (0..500)
        .map(|i| Client::connect_local(&cfg.dir, &format!("app{i}")).unwrap())
        .collect();
    poll(|| server.connections() == 500);
    for (i, c) in clients.iter_mut().enumerate() {
        c.put1("Q", &mut Md::default(), format!("{i}").as_bytes(), false)
            .unwrap();
    }
    assert_eq!(server.queue_manager().depth("Q").unwrap(), 500);
    let mut seen = std::collections::HashSet::new();
    for c in clients.iter_mut() {
        let (h, _) = c.open("Q", OpenOptions::input()).unwrap();
        seen.insert(c.get(h, &GetOptions::default()).unwrap().payload);
    }
    assert_eq!(seen.len(), 500);
    drop(clients);
    poll(|| server.connections() == 0);
    server.request_stop();
    server.wait().unwrap();
}

#[test]
fn a_broken_connection_backs_out_and_the_client_sees_2009() {
    let (_d, cfg) = setup("QMB");
    let server = Server::start(&cfg).unwrap();
    {
        let mut a = Client::connect_local(&cfg.dir, "a").unwrap();
        a.put1("Q", &mut persistent(), b"in flight", true).unwrap();
        assert_eq!(
            server
                .queue_manager()
                .queue_status("Q")
                .unwrap()
                .uncommitted,
            1
        );
    } // the socket closes without commit
    poll(|| {
        server
            .queue_manager()
            .queue_status("Q")
            .unwrap()
            .uncommitted
            == 0
    });
    assert_eq!(server.queue_manager().depth("Q").unwrap(), 0, "backed out");
    server.request_stop();
    server.wait().unwrap();
    // During a stop a client is told 2161; once the queue manager is gone, 2009.
    let server = Server::start(&cfg).unwrap();
    let mut c = Client::connect_local(&cfg.dir, "c").unwrap();
    let mut admin = Client::connect_local(&cfg.dir, "admin").unwrap();
    admin.stop(true).unwrap();
    assert_eq!(c.heartbeat().unwrap_err().reason, 2161);
    drop(admin);
    server.wait().unwrap();
    assert_eq!(c.heartbeat().unwrap_err().reason, 2009);
}

#[test]
fn a_controlled_stop_answers_2161_and_backs_out() {
    let (_d, cfg) = setup("QMS");
    let server = Server::start(&cfg).unwrap();
    let mut a = Client::connect_local(&cfg.dir, "a").unwrap();
    a.put1("Q", &mut persistent(), b"uncommitted", true)
        .unwrap();
    let dir = cfg.dir.clone();
    let getter = std::thread::spawn(move || {
        let mut b = Client::connect_local(&dir, "b").unwrap();
        let (h, _) = b.open("Q", OpenOptions::input()).unwrap();
        let start = Instant::now();
        let r = b.get(
            h,
            &GetOptions {
                wait: Some(Duration::from_secs(60)),
                ..Default::default()
            },
        );
        (r.map(|g| g.payload).map_err(|e| e.reason), start.elapsed())
    });
    poll(|| server.queue_manager().waiting("Q") == 1);
    let mut admin = Client::connect_local(&cfg.dir, "admin").unwrap();
    admin.stop(false).unwrap();
    drop(admin);
    let (r, waited) = getter.join().unwrap();
    assert_eq!(r, Err(2161));
    assert!(
        waited < Duration::from_secs(30),
        "the waiting get was released at once ({waited:?})"
    );
    assert_eq!(
        a.put1("Q", &mut persistent(), b"late", false)
            .unwrap_err()
            .reason,
        2161
    );
    drop(a);
    server.wait().unwrap();
    let (qm, _) = sealmq_engine::start(QmConfig::new("QMS", &cfg.dir)).unwrap();
    assert_eq!(
        qm.depth("Q").unwrap(),
        0,
        "the unit of work open at stop was backed out"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    fn malformed_frames_get_an_error_and_a_closed_connection(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        thread_local! {
            static S: (sealmq_testkit::TempQm, ServerConfig, Server) = {
                let (d, cfg) = setup("QMF");
                let s = Server::start(&cfg).unwrap();
                (d, cfg, s)
            };
        }
        S.with(|(_, cfg, _)| {
            let mut s = UnixStream::connect(cfg.dir.join("qm.sock")).unwrap();
            s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            let _ = s.write_all(&bytes);
            let _ = s.shutdown(std::net::Shutdown::Write);
            // The server answers or closes; it never hangs (the read would time out).
            let mut sink = Vec::new();
            let r = s.read_to_end(&mut sink);
            prop_assert!(r.is_ok(), "server did not close the connection: {r:?}");
            // And it still serves everybody else.
            let mut c = Client::connect_local(&cfg.dir, "after").unwrap();
            c.heartbeat().unwrap();
            Ok(())
        })?;
    }
}

#[test]
fn authority_records_govern_every_call_and_persist() {
    let (_d, mut cfg) = setup("QMA");
    cfg.listen = Some("127.0.0.1:0".parse().unwrap());
    let server = Server::start(&cfg).unwrap();
    let addr = server.tcp_addr().unwrap().to_string();
    // TCP clients are principal 'tcp' (until TLS client certificates map DNs): no authority yet.
    assert_eq!(
        Client::connect_tcp(&addr, "app").err().unwrap().reason,
        2035
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
    assert_eq!(e.reason, 2035);
    assert!(e.detail.contains("GET"), "{e}");
    app.open("APP.Q", OpenOptions::browse()).unwrap();
    assert_eq!(
        app.put1("SYSTEM.DEAD.LETTER.QUEUE", &mut Md::default(), b"x", false)
            .unwrap_err()
            .reason,
        2035
    );
    assert_eq!(app.mqsc("DISPLAY QMGR", false).unwrap_err().reason, 2035);
    // Programs run as the queue manager's user: no one else may define or start one.
    let marker = cfg.dir.join("ran");
    let script = format!(
        "DEFINE SERVICE(SH) SERVTYPE(COMMAND) STARTCMD('/usr/bin/touch') STARTARG('{}')\nSTART SERVICE(SH)",
        marker.display()
    );
    assert_eq!(app.mqsc(&script, false).unwrap_err().reason, 2035);
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
        2035
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
    use sealmq_protect::identity::IdentitySpec;
    use sealmq_protect::{Dn, KeyKind, Keystore};
    let (d, mut cfg) = setup("QMR");
    let qm_ks = cfg.dir.join("keystore");
    let init = |dir: &std::path::Path, dn: &str| {
        Keystore::init(
            dir,
            &IdentitySpec::new(Dn::parse(dn).unwrap(), KeyKind::P256, 30),
            None,
        )
        .unwrap();
    };
    init(&qm_ks, "CN=QMR");
    let (alice, bob) = (d.home().join("alice"), d.home().join("bob"));
    init(&alice, "CN=alice");
    init(&bob, "CN=bob");
    let qm_cert = std::fs::read(qm_ks.join("identity.pem")).unwrap();
    for app in [&alice, &bob] {
        Keystore::load(app).unwrap().trust(&qm_cert).unwrap();
    }
    let trust_in_qm = |who: &std::path::Path| {
        Keystore::load(&qm_ks)
            .unwrap()
            .trust(&std::fs::read(who.join("identity.pem")).unwrap())
            .unwrap();
    };
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
    assert_eq!(reason(&bob), Some(2393), "bob is not trusted yet");
    trust_in_qm(&bob);
    assert_eq!(
        reason(&bob),
        Some(2393),
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
    use sealmq_protect::identity::IdentitySpec;
    use sealmq_protect::{Dn, KeyKind, Keystore};
    let (d, mut cfg) = setup("QMT");
    let qm_ks = cfg.dir.join("keystore");
    Keystore::init(
        &qm_ks,
        &IdentitySpec::new(Dn::parse("CN=QMT").unwrap(), KeyKind::P256, 30),
        None,
    )
    .unwrap();
    let alice = d.home().join("alice");
    Keystore::init(
        &alice,
        &IdentitySpec::new(Dn::parse("CN=alice,O=Example").unwrap(), KeyKind::P256, 30),
        None,
    )
    .unwrap();
    let mallory = d.home().join("mallory");
    Keystore::init(
        &mallory,
        &IdentitySpec::new(Dn::parse("CN=mallory").unwrap(), KeyKind::P256, 30),
        None,
    )
    .unwrap();
    Keystore::load(&alice)
        .unwrap()
        .trust(&std::fs::read(qm_ks.join("identity.pem")).unwrap())
        .unwrap();
    Keystore::load(&mallory)
        .unwrap()
        .trust(&std::fs::read(qm_ks.join("identity.pem")).unwrap())
        .unwrap();
    Keystore::load(&qm_ks)
        .unwrap()
        .trust(&std::fs::read(alice.join("identity.pem")).unwrap())
        .unwrap();
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
        2035
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
    assert_eq!(e.reason, 2393, "{e}");
    assert_eq!(
        Client::connect_tls(&addr, &alice, Some("OTHER"), "x")
            .err()
            .unwrap()
            .reason,
        2393
    );
    assert_eq!(
        Client::connect_tcp(&addr, "plain").err().unwrap().reason,
        2009
    );
    assert_eq!(server.queue_manager().depth("Q").unwrap(), 1);
    drop(c);
    admin.stop(true).unwrap();
    drop(admin);
    server.wait().unwrap();
}

#[test]
fn the_async_client_does_request_reply() {
    use sealmq_client::nonblocking::AsyncClient;
    let (_d, cfg) = setup("QMX");
    let server = Server::start(&cfg).unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let dir = cfg.dir.clone();
    let reply = rt.block_on(async move {
        let a = AsyncClient::connect_local(dir.clone(), "requester".into())
            .await
            .unwrap();
        let b = AsyncClient::connect_local(dir, "responder".into())
            .await
            .unwrap();
        let (bin, _) = b.open("Q", OpenOptions::input()).await.unwrap();
        // The responder waits (on the blocking pool) while the requester puts.
        let responder = tokio::spawn(async move {
            let m = b
                .get(
                    bin,
                    GetOptions {
                        wait: Some(Duration::from_secs(10)),
                        ..Default::default()
                    },
                )
                .await
                .unwrap();
            let md = Md {
                correl_id: m.md.msg_id,
                ..Md::default()
            };
            b.put1("Q", md, m.payload.to_ascii_uppercase(), false)
                .await
                .unwrap();
        });
        let sent = a
            .put1("Q", Md::default(), b"ping".to_vec(), false)
            .await
            .unwrap();
        responder.await.unwrap();
        let (ain, _) = a.open("Q", OpenOptions::input()).await.unwrap();
        let gmo = GetOptions {
            wait: Some(Duration::from_secs(10)),
            matching: sealmq_engine::Match {
                correl_id: Some(sent.msg_id),
                ..Default::default()
            },
            ..Default::default()
        };
        a.get(ain, gmo).await.unwrap().payload
    });
    assert_eq!(reply, b"PING");
    server.request_stop();
    server.wait().unwrap();
}

#[test]
fn the_async_client_consumes_pushed_messages() {
    use sealmq_client::nonblocking::AsyncClient;
    use sealmq_client::{ConsumeMode, ConsumeOptions};
    let (_d, cfg) = setup("QMS");
    let server = Server::start(&cfg).unwrap();
    let mut c = Client::connect_local(&cfg.dir, "filler").unwrap();
    for i in 0..500u32 {
        c.put1("Q", &mut persistent(), &i.to_le_bytes(), false)
            .unwrap();
    }
    drop(c);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let dir = cfg.dir.clone();
    let got = rt.block_on(async move {
        let a = AsyncClient::connect_local(dir, "consumer".into())
            .await
            .unwrap();
        let (h, _) = a.open("Q", OpenOptions::input()).await.unwrap();
        let opts = ConsumeOptions {
            mode: ConsumeMode::Syncpoint,
            window: 64,
            batch: 16,
            ..Default::default()
        };
        let mut s = a.consume(h, opts).await.unwrap();
        let mut got = Vec::new();
        while let Some(m) = s.next(Duration::from_millis(500)).await.unwrap() {
            got.push(u32::from_le_bytes(m.payload[..4].try_into().unwrap()));
        }
        assert!(s.stop().await.unwrap().is_empty());
        got
    });
    assert_eq!(got, (0..500).collect::<Vec<u32>>());
    assert_eq!(
        server.queue_manager().depth("Q").unwrap(),
        0,
        "all committed"
    );
    server.request_stop();
    server.wait().unwrap();
}

#[test]
fn idle_and_slow_clients_do_not_block_others_and_truncation_crosses_the_wire() {
    let (_d, cfg) = setup("QMI");
    let server = Server::start(&cfg).unwrap();
    // An idle client (connected, silent) and a slow one (half a frame, then nothing).
    let idle = UnixStream::connect(cfg.dir.join("qm.sock")).unwrap();
    let mut slow = UnixStream::connect(cfg.dir.join("qm.sock")).unwrap();
    slow.write_all(&[200, 0, 0, 0, 1]).unwrap();
    let mut c = Client::connect_local(&cfg.dir, "busy").unwrap();
    let start = Instant::now();
    for i in 0..100u32 {
        c.put1("Q", &mut Md::default(), &i.to_le_bytes(), false)
            .unwrap();
    }
    let (h, _) = c.open("Q", OpenOptions::input()).unwrap();
    let e = c
        .get(
            h,
            &GetOptions {
                buffer: Some(2),
                ..Default::default()
            },
        )
        .unwrap_err();
    assert_eq!(e.reason, 2080);
    let g = c
        .get(
            h,
            &GetOptions {
                buffer: Some(2),
                accept_truncated: true,
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(
        (g.payload.len(), g.data_len, g.warning.map(|w| w.code())),
        (2, 4, Some(2079))
    );
    assert!(start.elapsed() < Duration::from_secs(10));
    server.request_stop();
    drop(c);
    drop(slow);
    drop(idle);
    server.wait().unwrap();
}

#[test]
fn svrconn_channels_set_mcauser_sslciph_and_sslpeer() {
    use sealmq_protect::identity::IdentitySpec;
    use sealmq_protect::{Dn, KeyKind, Keystore};
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
        2540
    );
    assert_eq!(
        Client::connect_tcp_channel(&addr, "TLS.ONLY", "app")
            .err()
            .unwrap()
            .reason,
        2393
    );
    drop(c);
    admin.stop(true).unwrap();
    drop(admin);
    server.wait().unwrap();

    // SSLPEER on a TLS listener.
    let qm_ks = cfg.dir.join("keystore");
    Keystore::init(
        &qm_ks,
        &IdentitySpec::new(Dn::parse("CN=QMH").unwrap(), KeyKind::P256, 30),
        None,
    )
    .unwrap();
    let alice = d.home().join("alice");
    Keystore::init(
        &alice,
        &IdentitySpec::new(Dn::parse("CN=alice,O=Example").unwrap(), KeyKind::P256, 30),
        None,
    )
    .unwrap();
    Keystore::load(&alice)
        .unwrap()
        .trust(&std::fs::read(qm_ks.join("identity.pem")).unwrap())
        .unwrap();
    Keystore::load(&qm_ks)
        .unwrap()
        .trust(&std::fs::read(alice.join("identity.pem")).unwrap())
        .unwrap();
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
        2393
    );
    drop(c);
    admin.stop(true).unwrap();
    drop(admin);
    server.wait().unwrap();
}

#[test]
fn qm_side_interception_protects_for_clients_without_a_keystore() {
    use sealmq_protect::identity::IdentitySpec;
    use sealmq_protect::{Dn, KeyKind, Keystore, Original, Protector};
    let (d, mut cfg) = setup("QMI");
    let qm_ks = cfg.dir.join("keystore");
    Keystore::init(
        &qm_ks,
        &IdentitySpec::new(Dn::parse("CN=QMI").unwrap(), KeyKind::P256, 30),
        None,
    )
    .unwrap();
    // Interception needs TLS with a client certificate: the application's keystore holds only
    // its TLS identity (it does no protection of its own).
    let tls_ks = d.home().join("app-tls");
    Keystore::init(
        &tls_ks,
        &IdentitySpec::new(Dn::parse("CN=app").unwrap(), KeyKind::P256, 30),
        None,
    )
    .unwrap();
    Keystore::load(&tls_ks)
        .unwrap()
        .trust(&std::fs::read(qm_ks.join("identity.pem")).unwrap())
        .unwrap();
    Keystore::load(&qm_ks)
        .unwrap()
        .trust(&std::fs::read(tls_ks.join("identity.pem")).unwrap())
        .unwrap();
    cfg.tls = true;
    cfg.listen = Some("127.0.0.1:0".parse().unwrap());
    let server = Server::start(&cfg).unwrap();
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
    // A plain message under ENFORCE: 2063 for the application, the message on the error queue.
    raw.put(rh, &mut Md::default(), b"plain", false).unwrap();
    assert_eq!(
        app.get(ah, &GetOptions::default()).unwrap_err().reason,
        2063
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
    drop(raw);
    admin.stop(true).unwrap();
    drop(admin);
    server.wait().unwrap();
}

#[test]
fn a_protected_message_too_big_for_the_buffer_stays_on_the_queue() {
    use sealmq_protect::identity::IdentitySpec;
    use sealmq_protect::{Dn, KeyKind, Keystore};
    let (d, cfg) = setup("QMB");
    let app_ks = d.home().join("app-ks");
    Keystore::init(
        &app_ks,
        &IdentitySpec::new(Dn::parse("CN=app").unwrap(), KeyKind::P256, 30),
        None,
    )
    .unwrap();
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
    assert_eq!(app.get(h, &small).unwrap_err().reason, 2080);
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

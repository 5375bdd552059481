//! The server as applications meet it: many connections, a controlled stop (2161, units of work
//! backed out), a broken connection mid-unit-of-work, and malformed frames.

use proptest::prelude::*;
use sealmq_client::Client;
use sealmq_engine::mqi::{GetOptions, OpenOptions};
use sealmq_engine::{Md, QmConfig};
use sealmq_server::{Server, ServerConfig};
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

mod common;
use common::{persistent, poll, setup};

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
    assert_eq!(
        c.heartbeat().unwrap_err().reason,
        sealmq_types::ReasonCode::QMgrQuiescing
    );
    drop(admin);
    server.wait().unwrap();
    assert_eq!(
        c.heartbeat().unwrap_err().reason,
        sealmq_types::ReasonCode::ConnectionBroken
    );
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
    assert_eq!(r, Err(sealmq_types::ReasonCode::QMgrQuiescing));
    assert!(
        waited < Duration::from_secs(30),
        "the waiting get was released at once ({waited:?})"
    );
    assert_eq!(
        a.put1("Q", &mut persistent(), b"late", false)
            .unwrap_err()
            .reason,
        sealmq_types::ReasonCode::QMgrQuiescing
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
fn the_async_client_publishes_and_consumes_a_subscription() {
    use sealmq_client::nonblocking::AsyncClient;
    use sealmq_client::pubsub::Subscription;
    use sealmq_client::{ConsumeMode, ConsumeOptions};
    let (_d, cfg) = setup("QMP");
    let server = Server::start(&cfg).unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let dir = cfg.dir.clone();
    let got = rt.block_on(async move {
        let a = AsyncClient::connect_local(dir, "pubsub".into())
            .await
            .unwrap();
        let (h, _) = a
            .subscribe(Subscription {
                topic: "prices/#".into(),
                ..Default::default()
            })
            .await
            .unwrap();
        for i in 0..50u32 {
            a.publish(
                "prices/fruit",
                Md::default(),
                i.to_le_bytes().to_vec(),
                false,
                false,
            )
            .await
            .unwrap();
        }
        let (t, _) = a.open_topic("", "prices/veg").await.unwrap();
        a.put(t, Md::default(), 50u32.to_le_bytes().to_vec(), false)
            .await
            .unwrap();
        let opts = ConsumeOptions {
            mode: ConsumeMode::Syncpoint,
            window: 16,
            batch: 4,
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
    assert_eq!(got, (0..=50).collect::<Vec<u32>>());
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
    assert_eq!(e.reason, sealmq_types::ReasonCode::TruncatedMsgFailed);
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

//! Automatic reconnection in the client library (`sealmq_client::Reconnecting`, issue 26):
//! the queue manager stops and starts again under an application, which goes on with the
//! handles it holds and is told exactly what it must do again.

use sealmq_client::reconnect::Reconnecting;
use sealmq_client::{Client, ConsumeMode, ConsumeOptions};
use sealmq_engine::Md;
use sealmq_engine::mqi::{GetOptions, OpenOptions};
use sealmq_server::Server;
use std::time::Duration;

mod common;
use common::{persistent, setup};

/// An immediate stop (a controlled one would wait for the application to disconnect), then
/// a start.
fn restart(server: Server, cfg: &sealmq_server::ServerConfig) -> Server {
    stop(server, cfg);
    Server::start(cfg).expect("the queue manager starts again")
}

/// A reconnecting application of the queue manager of `cfg`, through its local socket.
fn reconnecting(cfg: &sealmq_server::ServerConfig) -> Reconnecting {
    let dir = cfg.dir.clone();
    Reconnecting::connect(Box::new(move || Client::connect_local(&dir, "recon"))).expect("connect")
}

fn stop(server: Server, cfg: &sealmq_server::ServerConfig) {
    let mut admin = Client::connect_local(&cfg.dir, "admin").expect("connect to stop");
    let _ = admin.stop(true);
    let _ = server.wait();
}

#[test]
fn handles_survive_a_restart_and_a_cut_off_unit_of_work_is_reported() {
    let (_d, cfg) = setup("QMR");
    let mut server = Server::start(&cfg).unwrap();
    let mut c = reconnecting(&cfg);
    let (out, _) = c.open("Q", OpenOptions::output()).unwrap();
    let (inp, _) = c.open("Q", OpenOptions::input()).unwrap();
    // A unit of work under way when the queue manager goes: 2003, and it is not there.
    c.put(out, &mut persistent(), b"lost", true).unwrap();
    server = restart(server, &cfg);
    let e = c
        .put(out, &mut persistent(), b"lost too", true)
        .unwrap_err();
    assert_eq!(e.reason, sealmq_types::ReasonCode::BackedOut, "{e}");
    assert_eq!(c.reconnects(), 1);
    // The same handles go on.
    c.put(out, &mut persistent(), b"kept", true).unwrap();
    c.commit().unwrap();
    let gmo = GetOptions {
        wait: Some(Duration::from_secs(5)),
        ..Default::default()
    };
    assert_eq!(c.get(inp, &gmo).unwrap().payload, b"kept");
    // Outside syncpoint a put cut off is in doubt: 2549; an open is made again silently.
    server = restart(server, &cfg);
    let e = c.put(out, &mut Md::default(), b"?", false).unwrap_err();
    assert_eq!(e.reason, sealmq_types::ReasonCode::CallInterrupted, "{e}");
    server = restart(server, &cfg);
    let (browse, _) = c.open("Q", OpenOptions::browse()).unwrap();
    c.close(browse).unwrap();
    assert_eq!(c.reconnects(), 3);
    // A closed handle is refused as MQ does, not reopened.
    let e = c.get(browse, &gmo).unwrap_err();
    assert_eq!(e.reason, sealmq_types::ReasonCode::HobjError, "{e}");
    // Nothing to reconnect to: 2548 once the timeout passes.
    stop(server, &cfg);
    c.timeout = Duration::from_millis(300);
    let e = c.get(inp, &gmo).unwrap_err();
    assert_eq!(e.reason, sealmq_types::ReasonCode::ReconnectFailed, "{e}");
}

#[test]
fn a_consumer_under_syncpoint_follows_and_what_it_had_not_committed_comes_again() {
    let (_d, cfg) = setup("QMF");
    let mut server = Server::start(&cfg).unwrap();
    let mut c = reconnecting(&cfg);
    let (out, _) = c.open("Q", OpenOptions::output()).unwrap();
    for i in 0..5 {
        c.put(out, &mut persistent(), format!("m{i}").as_bytes(), false)
            .unwrap();
    }
    let (inp, _) = c.open("Q", OpenOptions::input()).unwrap();
    let opts = ConsumeOptions {
        mode: ConsumeMode::Syncpoint,
        batch: 100,
        batch_ms: 60_000,
        ..Default::default()
    };
    let mut f = c.consume_following(inp, opts).unwrap();
    let wait = Duration::from_secs(5);
    let first = f.next(&mut c, wait).unwrap().expect("a message");
    assert_eq!(first.payload, b"m0");
    assert_eq!(f.uncommitted(), 1);
    server = restart(server, &cfg);
    // The message handed out was not committed: 2003, then it comes again.
    let mut e = None;
    for _ in 0..10 {
        if let Err(x) = f.next(&mut c, wait) {
            e = Some(x);
            break;
        }
    }
    let e = e.expect("the loss is reported");
    assert_eq!(e.reason, sealmq_types::ReasonCode::BackedOut, "{e}");
    let mut got = Vec::new();
    while got.len() < 5 {
        let m = f.next(&mut c, wait).unwrap().expect("every message again");
        got.push(String::from_utf8_lossy(&m.payload).to_string());
    }
    assert_eq!(got, ["m0", "m1", "m2", "m3", "m4"]);
    f.stop(&mut c).unwrap();
    assert_eq!(server.queue_manager().depth("Q").unwrap(), 0);
    stop(server, &cfg);
}

#[test]
fn a_topic_handle_and_subscriptions_follow_a_restart() {
    use sealmq_client::pubsub::Subscription;
    let (_d, cfg) = setup("QMS");
    let mut server = Server::start(&cfg).unwrap();
    let mut admin = Client::connect_local(&cfg.dir, "admin").unwrap();
    let (out, failed) = admin
        .mqsc("DEFINE TOPIC(NEWS) TOPICSTR('news')\n", false)
        .unwrap();
    assert_eq!(failed, 0, "{out}");
    drop(admin);
    let mut c = reconnecting(&cfg);
    let (publisher, topic) = c.open_topic("NEWS", "today").unwrap();
    assert_eq!(topic, "news/today");
    let (durable, _) = c
        .subscribe(&Subscription {
            name: "KEEP".into(),
            topic: "news/#".into(),
            durable: true,
            ..Default::default()
        })
        .unwrap();
    let (fleeting, _) = c
        .subscribe(&Subscription {
            topic: "news/#".into(),
            ..Default::default()
        })
        .unwrap();
    c.put(publisher, &mut persistent(), b"before", false)
        .unwrap();
    server = restart(server, &cfg);
    // A non-durable subscription went with the connection (and what it held); the durable
    // one is resumed with what it had; both handles and the topic's go on.
    let e = c
        .put(publisher, &mut persistent(), b"?", false)
        .unwrap_err();
    assert_eq!(e.reason, sealmq_types::ReasonCode::CallInterrupted, "{e}");
    c.put(publisher, &mut persistent(), b"after", false)
        .unwrap();
    let gmo = GetOptions {
        wait: Some(Duration::from_secs(5)),
        ..Default::default()
    };
    let mut kept = Vec::new();
    while let Ok(g) = c.get(durable, &gmo) {
        kept.push(String::from_utf8_lossy(&g.payload).into_owned());
        if kept.last().is_some_and(|m| m == "after") {
            break;
        }
    }
    assert_eq!(kept.first().map(String::as_str), Some("before"), "{kept:?}");
    assert_eq!(kept.last().map(String::as_str), Some("after"), "{kept:?}");
    assert_eq!(c.get(fleeting, &gmo).unwrap().payload, b"after");
    c.unsubscribe("KEEP").unwrap();
    assert_eq!(
        c.get(durable, &gmo).unwrap_err().reason,
        sealmq_types::ReasonCode::HobjError
    );
    stop(server, &cfg);
}

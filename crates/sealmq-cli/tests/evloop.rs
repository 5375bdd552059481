//! Issue 27, the event-driven server, against a real queue manager process: idle connections
//! and gets that wait hold a socket each and no thread (the thread-per-connection server it
//! replaced is retired, issue 43).

mod common;

use common::{Home, fds_of, free_port, most_threads, status_field, wait_for};
use sealmq_client::Client;
use sealmq_engine::Md;
use sealmq_engine::mqi::{GetOptions, OpenOptions};
use std::time::Duration;

const APP: &str = "DEFINE QLOCAL(APP.Q)\n\
     DEFINE CHANNEL(APP.SVRCONN) CHLTYPE(SVRCONN) MCAUSER('app')\n\
     SET AUTHREC OBJTYPE(QMGR) PRINCIPAL('app') AUTHADD(CONNECT)\n\
     SET AUTHREC PROFILE('APP.*') OBJTYPE(QUEUE) PRINCIPAL('app') AUTHADD(PUT,GET)\n";

/// `qm` created and started on a loopback port with the application channel and queue:
/// its process id and address.
fn serving(h: &Home, qm: &str) -> (String, String) {
    h.ok(&["create", qm]);
    let port = free_port();
    h.start_tcp(qm, port);
    h.mqsc(qm, APP);
    (h.pid(qm), format!("127.0.0.1:{port}"))
}

/// Threads the blocking pools may add under load (evloop/mod.rs BLOCKING_THREADS), and the
/// loops themselves (up to 8) and a few.
const POOL: u64 = 64 + 16;

#[test]
fn idle_connections_and_waiting_gets_hold_a_socket_each_and_no_thread() {
    let h = Home::new();
    let (pid, addr) = serving(&h, "QE");
    // One connection first, so that what the first one starts (the blocking pool) is counted.
    let first = Client::connect_tcp_channel(&addr, "APP.SVRCONN", "first").unwrap();
    let (threads0, fds0) = (status_field(&pid, "Threads"), fds_of(&pid));
    let idle: Vec<Client> = (0..300)
        .map(|_| Client::connect_tcp_channel(&addr, "APP.SVRCONN", "idle").unwrap())
        .collect();
    let (threads1, fds1) = (status_field(&pid, "Threads"), fds_of(&pid));
    eprintln!(
        "300 idle connections: threads {threads0} -> {threads1}, descriptors {fds0} -> {fds1}"
    );
    assert!(fds1 <= fds0 + 300 + 8, "{fds0} -> {fds1} descriptors");
    assert!(threads1 <= threads0 + 8, "{threads0} -> {threads1} threads");

    // 100 applications wait in a get: no thread each in the queue manager.
    let getters: Vec<_> = (0..100)
        .map(|_| {
            let addr = addr.clone();
            std::thread::spawn(move || {
                let mut c = Client::connect_tcp_channel(&addr, "APP.SVRCONN", "getter").unwrap();
                let (hq, _) = c.open("APP.Q", OpenOptions::input()).unwrap();
                let gmo = GetOptions {
                    wait: Some(Duration::from_secs(60)),
                    ..Default::default()
                };
                c.get(hq, &gmo).map(|g| g.payload)
            })
        })
        .collect();
    wait_for(Duration::from_secs(30), "100 getters open", || {
        h.mqsc("QE", "DISPLAY QSTATUS(APP.Q) IPPROCS\n")
            .contains("IPPROCS(100)")
    });
    // Watched for a second while they wait (a thread each would show at once).
    let most = most_threads(&pid, Duration::from_secs(1));
    eprintln!("100 gets waiting: at most {most} threads (before the idle connections {threads0})");
    assert!(
        most <= threads0 + POOL,
        "{most} threads with 100 gets waiting"
    );
    for i in 0..100 {
        h.ok(&["put", "QE", "APP.Q", "--message", &format!("m{i}")]);
    }
    let mut got: Vec<String> = getters
        .into_iter()
        .map(|t| String::from_utf8(t.join().unwrap().unwrap()).unwrap())
        .collect();
    got.sort();
    got.dedup();
    assert_eq!(got.len(), 100, "every waiting get took one message");
    drop(idle);
    drop(first);
    h.ok(&["stop", "QE"]);
}

/// 200 applications opening and closing at once (requests served on the blocking pool): the
/// queue manager's threads stay within the pool's bound and the administrator is served.
#[test]
fn a_burst_of_blocking_requests_stays_within_the_pool() {
    let h = Home::new();
    let (pid, addr) = serving(&h, "QP");
    let threads0 = status_field(&pid, "Threads");
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let burst: Vec<_> = (0..200)
        .map(|_| {
            let addr = addr.clone();
            std::thread::spawn(move || {
                let mut c = Client::connect_tcp_channel(&addr, "APP.SVRCONN", "burst").unwrap();
                for _ in 0..20 {
                    let (hq, _) = c.open("APP.Q", OpenOptions::output()).unwrap();
                    c.close(hq).unwrap();
                }
            })
        })
        .collect();
    let watch = {
        let (pid, done) = (pid.clone(), done.clone());
        std::thread::spawn(move || {
            let mut most = 0;
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                most = most.max(status_field(&pid, "Threads"));
                std::thread::sleep(Duration::from_millis(5));
            }
            most
        })
    };
    let t = std::time::Instant::now();
    h.mqsc("QP", "DISPLAY QMGR MAXCHL\n");
    let admin = t.elapsed();
    for b in burst {
        b.join().unwrap();
    }
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    let most = watch.join().unwrap();
    eprintln!(
        "200 connections x 20 opens: at most {most} threads (from {threads0}); administrator {admin:?}"
    );
    assert!(most <= threads0 + POOL, "{most} threads");
    assert!(admin < Duration::from_secs(10), "{admin:?}");
    h.ok(&["stop", "QP"]);
}

/// 100 wrong passwords at once from one address keep admissions busy on the blocking pools
/// (the password gate and its failure delays): the administrator's MQSC on the local socket
/// (admitted on the loop, served on a thread of its own) answers at once meanwhile.
#[test]
fn the_administrator_is_served_while_logins_fill_the_blocking_pool() {
    let h = Home::new();
    h.ok(&["create", "QL"]);
    h.passwd("QL", "payuser", "right-horse-battery");
    let port = free_port();
    h.start_tcp("QL", port);
    h.mqsc(
        "QL",
        "DEFINE CHANNEL(APP.SVRCONN) CHLTYPE(SVRCONN)\n\
         DEFINE AUTHINFO(APP.IDPW) AUTHTYPE(IDPWOS) CHCKCLNT(REQUIRED) ADOPTCTX(YES) PWCLEAR(YES)\n\
         ALTER QMGR CONNAUTH(APP.IDPW)\nREFRESH SECURITY TYPE(CONNAUTH)\n",
    );
    let addr = format!("127.0.0.1:{port}");
    let threads0 = status_field(&h.pid("QL"), "Threads");
    let logins: Vec<_> = (0..100)
        .map(|i| {
            let addr = addr.clone();
            std::thread::spawn(move || {
                let creds = sealmq_client::Credentials {
                    user: "payuser".into(),
                    password: sealmq_wire::Secret(format!("wrong-{i}").into()),
                    allow_cleartext: true,
                };
                Client::connect_tcp_channel_as(&addr, "APP.SVRCONN", "login", Some(&creds))
                    .err()
                    .map(|e| e.reason)
            })
        })
        .collect();
    // While they wait at the gate (two checked at once, a second each at least).
    let pid = h.pid("QL");
    wait_for(Duration::from_secs(20), "the pools to fill", || {
        status_field(&pid, "Threads") >= threads0 + 8
    });
    let t = std::time::Instant::now();
    let out = h.mqsc("QL", "DISPLAY QMGR MAXCHL\n");
    let admin = t.elapsed();
    assert!(out.contains("MAXCHL("), "{out}");
    let refused: Vec<Option<sealmq_types::ReasonCode>> =
        logins.into_iter().map(|t| t.join().unwrap()).collect();
    eprintln!("100 wrong passwords: administrator answered in {admin:?}");
    assert!(
        refused.iter().all(|r| matches!(
            r,
            Some(
                sealmq_types::ReasonCode::NotAuthorized
                    | sealmq_types::ReasonCode::ChannelNotAvailable
            )
        )),
        "{refused:?}"
    );
    assert!(admin < Duration::from_secs(3), "{admin:?}");
    h.ok(&["stop", "QL"]);
}

/// Queue manager QI on TLS with blocking pools of 4 threads on each of 2 loops; W.Q protected
/// (Privacy, for the queue manager), LEGIT.Q plain; channel ICPT intercepts for `CN=icpt`
/// (user `app`). The address and the application's keystore.
fn intercepting(h: &Home) -> (String, std::path::PathBuf) {
    let port = free_port();
    h.ok(&["create", "QI"]);
    let app = h.dir.path().join("app-ks");
    let env = [
        ("SEALMQ_NET_THREADS", "2"),
        ("SEALMQ_BLOCKING_THREADS", "8"),
    ];
    let addr = h.start_tls_with("QI", port, &app, "CN=icpt", &env);
    h.mqsc(
        "QI",
        "DEFINE QLOCAL(W.Q)\nDEFINE QLOCAL(LEGIT.Q)\n\
         SET POLICY(W.Q) SIGNALG(SHA256) ENCALG(AES256) RECIP('CN=QI')\n\
         DEFINE CHANNEL(ICPT) CHLTYPE(SVRCONN) SSLCIPH(ANY) INTERCEPT(YES)\n\
         SET CHLAUTH('ICPT') TYPE(SSLPEERMAP) SSLPEER('CN=icpt') USERSRC(MAP) MCAUSER('app')\n\
         SET AUTHREC OBJTYPE(QMGR) PRINCIPAL('app') AUTHADD(CONNECT)\n\
         SET AUTHREC PROFILE('W.Q') OBJTYPE(QUEUE) PRINCIPAL('app') AUTHADD(GET,PUT)\n\
         SET AUTHREC PROFILE('LEGIT.Q') OBJTYPE(QUEUE) PRINCIPAL('app') AUTHADD(GET,PUT)\n",
    );
    (addr, app)
}

/// Asynchronous consumers on an intercepting channel wait for messages holding no thread (the
/// pushers' runtime lends a thread only to unprotect a message taken): 40 idle consumers on
/// an empty protected queue add no threads; then 40 messages put through the channel reach
/// them, each once and in clear.
#[test]
fn intercepting_consumers_wait_holding_no_thread() {
    use sealmq_client::{ConsumeMode, ConsumeOptions};
    let h = Home::new();
    let (addr, app) = intercepting(&h);
    let pid = h.pid("QI");
    let connect = |appl: &str| {
        Client::connect_tls_channel(&addr, &app, Some("QI"), "ICPT", appl)
            .unwrap_or_else(|e| panic!("{appl}: {e}"))
    };
    let before = status_field(&pid, "Threads");
    let total = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let consumers: Vec<_> = (0..40)
        .map(|i| {
            let mut c = connect(&format!("consumer-{i}"));
            let total = total.clone();
            std::thread::spawn(move || {
                let (hw, _) = c.open("W.Q", OpenOptions::input()).unwrap();
                let opts = ConsumeOptions {
                    mode: ConsumeMode::Syncpoint,
                    window: 10,
                    batch: 1,
                    batch_ms: 0,
                    ..Default::default()
                };
                let mut consumer = c.consume(hw, opts).unwrap();
                let mut got = Vec::new();
                let t = std::time::Instant::now();
                while total.load(std::sync::atomic::Ordering::SeqCst) < 40
                    && t.elapsed() < Duration::from_secs(60)
                {
                    if let Some(g) = consumer.next(Duration::from_millis(200)).unwrap() {
                        total.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        got.push(String::from_utf8(g.payload).unwrap());
                    }
                }
                got.extend(
                    consumer
                        .stop()
                        .unwrap()
                        .into_iter()
                        .map(|g| String::from_utf8(g.payload).unwrap()),
                );
                got
            })
        })
        .collect();
    wait_for(Duration::from_secs(30), "the consumers to start", || {
        let out = h.mqsc("QI", "DISPLAY QSTATUS(W.Q) IPPROCS\n");
        common::field(&out, "IPPROCS").parse::<u32>().unwrap_or(0) >= 40
    });
    let most = common::most_threads(&pid, Duration::from_secs(2));
    eprintln!("threads: {before} before 40 idle intercepting consumers, at most {most} with them");
    assert!(most <= before + 16, "{before} -> {most} threads");
    let mut putter = connect("putter");
    let (ho, _) = putter.open("W.Q", OpenOptions::output()).unwrap();
    for i in 0..40 {
        let body = format!("for consumer {i:02}");
        putter
            .put(ho, &mut Md::default(), body.as_bytes(), false)
            .unwrap();
    }
    let mut got: Vec<String> = consumers
        .into_iter()
        .flat_map(|c| c.join().unwrap())
        .collect();
    got.sort();
    let want: Vec<String> = (0..40).map(|i| format!("for consumer {i:02}")).collect();
    assert_eq!(got, want, "each message once, in clear");
    assert_eq!(h.depth("QI", "W.Q"), 0);
    drop(putter);
    h.ok(&["stop", "QI"]);
}

/// Under QM-side interception a get that waits holds no thread either (the pool only
/// unprotects the message once it is there): twelve intercepting applications wait on an
/// empty protected queue with blocking pools of 4 threads on each of 2 loops, and another
/// application still connects, puts and gets at once; then each waiting get receives its
/// message, unprotected by the queue manager.
#[test]
fn intercepted_gets_that_wait_hold_no_thread() {
    let h = Home::new();
    let (addr, app) = intercepting(&h);
    let connect = |appl: &str| {
        Client::connect_tls_channel(&addr, &app, Some("QI"), "ICPT", appl)
            .unwrap_or_else(|e| panic!("{appl}: {e}"))
    };
    let waiting: Vec<_> = (0..12)
        .map(|i| {
            let mut c = connect(&format!("waiter-{i}"));
            std::thread::spawn(move || {
                let (hw, _) = c.open("W.Q", OpenOptions::input()).unwrap();
                let gmo = GetOptions {
                    wait: Some(Duration::from_secs(60)),
                    ..Default::default()
                };
                c.get(hw, &gmo).map(|g| g.payload)
            })
        })
        .collect();
    wait_for(Duration::from_secs(30), "the gets to wait", || {
        // Eight at least: as many as the pools have threads (all twelve once they hold none).
        let out = h.mqsc("QI", "DISPLAY QSTATUS(W.Q) ALL\n");
        common::field(&out, "WAITING").parse::<u32>().unwrap_or(0) >= 8
    });
    let t = std::time::Instant::now();
    let (tx, rx) = std::sync::mpsc::channel();
    let mut legit = connect("legit");
    std::thread::spawn(move || {
        let r = (|| -> Result<Vec<u8>, sealmq_client::ClientError> {
            let (ho, _) = legit.open("LEGIT.Q", OpenOptions::output())?;
            legit.put(ho, &mut Md::default(), b"still served", false)?;
            let (hi, _) = legit.open("LEGIT.Q", OpenOptions::input())?;
            let g = legit.get(hi, &GetOptions::default())?;
            Ok(g.payload)
        })();
        let _ = tx.send((r, legit));
    });
    let (r, mut legit) = rx
        .recv_timeout(Duration::from_secs(15))
        .unwrap_or_else(|_| {
            panic!("an application beside 12 waiting intercepted gets: not served in 15 s")
        });
    assert_eq!(r.unwrap(), b"still served");
    eprintln!("served beside the waiting gets in {:?}", t.elapsed());
    let (ho, _) = legit.open("W.Q", OpenOptions::output()).unwrap();
    for i in 0..12 {
        let body = format!("for waiting get {i}");
        legit
            .put(ho, &mut Md::default(), body.as_bytes(), false)
            .unwrap();
    }
    let mut got: Vec<String> = waiting
        .into_iter()
        .map(|w| String::from_utf8(w.join().unwrap().unwrap()).unwrap())
        .collect();
    got.sort();
    let mut want: Vec<String> = (0..12).map(|i| format!("for waiting get {i}")).collect();
    want.sort();
    assert_eq!(got, want, "each waiting get received one message, in clear");
    assert_eq!(h.depth("QI", "W.Q"), 0);
    assert_eq!(h.depth("QI", "SYSTEM.PROTECTION.ERROR.QUEUE"), 0);
    drop(legit);
    h.ok(&["stop", "QI"]);
}

//! Issue 24's floods against a real queue manager process, with the figures its closing note
//! reports (printed with `--nocapture`): 48 parallel wrong passwords, and 2,300 AMQP
//! connections against a process allowed 2,048 descriptors. Memory, descriptors and threads
//! stay bounded and the administrator is served throughout.

mod common;

use common::{
    Home, connect_from, fds_of, free_port, raise_own_fd_limit, start_with_fd_limit, status_field,
    wait_for,
};
use std::time::{Duration, Instant};

/// The administrator's MQSC on the local socket, timed.
fn admin_served(h: &Home, qm: &str) -> Duration {
    let t = Instant::now();
    let out = h.mqsc(qm, "DISPLAY QMGR MAXCHL\n");
    assert!(out.contains("MAXCHL("), "{out}");
    t.elapsed()
}

#[test]
fn forty_eight_parallel_wrong_passwords_take_bounded_memory() {
    let h = Home::new();
    h.ok(&["create", "QW"]);
    h.passwd("QW", "payuser", "right-horse-battery");
    let port = free_port();
    h.start_tcp("QW", port);
    h.mqsc(
        "QW",
        "DEFINE QLOCAL(APP.Q)\nDEFINE CHANNEL(APP.SVRCONN) CHLTYPE(SVRCONN)\n\
         DEFINE AUTHINFO(APP.IDPW) AUTHTYPE(IDPWOS) CHCKCLNT(REQUIRED) ADOPTCTX(YES) PWCLEAR(YES)\n\
         ALTER QMGR CONNAUTH(APP.IDPW)\nREFRESH SECURITY TYPE(CONNAUTH)\n\
         SET AUTHREC OBJTYPE(QMGR) PRINCIPAL('payuser') AUTHADD(CONNECT)\n",
    );
    let pid = h.pid("QW");
    let before = status_field(&pid, "VmHWM");
    let addr = format!("127.0.0.1:{port}");
    // A put as payuser over the SVRCONN channel, with this password.
    let login = |pw: &str| {
        let mut c = h.cmd(&[
            "put",
            "QW",
            "APP.Q",
            "--message",
            "x",
            "--conn",
            &addr,
            "--channel",
            "APP.SVRCONN",
            "--user",
            "payuser",
            "--allow-cleartext-password",
        ]);
        c.env("SEALMQ_PASSWORD", pw);
        c
    };
    let started = Instant::now();
    let children: Vec<_> = (0..48)
        .map(|i| {
            login(format!("wrong-{i}").as_str())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let during = admin_served(&h, "QW");
    let mut refused = 0;
    for c in children {
        let o = c.wait_with_output().unwrap();
        assert!(!o.status.success());
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("2035") || err.contains("2537"), "{err}");
        refused += 1;
    }
    let took = started.elapsed();
    let after = status_field(&pid, "VmHWM");
    eprintln!(
        "48 parallel wrong passwords: {refused} refused in {took:?}; peak RSS {} MiB -> {} MiB; \
         threads {}; administrator answered in {during:?}",
        before / 1024,
        after / 1024,
        status_field(&pid, "Threads")
    );
    // Two Argon2 checks at once (~20 MiB each), not 48 (1.57 GB before the gate).
    assert!(after <= before + 150 * 1024, "{before} kB -> {after} kB");
    assert!(during < Duration::from_secs(10), "{during:?}");
    // From a blocked address the right password is refused at the accept, unchecked.
    h.mqsc(
        "QW",
        "SET CHLAUTH('*') TYPE(BLOCKADDR) ADDRLIST('127.0.0.1')\n",
    );
    let t = Instant::now();
    let o = login("right-horse-battery").output().unwrap();
    let blocked = t.elapsed();
    let err = String::from_utf8_lossy(&o.stderr);
    eprintln!(
        "right password from a blocked address: refused in {blocked:?} ({})",
        err.trim()
    );
    assert!(!o.status.success() && err.contains("2035"), "{err}");
    assert!(!err.contains("BLOCKADDR"), "{err}");
    h.ok(&["stop", "QW"]);
}

#[test]
fn an_amqp_flood_against_2048_descriptors_leaves_the_administrator_served() {
    raise_own_fd_limit();
    let h = Home::new();
    h.ok(&["create", "QA"]);
    start_with_fd_limit(&h, "QA", 2048, &[]);
    let port = free_port();
    h.mqsc(
        "QA",
        &format!(
            "DEFINE QLOCAL(APP.Q)\n\
             DEFINE CHANNEL(APP.AMQP) CHLTYPE(AMQP) PORT({port}) IPADDR(127.0.0.1) MCAUSER('app')\n\
             START CHANNEL(APP.AMQP)\n"
        ),
    );
    let pid = h.pid("QA");
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap();
    assert!(
        limits
            .lines()
            .any(|l| l.starts_with("Max open files") && l.contains(" 2048 ")),
        "{limits}"
    );
    // 2,300 anonymous connections that never speak, held open.
    let addr: std::net::SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let mut flood = Vec::new();
    let (mut peak_fds, mut peak_threads) = (0, 0);
    let mut slowest_admin = Duration::ZERO;
    for i in 0..2300 {
        if let Ok(s) = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(5)) {
            flood.push(s);
        }
        if i % 250 == 249 {
            peak_fds = peak_fds.max(fds_of(&pid));
            peak_threads = peak_threads.max(status_field(&pid, "Threads"));
            slowest_admin = slowest_admin.max(admin_served(&h, "QA"));
        }
    }
    let shown = h.mqsc("QA", "DISPLAY CHSTATUS(APP.AMQP) ALL\n");
    let conns: u64 = common::field(&shown, "CONNS").parse().unwrap_or(0);
    peak_fds = peak_fds.max(fds_of(&pid));
    eprintln!(
        "2,300 AMQP connections against 2,048 descriptors: {} connected, {conns} served \
         (MAXCHL 1000); queue manager peak {peak_fds} descriptors, {peak_threads} threads, \
         {} MiB peak RSS; slowest administrator answer {slowest_admin:?}",
        flood.len(),
        status_field(&pid, "VmHWM") / 1024
    );
    assert!(conns <= 1000, "{shown}");
    assert!(peak_fds < 2048, "{peak_fds} descriptors");
    assert!(slowest_admin < Duration::from_secs(10), "{slowest_admin:?}");
    drop(flood);
    // When the flood ends, the channel serves again.
    wait_for(
        Duration::from_secs(60),
        "the flood's connections to go",
        || {
            let shown = h.mqsc("QA", "DISPLAY CHSTATUS(APP.AMQP) ALL\n");
            common::field(&shown, "CONNS").parse::<u64>().unwrap_or(0) == 0
        },
    );
    h.ok(&["stop", "QA"]);
}

/// An application from 127.0.0.1 through APP.SVRCONN: connect, put and get one message.
fn put_and_get(addr: &str, n: u32) -> Result<(), String> {
    use sealmq_engine::mqi::{GetOptions, OpenOptions};
    let mut c = sealmq_client::Client::connect_tcp_channel(addr, "APP.SVRCONN", "legit")
        .map_err(|e| e.to_string())?;
    let (out, _) = c
        .open("APP.Q", OpenOptions::output())
        .map_err(|e| e.to_string())?;
    let (inp, _) = c
        .open("APP.Q", OpenOptions::input())
        .map_err(|e| e.to_string())?;
    let body = format!("legit {n}");
    c.put(out, &mut Default::default(), body.as_bytes(), false)
        .map_err(|e| e.to_string())?;
    let got = c
        .get(
            inp,
            &GetOptions {
                wait: Some(Duration::from_secs(5)),
                ..Default::default()
            },
        )
        .map_err(|e| e.to_string())?;
    if got.payload != body.as_bytes() {
        return Err(format!("got {:?}", String::from_utf8_lossy(&got.payload)));
    }
    Ok(())
}

const APP: &str = "DEFINE QLOCAL(APP.Q)\nDEFINE QLOCAL(APP.E)\n\
     DEFINE CHANNEL(APP.SVRCONN) CHLTYPE(SVRCONN) MCAUSER('app')\n\
     SET AUTHREC OBJTYPE(QMGR) PRINCIPAL('app') AUTHADD(CONNECT)\n\
     SET AUTHREC PROFILE('APP.*') OBJTYPE(QUEUE) PRINCIPAL('app') AUTHADD(PUT,GET)\n";

/// Issue 27: a queue manager that cannot raise its open-file limit (1,024, soft and hard)
/// under 2,000 sockets from one address — idle, half-open and trickling a frame byte by
/// byte. Its descriptors stay under the limit; the administrator's MQSC, a local put and get,
/// an application connected before the flood and new applications from another address are
/// served throughout; past the connections the descriptors allow (MAXCHL capped, with a log
/// line) new clients get 2537; after the flood everything is served again.
#[test]
fn two_thousand_sockets_against_1024_descriptors_lock_no_one_out() {
    use sealmq_engine::mqi::OpenOptions;
    raise_own_fd_limit();
    let h = Home::new();
    h.ok(&["create", "QD"]);
    let port = free_port();
    start_with_fd_limit(&h, "QD", 1024, &["--listen", &format!("127.0.0.1:{port}")]);
    h.mqsc("QD", APP);
    let pid = h.pid("QD");
    let log = std::fs::read_to_string(h.qm_dir("QD").join("errors").join("SEALMQ01.LOG"))
        .unwrap_or_default();
    let cap: u32 = log
        .split("is capped to ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no MAXCHL cap in the log: {log}"));
    // A descriptor a connection on the event loop, beside the reserve and the sockets that
    // wait for their first frame.
    assert!(cap < 1024 * 3 / 4, "{cap}");
    let addr = format!("127.0.0.1:{port}");
    let mut established =
        sealmq_client::Client::connect_tcp_channel(&addr, "APP.SVRCONN", "before").unwrap();
    let (eq, _) = established.open("APP.E", OpenOptions::output()).unwrap();
    let mut flood = Vec::new();
    let (mut peak_fds, mut peak_threads, mut slowest_admin) = (0, 0, Duration::ZERO);
    let mut served = 0;
    for i in 0..2000u32 {
        if let Some(mut s) = connect_from([127, 0, 0, 2], port) {
            use std::io::Write;
            match i % 3 {
                // Half-open: the flood stops writing and never reads.
                1 => {
                    let _ = s.shutdown(std::net::Shutdown::Write);
                }
                // Trickling: the first bytes of a frame, more later.
                2 => {
                    let _ = s.write_all(&[0x53]);
                }
                _ => {}
            }
            flood.push(s);
        }
        if i % 200 == 199 {
            for s in flood.iter_mut().skip(2).step_by(3) {
                use std::io::Write;
                let _ = s.write_all(&[0x4D]);
            }
            peak_fds = peak_fds.max(fds_of(&pid));
            peak_threads = peak_threads.max(status_field(&pid, "Threads"));
            slowest_admin = slowest_admin.max(admin_served(&h, "QD"));
            h.ok(&["put", "QD", "APP.Q", "--message", "local"]);
            let got = h.ok(&["get", "QD", "APP.Q"]);
            assert!(got.contains("local"), "{got}");
            established
                .put(eq, &mut Default::default(), b"established", false)
                .unwrap();
            put_and_get(&addr, i).unwrap_or_else(|e| panic!("a new client at {i}: {e}"));
            served += 1;
        }
    }
    peak_fds = peak_fds.max(fds_of(&pid));
    eprintln!(
        "2,000 sockets (idle, half-open, trickling) against 1,024 descriptors: {} connected; \
         queue manager peak {peak_fds} descriptors, {peak_threads} threads; slowest \
         administrator answer {slowest_admin:?}; {served} new clients served during the flood; \
         MAXCHL capped to {cap}",
        flood.len()
    );
    assert!(peak_fds < 1024, "{peak_fds} descriptors");
    // No thread per socket: the event loop's workers and its bounded blocking pool.
    assert!(peak_threads < 120, "{peak_threads} threads");
    assert!(slowest_admin < Duration::from_secs(10), "{slowest_admin:?}");
    assert_eq!(
        h.depth("QD", "APP.E"),
        10,
        "the established application's puts"
    );
    // Connections up to the cap are served; past it, 2537 (and the administrator still is).
    let mut held = Vec::new();
    let refusal = loop {
        match sealmq_client::Client::connect_tcp_channel(&addr, "APP.SVRCONN", "fill") {
            Ok(c) => held.push(c),
            Err(e) => break e,
        }
        assert!(
            held.len() <= cap as usize,
            "more than {cap} connections served"
        );
    };
    assert_eq!(
        refusal.reason,
        sealmq_types::ReasonCode::ChannelNotAvailable,
        "{refusal}"
    );
    assert!(
        held.len() + 1 >= cap as usize - 2,
        "{} held, cap {cap}",
        held.len()
    );
    admin_served(&h, "QD");
    assert!(fds_of(&pid) < 1024);
    drop(held);
    drop(flood);
    drop(established);
    // After the flood, new clients are served again.
    wait_for(Duration::from_secs(30), "a new client served", || {
        put_and_get(&addr, 9999).is_ok()
    });
    let log = std::fs::read_to_string(h.qm_dir("QD").join("errors").join("SEALMQ01.LOG"))
        .unwrap_or_default();
    assert!(log.contains("closed to make room"), "{log}");
    assert!(log.contains("refused (2537)"), "{log}");
    h.ok(&["stop", "QD"]);
}

/// Issue 27: one address keeps 1,100 sockets open that never send a Hello, reconnecting
/// those the queue manager closes, for `SEALMQ_FLOOD_SECS` (60 by default); an application
/// from another address completes at least 29 of 30 put+get pairs meanwhile.
#[test]
fn a_sustained_flood_from_one_address_leaves_another_address_served() {
    raise_own_fd_limit();
    let secs: u64 = std::env::var("SEALMQ_FLOOD_SECS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(60);
    let h = Home::new();
    h.ok(&["create", "QS"]);
    let port = free_port();
    h.start_tcp("QS", port);
    h.mqsc("QS", APP);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flood = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut socks: Vec<Option<std::net::TcpStream>> = (0..1100).map(|_| None).collect();
            let mut connects = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                for slot in socks.iter_mut() {
                    let open = slot.as_ref().is_some_and(|s| {
                        let _ = s.set_nonblocking(true);
                        let mut b = [0u8; 1];
                        matches!(s.peek(&mut b), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock)
                    });
                    if !open {
                        *slot = connect_from([127, 0, 0, 2], port);
                        connects += 1;
                    }
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            connects
        })
    };
    let addr = format!("127.0.0.1:{port}");
    let started = Instant::now();
    let mut ok = 0;
    let mut failures = Vec::new();
    for n in 0..30u32 {
        let due = started + Duration::from_secs(secs) * n / 30;
        if let Some(wait) = due.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        match put_and_get(&addr, n) {
            Ok(()) => ok += 1,
            Err(e) => failures.push(e),
        }
    }
    while started.elapsed() < Duration::from_secs(secs) {
        std::thread::sleep(Duration::from_millis(200));
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let connects = flood.join().unwrap();
    eprintln!(
        "{secs} s of 1,100 silent sockets from 127.0.0.2 ({connects} connects): {ok} of 30 \
         put+get pairs from 127.0.0.1 completed; failures: {failures:?}"
    );
    assert!(ok >= 29, "{ok} of 30: {failures:?}");
    h.ok(&["stop", "QS"]);
}

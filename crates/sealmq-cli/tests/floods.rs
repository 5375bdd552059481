//! Issue 24's floods against a real queue manager process, with the figures its closing note
//! reports (printed with `--nocapture`): 48 parallel wrong passwords, and 2,300 AMQP
//! connections against a process allowed 2,048 descriptors. Memory, descriptors and threads
//! stay bounded and the administrator is served throughout.

#![allow(unsafe_code)]

mod common;

use common::{Home, free_port, wait_for};
use std::time::{Duration, Instant};

/// A field of /proc/PID/status, in its unit (kB for memory).
fn status_field(pid: &str, key: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| {
            v.trim_start_matches(':')
                .split_whitespace()
                .next()?
                .parse()
                .ok()
        })
        .unwrap_or(0)
}

fn fds_of(pid: &str) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count())
}

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

/// Starts `qm` with an open-file limit of `n`, soft and hard (it cannot raise it).
fn start_with_fd_limit(h: &Home, qm: &str, n: u64) {
    use std::os::unix::process::CommandExt;
    let mut c = h.cmd(&["start", qm, "--background"]);
    // SAFETY: setrlimit is async-signal-safe; it runs in the child between fork and exec.
    unsafe {
        c.pre_exec(move || {
            let lim = libc::rlimit {
                rlim_cur: n,
                rlim_max: n,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let o = c.output().unwrap();
    assert!(o.status.success(), "{o:?}");
}

/// Lets this test process hold a few thousand sockets.
fn raise_own_fd_limit() {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit write and read one valid rlimit.
    unsafe {
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim);
        lim.rlim_cur = lim.rlim_max;
        libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
    }
}

#[test]
fn an_amqp_flood_against_2048_descriptors_leaves_the_administrator_served() {
    raise_own_fd_limit();
    let h = Home::new();
    h.ok(&["create", "QA"]);
    start_with_fd_limit(&h, "QA", 2048);
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

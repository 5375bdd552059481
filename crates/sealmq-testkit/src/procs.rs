//! What a test reads of a process and sets for it: threads, descriptors and memory from
//! `/proc`, and open-file limits (a queue manager started under one, this process raised to
//! its hard limit).

#![allow(unsafe_code)] // setrlimit and getrlimit

use crate::cli::Home;
use crate::wait_every;
use std::time::Duration;

/// The most threads process `pid` had, looked at without pause for `d` (a thread per waiting
/// client would show at once).
pub fn most_threads(pid: &str, d: Duration) -> u64 {
    let t = std::time::Instant::now();
    let mut most = 0;
    while t.elapsed() < d {
        most = most.max(status_field(pid, "Threads"));
        std::thread::yield_now();
    }
    most
}

/// What `count` gives once it has stayed put for a second (looked at every 100 ms, a minute at
/// most): how far a flow went before it stalled.
pub fn once_steady(what: &str, mut count: impl FnMut() -> u64) -> u64 {
    let (mut last, mut since) = (u64::MAX, std::time::Instant::now());
    wait_every(
        Duration::from_secs(60),
        Duration::from_millis(100),
        what,
        || {
            let now = count();
            if now != last {
                (last, since) = (now, std::time::Instant::now());
            }
            since.elapsed() >= Duration::from_secs(1)
        },
    );
    last
}

/// A field of /proc/PID/status, in its unit (kB for memory; 0 when unknown).
pub fn status_field(pid: &str, key: &str) -> u64 {
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

/// The descriptors process `pid` holds.
pub fn fds_of(pid: &str) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count())
}

/// Starts `qm` with an open-file limit of `n`, soft and hard (it cannot raise it).
pub fn start_with_fd_limit(h: &Home, qm: &str, n: u64, extra: &[&str]) {
    let mut args = vec!["start", qm, "--background"];
    args.extend_from_slice(extra);
    let mut c = h.cmd(&args);
    crate::limits::limit_fds(&mut c, n);
    let o = c.output().unwrap();
    assert!(o.status.success(), "{o:?}");
}

/// Lets this test process hold a few thousand sockets.
pub fn raise_own_fd_limit() {
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

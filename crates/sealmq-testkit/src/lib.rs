//! # sealmq-testkit: what the tests of every crate share
//!
//! Tests poll for what they wait on, with a deadline, never sleeping for correctness
//! ([`wait_for`]); servers listen on loopback ports free when asked ([`free_port`]); a queue
//! manager is made in a temporary directory from the MQSC an administrator would write
//! ([`queue_manager`], [`running`]). A dev-dependency only: no product code links it.

pub mod cli;
pub mod limits;
pub mod pki;
pub mod procs;

use sealmq_engine::{QmConfig, QueueManager};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A TCP connection to 127.0.0.1:`port` that leaves from `src` (another loopback address), so
/// that a flood and a legitimate client come from different addresses. `None` when the
/// connect fails or takes more than 2 s.
pub fn connect_from(src: [u8; 4], port: u16) -> Option<std::net::TcpStream> {
    use socket2::{Domain, Socket, Type};
    let s = Socket::new(Domain::IPV4, Type::STREAM, None).ok()?;
    let from = std::net::SocketAddr::from((src, 0));
    s.bind(&from.into()).ok()?;
    let to = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    s.connect_timeout(&to.into(), Duration::from_secs(2)).ok()?;
    let _ = s.set_write_timeout(Some(Duration::from_secs(2)));
    Some(s.into())
}

/// The repository's root (the folder holding `crates/`), for tests that read its files.
pub fn repo_root() -> std::path::PathBuf {
    let here = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    here.ancestors().nth(2).unwrap_or(here).to_path_buf()
}

/// Polls `f` every 20 ms until it holds, failing the test after `limit` with `what`.
pub fn wait_for(limit: Duration, what: &str, f: impl FnMut() -> bool) {
    wait_every(limit, Duration::from_millis(20), what, f)
}

/// Polls `f` every `every` (for a condition that costs a command each time) until it holds,
/// failing the test after `limit` with `what`.
pub fn wait_every(limit: Duration, every: Duration, what: &str, f: impl FnMut() -> bool) {
    assert!(poll(limit, every, f), "timed out waiting for {what}");
}

/// Polls `f` every `every` until it holds or `limit` passes: whether it held (for a test that
/// says more than [`wait_for`] when it did not, or stops something first).
pub fn poll(limit: Duration, every: Duration, mut f: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if f() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(every);
    }
}

/// Polls `f` every 20 ms until it gives a value, failing the test after `limit` with `what`.
pub fn wait_some<T>(limit: Duration, what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let mut got = None;
    wait_for(limit, what, || {
        got = f();
        got.is_some()
    });
    match got {
        Some(t) => t,
        None => panic!("timed out waiting for {what}"),
    }
}

/// Checks `f` every `every` for `d`, failing the test with `what` the first time it does not
/// hold: for what must *not* happen (nothing more pushed, nobody elected).
pub fn holds_for(d: Duration, every: Duration, what: &str, mut f: impl FnMut() -> bool) {
    let end = Instant::now() + d;
    loop {
        assert!(f(), "{what} stopped holding");
        if Instant::now() >= end {
            return;
        }
        std::thread::sleep(every);
    }
}

/// A loopback port free right now, below the ephemeral range (`sealmq_types::ports`).
pub fn free_port() -> u16 {
    sealmq_types::ports::free_port().expect("a free loopback port")
}

/// A queue manager's directory in a temporary directory that goes with it.
pub struct TempQm {
    pub name: String,
    pub dir: PathBuf,
    _home: tempfile::TempDir,
}

impl TempQm {
    /// The temporary directory that holds the queue manager's, for whatever else a test makes
    /// (keystores, files); it goes with the queue manager.
    pub fn home(&self) -> &std::path::Path {
        self._home.path()
    }
}

/// A new queue manager `name`, made and configured by `mqsc` (every command must succeed),
/// then ended: ready for a server to start it.
pub fn queue_manager(name: &str, mqsc: &str) -> TempQm {
    let (t, qm) = running(name, mqsc);
    qm.shutdown().expect("the queue manager ends");
    t
}

/// A new queue manager `name`, made and configured by `mqsc` (every command must succeed),
/// running in this process.
pub fn running(name: &str, mqsc: &str) -> (TempQm, Arc<QueueManager>) {
    let home = tempfile::tempdir().expect("a temporary directory");
    let dir = home.path().join(name);
    let qm = sealmq_engine::create(QmConfig::new(name, &dir)).expect("the queue manager is made");
    for r in sealmq_mqsc::run(&qm, mqsc) {
        assert!(r.ok, "{} (line {}): {}", r.command, r.line, r.message);
    }
    let t = TempQm {
        name: name.to_string(),
        dir,
        _home: home,
    };
    (t, qm)
}

//! # sealmq-testkit: what the tests of every crate share
//!
//! Tests poll for what they wait on, with a deadline, never sleeping for correctness
//! ([`wait_for`]); servers listen on loopback ports free when asked ([`free_port`]); a queue
//! manager is made in a temporary directory from the MQSC an administrator would write
//! ([`queue_manager`], [`running`]). A dev-dependency only: no product code links it.

use sealmq_engine::{QmConfig, QueueManager};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Polls `f` every 20 ms until it holds, failing the test after `limit` with `what`.
pub fn wait_for(limit: Duration, what: &str, f: impl FnMut() -> bool) {
    wait_every(limit, Duration::from_millis(20), what, f)
}

/// Polls `f` every `every` (for a condition that costs a command each time) until it holds,
/// failing the test after `limit` with `what`.
pub fn wait_every(limit: Duration, every: Duration, what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(every);
    }
}

/// A loopback port free right now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
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

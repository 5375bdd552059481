//! The queue manager's error log: every `tracing` event of the process (channel starts,
//! stops and retries, security refusals with the principal and the rule, protection failures,
//! storage errors), timestamped in UTC, written to `<QM dir>/errors/SEALMQ01.LOG` and to
//! standard error. When the file passes its size limit it is rotated as MQ rotates
//! AMQERR01.LOG: 02 becomes 03, 01 becomes 02, and a new 01 begins; three files at most.
//! The files are private to the queue manager's user, like everything in its directory.

use sealmq_types::sync::lock;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::fmt::writer::MakeWriterExt;

/// Default size at which SEALMQ01.LOG is rotated (`SEALMQ_ERRLOG_BYTES` overrides it).
pub const DEFAULT_MAX_BYTES: u64 = 2 * 1024 * 1024;
/// Files kept: SEALMQ01.LOG (current) to SEALMQ03.LOG (oldest).
pub const FILES: usize = 3;

pub fn file_name(n: usize) -> String {
    format!("SEALMQ{n:02}.LOG")
}

struct State {
    dir: PathBuf,
    file: Option<File>,
    written: u64,
    max: u64,
}

impl State {
    fn open(&mut self) {
        let path = self.dir.join(file_name(1));
        self.file = sealmq_engine::host::create_private_dir(&self.dir)
            .ok()
            .and_then(|_| {
                use std::os::unix::fs::OpenOptionsExt;
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .mode(0o600)
                    .open(&path)
                    .ok()
            });
        self.written = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    }

    fn rotate(&mut self) {
        self.file = None;
        for n in (1..FILES).rev() {
            let _ = std::fs::rename(self.dir.join(file_name(n)), self.dir.join(file_name(n + 1)));
        }
        self.open();
    }

    fn write(&mut self, buf: &[u8]) {
        if self.written > 0 && self.written + buf.len() as u64 > self.max {
            self.rotate();
        }
        if let Some(f) = &mut self.file
            && f.write_all(buf).is_ok()
        {
            self.written += buf.len() as u64;
        }
    }
}

/// A size-rotated log file, shared by every thread of the process.
#[derive(Clone)]
pub struct Rotating(Arc<Mutex<State>>);

impl Rotating {
    pub fn new(dir: &Path, max: u64) -> Rotating {
        let mut s = State {
            dir: dir.to_path_buf(),
            file: None,
            written: 0,
            max: max.max(1024),
        };
        s.open();
        Rotating(Arc::new(Mutex::new(s)))
    }
}

/// One event's writer: buffered, handed to the file whole when dropped.
pub struct Line(Rotating, Vec<u8>);

impl Write for Line {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.1.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for Line {
    fn drop(&mut self) {
        if !self.1.is_empty() {
            let mut s = lock(&self.0.0);
            s.write(&self.1);
        }
    }
}

impl<'a> MakeWriter<'a> for Rotating {
    type Writer = Line;
    fn make_writer(&'a self) -> Line {
        Line(self.clone(), Vec::with_capacity(256))
    }
}

/// Sends this process's `tracing` events to the queue manager's error log (and stderr).
/// The first queue manager of a process wins; later calls (tests running several servers
/// in one process) leave it as it is. `SEALMQ_LOG` filters (default `info`).
pub fn init(qm_dir: &Path) {
    let max = std::env::var("SEALMQ_ERRLOG_BYTES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(DEFAULT_MAX_BYTES);
    let file = Rotating::new(&qm_dir.join("errors"), max);
    let filter = tracing_subscriber::EnvFilter::try_from_env("SEALMQ_LOG")
        // Raft's own progress (each vote, each election) is for debugging, not the error log.
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,openraft=warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(false)
        .with_target(false)
        .with_writer(file.and(std::io::stderr))
        .try_init();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rotates_by_size_and_keeps_three_files() {
        let d = tempfile::tempdir().unwrap();
        let r = Rotating::new(d.path(), 1024);
        for i in 0..100 {
            let mut w = r.make_writer();
            writeln!(w, "line {i:04} {}", "x".repeat(80)).unwrap();
        }
        let cur = std::fs::read_to_string(d.path().join(file_name(1))).unwrap();
        assert!(cur.len() <= 1024, "{}", cur.len());
        assert!(cur.contains("line 0099"));
        assert!(d.path().join(file_name(3)).exists());
        assert!(!d.path().join(file_name(4)).exists());
        let old = std::fs::read_to_string(d.path().join(file_name(2))).unwrap();
        assert!(!old.contains("line 0099") && old.contains("line 00"));
    }
}

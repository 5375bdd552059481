//! What the black-box tests share: a SEALMQ_HOME of their own, the `sealmq` binary run as a
//! user runs it, queue managers on ephemeral loopback ports, and `kill -9`.

#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

pub struct Home {
    pub dir: tempfile::TempDir,
}

impl Default for Home {
    fn default() -> Self {
        Self::new()
    }
}

impl Home {
    pub fn new() -> Home {
        Home {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_sealmq"));
        c.args(args)
            .env("SEALMQ_HOME", self.dir.path())
            .env_remove("SEALMQ_KEYSTORE");
        c
    }

    pub fn run(&self, args: &[&str], stdin: Option<&str>) -> Output {
        use std::io::Write;
        let mut c = self.cmd(args);
        c.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = c.spawn().unwrap();
        if let Some(s) = stdin {
            let _ = child.stdin.take().unwrap().write_all(s.as_bytes());
        }
        drop(child.stdin.take());
        child.wait_with_output().unwrap()
    }

    pub fn ok(&self, args: &[&str]) -> String {
        self.ok_in(args, None)
    }

    pub fn ok_in(&self, args: &[&str], stdin: Option<&str>) -> String {
        let o = self.run(args, stdin);
        assert!(
            o.status.success(),
            "sealmq {} failed: {}{}",
            args.join(" "),
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    pub fn fails(&self, args: &[&str]) -> String {
        let o = self.run(args, None);
        assert!(!o.status.success(), "sealmq {} should fail", args.join(" "));
        String::from_utf8_lossy(&o.stderr).into_owned()
    }

    /// Runs an MQSC script that must succeed entirely.
    /// `sealmq passwd QM USER` with the new password (it must succeed).
    pub fn passwd(&self, qm: &str, user: &str, pw: &str) {
        let o = self
            .cmd(&["passwd", qm, user])
            .env("SEALMQ_NEW_PASSWORD", pw)
            .output()
            .unwrap();
        assert!(o.status.success(), "sealmq passwd {qm} {user}: {o:?}");
    }

    /// The address of a running queue manager's listener of `kind` (`metrics`, `web`, `tcp`):
    /// the `kind:` line of `<QM dir>/listeners`.
    #[allow(dead_code)]
    pub fn listener(&self, qm: &str, kind: &str) -> String {
        let text = std::fs::read_to_string(self.qm_dir(qm).join("listeners")).unwrap();
        let prefix = format!("{kind}:");
        text.lines()
            .find_map(|l| l.strip_prefix(prefix.as_str()))
            .unwrap_or_else(|| panic!("no {kind}: line in {text}"))
            .to_string()
    }

    pub fn mqsc(&self, qm: &str, script: &str) -> String {
        self.ok_in(&["mqsc", qm], Some(script))
    }

    pub fn qm_dir(&self, qm: &str) -> PathBuf {
        self.dir.path().join("qmgrs").join(qm)
    }

    pub fn pid(&self, qm: &str) -> String {
        std::fs::read_to_string(self.qm_dir(qm).join("qm.pid"))
            .unwrap()
            .trim()
            .to_string()
    }

    /// Starts a queue manager listening on 127.0.0.1:`port`.
    pub fn start_tcp(&self, qm: &str, port: u16) {
        self.ok(&[
            "start",
            qm,
            "--background",
            "--listen",
            &format!("127.0.0.1:{port}"),
        ]);
    }

    /// SIGKILL, then wait until the dead process's lock is released.
    /// An application identity `dn` in `app` that trusts queue manager `qm` and is trusted by
    /// it; then `qm` started with TLS on a loopback `port`. Returns the address.
    pub fn start_tls_for(&self, qm: &str, port: u16, app: &std::path::Path, dn: &str) -> String {
        self.start_tls_with(qm, port, app, dn, &[])
    }

    /// As `start_tls_for`, with `env` in the queue manager's environment.
    pub fn start_tls_with(
        &self,
        qm: &str,
        port: u16,
        app: &std::path::Path,
        dn: &str,
        env: &[(&str, &str)],
    ) -> String {
        self.app_identity(qm, app, dn);
        let addr = format!("127.0.0.1:{port}");
        let o = self
            .cmd(&["start", qm, "--background", "--tls", "--listen", &addr])
            .envs(env.iter().copied())
            .output()
            .unwrap();
        assert!(o.status.success(), "start {qm}: {o:?}");
        addr
    }

    /// An application identity `dn` in `app` that trusts queue manager `qm` and is trusted by
    /// it.
    pub fn app_identity(&self, qm: &str, app: &std::path::Path, dn: &str) {
        let s = |p: &std::path::Path| p.to_string_lossy().into_owned();
        let qm_ks = self.qm_dir(qm).join("keystore");
        self.ok(&["keystore", "init", &s(app), "--dn", dn]);
        self.ok(&[
            "keystore",
            "trust",
            &s(app),
            &s(&qm_ks.join("identity.pem")),
        ]);
        self.ok(&[
            "keystore",
            "trust",
            &s(&qm_ks),
            &s(&app.join("identity.pem")),
        ]);
    }

    pub fn kill9(&self, qm: &str) {
        let status = Command::new("kill")
            .arg("-9")
            .arg(self.pid(qm))
            .status()
            .unwrap();
        assert!(status.success());
        wait_for(
            Duration::from_secs(20),
            "the killed queue manager to release its lock",
            || !self.ok(&["status", qm]).contains("RUNNING"),
        );
    }

    /// CURDEPTH of a local queue.
    pub fn depth(&self, qm: &str, q: &str) -> u64 {
        let out = self.mqsc(qm, &format!("DISPLAY QSTATUS({q}) CURDEPTH\n"));
        field(&out, "CURDEPTH").parse().unwrap()
    }
}

impl Drop for Home {
    fn drop(&mut self) {
        // Stop anything a failed test left running.
        for entry in std::fs::read_dir(self.dir.path().join("qmgrs"))
            .into_iter()
            .flatten()
            .flatten()
        {
            if let Ok(pid) = std::fs::read_to_string(entry.path().join("qm.pid")) {
                let _ = Command::new("kill").arg("-9").arg(pid.trim()).status();
            }
        }
    }
}

/// The value of the first `KEY(value)` in MQSC output (KEY as a whole word: `STATUS` does not
/// match inside `CHSTATUS`).
pub fn field(out: &str, key: &str) -> String {
    let pat = format!("{key}(");
    let mut from = 0;
    while let Some(i) = out[from..].find(&pat).map(|i| i + from) {
        let word_start = i == 0 || out[..i].ends_with(|c: char| c.is_whitespace());
        if word_start {
            let rest = &out[i + pat.len()..];
            return rest[..rest.find(')').unwrap()].to_string();
        }
        from = i + 1;
    }
    panic!("no {key} in {out}")
}

/// Polling with a deadline and free loopback ports: shared by every crate's tests.
#[allow(unused_imports)] // (not every test binary polls slowly or listens on TCP)
pub use sealmq_testkit::{connect_from, free_port, wait_every, wait_for};

/// A queue's directory under a queue manager's directory (its name in hexadecimal under
/// `queues/`).
pub fn queue_dir(qm_dir: &std::path::Path, queue: &str) -> PathBuf {
    let hex: String = queue.bytes().map(|b| format!("{b:02x}")).collect();
    qm_dir.join("queues").join(hex)
}

/// How many data files (`*.qd`) a queue's directory holds.
pub fn queue_data_files(qm_dir: &std::path::Path, queue: &str) -> usize {
    std::fs::read_dir(queue_dir(qm_dir, queue))
        .map(|r| {
            r.flatten()
                .filter(|e| e.path().extension().is_some_and(|x| x == "qd"))
                .count()
        })
        .unwrap_or(0)
}

/// Runs a third-party client program; the JSON lines it printed (it must succeed).
pub fn json_lines(mut cmd: Command, what: &str, args: &[&str]) -> Vec<serde_json::Value> {
    let out = cmd.args(args).output().expect("the client runs");
    assert!(
        out.status.success(),
        "{what} {args:?} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

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

/// UNCOM of a local queue: messages got in units of work not yet ended.
pub fn uncom(h: &Home, qm: &str, q: &str) -> u64 {
    let out = h.mqsc(qm, &format!("DISPLAY QSTATUS({q}) UNCOM\n"));
    field(&out, "UNCOM").parse().unwrap()
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
#[allow(unsafe_code)]
pub fn start_with_fd_limit(h: &Home, qm: &str, n: u64, extra: &[&str]) {
    use std::os::unix::process::CommandExt;
    let mut args = vec!["start", qm, "--background"];
    args.extend_from_slice(extra);
    let mut c = h.cmd(&args);
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
#[allow(unsafe_code)]
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

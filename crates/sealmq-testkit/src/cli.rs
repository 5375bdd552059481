//! The `sealmq` command as a user runs it, in a `SEALMQ_HOME` of a test's own: queue
//! managers made, started (on loopback ports, with TLS when asked), scripted with MQSC and
//! killed with `kill -9`; keystores, authorities and trust for the PKI a test needs; and the
//! readings of MQSC output and queue files tests assert on.

use crate::wait_for;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

/// The `sealmq` executable of this build: beside the test binary's folder (`target/<profile>/`),
/// or `SEALMQ_EXE`.
pub fn sealmq_exe() -> PathBuf {
    if let Some(p) = std::env::var_os("SEALMQ_EXE") {
        return PathBuf::from(p);
    }
    let here = std::env::current_exe().unwrap_or_default();
    let profile = here
        .parent()
        .and_then(Path::parent)
        .unwrap_or(Path::new("."));
    profile.join("sealmq")
}

fn s(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

pub struct Home {
    pub dir: tempfile::TempDir,
}

impl Default for Home {
    fn default() -> Self {
        Self::new()
    }
}

/// A running `sealmq web`; dropping it ends it.
pub struct WebServer {
    pub child: std::process::Child,
    /// `127.0.0.1:PORT`.
    pub addr: String,
}

impl WebServer {
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for WebServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Home {
    pub fn new() -> Home {
        Home {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(sealmq_exe());
        c.args(args)
            .env("SEALMQ_HOME", self.dir.path())
            .env_remove("SEALMQ_KEYSTORE");
        c
    }

    pub fn run(&self, args: &[&str], stdin: Option<&str>) -> Output {
        self.run_bytes(args, stdin.map(str::as_bytes))
    }

    /// `sealmq ARGS` with `stdin` (bytes: a protected message) on its standard input.
    pub fn run_bytes(&self, args: &[&str], stdin: Option<&[u8]>) -> Output {
        use std::io::Write;
        let mut c = self.cmd(args);
        c.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = c.spawn().unwrap();
        if let Some(s) = stdin {
            // sealmq may refuse its arguments before reading standard input.
            let _ = child.stdin.take().unwrap().write_all(s);
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

    /// `sealmq web --passwd USER` with the new password (it must succeed).
    pub fn web_passwd(&self, user: &str, pw: &str) {
        let o = self
            .cmd(&["web", "--passwd", user])
            .env("SEALMQ_NEW_PASSWORD", pw)
            .output()
            .unwrap();
        assert!(o.status.success(), "sealmq web --passwd {user}: {o:?}");
    }

    /// `sealmq web --listen 127.0.0.1:0 ARGS`, the installation's web server, running until
    /// the returned guard is dropped; its address from `<home>/web/listeners`.
    pub fn web_server(&self, args: &[&str]) -> WebServer {
        self.web_server_limited(args, None)
    }

    /// [`Home::web_server`], holding at most `fds` descriptors when given.
    pub fn web_server_limited(&self, args: &[&str], fds: Option<u64>) -> WebServer {
        let listeners = self.dir.path().join("web").join("listeners");
        let _ = std::fs::remove_file(&listeners);
        let mut c = self.cmd(&["web", "--listen", "127.0.0.1:0"]);
        c.args(args).stdout(Stdio::null()).stderr(Stdio::null());
        if let Some(n) = fds {
            crate::limits::limit_fds(&mut c, n);
        }
        let child = c.spawn().unwrap();
        let mut server = WebServer {
            child,
            addr: String::new(),
        };
        crate::wait_for(std::time::Duration::from_secs(60), "sealmq web", || {
            std::fs::read_to_string(&listeners)
                .ok()
                .and_then(|t| t.trim().strip_prefix("web:").map(str::to_string))
                .is_some_and(|a| {
                    server.addr = a;
                    true
                })
        });
        server
    }

    /// The address of a running queue manager's listener of `kind` (`metrics`, `web`, `tcp`):
    /// the `kind:` line of `<QM dir>/listeners`.
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

    /// Queue manager `qm` created and started with APP.Q and an AMQP channel APP.AMQP on a
    /// free loopback port, for the user `app` (APP.* queues, temporary queues, `AMQP.**`
    /// topics' queues), with `extra` MQSC before the channel starts; its URL.
    pub fn amqp_qm(&self, qm: &str, extra: &str) -> String {
        self.ok(&["create", qm]);
        self.ok(&["start", qm, "--background"]);
        let port = crate::free_port();
        self.mqsc(
            qm,
            &format!(
                "DEFINE QLOCAL(APP.Q)\n\
                 DEFINE CHANNEL(APP.AMQP) CHLTYPE(AMQP) PORT({port}) IPADDR(127.0.0.1) MCAUSER('app')\n\
                 SET AUTHREC OBJTYPE(QMGR) PRINCIPAL('app') AUTHADD(CONNECT)\n\
                 SET AUTHREC PROFILE('APP.*') OBJTYPE(QUEUE) PRINCIPAL('app') AUTHADD(PUT,GET,BROWSE,INQ)\n\
                 SET AUTHREC PROFILE('SYSTEM.DEFAULT.MODEL.QUEUE') OBJTYPE(QUEUE) PRINCIPAL('app') AUTHADD(GET,DSP)\n\
                 SET AUTHREC PROFILE('AMQP.**') OBJTYPE(QUEUE) PRINCIPAL('app') AUTHADD(PUT,GET)\n\
                 {extra}START CHANNEL(APP.AMQP)\n"
            ),
        );
        format!("amqp://127.0.0.1:{port}")
    }

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
        let qm_ks = self.qm_dir(qm).join("keystore");
        self.ok(&["keystore", "init", &s(app), "--dn", dn]);
        self.trust(app, &qm_ks.join("identity.pem"));
        self.trust(&qm_ks, &app.join("identity.pem"));
    }

    /// A keystore at `dir` whose identity `dn` is a certificate authority (`--authority`).
    pub fn ca(&self, dir: &Path, dn: &str) {
        self.ok(&["keystore", "init", &s(dir), "--dn", dn, "--authority"]);
    }

    /// A keystore at `dir` whose identity `dn` is signed by the authority in `ca`.
    pub fn identity(&self, dir: &Path, dn: &str, ca: &Path) {
        self.ok(&["keystore", "init", &s(dir), "--dn", dn, "--ca", &s(ca)]);
    }

    /// Keystore `ks` trusts the certificate at `cert`.
    pub fn trust(&self, ks: &Path, cert: &Path) {
        self.ok(&["keystore", "trust", &s(ks), &s(cert)]);
    }

    /// SIGKILL, then wait until the dead process's lock is released.
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

/// UNCOM of a local queue: messages got in units of work not yet ended.
pub fn uncom(h: &Home, qm: &str, q: &str) -> u64 {
    let out = h.mqsc(qm, &format!("DISPLAY QSTATUS({q}) UNCOM\n"));
    field(&out, "UNCOM").parse().unwrap()
}

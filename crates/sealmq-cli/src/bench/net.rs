//! Throw-away queue managers for the channel benchmarks (`bench_chl.rs`): created in a home of
//! their own, started on free loopback ports, joined by channels, stopped and removed on drop.

use super::common::cpu_seconds;
use crate::CliResult;
use sealmq_client::Client;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// Throw-away queue managers in a home of their own, stopped and removed on drop.
pub(crate) struct Net {
    home: PathBuf,
    exe: PathBuf,
    qms: Vec<(String, String)>,
}

impl Net {
    pub(crate) fn new(tag: &str) -> CliResult<Net> {
        let home = std::env::temp_dir().join(format!(
            "sealmq-bench-{tag}-{}-{}",
            std::process::id(),
            super::common::cpu_seconds("self").to_bits() % 100_000
        ));
        let _ = std::fs::remove_dir_all(&home);
        Ok(Net {
            home,
            exe: std::env::current_exe().map_err(|e| e.to_string())?,
            qms: Vec::new(),
        })
    }

    pub(crate) fn sealmq(&self, args: &[&str]) -> CliResult {
        self.sealmq_env(args, None)
    }

    /// `sealmq args` with one more environment variable.
    fn sealmq_env(&self, args: &[&str], env: Option<(&str, &str)>) -> CliResult {
        self.run_exe(&self.exe, args, env)
    }

    /// `args` run by the `sealmq` executable `exe` (this one, or a build to compare with).
    fn run_exe(&self, exe: &Path, args: &[&str], env: Option<(&str, &str)>) -> CliResult {
        let mut cmd = Command::new(exe);
        cmd.env("SEALMQ_HOME", &self.home)
            .env_remove("SEALMQ_KEYSTORE")
            .env_remove("SEALMQ_SERVER");
        if let Some((k, v)) = env {
            cmd.env(k, v);
        }
        Ok(super::app::run_sealmq(&mut cmd, args)?)
    }

    pub(crate) fn dir(&self, qm: &str) -> PathBuf {
        self.home.join("qmgrs").join(qm)
    }

    /// Creates a queue manager with the `sealmq` executable `exe`.
    pub(crate) fn create_by(&self, exe: &Path, qm: &str) -> CliResult {
        self.run_exe(exe, &["create", qm], None)
    }

    /// This build's `sealmq` executable.
    pub(crate) fn exe(&self) -> PathBuf {
        self.exe.clone()
    }

    /// Creates a queue manager; `identity`: a keystore to use as its own (copied).
    pub(crate) fn create(&self, qm: &str, identity: Option<&Path>) -> CliResult {
        self.sealmq(&["create", qm])?;
        if let Some(ks) = identity {
            let dst = self.dir(qm).join("keystore");
            std::fs::remove_dir_all(&dst).map_err(|e| e.to_string())?;
            copy_dir(ks, &dst)?;
        }
        Ok(())
    }

    /// Each queue manager trusts the other's certificate (TLS channels).
    pub(crate) fn trust_each_other(&self, a: &str, b: &str) -> CliResult {
        for (who, whose) in [(a, b), (b, a)] {
            let cert = self.dir(whose).join("keystore/identity.pem");
            let ks = self.dir(who).join("keystore");
            self.sealmq(&[
                "keystore",
                "trust",
                &ks.to_string_lossy(),
                &cert.to_string_lossy(),
            ])?;
        }
        Ok(())
    }

    pub(crate) fn start(&mut self, qm: &str, port: u16, tls: bool) -> CliResult {
        let exe = self.exe.clone();
        self.start_by(&exe, qm, port, tls)
    }

    /// [`Self::start`] by the `sealmq` executable `exe` (a build to compare with: it creates
    /// the queue manager too, in its own format).
    pub(crate) fn start_by(&mut self, exe: &Path, qm: &str, port: u16, tls: bool) -> CliResult {
        let listen = format!("127.0.0.1:{port}");
        let mut args = vec!["start", qm, "--background", "--listen", &listen];
        if tls {
            args.push("--tls");
        }
        self.run_exe(exe, &args, None)?;
        let pid = std::fs::read_to_string(self.dir(qm).join("qm.pid"))
            .map_err(|e| e.to_string())?
            .trim()
            .to_string();
        self.qms.retain(|(n, _)| n != qm);
        self.qms.push((qm.to_string(), pid));
        Ok(())
    }

    pub(crate) fn stop(&mut self, qm: &str) -> CliResult {
        self.sealmq(&["stop", qm])?;
        self.qms.retain(|(n, _)| n != qm);
        Ok(())
    }

    pub(crate) fn mqsc(&self, qm: &str, script: &str) -> CliResult {
        super::common::mqsc(&self.dir(qm), script)
    }

    /// CPU seconds of all the queue managers.
    pub(crate) fn qm_cpu(&self) -> f64 {
        self.qms.iter().map(|(_, pid)| cpu_seconds(pid)).sum()
    }

    /// Waits until the channel runs on `qm` (10 s at most).
    pub(crate) fn wait_running(&self, qm: &str, ch: &str) -> CliResult {
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut c =
            Client::connect_local(&self.dir(qm), "bench-setup").map_err(|e| e.to_string())?;
        loop {
            let (out, _) = c
                .mqsc(&format!("DISPLAY CHSTATUS({ch}) STATUS"), false)
                .map_err(|e| e.to_string())?;
            if out.contains("STATUS(RUNNING)") {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(format!("bench: channel {ch} did not start:\n{out}").into());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub(crate) fn depth(&self, qm: &str, q: &str) -> u64 {
        let Ok(mut c) = Client::connect_local(&self.dir(qm), "bench-depth") else {
            return 0;
        };
        c.mqsc(&format!("DISPLAY QSTATUS({q}) CURDEPTH"), false)
            .ok()
            .and_then(|(out, _)| {
                let i = out.find(" CURDEPTH(")? + 10;
                out[i..].split(')').next()?.parse().ok()
            })
            .unwrap_or(0)
    }

    /// A sender from `from` to `to` (transmission queue named like `to`) and its receiver.
    pub(crate) fn channel(
        &self,
        from: &str,
        to: &str,
        port: u16,
        sdr: &str,
        rcvr: &str,
    ) -> CliResult {
        self.mqsc(
            from,
            &format!(
                "DEFINE QLOCAL({to}) USAGE(XMITQ) MAXDEPTH(999999999) REPLACE\n\
                 DEFINE CHANNEL({from}.{to}) CHLTYPE(SDR) CONNAME('127.0.0.1({port})') XMITQ({to}) \
                 SHORTTMR(0) BATCHSZ(50) {sdr} REPLACE\n"
            ),
        )?;
        self.mqsc(
            to,
            // A throw-away network: the receiver runs as the queue manager's own user, which
            // the default CHLAUTH rules refuse unless allowed as here.
            &format!(
                "DEFINE CHANNEL({from}.{to}) CHLTYPE(RCVR) {rcvr} REPLACE\n\
                 SET CHLAUTH('{from}.{to}') TYPE(BLOCKUSER) USERLIST('nobody') ACTION(REPLACE)\n"
            ),
        )?;
        self.mqsc(from, &format!("START CHANNEL({from}.{to})"))?;
        self.wait_running(from, &format!("{from}.{to}"))
    }
}

impl Drop for Net {
    fn drop(&mut self) {
        for (qm, _) in std::mem::take(&mut self.qms) {
            if let Ok(mut c) = Client::connect_local(&self.dir(&qm), "bench-stop") {
                let _ = c.stop(true);
            }
            let deadline = Instant::now() + Duration::from_secs(30);
            while crate::home::running(&self.dir(&qm)) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        let _ = std::fs::remove_dir_all(&self.home);
    }
}

fn copy_dir(from: &Path, to: &Path) -> CliResult {
    std::fs::create_dir_all(to).map_err(|e| e.to_string())?;
    for e in std::fs::read_dir(from).map_err(|e| e.to_string())? {
        let e = e.map_err(|e| e.to_string())?;
        let dst = to.join(e.file_name());
        if e.path().is_dir() {
            copy_dir(&e.path(), &dst)?;
        } else {
            std::fs::copy(e.path(), &dst).map_err(|e| e.to_string())?;
        }
    }
    Ok(())
}

/// A loopback port for a throw-away queue manager, below the ephemeral range so that no
/// outgoing connection takes it before the queue manager listens (`sealmq_types::ports`).
pub(crate) fn free_port() -> CliResult<u16> {
    Ok(sealmq_types::ports::free_port().ok_or_else(|| "no free loopback port".to_string())?)
}

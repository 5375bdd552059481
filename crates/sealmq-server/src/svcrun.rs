//! SERVICE objects at run time: START/STOP SERVICE, and CONTROL(QMGR|STARTONLY) services with
//! the queue manager, as MQ runs them. A program runs under the queue manager's user, in its
//! own process group, with the queue manager's directory as its working directory; its output
//! is appended to STDOUT/STDERR (created private to that user) or discarded. A SERVER service
//! runs one instance, watched by a thread that reaps it; a COMMAND service runs to its end,
//! unwatched (reaped too, so nothing is left a zombie). Secrets in the queue manager's
//! environment (the variable encryption at rest reads its master key or passphrase from, the
//! CLI's password variables) are not passed on.

use sealmq_engine::services::{
    Control as Ctl, ServType, ServiceControl, ServiceDef, ServiceStatus, expand_tokens,
    is_executable, split_args,
};
use sealmq_engine::{MqError, MqResult, QueueManager};
use sealmq_types::ReasonCode;
use sealmq_types::sync::lock;
use std::collections::HashMap;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};

/// Variables that carry secrets to sealmq's own commands.
pub(crate) const SECRET_ENV: [&str; 3] = [
    "SEALMQ_PASSWORD",
    "SEALMQ_NEW_PASSWORD",
    "SEALMQ_BENCH_DSE_KEY",
];

/// The services of this server: where the queue manager lives and the servers running now.
pub(crate) struct Services {
    qm: Arc<QueueManager>,
    qm_name: String,
    dir: PathBuf,
    /// The variable encryption at rest took its master key or passphrase from, if any.
    secret_env: Option<String>,
    running: Mutex<HashMap<String, ServiceStatus>>,
}

fn fail(detail: String) -> MqError {
    MqError::new(ReasonCode::ResourceProblem, detail)
}

/// A directory as MQ's path tokens give it: with a trailing `/`.
fn with_slash(p: &Path) -> String {
    let s = p.display().to_string();
    if s.ends_with('/') { s } else { s + "/" }
}

impl Services {
    pub(crate) fn new(qm: Arc<QueueManager>, qm_name: &str, dir: &Path) -> Arc<Services> {
        Arc::new(Services {
            qm,
            qm_name: qm_name.to_string(),
            dir: dir.to_path_buf(),
            secret_env: sealmq_engine::host::Dse::secret_env(dir),
            running: Mutex::new(HashMap::new()),
        })
    }

    /// MQ's replaceable inserts (`+QMNAME+`, ...) for one service; `+MQ_SERVER_PID+` is the
    /// running server's process id (stop commands), or 0.
    fn tokens(&self, def: &ServiceDef, pid: u32) -> Vec<(&'static str, String)> {
        // The installation: the directory above the one holding this program (so that
        // `+MQ_INSTALL_PATH+bin/sealmq` names it, as MQ's `bin/runmqtrm`).
        let install = std::env::current_exe()
            .ok()
            .and_then(|e| e.parent().and_then(Path::parent).map(with_slash))
            .unwrap_or_default();
        let data = self.dir.parent().map(with_slash).unwrap_or_default();
        let dir_name = self
            .dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        vec![
            ("MQ_INSTALL_PATH", install),
            ("MQ_DATA_PATH", data),
            ("MQ_Q_MGR_DATA_PATH", self.dir.display().to_string()),
            ("MQ_Q_MGR_DATA_NAME", dir_name),
            ("QMNAME", self.qm_name.clone()),
            ("MQ_SERVICE_NAME", def.name.clone()),
            ("MQ_SERVER_PID", pid.to_string()),
        ]
    }

    /// An output file: appended to, created private to this user; blank discards.
    fn output(&self, what: &str, path: &str, tokens: &[(&str, String)]) -> MqResult<Stdio> {
        if path.is_empty() {
            return Ok(Stdio::null());
        }
        let p = expand_tokens(path, tokens);
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .open(&p)
            .map(Stdio::from)
            .map_err(|e| fail(format!("{what}('{p}') cannot be opened for appending: {e}")))
    }

    /// Starts `cmd args` with the service's output files.
    fn spawn(
        &self,
        def: &ServiceDef,
        what: &str,
        cmd: &str,
        args: &str,
        pid: u32,
    ) -> MqResult<Child> {
        let tokens = self.tokens(def, pid);
        let program = expand_tokens(cmd, &tokens);
        if !program.starts_with('/') || !is_executable(Path::new(&program)) {
            return Err(fail(format!(
                "service {}: {what}('{program}') is not an executable file: ALTER SERVICE({}) \
                 {what}('/full/path/of/program')",
                def.name, def.name
            )));
        }
        let mut c = Command::new(&program);
        for v in SECRET_ENV
            .iter()
            .map(|s| s.to_string())
            .chain(self.secret_env.clone())
        {
            c.env_remove(v);
        }
        c.args(split_args(&expand_tokens(args, &tokens)))
            .current_dir(&self.dir)
            .stdin(Stdio::null())
            .stdout(self.output("STDOUT", &def.stdout, &tokens)?)
            .stderr(self.output("STDERR", &def.stderr, &tokens)?)
            .process_group(0)
            .spawn()
            .map_err(|e| fail(format!("service {}: cannot start {program}: {e}", def.name)))
    }

    /// Reaps `child` on a thread of its own; a SERVER's status goes when it ends.
    fn watch(self: &Arc<Self>, name: &str, mut child: Child, server: bool) {
        let (me, owned) = (self.clone(), name.to_string());
        let pid = child.id();
        let spawned = std::thread::Builder::new()
            .name(format!("service {name}"))
            .spawn(move || {
                let name = owned;
                let st = child.wait();
                if server {
                    let mut running = lock(&me.running);
                    if running.get(&name).is_some_and(|s| s.pid == pid) {
                        running.remove(&name);
                    }
                }
                match st {
                    Ok(st) => {
                        tracing::info!(service = %name, pid, status = %st, "service program ended")
                    }
                    Err(e) => {
                        tracing::warn!(service = %name, pid, "cannot wait for service program: {e}")
                    }
                }
            });
        if let Err(e) = spawned {
            tracing::warn!(service = %name, pid, "cannot watch a service program: {e}");
        }
    }

    pub(crate) fn start(self: &Arc<Self>, def: &ServiceDef) -> MqResult<String> {
        if def.startcmd.is_empty() {
            return Err(MqError::new(
                ReasonCode::OptionsError,
                format!(
                    "service {} has no STARTCMD: ALTER SERVICE({}) STARTCMD('/full/path/of/program')",
                    def.name, def.name
                ),
            ));
        }
        let server = def.servtype == ServType::Server;
        // Held across the spawn, so that two STARTs of one server cannot both run it.
        let mut running = lock(&self.running);
        if server && running.contains_key(&def.name) {
            return Err(MqError::new(
                ReasonCode::ObjectInUse,
                format!(
                    "service {} is already running (IGNSTATE(YES) makes this not an error)",
                    def.name
                ),
            ));
        }
        let child = self.spawn(def, "STARTCMD", &def.startcmd, &def.startarg, 0)?;
        let pid = child.id();
        if server {
            running.insert(
                def.name.clone(),
                ServiceStatus {
                    name: def.name.clone(),
                    status: "RUNNING",
                    pid,
                    started: sealmq_types::time::now_secs(),
                },
            );
        }
        drop(running);
        self.watch(&def.name, child, server);
        tracing::info!(service = %def.name, pid, "service started");
        Ok(format!(
            "SMQ0205I: Service {} started (process {pid}).",
            def.name
        ))
    }

    pub(crate) fn stop(self: &Arc<Self>, def: &ServiceDef) -> MqResult<String> {
        let server = def.servtype == ServType::Server;
        let pid = lock(&self.running).get(&def.name).map(|s| s.pid);
        if server && pid.is_none() {
            return Err(MqError::new(
                ReasonCode::OptionsError,
                format!(
                    "service {} is not running (IGNSTATE(YES) makes this not an error)",
                    def.name
                ),
            ));
        }
        if def.stopcmd.is_empty() {
            return Err(MqError::new(
                ReasonCode::OptionsError,
                format!(
                    "service {} has no STOPCMD to stop it with: ALTER SERVICE({}) \
                     STOPCMD('/bin/kill') STOPARG('+MQ_SERVER_PID+'), for example",
                    def.name, def.name
                ),
            ));
        }
        let child = self.spawn(def, "STOPCMD", &def.stopcmd, &def.stoparg, pid.unwrap_or(0))?;
        if let Some(s) = lock(&self.running).get_mut(&def.name) {
            s.status = "STOPPING";
        }
        self.watch(&format!("{} (stop)", def.name), child, false);
        tracing::info!(service = %def.name, "service stop command run");
        Ok(format!("SMQ0206I: Service {} stop requested.", def.name))
    }

    /// Starts every SERVICE with CONTROL(QMGR) or CONTROL(STARTONLY); one that cannot start
    /// is logged and the queue manager goes on, as MQ's.
    pub(crate) fn start_with_qmgr(self: &Arc<Self>) {
        for s in self.qm.objects::<ServiceDef>() {
            if matches!(s.control, Ctl::Qmgr | Ctl::StartOnly)
                && !s.startcmd.is_empty()
                && let Err(e) = self.start(&s)
            {
                tracing::error!(service = %s.name, "{}", e.detail);
            }
        }
    }

    /// Runs the stop command of every CONTROL(QMGR) service (a server only while it runs).
    pub(crate) fn stop_with_qmgr(self: &Arc<Self>) {
        for s in self.qm.objects::<ServiceDef>() {
            let running = lock(&self.running).contains_key(&s.name);
            if s.control == Ctl::Qmgr
                && (s.servtype == ServType::Command || running)
                && !s.stopcmd.is_empty()
                && let Err(e) = self.stop(&s)
            {
                tracing::error!(service = %s.name, "{}", e.detail);
            }
        }
    }
}

/// MQSC's START/STOP SERVICE and DISPLAY SVSTATUS.
pub(crate) struct Control(pub(crate) Arc<Services>);

impl ServiceControl for Control {
    fn start(&self, def: &ServiceDef) -> MqResult<String> {
        self.0.start(def)
    }

    fn stop(&self, def: &ServiceDef) -> MqResult<String> {
        self.0.stop(def)
    }

    fn status(&self) -> Vec<ServiceStatus> {
        let mut v: Vec<ServiceStatus> = lock(&self.0.running).values().cloned().collect();
        v.sort_by(|a, b| a.name.cmp(&b.name));
        v
    }
}

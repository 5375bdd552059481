//! An instance of a replicated queue manager (docs/ha.md): `sealmq start` runs it as a replica
//! (its Raft node applies the group's log; its socket and listener refuse applications with
//! the active instance's name) until the group makes it active; it then starts the queue
//! manager on the log it holds, its batches replicated before they count. An active instance
//! that can no longer act as one (another was elected, no majority answers, a batch failed)
//! starts again as a replica: it stops acknowledging at once, and its next life catches up
//! from the group's log.

use crate::CliResult;
use clap::{Args, Subcommand};
use sealmq_ha::{Group, Node, Role, Status};
use sealmq_server::standby::{Standby, Why};
use sealmq_server::{Server, ServerConfig};
use sealmq_storage::log::LogConfig;
use serde::{Deserialize, Serialize};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// The lock one process of an instance holds for its whole life.
const INSTANCE_LOCK: &str = "ha/instance.lock";
/// Left by an instance that hands its role over, for the process that replaces it.
const HOLD_FILE: &str = "ha/hold";

fn take_lock(path: &Path, qm: &str) -> Result<std::fs::File, String> {
    let f = std::fs::File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    f.try_lock()
        .map_err(|_| format!("queue manager {qm} is already running"))?;
    Ok(f)
}

/// Runs this instance in the foreground until it is stopped (as the active instance, by
/// `sealmq stop`; as a replica, by SIGTERM from `sealmq stop`).
pub fn run(cfg: ServerConfig, group: Group) -> CliResult {
    let dir = cfg.dir.clone();
    sealmq_server::errlog::init(&dir);
    std::fs::create_dir_all(dir.join(sealmq_ha::HA_DIR))
        .map_err(|e| format!("cannot create {}: {e}", dir.join("ha").display()))?;
    let _instance = take_lock(&dir.join(INSTANCE_LOCK), &cfg.name)?;
    let qm_lock = take_lock(&dir.join("qm.lock"), &cfg.name)?;
    let mut log_cfg = LogConfig::new(dir.join("log"));
    log_cfg.dse = sealmq_storage::dse::Dse::load(&dir).map_err(|e| e.to_string())?;
    // A replica's copy: each batch is applied once the group's synced Raft logs hold it.
    log_cfg.durable_elsewhere = true;
    keep_secret_env(&dir);
    let state = Arc::new(EngineState {
        cfg: {
            let mut q = sealmq_engine::QmConfig::new(&cfg.name, &dir);
            q.dse = log_cfg.dse.clone();
            q
        },
    });
    let node = Arc::new(Node::start(&dir, &cfg.name, group.clone(), log_cfg, state)?);
    // An instance that just handed its role over stands for no election a while.
    if std::fs::remove_file(dir.join(HOLD_FILE)).is_ok() {
        node.hold_elections(sealmq_ha::SWITCH_HOLD);
    }
    let _ = std::fs::write(dir.join("qm.pid"), std::process::id().to_string());
    serve_admin(&dir, node.clone())?;
    let why = replica_why(&node, &cfg.name, &group.instance);
    let standby = Standby::start(&dir, cfg.listen, why)?;
    let _ = std::fs::write(dir.join("listeners"), "replica\n");
    tracing::info!(
        "queue manager {} instance {}: a replica, applying the group's log",
        cfg.name,
        group.instance
    );
    eprintln!(
        "sealmq: queue manager {} instance {} started as a replica",
        cfg.name, group.instance
    );
    catch_up_progress(node.clone());
    node.wait_active(|| false);
    standby.stop();
    let server = become_active(&node, &cfg, &dir, qm_lock);
    {
        let qm = server.queue_manager().clone();
        node.set_local_sync(Box::new(move || qm.sync_log().map_err(|e| e.to_string())));
    }
    node.set_serving();
    tracing::info!(
        "queue manager {} instance {}: active",
        cfg.name,
        group.instance
    );
    eprintln!(
        "sealmq: queue manager {} instance {} is active",
        cfg.name, group.instance
    );
    serve_active(server, node, &cfg, &dir, &group.instance)
}

/// While this replica catches up with the group's log: its progress on standard error (on a
/// terminal: entries applied of the active instance's), and once it holds the active
/// instance's last entry a line in the error log saying how long it took.
fn catch_up_progress(node: Arc<Node>) {
    std::thread::spawn(move || {
        let began = std::time::Instant::now();
        let bar = crate::progress::counter("replica catching up:", "log entries applied", None);
        loop {
            if node.is_active() {
                bar.finish_and_clear();
                return;
            }
            let mine = node.status();
            if let Ok(group) = node.group_view() {
                if bar.length() != Some(group.log_index) {
                    bar.set_length(group.log_index);
                    if let Ok(style) = indicatif::ProgressStyle::with_template(
                        "{prefix} {pos}/{len} log entries applied {wide_bar} {eta}",
                    ) {
                        bar.set_style(style);
                    }
                }
                bar.set_position(mine.applied_index.min(group.log_index));
                if mine.applied_index >= group.log_index {
                    bar.finish_and_clear();
                    tracing::info!(
                        "instance {} caught up with the group's log (entry {}) in {:.1} s",
                        mine.instance,
                        group.log_index,
                        began.elapsed().as_secs_f64()
                    );
                    return;
                }
            }
            std::thread::sleep(Duration::from_secs(1));
        }
    });
}

/// What a replica tells an application that connects to it: where the active instance is.
fn replica_why(node: &Arc<Node>, qm: &str, me: &str) -> Why {
    let (node, qm, me) = (node.clone(), qm.to_string(), me.to_string());
    Arc::new(move || match node.active() {
        Some((a, addr)) => format!(
            "queue manager {qm}: instance {me} is a replica; the active instance is {a} \
             (replication address {addr}); connect to it"
        ),
        None => format!(
            "queue manager {qm}: instance {me} is a replica and the group is electing an \
             active instance; try again shortly"
        ),
    })
}

/// This instance takes the active role: the log released to the engine, the group's policy
/// key shared, and the queue manager started with the group as its log's replicator. An
/// instance that cannot act as the active one starts again as a replica.
fn become_active(
    node: &Arc<Node>,
    cfg: &ServerConfig,
    dir: &Path,
    qm_lock: std::fs::File,
) -> Server {
    node.release_log();
    // The stored policies' tags verify on whichever instance is active: the group shares the
    // policy key (made now by the first active instance, received by every other).
    let shared = sealmq_engine::policies::ensure_key(dir)
        .map_err(|e| e.to_string())
        .and_then(|k| node.share_policy_key(&k));
    if let Err(e) = shared {
        tracing::error!("this instance cannot act as the active one: {e}");
        restart_as_replica();
    }
    drop(qm_lock);
    let server = Server::start(&ServerConfig {
        replicator: Some(node.replicator()),
        ..cfg.clone()
    });
    match server {
        Ok(s) => s,
        Err(e) => {
            tracing::error!("the queue manager could not start on this instance: {e}");
            restart_as_replica();
        }
    }
}

/// Serves as the active instance until the queue manager ends, or the instance must step
/// down (it starts again as a replica).
fn serve_active(
    server: Server,
    node: Arc<Node>,
    cfg: &ServerConfig,
    dir: &Path,
    me: &str,
) -> CliResult {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(server.wait());
    });
    loop {
        match rx.recv_timeout(Duration::from_millis(50)) {
            Ok(r) => {
                if let Ok(n) = Arc::try_unwrap(node) {
                    n.shutdown();
                }
                eprintln!("sealmq: queue manager {} ended", cfg.name);
                return r.map_err(Into::into);
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                if let Some(why) = node.must_step_down() {
                    tracing::error!(
                        "instance {} is no longer active: {why}; it starts again as a replica",
                        me
                    );
                    if why.contains("sealmq ha switch") {
                        let _ = std::fs::write(dir.join(HOLD_FILE), b"");
                    }
                    restart_as_replica();
                }
            }
            Err(_) => {
                return Err("the queue manager's server ended without a word"
                    .to_string()
                    .into());
            }
        }
    }
}

/// A replica's snapshots, made and installed by the engine (its state files).
struct EngineState {
    cfg: sealmq_engine::QmConfig,
}

impl sealmq_ha::StateFiles for EngineState {
    fn write_state(&self, to: &Path) -> Result<u64, String> {
        sealmq_engine::qm::write_state(self.cfg.clone(), to).map_err(|e| e.to_string())
    }

    fn install_state(&self, from: &Path) -> Result<u64, String> {
        sealmq_engine::qm::install_state(&self.cfg, from).map_err(|e| e.to_string())
    }
}

/// Replaces this process by a new one with the same arguments: everything the active
/// instance held (sockets, threads, the engine, its unacknowledged work) goes at once, and the
/// new process starts as a replica.
fn restart_as_replica() -> ! {
    use std::os::unix::process::CommandExt;
    let err = match std::env::current_exe() {
        Ok(exe) => {
            let mut cmd = std::process::Command::new(exe);
            cmd.args(std::env::args_os().skip(1));
            // The master key's variable, scrubbed from this process's environment when the
            // queue manager started, is given to the next process alone.
            if let Some((name, value)) = SECRET_ENV.get() {
                cmd.env(name, value.as_str());
            }
            cmd.exec()
        }
        Err(e) => e,
    };
    tracing::error!("cannot start again ({err}); this instance ends");
    std::process::exit(75);
}

/// The instance's own status file, when its process runs.
pub fn status_of(dir: &Path) -> Option<Status> {
    let text = std::fs::read_to_string(dir.join(sealmq_ha::HA_DIR).join("status.json")).ok()?;
    serde_json::from_str(&text).ok()
}

/// The environment variable of the master key (`--dse env:VAR` or `passphrase-env:VAR`) and
/// its value, read before the queue manager scrubs it from the environment: an instance that
/// restarts itself as a replica needs it again. Kept for the process's life, as the keys it
/// opens are.
static SECRET_ENV: std::sync::OnceLock<(String, zeroize::Zeroizing<String>)> =
    std::sync::OnceLock::new();

fn keep_secret_env(dir: &Path) {
    if let Some(name) = sealmq_storage::dse::Dse::secret_env(dir)
        && let Ok(value) = std::env::var(&name)
    {
        let _ = SECRET_ENV.set((name, zeroize::Zeroizing::new(value)));
    }
}

/// `sealmq status QM` of a replicated queue manager: every instance as this one sees it, in
/// the manner of `dspmq -o nativeha -x`.
pub fn print_status(qm: &str, st: &Status) {
    println!(
        "QMNAME({qm}) ROLE({}) INSTANCE({}) ACTIVE({}) QUORUM({}) TERM({}) LOGINDEX({}) APPLIED({})",
        st.role.name(),
        st.instance,
        st.active.as_deref().unwrap_or(""),
        st.quorum.as_deref().unwrap_or("unknown"),
        st.term,
        st.log_index,
        st.applied_index
    );
    for i in &st.instances {
        let insync = match i.in_sync {
            Some(true) => "yes",
            Some(false) => "no",
            None => "unknown",
        };
        println!(
            "    INSTANCE({}) ROLE({}) INSYNC({insync}) BACKLOG({}) REPLADDR({})",
            i.name,
            i.role.name(),
            i.backlog
                .map_or_else(|| "unknown".into(), |b| b.to_string()),
            i.replication_address
        );
    }
}

/// The instance's administration socket (`<QM dir>/ha/ha.sock`, 0600: the queue manager's
/// user only), served in every role: one JSON request, one JSON answer.
const ADMIN_SOCKET: &str = "ha.sock";

#[derive(Serialize, Deserialize)]
enum Request {
    /// The active instance's view of the group.
    View,
    /// Ask an instance to stand for election.
    Switch(String),
}

#[derive(Serialize, Deserialize)]
enum Answer {
    View(Status),
    Done,
    Failed(String),
}

fn serve_admin(dir: &Path, node: Arc<Node>) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(sealmq_ha::HA_DIR).join(ADMIN_SOCKET);
    let _ = std::fs::remove_file(&path);
    let l = UnixListener::bind(&path)
        .map_err(|e| format!("cannot listen on {}: {e}", path.display()))?;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))
        .map_err(|e| format!("cannot protect {}: {e}", path.display()))?;
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            let node = node.clone();
            std::thread::spawn(move || {
                let _ = s.set_read_timeout(Some(Duration::from_secs(10)));
                let mut line = String::new();
                let mut r = BufReader::new(&s).take(4096);
                if r.read_line(&mut line).is_err() {
                    return;
                }
                let answer = match serde_json::from_str::<Request>(&line) {
                    Ok(Request::View) => {
                        node.group_view().map_or_else(Answer::Failed, Answer::View)
                    }
                    Ok(Request::Switch(to)) => {
                        tracing::info!(
                            "high availability: sealmq ha switch asks {to} to be active"
                        );
                        node.switch_to(&to)
                            .map_or_else(Answer::Failed, |()| Answer::Done)
                    }
                    Err(e) => Answer::Failed(format!("not a request: {e}")),
                };
                let mut w = &s;
                let _ = serde_json::to_writer(&mut w, &answer);
                let _ = w.write_all(b"\n");
            });
        }
    });
    Ok(())
}

use std::io::Read as _;

fn ask(dir: &Path, req: &Request) -> Result<Answer, String> {
    let path = dir.join(sealmq_ha::HA_DIR).join(ADMIN_SOCKET);
    let mut s = UnixStream::connect(&path)
        .map_err(|e| format!("no instance runs here ({}: {e})", path.display()))?;
    s.set_read_timeout(Some(Duration::from_secs(30)))
        .map_err(|e| e.to_string())?;
    let mut line = serde_json::to_vec(req).map_err(|e| e.to_string())?;
    line.push(b'\n');
    s.write_all(&line).map_err(|e| e.to_string())?;
    let mut answer = String::new();
    BufReader::new(&s)
        .read_line(&mut answer)
        .map_err(|e| format!("the instance did not answer: {e}"))?;
    serde_json::from_str(&answer).map_err(|e| format!("the instance answered nonsense: {e}"))
}

fn view(dir: &Path) -> Result<Status, String> {
    match ask(dir, &Request::View)? {
        Answer::View(s) => Ok(s),
        Answer::Failed(e) => Err(e),
        Answer::Done => Err("an unexpected answer".into()),
    }
}

#[derive(Subcommand)]
pub enum HaCmd {
    /// Move the active role to another instance (in sync with the group); applications and
    /// channels reconnect to it.
    Switch(SwitchArgs),
    /// Take an instance out for maintenance: refused when the others could not keep a
    /// majority in sync without it; an active instance hands its role over first.
    Drain(DrainArgs),
    /// Readiness: exit 0 for a healthy instance, active or replica (and say which).
    Ready(ReadyArgs),
}

#[derive(Args)]
pub struct SwitchArgs {
    /// Queue manager name.
    pub qm: String,
    /// The instance to make active.
    #[arg(long)]
    pub to: String,
}

#[derive(Args)]
pub struct DrainArgs {
    /// Queue manager name.
    pub qm: String,
    /// The instance to drain (the one running under this SEALMQ_HOME).
    #[arg(long)]
    pub instance: String,
}

#[derive(Args)]
pub struct ReadyArgs {
    /// Queue manager name.
    pub qm: String,
}

pub fn command(c: HaCmd) -> CliResult {
    match c {
        HaCmd::Switch(a) => switch(&a.qm, &a.to),
        HaCmd::Drain(a) => drain(&a),
        HaCmd::Ready(a) => ready(&a.qm),
    }
}

fn group_dir(qm: &str) -> CliResult<(std::path::PathBuf, Group)> {
    let dir = crate::home::exists(qm)?;
    let g = Group::load(&dir)?.ok_or_else(|| format!("queue manager {qm} is not replicated"))?;
    Ok((dir, g))
}

/// How long `sealmq ha switch` waits for its target before it asks the active instance again
/// (the target stands for election 10 s at most).
const RESWITCH_AFTER: Duration = Duration::from_secs(12);

fn switch(qm: &str, to: &str) -> CliResult {
    let (dir, g) = group_dir(qm)?;
    if g.id_of(to).is_none() {
        return Err(format!("{to} is not an instance of {qm}").into());
    }
    let v = view(&dir)?;
    if v.active.as_deref() == Some(to) {
        println!("Instance {to} of {qm} is active already.");
        return Ok(());
    }
    match ask(&dir, &Request::Switch(to.to_string()))? {
        Answer::Done => {}
        Answer::Failed(e) => return Err(format!("instance {to} did not stand: {e}").into()),
        Answer::View(_) => return Err("an unexpected answer".to_string().into()),
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let mut asked = std::time::Instant::now();
    loop {
        match view(&dir) {
            Ok(v) if v.active.as_deref() == Some(to) => {
                println!("Instance {to} of {qm} is active.");
                return Ok(());
            }
            // The target stands for 10 s at most; on a loaded machine another instance may
            // be elected meanwhile: the active one (whichever) is asked again.
            Ok(v) if v.active.is_some() && asked.elapsed() >= RESWITCH_AFTER => {
                asked = std::time::Instant::now();
                if let Ok(Answer::Done) = ask(&dir, &Request::Switch(to.to_string())) {
                    eprintln!(
                        "sealmq: instance {} is active, not {to}: it was asked again",
                        v.active.as_deref().unwrap_or("?")
                    );
                }
            }
            _ => {}
        }
        if std::time::Instant::now() > deadline {
            return Err(format!("instance {to} did not become active within 60 s").into());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn drain(a: &DrainArgs) -> CliResult {
    let (dir, g) = group_dir(&a.qm)?;
    if a.instance != g.instance {
        return Err(format!(
            "instance {} does not run under this SEALMQ_HOME (this is instance {}): drain it \
             where it runs",
            a.instance, g.instance
        )
        .into());
    }
    let v = view(&dir)?;
    let others: Vec<&str> = v
        .instances
        .iter()
        .filter(|i| i.name != a.instance && i.in_sync == Some(true))
        .map(|i| i.name.as_str())
        .collect();
    let majority = g.instances.len() / 2 + 1;
    if others.len() < majority {
        return Err(format!(
            "draining {} would leave {} of {} instances in sync ({}); the group needs {majority} \
             to go on: bring the others back in sync first",
            a.instance,
            others.len(),
            g.instances.len(),
            if others.is_empty() {
                "none".to_string()
            } else {
                others.join(", ")
            }
        )
        .into());
    }
    if v.active.as_deref() == Some(a.instance.as_str()) {
        switch(&a.qm, others[0])?;
    }
    crate::stop_cmd::stop(crate::stop_cmd::StopArgs {
        qm: a.qm.clone(),
        immediate: false,
    })?;
    println!(
        "Instance {} of {} drained; the group goes on with {}.",
        a.instance,
        a.qm,
        others.join(" and ")
    );
    Ok(())
}

fn ready(qm: &str) -> CliResult {
    let (dir, _) = group_dir(qm)?;
    if !crate::home::running(&dir) {
        return Err(format!("not ready: instance of {qm} is not running").into());
    }
    let st =
        status_of(&dir).ok_or("not ready: the instance has not said its role yet".to_string())?;
    match st.role {
        Role::Active if Client::connect_local(&dir, "sealmq-ready").is_ok() => {
            println!("ready: active");
            Ok(())
        }
        Role::Replica if st.active.is_some() && st.applied_index + 64 >= st.log_index => {
            println!(
                "ready: replica (active instance {})",
                st.active.as_deref().unwrap_or_default()
            );
            Ok(())
        }
        r => Err(format!(
            "not ready: {} (active instance: {}, applied {} of {})",
            r.name(),
            st.active.as_deref().unwrap_or("none"),
            st.applied_index,
            st.log_index
        )
        .into()),
    }
}

use sealmq_client::Client;

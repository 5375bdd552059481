//! An instance of a replicated queue manager (docs/ha.md): `sealmq start` runs it as a replica
//! (its Raft node applies the group's log; its socket and listener refuse applications with
//! the active instance's name) until the group makes it active; it then starts the queue
//! manager on the log it holds, its batches replicated before they count. An active instance
//! that can no longer act as one (another was elected, no majority answers, a batch failed)
//! starts again as a replica: it stops acknowledging at once, and its next life catches up
//! from the group's log.

use crate::CliResult;
use sealmq_ha::{Group, Node, Status};
use sealmq_server::standby::{Standby, Why};
use sealmq_server::{Server, ServerConfig};
use sealmq_storage::log::LogConfig;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// The lock one process of an instance holds for its whole life.
const INSTANCE_LOCK: &str = "ha/instance.lock";

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
    let node = Arc::new(Node::start(&dir, &cfg.name, group.clone(), log_cfg)?);
    let _ = std::fs::write(dir.join("qm.pid"), std::process::id().to_string());
    let why: Why = {
        let (node, qm, me) = (node.clone(), cfg.name.clone(), group.instance.clone());
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
    };
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
    node.wait_active(|| false);
    standby.stop();
    node.release_log();
    // The stored policies' tags verify on whichever instance is active: the group shares the
    // policy key (made now by the first active instance, received by every other).
    let shared = sealmq_engine::policies::ensure_key(&dir)
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
    let server = match server {
        Ok(s) => s,
        Err(e) => {
            tracing::error!("the queue manager could not start on this instance: {e}");
            restart_as_replica();
        }
    };
    tracing::info!(
        "queue manager {} instance {}: active",
        cfg.name,
        group.instance
    );
    eprintln!(
        "sealmq: queue manager {} instance {} is active",
        cfg.name, group.instance
    );
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
                        group.instance
                    );
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

/// Replaces this process by a new one with the same arguments: everything the active
/// instance held (sockets, threads, the engine, its unacknowledged work) goes at once, and the
/// new process starts as a replica.
fn restart_as_replica() -> ! {
    use std::os::unix::process::CommandExt;
    let err = match std::env::current_exe() {
        Ok(exe) => std::process::Command::new(exe)
            .args(std::env::args_os().skip(1))
            .exec(),
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

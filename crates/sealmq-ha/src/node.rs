//! One instance of a replicated queue manager: its Raft node on a tokio runtime of its own,
//! the replicator its active engine's log goes through, and its status (docs/ha.md).

use crate::logstore::LogStore;
use crate::machine::Machine;
use crate::net::Network;
use crate::serve::serve;
use crate::status::{InstanceStatus, Role, Status};
use crate::switch::Handover;
use crate::types::{Batch, Change, Ha, NodeId};
use crate::{Group, HA_DIR};
use openraft::{BasicNode, Config, Raft, RaftMetrics, ServerState, SnapshotPolicy};
use sealmq_storage::log::{
    LogConfig, Lsn, ReplicaStatus, ReplicationStatus, Replicator, ReplicatorRef,
};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// How long a started instance stands for no election (it votes).
const START_HOLD: Duration = Duration::from_millis(1500);
/// The most bytes of log records one Raft entry carries: a batch is replicated as entries of
/// at most this much (a record larger than it alone), so that an AppendEntries — which
/// openraft gives one heartbeat interval — stays small whatever the batch.
const ENTRY_BYTES: usize = 256 * 1024;
/// Entries in one AppendEntries: with [`ENTRY_BYTES`], at most 4 MiB of records.
const PAYLOAD_ENTRIES: u64 = 16;
/// Raft entries kept before a snapshot's: an instance that far behind catches up from the
/// log, one further behind is sent the snapshot (`SEALMQ_HA_SNAPSHOT_KEEP` overrides it).
const KEEP_BEFORE_SNAPSHOT: u64 = 256;
/// How long a snapshot's chunk may wait for its answer (the last one, for the install).
const SNAPSHOT_INSTALL_WAIT: Duration = Duration::from_secs(300);
/// How long a batch may wait for the group before the active instance gives up on it.
const COMMIT_WAIT: Duration = Duration::from_secs(10);
/// Heartbeat and election timing (milliseconds): a failed active instance is replaced within
/// about a second.
const HEARTBEAT_MS: u64 = 100;
const ELECTION_MS: (u64, u64) = (400, 800);

pub struct Node {
    rt: tokio::runtime::Runtime,
    raft: Raft<Ha>,
    group: Arc<Group>,
    machine: Machine,
    store: LogStore,
    dir: PathBuf,
    first_term: u64,
    /// A batch the group did not take: the active engine's log is broken from then on.
    failed: Arc<AtomicBool>,
    /// Requests to the other instances that are not Raft's (switch, view).
    asker: Network,
    serving: Arc<AtomicBool>,
    handover: Arc<Handover>,
    /// Syncs the active engine's log (set once it serves): taking up a replica's snapshot.
    local_sync: Arc<std::sync::OnceLock<crate::takeup::LocalSync>>,
}

impl Node {
    /// Starts this instance's Raft node: its log and state machine (the queue manager's log,
    /// `log_cfg`), its listener for the other instances, and the group's first membership.
    pub fn start(
        qm_dir: &Path,
        qm: &str,
        group: Group,
        log_cfg: LogConfig,
        state: Arc<dyn crate::StateFiles>,
    ) -> Result<Node, String> {
        let dir = qm_dir.join(HA_DIR);
        crate::machine::recover_interrupted_install(qm_dir, &dir)?;
        let rt = runtime()?;
        let store =
            LogStore::open(&dir, log_cfg.dse.clone(), group.me()).map_err(|e| e.to_string())?;
        let dse = log_cfg.dse.clone();
        let machine = Machine::open(qm_dir, log_cfg, &store, state)?;
        let config = raft_config(qm)?;
        let group = Arc::new(group);
        let me = group.me();
        let my_addr = group
            .listen_addr()
            .ok_or("this instance is not in its group")?;
        let listener = rt
            .block_on(tokio::net::TcpListener::bind(&my_addr))
            .map_err(|e| format!("cannot listen for the other instances on {my_addr}: {e}"))?;
        let tls = crate::net::Tls::load(&qm_dir.join("keystore"), qm, dse)?;
        let network = Network {
            group: group.clone(),
            qm: qm.to_string(),
            tls: tls.clone(),
        };
        let asker = Network {
            group: group.clone(),
            qm: qm.to_string(),
            tls: tls.clone(),
        };
        let raft = rt
            .block_on(Raft::new(
                me,
                Arc::new(config),
                network,
                store.clone(),
                machine.clone(),
            ))
            .map_err(|e| format!("cannot start replication: {e}"))?;
        machine.set_raft(raft.clone());
        let serving: Arc<AtomicBool> = Arc::default();
        let view = view_fn(&raft, &group, &store, &machine, &serving);
        let handover = Arc::new(Handover {
            raft: raft.clone(),
            group: group.clone(),
            asker: asker.clone(),
            handing: Arc::default(),
            fence: Arc::default(),
        });
        rt.spawn(serve(
            listener,
            crate::serve::Served {
                raft: raft.clone(),
                group: group.clone(),
                qm: qm.to_string(),
                tls: tls.clone(),
                view,
                handover: handover.clone(),
                machine: machine.clone(),
            },
        ));
        let local_sync: Arc<std::sync::OnceLock<crate::takeup::LocalSync>> = Arc::default();
        rt.spawn(
            crate::takeup::TakeUp {
                raft: raft.clone(),
                group: group.clone(),
                asker: asker.clone(),
                machine: machine.clone(),
                store: store.clone(),
                seal: tls.seal.clone(),
                snap_dir: dir.join(crate::SNAPSHOT_DIR),
                sync: local_sync.clone(),
            }
            .run(),
        );
        form_group(&rt, &raft, &store, &group, &dir);
        // A (re)started instance first listens for the active one: standing at once, before
        // the active instance's heartbeats reach it, would only unseat it for nothing.
        {
            let _g = rt.enter();
            crate::serve::hold_elections(&raft, START_HOLD);
        }
        let first_term = raft.metrics().borrow().current_term;
        let node = Node {
            rt,
            raft,
            group,
            machine,
            store,
            dir,
            first_term,
            failed: Arc::default(),
            asker,
            handover,
            serving,
            local_sync,
        };
        node.spawn_status_writer();
        Ok(node)
    }

    fn metrics(&self) -> RaftMetrics<NodeId, BasicNode> {
        self.raft.metrics().borrow().clone()
    }

    /// Whether this instance leads the group now.
    pub fn is_active(&self) -> bool {
        let m = self.metrics();
        m.state == ServerState::Leader && m.current_leader == Some(self.group.me())
    }

    /// The active instance's name and replication address, when one is known.
    pub fn active(&self) -> Option<(String, String)> {
        let id = self.metrics().current_leader?;
        self.group
            .by_id(id)
            .map(|i| (i.name.clone(), i.addr.clone()))
    }

    /// Waits until this instance is active with every committed entry applied (its log then
    /// holds the whole committed state), or `give_up` says to stop waiting.
    pub fn wait_active(&self, give_up: impl Fn() -> bool) -> bool {
        loop {
            if give_up() {
                return false;
            }
            if self.is_active() {
                let ready = self.rt.block_on(async {
                    tokio::time::timeout(COMMIT_WAIT, self.raft.ensure_linearizable()).await
                });
                if matches!(ready, Ok(Ok(_))) {
                    return true;
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The queue manager serves on this (active) instance from now on: its status says
    /// "active" only then.
    pub fn set_serving(&self) {
        self.serving.store(true, Ordering::Relaxed);
    }

    /// How this (active) instance syncs its engine's log: it then takes up its replicas'
    /// snapshots, so that its Raft log is purged behind them (takeup.rs).
    pub fn set_local_sync(&self, sync: crate::takeup::LocalSync) {
        let _ = self.local_sync.set(sync);
    }

    /// The engine of the now active instance takes over the log (see `Machine`).
    pub fn release_log(&self) {
        self.machine.release_log();
    }

    /// What the active engine's log replicates its batches through.
    pub fn replicator(&self) -> ReplicatorRef {
        ReplicatorRef(Arc::new(RaftReplicator {
            raft: self.raft.clone(),
            rt: self.rt.handle().clone(),
            failed: self.failed.clone(),
            fence: self.handover.fence.clone(),
            view: self.view(),
            counts: Default::default(),
        }))
    }

    /// Whether this instance can no longer act as the active one: it is not the leader, it
    /// has heard from no majority for longer than an election takes, or a batch failed.
    pub fn must_step_down(&self) -> Option<String> {
        let m = self.metrics();
        if self.handover.handing.load(Ordering::Relaxed) {
            return Some("it hands the active role over (sealmq ha switch)".into());
        }
        if self.handover.fence.load(Ordering::Relaxed) {
            // A hand-over is under way: its batches are refused on purpose.
            return None;
        }
        if self.failed.load(Ordering::Relaxed) {
            return Some("a log batch was not replicated".into());
        }
        if let Err(e) = &m.running_state {
            return Some(format!("its replication stopped: {e}"));
        }
        if !(m.state == ServerState::Leader && m.current_leader == Some(self.group.me())) {
            let next = m.current_leader.map_or_else(
                || "none yet".to_string(),
                |l| {
                    self.group
                        .by_id(l)
                        .map_or_else(|| format!("#{l}"), |i| i.name.clone())
                },
            );
            return Some(format!("the group has another active instance ({next})"));
        }
        match m.millis_since_quorum_ack {
            Some(ms) if ms > 2 * ELECTION_MS.1 => {
                Some(format!("no majority of the group has answered for {ms} ms"))
            }
            _ => None,
        }
    }

    /// Gives the group this instance's policy key (the active instance does, before it
    /// serves: the stored policies' tags then verify on whichever instance is active next).
    pub fn share_policy_key(&self, key: &[u8]) -> Result<(), String> {
        let r = self.rt.block_on(async {
            tokio::time::timeout(
                COMMIT_WAIT,
                self.raft.client_write(Change::PolicyKey(key.to_vec())),
            )
            .await
        });
        match r {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) => Err(format!("the policy key was not replicated: {e}")),
            Err(_) => Err("the policy key was not replicated in time".into()),
        }
    }

    /// `sealmq ha switch --to NAME`: the active instance (this one, or asked over the group's
    /// connections) hands its role to that instance (see [`Handover`]).
    pub fn switch_to(&self, name: &str) -> Result<(), String> {
        let m = self.metrics();
        match m.current_leader {
            Some(l) if l == self.group.me() => self.rt.block_on(self.handover.run(name)),
            Some(l) => self.rt.block_on(self.asker.switch(l, name)),
            None => Err("the group has no active instance now".into()),
        }
    }

    /// Stands for no election for `d` (an instance that just handed its role over).
    pub fn hold_elections(&self, d: Duration) {
        let _g = self.rt.enter();
        crate::serve::hold_elections(&self.raft, d);
    }

    /// The active instance's view of the group (this one's when it is active).
    pub fn group_view(&self) -> Result<Status, String> {
        let m = self.metrics();
        match m.current_leader {
            Some(l) if l == self.group.me() => {
                Ok(self.rt.block_on(self.handover.live(self.status())))
            }
            Some(l) => self.rt.block_on(self.asker.view(l)),
            None => Err("the group has no active instance now".into()),
        }
    }

    pub fn status(&self) -> Status {
        self.view().status(&self.metrics())
    }

    fn view(&self) -> View {
        View {
            group: self.group.clone(),
            store: self.store.clone(),
            machine: self.machine.clone(),
            first_term: self.first_term,
            serving: self.serving.clone(),
        }
    }

    /// Keeps `<QM dir>/ha/status.json` current (read by `sealmq status` and readiness checks,
    /// whatever the instance's role).
    fn spawn_status_writer(&self) {
        let mut rx = self.raft.metrics();
        let path = self.dir.join("status.json");
        let view = self.view();
        self.rt.spawn(async move {
            let mut last = String::new();
            loop {
                let m = rx.borrow_and_update().clone();
                view.write(&path, &m, &mut last);
                tokio::select! {
                    r = rx.changed() => if r.is_err() { break },
                    _ = tokio::time::sleep(Duration::from_millis(500)) => {}
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        });
    }

    /// Ends replication (a stopping instance).
    pub fn shutdown(self) {
        let _ = self.rt.block_on(self.raft.shutdown());
        self.rt.shutdown_timeout(Duration::from_secs(2));
    }
}

/// What the status is computed from: a node's parts, without the node.
struct View {
    group: Arc<Group>,
    store: LogStore,
    machine: Machine,
    first_term: u64,
    /// The queue manager serves on this instance (an elected instance is "unknown" until).
    serving: Arc<AtomicBool>,
}

impl View {
    fn status(&self, m: &RaftMetrics<NodeId, BasicNode>) -> Status {
        let me = self.group.me();
        let last = m.last_log_index.unwrap_or(0);
        let backlog_of = |matched: u64| -> u64 { self.store.bytes_after(matched) };
        let instances: Vec<InstanceStatus> = self
            .group
            .instances
            .iter()
            .enumerate()
            .map(|(i, x)| {
                let id = i as u64 + 1;
                let role = if m.current_leader == Some(id) {
                    Role::Active
                } else if m.current_leader.is_some() {
                    Role::Replica
                } else {
                    Role::Unknown
                };
                let matched = m.replication.as_ref().map(|r| {
                    if id == me {
                        last
                    } else {
                        r.get(&id).copied().flatten().map_or(0, |l| l.index)
                    }
                });
                InstanceStatus {
                    name: x.name.clone(),
                    role,
                    in_sync: matched.map(|x| x >= last),
                    backlog: matched.map(backlog_of),
                    replication_address: x.addr.clone(),
                }
            })
            .collect();
        let quorum = m.replication.as_ref().map(|_| {
            let n = instances.iter().filter(|i| i.in_sync == Some(true)).count();
            format!("{n}/{}", instances.len())
        });
        Status {
            instance: self.group.instance.clone(),
            role: if m.current_leader == Some(me) && m.state == ServerState::Leader {
                if self.serving.load(Ordering::Relaxed) {
                    Role::Active
                } else {
                    Role::Unknown
                }
            } else if m.current_leader.is_some() {
                Role::Replica
            } else {
                Role::Unknown
            },
            active: m.current_leader.map(|l| self.name_of(l)),
            term: m.current_term,
            log_index: last,
            applied_index: self.machine.applied_index(),
            quorum,
            instances,
            elections: m.current_term.saturating_sub(self.first_term),
        }
    }

    fn name_of(&self, id: NodeId) -> String {
        self.group
            .by_id(id)
            .map_or_else(|| format!("#{id}"), |i| i.name.clone())
    }

    /// Writes the status file (through a temporary name, so a reader never sees half).
    /// Writes the status when it differs from `last` (what was written before) or the file
    /// is gone.
    fn write(&self, path: &Path, m: &RaftMetrics<NodeId, BasicNode>, last: &mut String) {
        let Ok(text) = serde_json::to_string_pretty(&self.status(m)) else {
            return;
        };
        if text == *last && path.exists() {
            return;
        }
        let tmp = path.with_extension("tmp");
        if std::fs::write(&tmp, &text).is_ok() && std::fs::rename(&tmp, path).is_ok() {
            *last = text;
        }
    }
}

/// The active engine's log batches, made durable on a majority through Raft.
struct RaftReplicator {
    raft: Raft<Ha>,
    rt: tokio::runtime::Handle,
    failed: Arc<AtomicBool>,
    fence: Arc<AtomicBool>,
    view: View,
    counts: Counts,
}

/// What the active instance's replication cost: batches, bytes, the wait for a majority.
#[derive(Default)]
struct Counts {
    batches: AtomicU64,
    bytes: AtomicU64,
    wait_us: AtomicU64,
    wait_us_max: AtomicU64,
}

impl Replicator for RaftReplicator {
    fn replicate(&self, first_lsn: Lsn, last_lsn: Lsn, records: &[u8]) -> Result<(), String> {
        if self.fence.load(Ordering::Relaxed) {
            self.failed.store(true, Ordering::Relaxed);
            return Err("this instance is handing the active role over".into());
        }
        let runs = sealmq_storage::log::split_batch(records, ENTRY_BYTES)
            .map_err(|e| format!("a batch to replicate is damaged: {e}"))?;
        debug_assert!(runs.first().is_none_or(|r| r.0 == first_lsn));
        debug_assert!(runs.last().is_none_or(|r| r.1 == last_lsn));
        let began = std::time::Instant::now();
        let r = self.rt.block_on(async {
            tokio::time::timeout(COMMIT_WAIT, async {
                // Every run submitted in order, then every answer awaited: one commit wait.
                let mut answers = Vec::with_capacity(runs.len());
                for (first_lsn, last_lsn, bytes) in runs {
                    let batch = Batch {
                        first_lsn,
                        last_lsn,
                        records: bytes.to_vec(),
                    };
                    let rx = self
                        .raft
                        .client_write_ff(Change::Log(batch))
                        .await
                        .map_err(|e| e.to_string())?;
                    answers.push(rx);
                }
                for rx in answers {
                    match rx.await {
                        Ok(Ok(_)) => {}
                        Ok(Err(e)) => return Err(e.to_string()),
                        Err(e) => return Err(e.to_string()),
                    }
                }
                Ok(())
            })
            .await
        });
        if matches!(r, Ok(Ok(_))) {
            let c = &self.counts;
            let us = began.elapsed().as_micros() as u64;
            c.batches.fetch_add(1, Ordering::Relaxed);
            c.bytes.fetch_add(records.len() as u64, Ordering::Relaxed);
            c.wait_us.fetch_add(us, Ordering::Relaxed);
            c.wait_us_max.fetch_max(us, Ordering::Relaxed);
        } else {
            self.failed.store(true, Ordering::Relaxed);
        }
        match r {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) => Err(format!("this instance is no longer active: {e}")),
            Err(_) => Err(format!(
                "no majority of the group held the batch within {} s",
                COMMIT_WAIT.as_secs()
            )),
        }
    }

    fn status(&self) -> Option<ReplicationStatus> {
        let st = self.view.status(&self.raft.metrics().borrow().clone());
        let c = &self.counts;
        Some(ReplicationStatus {
            instance: st.instance,
            role: st.role.name().to_ascii_uppercase(),
            quorum: st.quorum.unwrap_or_default(),
            term: st.term,
            log_index: st.log_index,
            applied_index: st.applied_index,
            elections: st.elections,
            batches: c.batches.load(Ordering::Relaxed),
            bytes: c.bytes.load(Ordering::Relaxed),
            wait_us: c.wait_us.load(Ordering::Relaxed),
            wait_us_max: c.wait_us_max.load(Ordering::Relaxed),
            instances: st
                .instances
                .into_iter()
                .map(|i| ReplicaStatus {
                    name: i.name,
                    role: i.role.name().to_ascii_uppercase(),
                    in_sync: i.in_sync,
                    backlog: i.backlog,
                    address: i.replication_address,
                })
                .collect(),
        })
    }
}

/// The replication runtime.
fn runtime() -> Result<tokio::runtime::Runtime, String> {
    // Two workers: a task that blocks (a replica's apply waiting for its log write, a
    // sync on a loaded disk) leaves the other to the Raft core's heartbeats and votes. One
    // worker put faster (16 producers 0.46 of a single queue manager against 0.36-0.41)
    // but the HA suite failed under a full test run's load in two runs of five with it
    // (a switch never completed; a paused-replica test), in none of many with two.
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("sealmq-ha")
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the replication runtime: {e}"))
}

/// The Raft settings of the group.
fn raft_config(qm: &str) -> Result<Config, String> {
    Config {
        cluster_name: qm.to_string(),
        heartbeat_interval: HEARTBEAT_MS,
        election_timeout_min: ELECTION_MS.0,
        election_timeout_max: ELECTION_MS.1,
        max_payload_entries: PAYLOAD_ENTRIES,
        // A replica makes its snapshots from its own checkpoints (machine.rs) and then
        // asks openraft to take them up; entries just before one stay for an instance
        // a little behind.
        snapshot_policy: SnapshotPolicy::Never,
        // The last chunk's answer waits for the snapshot to be installed (its queue
        // files written): seconds for a deep queue manager.
        install_snapshot_timeout: SNAPSHOT_INSTALL_WAIT.as_millis() as u64,
        max_in_snapshot_log_to_keep: std::env::var("SEALMQ_HA_SNAPSHOT_KEEP")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(KEEP_BEFORE_SNAPSHOT),
        ..Default::default()
    }
    .validate()
    .map_err(|e| format!("replication settings: {e}"))
}

/// What the active instance shows of the group (its status), asked by the other instances'
/// and the administrator's status requests; `None` on an instance that does not lead.
fn view_fn(
    raft: &Raft<Ha>,
    group: &Arc<Group>,
    store: &LogStore,
    machine: &Machine,
    serving: &Arc<AtomicBool>,
) -> crate::serve::ViewFn {
    let raft = raft.clone();
    let v = View {
        group: group.clone(),
        store: store.clone(),
        machine: machine.clone(),
        first_term: raft.metrics().borrow().current_term,
        serving: serving.clone(),
    };
    Arc::new(move || {
        let m = raft.metrics().borrow().clone();
        (m.state == ServerState::Leader).then(|| v.status(&m))
    })
}

/// The group is formed once, by its first instance (by name) when it is new; every other
/// instance, and one whose data was lost, waits for the active instance to send it the
/// group's log (two instances forming it at once would stand against each other).
fn form_group(
    rt: &tokio::runtime::Runtime,
    raft: &Raft<Ha>,
    store: &LogStore,
    group: &Group,
    dir: &Path,
) {
    let form = dir.join(crate::FORM_FILE);
    if store.last_index().is_none() && form.exists() && group.me() == 1 {
        let members: BTreeMap<NodeId, BasicNode> = group
            .instances
            .iter()
            .enumerate()
            .map(|(i, x)| (i as u64 + 1, BasicNode::new(&x.addr)))
            .collect();
        if let Err(e) = rt.block_on(raft.initialize(members)) {
            tracing::info!("high availability: the group was formed already ({e})");
        }
    }
    let _ = std::fs::remove_file(&form);
}

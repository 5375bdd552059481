//! The queue manager: objects, recovery from the log and checkpoints, administration.
//!
//! Lock order (never taken in the other direction): `defs` → `locals` → a queue's lock.
//! `apply` is taken shared by anything that changes queue contents after the log made it
//! durable, and exclusively by a checkpoint while it copies the committed state; `active` (the
//! units of work with log records) is taken alone.

use crate::authority::AuthRec;
use crate::channels::{ChannelDef, ChlType};
use crate::error::{MqError, MqResult, mqerr};
use crate::md::Message;
use crate::objects::{QType, QmgrDef, QueueDef};
use crate::queue::{EntryState, LocalQueue, TxId};
use crate::records::{Frame, Record};
use sealmq_storage::checkpoint::{self, CheckpointWriter};
use sealmq_storage::log::{LogConfig, Lsn};
use sealmq_storage::{Log, StorageError};
use sealmq_types::ReasonCode;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

mod checkpoints;
mod compaction;
mod damaged;
mod defaults;
mod policies;
mod pubsub;
mod rebuild;
mod recover;
mod replace;
mod replica;
mod routing;
mod security;
mod services;
mod stats;
mod triggers;
pub use damaged::DAMAGED_DIR;
pub use defaults::default_channel_name;
pub use pubsub::{SubStats, TOPICS_KEPT, TopicStats};
use rebuild::Rebuild;
pub use replace::Replaced;
pub use replica::{install_state, state_key_id, write_state};
pub use security::ChlAuthAction;
pub use services::ServiceObject;

/// How a queue manager is set up.
#[derive(Debug, Clone)]
pub struct QmConfig {
    pub name: String,
    /// The QM's data directory (`log/`, `checkpoint/`).
    pub dir: PathBuf,
    pub segment_bytes: u64,
    pub archive_dir: Option<PathBuf>,
    /// Log bytes after which a checkpoint is taken.
    pub checkpoint_bytes: u64,
    /// Sync the log on commit (tests of non-durable paths only turn it off).
    pub sync: bool,
    /// The administrator principal (the queue manager's own user). `None` turns authority
    /// checks off, for an engine embedded in a trusted process.
    pub admin: Option<String>,
    #[doc(hidden)]
    pub fail_writes: Option<Arc<AtomicBool>>,
    /// Encryption at rest (SPEC §7): the log and checkpoints are sealed with these keys.
    pub dse: Option<Arc<sealmq_storage::dse::Dse>>,
    /// The message cache in bytes, overriding QMGR MSGCACHE (tests and benchmarks that need
    /// messages on disk without filling memory first).
    pub msg_cache_bytes: Option<u64>,
    /// The size at which a queue data or spill file is closed and the next begun (default
    /// 64 MiB; tests use small files to see them roll, empty and compact).
    pub queue_file_bytes: Option<u64>,
    /// A replicated queue manager's active instance: log batches count as durable once a
    /// majority of its group holds them (docs/ha.md).
    pub replicator: Option<sealmq_storage::log::ReplicatorRef>,
    /// A replica's copy of a replicated queue manager's state, recovered only to be
    /// checkpointed (`qm/replica.rs`): units of work still open stay open (listed in the
    /// checkpoint, not backed out) and nothing is written to the log.
    pub replica_copy: bool,
}

impl QmConfig {
    pub fn new(name: &str, dir: impl Into<PathBuf>) -> QmConfig {
        QmConfig {
            name: name.to_string(),
            dir: dir.into(),
            segment_bytes: 64 << 20,
            archive_dir: None,
            checkpoint_bytes: 256 << 20,
            sync: true,
            admin: None,
            fail_writes: None,
            dse: None,
            msg_cache_bytes: None,
            queue_file_bytes: None,
            replicator: None,
            replica_copy: false,
        }
    }
}

/// A local queue's status (DISPLAY QSTATUS).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueStatus {
    pub depth: usize,
    pub input_opens: u32,
    pub output_opens: u32,
    /// Messages in units of work (put or got, not yet committed).
    pub uncommitted: usize,
    pub waiting: usize,
    pub high_water: usize,
    /// Bytes of the queue's files (CURFSIZE).
    pub file_bytes: u64,
    /// The limit of the queue's files (CURMAXFS).
    pub max_file_bytes: u64,
    /// MAXDEPTH.
    pub max_depth: u32,
    /// When a message was last put and got (ms since the epoch; 0: not since start).
    pub last_put_ms: i64,
    pub last_get_ms: i64,
}

impl QueueStatus {
    pub(crate) fn of(st: &crate::queue::QueueState) -> QueueStatus {
        QueueStatus {
            depth: st.depth(),
            input_opens: st.open_input,
            output_opens: st.open_output,
            uncommitted: st.in_uow,
            waiting: st.waiters.len(),
            high_water: st.high_water,
            file_bytes: st.file_bytes(),
            max_file_bytes: st.def.max_file_bytes(),
            max_depth: st.def.max_depth,
            last_put_ms: st.stats.last_put_ms,
            last_get_ms: st.stats.last_get_ms,
        }
    }
}

/// What a start found.
#[derive(Debug, Clone, Default)]
pub struct StartReport {
    pub checkpoint_lsn: Lsn,
    pub records_replayed: u64,
    pub messages: u64,
    pub log_truncated: bool,
    pub backed_out: usize,
    /// The checkpoint after recovery did not fit on the disk: the queue manager serves, and
    /// writes it once there is room.
    pub checkpoint_postponed: bool,
}

pub struct QueueManager {
    pub(crate) cfg: QmConfig,
    pub(crate) log: Log,
    pub(crate) qmgr: RwLock<QmgrDef>,
    pub(crate) defs: RwLock<HashMap<String, QueueDef>>,
    pub(crate) locals: RwLock<HashMap<String, Arc<LocalQueue>>>,
    pub(crate) authrecs: RwLock<Vec<AuthRec>>,
    /// Temporary dynamic queues and the principal that made each: MQ gives the creator every
    /// authority on it (gone with the queue).
    pub(crate) dyn_owners: RwLock<HashMap<String, String>>,
    pub(crate) channels: RwLock<HashMap<String, ChannelDef>>,
    /// Channel authentication records and AUTHINFO objects.
    pub(crate) sec: RwLock<security::SecurityObjects>,
    /// The connections served and their handles (DISPLAY CONN).
    pub(crate) conns: crate::conns::Registry,
    /// When this start began (seconds since the epoch; DISPLAY QMSTATUS).
    pub started: u64,
    /// LISTENER, PROCESS and SERVICE objects.
    pub(crate) svc: RwLock<services::ServiceObjects>,
    /// Publications and deliveries counted per subscription (DISPLAY SBSTATUS).
    pub(crate) sub_stats: Mutex<HashMap<String, pubsub::SubStats>>,
    /// Subscriptions that are given no publication of one connection (MQSO_NOT_OWN_PUBS, a
    /// JMS noLocal subscriber): the id of the connection whose publications they skip, while
    /// it holds them (in memory only).
    pub(crate) not_own: Mutex<HashMap<String, u64>>,
    /// Publications since the start (metrics).
    pub(crate) publications: AtomicU64,
    /// Per topic string published on since the start (at most [`pubsub::TOPICS_KEPT`]).
    pub(crate) topic_stats: Mutex<HashMap<String, pubsub::TopicStats>>,
    /// The server's listeners and services, when a server runs this queue manager.
    ctl: RwLock<services::Controls>,
    pub(crate) policies: RwLock<HashMap<String, sealmq_protect::Policy>>,
    /// Changes whenever a queue's policy is set or removed (starting from the start time, so
    /// that a restart does not repeat an old value): what an application's cached policies
    /// were read at (wire version 7, `Put1At`).
    pub(crate) policy_epoch: std::sync::atomic::AtomicU64,
    pub(crate) apply: RwLock<()>,
    pub(crate) active: Mutex<HashMap<TxId, Lsn>>,
    pub(crate) next_seq: AtomicU64,
    pub(crate) next_tx: AtomicU64,
    pub(crate) next_conn: AtomicU64,
    pub(crate) msgid_counter: AtomicU64,
    pub(crate) quiescing: AtomicBool,
    checkpointing: AtomicBool,
    /// One checkpoint at a time (background and shutdown ones could otherwise race).
    checkpoint_lock: Mutex<()>,
    bytes_at_checkpoint: AtomicU64,
    /// When the last checkpoint for want of space began (ms since the epoch).
    short_checkpoint_ms: AtomicU64,
    /// Queue files and the message cache.
    pub(crate) qctx: Arc<crate::queue::QueueCtx>,
    /// The channel initiator serving this queue manager, when a server runs it.
    chinit: RwLock<Option<Arc<dyn crate::channels::ChannelControl>>>,
}

pub(crate) use sealmq_types::sync::{lock, read, write};

pub(crate) fn same_key(a: &AuthRec, b: &AuthRec) -> bool {
    a.profile == b.profile
        && a.objtype == b.objtype
        && a.principal == b.principal
        && a.group == b.group
}

impl QueueManager {
    /// Creates a new queue manager in `cfg.dir` with its system objects (the engine's
    /// [`crate::create`] also reads its policies).
    pub(crate) fn create_new(cfg: QmConfig) -> MqResult<Arc<QueueManager>> {
        crate::objects::validate_name(&cfg.name)?;
        if cfg.dir.join("log").exists() {
            return mqerr!(
                ObjectAlreadyExists,
                "a queue manager already exists in {}",
                cfg.dir.display()
            );
        }
        let (qm, _) = QueueManager::recover(cfg.clone())?;
        qm.make_new()?;
        Ok(qm)
    }

    /// What a new queue manager is made with: its definition, MQ's default objects and the
    /// CHLAUTH rules that make it safe by default (no SYSTEM.* channel, no channel running as
    /// the queue manager's own user, until the administrator allows it).
    fn make_new(&self) -> MqResult<()> {
        let name = self.cfg.name.clone();
        self.log_durable(&Record::Qmgr(QmgrDef::new(&name)))?;
        *write(&self.qmgr) = QmgrDef::new(&name);
        self.ensure_default_objects()?;
        for r in crate::chlauth::default_rules() {
            self.set_chlauth(r)?;
        }
        Ok(())
    }

    /// Recovers a queue manager whose log may still be empty (the first instance of a
    /// replicated group to be active makes it, and the others receive it through the log).
    pub(crate) fn recover_or_make(cfg: QmConfig) -> MqResult<(Arc<QueueManager>, StartReport)> {
        let (qm, report) = QueueManager::recover(cfg)?;
        if qm.log.last_lsn() == 0 {
            qm.make_new()?;
        }
        Ok((qm, report))
    }

    /// The connections served now, with their open handles.
    pub fn connections(&self) -> Vec<crate::conns::ConnInfo> {
        self.conns.all()
    }

    /// Registers the channel initiator MQSC's channel commands go to.
    pub fn set_chinit(&self, c: Arc<dyn crate::channels::ChannelControl>) {
        *write(&self.chinit) = Some(c);
    }

    pub fn chinit(&self) -> Option<Arc<dyn crate::channels::ChannelControl>> {
        read(&self.chinit).clone()
    }

    /// A fresh identifier, unique in this queue manager (message ids, batch ids).
    pub fn unique_id(&self) -> crate::md::MsgId {
        let mut id = [0u8; 24];
        id[0..4].copy_from_slice(b"SMQ ");
        let name = self.name();
        for (i, b) in name.bytes().take(8).enumerate() {
            id[4 + i] = b;
        }
        id[12..20].copy_from_slice(&(crate::md::now_ms() as u64).to_be_bytes());
        let n = self.msgid_counter.fetch_add(1, Ordering::Relaxed) as u32;
        id[20..24].copy_from_slice(&n.to_be_bytes());
        id
    }

    pub fn name(&self) -> String {
        read(&self.qmgr).name.clone()
    }

    pub fn qmgr(&self) -> QmgrDef {
        read(&self.qmgr).clone()
    }

    /// Appends a record and waits until it is durable.
    pub(crate) fn log_durable(&self, r: &Record) -> MqResult<Lsn> {
        Ok(self.log.append_durable(r.kind(), &r.encode())?)
    }

    pub(crate) fn new_tx(&self) -> TxId {
        self.next_tx.fetch_add(1, Ordering::Relaxed)
    }

    /// Registers `tx` as having log records (for checkpoints) before its first append.
    pub(crate) fn register_tx(&self, tx: TxId) {
        let mut a = lock(&self.active);
        a.entry(tx).or_insert_with(|| self.log.last_lsn());
    }

    pub(crate) fn end_tx(&self, tx: TxId) {
        lock(&self.active).remove(&tx);
    }

    /// The definition of a queue.
    pub fn queue_def(&self, name: &str) -> MqResult<QueueDef> {
        match read(&self.defs).get(name) {
            Some(d) => Ok(d.clone()),
            None => mqerr!(UnknownObjectName, "queue '{name}' is not defined"),
        }
    }

    /// The target of alias queue `name` (`None`: not an alias, or not defined), without a
    /// copy of its definition (the put path asks).
    pub fn alias_target(&self, name: &str) -> Option<String> {
        read(&self.defs)
            .get(name)
            .filter(|d| d.qtype == QType::Alias)
            .map(|d| d.target.clone())
    }

    /// Every queue definition, sorted by name.
    pub fn queue_defs(&self) -> Vec<QueueDef> {
        let mut v: Vec<QueueDef> = read(&self.defs).values().cloned().collect();
        v.sort_by(|a, b| a.name.cmp(&b.name));
        v
    }

    pub(crate) fn local(&self, name: &str) -> Option<Arc<LocalQueue>> {
        read(&self.locals).get(name).cloned()
    }

    /// Current depth of a local queue (committed messages plus uncommitted puts).
    pub fn depth(&self, name: &str) -> MqResult<usize> {
        match self.local(name) {
            Some(q) => Ok(q.lock().depth()),
            None => mqerr!(UnknownObjectName, "local queue '{name}' is not defined"),
        }
    }

    /// DISPLAY QSTATUS: depth, opens, uncommitted messages, waiting getters.
    pub fn queue_status(&self, name: &str) -> MqResult<QueueStatus> {
        let Some(q) = self.local(name) else {
            return mqerr!(UnknownObjectName, "local queue '{name}' is not defined");
        };
        Ok(QueueStatus::of(&q.lock()))
    }

    /// Getters waiting on a local queue (statistics, and tests that must not sleep).
    /// Completes once the record of `t` is durable (or its batch failed), without holding a
    /// thread: for the durable steps of a put or get.
    pub fn durable(
        &self,
        t: &sealmq_storage::log::Ticket,
    ) -> impl std::future::Future<Output = sealmq_storage::Result<()>> + Send + 'static {
        self.log.wait_async(t)
    }

    pub fn waiting(&self, name: &str) -> usize {
        self.local(name)
            .map(|q| q.lock().waiters.len())
            .unwrap_or(0)
    }

    /// DEFINE: `replace` allows redefining an existing queue of the same type.
    pub fn define(&self, def: QueueDef, replace: bool) -> MqResult<()> {
        def.validate()?;
        let mut defs = write(&self.defs);
        let old = defs.get(&def.name).map(|o| o.qtype.name());
        may_redefine("queue", &def.name, replace, old, def.qtype.name())?;
        self.log_durable(&Record::Define(def.clone()))?;
        if def.qtype == QType::Local {
            let mut locals = write(&self.locals);
            match locals.get(&def.name) {
                Some(q) => {
                    let mut st = q.lock();
                    let rekey = st.def.msg_dlv_seq != def.msg_dlv_seq;
                    st.def = def.clone();
                    if rekey {
                        st.rekey();
                    }
                }
                None => {
                    // Files left by an earlier queue of this name are not this queue's.
                    let dir = self.qctx.dir_of(&def.name);
                    if dir.exists() {
                        std::fs::remove_dir_all(&dir).map_err(|e| {
                            MqError::new(
                                ReasonCode::ResourceProblem,
                                format!("cannot remove {}: {e}", dir.display()),
                            )
                        })?;
                    }
                    locals.insert(
                        def.name.clone(),
                        LocalQueue::new(def.clone(), self.qctx.clone()),
                    );
                }
            }
        }
        defs.insert(def.name.clone(), def);
        Ok(())
    }

    /// ALTER: changes a queue's attributes (the caller passes the whole new definition).
    pub fn alter(&self, def: QueueDef) -> MqResult<()> {
        self.queue_def(&def.name)?;
        self.define(def, true)
    }

    /// DELETE: refused while the queue holds messages or is open.
    pub fn delete(&self, name: &str) -> MqResult<()> {
        let mut defs = write(&self.defs);
        if !defs.contains_key(name) {
            return mqerr!(UnknownObjectName, "queue '{name}' is not defined");
        }
        if let Some(q) = self.local(name) {
            let st = q.lock();
            if st.depth() > 0 {
                return mqerr!(
                    QNotEmpty,
                    "queue '{name}' holds {} messages; clear it first",
                    st.depth()
                );
            }
            if st.open_input + st.open_output + st.open_browse > 0 {
                return mqerr!(ObjectInUse, "queue '{name}' is open");
            }
        }
        self.log_durable(&Record::Delete(name.to_string()))?;
        if let Some(q) = write(&self.locals).remove(name) {
            q.lock().destroy();
        }
        let dynamic = defs
            .remove(name)
            .is_some_and(|d| d.def_type == crate::objects::DefType::PermanentDynamic);
        drop(defs);
        if dynamic {
            // The records naming exactly this permanent dynamic queue (its creator's) go
            // with it: a queue made later under the name does not inherit them.
            let mine: Vec<AuthRec> = self
                .authrecs()
                .into_iter()
                .filter(|r| r.objtype == crate::authority::AuthObj::Queue && r.profile == name)
                .collect();
            for r in mine {
                self.delete_authrec(&r.profile, r.objtype, &r.principal, r.group)?;
            }
        }
        Ok(())
    }

    /// CLEAR QLOCAL: removes every committed message; refused during units of work on it.
    pub fn clear(&self, name: &str) -> MqResult<usize> {
        let Some(q) = self.local(name) else {
            return mqerr!(UnknownObjectName, "local queue '{name}' is not defined");
        };
        let _apply = read(&self.apply);
        let mut st = q.lock();
        if st.in_uow > 0 {
            return mqerr!(ObjectInUse, "queue '{name}' has messages in units of work");
        }
        self.log_durable(&Record::Clear(name.to_string()))?;
        Ok(st.clear_all())
    }

    /// DEFINE CHANNEL (`replace` allows redefining).
    pub fn define_channel(&self, def: ChannelDef, replace: bool) -> MqResult<()> {
        def.validate()?;
        let mut chans = write(&self.channels);
        let old = chans.get(&def.name).map(|o| o.chltype.name());
        may_redefine("channel", &def.name, replace, old, def.chltype.name())?;
        self.log_durable(&Record::DefineChannel(def.clone()))?;
        chans.insert(def.name.clone(), def);
        Ok(())
    }

    /// DELETE CHANNEL.
    pub fn delete_channel(&self, name: &str) -> MqResult<()> {
        let mut chans = write(&self.channels);
        if !chans.contains_key(name) {
            return mqerr!(UnknownObjectName, "channel '{name}' is not defined");
        }
        self.log_durable(&Record::DeleteChannel(name.to_string()))?;
        chans.remove(name);
        Ok(())
    }

    pub fn channel(&self, name: &str) -> Option<ChannelDef> {
        read(&self.channels).get(name).cloned()
    }

    /// Every channel definition, sorted by name.
    pub fn channels(&self) -> Vec<ChannelDef> {
        let mut v: Vec<ChannelDef> = read(&self.channels).values().cloned().collect();
        v.sort_by(|a, b| a.name.cmp(&b.name));
        v
    }

    /// ALTER QMGR.
    pub fn alter_qmgr(&self, q: QmgrDef) -> MqResult<()> {
        self.log_durable(&Record::Qmgr(q.clone()))?;
        *write(&self.qmgr) = q;
        self.qctx
            .budget
            .store(self.cache_budget(), Ordering::Relaxed);
        Ok(())
    }

    fn cache_budget(&self) -> u64 {
        self.cfg
            .msg_cache_bytes
            .unwrap_or_else(|| self.qmgr().msg_cache_bytes())
    }

    /// Bytes of messages held in memory now (the message cache).
    pub fn cached_bytes(&self) -> u64 {
        self.qctx.cached.load(Ordering::Relaxed)
    }

    /// Stops new work (2161 to applications).
    pub fn quiesce(&self) {
        self.quiescing.store(true, Ordering::Relaxed);
        let queues: Vec<Arc<LocalQueue>> = read(&self.locals).values().cloned().collect();
        for q in queues {
            q.lock().wake_all();
        }
    }

    pub fn is_quiescing(&self) -> bool {
        self.quiescing.load(Ordering::Relaxed)
    }

    /// Ends the queue manager cleanly: a checkpoint (so the next start is quick), then the log.
    pub fn shutdown(&self) -> MqResult<()> {
        self.quiesce();
        let r = self.checkpoint().map(|_| ());
        self.log.close();
        r
    }

    /// Closes the log as a crash would leave it (no checkpoint); for tests that leak
    /// connections on purpose.
    #[doc(hidden)]
    pub fn close_log_for_tests(&self) {
        self.log.close();
    }

    pub fn data_dir(&self) -> &Path {
        &self.cfg.dir
    }

    /// Log statistics (records, batches, bytes).
    pub fn log_stats(&self) -> sealmq_storage::log::LogStats {
        self.log.stats()
    }

    /// The group of a replicated queue manager as this (active) instance sees it; `None` for
    /// a queue manager on one instance.
    pub fn replication(&self) -> Option<sealmq_storage::log::ReplicationStatus> {
        self.cfg.replicator.as_ref().and_then(|r| r.0.status())
    }
}

/// A temporary dynamic queue (made from a model queue at open, gone at close or restart); a
/// model queue's own definition is not one, whatever its DEFTYPE.
fn is_temporary_queue(d: &QueueDef) -> bool {
    d.qtype == QType::Local && d.def_type == crate::objects::DefType::TemporaryDynamic
}

/// Whether a DEFINE may make `name` when an object of kind `old` may already hold it: only with
/// REPLACE, and only as the same kind (a queue stays of its type, a channel of its CHLTYPE).
fn may_redefine(
    what: &str,
    name: &str,
    replace: bool,
    old: Option<&str>,
    new: &str,
) -> MqResult<()> {
    match old {
        Some(_) if !replace => mqerr!(
            ObjectAlreadyExists,
            "{what} '{name}' already exists (use REPLACE)"
        ),
        Some(old) if old != new => {
            mqerr!(ObjectAlreadyExists, "{what} '{name}' exists as {old}")
        }
        _ => Ok(()),
    }
}

//! Recovery at start: the newest checkpoint read, the log after it replayed, units of work
//! that never ended backed out, the queue manager assembled from what was rebuilt, and a
//! checkpoint taken when a log tail was replayed or an older release's checkpoint read. Each
//! step is a function of its own; [`QueueManager::recover`] names them in order.

use super::{QmConfig, QueueManager, Rebuild, StartReport, checkpoints, write};
use crate::error::MqResult;
use crate::objects::{QType, QmgrDef};
use crate::queue::TxId;
use crate::records::{Frame, Record};
use sealmq_storage::Log;
use sealmq_storage::checkpoint;
use sealmq_storage::log::{LogConfig, Lsn};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

/// What the checkpoint said beyond the objects and messages it rebuilt.
struct FromCheckpoint {
    /// The LSN replay starts from.
    replay_from: Lsn,
    /// The checkpoint's frames version (an older one is converted by a checkpoint now).
    frames_version: u32,
}

impl QueueManager {
    /// Recovers an existing queue manager: loads the newest checkpoint, replays the log after
    /// it, backs out units of work that never ended, and opens the log for new work (the
    /// engine's [`crate::start`] then reads its policies through the MQI).
    pub(crate) fn recover(cfg: QmConfig) -> MqResult<(Arc<QueueManager>, StartReport)> {
        let mut report = StartReport::default();
        let mut rb = Rebuild::new(queue_ctx(&cfg));
        let cp = read_checkpoint(&cfg, &mut rb, &mut report)?;
        rb.store_upto = rb.cp_lsn;
        rb.open_stores()?;
        let log = replay_log(&cfg, cp.replay_from, &mut rb, &mut report)?;
        let still_open = replica_open_units(&cfg, &mut rb);
        back_out_unfinished(&mut rb, &log, &mut report);
        let existing = rb.qmgr.is_some();
        let qm = assemble(cfg, &mut rb, log, still_open);
        place_queues(&qm, &mut rb, &mut report);
        if qm.cfg.replica_copy {
            return Ok((qm, report));
        }
        // A queue manager created by an older release gains the default objects it lacks.
        if existing {
            qm.ensure_default_objects()?;
        }
        // After a crash (a log tail replayed), a checkpoint now: otherwise the tail to replay
        // grows with every crash until the next checkpoint is due. A checkpoint of an older
        // release (messages in the checkpoint, or no index ends) is converted now.
        if report.records_replayed > 0
            || (report.checkpoint_lsn > 0 && cp.frames_version < checkpoints::FRAMES_VERSION)
        {
            qm.checkpoint_after_recovery(&mut report)?;
        }
        Ok((qm, report))
    }

    /// The checkpoint after recovery. On a full disk it may not fit (it writes the messages
    /// replayed from the log to queue files): the queue manager serves anyway — the messages
    /// stay readable from memory and the log, nothing is lost — and the next checkpoint that
    /// fits, once gets and clears have made room, writes them and releases the log.
    fn checkpoint_after_recovery(&self, report: &mut StartReport) -> MqResult<()> {
        match self.checkpoint() {
            Ok(_) => Ok(()),
            Err(e) if e.reason == sealmq_types::ReasonCode::ResourceProblem => {
                let free = sealmq_storage::space::free_space(&self.cfg.dir)
                    .map_or_else(String::new, |(f, _)| format!(" ({} KiB free)", f >> 10));
                tracing::warn!(
                    "the checkpoint after recovery was not written ({e}): the queue manager \
                     serves with the {} message(s) it recovered held in memory and in its \
                     log, and waits for room on the file system of {}{free} to write them \
                     to queue files; gets and CLEAR QLOCAL make room, persistent puts are \
                     refused while the disk is full",
                    report.messages,
                    self.cfg.dir.display()
                );
                report.checkpoint_postponed = true;
                Ok(())
            }
            Err(e) => Err(e),
        }
    }
}

/// Where queue files live and how they are opened, as the configuration says.
fn queue_ctx(cfg: &QmConfig) -> Arc<crate::queue::QueueCtx> {
    let mut sc = sealmq_storage::qstore::StoreConfig::new(cfg.dse.clone());
    sc.sync = cfg.sync;
    sc.file_bytes = cfg.queue_file_bytes.unwrap_or(sc.file_bytes);
    Arc::new(crate::queue::QueueCtx::new(
        cfg.dir.join("queues"),
        sc,
        crate::objects::DEFAULT_MSGCACHE_MB << 20,
    ))
}

/// Reads the newest checkpoint, if there is one, into `rb`.
fn read_checkpoint(
    cfg: &QmConfig,
    rb: &mut Rebuild,
    report: &mut StartReport,
) -> MqResult<FromCheckpoint> {
    let mut cp = FromCheckpoint {
        replay_from: 0,
        frames_version: 0,
    };
    let Some((lsn, mut reader)) =
        checkpoint::latest_with(&cfg.dir.join("checkpoint"), cfg.dse.clone())?
    else {
        return Ok(cp);
    };
    rb.cp_lsn = lsn;
    report.checkpoint_lsn = lsn;
    while let Some(bytes) = reader.next_frame()? {
        rb.checkpoint_frame(Frame::decode(&bytes)?, &mut cp);
    }
    Ok(cp)
}

impl Rebuild {
    /// One frame of the checkpoint.
    fn checkpoint_frame(&mut self, frame: Frame, cp: &mut FromCheckpoint) {
        match frame {
            Frame::Meta {
                next_seq,
                next_tx,
                replay_from: rf,
            } => {
                self.max_seq = next_seq.saturating_sub(1);
                self.max_tx = next_tx.saturating_sub(1);
                cp.replay_from = rf;
            }
            Frame::Qmgr(q) => self.qmgr = Some(q),
            Frame::Queue(d) => {
                if d.qtype == QType::Local {
                    self.msgs.entry(d.name.clone()).or_default();
                }
                self.defs.insert(d.name.clone(), d);
            }
            Frame::Message {
                queue,
                seq,
                backout_count,
                msg,
            } => {
                // Frames version 1: converted to queue files by this start's checkpoint.
                self.msgs
                    .entry(queue)
                    .or_default()
                    .mem
                    .insert(seq, (msg, backout_count));
            }
            Frame::Format(v) => cp.frames_version = v,
            Frame::QueueIndex { queue, file, len } => {
                let end = sealmq_storage::qstore::IndexEnd { file, len };
                self.index_ends.insert(queue, end);
            }
            Frame::Active(tx) => {
                self.active_at_cp.insert(tx);
            }
            Frame::Auth(a) => self.auth.push(a),
            Frame::Channel(c) => {
                self.channels.insert(c.name.clone(), c);
            }
            Frame::ChlAuth(r) => self.sec.set_rule(r),
            Frame::AuthInfo(a) => {
                self.sec.authinfo.insert(a.name.clone(), a);
            }
            f @ (Frame::Listener(_)
            | Frame::Process(_)
            | Frame::Service(_)
            | Frame::Topic(_)
            | Frame::Sub(_)) => self.svc.apply_frame(f),
        }
    }
}

/// Opens the log, replaying every record after `replay_from` into `rb`.
fn replay_log(
    cfg: &QmConfig,
    replay_from: Lsn,
    rb: &mut Rebuild,
    report: &mut StartReport,
) -> MqResult<Log> {
    let mut log_cfg = LogConfig::new(cfg.dir.join("log"));
    log_cfg.dse = cfg.dse.clone();
    log_cfg.segment_bytes = cfg.segment_bytes;
    log_cfg.archive_dir = cfg.archive_dir.clone();
    log_cfg.sync = cfg.sync;
    log_cfg.fail_writes = cfg.fail_writes.clone();
    log_cfg.replicator = cfg.replicator.clone();
    // A replicated batch is durable once a majority's Raft logs hold it (synced there): the
    // active instance's own copy is written without a sync per batch; what a crash takes
    // of its tail comes back from the Raft log when the instance starts again (docs/ha.md).
    log_cfg.durable_elsewhere = cfg.replicator.is_some() || cfg.replica_copy;
    let (log, rec) = Log::open(log_cfg, replay_from, |r| {
        let record = Record::decode(r.kind, r.payload)?;
        rb.record(r.lsn, record);
        Ok(())
    })?;
    report.records_replayed = rec.records;
    report.log_truncated = rec.truncated.is_some();
    Ok(log)
}

/// A replica's copy keeps its open units of work open: they go on in the group's log. Each is
/// listed with the LSN before its first record, as the engine lists its own.
fn replica_open_units(cfg: &QmConfig, rb: &mut Rebuild) -> HashMap<TxId, Lsn> {
    if !cfg.replica_copy {
        return HashMap::new();
    }
    std::mem::take(&mut rb.pending)
        .into_iter()
        .flat_map(|(tx, p)| {
            let before = p.first.saturating_sub(1);
            std::iter::once((tx, before)).chain(p.joined.into_iter().map(move |j| (j, before)))
        })
        .collect()
}

/// Units of work that never ended are backed out, as MQ does at restart (a backout record
/// for one that got messages, whose backout counts rise).
fn back_out_unfinished(rb: &mut Rebuild, log: &Log, report: &mut StartReport) {
    let unfinished: Vec<TxId> = rb.pending.keys().copied().collect();
    report.backed_out = unfinished.len();
    for tx in unfinished {
        if let Some(p) = rb.pending.remove(&tx) {
            let got = p.ops.iter().any(|o| matches!(o, Record::Get { .. }));
            rb.backout_tx(p.ops);
            if got {
                let _ = log.append(Record::Backout(tx).kind(), &Record::Backout(tx).encode());
            }
        }
    }
}

/// The queue manager from what was rebuilt (its queues are placed next).
fn assemble(
    cfg: QmConfig,
    rb: &mut Rebuild,
    log: Log,
    still_open: HashMap<TxId, Lsn>,
) -> Arc<QueueManager> {
    let name = rb
        .qmgr
        .as_ref()
        .map(|q| q.name.clone())
        .unwrap_or_else(|| cfg.name.clone());
    let qctx = rb.qctx.clone();
    Arc::new(QueueManager {
        qmgr: RwLock::new(rb.qmgr.take().unwrap_or_else(|| QmgrDef::new(&name))),
        defs: RwLock::new(HashMap::new()),
        locals: RwLock::new(HashMap::new()),
        authrecs: RwLock::new(std::mem::take(&mut rb.auth)),
        dyn_owners: RwLock::new(HashMap::new()),
        channels: RwLock::new(std::mem::take(&mut rb.channels)),
        sec: RwLock::new(std::mem::take(&mut rb.sec)),
        svc: RwLock::new(std::mem::take(&mut rb.svc)),
        sub_stats: Default::default(),
        not_own: Default::default(),
        publications: AtomicU64::new(0),
        topic_stats: Default::default(),
        conns: Default::default(),
        started: sealmq_types::time::now_secs(),
        ctl: Default::default(),
        policies: RwLock::new(HashMap::new()),
        policy_epoch: std::sync::atomic::AtomicU64::new(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(1),
        ),
        apply: RwLock::new(()),
        active: Mutex::new(still_open),
        next_seq: AtomicU64::new(rb.max_seq + 1),
        next_tx: AtomicU64::new(rb.max_tx + 1),
        next_conn: AtomicU64::new(1),
        msgid_counter: AtomicU64::new(0),
        quiescing: AtomicBool::new(false),
        checkpointing: AtomicBool::new(false),
        checkpoint_lock: Mutex::new(()),
        bytes_at_checkpoint: AtomicU64::new(log.stats().bytes),
        short_checkpoint_ms: AtomicU64::new(0),
        chinit: RwLock::new(None),
        qctx,
        log,
        cfg,
    })
}

/// Every queue definition, and each local queue with its rebuilt messages; the files of
/// queues that no longer exist are removed.
fn place_queues(qm: &QueueManager, rb: &mut Rebuild, report: &mut StartReport) {
    {
        let mut defs = write(&qm.defs);
        let mut locals = write(&qm.locals);
        for (name, def) in std::mem::take(&mut rb.defs) {
            if def.qtype == QType::Local {
                let qrb = rb.msgs.remove(&name).unwrap_or_default();
                let (q, n) = qrb.into_queue(def.clone(), qm.qctx.clone());
                report.messages += n;
                locals.insert(name.clone(), q);
            }
            defs.insert(name, def);
        }
    }
    let leftover: Vec<String> = rb.msgs.keys().cloned().collect();
    for name in leftover {
        rb.deleted(&name);
    }
    qm.qctx.budget.store(qm.cache_budget(), Ordering::Relaxed);
}

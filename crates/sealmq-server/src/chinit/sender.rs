//! The sending end of a message channel (SDR): takes messages from the transmission queue in
//! batches and sends them with assured delivery (SPEC §6).
//!
//! One batch, with persistent messages:
//! 1. get up to BATCHSZ messages under syncpoint (waiting up to BATCHINT for more);
//! 2. record the batch as in doubt (its id and the messages' queue positions) and commit that
//!    record alone: from here a crash must not forget the batch (one recorded but never sent
//!    is simply sent again);
//! 3. send the messages, each with the next sequence number, then EndBatch; the receiver puts
//!    the messages and records the batch id in one unit of work, commits, and answers BatchOk;
//! 4. commit the gets with the record cleared.
//!
//! At the next start the receiver tells the last batch it committed: if it is the in-doubt
//! batch, its messages (back on the transmission queue after a crash or backout) are removed;
//! if not, they are still there and are sent again. Batches of only non-persistent messages
//! skip the records (no log writes).

use super::net::Link;
use super::sync::{InDoubt, Role, SyncQ, SyncRec};
use super::{Initiator, Run, State};
use sealmq_engine::channels::ChannelDef;
use sealmq_engine::{
    Browse, Connection, GetOptions, Got, Hobj, MqError, MqResult, OpenOptions, Persistence,
    QueueManager,
};
use sealmq_types::ReasonCode;
use sealmq_wire::chl::{CHL_VERSIONS, ChlFrame, read_chl, write_chl, write_msg};
use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How a session ended.
enum End {
    /// STOP CHANNEL or the queue manager ending.
    Stopped,
    /// An error retrying cannot fix (the channel stops with it).
    Fatal(String),
    /// A connection failure: retry.
    Retry(String),
    /// DISCINT passed with nothing to send: the channel ends (INACTIVE) until triggered.
    Idle,
}

/// The engine side of a running sender, shared with adapter jobs.
struct Work {
    conn: Connection,
    xq: Hobj,
    sq: SyncQ,
    /// A second connection for the in-doubt record, committed while the batch is open.
    ctl: Connection,
    ctl_sq: SyncQ,
    def: ChannelDef,
}

impl Drop for Work {
    fn drop(&mut self) {
        let _ = self.conn.backout();
        let _ = self.conn.close(&self.xq);
        self.sq.close(&self.conn);
        self.ctl_sq.close(&self.ctl);
    }
}

fn adapter_failed(what: &str) -> MqError {
    MqError::new(
        ReasonCode::UnexpectedError,
        format!("a channel adapter failed {what}"),
    )
}

fn mq(e: MqError) -> End {
    End::Fatal(e.to_string())
}

pub(crate) fn main(ci: Arc<Initiator>, run: Arc<Run>) {
    let mut attempt = 0u32;
    loop {
        if run.stop_requested() {
            break;
        }
        let Some(def) = run.bind(&ci.qm) else {
            break;
        };
        run.status().xmitq = def.xmitq.clone();
        let started = Instant::now();
        match session_on(&ci, &run, &def, None) {
            End::Stopped => break,
            End::Idle => {
                tracing::info!(
                    "channel {} ended: its transmission queue was empty for DISCINT({}) seconds",
                    run.name,
                    def.discint
                );
                run.finish();
                ci.forget(&run);
                return;
            }
            End::Fatal(m) => {
                record_stop(&run, &m);
                break;
            }
            End::Retry(m) => {
                if !run.retry_after(&def, &mut attempt, started, m) {
                    break;
                }
            }
        }
    }
    run.finish();
}

fn record_stop(run: &Run, m: &str) {
    tracing::warn!("channel {} stopped: {m}", run.name);
    run.status().error = m.to_string();
}

/// A server channel (SVR) whose requester connected: it sends on that connection until the
/// connection ends (the requester retries; this end does not).
pub(crate) fn serve_svr(ci: &Arc<Initiator>, def: &ChannelDef, link: Link, peer: &str) {
    let run = ci.receiver_run(&def.name, def.chltype);
    {
        let mut s = run.status();
        s.conname = peer.to_string();
        s.xmitq = def.xmitq.clone();
    }
    match session_on(ci, &run, def, Some(link)) {
        End::Stopped | End::Idle => {}
        End::Fatal(m) | End::Retry(m) => record_stop(&run, &m),
    }
    run.finish();
}

/// Starts the channel with the partner, on `accepted` (a requester's connection) or on a
/// connection of its own to CONNAME — the first address of a list where the partner's queue
/// manager is active — then sends until the session ends.
fn session_on(
    ci: &Arc<Initiator>,
    run: &Arc<Run>,
    def: &ChannelDef,
    accepted: Option<Link>,
) -> End {
    let mut s = match Sending::start(ci, run, def, accepted) {
        Ok(s) => s,
        Err(end) => return end,
    };
    loop {
        if let Err(end) = s.one_batch() {
            return end;
        }
    }
}

/// A started session: the link to the partner, the synchronization record and what the
/// partner agreed to.
struct Sending<'a> {
    ci: &'a Arc<Initiator>,
    run: &'a Arc<Run>,
    def: &'a ChannelDef,
    work: Arc<Work>,
    link: Link,
    rec: SyncRec,
    /// The sequence number of the last message sent.
    seq: u64,
    batchsz: usize,
    max_msg: usize,
    hbint: u32,
    last_io: Instant,
    last_msg: Instant,
}

/// What the partner answered to Start.
struct Agreed {
    rqm: String,
    batchsz: u32,
    max_msg: u32,
    hbint: u32,
    last_seq: u64,
    last_batch: [u8; 24],
}

impl<'a> Sending<'a> {
    /// Opens the transmission queue, starts the channel with the partner, settles the batch
    /// in doubt and marks the channel running.
    fn start(
        ci: &'a Arc<Initiator>,
        run: &'a Arc<Run>,
        def: &'a ChannelDef,
        accepted: Option<Link>,
    ) -> Result<Sending<'a>, End> {
        let qm = &ci.qm;
        if run.stop_requested() {
            return Err(End::Stopped);
        }
        let work = Arc::new(open_work(qm, def).map_err(mq)?);
        let mut rec = work.sq.load(&work.conn).map_err(mq)?;
        run.status().indoubt = rec.indoubt.is_some();
        let start = ChlFrame::Start {
            versions: CHL_VERSIONS.to_vec(),
            channel: def.name.clone(),
            qmgr: qm.name(),
            batchsz: def.batchsz,
            max_msg: def.max_msg_len.min(qm.qmgr().max_msg_len),
            hbint: def.hbint,
            committed_seq: rec.seq,
            indoubt: rec.indoubt.as_ref().map(|d| d.batch),
            reset_seq: rec.reset,
        };
        let (link, ok) = connect(ci, run, def, accepted, &start)?;
        if run.stop_requested() {
            return Err(End::Stopped);
        }
        let agreed = agreed(ok)?;
        settle_in_doubt(&work, &mut rec, &agreed)?;
        if rec.seq > agreed.last_seq {
            return Err(End::Fatal(format!(
                "sequence numbers differ: this end committed {} but {} has only {}; \
                 check for lost messages, then RESET CHANNEL({}) SEQNUM({})",
                rec.seq, agreed.rqm, agreed.last_seq, def.name, agreed.last_seq
            )));
        }
        tracing::info!("channel {} running to {}", def.name, agreed.rqm);
        {
            let mut s = run.status();
            s.state = State::Running;
            s.rqmname = agreed.rqm.clone();
            s.indoubt = false;
            s.error.clear();
            s.cur_seq = agreed.last_seq;
            s.lst_seq = agreed.last_seq;
            s.secprot = link.negotiated.secprot.clone();
            s.sslgroup = link.negotiated.group.clone();
        }
        Ok(Sending {
            ci,
            run,
            def,
            work,
            link,
            rec,
            seq: agreed.last_seq,
            batchsz: agreed.batchsz.clamp(1, def.batchsz.max(1)) as usize,
            max_msg: agreed.max_msg as usize,
            hbint: agreed.hbint,
            last_io: Instant::now(),
            last_msg: Instant::now(),
        })
    }

    /// Gets, sends and commits one batch (nothing, when the transmission queue stayed empty).
    fn one_batch(&mut self) -> Result<(), End> {
        let Some(first) = self.first_message()? else {
            return Ok(());
        };
        self.last_msg = Instant::now();
        self.run.status().substate = "SEND";
        let batch = self.assemble_batch(first)?;
        if batch.frames.is_empty() {
            // Every message went to the error queue (SPLPROT REMOVE failures).
            return self.work.conn.commit().map_err(mq);
        }
        let first_seq = self.seq;
        let last = self.seq + batch.frames.len() as u64;
        let persistent = batch.frames.iter().any(|(p, _)| *p);
        let batch_id = self.ci.qm.unique_id();
        // From here a crash must not forget the batch: it is recorded in doubt before any of
        // it leaves (a batch recorded but never sent is simply sent again).
        if persistent {
            self.record_in_doubt(&batch, batch_id, last)?;
        }
        self.send(&batch, batch_id, first_seq, last, persistent)?;
        self.seq = last;
        self.run.status().cur_seq = last;
        self.await_batch_ok(first_seq, persistent)?;
        self.commit(&batch, batch_id, persistent)
    }

    /// The batch's first message, waiting up to 500 ms (a heartbeat when HBINT passed with
    /// nothing sent); the session ends for a stop, the queue manager ending or DISCINT.
    fn first_message(&mut self) -> Result<Option<Got>, End> {
        if self.run.stop_requested() || self.ci.qm.is_quiescing() {
            let _ = write_chl(&mut self.link.w, &ChlFrame::Close).and_then(|_| self.link.w.flush());
            return Err(End::Stopped);
        }
        // DISCINT: a transmission queue empty this long ends the channel; a trigger (or
        // START CHANNEL) starts it again when messages come.
        let discint = self.def.discint;
        if discint > 0 && self.last_msg.elapsed() >= Duration::from_secs(discint as u64) {
            let _ = write_chl(&mut self.link.w, &ChlFrame::Close).and_then(|_| self.link.w.flush());
            return Err(End::Idle);
        }
        self.run.status().substate = "MQGET";
        let gmo = GetOptions {
            syncpoint: true,
            wait: Some(Duration::from_millis(500)),
            ..Default::default()
        };
        match self.work.conn.get(&self.work.xq, gmo) {
            Ok(g) => Ok(Some(g)),
            Err(e) if e.reason == ReasonCode::NoMsgAvailable => {
                let hbint = self.hbint;
                if hbint > 0 && self.last_io.elapsed() >= Duration::from_secs(hbint as u64) {
                    heartbeat(&mut self.link).map_err(End::Retry)?;
                    self.last_io = Instant::now();
                }
                Ok(None)
            }
            Err(e) if e.reason == ReasonCode::QMgrQuiescing => Err(End::Stopped),
            Err(e) => Err(mq(e)),
        }
    }

    /// The rest of the batch, and protection removal, in an adapter slot.
    fn assemble_batch(&self, first: Got) -> Result<Batch, End> {
        let (qm, work) = (&self.ci.qm, &self.work);
        let protector = self.ci.security.protector();
        let protector = protector.as_deref();
        let (batchsz, max_msg) = (self.batchsz, self.max_msg);
        match self
            .ci
            .adapters
            .run(|| assemble(qm, work, first, batchsz, max_msg, protector))
        {
            Some(Ok(b)) => Ok(b),
            Some(Err(e)) => {
                let _ = work.conn.backout();
                Err(mq(e))
            }
            None => {
                let _ = work.conn.backout();
                Err(End::Fatal("an adapter failed assembling a batch".into()))
            }
        }
    }

    /// Records the batch in doubt and commits that record alone, on the control connection.
    fn record_in_doubt(&self, batch: &Batch, batch_id: [u8; 24], last: u64) -> Result<(), End> {
        let mut r = self.rec.clone();
        r.indoubt = Some(InDoubt {
            batch: batch_id,
            last_seq: last,
            xmitq_seqs: batch.xmitq_seqs.clone(),
        });
        let work = &self.work;
        let stored = self
            .ci
            .adapters
            .run(|| work.ctl_sq.store(&work.ctl, &r))
            .unwrap_or_else(|| Err(adapter_failed("recording a batch in doubt")));
        if let Err(e) = stored {
            let _ = work.conn.backout();
            return Err(mq(e));
        }
        self.run.status().indoubt = true;
        Ok(())
    }

    /// The batch's frames and its EndBatch, in a dispatcher slot.
    fn send(
        &mut self,
        batch: &Batch,
        batch_id: [u8; 24],
        first_seq: u64,
        last: u64,
        persistent: bool,
    ) -> Result<(), End> {
        let link = &mut self.link;
        let sent = self.ci.adapters.net(|| -> std::io::Result<()> {
            for (i, (p, data)) in batch.frames.iter().enumerate() {
                write_msg(&mut link.w, first_seq + 1 + i as u64, *p, data)?;
                link.sent(data.len() as u64 + 18)?;
            }
            let end = ChlFrame::EndBatch {
                batch: batch_id,
                last_seq: last,
                persistent,
            };
            write_chl(&mut link.w, &end)?;
            link.w.flush()
        });
        let sent = sent.unwrap_or_else(|| Err(std::io::Error::other("a dispatcher failed")));
        if let Err(e) = sent {
            let _ = self.work.conn.backout();
            return Err(End::Retry(format!("sending to {}: {e}", self.def.conname)));
        }
        Ok(())
    }

    /// The partner's answer to the batch: waited for outside any slot, read in a dispatcher
    /// slot. Anything but BatchOk backs the batch out (its messages stay here).
    fn await_batch_ok(&mut self, first_seq: u64, persistent: bool) -> Result<(), End> {
        let link = &mut self.link;
        let arrived = std::io::BufRead::fill_buf(&mut link.r).map(|b| b.len());
        let reply = match arrived {
            Ok(0) => Ok(None),
            Ok(_) => self
                .ci
                .adapters
                .net(|| read_chl(&mut link.r, sealmq_wire::HELLO_MAX))
                .unwrap_or(Ok(None)),
            Err(e) => Err(sealmq_wire::WireError::Io(e)),
        };
        self.last_io = Instant::now();
        let (conname, seq) = (&self.def.conname, self.seq);
        let end = match reply {
            Ok(Some(ChlFrame::BatchOk { .. })) => return Ok(()),
            Ok(Some(ChlFrame::Refused { reason, detail })) => {
                // The receiver backed the batch out: the messages stay here.
                let _ = self.work.conn.backout();
                if persistent {
                    let _ = self.work.ctl_sq.store(&self.work.ctl, &self.rec);
                }
                self.run.status().indoubt = false;
                return Err(End::Fatal(format!(
                    "{conname} could not take batch {}..{seq} [{reason}]: {detail}",
                    first_seq + 1
                )));
            }
            Ok(Some(f)) => End::Retry(format!("unexpected {f:?} from the partner")),
            Ok(None) => End::Retry(format!(
                "{conname} closed the connection with batch {seq} in doubt"
            )),
            Err(e) => End::Retry(format!("{conname}: {e} (batch {seq} in doubt)")),
        };
        let _ = self.work.conn.backout();
        Err(end)
    }

    /// Commits the batch's gets with the record cleared, and counts it.
    fn commit(&mut self, batch: &Batch, batch_id: [u8; 24], persistent: bool) -> Result<(), End> {
        if persistent {
            self.rec.seq = self.seq;
            self.rec.batch = batch_id;
            self.rec.indoubt = None;
        }
        let (work, rec) = (&self.work, &self.rec);
        let committed = self
            .ci
            .adapters
            .run(|| -> sealmq_engine::MqResult<()> {
                if persistent {
                    work.sq.replace(&work.conn, rec)?;
                }
                work.conn.commit()
            })
            .unwrap_or_else(|| Err(adapter_failed("committing a batch")));
        if let Err(e) = committed {
            let _ = work.conn.backout();
            return Err(mq(e));
        }
        let bytes: u64 = batch.frames.iter().map(|(_, d)| d.len() as u64).sum();
        let mut s = self.run.status();
        s.indoubt = false;
        s.msgs += batch.frames.len() as u64;
        s.last_msg = sealmq_types::time::now_secs();
        s.substate = "MQGET";
        s.bytes_sent += bytes;
        s.batch_done(batch.frames.len() as u64);
        s.lst_seq = self.seq;
        s.key_resets = self.link.rekeys;
        Ok(())
    }
}

/// The link to the partner with its answer to Start: on `accepted`, or the first address of
/// CONNAME that serves.
fn connect(
    ci: &Initiator,
    run: &Run,
    def: &ChannelDef,
    accepted: Option<Link>,
    start: &ChlFrame,
) -> Result<(Link, ChlFrame), End> {
    match accepted {
        Some(mut link) => {
            run.set_sock(link.tcp.try_clone().ok());
            match super::net::exchange(&mut link, start) {
                Ok(ok) => Ok((link, ok)),
                Err(e) => Err(End::Retry(format!("{}: {e}", def.conname))),
            }
        }
        None => match Link::connect_first(def, &ci.keystore_dir, start) {
            Ok(a) => {
                run.set_sock(a.link.tcp.try_clone().ok());
                run.status().conname = a.addr;
                Ok((a.link, a.answer))
            }
            Err(e) => Err(End::Retry(e)),
        },
    }
}

/// What the partner agreed to, or why it refused.
fn agreed(ok: ChlFrame) -> Result<Agreed, End> {
    match ok {
        ChlFrame::StartOk {
            qmgr,
            batchsz,
            max_msg,
            hbint,
            last_seq,
            last_batch,
            ..
        } => Ok(Agreed {
            rqm: qmgr,
            batchsz,
            max_msg,
            hbint,
            last_seq,
            last_batch,
        }),
        ChlFrame::Refused { reason, detail } => Err(End::Retry(format!(
            "the partner refused the channel [{reason}]: {detail}"
        ))),
        f => Err(End::Retry(format!("unexpected {f:?} from the partner"))),
    }
}

/// Settles the batch in doubt: the partner committed it, so its messages go; otherwise they
/// are still on the transmission queue and go again.
fn settle_in_doubt(work: &Work, rec: &mut SyncRec, agreed: &Agreed) -> Result<(), End> {
    if let Some(d) = rec.indoubt.take()
        && d.batch == agreed.last_batch
    {
        if let Err(e) = remove_seqs(&work.conn, &work.xq, &d.xmitq_seqs) {
            let _ = work.conn.backout();
            return Err(mq(e));
        }
        rec.seq = d.last_seq;
        rec.batch = d.batch;
    }
    rec.reset = None;
    if let Err(e) = work
        .sq
        .replace(&work.conn, rec)
        .and_then(|_| work.conn.commit())
    {
        let _ = work.conn.backout();
        return Err(mq(e));
    }
    Ok(())
}

fn heartbeat(link: &mut Link) -> Result<(), String> {
    write_chl(&mut link.w, &ChlFrame::Heartbeat)
        .and_then(|_| link.w.flush())
        .map_err(|e| format!("heartbeat: {e}"))?;
    match read_chl(&mut link.r, sealmq_wire::HELLO_MAX) {
        Ok(Some(ChlFrame::HeartbeatOk)) => Ok(()),
        Ok(other) => Err(format!("heartbeat answered with {other:?}")),
        Err(e) => Err(format!("heartbeat: {e}")),
    }
}

fn open_work(qm: &Arc<QueueManager>, def: &ChannelDef) -> MqResult<Work> {
    let conn = Connection::connect_internal(qm)?;
    let xq = conn.open(
        &def.xmitq,
        OpenOptions {
            input_exclusive: true,
            browse: true,
            ..Default::default()
        },
    )?;
    let sq = SyncQ::open(&conn, Role::Sender, &def.name)?;
    let ctl = Connection::connect_internal(qm)?;
    let ctl_sq = SyncQ::open(&ctl, Role::Sender, &def.name)?;
    Ok(Work {
        conn,
        xq,
        sq,
        ctl,
        ctl_sq,
        def: def.clone(),
    })
}

struct Batch {
    /// (persistent, transmission-queue message) in order.
    frames: Vec<(bool, Vec<u8>)>,
    xmitq_seqs: Vec<u64>,
}

/// Gets the rest of a batch (after `first`), applying SPLPROT(REMOVE).
fn assemble(
    qm: &QueueManager,
    w: &Work,
    first: Got,
    batchsz: usize,
    max_msg: usize,
    protector: Option<&sealmq_protect::Protector>,
) -> MqResult<Batch> {
    let mut got = vec![first];
    let deadline = Instant::now() + Duration::from_millis(w.def.batchint as u64);
    let mut bytes = got[0].payload.len();
    while got.len() < batchsz && bytes < 8 * 1024 * 1024 {
        let now = Instant::now();
        let wait = (w.def.batchint > 0 && now < deadline).then(|| deadline - now);
        match w.conn.get(
            &w.xq,
            GetOptions {
                syncpoint: true,
                wait,
                ..Default::default()
            },
        ) {
            Ok(g) => {
                bytes += g.payload.len();
                got.push(g);
            }
            Err(e) if e.reason == ReasonCode::NoMsgAvailable => break,
            Err(e) => return Err(e),
        }
    }
    let mut b = Batch {
        frames: Vec::with_capacity(got.len()),
        xmitq_seqs: Vec::with_capacity(got.len()),
    };
    for g in got {
        b.xmitq_seqs.push(g.seq);
        let persistent = g.md.persistence == Persistence::Persistent;
        if g.payload.len() > max_msg + 64 * 1024 {
            // Too big for the partner: to this queue manager's dead-letter queue, as stored.
            let why = MqError::new(
                ReasonCode::MsgTooBigForChannel,
                format!(
                    "message of {} bytes exceeds the channel's MAXMSGL {max_msg}",
                    g.payload.len()
                ),
            );
            w.conn
                .put_dead_letter(&why, &w.def.xmitq, &qm.name(), &g.md, &g.payload, true)?;
            continue;
        }
        let data = match super::splprot::remove(qm, &w.conn, &w.def, g.payload, protector)? {
            Some(d) => d,
            None => continue,
        };
        b.frames.push((persistent, data));
    }
    Ok(b)
}

/// Removes the messages at `seqs` from the transmission queue, in the connection's unit of
/// work (the caller commits).
fn remove_seqs(conn: &Connection, xq: &Hobj, seqs: &[u64]) -> MqResult<usize> {
    let want: std::collections::HashSet<u64> = seqs.iter().copied().collect();
    let mut removed = 0;
    let mut browse = Browse::First;
    loop {
        let g = match conn.get(
            xq,
            GetOptions {
                browse,
                ..Default::default()
            },
        ) {
            Ok(g) => g,
            Err(e) if e.reason == ReasonCode::NoMsgAvailable => break,
            Err(e) => return Err(e),
        };
        browse = Browse::Next;
        if want.contains(&g.seq) {
            conn.get(
                xq,
                GetOptions {
                    browse: Browse::MsgUnderCursor,
                    syncpoint: true,
                    ..Default::default()
                },
            )?;
            removed += 1;
            if removed == want.len() {
                break;
            }
        }
    }
    Ok(removed)
}

/// RESOLVE CHANNEL for a stopped sender: commit removes the in-doubt batch's messages from the
/// transmission queue (the partner has them), backout leaves them to be sent again. The number
/// of messages in the batch, `None` when nothing was in doubt.
pub(crate) fn resolve(
    qm: &Arc<QueueManager>,
    def: &ChannelDef,
    commit: bool,
) -> MqResult<Option<usize>> {
    let w = open_work(qm, def)?;
    let mut rec: SyncRec = w.sq.load(&w.conn)?;
    let Some(d) = rec.indoubt.take() else {
        return Ok(None);
    };
    let n = d.xmitq_seqs.len();
    if commit {
        remove_seqs(&w.conn, &w.xq, &d.xmitq_seqs)?;
        rec.seq = d.last_seq;
        rec.batch = d.batch;
    }
    w.sq.replace(&w.conn, &rec)?;
    w.conn.commit()?;
    Ok(Some(n))
}

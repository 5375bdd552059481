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
    let qm = &ci.qm;
    if run.stop_requested() {
        return End::Stopped;
    }
    let work = match open_work(qm, def) {
        Ok(w) => Arc::new(w),
        Err(e) => return mq(e),
    };
    let mut rec = match work.sq.load(&work.conn) {
        Ok(r) => r,
        Err(e) => return mq(e),
    };
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
    let (mut link, ok) = match accepted {
        Some(mut link) => {
            run.set_sock(link.tcp.try_clone().ok());
            match super::net::exchange(&mut link, &start) {
                Ok(ok) => (link, ok),
                Err(e) => return End::Retry(format!("{}: {e}", def.conname)),
            }
        }
        None => match Link::connect_first(def, &ci.keystore_dir, &start) {
            Ok(a) => {
                run.set_sock(a.link.tcp.try_clone().ok());
                run.status().conname = a.addr;
                (a.link, a.answer)
            }
            Err(e) => return End::Retry(e),
        },
    };
    if run.stop_requested() {
        return End::Stopped;
    }
    let (batchsz, max_msg, hbint, last_seq, last_batch, rqm) = match ok {
        ChlFrame::StartOk {
            qmgr,
            batchsz,
            max_msg,
            hbint,
            last_seq,
            last_batch,
            ..
        } => (batchsz, max_msg, hbint, last_seq, last_batch, qmgr),
        ChlFrame::Refused { reason, detail } => {
            return End::Retry(format!(
                "the partner refused the channel [{reason}]: {detail}"
            ));
        }
        f => return End::Retry(format!("unexpected {f:?} from the partner")),
    };
    // Settle the batch in doubt.
    // The partner committed it: its messages go. Otherwise they are still on the transmission
    // queue and go again.
    if let Some(d) = rec.indoubt.take()
        && d.batch == last_batch
    {
        if let Err(e) = remove_seqs(&work.conn, &work.xq, &d.xmitq_seqs) {
            let _ = work.conn.backout();
            return mq(e);
        }
        rec.seq = d.last_seq;
        rec.batch = d.batch;
    }
    rec.reset = None;
    if let Err(e) = work
        .sq
        .replace(&work.conn, &rec)
        .and_then(|_| work.conn.commit())
    {
        let _ = work.conn.backout();
        return mq(e);
    }
    if rec.seq > last_seq {
        return End::Fatal(format!(
            "sequence numbers differ: this end committed {} but {rqm} has only {last_seq}; \
             check for lost messages, then RESET CHANNEL({}) SEQNUM({last_seq})",
            rec.seq, def.name
        ));
    }
    tracing::info!("channel {} running to {rqm}", def.name);
    {
        let mut s = run.status();
        s.state = State::Running;
        s.rqmname = rqm;
        s.indoubt = false;
        s.error.clear();
        s.cur_seq = last_seq;
        s.lst_seq = last_seq;
    }
    let mut seq = last_seq;
    let batchsz = batchsz.clamp(1, def.batchsz.max(1)) as usize;
    let mut last_io = Instant::now();
    let mut last_msg = Instant::now();
    loop {
        if run.stop_requested() || qm.is_quiescing() {
            let _ = write_chl(&mut link.w, &ChlFrame::Close).and_then(|_| link.w.flush());
            return End::Stopped;
        }
        // DISCINT: a transmission queue empty this long ends the channel; a trigger (or
        // START CHANNEL) starts it again when messages come.
        if def.discint > 0 && last_msg.elapsed() >= Duration::from_secs(def.discint as u64) {
            let _ = write_chl(&mut link.w, &ChlFrame::Close).and_then(|_| link.w.flush());
            return End::Idle;
        }
        run.status().substate = "MQGET";
        let first = match work.conn.get(
            &work.xq,
            GetOptions {
                syncpoint: true,
                wait: Some(Duration::from_millis(500)),
                ..Default::default()
            },
        ) {
            Ok(g) => g,
            Err(e) if e.reason == ReasonCode::NoMsgAvailable => {
                if hbint > 0 && last_io.elapsed() >= Duration::from_secs(hbint as u64) {
                    match heartbeat(&mut link) {
                        Ok(()) => last_io = Instant::now(),
                        Err(m) => return End::Retry(m),
                    }
                }
                continue;
            }
            Err(e) if e.reason == ReasonCode::QMgrQuiescing => return End::Stopped,
            Err(e) => return mq(e),
        };
        last_msg = Instant::now();
        run.status().substate = "SEND";
        // The rest of the batch, and protection removal, in an adapter slot.
        let protector = ci.security.protector();
        let protector = protector.as_deref();
        let batch = match ci
            .adapters
            .run(|| assemble(qm, &work, first, batchsz, max_msg as usize, protector))
        {
            Some(Ok(b)) => b,
            Some(Err(e)) => {
                let _ = work.conn.backout();
                return mq(e);
            }
            None => {
                let _ = work.conn.backout();
                return End::Fatal("an adapter failed assembling a batch".into());
            }
        };
        if batch.frames.is_empty() {
            // Every message went to the error queue (SPLPROT REMOVE failures).
            if let Err(e) = work.conn.commit() {
                return mq(e);
            }
            continue;
        }
        let first_seq = seq;
        let last = seq + batch.frames.len() as u64;
        let persistent = batch.frames.iter().any(|(p, _)| *p);
        let bytes: u64 = batch.frames.iter().map(|(_, d)| d.len() as u64).sum();
        let batch_id = qm.unique_id();
        // From here a crash must not forget the batch: it is recorded in doubt before any of
        // it leaves (a batch recorded but never sent is simply sent again).
        if persistent {
            let mut r = rec.clone();
            r.indoubt = Some(InDoubt {
                batch: batch_id,
                last_seq: last,
                xmitq_seqs: batch.xmitq_seqs.clone(),
            });
            let stored = ci
                .adapters
                .run(|| work.ctl_sq.store(&work.ctl, &r))
                .unwrap_or_else(|| Err(adapter_failed("recording a batch in doubt")));
            if let Err(e) = stored {
                let _ = work.conn.backout();
                return mq(e);
            }
            run.status().indoubt = true;
        }
        // The frames, in a dispatcher slot.
        let sent = ci.adapters.net(|| -> std::io::Result<()> {
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
            let _ = work.conn.backout();
            return End::Retry(format!("sending to {}: {e}", def.conname));
        }
        seq = last;
        run.status().cur_seq = seq;
        // Wait for the answer outside any slot, then read it in a dispatcher slot.
        let arrived = std::io::BufRead::fill_buf(&mut link.r).map(|b| b.len());
        let reply = match arrived {
            Ok(0) => Ok(None),
            Ok(_) => ci
                .adapters
                .net(|| read_chl(&mut link.r, sealmq_wire::HELLO_MAX))
                .unwrap_or(Ok(None)),
            Err(e) => Err(sealmq_wire::WireError::Io(e)),
        };
        last_io = Instant::now();
        match reply {
            Ok(Some(ChlFrame::BatchOk { .. })) => {}
            Ok(Some(ChlFrame::Refused { reason, detail })) => {
                // The receiver backed the batch out: the messages stay here.
                let _ = work.conn.backout();
                if persistent {
                    let _ = work.ctl_sq.store(&work.ctl, &rec);
                }
                run.status().indoubt = false;
                return End::Fatal(format!(
                    "{} could not take batch {}..{seq} [{reason}]: {detail}",
                    def.conname,
                    first_seq + 1
                ));
            }
            Ok(Some(f)) => {
                let _ = work.conn.backout();
                return End::Retry(format!("unexpected {f:?} from the partner"));
            }
            Ok(None) => {
                let _ = work.conn.backout();
                return End::Retry(format!(
                    "{} closed the connection with batch {seq} in doubt",
                    def.conname
                ));
            }
            Err(e) => {
                let _ = work.conn.backout();
                return End::Retry(format!("{}: {e} (batch {seq} in doubt)", def.conname));
            }
        }
        if persistent {
            rec.seq = seq;
            rec.batch = batch_id;
            rec.indoubt = None;
        }
        let committed = ci
            .adapters
            .run(|| -> sealmq_engine::MqResult<()> {
                if persistent {
                    work.sq.replace(&work.conn, &rec)?;
                }
                work.conn.commit()
            })
            .unwrap_or_else(|| Err(adapter_failed("committing a batch")));
        if let Err(e) = committed {
            let _ = work.conn.backout();
            return mq(e);
        }
        let mut s = run.status();
        s.indoubt = false;
        s.msgs += batch.frames.len() as u64;
        s.last_msg = sealmq_types::time::now_secs();
        s.substate = "MQGET";
        s.bytes_sent += bytes;
        s.batches += 1;
        s.lst_seq = seq;
        s.key_resets = link.rekeys;
    }
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

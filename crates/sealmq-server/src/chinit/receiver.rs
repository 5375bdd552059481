//! The receiving end of a message channel (RCVR), on the listener thread of the connection its
//! sender made (SPEC §6). It reads a batch, then an adapter delivers it: each message to its
//! destination (a local queue, or the transmission queue to the next queue manager), with
//! SPLPROT(ASPOLICY) applied, put retries (MRRTY/MRTMR) when the queue is full or put-inhibited,
//! then the dead-letter queue; the channel's sync record is replaced and everything commits in
//! one unit of work before BatchOk. A message that cannot be delivered anywhere (no DLQ) backs
//! the batch out and stops the channel: the messages stay on the sender's transmission queue.

use super::sync::{Role, SyncQ, SyncRec};
use super::{Initiator, Run, State};
use sealmq_engine::channels::{ChannelDef, ChlType};
use sealmq_engine::xqh::TransmissionHeader;
use sealmq_engine::{Connection, Hobj, MqError, MqResult, OpenOptions, PutOptions};
use sealmq_types::ReasonCode;
use sealmq_types::sync::lock;
use sealmq_wire::chl::{CHL_VERSIONS, ChlFrame, read_chl, write_chl};
use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::net::TcpStream;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Who connected, as the listener saw it.
pub struct PeerInfo {
    /// TLS: the partner certificate's subject DN and the suite negotiated.
    pub tls: Option<(String, String)>,
    /// TLS: the protocol and key-exchange group negotiated (SECPROT, SSLGROUP).
    pub negotiated: sealmq_wire::tls::Agreed,
    pub addr: String,
    pub sock: Option<TcpStream>,
}

struct Work {
    conn: Connection,
    sq: SyncQ,
    def: ChannelDef,
    /// Whose authority the channel's puts carry: its MCAUSER (or what CHLAUTH mapped), else
    /// the queue manager's own user. PUTAUT(CTX): each message's user id instead.
    principal: String,
    handles: Mutex<HashMap<(String, String, String), Hobj>>,
}

impl Drop for Work {
    fn drop(&mut self) {
        let _ = self.conn.backout();
        for (_, h) in lock(&self.handles).drain() {
            let _ = self.conn.close(&h);
        }
        self.sq.close(&self.conn);
    }
}

pub(crate) fn refuse(w: &mut impl Write, reason: ReasonCode, detail: String) {
    tracing::warn!("channel refused: {detail}");
    let _ = write_chl(
        w,
        &ChlFrame::Refused {
            reason: reason.code(),
            detail,
        },
    )
    .and_then(|_| w.flush());
}

/// Checks the channel definition against what connected — type, SSLCIPH, SSLPEER — and the
/// channel authentication records against the partner (its address, certificate and queue
/// manager name `partner_qm`). Returns the definition and the user the channel runs as.
pub(crate) fn admit(
    ci: &Initiator,
    channel: &str,
    peer: &PeerInfo,
    want: ChlType,
    partner_qm: &str,
) -> Result<(ChannelDef, String), (ReasonCode, String)> {
    let def = match ci.qm.channel(channel) {
        Some(d) if d.chltype == want => d,
        Some(d) => {
            return Err((
                ReasonCode::UnknownChannelName,
                format!(
                    "channel '{channel}' on {} is a {} channel, not {}",
                    ci.qm.name(),
                    d.chltype.name(),
                    want.name()
                ),
            ));
        }
        None => {
            return Err((
                ReasonCode::UnknownChannelName,
                format!(
                    "no {w} channel '{channel}' is defined on {}: DEFINE CHANNEL({channel}) CHLTYPE({w})",
                    ci.qm.name(),
                    w = want.name()
                ),
            ));
        }
    };
    sealmq_engine::channels::tls_requirements(
        &def,
        peer.tls
            .as_ref()
            .map(|(dn, suite)| (dn.as_str(), suite.as_str())),
        "the partner",
    )
    .map_err(|d| (ReasonCode::SslInitializationError, d))?;
    let ip = crate::admit::ip_of(&peer.addr);
    let partner = sealmq_engine::chlauth::Partner {
        channel,
        svrconn: false,
        address: &ip,
        sslpeer: peer.tls.as_ref().map(|(dn, _)| dn.as_str()),
        clntuser: None,
        qmname: Some(partner_qm),
    };
    let user = match ci.qm.check_channel(&partner, &channel_user(&ci.qm, &def)) {
        sealmq_engine::chlauth::Decision::Allow { user, warnings, .. } => {
            for w in warnings {
                ci.security.events.log(&format!("CHLAUTH warning: {w}"));
            }
            user
        }
        sealmq_engine::chlauth::Decision::Block { rule, detail } => {
            let m =
                format!("channel {channel} from {ip} ({partner_qm}) refused by {rule}: {detail}");
            ci.security.events.log(&m);
            return Err((ReasonCode::NotAuthorized, m));
        }
    };
    Ok((def, user))
}

/// The user a receiving channel runs as without a CHLAUTH mapping: its MCAUSER, else the
/// queue manager's own user (which the default CHLAUTH rules refuse).
pub(crate) fn channel_user(qm: &sealmq_engine::QueueManager, def: &ChannelDef) -> String {
    if def.mcauser.is_empty() {
        qm.admin().unwrap_or_default().to_string()
    } else {
        def.mcauser.clone()
    }
}

/// Serves a channel whose sender opened with `start` (a RCVR channel).
pub fn serve(
    ci: &Arc<Initiator>,
    start: ChlFrame,
    r: impl BufRead,
    mut w: impl Write,
    peer: PeerInfo,
) {
    let ChlFrame::Start { channel, qmgr, .. } = &start else {
        return;
    };
    let (def, principal) = match admit(ci, channel, &peer, ChlType::Rcvr, qmgr) {
        Ok(d) => d,
        Err((reason, detail)) => return refuse(&mut w, reason, detail),
    };
    let run = ci.receiver_run(&def.name, def.chltype);
    if let (Some(s), ChlFrame::Start { hbint, .. }) = (&peer.sock, &start) {
        set_silence_limit(s, (*hbint).min(def.hbint));
    }
    run.set_sock(peer.sock);
    {
        let mut s = run.status();
        s.conname = peer.addr.clone();
        s.secprot = peer.negotiated.secprot.clone();
        s.sslgroup = peer.negotiated.group.clone();
    }
    serve_as(ci, &run, &def, &principal, start, r, w);
    run.finish();
}

/// A sender heartbeats every HBINT seconds when it has nothing to send: a receiver that hears
/// nothing for twice that (and a minute's grace) takes the partner for dead and ends, backing
/// out the batch it was receiving.
pub(crate) fn set_silence_limit(s: &std::net::TcpStream, hbint: u32) {
    if hbint > 0 {
        let _ = s.set_read_timeout(Some(Duration::from_secs(2 * hbint as u64 + 60)));
    }
}

/// The receiving end of channel `def` (a RCVR, or a RQSTR whose server answered) once the
/// sender's `start` has arrived. The caller finishes `run`.
pub(crate) fn serve_as(
    ci: &Arc<Initiator>,
    run: &Arc<Run>,
    def: &ChannelDef,
    principal: &str,
    start: ChlFrame,
    mut r: impl BufRead,
    mut w: impl Write,
) {
    let ChlFrame::Start {
        versions,
        channel,
        qmgr: sender_qm,
        batchsz,
        max_msg,
        hbint,
        reset_seq,
        ..
    } = start
    else {
        return;
    };
    if !versions.contains(&1) {
        refuse(
            &mut w,
            ReasonCode::UnexpectedError,
            format!(
                "no common channel protocol version (this end speaks {CHL_VERSIONS:?}, the partner {versions:?})"
            ),
        );
        return;
    }
    let qm = &ci.qm;
    run.status().rqmname = sender_qm.clone();
    let work = match open_work(qm, def, principal) {
        Ok(w) => Arc::new(w),
        Err(e) => {
            refuse(&mut w, e.reason, e.to_string());
            run.status().error = e.to_string();
            return;
        }
    };
    let mut rec = match work.sq.load(&work.conn) {
        Ok(r) => r,
        Err(e) => {
            refuse(&mut w, e.reason, e.to_string());
            return;
        }
    };
    if rec.stopped {
        refuse(
            &mut w,
            ReasonCode::UnknownChannelName,
            format!(
                "channel '{channel}' is stopped on {}: START CHANNEL({channel})",
                qm.name()
            ),
        );
        run.status().error = "stopped by STOP CHANNEL".into();
        return;
    }
    if let Some(s) = reset_seq {
        rec.seq = s;
        if let Err(e) = work.sq.store(&work.conn, &rec) {
            refuse(&mut w, e.reason, e.to_string());
            return;
        }
    }
    let max_msg = max_msg.min(def.max_msg_len).min(qm.qmgr().max_msg_len);
    let ok = ChlFrame::StartOk {
        version: 1,
        qmgr: qm.name(),
        batchsz: batchsz.min(def.batchsz).max(1),
        max_msg,
        hbint: hbint.min(def.hbint),
        last_seq: rec.seq,
        last_batch: rec.batch,
    };
    if write_chl(&mut w, &ok).and_then(|_| w.flush()).is_err() {
        return;
    }
    tracing::info!("channel {channel} running (receiving)");
    {
        let mut s = run.status();
        s.state = State::Running;
        s.cur_seq = rec.seq;
        s.lst_seq = rec.seq;
    }
    let end = receive(ci, run, &work, &mut rec, &mut r, &mut w, max_msg);
    if let Err(m) = end {
        tracing::warn!("channel {channel} ended: {m}");
        run.status().error = m;
    }
}

fn open_work(
    qm: &Arc<sealmq_engine::QueueManager>,
    def: &ChannelDef,
    principal: &str,
) -> MqResult<Work> {
    let conn = Connection::connect_internal(qm)?;
    let sq = SyncQ::open(&conn, Role::Receiver, &def.name)?;
    Ok(Work {
        conn,
        sq,
        def: def.clone(),
        principal: principal.to_string(),
        handles: Mutex::new(HashMap::new()),
    })
}

#[allow(clippy::too_many_arguments)]
fn receive(
    ci: &Arc<Initiator>,
    run: &Arc<Run>,
    work: &Arc<Work>,
    rec: &mut SyncRec,
    r: &mut impl BufRead,
    w: &mut impl Write,
    max_msg: u32,
) -> Result<(), String> {
    let max_frame = max_msg as usize + sealmq_wire::FRAME_OVERHEAD;
    let mut expect = rec.seq;
    let mut batch: Vec<(bool, Vec<u8>)> = Vec::new();
    let mut bytes = 0u64;
    loop {
        let f = next_frame(ci, r, w, max_frame)?;
        match f {
            ChlFrame::Msg {
                seq,
                persistent,
                data,
            } => {
                if seq != expect + 1 {
                    let m = format!(
                        "message sequence number {seq} arrived, {} expected: RESET CHANNEL on the sender",
                        expect + 1
                    );
                    refuse(w, ReasonCode::UnexpectedError, m.clone());
                    return Err(m);
                }
                expect = seq;
                bytes += data.len() as u64;
                batch.push((persistent, data));
            }
            ChlFrame::EndBatch {
                batch: id,
                last_seq,
                persistent,
            } => {
                let msgs = std::mem::take(&mut batch);
                let end = BatchEnd {
                    id,
                    last_seq,
                    persistent,
                    bytes: std::mem::take(&mut bytes),
                };
                end_batch(ci, run, work, rec, w, msgs, end)?;
            }
            ChlFrame::Heartbeat => {
                write_chl(w, &ChlFrame::HeartbeatOk)
                    .and_then(|_| w.flush())
                    .map_err(|e| e.to_string())?;
            }
            ChlFrame::Close => {
                run.set_state(State::Stopped);
                return Ok(());
            }
            other => {
                let m = format!("unexpected {other:?} on a receiving channel");
                refuse(w, ReasonCode::UnexpectedError, m.clone());
                return Err(m);
            }
        }
    }
}

/// The next frame: waited for outside any slot, read in a dispatcher slot; a protocol error
/// is answered before the channel closes (the batch being received backs out: the sender
/// still has its messages).
fn next_frame(
    ci: &Arc<Initiator>,
    r: &mut impl BufRead,
    w: &mut impl Write,
    max_frame: usize,
) -> Result<ChlFrame, String> {
    // Wait for data outside any slot; read the frame in a dispatcher slot.
    match r.fill_buf() {
        Ok([]) => return Err("the sender closed the connection".into()),
        Ok(_) => {}
        Err(e) => return Err(e.to_string()),
    }
    match ci.adapters.net(|| read_chl(r, max_frame)) {
        Some(Ok(Some(f))) => Ok(f),
        Some(Ok(None)) => Err("the sender closed the connection".into()),
        Some(Err(e)) => {
            // Not the protocol: say so before closing; the batch being received backs out
            // (the sender still has its messages).
            if let sealmq_wire::WireError::Protocol(m) = &e {
                refuse(
                    w,
                    ReasonCode::UnexpectedError,
                    format!("protocol error: {m}; closing the channel"),
                );
            }
            Err(e.to_string())
        }
        None => Err("a dispatcher failed reading a frame".into()),
    }
}

/// A batch's end as the sender sent it, with the bytes its messages held.
struct BatchEnd {
    /// The batch's id (the sync record's).
    id: [u8; 24],
    last_seq: u64,
    persistent: bool,
    bytes: u64,
}

/// A batch delivered in an adapter slot and confirmed (BatchOk), its sync record moved on
/// and the channel's status counted; a batch that cannot be delivered backs out and ends
/// the channel.
fn end_batch(
    ci: &Arc<Initiator>,
    run: &Arc<Run>,
    work: &Arc<Work>,
    rec: &mut SyncRec,
    w: &mut impl Write,
    msgs: Vec<(bool, Vec<u8>)>,
    end: BatchEnd,
) -> Result<(), String> {
    let n = msgs.len() as u64;
    let mut next = rec.clone();
    next.seq = end.last_seq;
    next.batch = end.id;
    let protector = ci.security.protector();
    let outcome = ci
        .adapters
        .run(|| {
            deliver(
                &ci.qm,
                work,
                msgs,
                end.persistent,
                &next,
                protector.as_deref(),
            )
        })
        .unwrap_or_else(|| {
            Err(MqError::new(
                ReasonCode::UnexpectedError,
                "an adapter failed delivering the batch".to_string(),
            ))
        });
    if let Err(e) = outcome {
        let _ = work.conn.backout();
        let m = format!("batch ending {} backed out: {e}", end.last_seq);
        refuse(w, e.reason, m.clone());
        return Err(m);
    }
    *rec = next;
    ci.adapters
        .net(|| {
            write_chl(
                w,
                &ChlFrame::BatchOk {
                    last_seq: end.last_seq,
                },
            )
            .and_then(|_| w.flush())
        })
        .unwrap_or_else(|| Err(std::io::Error::other("a dispatcher failed")))
        .map_err(|e| e.to_string())?;
    let mut s = run.status();
    s.msgs += n;
    s.last_msg = sealmq_types::time::now_secs();
    s.bytes_rcvd += end.bytes;
    s.batch_done(n);
    s.cur_seq = end.last_seq;
    s.lst_seq = end.last_seq;
    Ok(())
}

/// Puts a batch (on an adapter) and commits it with the sync record.
fn deliver(
    qm: &sealmq_engine::QueueManager,
    w: &Work,
    msgs: Vec<(bool, Vec<u8>)>,
    persistent: bool,
    next: &SyncRec,
    protector: Option<&sealmq_protect::Protector>,
) -> MqResult<()> {
    for (p, data) in msgs {
        let syncpoint = p || !w.def.npm_fast;
        put_one(qm, w, &data, syncpoint, protector)?;
    }
    if persistent {
        w.sq.replace(&w.conn, next)?;
    }
    w.conn.commit()
}

fn put_one(
    qm: &sealmq_engine::QueueManager,
    w: &Work,
    data: &[u8],
    syncpoint: bool,
    protector: Option<&sealmq_protect::Protector>,
) -> MqResult<()> {
    let (h, payload) = match TransmissionHeader::unwrap(data) {
        Ok(x) => x,
        Err(e) => {
            // Not a transmission message: keep it, with the reason, on the DLQ.
            let md = sealmq_engine::Md::default();
            let why = MqError::new(
                ReasonCode::UnexpectedError,
                format!("channel {}: {e}", w.def.name),
            );
            return w.conn.put_dead_letter(&why, "", "", &md, data, syncpoint);
        }
    };
    let local = h.remote_qm.is_empty() || h.remote_qm == qm.name();
    let payload = if local {
        super::splprot::apply(qm, &w.def, &h.remote_q, &h.md, payload, protector)?
    } else {
        payload
    };
    let mut attempt = 0u32;
    loop {
        let mut md = h.md.clone();
        let r = put_to(w, &h.remote_q, &h.remote_qm, &mut md, &payload, syncpoint);
        let e = match r {
            Ok(()) => return Ok(()),
            Err(e) => e,
        };
        if matches!(e.reason, ReasonCode::QFull | ReasonCode::PutInhibited) && attempt < w.def.mrrty
        {
            attempt += 1;
            std::thread::sleep(Duration::from_millis(w.def.mrtmr.max(1) as u64));
            continue;
        }
        if matches!(
            e.reason,
            ReasonCode::QMgrQuiescing
                | ReasonCode::ResourceProblem
                | ReasonCode::SyncpointLimitReached
        ) {
            return Err(e);
        }
        // USEDLQ(NO): the message stays with the sender; the batch backs out and the
        // channel ends with the reason, as MQ's.
        if !w.def.usedlq {
            return Err(MqError::new(
                e.reason,
                format!(
                    "'{}' at '{}' cannot take the message ({}) and channel {} has USEDLQ(NO)",
                    h.remote_q, h.remote_qm, e.detail, w.def.name
                ),
            ));
        }
        return w
            .conn
            .put_dead_letter(
                &e,
                &h.remote_q,
                &h.remote_qm,
                &h.md,
                &payload,
                syncpoint,
            )
            .map_err(|d| {
                MqError::new(
                    e.reason,
                    format!(
                        "'{}' at '{}' cannot take the message ({}), and the dead-letter queue cannot either ({})",
                        h.remote_q, h.remote_qm, e.detail, d.detail
                    ),
                )
            });
    }
}

fn put_to(
    w: &Work,
    q: &str,
    qmgr: &str,
    md: &mut sealmq_engine::Md,
    payload: &[u8],
    syncpoint: bool,
) -> MqResult<()> {
    // Whose authority this put carries: the channel's user, or under PUTAUT(CTX) the user id
    // in the message's context — never the queue manager's own (a partner could name it).
    let principal = if w.def.putaut_ctx && !md.user_id.is_empty() {
        if w.conn.qm().admin() == Some(md.user_id.as_str()) {
            return Err(MqError::new(
                ReasonCode::NotAuthorized,
                format!(
                    "channel {}: PUTAUT(CTX) does not put as the queue manager's own user '{}'",
                    w.def.name, md.user_id
                ),
            ));
        }
        md.user_id.clone()
    } else {
        w.principal.clone()
    };
    let key = (q.to_string(), qmgr.to_string(), principal);
    let mut hs = lock(&w.handles);
    if !hs.contains_key(&key) {
        // Every check an application of that principal meets: authority on the queue (or the
        // transmission queue, or the queue-manager alias), and no puts to system queues.
        let h = w.conn.open_as(&key.2, q, qmgr, OpenOptions::output())?;
        hs.insert(key.clone(), h);
    }
    let Some(h) = hs.get(&key) else {
        return Err(MqError::new(
            ReasonCode::UnexpectedError,
            "handle vanished".to_string(),
        ));
    };
    let r = w.conn.put(
        h,
        md,
        payload,
        PutOptions {
            syncpoint,
            pass_context: true,
        },
    );
    if r.is_err()
        && let Some(h) = hs.remove(&key)
    {
        // The definition may have changed (deleted, altered): open afresh next time.
        let _ = w.conn.close(&h);
    }
    r
}

//! MQPUT and MQPUT1 (SPEC §3), in the order the queue manager works: the handle may put; the
//! queue that stores the message (for a remote queue, its transmission queue); room on disk
//! for what the log must hold; the message's size against MAXMSGL; the descriptor filled as MQ
//! fills it; the stored message (behind a transmission header for another queue manager); a
//! place on the queue (MAXDEPTH, MAXFSIZE); the log record; the message made visible, or left
//! to the unit of work's commit.

use super::{Connection, Hobj, Op, OpenOptions, PutOptions, Target, triggers};
use crate::error::{MqError, MqResult, mqerr};
use crate::md::{Md, Message, NONE_ID, Persistence, now_ms};
use crate::objects::DefType;
use crate::qm::read;
use crate::queue::{EntryState, LocalQueue, TxId};
use crate::records::Record;
use sealmq_types::sync::lock;
use std::sync::Arc;
use std::sync::atomic::Ordering;

/// The queue a put stores its message on, and what of its definition the put needs (read once,
/// under its lock).
struct Dest {
    q: Arc<LocalQueue>,
    /// For a remote queue: the queue and queue manager the message is addressed to.
    remote: Option<(String, String)>,
    max_msg_len: usize,
    def_persistent: bool,
    def_priority: u8,
    max_depth: usize,
    /// A temporary dynamic queue: in memory only, no persistent messages.
    temporary: bool,
}

impl Dest {
    fn of(h: &Hobj) -> Dest {
        let (q, remote) = match &h.target {
            Target::Local(q) => (q.clone(), None),
            Target::Remote { xmitq, rname, rqm } => {
                (xmitq.clone(), Some((rname.clone(), rqm.clone())))
            }
        };
        let st = q.lock();
        let d = &st.def;
        let (max_msg_len, def_persistent, def_priority, max_depth, temporary) = (
            d.max_msg_len as usize,
            d.def_persistent,
            d.def_priority,
            d.max_depth as usize,
            d.def_type == DefType::TemporaryDynamic,
        );
        drop(st);
        Dest {
            q,
            remote,
            max_msg_len,
            def_persistent,
            def_priority,
            max_depth,
            temporary,
        }
    }
}

/// A put taken as far as it goes without blocking (the event-driven server's MQPUT).
pub enum PutStep {
    Done,
    /// A persistent put outside a unit of work: the message turns visible once
    /// [`DurablePut::ticket`] is durable; then [`Connection::put_durable`].
    Durable(DurablePut),
}

/// A persistent put outside a unit of work, waiting for its record to be durable.
pub struct DurablePut {
    q: Arc<LocalQueue>,
    seq: u64,
    msg: Arc<Message>,
    tx: TxId,
    ticket: sealmq_storage::log::Ticket,
}

impl DurablePut {
    pub fn ticket(&self) -> &sealmq_storage::log::Ticket {
        &self.ticket
    }
}

impl Connection {
    /// MQPUT.
    pub fn put(&self, h: &Hobj, md: &mut Md, payload: &[u8], pmo: PutOptions) -> MqResult<()> {
        let step = self.put_step(h, md, payload, pmo)?;
        self.put_waited(step)
    }

    /// Completes a put's step on this thread (waiting for the log when it must).
    fn put_waited(&self, step: PutStep) -> MqResult<()> {
        match step {
            PutStep::Done => Ok(()),
            PutStep::Durable(d) => {
                let r = self.qm.log.wait(&d.ticket);
                self.put_durable(d, r)
            }
        }
    }

    /// MQPUT as far as it goes without blocking: a persistent message outside a unit of work
    /// is logged and turns visible only once its record is durable ([`PutStep::Durable`]).
    pub fn put_step(
        &self,
        h: &Hobj,
        md: &mut Md,
        payload: &[u8],
        pmo: PutOptions,
    ) -> MqResult<PutStep> {
        self.check_running()?;
        may_put(h)?;
        let dest = Dest::of(h);
        self.check_disk(md, &dest)?;
        self.check_size(md, payload, &dest)?;
        self.fill_descriptor(md, &dest, &pmo)?;
        // IBM MQ AMS's envelope is stored with format MQFMT_NONE, as IBM's interceptor writes
        // it and requires when it reads (the envelope's header keeps the original format).
        if sealmq_protect::is_ibm_envelope(payload) {
            md.format = "        ".into();
        }
        let msg = Arc::new(stored(md, payload, dest.remote.clone()));
        let persistent = msg.is_persistent();
        let seq = self.qm.next_seq.fetch_add(1, Ordering::Relaxed);
        let mut uow = lock(&self.uow);
        let tx = if pmo.syncpoint {
            let max_u = read(&self.qm.qmgr).max_uncommitted();
            if uow.as_ref().is_some_and(|u| u.ops.len() >= max_u) {
                return mqerr!(
                    SyncpointLimitReached,
                    "more than MAXUMSGS({max_u}) uncommitted operations in one unit of work"
                );
            }
            self.uow_tx(&mut uow)
        } else {
            self.qm.new_tx()
        };
        reserve(&dest, seq, &msg, tx)?;
        let ticket = if persistent {
            Some(self.log_put(&dest.q, seq, &msg, tx, pmo.syncpoint)?)
        } else {
            None
        };
        if pmo.syncpoint {
            // Visible at commit (`uow.rs`).
            let u = uow.get_or_insert_with(Default::default);
            u.logged |= persistent;
            u.ops.push(Op::Put { q: dest.q, seq });
            drop(uow);
            if persistent {
                self.qm.maybe_checkpoint();
            }
            return Ok(PutStep::Done);
        }
        drop(uow);
        if let Some(ticket) = ticket {
            return Ok(PutStep::Durable(DurablePut {
                q: dest.q,
                seq,
                msg,
                tx,
                ticket,
            }));
        }
        if let Some(d) = self.make_visible(&dest.q, seq, &msg) {
            triggers::fire(&self.qm, &d);
        }
        Ok(PutStep::Done)
    }

    /// Completes a persistent put outside a unit of work once its record's wait ended
    /// (`waited`): the message turns visible, or leaves the queue when the record could not
    /// be written.
    pub fn put_durable(&self, d: DurablePut, waited: sealmq_storage::Result<()>) -> MqResult<()> {
        let DurablePut {
            q, seq, msg, tx, ..
        } = d;
        if let Err(e) = waited {
            unput(&q, seq, &msg);
            self.qm.end_tx(tx);
            return Err(e.into());
        }
        let trigger = self.make_visible(&q, seq, &msg);
        self.qm.end_tx(tx);
        if let Some(d) = trigger {
            triggers::fire(&self.qm, &d);
        }
        self.qm.maybe_checkpoint();
        Ok(())
    }

    /// MQPUT1: open, put, close.
    pub fn put1(&self, name: &str, md: &mut Md, payload: &[u8], pmo: PutOptions) -> MqResult<()> {
        let step = self.put1_step(name, md, payload, pmo)?;
        self.put_waited(step)
    }

    /// MQPUT1 as far as it goes without blocking (see [`Self::put_step`]); the handle is
    /// closed before the put's record is durable (the message's queue is held by the step).
    pub fn put1_step(
        &self,
        name: &str,
        md: &mut Md,
        payload: &[u8],
        pmo: PutOptions,
    ) -> MqResult<PutStep> {
        let h = self.open(name, OpenOptions::output())?;
        let r = self.put_step(&h, md, payload, pmo);
        let c = self.close(&h);
        match (r, c) {
            (Ok(step), Ok(())) => Ok(step),
            // Put but not closed: the put completes, the close's failure is reported.
            (Ok(step), Err(e)) => self.put_waited(step).and(Err(e)),
            (Err(e), _) => Err(e),
        }
    }

    /// A disk that filled: what fills the log waits until gets and clears make room (the
    /// log's reserve keeps those possible; storage `space.rs`).
    fn check_disk(&self, md: &Md, dest: &Dest) -> MqResult<()> {
        let logged = md.persistence == Persistence::Persistent
            || (md.persistence == Persistence::AsQueueDef && dest.def_persistent);
        if logged && !dest.temporary && self.qm.log.space_short() {
            // Space may have come back (freed by hand): a checkpoint will find out.
            self.qm.maybe_checkpoint();
            return mqerr!(
                ResourceProblem,
                "the queue manager's disk is full: persistent messages are refused until gets or \
                 CLEAR QLOCAL make room (nothing committed is lost); free space on the file system \
                 of {}",
                self.qm.data_dir().display()
            );
        }
        Ok(())
    }

    /// The message properties are valid, and with the payload (as MQ counts them) fit the
    /// queue manager's and the queue's MAXMSGL.
    fn check_size(&self, md: &Md, payload: &[u8], dest: &Dest) -> MqResult<()> {
        if let Err((reason, detail)) = sealmq_mqi::props::check_all(&md.properties) {
            return Err(MqError::new(reason, detail));
        }
        let len = payload.len() + sealmq_mqi::props::encoded_len(&md.properties);
        let qm_max = read(&self.qm.qmgr).max_msg_len as usize;
        if len > qm_max {
            return mqerr!(
                MsgTooBigForQMgr,
                "message of {len} bytes (payload and properties) exceeds the queue manager's \
                 MAXMSGL {qm_max}"
            );
        }
        if len > dest.max_msg_len {
            return mqerr!(
                MsgTooBigForQ,
                "message of {len} bytes (payload and properties) exceeds MAXMSGL {} of '{}'",
                dest.max_msg_len,
                dest.q.name
            );
        }
        Ok(())
    }

    /// Fills the descriptor as the queue manager does: persistence and priority from the
    /// queue's defaults, a message id, the context (unless passed), the reply-to queue manager.
    fn fill_descriptor(&self, md: &mut Md, dest: &Dest, pmo: &PutOptions) -> MqResult<()> {
        self.fill_defaults(md, dest.def_persistent, dest.def_priority, pmo);
        if md.persistence == Persistence::Persistent && dest.temporary {
            return mqerr!(
                OptionsError,
                "a temporary dynamic queue cannot hold persistent messages"
            );
        }
        Ok(())
    }

    /// What a put and a publication fill alike: persistence and priority left to the
    /// definition (a queue's, a topic's), a message id, the context (unless passed), no
    /// backout count, the reply-to queue manager.
    pub(crate) fn fill_defaults(
        &self,
        md: &mut Md,
        def_persistent: bool,
        def_priority: u8,
        pmo: &PutOptions,
    ) {
        if md.persistence == Persistence::AsQueueDef {
            md.persistence = if def_persistent {
                Persistence::Persistent
            } else {
                Persistence::NotPersistent
            };
        }
        if md.priority < 0 {
            md.priority = i32::from(def_priority);
        }
        md.priority = md.priority.min(9);
        if md.msg_id == NONE_ID {
            md.msg_id = self.qm.unique_id();
        }
        if !pmo.pass_context {
            md.put_time_ms = now_ms();
            md.user_id = self.user.clone();
            md.put_appl_name = self.appl.clone();
        }
        md.backout_count = 0;
        if !md.reply_to_q.is_empty() && md.reply_to_qmgr.is_empty() {
            md.reply_to_qmgr = self.qm.name();
        }
    }

    /// Appends the PUT record without waiting (a unit of work's commit waits, or the put's
    /// [`PutStep::Durable`]). A record that could not be written takes the message off the
    /// queue again.
    fn log_put(
        &self,
        q: &Arc<LocalQueue>,
        seq: u64,
        msg: &Arc<Message>,
        tx: TxId,
        syncpoint: bool,
    ) -> MqResult<sealmq_storage::log::Ticket> {
        self.qm.register_tx(tx);
        let bytes = Record::encode_put(tx, !syncpoint, &q.name, seq, msg);
        match self.qm.log.append(Record::PUT_KIND, &bytes) {
            Ok(t) => Ok(t),
            Err(e) => {
                unput(q, seq, msg);
                if !syncpoint {
                    self.qm.end_tx(tx);
                }
                Err(e.into())
            }
        }
    }

    /// A put outside a unit of work turns visible: one waiting getter is woken; the queue's
    /// definition when this message is a trigger event.
    fn make_visible(
        &self,
        q: &Arc<LocalQueue>,
        seq: u64,
        msg: &Arc<Message>,
    ) -> Option<crate::objects::QueueDef> {
        let _a = read(&self.qm.apply);
        let mut st = q.lock();
        st.set_state(seq, EntryState::Visible);
        st.notify(msg);
        st.trigger_due(msg, || self.qm.qmgr().trig_int_ms())
            .then(|| st.def.clone())
    }
}

/// A message whose record could not be written leaves its queue again.
fn unput(q: &LocalQueue, seq: u64, msg: &Message) {
    let mut st = q.lock();
    st.remove(seq);
    st.stats.unput(
        msg.payload.len(),
        msg.md.persistence == Persistence::Persistent,
    );
}

/// The handle was opened for output and puts are allowed on what it opened.
fn may_put(h: &Hobj) -> MqResult<()> {
    if h.closed.load(Ordering::Acquire) {
        return mqerr!(HobjError, "'{}' is closed", h.name);
    }
    if !h.opts.output {
        return mqerr!(NotOpenForOutput, "'{}' was not opened for output", h.name);
    }
    if !h.put_allowed {
        return mqerr!(
            PutInhibited,
            "puts to '{}' are inhibited (PUT(DISABLED))",
            h.name
        );
    }
    Ok(())
}

/// The message as stored: on a transmission queue behind a transmission header that names its
/// destination and keeps its own descriptor (docs/storage.md).
fn stored(md: &Md, payload: &[u8], remote: Option<(String, String)>) -> Message {
    let mut stored_md = md.clone();
    let stored = match remote {
        Some((rname, rqm)) => {
            stored_md.format = crate::xqh::FORMAT.into();
            crate::xqh::TransmissionHeader {
                remote_q: rname,
                remote_qm: rqm,
                md: md.clone(),
            }
            .wrap(payload)
        }
        None => payload.to_vec(),
    };
    Message {
        expires_at_ms: (md.expiry > 0).then(|| md.put_time_ms + md.expiry as i64 * 100),
        md: stored_md,
        payload: stored,
    }
}

/// A place on the queue for the message, `Putting(tx)` until it turns visible: MAXDEPTH counts
/// uncommitted puts, and every message (a non-persistent one may be spilled to the queue's
/// files when the message cache is full) counts against MAXFSIZE.
fn reserve(dest: &Dest, seq: u64, msg: &Arc<Message>, tx: TxId) -> MqResult<()> {
    let mut st = dest.q.lock();
    if st.depth() >= dest.max_depth {
        return mqerr!(
            QFull,
            "queue '{}' is full (MAXDEPTH {})",
            dest.q.name,
            dest.max_depth
        );
    }
    if !st.file_room(msg.payload.len()) {
        return mqerr!(
            QSpaceNotAvailable,
            "the files of queue '{}' reached MAXFSIZE ({} MB); get messages from it or raise \
             MAXFSIZE",
            dest.q.name,
            st.def.max_file_bytes() >> 20
        );
    }
    st.insert(seq, msg.clone(), EntryState::Putting(tx), 0);
    st.stats.put(
        msg.payload.len(),
        msg.md.persistence == Persistence::Persistent,
    );
    Ok(())
}

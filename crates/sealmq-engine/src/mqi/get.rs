//! MQGET: wait, browse, match, truncation, expiry, and taking a message under a unit of work.

use super::*;
use sealmq_types::sync::lock;

/// A get taken as far as it goes without blocking (the event-driven server's MQGET): done, a
/// removal that becomes final once its log record is durable, or a wait for a message.
pub enum GetStep {
    Done(MqResult<Got>),
    /// A persistent message taken outside a unit of work: hidden now, removed once
    /// [`DurableGet::ticket`] is durable; then [`Connection::get_durable`].
    Durable(DurableGet),
    /// No message yet: wait until [`GetWait::waiter`] is woken or the deadline passes, then
    /// [`Connection::get_resume`].
    Wait(GetWait),
}

/// A persistent get outside a unit of work, waiting for its record to be durable.
pub struct DurableGet {
    q: Arc<LocalQueue>,
    got: Got,
    ticket: sealmq_storage::log::Ticket,
    seq: u64,
    tx: TxId,
}

impl DurableGet {
    pub fn ticket(&self) -> &sealmq_storage::log::Ticket {
        &self.ticket
    }
}

/// A get waiting for a message on a queue.
pub struct GetWait {
    pub waiter: Arc<Waiter>,
    q: Arc<LocalQueue>,
    /// Handed to [`Connection::get_resume`] (which takes the waiter off its queue).
    resumed: bool,
}

impl Drop for GetWait {
    /// A wait abandoned without [`Connection::get_resume`] (the task that awaited it was
    /// dropped): its waiter leaves the queue, and a wake-up it may have had goes to another
    /// getter — else a put's wake-up could go to nobody.
    fn drop(&mut self) {
        if !self.resumed {
            let mut st = self.q.lock();
            st.remove_waiter(&self.waiter);
            st.renotify();
        }
    }
}

impl Connection {
    /// MQGET.
    pub fn get(&self, h: &Hobj, gmo: GetOptions) -> MqResult<Got> {
        let deadline = gmo.wait.map(|w| Instant::now() + w);
        // Asked only by a get that may wait.
        let live = gmo.wait.and_then(|_| self.liveness());
        let mut step = self.get_step(h, &gmo, deadline);
        loop {
            step = match step {
                GetStep::Done(r) => return r,
                GetStep::Durable(d) => {
                    let r = self.qm.log.wait(&d.ticket);
                    return self.get_durable(d, r);
                }
                GetStep::Wait(w) => {
                    // With a liveness check, wake at least every interval to ask it.
                    let until = deadline.unwrap_or_else(Instant::now);
                    let until = match &live {
                        Some(l) => until.min(Instant::now() + l.every),
                        None => until,
                    };
                    let woken = w.waiter.wait_until(until);
                    let gone = !woken
                        && deadline.is_some_and(|d| Instant::now() < d)
                        && live.as_ref().is_some_and(|l| !(l.alive)());
                    match self.get_resume(h, &gmo, w, woken, deadline, gone) {
                        Some(s) => s,
                        None => self.get_step(h, &gmo, deadline),
                    }
                }
            };
        }
    }

    /// MQGET as far as it goes without blocking: a message found is taken (a persistent one
    /// outside a unit of work only once its record is durable: [`GetStep::Durable`]); with
    /// none and time left before `deadline`, a waiter is registered on the queue.
    pub fn get_step(&self, h: &Hobj, gmo: &GetOptions, deadline: Option<Instant>) -> GetStep {
        match self.get_checks(h, gmo) {
            Ok(q) => self.get_look(h, &q, gmo, deadline),
            Err(e) => GetStep::Done(Err(e)),
        }
    }

    fn get_checks(&self, h: &Hobj, gmo: &GetOptions) -> MqResult<Arc<LocalQueue>> {
        self.check_running()?;
        if h.closed.load(Ordering::Acquire) {
            return mqerr!(HobjError, "'{}' is closed", h.name);
        }
        let Target::Local(q) = &h.target else {
            return mqerr!(NotOpenForInput, "'{}' is a remote queue", h.name);
        };
        let browsing = matches!(gmo.browse, Browse::First | Browse::Next);
        if browsing && !h.opts.browse {
            return mqerr!(NotOpenForBrowse, "'{}' was not opened for browse", h.name);
        }
        if !browsing && !h.opts.input_any() {
            return mqerr!(NotOpenForInput, "'{}' was not opened for input", h.name);
        }
        if !browsing && !h.get_allowed {
            return mqerr!(
                GetInhibited,
                "gets from '{}' are inhibited (GET(DISABLED))",
                h.name
            );
        }
        Ok(q.clone())
    }

    fn get_look(
        &self,
        h: &Hobj,
        q: &Arc<LocalQueue>,
        gmo: &GetOptions,
        deadline: Option<Instant>,
    ) -> GetStep {
        let browsing = matches!(gmo.browse, Browse::First | Browse::Next);
        loop {
            let mut st = q.lock();
            if !browsing && !st.def.get_enabled {
                return GetStep::Done(mqerr!(
                    GetInhibited,
                    "gets from '{}' are inhibited (GET(DISABLED))",
                    h.name
                ));
            }
            let mut expired = Vec::new();
            let found = match gmo.browse {
                Browse::First => st.find(&gmo.matching, None, &mut expired),
                Browse::Next => {
                    let after = *lock(&h.cursor);
                    st.find(&gmo.matching, after, &mut expired)
                }
                Browse::MsgUnderCursor => {
                    let cur = *lock(&h.cursor);
                    cur.filter(|k| st.entries.get(*k).is_some_and(|e| e.is_visible()))
                }
                Browse::None => st.find(&gmo.matching, None, &mut expired),
            };
            self.discard_expired(&mut st, &q.name, expired);
            if let Some(key) = found {
                match self.take_found(h, q, st, key, gmo, browsing) {
                    Some(r) => return r,
                    None => continue,
                }
            }
            if gmo.browse == Browse::MsgUnderCursor {
                return GetStep::Done(mqerr!(
                    NoMsgAvailable,
                    "no message under the browse cursor of '{}'",
                    h.name
                ));
            }
            return match deadline {
                Some(d) if Instant::now() < d => {
                    let waiter = Waiter::new(gmo.matching.clone(), browsing);
                    st.waiters.push_back(waiter.clone());
                    GetStep::Wait(GetWait {
                        waiter,
                        q: q.clone(),
                        resumed: false,
                    })
                }
                _ => GetStep::Done(mqerr!(
                    NoMsgAvailable,
                    "no message available on '{}'",
                    h.name
                )),
            };
        }
    }

    /// After a wait: `woken` by a message, or not (the deadline passed, or a liveness tick);
    /// `gone`: the application went away meanwhile. `None`: look again ([`Self::get_step`]).
    pub fn get_resume(
        &self,
        h: &Hobj,
        gmo: &GetOptions,
        mut w: GetWait,
        woken: bool,
        deadline: Option<Instant>,
        gone: bool,
    ) -> Option<GetStep> {
        w.resumed = true;
        let browsing = matches!(gmo.browse, Browse::First | Browse::Next);
        let q = &w.q;
        let mut st = q.lock();
        st.remove_waiter(&w.waiter);
        if self.qm.is_quiescing() {
            return Some(GetStep::Done(mqerr!(
                QMgrQuiescing,
                "queue manager {} is ending",
                self.qm.name()
            )));
        }
        if gone {
            // Its wake-up, if it had one, goes to another getter.
            st.renotify();
            return Some(GetStep::Done(mqerr!(
                ConnectionBroken,
                "the application went away while its get on '{}' waited",
                h.name
            )));
        }
        if !woken && deadline.is_some_and(|d| Instant::now() >= d) {
            // One last look, then give up (passing on any wake-up this waiter received).
            let mut expired = Vec::new();
            let after = if gmo.browse == Browse::Next {
                *lock(&h.cursor)
            } else {
                None
            };
            if let Some(key) = st.find(&gmo.matching, after, &mut expired) {
                return self.take_found(h, q, st, key, gmo, browsing);
            }
            st.renotify();
            return Some(GetStep::Done(mqerr!(
                NoMsgAvailable,
                "no message arrived on '{}' within the wait interval",
                h.name
            )));
        }
        None
    }

    fn discard_expired(&self, st: &mut crate::queue::QueueState, queue: &str, expired: Vec<u64>) {
        for seq in expired {
            if let Some(e) = st.remove(seq)
                && e.persistent()
            {
                // Not waited for: if lost, the message is found expired again after a restart.
                let tx = self.qm.new_tx();
                let rec = Record::Get {
                    tx,
                    auto: true,
                    queue: queue.to_string(),
                    seq,
                };
                let _ = self.qm.log.append(rec.kind(), &rec.encode());
            }
        }
    }

    /// Takes the message at `key`, found with `st` held. A message only in the queue's files
    /// is read with the lock released (a get hides it from other getters meanwhile), so puts
    /// and other gets go on during the read; a damaged record is never returned: the message
    /// is set aside (`qm/damaged.rs`). `None`: it went meanwhile (the queue was cleared, or it
    /// was damaged): look again.
    fn take_found<'q>(
        &self,
        h: &Hobj,
        q: &'q Arc<LocalQueue>,
        mut st: std::sync::MutexGuard<'q, crate::queue::QueueState>,
        key: Key,
        gmo: &GetOptions,
        browsing: bool,
    ) -> Option<GetStep> {
        let seq = key.1;
        let mut pre = None;
        if let Some((store, loc)) = st.entries.get(key).and_then(|e| st.to_read(e)) {
            if !browsing {
                st.set_state(seq, EntryState::Getting(crate::queue::READING));
            }
            drop(st);
            let read = crate::queue::read_message(&store, seq, loc);
            st = q.lock();
            let state = st.entries.get(key).map(|e| e.state());
            if browsing {
                state?;
            } else {
                if state != Some(EntryState::Getting(crate::queue::READING)) {
                    return None;
                }
                st.set_state(seq, EntryState::Visible);
            }
            match read {
                Ok(m) => pre = Some(m),
                // Damage does not block the queue: the message is set aside, and the search
                // goes on from where it is.
                Err(e) if e.reason == ReasonCode::ObjectDamaged => {
                    self.qm
                        .set_aside(&q.name, &mut st, seq, loc, &e.to_string());
                    return None;
                }
                Err(e) => return Some(GetStep::Done(Err(e))),
            }
        }
        let taken = self.take(h, q, &mut st, key, gmo, browsing, pre);
        drop(st);
        Some(match taken {
            Ok(Taken::Done(got)) => GetStep::Done(Ok(got)),
            Ok(Taken::Durable {
                got,
                ticket,
                seq,
                tx,
            }) => GetStep::Durable(DurableGet {
                q: q.clone(),
                got,
                ticket,
                seq,
                tx,
            }),
            Err(e) => GetStep::Done(Err(e)),
        })
    }

    /// Takes the message at `key` with `st` held; `pre`: its message, read already.
    #[allow(clippy::too_many_arguments)]
    fn take(
        &self,
        h: &Hobj,
        q: &Arc<LocalQueue>,
        st: &mut crate::queue::QueueState,
        key: Key,
        gmo: &GetOptions,
        browsing: bool,
        pre: Option<Arc<crate::md::Message>>,
    ) -> MqResult<Taken> {
        let Some(e) = st.entries.get(key) else {
            return mqerr!(NoMsgAvailable, "message vanished");
        };
        let msg = match pre {
            Some(m) => m,
            None => st.message(e)?,
        };
        let (backout_count, persistent) = (e.backout_count, e.persistent());
        let data_len = msg.payload.len();
        // What a front end puts before the payload (an MQRFH2) takes room in the buffer too.
        let header = match (gmo.buffer, gmo.header_len) {
            (Some(_), Some(h)) => (h.0)(&msg.md),
            _ => 0,
        };
        let fits = gmo.buffer.is_none_or(|b| b >= data_len + header);
        let mut md = msg.md.clone();
        md.backout_count = backout_count;
        let (payload, warning) = if fits {
            (msg.payload.clone(), None)
        } else if gmo.accept_truncated || browsing {
            let n = gmo.buffer.unwrap_or(0).saturating_sub(header).min(data_len);
            (
                msg.payload[..n].to_vec(),
                Some(ReasonCode::TruncatedMsgAccepted),
            )
        } else {
            return Err(MqError::new(
                ReasonCode::TruncatedMsgFailed,
                format!(
                    "message of {data_len} bytes (and {header} of header) does not fit the \
                     {}-byte buffer; it stays on '{}'",
                    gmo.buffer.unwrap_or(0),
                    h.name
                ),
            ));
        };
        let got = Got {
            md,
            payload,
            data_len,
            warning,
            seq: key.1,
        };
        if browsing {
            *lock(&h.cursor) = Some(key);
            st.stats
                .browsed(got.md.persistence == crate::md::Persistence::Persistent);
            return Ok(Taken::Done(got));
        }
        let seq = key.1;
        let max_u = crate::qm::read(&self.qm.qmgr).max_uncommitted();
        let mut uow = lock(&self.uow);
        if gmo.syncpoint || (gmo.syncpoint_if_persistent && persistent) {
            if uow.as_ref().is_some_and(|u| u.ops.len() >= max_u) {
                return mqerr!(
                    SyncpointLimitReached,
                    "more than MAXUMSGS({max_u}) uncommitted operations in one unit of work"
                );
            }
            let tx = self.uow_tx(&mut uow);
            if persistent {
                self.append_get(tx, false, q, seq)?;
            }
            st.set_state(seq, EntryState::Getting(tx));
            st.stats.got(data_len);
            let u = uow.get_or_insert_with(Uow::default);
            u.logged |= persistent;
            u.ops.push(Op::Get {
                q: q.clone(),
                seq,
                persistent,
            });
            return Ok(Taken::Done(got));
        }
        drop(uow);
        if persistent {
            // The message is hidden (no one else can take it) and its removal is made durable
            // after the queue lock is released, so other getters are not held up by the sync.
            let tx = self.qm.new_tx();
            let ticket = match self.append_get(tx, true, q, seq) {
                Ok(t) => t,
                Err(e) => {
                    self.qm.end_tx(tx);
                    return Err(e);
                }
            };
            st.set_state(seq, EntryState::Getting(tx));
            return Ok(Taken::Durable {
                got,
                ticket,
                seq,
                tx,
            });
        }
        st.remove(seq);
        st.stats.got(data_len);
        Ok(Taken::Done(got))
    }

    /// Registers `tx` and appends the GET record of message `seq` of `q` (`auto`: outside a
    /// unit of work); the caller waits for the ticket when it must.
    fn append_get(
        &self,
        tx: TxId,
        auto: bool,
        q: &LocalQueue,
        seq: u64,
    ) -> MqResult<sealmq_storage::log::Ticket> {
        self.qm.register_tx(tx);
        let rec = Record::Get {
            tx,
            auto,
            queue: q.name.clone(),
            seq,
        };
        Ok(self.qm.log.append(rec.kind(), &rec.encode())?)
    }

    /// Completes a persistent get outside a unit of work once its record's wait ended
    /// (`waited`): removed for good, or visible again when the record could not be written.
    pub fn get_durable(&self, d: DurableGet, waited: sealmq_storage::Result<()>) -> MqResult<Got> {
        let DurableGet {
            q, got, seq, tx, ..
        } = d;
        let mut st = q.lock();
        match waited {
            Ok(()) => {
                st.remove(seq);
                st.stats.got(got.data_len);
                drop(st);
                self.qm.end_tx(tx);
                self.qm.maybe_checkpoint();
                Ok(got)
            }
            Err(e) => {
                st.set_state(seq, EntryState::Visible);
                if let Some(m) = st.msg_of(seq) {
                    st.notify(&m);
                }
                drop(st);
                self.qm.end_tx(tx);
                Err(e.into())
            }
        }
    }
}

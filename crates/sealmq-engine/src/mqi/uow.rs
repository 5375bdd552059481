//! Units of work: MQCMIT (durable first, then applied) and MQBACK (undone, backout
//! counts raised, a message over its BOTHRESH moved to its BOQNAME).

use super::*;
use sealmq_types::sync::{lock, read};

/// A commit taken as far as it goes without blocking (the event-driven server's MQCMIT).
pub enum CommitStep {
    Done(MqResult<()>),
    /// A unit of work with persistent records: it is applied once
    /// [`DurableCommit::ticket`] is durable; then [`Connection::commit_durable`].
    Durable(DurableCommit),
}

/// A commit whose record waits to be durable.
pub struct DurableCommit {
    u: Uow,
    ticket: sealmq_storage::log::Ticket,
}

impl DurableCommit {
    pub fn ticket(&self) -> &sealmq_storage::log::Ticket {
        &self.ticket
    }
}

impl Connection {
    /// MQCMIT: makes the unit of work's persistent records durable, then applies it.
    pub fn commit(&self) -> MqResult<()> {
        match self.commit_step() {
            CommitStep::Done(r) => r,
            CommitStep::Durable(d) => {
                let waited = self.qm.log.wait(&d.ticket);
                self.commit_durable(d, waited)
            }
        }
    }

    /// MQCMIT as far as it goes without blocking: a unit of work with persistent records
    /// has its commit record appended, and is applied once the record is durable.
    pub fn commit_step(&self) -> CommitStep {
        let Some(u) = lock(&self.uow).take() else {
            return CommitStep::Done(Ok(()));
        };
        self.entry.uow_active.store(false, Ordering::Relaxed);
        if !u.logged {
            self.apply_commit(u);
            return CommitStep::Done(Ok(()));
        }
        let rec = Record::Commit(u.tx);
        match self.qm.log.append(rec.kind(), &rec.encode()) {
            Ok(ticket) => CommitStep::Durable(DurableCommit { u, ticket }),
            Err(e) => CommitStep::Done(Err(self.commit_failed(u, e))),
        }
    }

    /// Completes a commit once its record's wait ended (`waited`): applied, or backed out
    /// when the record could not be written.
    pub fn commit_durable(
        &self,
        d: DurableCommit,
        waited: sealmq_storage::Result<()>,
    ) -> MqResult<()> {
        match waited {
            Ok(()) => {
                self.apply_commit(d.u);
                Ok(())
            }
            Err(e) => Err(self.commit_failed(d.u, e)),
        }
    }

    /// Not committed: undone, as a backout would.
    fn commit_failed(&self, u: Uow, e: sealmq_storage::StorageError) -> MqError {
        self.apply_backout(u, false);
        MqError::new(
            ReasonCode::BackedOut,
            format!("commit failed and the unit of work was backed out: {e}"),
        )
    }

    /// A committed unit of work takes effect: its puts turn visible, its gets leave.
    fn apply_commit(&self, u: Uow) {
        let mut triggers = Vec::new();
        {
            let _a = read(&self.qm.apply);
            for op in &u.ops {
                match op {
                    Op::Put { q, seq, .. } => {
                        let mut st = q.lock();
                        st.set_state(*seq, EntryState::Visible);
                        if let Some(e) = st.msg_of(*seq) {
                            st.notify(&e);
                            if st.trigger_due(&e, || self.qm.qmgr().trig_int_ms()) {
                                triggers.push(st.def.clone());
                            }
                        }
                    }
                    Op::Get { q, seq, .. } => {
                        q.lock().remove(*seq);
                    }
                }
            }
        }
        if u.logged {
            self.qm.end_tx(u.tx);
            for tx in &u.joined {
                self.qm.end_tx(*tx);
            }
            self.qm.maybe_checkpoint();
        }
        for d in triggers {
            super::triggers::fire(&self.qm, &d);
        }
    }

    /// MQBACK.
    pub fn backout(&self) -> MqResult<()> {
        if let Some(u) = lock(&self.uow).take() {
            self.entry.uow_active.store(false, Ordering::Relaxed);
            self.apply_backout(u, true);
        }
        Ok(())
    }

    fn apply_backout(&self, u: Uow, log_it: bool) {
        if u.logged && log_it {
            let rec = Record::Backout(u.tx);
            let _ = self.qm.log.append(rec.kind(), &rec.encode());
        }
        let _a = read(&self.qm.apply);
        for op in u.ops.iter().rev() {
            match op {
                Op::Put { q, seq, .. } => {
                    q.lock().remove(*seq);
                }
                Op::Get { q, seq, persistent } => {
                    let (requeue, msg) = {
                        let mut st = q.lock();
                        let threshold = st.def.backout_threshold;
                        let boq = st.def.backout_requeue_q.clone();
                        let Some(count) = st.backed_out(*seq) else {
                            continue;
                        };
                        let Some(msg) = st.msg_of(*seq) else { continue };
                        if threshold > 0 && count >= threshold && !boq.is_empty() && boq != q.name {
                            (Some((boq, count)), msg)
                        } else {
                            st.notify(&msg);
                            (None, msg)
                        }
                    };
                    if let Some((boq, count)) = requeue
                        && let Some(target) = self.qm.local(&boq)
                    {
                        if *persistent {
                            let rec = Record::MoveMsg {
                                from: q.name.clone(),
                                to: boq.clone(),
                                seq: *seq,
                                backout_count: count,
                                msg: (*msg).clone(),
                            };
                            if self
                                .qm
                                .log
                                .append_durable(rec.kind(), &rec.encode())
                                .is_err()
                            {
                                q.lock().notify(&msg);
                                continue;
                            }
                        }
                        if q.lock().remove(*seq).is_some() {
                            let mut ts = target.lock();
                            ts.insert(*seq, msg.clone(), EntryState::Visible, count);
                            ts.notify(&msg);
                        }
                    }
                }
            }
        }
        if u.logged {
            self.qm.end_tx(u.tx);
            for tx in &u.joined {
                self.qm.end_tx(*tx);
            }
        }
    }

    /// Makes `other`'s unit of work part of this connection's: its puts and gets commit or back
    /// out with this one's, as one (an AMQP transaction's deliveries, each got in a unit of
    /// work of its own, join the transaction's). A logged one is joined by a JOIN record, so
    /// recovery sees one unit of work too. `other` is left without a unit of work.
    pub fn join(&self, other: &Connection) -> MqResult<()> {
        let mut theirs_slot = lock(&other.uow);
        let Some(theirs) = theirs_slot.take() else {
            return Ok(());
        };
        let max_u = crate::qm::read(&self.qm.qmgr).max_uncommitted();
        let mut mine = lock(&self.uow);
        let size = mine.as_ref().map_or(0, |u| u.ops.len()) + theirs.ops.len();
        if size > max_u {
            *theirs_slot = Some(theirs);
            return mqerr!(
                SyncpointLimitReached,
                "more than MAXUMSGS({max_u}) uncommitted operations in one unit of work"
            );
        }
        let into = self.uow_tx(&mut mine);
        if theirs.logged {
            self.qm.register_tx(into);
            let rec = Record::Join {
                from: theirs.tx,
                into,
            };
            if let Err(e) = self.qm.log.append(rec.kind(), &rec.encode()) {
                *theirs_slot = Some(theirs);
                return Err(e.into());
            }
        }
        let u = mine.get_or_insert_with(Uow::default);
        u.logged |= theirs.logged;
        u.joined.push(theirs.tx);
        u.joined.extend(theirs.joined);
        u.ops.extend(theirs.ops);
        Ok(())
    }
}

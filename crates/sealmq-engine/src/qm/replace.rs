//! Messages replaced in place (`sealmq reprotect`): a message keeps its position, descriptor
//! and backout count, and only its payload changes. A persistent one is replaced by the log
//! record the queue manager's own moves use (`MoveMsg`, from the queue to itself, with the
//! message): recovery applies it as it applies any move, so the log's format is unchanged. Each
//! message is replaced by one record, so a crash leaves every message either as it was or
//! replaced, never neither; a batch's records are made durable together.
//!
//! While a batch is worked on its messages are hidden from getters (as a message being read
//! from its file is), and count as in a unit of work (CLEAR QLOCAL waits for them); the apply
//! lock is held shared from the first record to the last replacement, so no checkpoint falls
//! between a record and what it changes.

use super::*;
use crate::queue::{Key, READING};
use sealmq_types::sync::read;

/// What one batch came to.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Replaced {
    /// Messages looked at.
    pub scanned: usize,
    /// Messages whose payload was replaced (or, in a dry run, would have been).
    pub replaced: usize,
    /// Where the next batch starts; `None`: the queue's end was reached.
    pub next: Option<Key>,
}

/// One message taken for a batch.
struct Taken {
    seq: u64,
    backout_count: u32,
    persistent: bool,
    msg: Arc<Message>,
}

impl QueueManager {
    /// Replaces the payloads of up to `n` visible messages of `queue` after `after`, in
    /// delivery order: `f` gives each message's new payload, or `None` to leave it (all at once,
    /// so that it may work on them in parallel). With `dry_run` nothing is replaced
    /// (`replaced` counts what would be).
    pub fn replace_payloads(
        &self,
        queue: &str,
        after: Option<Key>,
        n: usize,
        dry_run: bool,
        f: impl FnOnce(&[&Message]) -> Vec<Option<Vec<u8>>>,
    ) -> MqResult<Replaced> {
        let q = self.local(queue).ok_or_else(|| {
            MqError::new(
                ReasonCode::UnknownObjectName,
                format!("local queue '{queue}' is not defined"),
            )
        })?;
        let (taken, next) = take_batch(&q, after, n);
        let mut out = Replaced {
            scanned: taken.len(),
            next,
            ..Replaced::default()
        };
        let msgs: Vec<&Message> = taken.iter().map(|t| &*t.msg).collect();
        let payloads = f(&msgs);
        if payloads.len() != taken.len() {
            restore(&q, &taken);
            return Err(MqError::new(
                ReasonCode::UnexpectedError,
                format!(
                    "{} new payloads for {} messages of '{queue}': none replaced",
                    payloads.len(),
                    taken.len()
                ),
            ));
        }
        let mut new: Vec<(Taken, Message)> = Vec::new();
        let mut left: Vec<Taken> = Vec::new();
        for (t, payload) in taken.into_iter().zip(payloads) {
            match payload {
                Some(payload) if !dry_run => {
                    let mut m = (*t.msg).clone();
                    m.payload = payload;
                    new.push((t, m));
                }
                Some(_) => {
                    out.replaced += 1;
                    left.push(t);
                }
                None => left.push(t),
            }
        }
        let _apply = read(&self.apply);
        // Deleted meanwhile: nothing is logged for a queue that is gone.
        if !self.local(queue).is_some_and(|now| Arc::ptr_eq(&now, &q)) {
            return Err(MqError::new(
                ReasonCode::UnknownObjectName,
                format!("local queue '{queue}' was deleted while it was re-protected"),
            ));
        }
        let (done, failed, err) = self.log_moves(queue, new);
        out.replaced += done.len();
        let mut st = q.lock();
        for (t, m) in done {
            st.remove(t.seq);
            let m = Arc::new(m);
            st.insert(t.seq, m.clone(), EntryState::Visible, t.backout_count);
            if let Some(e) = st.get_mut(t.seq) {
                e.mark_replaced();
            }
            st.notify(&m);
        }
        drop(st);
        restore(&q, &left);
        restore(&q, &failed);
        match err {
            Some(e) => Err(e),
            None => Ok(out),
        }
    }

    /// Logs the replacement of each persistent message (a move from the queue to itself with
    /// the new message) and waits for the records to be durable: the replacements that may
    /// take effect, those that may not (from the first record that failed on), and why.
    #[allow(clippy::type_complexity)] // the two parts of one batch, and why the second failed
    fn log_moves(
        &self,
        queue: &str,
        new: Vec<(Taken, Message)>,
    ) -> (Vec<(Taken, Message)>, Vec<Taken>, Option<MqError>) {
        let mut tickets = Vec::with_capacity(new.len());
        for (t, m) in &new {
            if !t.persistent {
                tickets.push(None);
                continue;
            }
            let rec = Record::MoveMsg {
                from: queue.to_string(),
                to: queue.to_string(),
                seq: t.seq,
                backout_count: t.backout_count,
                msg: m.clone(),
            };
            tickets.push(Some(self.log.append(rec.kind(), &rec.encode())));
        }
        let (mut done, mut failed) = (Vec::new(), Vec::new());
        let mut broken: Option<MqError> = None;
        for ((t, m), ticket) in new.into_iter().zip(tickets) {
            let waited = match (&broken, ticket) {
                (Some(_), _) => {
                    failed.push(t);
                    continue;
                }
                (None, None) => Ok(()),
                (None, Some(Ok(tk))) => self.log.wait(&tk).map_err(MqError::from),
                (None, Some(Err(e))) => Err(MqError::from(e)),
            };
            match waited {
                Ok(()) => done.push((t, m)),
                Err(e) => {
                    broken = Some(e);
                    failed.push(t);
                }
            }
        }
        (done, failed, broken)
    }
}

/// Messages of a batch that stay as they were: visible again.
fn restore(q: &LocalQueue, taken: &[Taken]) {
    let mut st = q.lock();
    for t in taken {
        st.set_state(t.seq, EntryState::Visible);
        st.notify(&t.msg);
    }
}

/// Up to `n` visible, unexpired messages after `after`, hidden from getters until the batch
/// ends; and where the next batch starts.
fn take_batch(q: &LocalQueue, after: Option<Key>, n: usize) -> (Vec<Taken>, Option<Key>) {
    let mut st = q.lock();
    let now = crate::md::now_ms();
    let mut keys = Vec::with_capacity(n);
    let mut last = after;
    let mut more = false;
    for (k, e) in st.entries.iter_from(after) {
        if keys.len() == n {
            more = true;
            break;
        }
        last = Some(k);
        if e.is_visible() && !e.expired(now) {
            keys.push((k, e.clone()));
        }
    }
    let mut taken = Vec::with_capacity(keys.len());
    for (_, e) in keys {
        let msg = match st.message(&e) {
            Ok(m) => m,
            Err(err) => {
                tracing::error!(queue = %q.name, seq = e.seq, "not re-protected: {err}");
                continue;
            }
        };
        st.set_state(e.seq, EntryState::Getting(READING));
        taken.push(Taken {
            seq: e.seq,
            backout_count: e.backout_count,
            persistent: e.persistent(),
            msg,
        });
    }
    (taken, more.then_some(last).flatten())
}

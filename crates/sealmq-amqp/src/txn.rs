//! AMQP local transactions as sealmq units of work: one unit of work per transaction.
//!
//! fe2o3-amqp (patched, `vendor/README.md`) keeps a transaction's posted transfers and
//! retiring dispositions until its discharge. At a commit it tells the session's [`Txns`]
//! which deliveries are the transaction's ([`TxnResource::prepare`]) before handing them to the
//! links: the deliveries the application accepted in it, each got by a receiving link in a
//! unit of work of its own, are joined into the transaction's unit of work at once; the
//! transfers it posted are put into that unit of work by their sending links as they reach
//! them. The discharge is answered ([`TxnResource::discharge`]) when every posted transfer was
//! put and the one unit of work is committed, durable: accepted, or rejected with
//! `amqp:transaction:rollback` and the reason (and nothing of it done). A rollback is fe2o3's:
//! posted transfers are dropped, accepted deliveries come back to their links as `modified`
//! and are backed out (redelivered, backout count raised).

use fe2o3_amqp::transaction::resource::{CommitWork, DischargeFuture, TxnResource};
use fe2o3_amqp::types::definitions::DeliveryNumber;
use fe2o3_amqp::types::transaction::TransactionId;
use sealmq_engine::Connection;
use sealmq_types::sync::lock;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How long a commit waits for its posted transfers to reach their links and be put.
const POST_WAIT: Duration = Duration::from_secs(10);

/// A transaction being committed.
struct Committing {
    /// The transaction's unit of work.
    uow: Arc<Connection>,
    /// Posted transfers not yet put, and accepted deliveries not yet joined.
    awaited: usize,
    /// Why a part of it failed (the commit becomes a rollback).
    failed: Option<String>,
}

/// A delivery out on a receiving link: the link's name and the delivery's tag.
pub type DeliveryKey = (String, Vec<u8>);

#[derive(Default)]
struct State {
    /// Deliveries out on the session's receiving links, by link name and delivery tag: the
    /// unit of work each was got in.
    held: HashMap<DeliveryKey, Arc<Connection>>,
    /// Posted transfers of a transaction being committed, by delivery id.
    posted: HashMap<DeliveryNumber, TransactionId>,
    /// Deliveries a committing transaction accepted before their link held them (the link's
    /// task had not reached `hold` yet): joined when it does.
    missed: HashMap<DeliveryKey, TransactionId>,
    committing: HashMap<TransactionId, Committing>,
}

/// One session's transactions (the resource side of its coordinator link).
pub struct Txns {
    /// Itself, for the futures that answer discharges.
    me: std::sync::Weak<Txns>,
    mq: Arc<Connection>,
    /// MQI accounting, when ACCTMQI is ON: a transaction's commit or backout counts.
    tally: Option<Arc<dyn crate::status::Tally>>,
    state: Mutex<State>,
    changed: tokio::sync::Notify,
}

impl std::fmt::Debug for Txns {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Txns").finish_non_exhaustive()
    }
}

/// Where a sending link puts a transfer that a transaction posted.
pub struct Posted {
    txns: Arc<Txns>,
    txn: TransactionId,
    /// The transaction's unit of work.
    pub uow: Arc<Connection>,
}

impl Posted {
    /// The transfer was put (or could not be: the transaction will roll back, with `Err`'s
    /// text as the reason).
    pub fn done(self, result: Result<(), String>) {
        let mut st = lock(&self.txns.state);
        if let Some(c) = st.committing.get_mut(&self.txn) {
            c.awaited = c.awaited.saturating_sub(1);
            if let Err(why) = result {
                c.failed.get_or_insert(why);
            }
        }
        drop(st);
        self.txns.changed.notify_waiters();
    }
}

impl Txns {
    pub fn new(mq: Arc<Connection>, tally: Option<Arc<dyn crate::status::Tally>>) -> Arc<Txns> {
        Arc::new_cyclic(|me| Txns {
            me: me.clone(),
            mq,
            tally,
            state: Mutex::default(),
            changed: tokio::sync::Notify::new(),
        })
    }

    /// A delivery sent (`key`), got in `uow`, awaits its outcome
    /// (or a committing transaction that accepted it already takes its unit of work now).
    pub fn hold(&self, key: DeliveryKey, uow: Arc<Connection>) {
        let mut st = lock(&self.state);
        let Some(txn) = st.missed.remove(&key) else {
            st.held.insert(key, uow);
            return;
        };
        if let Some(c) = st.committing.get_mut(&txn) {
            if let Err(e) = c.uow.join(&uow) {
                c.failed
                    .get_or_insert(format!("a delivery could not join the transaction: {e}"));
            }
            c.awaited = c.awaited.saturating_sub(1);
        }
        drop(st);
        self.changed.notify_waiters();
    }

    /// The delivery's outcome came (a transaction may have taken its unit of work already).
    pub fn release(&self, key: &DeliveryKey) {
        lock(&self.state).held.remove(key);
    }

    /// The transaction a transfer arriving on a sending link belongs to, if a commit is
    /// handing it over.
    pub fn posted(self: &Arc<Self>, delivery: DeliveryNumber) -> Option<Posted> {
        let mut st = lock(&self.state);
        let txn = st.posted.remove(&delivery)?;
        let uow = st.committing.get(&txn)?.uow.clone();
        Some(Posted {
            txns: self.clone(),
            txn,
            uow,
        })
    }

    /// Waits until every posted transfer of `txn` was put, then commits its unit of work.
    async fn finish(self: Arc<Self>, txn: TransactionId) -> Result<(), String> {
        let deadline = tokio::time::Instant::now() + POST_WAIT;
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            let awaited = match lock(&self.state).committing.get(&txn) {
                Some(c) => c.awaited,
                None => return Err("the transaction is unknown to this session".into()),
            };
            if awaited == 0 {
                break;
            }
            if tokio::time::timeout_at(deadline, changed).await.is_err() {
                let mut st = lock(&self.state);
                st.posted.retain(|_, t| *t != txn);
                st.missed.retain(|_, t| *t != txn);
                if let Some(c) = st.committing.get_mut(&txn) {
                    c.failed.get_or_insert(format!(
                        "{awaited} transfer(s) or acceptance(s) of the transaction did not reach \
                         their link within {} s (a link ended?)",
                        POST_WAIT.as_secs()
                    ));
                }
                break;
            }
        }
        let Some(c) = lock(&self.state).committing.remove(&txn) else {
            return Err("the transaction is unknown to this session".into());
        };
        let Committing { uow, failed, .. } = c;
        let tally = self.tally.clone();
        let done = tokio::task::spawn_blocking(move || {
            let t = tally.as_ref();
            let (op, (r, cpu)) = match failed {
                None => ("commit", crate::status::timed(t, || uow.commit())),
                Some(_) => ("backout", crate::status::timed(t, || uow.backout())),
            };
            if let Some(t) = t {
                t.call(op, r.is_ok(), 0, cpu);
            }
            match (failed, r) {
                (None, Ok(())) => Ok(()),
                (None, Err(e)) => Err(format!(
                    "{}; the queue manager backed the transaction out",
                    crate::common::describe(&e)
                )),
                (Some(why), _) => Err(format!("{why}; the transaction was rolled back")),
            }
        })
        .await;
        match done {
            Ok(r) => r,
            Err(_) => Err("the commit did not complete".into()),
        }
    }
}

impl TxnResource for Txns {
    fn prepare(&self, txn_id: &TransactionId, work: CommitWork) {
        let uow = Arc::new(self.mq.uow_twin());
        let mut failed = None;
        let mut awaited = work.posted.len();
        let mut st = lock(&self.state);
        for key in work.accepted {
            let key = (key.0, key.1.to_vec());
            let Some(got) = st.held.remove(&key) else {
                // Sent, and its link's task not at `hold` yet: joined there.
                st.missed.insert(key, txn_id.clone());
                awaited += 1;
                continue;
            };
            // A small in-memory step (a log append, not forced): on the session's task.
            if let Err(e) = uow.join(&got) {
                failed.get_or_insert(format!("a delivery could not join the transaction: {e}"));
            }
        }
        for id in &work.posted {
            st.posted.insert(*id, txn_id.clone());
        }
        st.committing.insert(
            txn_id.clone(),
            Committing {
                uow,
                awaited,
                failed,
            },
        );
    }

    fn discharge(&self, txn_id: TransactionId, commit: bool) -> DischargeFuture {
        if !commit {
            return Box::pin(async { Ok(()) });
        }
        let me = self.me.upgrade();
        Box::pin(async move {
            match me {
                Some(t) => t.finish(txn_id).await,
                None => Err("the session ended".into()),
            }
        })
    }
}

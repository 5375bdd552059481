//! Recovery: the state a start rebuilds from the checkpoint and the log tail before the queue
//! manager exists — definitions, authority records, channels, messages, and the units of work
//! still open (committed ones applied, backed-out and unfinished ones undone).

use super::*;

/// A unit of work's operations seen during replay.
#[derive(Default)]
pub(crate) struct PendingTx {
    pub(crate) ops: Vec<Record>,
}

/// State rebuilt during recovery, before the queue manager exists.
pub(crate) struct Rebuild {
    pub(crate) auth: Vec<AuthRec>,
    pub(crate) channels: HashMap<String, ChannelDef>,
    pub(crate) sec: super::security::SecurityObjects,
    pub(crate) svc: super::services::ServiceObjects,
    pub(crate) qmgr: Option<QmgrDef>,
    pub(crate) defs: HashMap<String, QueueDef>,
    pub(crate) msgs: HashMap<String, HashMap<u64, (Message, u32)>>,
    pub(crate) pending: HashMap<TxId, PendingTx>,
    pub(crate) active_at_cp: HashSet<TxId>,
    pub(crate) cp_lsn: Lsn,
    pub(crate) max_seq: u64,
    pub(crate) max_tx: u64,
}

impl Rebuild {
    pub(crate) fn apply_put(&mut self, queue: String, seq: u64, msg: Message) {
        self.max_seq = self.max_seq.max(seq);
        self.msgs.entry(queue).or_default().insert(seq, (msg, 0));
    }

    pub(crate) fn apply_get(&mut self, queue: &str, seq: u64) {
        if let Some(q) = self.msgs.get_mut(queue) {
            q.remove(&seq);
        }
    }

    pub(crate) fn backout_tx(&mut self, ops: Vec<Record>) {
        // Puts never happened; got messages stay, with their backout count raised.
        for op in ops {
            if let Record::Get { queue, seq, .. } = op
                && let Some((_, count)) = self.msgs.get_mut(&queue).and_then(|q| q.get_mut(&seq))
            {
                *count += 1;
            }
        }
    }

    pub(crate) fn record(&mut self, lsn: Lsn, r: Record) {
        let tx_of = |r: &Record| match r {
            Record::Put { tx, .. }
            | Record::Get { tx, .. }
            | Record::Commit(tx)
            | Record::Backout(tx) => Some(*tx),
            _ => None,
        };
        if let Some(tx) = tx_of(&r) {
            self.max_tx = self.max_tx.max(tx);
        }
        if lsn <= self.cp_lsn {
            // Already in the checkpoint, unless it belongs to a unit of work active then.
            match tx_of(&r) {
                Some(tx) if self.active_at_cp.contains(&tx) => {}
                _ => return,
            }
        }
        if self.svc.apply(&r) {
            return;
        }
        match r {
            Record::Qmgr(q) => self.qmgr = Some(q),
            Record::SetAuth(a) => {
                self.auth.retain(|r| !same_key(r, &a));
                self.auth.push(a);
            }
            Record::DeleteAuth(a) => self.auth.retain(|r| !same_key(r, &a)),
            Record::DefineChannel(c) => {
                self.channels.insert(c.name.clone(), c);
            }
            Record::DeleteChannel(n) => {
                self.channels.remove(&n);
            }
            Record::SetChlAuth(r) => self.sec.set_rule(r),
            Record::DeleteChlAuth(r) => self.sec.remove_rule(&r),
            Record::DefineAuthInfo(a) => {
                self.sec.authinfo.insert(a.name.clone(), a);
            }
            Record::DeleteAuthInfo(n) => {
                self.sec.authinfo.remove(&n);
            }
            Record::DefineListener(_)
            | Record::DeleteListener(_)
            | Record::DefineProcess(_)
            | Record::DeleteProcess(_)
            | Record::DefineService(_)
            | Record::DeleteService(_) => {}
            Record::Define(d) => {
                if matches!(d.qtype, QType::Local) {
                    self.msgs.entry(d.name.clone()).or_default();
                }
                self.defs.insert(d.name.clone(), d);
            }
            Record::Delete(n) => {
                self.defs.remove(&n);
                self.msgs.remove(&n);
            }
            Record::Clear(n) => {
                if let Some(q) = self.msgs.get_mut(&n) {
                    q.clear();
                }
            }
            Record::Move {
                from,
                to,
                seq,
                backout_count,
            } => {
                if let Some((m, _)) = self.msgs.get_mut(&from).and_then(|q| q.remove(&seq)) {
                    self.msgs
                        .entry(to)
                        .or_default()
                        .insert(seq, (m, backout_count));
                }
            }
            Record::Put {
                auto: true,
                queue,
                seq,
                msg,
                ..
            } => self.apply_put(queue, seq, msg),
            Record::Get {
                auto: true,
                queue,
                seq,
                ..
            } => self.apply_get(&queue, seq),
            r @ (Record::Put { .. } | Record::Get { .. }) => {
                if let Some(tx) = tx_of(&r) {
                    self.pending.entry(tx).or_default().ops.push(r);
                }
            }
            Record::Commit(tx) => {
                if let Some(p) = self.pending.remove(&tx) {
                    for op in p.ops {
                        match op {
                            Record::Put {
                                queue, seq, msg, ..
                            } => self.apply_put(queue, seq, msg),
                            Record::Get { queue, seq, .. } => self.apply_get(&queue, seq),
                            _ => {}
                        }
                    }
                }
            }
            Record::Backout(tx) => {
                if let Some(p) = self.pending.remove(&tx) {
                    self.backout_tx(p.ops);
                }
            }
        }
    }
}

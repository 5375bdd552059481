//! Recovery: the state a start rebuilds from the checkpoint and the log tail before the queue
//! manager exists — definitions, authority records, channels, messages, and the units of work
//! still open (committed ones applied, backed-out and unfinished ones undone).

use super::*;

/// A unit of work's operations seen during replay.
#[derive(Default)]
pub(crate) struct PendingTx {
    pub(crate) ops: Vec<Record>,
    /// The LSN of its first record (a replica's checkpoint replays from there).
    pub(crate) first: Lsn,
    /// Units of work it took in (JOIN): their records name them, so a checkpoint lists them
    /// as active too.
    pub(crate) joined: Vec<TxId>,
}

/// State rebuilt during recovery, before the queue manager exists.
pub(crate) struct Rebuild {
    pub(crate) auth: Vec<AuthRec>,
    pub(crate) channels: HashMap<String, ChannelDef>,
    pub(crate) sec: super::security::SecurityObjects,
    pub(crate) svc: super::services::ServiceObjects,
    pub(crate) qmgr: Option<QmgrDef>,
    pub(crate) defs: HashMap<String, QueueDef>,
    pub(crate) msgs: HashMap<String, QueueRb>,
    /// Where queue files live and how they are opened.
    pub(crate) qctx: Arc<crate::queue::QueueCtx>,
    /// The checkpoint queue files are opened as of.
    pub(crate) store_upto: Lsn,
    /// Where each queue's index ended at that checkpoint (frames version 3).
    pub(crate) index_ends: HashMap<String, sealmq_storage::qstore::IndexEnd>,
    pub(crate) pending: HashMap<TxId, PendingTx>,
    pub(crate) active_at_cp: HashSet<TxId>,
    pub(crate) cp_lsn: Lsn,
    pub(crate) max_seq: u64,
    pub(crate) max_tx: u64,
}

/// One queue's messages during recovery: those its files hold (by sequence number, without
/// their payloads), the ones removed or backed out since, and those only the log (or an old
/// checkpoint) holds.
#[derive(Default)]
pub(crate) struct QueueRb {
    pub(crate) store: Option<Arc<sealmq_storage::qstore::QueueStore>>,
    pub(crate) placed: Vec<sealmq_storage::qstore::Placed>,
    pub(crate) gone: HashSet<u64>,
    pub(crate) bumps: HashMap<u64, u32>,
    pub(crate) mem: HashMap<u64, (Message, u32)>,
    pub(crate) cleared: bool,
}

impl QueueRb {
    fn stored(&self, seq: u64) -> bool {
        !self.gone.contains(&seq) && self.placed.binary_search_by_key(&seq, |p| p.seq).is_ok()
    }

    /// Takes a message out, reading a stored one's payload from the queue's files.
    fn take(&mut self, seq: u64) -> Option<(Message, u32)> {
        if let Some(m) = self.mem.remove(&seq) {
            return Some(m);
        }
        if !self.stored(seq) {
            return None;
        }
        self.gone.insert(seq);
        let i = self.placed.binary_search_by_key(&seq, |p| p.seq).ok()?;
        let p = self.placed[i];
        let bytes = match self.store.as_ref()?.read(seq, p.loc) {
            Ok(b) => b,
            Err(e) => {
                tracing::error!("message {seq} cannot be read back for a replayed move: {e}");
                return None;
            }
        };
        let mut d = sealmq_storage::codec::Dec::new(&bytes, "queued message");
        let m = Message::decode(&mut d).ok()?;
        Some((m, p.backout + self.bumps.get(&seq).copied().unwrap_or(0)))
    }
}

impl QueueRb {
    /// The queue as recovery leaves it: stored messages as index entries (their removals and
    /// backouts since the checkpoint waiting for the next one), the others in memory.
    pub(crate) fn into_queue(
        mut self,
        def: QueueDef,
        qctx: Arc<crate::queue::QueueCtx>,
    ) -> (Arc<LocalQueue>, u64) {
        use sealmq_storage::qstore::IndexOp;
        let q = LocalQueue::with_store(def, qctx, self.store.take());
        let mut st = q.lock();
        let mut mem: Vec<(u64, (Message, u32))> = self.mem.drain().collect();
        mem.sort_unstable_by_key(|(seq, _)| *seq);
        let mut mem = mem.into_iter().peekable();
        let mut n = 0;
        for mut p in std::mem::take(&mut self.placed) {
            while let Some((seq, (m, count))) = mem.next_if(|(seq, _)| *seq < p.seq) {
                st.insert(seq, Arc::new(m), EntryState::Visible, count);
                n += 1;
            }
            if self.gone.contains(&p.seq) {
                st.pending.push(IndexOp::Del {
                    seq: p.seq,
                    loc: p.loc,
                });
                continue;
            }
            if let Some(b) = self.bumps.get(&p.seq) {
                p.backout += b;
                st.pending.push(IndexOp::Backout {
                    seq: p.seq,
                    count: p.backout,
                });
            }
            st.insert_placed(&p);
            n += 1;
        }
        for (seq, (m, count)) in mem {
            st.insert(seq, Arc::new(m), EntryState::Visible, count);
            n += 1;
        }
        st.cleared |= self.cleared;
        let pending = st.pending.len() as i64;
        st.ctx.add(&st.ctx.pending_ops, pending);
        drop(st);
        (q, n)
    }
}

impl Rebuild {
    /// An empty rebuild over queue files at `qctx`.
    pub(crate) fn new(qctx: Arc<crate::queue::QueueCtx>) -> Rebuild {
        Rebuild {
            qctx,
            store_upto: 0,
            index_ends: HashMap::new(),
            auth: Vec::new(),
            channels: HashMap::new(),
            sec: Default::default(),
            svc: Default::default(),
            qmgr: None,
            defs: HashMap::new(),
            msgs: HashMap::new(),
            pending: HashMap::new(),
            active_at_cp: HashSet::new(),
            cp_lsn: 0,
            max_seq: 0,
            max_tx: 0,
        }
    }

    /// Opens the files of every queue that has them, as of the checkpoint.
    pub(crate) fn open_stores(&mut self) -> MqResult<()> {
        let root = &self.qctx.root;
        let Ok(dir) = std::fs::read_dir(root) else {
            return Ok(());
        };
        for ent in dir.flatten() {
            let fname = ent.file_name().to_string_lossy().into_owned();
            let Some(name) = queue_name_of(&fname) else {
                continue;
            };
            let (store, placed) = sealmq_storage::qstore::QueueStore::open_as_of(
                &ent.path(),
                self.qctx.store_cfg.clone(),
                self.store_upto,
                self.index_ends.get(&name).copied(),
            )?;
            let q = self.msgs.entry(name).or_default();
            q.store = Some(Arc::new(store));
            q.placed = placed;
        }
        Ok(())
    }

    pub(crate) fn apply_put(&mut self, queue: String, seq: u64, msg: Message) {
        self.max_seq = self.max_seq.max(seq);
        let q = self.msgs.entry(queue).or_default();
        // A message a later (incomplete) checkpoint already stored keeps its stored copy.
        if !q.stored(seq) {
            q.mem.insert(seq, (msg, 0));
        }
    }

    pub(crate) fn apply_get(&mut self, queue: &str, seq: u64) {
        if let Some(q) = self.msgs.get_mut(queue)
            && q.mem.remove(&seq).is_none()
            && q.stored(seq)
        {
            q.gone.insert(seq);
        }
    }

    pub(crate) fn backout_tx(&mut self, ops: Vec<Record>) {
        // Puts never happened; got messages stay, with their backout count raised.
        for op in ops {
            if let Record::Get { queue, seq, .. } = op
                && let Some(q) = self.msgs.get_mut(&queue)
            {
                if let Some((_, count)) = q.mem.get_mut(&seq) {
                    *count += 1;
                } else if q.stored(seq) {
                    *q.bumps.entry(seq).or_default() += 1;
                }
            }
        }
    }

    fn moved(
        &mut self,
        from: &str,
        to: String,
        seq: u64,
        backout_count: u32,
        msg: Option<Message>,
    ) {
        let taken = self.msgs.get_mut(from).and_then(|q| q.take(seq));
        if let Some(m) = msg.or(taken.map(|(m, _)| m)) {
            self.msgs
                .entry(to)
                .or_default()
                .mem
                .insert(seq, (m, backout_count));
        }
    }

    /// A queue deleted during replay: its files go with it.
    pub(crate) fn deleted(&mut self, name: &str) {
        if let Some(q) = self.msgs.remove(name)
            && q.store.is_some()
        {
            let dir = self.qctx.dir_of(name);
            if let Err(e) = std::fs::remove_dir_all(&dir) {
                tracing::warn!("cannot remove {}: {e}", dir.display());
            }
        }
    }

    fn pending_tx(&mut self, tx: TxId, lsn: Lsn) -> &mut PendingTx {
        self.pending.entry(tx).or_insert_with(|| PendingTx {
            first: lsn,
            ..Default::default()
        })
    }

    pub(crate) fn record(&mut self, lsn: Lsn, r: Record) {
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
        if let Some(r) = self.object_record(r) {
            self.message_record(lsn, r);
        }
    }

    /// A record of an object's definition or of security; `Some`: not one of them.
    fn object_record(&mut self, r: Record) -> Option<Record> {
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
            | Record::DeleteService(_)
            | Record::DefineTopic(_)
            | Record::DeleteTopic(_)
            | Record::DefineSub(_)
            | Record::DeleteSub(_) => {}
            Record::Define(d) => {
                if matches!(d.qtype, QType::Local) {
                    self.msgs.entry(d.name.clone()).or_default();
                }
                self.defs.insert(d.name.clone(), d);
            }
            Record::Delete(n) => {
                self.defs.remove(&n);
                self.deleted(&n);
            }
            Record::Clear(n) => {
                if let Some(q) = self.msgs.get_mut(&n) {
                    q.mem.clear();
                    q.placed.clear();
                    q.cleared = true;
                }
            }
            other => return Some(other),
        }
        None
    }

    /// A record of messages: moved, put and got (outside a unit of work, or held with their
    /// unit of work until its commit or backout), and units of work joined.
    fn message_record(&mut self, lsn: Lsn, r: Record) {
        match r {
            Record::Move {
                from,
                to,
                seq,
                backout_count,
            } => self.moved(&from, to, seq, backout_count, None),
            Record::MoveMsg {
                from,
                to,
                seq,
                backout_count,
                msg,
            } => self.moved(&from, to, seq, backout_count, Some(msg)),
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
                    self.pending_tx(tx, lsn).ops.push(r);
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
            Record::Join { from, into } => {
                if let Some(p) = self.pending.remove(&from) {
                    let t = self.pending_tx(into, p.first);
                    t.first = t.first.min(p.first);
                    t.ops.extend(p.ops);
                    t.joined.push(from);
                    t.joined.extend(p.joined);
                }
            }
            _ => {}
        }
    }
}

/// The unit of work a record belongs to.
fn tx_of(r: &Record) -> Option<TxId> {
    match r {
        Record::Put { tx, .. }
        | Record::Get { tx, .. }
        | Record::Commit(tx)
        | Record::Backout(tx)
        | Record::Join { into: tx, .. } => Some(*tx),
        _ => None,
    }
}

/// The queue name a queue-file directory stands for (its name in hexadecimal).
fn queue_name_of(dir_name: &str) -> Option<String> {
    if dir_name.is_empty() || !dir_name.len().is_multiple_of(2) {
        return None;
    }
    let bytes: Option<Vec<u8>> = (0..dir_name.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(dir_name.get(i..i + 2)?, 16).ok())
        .collect();
    String::from_utf8(bytes?).ok()
}

//! Asynchronous consume (MQ's MQCB/MQCTL; wire version 2, docs/wire.md): the queue manager
//! pushes a handle's messages within a window this side grants, in batches, each got in a
//! unit of work of its own; this side settles the batches.
//!
//! - [`ConsumeMode::Syncpoint`]: a batch is committed once the application has processed all
//!   its messages (a message counts as processed when the application asks for the next one,
//!   or its callback returned). A crash of either side before that redelivers the batch,
//!   backout counts raised: at least once, nothing lost.
//! - [`ConsumeMode::Auto`] (outside a unit of work): a batch is committed as soon as it has
//!   arrived, one log force for all its messages; a persistent message is handed to the
//!   application only once its batch is committed, never before its removal is durable. A
//!   stop hands over what was committed; what was not goes back to the queue. As with MQ's
//!   gets outside a unit of work, a crash of the application loses what it had been handed.
//! - [`ConsumeMode::Browse`]: copies, nothing settled.
//!
//! Once a consumer starts, a thread reads the connection and hands pushed messages to their
//! consumer and answers to the caller ([`Client`] calls go on as before, also from callbacks).

use crate::{Client, ClientError, Out, Reader, Result, broken};
use sealmq_mqi::{Got, Match};
use sealmq_types::ReasonCode;
pub(crate) use sealmq_types::sync::lock;
use sealmq_wire::consume::mode;
use sealmq_wire::{ConsumeReq, Delivery, Request, Response};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::io::{BufReader, Read};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Request ids of the client's calls stay below this; consumers use the top bit, and the
/// next one for a consumer's protection-error reports. Consumer tags stay below
/// [`CONSUMER_TAGS`].
pub(crate) const CONSUMER_IDS: u32 = 0x7fff_ffff;
const CONSUMER_ID: u32 = 0x8000_0000;
const REPORT_ID: u32 = 0x4000_0000;
const CONSUMER_TAGS: u32 = 0x3fff_ffff;

pub(crate) fn closed() -> ClientError {
    ClientError {
        reason: sealmq_types::ReasonCode::ConnectionBroken,
        detail: "the queue manager closed the connection".into(),
    }
}

/// How a consumer's batches are settled (module documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConsumeMode {
    Auto,
    Syncpoint,
    Browse,
    /// Read-ahead of gets outside a unit of work (the client library uses it on handles
    /// that read ahead): a non-persistent message is handed over as it comes, its batch
    /// committed once all of it was handed over; a persistent message ends its batch, which
    /// is committed when the application reaches it, before it is handed over. A stop
    /// backs out batches nothing was taken from, or whose persistent message was not
    /// taken; the rest are committed (non-persistent messages not taken are gone, as MQ's).
    ReadAhead,
}

#[derive(Clone, Debug)]
pub struct ConsumeOptions {
    pub mode: ConsumeMode,
    /// Messages pushed and not yet released (processed, or settled under syncpoint).
    pub window: u32,
    /// Largest batch (under syncpoint: commit every this many messages).
    pub batch: u32,
    /// A batch closes this long after its first message (under syncpoint: commit at least
    /// this often while messages flow).
    pub batch_ms: u32,
    pub matching: Match,
    /// At most this many messages are pushed in all (an application that wants N messages
    /// is never pushed more).
    pub limit: Option<u64>,
}

impl Default for ConsumeOptions {
    fn default() -> Self {
        ConsumeOptions {
            mode: ConsumeMode::Auto,
            window: 1000,
            batch: 100,
            batch_ms: 50,
            matching: Match::default(),
            limit: None,
        }
    }
}

pub(crate) enum Event {
    Msg(Box<Delivery>),
    End {
        batch: u32,
        count: u32,
    },
    Settled {
        batch: u32,
        reason: u32,
        detail: String,
    },
    Stopped(Result<()>),
    /// The answer to a protection-error report.
    Reported(Result<()>),
    Broken(ClientError),
}

/// Consumers of one connection, by tag, for the reader thread.
#[derive(Default)]
pub(crate) struct Routes(Mutex<HashMap<u32, Sender<Event>>>);

impl Routes {
    fn send(&self, tag: u32, ev: Event) {
        if let Some(tx) = lock(&self.0).get(&tag) {
            let _ = tx.send(ev);
        }
    }
}

/// Reads the connection once consumers exist: pushed frames to their consumers, answers to
/// the caller of [`Client`].
fn demux(
    mut r: BufReader<Box<dyn Read + Send>>,
    max: usize,
    tx: Sender<Result<(u32, Response)>>,
    routes: Arc<Routes>,
) {
    let fail = |e: ClientError| {
        let _ = tx.send(Err(e.clone()));
        for s in lock(&routes.0).values() {
            let _ = s.send(Event::Broken(e.clone()));
        }
    };
    loop {
        let (id, resp) = match sealmq_wire::read_response(&mut r, max) {
            Ok(Some(x)) => x,
            Ok(None) => return fail(closed()),
            Err(e) => return fail(broken(e)),
        };
        match resp {
            Response::Delivery(d) => routes.send(d.tag, Event::Msg(Box::new(d))),
            Response::BatchEnd { tag, batch, count } => {
                routes.send(tag, Event::End { batch, count })
            }
            Response::Settled {
                tag,
                batch,
                reason,
                detail,
            } => routes.send(
                tag,
                Event::Settled {
                    batch,
                    reason,
                    detail,
                },
            ),
            resp if id & CONSUMER_ID != 0 => {
                let r = match resp {
                    Response::Err { reason, detail } => Err(ClientError {
                        reason: ReasonCode::of(reason),
                        detail,
                    }),
                    _ => Ok(()),
                };
                if id & REPORT_ID != 0 {
                    routes.send(id & CONSUMER_TAGS, Event::Reported(r));
                } else {
                    routes.send(id & !CONSUMER_ID, Event::Stopped(r));
                }
            }
            resp => {
                if tx.send(Ok((id, resp))).is_err() {
                    return;
                }
            }
        }
    }
}

impl Client {
    /// Starts pushing the messages of `hobj` (MQCB + MQCTL START). Needs protocol version 2.
    pub fn consume(&mut self, hobj: u32, opts: ConsumeOptions) -> Result<Consumer> {
        if self.version < sealmq_wire::V_CONSUME {
            return Err(ClientError {
                reason: ReasonCode::UnexpectedError,
                detail: "the queue manager does not offer asynchronous consume (protocol \
                         version 2)"
                    .into(),
            });
        }
        // Client-side protection: each pushed message is unprotected here (key reuse as for
        // gets: one protector per keystore per process).
        let guard = self.icpt.guard(hobj)?.map(|(policy, protector)| Guard {
            hobj,
            policy,
            protector,
        });
        let tag = self.next_tag;
        self.next_tag = (self.next_tag % CONSUMER_TAGS) + 1;
        let (tx, rx) = std::sync::mpsc::channel();
        lock(&self.routes.0).insert(tag, tx);
        if let Reader::Direct(_) = self.r
            && let Reader::Direct(r) = std::mem::replace(&mut self.r, Reader::Gone)
        {
            let (atx, arx) = std::sync::mpsc::channel();
            let (routes, max) = (self.routes.clone(), self.max_frame);
            std::thread::Builder::new()
                .name("sealmq-client-reader".into())
                .spawn(move || demux(r, max, atx, routes))
                .map_err(|e| ClientError {
                    reason: ReasonCode::ResourceProblem,
                    detail: format!("cannot start the connection's reader: {e}"),
                })?;
            self.r = Reader::Demux(arx);
        }
        let window = opts.window.max(1).min(
            opts.limit
                .map_or(u32::MAX, |l| l.clamp(1, u64::from(u32::MAX)) as u32),
        );
        let req = ConsumeReq {
            hobj,
            tag,
            mode: match opts.mode {
                ConsumeMode::Auto => mode::AUTO,
                ConsumeMode::Syncpoint => mode::SYNCPOINT,
                ConsumeMode::Browse => mode::BROWSE,
                ConsumeMode::ReadAhead => mode::READAHEAD,
            },
            window,
            batch: opts.batch.max(1),
            batch_ms: opts.batch_ms,
            match_msg_id: opts.matching.msg_id,
            match_correl_id: opts.matching.correl_id,
        };
        if let Err(e) = self.call(Request::Consume(req)) {
            lock(&self.routes.0).remove(&tag);
            return Err(e);
        }
        Ok(Consumer {
            tag,
            opts,
            w: self.w.clone(),
            routes: self.routes.clone(),
            rx,
            buffer: VecDeque::new(),
            batches: BTreeMap::new(),
            owed: 0,
            granted: u64::from(window),
            last: None,
            ended: None,
            failed_settle: None,
            stopped: false,
            committed: 0,
            empty: false,
            guard,
            reported: None,
        })
    }
}

/// What a consumer of a handle with a policy this side applies unprotects with.
struct Guard {
    hobj: u32,
    policy: Arc<sealmq_protect::Policy>,
    protector: Arc<sealmq_protect::Protector>,
}

#[derive(Default)]
struct Batch {
    total: Option<u32>,
    /// Handed to the application.
    taken: u32,
    /// Processed by it (syncpoint).
    processed: u32,
    settling: bool,
    /// Settled by a commit (not a backout).
    commit: bool,
    /// The settlement's outcome.
    settled: Option<std::result::Result<(), ClientError>>,
}

/// A started consumer. Dropping it stops it (as [`Consumer::stop`], discarding what that
/// would hand over).
pub struct Consumer {
    tag: u32,
    opts: ConsumeOptions,
    w: Out,
    routes: Arc<Routes>,
    rx: Receiver<Event>,
    buffer: VecDeque<Delivery>,
    batches: BTreeMap<u32, Batch>,
    /// Credit to give back.
    owed: u32,
    /// Credit granted in all (never past `opts.limit`).
    granted: u64,
    /// The batch of the message handed out last (syncpoint: processed at the next call).
    last: Option<u32>,
    ended: Option<ClientError>,
    failed_settle: Option<ClientError>,
    stopped: bool,
    committed: u64,
    /// The queue manager said it had nothing more for this consumer (since its last push).
    empty: bool,
    /// Client-side protection: pushed messages are unprotected (and checked) here.
    guard: Option<Guard>,
    /// The answer to the last protection-error report, once it came.
    reported: Option<Result<()>>,
}

fn total_of(batches: &BTreeMap<u32, Batch>, batch: u32) -> u32 {
    batches.get(&batch).and_then(|b| b.total).unwrap_or(0)
}

fn got(d: Delivery) -> Got {
    let data_len = d.payload.len();
    Got {
        md: d.md,
        payload: d.payload,
        data_len,
        warning: None,
        seq: 0,
    }
}

impl Consumer {
    /// The message as the application gets it: unprotected and checked when this side
    /// applies the queue's policy. One that fails its checks is handed back to the queue
    /// manager for the protection error queue (outside any unit of work: under syncpoint its
    /// batch's commit then removes the original), and the application gets 2063, as a get
    /// would give it.
    fn reveal(&mut self, d: Delivery) -> Result<Got> {
        let Some(g) = &self.guard else {
            return Ok(got(d));
        };
        let (hobj, policy, protector) = (g.hobj, g.policy.clone(), g.protector.clone());
        let mut out = got(d);
        match protector.unprotect(&policy, &out.payload) {
            Ok(u) => {
                if let Some(o) = &u.original {
                    out.md.restore_original(o);
                }
                out.data_len = u.payload.len();
                out.payload = u.payload;
                Ok(out)
            }
            Err(e) => {
                let refusal = ClientError {
                    reason: ReasonCode::SecurityError,
                    detail: e.to_string(),
                };
                if self.opts.mode == ConsumeMode::Browse {
                    return Err(refusal);
                }
                let report = Request::ProtectionError {
                    hobj,
                    md: out.md.clone(),
                    check: e.check().map(|c| c.name().to_string()).unwrap_or_default(),
                    detail: e.to_string(),
                    signer: sealmq_protect::inspect(&out.payload, false)
                        .ok()
                        .and_then(|i| i.signer)
                        .unwrap_or_default(),
                    payload: out.payload,
                    syncpoint: false,
                };
                self.reported = None;
                self.send(CONSUMER_ID | REPORT_ID | self.tag, &report)?;
                let deadline = Instant::now() + Duration::from_secs(60);
                while self.reported.is_none() {
                    let left = deadline.saturating_duration_since(Instant::now());
                    match self.rx.recv_timeout(left) {
                        Ok(ev) => self.on(ev)?,
                        Err(_) => return Err(closed()),
                    }
                }
                match self.reported.take() {
                    Some(Err(e)) => Err(ClientError {
                        reason: refusal.reason,
                        detail: format!(
                            "{}; and it could not be moved to the protection error queue: {e}",
                            refusal.detail
                        ),
                    }),
                    _ => Err(refusal),
                }
            }
        }
    }

    fn send(&self, id: u32, r: &Request) -> Result<()> {
        sealmq_wire::write_request(&mut *lock(&self.w), id, r)
            .map_err(|e| broken(sealmq_wire::WireError::Io(e)))
    }

    /// Grants `n` more credit at once, whatever the window: what a hostile or broken client
    /// could send. For tests of the queue manager's limits only.
    #[doc(hidden)]
    pub fn grant_unchecked(&self, n: u32) -> Result<()> {
        self.send(0, &Request::Credit { tag: self.tag, n })
    }

    fn give_credit(&mut self, n: u32, now: bool) -> Result<()> {
        let room = self
            .opts
            .limit
            .map_or(u64::MAX, |l| l.saturating_sub(self.granted));
        let n = (u64::from(n).min(room)) as u32;
        self.granted += u64::from(n);
        self.owed += n;
        let threshold = (self.opts.window / 4).max(1);
        if self.owed >= threshold || (now && self.owed > 0) {
            let n = std::mem::take(&mut self.owed);
            self.send(0, &Request::Credit { tag: self.tag, n })?;
        }
        Ok(())
    }

    fn settle(&mut self, batch: u32, commit: bool) -> Result<()> {
        if let Some(b) = self.batches.get_mut(&batch) {
            b.settling = true;
            b.commit = commit;
        }
        let req = Request::Settle {
            tag: self.tag,
            batch,
            commit,
        };
        self.send(CONSUMER_ID | self.tag, &req)
    }

    /// Under syncpoint: commits the batches whose every message was processed.
    fn settle_processed(&mut self) -> Result<()> {
        let done: Vec<u32> = self
            .batches
            .iter()
            .filter(|(_, b)| !b.settling && b.total.is_some_and(|t| t == b.processed))
            .map(|(n, _)| *n)
            .collect();
        for n in done {
            self.settle(n, true)?;
        }
        Ok(())
    }

    fn on(&mut self, ev: Event) -> Result<()> {
        match ev {
            Event::Msg(d) => {
                self.empty = false;
                self.batches.entry(d.batch).or_default();
                self.buffer.push_back(*d);
            }
            Event::End { batch: 0, .. } => self.empty = true,
            Event::End { batch, count } => {
                self.batches.entry(batch).or_default().total = Some(count);
                match self.opts.mode {
                    ConsumeMode::Auto => self.settle(batch, true)?,
                    ConsumeMode::Syncpoint => self.settle_processed()?,
                    ConsumeMode::ReadAhead => self.settle_if_taken(batch)?,
                    ConsumeMode::Browse => {}
                }
            }
            Event::Settled {
                batch: 0,
                reason,
                detail,
            } => {
                self.ended = Some(ClientError {
                    reason: ReasonCode::of(reason),
                    detail,
                });
            }
            Event::Settled {
                batch,
                reason,
                detail,
            } => {
                let r = if reason == 0 {
                    Ok(())
                } else {
                    Err(ClientError {
                        reason: ReasonCode::of(reason),
                        detail,
                    })
                };
                if let Err(e) = &r {
                    self.failed_settle = Some(e.clone());
                }
                let committed = r.is_ok() && self.batches.get(&batch).is_some_and(|b| b.commit);
                if committed {
                    self.committed += u64::from(total_of(&self.batches, batch));
                }
                if !committed {
                    // Backed out: its messages not handed out went back to the queue.
                    self.buffer.retain(|d| d.batch != batch);
                    if let Some(b) = self.batches.get_mut(&batch) {
                        b.taken = b.total.unwrap_or(b.taken);
                    }
                }
                let total = total_of(&self.batches, batch);
                match self.opts.mode {
                    ConsumeMode::Syncpoint => {
                        self.batches.remove(&batch);
                        self.give_credit(total, false)?;
                    }
                    _ => {
                        if let Some(b) = self.batches.get_mut(&batch) {
                            b.settled = Some(r);
                        }
                        self.forget_done(batch);
                    }
                }
            }
            Event::Stopped(_) => {}
            Event::Reported(r) => self.reported = Some(r),
            Event::Broken(e) => {
                // A report waiting for its answer gets none.
                if self.reported.is_none() {
                    self.reported = Some(Err(e.clone()));
                }
                self.ended = Some(e)
            }
        }
        Ok(())
    }

    /// Messages the queue manager confirmed committed (under syncpoint: the first this many
    /// messages handed out, which are never delivered again).
    pub fn committed(&self) -> u64 {
        self.committed
    }

    /// Read-ahead: commits a batch every message of which was handed over.
    fn settle_if_taken(&mut self, batch: u32) -> Result<()> {
        let due = self
            .batches
            .get(&batch)
            .is_some_and(|b| !b.settling && b.total.is_some_and(|t| t == b.taken));
        if due {
            self.settle(batch, true)?;
        }
        Ok(())
    }

    /// Drops the record of a batch with nothing left to do (Auto, Browse, ReadAhead).
    fn forget_done(&mut self, batch: u32) {
        let done = self.batches.get(&batch).is_some_and(|b| {
            b.total.is_some_and(|t| t == b.taken)
                && (self.opts.mode == ConsumeMode::Browse || b.settled.is_some())
        });
        if done {
            self.batches.remove(&batch);
        }
    }

    /// The next message if there is one now: one pushed already, or, when the queue manager
    /// has not yet said it has nothing, the next it pushes (MQGMO_NO_WAIT). Read-ahead uses it.
    pub(crate) fn next_now(&mut self) -> Result<Option<Got>> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(g) = self.next(Duration::ZERO)? {
                return Ok(Some(g));
            }
            if self.empty && self.buffer.is_empty() {
                return Ok(None);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(None);
            }
            match self.rx.recv_timeout(left) {
                Ok(ev) => self.on(ev)?,
                Err(RecvTimeoutError::Timeout) => return Ok(None),
                Err(RecvTimeoutError::Disconnected) => return Err(closed()),
            }
        }
    }

    /// The next message, waiting up to `wait`; `None` when none came. Under syncpoint the
    /// message handed out before counts as processed from this call on.
    pub fn next(&mut self, wait: Duration) -> Result<Option<Got>> {
        if let Some(b) = self.last.take()
            && self.opts.mode == ConsumeMode::Syncpoint
        {
            if let Some(x) = self.batches.get_mut(&b) {
                x.processed += 1;
            }
            self.settle_processed()?;
        }
        if let Some(e) = self.failed_settle.take()
            && self.opts.mode == ConsumeMode::Syncpoint
        {
            return Err(e);
        }
        let deadline = Instant::now() + wait;
        loop {
            while let Ok(ev) = self.rx.try_recv() {
                self.on(ev)?;
            }
            if let Some(d) = self.buffer.front() {
                let batch = d.batch;
                let persistent = d.md.persistence == sealmq_mqi::Persistence::Persistent;
                let b = self.batches.get(&batch);
                let settled = b.is_some_and(|b| matches!(b.settled, Some(Ok(()))));
                // Read-ahead: a persistent message is the last of its batch; its batch is
                // committed now that the application reached it.
                if self.opts.mode == ConsumeMode::ReadAhead
                    && persistent
                    && b.is_some_and(|b| !b.settling && b.total.is_some())
                {
                    self.settle(batch, true)?;
                }
                let ready = match self.opts.mode {
                    ConsumeMode::Auto | ConsumeMode::ReadAhead => !persistent || settled,
                    _ => true,
                };
                if ready && let Some(d) = self.buffer.pop_front() {
                    if let Some(b) = self.batches.get_mut(&batch) {
                        b.taken += 1;
                    }
                    match self.opts.mode {
                        ConsumeMode::Syncpoint => self.last = Some(batch),
                        ConsumeMode::ReadAhead => {
                            self.give_credit(1, false)?;
                            self.settle_if_taken(batch)?;
                            self.forget_done(batch);
                        }
                        _ => {
                            self.give_credit(1, false)?;
                            self.forget_done(batch);
                        }
                    }
                    return self.reveal(d).map(Some);
                }
            } else if let Some(e) = &self.ended {
                return Err(e.clone());
            }
            let left = deadline.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(left) {
                Ok(ev) => self.on(ev)?,
                Err(RecvTimeoutError::Timeout) => return Ok(None),
                Err(RecvTimeoutError::Disconnected) => return Err(closed()),
            }
        }
    }

    /// Stops the consumer (MQCTL STOP) and settles what it holds: under syncpoint, batches
    /// whose messages were all processed are committed, the others backed out (their
    /// messages go back to the queue, backout counts raised); outside one, batches not yet
    /// committed are backed out and the messages already committed but not yet handed out
    /// are returned here, in order, to be processed.
    pub fn stop(mut self) -> Result<Vec<Got>> {
        self.stop_inner()
    }

    pub(crate) fn stop_inner(&mut self) -> Result<Vec<Got>> {
        if self.stopped {
            return Ok(Vec::new());
        }
        self.stopped = true;
        let deadline = Instant::now() + Duration::from_secs(60);
        let stop = Request::ConsumeStop { tag: self.tag };
        let r = self.send(CONSUMER_ID | self.tag, &stop).and_then(|_| {
            // Everything pushed arrives before the answer.
            loop {
                let left = deadline.saturating_duration_since(Instant::now());
                match self.rx.recv_timeout(left) {
                    Ok(Event::Stopped(r)) => return r,
                    Ok(Event::Broken(e)) => return Err(e),
                    Ok(ev) => self.on(ev)?,
                    Err(_) => return Err(closed()),
                }
            }
        });
        let out = r.and_then(|_| self.settle_all(deadline));
        lock(&self.routes.0).remove(&self.tag);
        out
    }

    fn settle_all(&mut self, deadline: Instant) -> Result<Vec<Got>> {
        if self.opts.mode == ConsumeMode::Browse {
            return Ok(Vec::new());
        }
        if let Some(b) = self.last.take()
            && let Some(x) = self.batches.get_mut(&b)
        {
            x.processed += 1;
        }
        let open: Vec<(u32, bool)> = self
            .batches
            .iter()
            .filter(|(_, b)| !b.settling)
            .map(|(n, b)| {
                let commit = match self.opts.mode {
                    ConsumeMode::Syncpoint => b.total.is_some_and(|t| t == b.processed),
                    ConsumeMode::ReadAhead => {
                        b.taken > 0
                            && !self.buffer.iter().any(|d| {
                                d.batch == *n
                                    && d.md.persistence == sealmq_mqi::Persistence::Persistent
                            })
                    }
                    _ => false,
                };
                (*n, commit)
            })
            .collect();
        for (n, commit) in open {
            self.settle(n, commit)?;
        }
        while self
            .batches
            .values()
            .any(|b| b.settling && b.settled.is_none())
            && self.opts.mode != ConsumeMode::Syncpoint
            || self.opts.mode == ConsumeMode::Syncpoint && !self.batches.is_empty()
        {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(left) {
                Ok(Event::Broken(e)) => return Err(e),
                Ok(ev) => self.on(ev)?,
                Err(_) => return Err(closed()),
            }
        }
        let left: Vec<Delivery> = self.buffer.drain(..).collect();
        if self.opts.mode == ConsumeMode::ReadAhead {
            // Not taken, in committed batches: non-persistent, gone as with MQ's read-ahead.
            return Ok(Vec::new());
        }
        // Each revealed as the application would get it; one failing its checks went to the
        // protection error queue and is not handed over.
        let mut out = Vec::with_capacity(left.len());
        for d in left {
            match self.reveal(d) {
                Ok(g) => out.push(g),
                Err(e) if e.reason == ReasonCode::SecurityError => {}
                Err(e) => return Err(e),
            }
        }
        Ok(out)
    }

    /// Runs `f` for each message on a thread of its own until [`CallbackHandle::stop`]
    /// (MQCB with a callback, then MQCTL START): the consumer's messages in order; under
    /// syncpoint a message counts as processed when `f` returns.
    pub fn start_callback(mut self, mut f: impl FnMut(Got) + Send + 'static) -> CallbackHandle {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let t = std::thread::spawn(move || -> Result<u64> {
            let mut n = 0u64;
            while !flag.load(Ordering::Acquire) {
                if let Some(g) = self.next(Duration::from_millis(50))? {
                    f(g);
                    n += 1;
                }
            }
            for g in self.stop_inner()? {
                f(g);
                n += 1;
            }
            Ok(n)
        });
        CallbackHandle { stop, t }
    }
}

impl Drop for Consumer {
    fn drop(&mut self) {
        let _ = self.stop_inner();
    }
}

/// A consumer running a callback ([`Consumer::start_callback`]).
pub struct CallbackHandle {
    stop: Arc<AtomicBool>,
    t: std::thread::JoinHandle<Result<u64>>,
}

impl CallbackHandle {
    /// Stops the consumer (MQCTL STOP) once the current callback returned; returns how many
    /// messages the callback was given.
    pub fn stop(self) -> Result<u64> {
        self.stop.store(true, Ordering::Release);
        self.t.join().map_err(|_| ClientError {
            reason: ReasonCode::UnexpectedError,
            detail: "the consumer's callback panicked".into(),
        })?
    }
}

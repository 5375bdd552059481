//! Asynchronous consume (wire version 2; docs/wire.md "Asynchronous consume"): one pusher
//! thread per consumer gets the handle's messages and pushes them to the client while the
//! connection's thread goes on serving requests (settlements, credit, commits, puts).
//!
//! Each batch is got in a unit of work of its own (a twin of the application's connection:
//! same identity and handle, its own unit of work), so a batch is committed or backed out as
//! one whatever else the application does. The pusher stops when the client's credit runs
//! out; a batch ends when it is full, when `batch_ms` passed since its first message, or when
//! no further message is there at once. Unsettled batches are backed out when the consumer's
//! connection ends (dropping their connections backs them out), so a crash of the
//! application redelivers them, backout counts raised.
//!
//! Locks: the connection's writer (`Out`) is taken per frame by both threads; `credit` and
//! `batches` are short; none is held while the engine gets a message.

use crate::icpt::Icpt;
use sealmq_engine::mqi::{Browse, GetOptions};
use sealmq_engine::{Connection, Hobj, Match, QueueManager};
use sealmq_types::ReasonCode;
use sealmq_types::sync::lock;
use sealmq_wire::consume::mode;
use sealmq_wire::{ConsumeReq, Delivery, Response};
use std::collections::HashMap;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// The connection's writer, shared by its thread and its pushers.
pub(crate) type Out = Arc<Mutex<Box<dyn Write + Send>>>;

/// Consumers one connection may run at once.
const MAX_CONSUMERS: usize = 32;

/// Pusher threads the whole process may run at once: a thread each, so that many idle
/// consumers cannot take the host's process limit (200 connections of 32 consumers would
/// be 6,400 threads). Past it, a new consumer is refused with 2102; existing ones go on.
pub(crate) const MAX_PUSHERS: usize = 1024;

/// Pusher threads running now, in this process.
static PUSHERS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// One counted pusher thread; dropping it (when the thread ends) uncounts it.
struct PusherSlot;

impl PusherSlot {
    fn take() -> Option<PusherSlot> {
        PUSHERS
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < MAX_PUSHERS).then_some(n + 1)
            })
            .ok()
            .map(|_| PusherSlot)
    }
}

impl Drop for PusherSlot {
    fn drop(&mut self) {
        PUSHERS.fetch_sub(1, Ordering::AcqRel);
    }
}

/// How long a pusher with nothing to push waits for a message before it looks whether it
/// was stopped.
const IDLE_WAIT: Duration = Duration::from_millis(100);

/// What the connection's thread and a pusher share.
struct Shared {
    stop: AtomicBool,
    /// Messages the client may still be sent; never above MAXUMSGS, whatever it grants.
    credit: Mutex<u64>,
    /// Messages pushed and not settled (not counting browsed ones); the pusher waits while
    /// MAXUMSGS of them are held, whatever credit says.
    held: std::sync::atomic::AtomicU64,
    /// MAXUMSGS when the consumer started.
    most: u64,
    more: Condvar,
    /// Batches pushed and not settled, with the units of work that got them (one per batch;
    /// read-ahead: one per message).
    unsettled: Mutex<HashMap<u32, (u32, Vec<Connection>)>>,
    /// Twins with no unit of work open, for the next batches.
    idle: Mutex<Vec<Connection>>,
}

struct Consumer {
    hobj: u32,
    shared: Arc<Shared>,
    pusher: Option<std::thread::JoinHandle<()>>,
}

/// A connection's consumers, by tag.
#[derive(Default)]
pub(crate) struct Consumers(HashMap<u32, Consumer>);

/// What a pusher needs of its connection.
pub(crate) struct Source<'a> {
    pub qm: &'a Arc<QueueManager>,
    pub conn: &'a Connection,
    pub hobj: Arc<Hobj>,
    /// The topic string when the handle is a subscription's queue (its policy is the topic's).
    pub topic: Option<String>,
    pub out: Out,
    /// QM-side interception on this connection, with the keystore to unprotect with.
    pub intercept: Option<Arc<sealmq_protect::Protector>>,
    /// The client speaks a protocol version without message properties: leave them out.
    pub strip_properties: bool,
    /// What the connection's handles got and were pushed (a protection error is accepted
    /// only for one of them).
    pub recent: Arc<Mutex<crate::dispatch::RecentGets>>,
}

impl Consumers {
    /// Starts consumer `req.tag` on the handle; refused when the tag is in use or the request
    /// makes no sense.
    pub(crate) fn start(&mut self, src: Source<'_>, req: ConsumeReq) -> Result<(), (u32, String)> {
        if self.0.contains_key(&req.tag) {
            return Err((
                ReasonCode::UnexpectedError.code(),
                format!("consumer {} is already started", req.tag),
            ));
        }
        if req.mode > mode::READAHEAD {
            return Err((
                ReasonCode::UnexpectedError.code(),
                format!("unknown consume mode {}", req.mode),
            ));
        }
        // Stopped consumers whose batches are all settled are gone already (`forget_idle`).
        if self.0.values().filter(|c| c.pusher.is_some()).count() >= MAX_CONSUMERS {
            return Err((
                sealmq_types::ReasonCode::HandleNotAvailable.code(),
                format!("a connection runs at most {MAX_CONSUMERS} consumers: stop one first"),
            ));
        }
        if req.mode == mode::BROWSE && !src.hobj_browsable() {
            return Err((
                ReasonCode::NotOpenForBrowse.code(),
                "the handle was not opened for browse".into(),
            ));
        }
        // Unsettled messages count as MQ's uncommitted ones (MAXUMSGS): a window, a batch,
        // the credit granted later and the messages held unsettled are each at most that many.
        let most = u32::try_from(src.qm.qmgr().max_uncommitted()).unwrap_or(u32::MAX);
        let mut req = req;
        req.window = req.window.clamp(1, most);
        req.batch = req.batch.clamp(1, req.window);
        let Some(slot) = PusherSlot::take() else {
            return Err((
                sealmq_types::ReasonCode::ResourceProblem.code(),
                format!(
                    "the queue manager runs {MAX_PUSHERS} consumers already: try again later, \
                     or use gets"
                ),
            ));
        };
        let shared = Arc::new(Shared {
            stop: AtomicBool::new(false),
            credit: Mutex::new(u64::from(req.window)),
            held: std::sync::atomic::AtomicU64::new(0),
            most: u64::from(most),
            more: Condvar::new(),
            unsettled: Mutex::new(HashMap::new()),
            idle: Mutex::new(Vec::new()),
        });
        // The client unprotects (client-side protection): it may report a pushed message
        // that fails its checks, so what is pushed is remembered.
        let protected = match &src.topic {
            Some(t) => src.qm.topic_policy(t).is_some(),
            None => src.qm.has_policy(&src.hobj.name),
        };
        let recent = (src.intercept.is_none() && protected).then_some(src.recent);
        let pusher = Pusher {
            recent,
            topic: src.topic,
            qm: src.qm.clone(),
            first: src.conn.uow_twin(),
            hobj: src.hobj,
            out: src.out,
            intercept: src.intercept,
            strip_properties: src.strip_properties,
            req: req.clone(),
            shared: shared.clone(),
        };
        let t = std::thread::Builder::new()
            .name(format!("consume-{}", req.tag))
            .spawn(move || {
                let _slot = slot;
                pusher.run()
            })
            .map_err(|e| {
                (
                    ReasonCode::ResourceProblem.code(),
                    format!("cannot start a consumer thread: {e}"),
                )
            })?;
        self.0.insert(
            req.tag,
            Consumer {
                hobj: req.hobj,
                shared,
                pusher: Some(t),
            },
        );
        Ok(())
    }

    pub(crate) fn credit(&self, tag: u32, n: u32) {
        if let Some(c) = self.0.get(&tag) {
            let mut credit = lock(&c.shared.credit);
            *credit = credit.saturating_add(u64::from(n)).min(c.shared.most);
            c.shared.more.notify_all();
        }
    }

    /// Commits or backs out a pushed batch: (reason, detail), reason 0 when done.
    /// Drops consumer `tag` if it was stopped and has nothing left to settle.
    fn forget_idle(&mut self, tag: u32) {
        let idle = self
            .0
            .get(&tag)
            .is_some_and(|c| c.pusher.is_none() && lock(&c.shared.unsettled).is_empty());
        if idle {
            self.0.remove(&tag);
        }
    }

    pub(crate) fn settle(&mut self, tag: u32, batch: u32, commit: bool) -> (u32, String) {
        let r = self.settle_batch(tag, batch, commit);
        self.forget_idle(tag);
        r
    }

    fn settle_batch(&self, tag: u32, batch: u32, commit: bool) -> (u32, String) {
        let Some(c) = self.0.get(&tag) else {
            return (
                ReasonCode::UnexpectedError.code(),
                format!("no consumer {tag}"),
            );
        };
        let Some((count, conns)) = lock(&c.shared.unsettled).remove(&batch) else {
            return (
                ReasonCode::UnexpectedError.code(),
                format!("batch {batch} of consumer {tag} is not pushed or settled"),
            );
        };
        let mut r = Ok(());
        for conn in &conns {
            let done = if commit {
                conn.commit()
            } else {
                conn.backout()
            };
            if r.is_ok() {
                r = done;
            }
        }
        lock(&c.shared.idle).extend(conns);
        c.shared.held.fetch_sub(u64::from(count), Ordering::AcqRel);
        c.shared.more.notify_all();
        match r {
            Ok(()) => (0, String::new()),
            Err(e) => (e.reason.code(), e.detail),
        }
    }

    /// Stops consumer `tag` and waits until its pusher has ended: nothing more is pushed for
    /// it. Its unsettled batches stay for the client to settle.
    pub(crate) fn stop(&mut self, tag: u32) -> bool {
        match self.0.get_mut(&tag) {
            Some(c) => {
                c.halt();
                self.forget_idle(tag);
                true
            }
            None => false,
        }
    }

    /// Ends every consumer of handle `hobj` (it is being closed), backing out their unsettled
    /// batches.
    pub(crate) fn close_handle(&mut self, hobj: u32) {
        let tags: Vec<u32> = self
            .0
            .iter()
            .filter(|(_, c)| c.hobj == hobj)
            .map(|(t, _)| *t)
            .collect();
        let mut ending: Vec<Consumer> = tags.iter().filter_map(|t| self.0.remove(t)).collect();
        halt_all(ending.iter_mut());
    }
}

/// Stops pushers together: each is told first, then each is waited for, so that ending many
/// costs one pusher's wait (at most IDLE_WAIT), not one each.
fn halt_all<'a>(cs: impl Iterator<Item = &'a mut Consumer>) {
    let cs: Vec<&mut Consumer> = cs.collect();
    for c in &cs {
        c.shared.stop.store(true, Ordering::Release);
        c.shared.more.notify_all();
    }
    for c in cs {
        c.halt();
    }
}

impl Consumer {
    fn halt(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        self.shared.more.notify_all();
        if let Some(t) = self.pusher.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Consumers {
    /// The connection ended: pushers stop; unsettled batches are backed out as their
    /// connections drop.
    fn drop(&mut self) {
        halt_all(self.0.values_mut());
    }
}

impl Source<'_> {
    fn hobj_browsable(&self) -> bool {
        self.hobj.opened_for_browse()
    }
}

struct Pusher {
    qm: Arc<QueueManager>,
    first: Connection,
    hobj: Arc<Hobj>,
    /// A subscription's topic string (its policy is the topic's).
    topic: Option<String>,
    out: Out,
    intercept: Option<Arc<sealmq_protect::Protector>>,
    strip_properties: bool,
    req: ConsumeReq,
    shared: Arc<Shared>,
    recent: Option<Arc<Mutex<crate::dispatch::RecentGets>>>,
}

/// What one get of the pusher gave.
enum Step {
    Msg(Box<Delivery>),
    Nothing,
    /// The consumer cannot go on: (reason, detail) told to the client.
    End(u32, String),
}

impl Pusher {
    fn stopped(&self) -> bool {
        self.shared.stop.load(Ordering::Acquire) || self.qm.is_quiescing()
    }

    /// Whether a message may be pushed now: credit left, and fewer than MAXUMSGS held.
    fn may_push(&self, credit: u64) -> bool {
        credit > 0 && self.shared.held.load(Ordering::Acquire) < self.shared.most
    }

    /// Waits for credit (and room under MAXUMSGS); false when stopped.
    fn wait_credit(&self) -> bool {
        let mut c = lock(&self.shared.credit);
        while !self.may_push(*c) {
            if self.stopped() {
                return false;
            }
            c = self
                .shared
                .more
                .wait_timeout(c, IDLE_WAIT)
                .map(|(g, _)| g)
                .unwrap_or_else(|p| p.into_inner().0);
        }
        !self.stopped()
    }

    fn send(&self, r: &Response, flush: bool) -> bool {
        let mut w = lock(&self.out);
        let ok = sealmq_wire::write_response_unflushed(&mut *w, 0, r).is_ok();
        ok && (!flush || w.flush().is_ok())
    }

    /// A twin with no unit of work open.
    fn twin(&self, spare: &mut Vec<Connection>) -> Connection {
        spare
            .pop()
            .or_else(|| lock(&self.shared.idle).pop())
            .unwrap_or_else(|| self.first.uow_twin())
    }

    fn push(&self, d: Delivery) -> bool {
        if self.req.mode != mode::BROWSE {
            self.shared.held.fetch_add(1, Ordering::AcqRel);
        }
        let ok = self.send(&Response::Delivery(d), false);
        let mut c = lock(&self.shared.credit);
        *c = c.saturating_sub(1);
        ok
    }

    fn run(self) {
        let mut spare: Vec<Connection> = Vec::new();
        let mut batch_no = 0u32;
        // Whether the client was told the queue had nothing for it (since the last push).
        let mut told_empty = false;
        let browse = self.req.mode == mode::BROWSE;
        // Read-ahead gets each message in a unit of work of its own, so that a persistent
        // message got while a batch of non-persistent ones is open starts the next batch,
        // alone (carried), instead of joining theirs.
        let per_message = self.req.mode == mode::READAHEAD;
        let mut carried: Option<(Connection, Box<Delivery>)> = None;
        'batches: while carried.is_some() || self.wait_credit() {
            batch_no = batch_no.wrapping_add(1).max(1);
            let mut conns: Vec<Connection> = Vec::new();
            let mut count = 0u32;
            let mut began = None::<Instant>;
            let mut ended = None;
            if let Some((c, mut d)) = carried.take() {
                d.batch = batch_no;
                if !self.push(*d) {
                    break;
                }
                conns.push(c);
                count = 1;
            } else {
                if !per_message {
                    conns.push(self.twin(&mut spare));
                }
                loop {
                    let full = count >= self.req.batch.max(1);
                    let late = began.is_some_and(|b: Instant| {
                        b.elapsed() >= Duration::from_millis(u64::from(self.req.batch_ms))
                    });
                    if full || late || self.stopped() || !self.may_push(*lock(&self.shared.credit))
                    {
                        break;
                    }
                    // The first message of a batch is waited for (once the client knows there
                    // is none now); the rest are taken only when already there.
                    let wait = (count == 0 && told_empty).then_some(IDLE_WAIT);
                    let own = per_message.then(|| self.twin(&mut spare));
                    let step = match (&own, conns.first()) {
                        (Some(c), _) | (None, Some(c)) => self.get(c, batch_no, wait, browse),
                        (None, None) => break,
                    };
                    match step {
                        Step::Msg(d) => {
                            told_empty = false;
                            let persistent =
                                d.md.persistence == sealmq_engine::Persistence::Persistent;
                            if let Some(c) = own {
                                if persistent && count > 0 {
                                    carried = Some((c, d));
                                    break;
                                }
                                conns.push(c);
                            }
                            if !self.push(*d) {
                                break 'batches;
                            }
                            count += 1;
                            began.get_or_insert_with(Instant::now);
                            if persistent && per_message {
                                break;
                            }
                        }
                        Step::Nothing if count == 0 => {
                            spare.extend(own);
                            if !told_empty {
                                // Batch 0: nothing for this consumer right now (a get that
                                // does not wait learns it without a round trip of its own).
                                let none = Response::BatchEnd {
                                    tag: self.req.tag,
                                    batch: 0,
                                    count: 0,
                                };
                                if !self.send(&none, true) {
                                    break 'batches;
                                }
                                told_empty = true;
                            }
                        }
                        Step::Nothing => {
                            spare.extend(own);
                            break;
                        }
                        Step::End(reason, detail) => {
                            spare.extend(own);
                            ended = Some((reason, detail));
                            break;
                        }
                    }
                }
            }
            if count > 0 {
                let end = Response::BatchEnd {
                    tag: self.req.tag,
                    batch: batch_no,
                    count,
                };
                if browse {
                    spare.extend(conns);
                } else {
                    lock(&self.shared.unsettled).insert(batch_no, (count, conns));
                }
                if !self.send(&end, true) {
                    break;
                }
            } else {
                spare.extend(conns);
            }
            if let Some((reason, detail)) = ended {
                // Batch 0: the consumer itself ended.
                let _ = self.send(
                    &Response::Settled {
                        tag: self.req.tag,
                        batch: 0,
                        reason,
                        detail,
                    },
                    true,
                );
                break;
            }
        }
        // A carried message not pushed goes back with its unit of work (the twin drops).
        drop(carried);
        let _ = lock(&self.out).flush();
    }

    fn get(&self, conn: &Connection, batch: u32, wait: Option<Duration>, browse: bool) -> Step {
        let gmo = GetOptions {
            syncpoint: !browse,
            wait,
            browse: if browse { Browse::Next } else { Browse::None },
            matching: Match {
                msg_id: self.req.match_msg_id,
                correl_id: self.req.match_correl_id,
                selector: None,
            },
            accept_truncated: false,
            buffer: None,
        };
        let policy = self.intercept.as_ref().and_then(|p| {
            sealmq_engine::intercept::get_policy(&self.qm, &self.hobj.name, self.topic.as_deref())
                .map(|policy| (p, policy))
        });
        let got = match policy {
            Some((p, policy)) => {
                let icpt = Icpt {
                    on: true,
                    protector: Some(p),
                    stored: std::cell::Cell::new(None),
                };
                let g = sealmq_wire::GetReq::from_options(self.req.hobj, &gmo);
                match icpt.get(conn, &self.hobj, &g, &policy) {
                    Response::Got { md, payload, .. } => Ok((md, payload)),
                    // A message failing its checks went to the protection error queue in
                    // this batch's unit of work: nothing to deliver.
                    Response::Err { reason, .. } if reason == ReasonCode::SecurityError.code() => {
                        return Step::Nothing;
                    }
                    Response::Err { reason, detail } => Err((reason, detail)),
                    other => Err((
                        ReasonCode::UnexpectedError.code(),
                        format!("unexpected {other:?}"),
                    )),
                }
            }
            None => conn
                .get(&self.hobj, gmo)
                .map(|g| (g.md, g.payload))
                .map_err(|e| (e.reason.code(), e.detail)),
        };
        match got {
            Ok((mut md, payload)) => {
                if let Some(r) = &self.recent
                    && !browse
                {
                    lock(r).pushed(self.req.hobj, &md.msg_id, &payload);
                }
                if self.strip_properties {
                    md.properties.clear();
                }
                Step::Msg(Box::new(Delivery {
                    tag: self.req.tag,
                    batch,
                    md,
                    payload,
                }))
            }
            Err((reason, _)) if reason == ReasonCode::NoMsgAvailable.code() => Step::Nothing,
            Err((reason, detail)) => Step::End(reason, detail),
        }
    }
}

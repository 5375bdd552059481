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
use sealmq_wire::consume::mode;
use sealmq_wire::{ConsumeReq, Delivery, Response};
use std::collections::HashMap;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// The connection's writer, shared by its thread and its pushers.
pub(crate) type Out = Arc<Mutex<Box<dyn Write + Send>>>;

/// How long a pusher with nothing to push waits for a message before it looks whether it
/// was stopped.
const IDLE_WAIT: Duration = Duration::from_millis(100);

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// What the connection's thread and a pusher share.
struct Shared {
    stop: AtomicBool,
    credit: Mutex<u64>,
    more: Condvar,
    /// Batches pushed and not settled, with the unit of work that got them.
    unsettled: Mutex<HashMap<u32, Connection>>,
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
    pub out: Out,
    /// QM-side interception on this connection, with the keystore to unprotect with.
    pub intercept: Option<Arc<sealmq_protect::Protector>>,
}

impl Consumers {
    /// Starts consumer `req.tag` on the handle; refused when the tag is in use or the request
    /// makes no sense.
    pub(crate) fn start(&mut self, src: Source<'_>, req: ConsumeReq) -> Result<(), (u32, String)> {
        if self.0.contains_key(&req.tag) {
            return Err((2195, format!("consumer {} is already started", req.tag)));
        }
        if req.mode > mode::BROWSE {
            return Err((2195, format!("unknown consume mode {}", req.mode)));
        }
        if req.mode == mode::BROWSE && !src.hobj_browsable() {
            return Err((2036, "the handle was not opened for browse".into()));
        }
        let shared = Arc::new(Shared {
            stop: AtomicBool::new(false),
            credit: Mutex::new(u64::from(req.window.max(1))),
            more: Condvar::new(),
            unsettled: Mutex::new(HashMap::new()),
            idle: Mutex::new(Vec::new()),
        });
        let pusher = Pusher {
            qm: src.qm.clone(),
            first: src.conn.uow_twin(),
            hobj: src.hobj,
            out: src.out,
            intercept: src.intercept,
            req: req.clone(),
            shared: shared.clone(),
        };
        let t = std::thread::Builder::new()
            .name(format!("consume-{}", req.tag))
            .spawn(move || pusher.run())
            .map_err(|e| (2102, format!("cannot start a consumer thread: {e}")))?;
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
            *lock(&c.shared.credit) += u64::from(n);
            c.shared.more.notify_all();
        }
    }

    /// Commits or backs out a pushed batch: (reason, detail), reason 0 when done.
    pub(crate) fn settle(&self, tag: u32, batch: u32, commit: bool) -> (u32, String) {
        let Some(c) = self.0.get(&tag) else {
            return (2195, format!("no consumer {tag}"));
        };
        let Some(conn) = lock(&c.shared.unsettled).remove(&batch) else {
            return (
                2195,
                format!("batch {batch} of consumer {tag} is not pushed or settled"),
            );
        };
        let r = if commit {
            conn.commit()
        } else {
            conn.backout()
        };
        lock(&c.shared.idle).push(conn);
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
        for t in tags {
            if let Some(mut c) = self.0.remove(&t) {
                c.halt();
            }
        }
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
        for c in self.0.values_mut() {
            c.halt();
        }
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
    out: Out,
    intercept: Option<Arc<sealmq_protect::Protector>>,
    req: ConsumeReq,
    shared: Arc<Shared>,
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

    /// Waits for credit; false when stopped.
    fn wait_credit(&self) -> bool {
        let mut c = lock(&self.shared.credit);
        while *c == 0 {
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

    fn run(self) {
        let mut spare = Some(self.first.uow_twin());
        let mut batch_no = 0u32;
        let browse = self.req.mode == mode::BROWSE;
        'batches: while self.wait_credit() {
            let conn = spare
                .take()
                .or_else(|| lock(&self.shared.idle).pop())
                .unwrap_or_else(|| self.first.uow_twin());
            batch_no = batch_no.wrapping_add(1).max(1);
            let mut count = 0u32;
            let mut began = None::<Instant>;
            let mut ended = None;
            loop {
                let full = count >= self.req.batch.max(1);
                let late = began.is_some_and(|b: Instant| {
                    b.elapsed() >= Duration::from_millis(u64::from(self.req.batch_ms))
                });
                if full || late || self.stopped() || *lock(&self.shared.credit) == 0 {
                    break;
                }
                // The first message of a batch is waited for; the rest are taken only when
                // already there.
                let wait = (count == 0).then_some(IDLE_WAIT);
                match self.get(&conn, batch_no, wait, browse) {
                    Step::Msg(d) => {
                        if !self.send(&Response::Delivery(*d), false) {
                            break 'batches;
                        }
                        *lock(&self.shared.credit) -= 1;
                        count += 1;
                        began.get_or_insert_with(Instant::now);
                    }
                    Step::Nothing if count == 0 => continue,
                    Step::Nothing => break,
                    Step::End(reason, detail) => {
                        ended = Some((reason, detail));
                        break;
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
                    spare = Some(conn);
                } else {
                    lock(&self.shared.unsettled).insert(batch_no, conn);
                }
                if !self.send(&end, true) {
                    break;
                }
            } else {
                spare = Some(conn);
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
            },
            accept_truncated: false,
            buffer: None,
        };
        let policy = self.intercept.as_ref().filter(|_| {
            self.qm
                .policy(&self.hobj.name)
                .is_some_and(|p| p.qop() != sealmq_protect::Qop::None)
        });
        let got = match policy {
            Some(p) => {
                let icpt = Icpt {
                    on: true,
                    protector: Some(p),
                    stored: std::cell::Cell::new(None),
                };
                let g = crate::dispatch::get_req(self.req.hobj, &gmo);
                match icpt.get(&self.qm, conn, &self.hobj, &g) {
                    Response::Got { md, payload, .. } => Ok((md, payload)),
                    // A message failing its checks went to the protection error queue in
                    // this batch's unit of work: nothing to deliver.
                    Response::Err { reason: 2063, .. } => return Step::Nothing,
                    Response::Err { reason, detail } => Err((reason, detail)),
                    other => Err((2195, format!("unexpected {other:?}"))),
                }
            }
            None => conn
                .get(&self.hobj, gmo)
                .map(|g| (g.md, g.payload))
                .map_err(|e| (e.reason.code(), e.detail)),
        };
        match got {
            Ok((md, payload)) => Step::Msg(Box::new(Delivery {
                tag: self.req.tag,
                batch,
                md,
                payload,
            })),
            Err((2033, _)) => Step::Nothing,
            Err((reason, detail)) => Step::End(reason, detail),
        }
    }
}

//! Automatic reconnection (MQ's MQCNO_RECONNECT, issue 26): a connection that follows its
//! queue manager when the connection is lost — the active instance of a replicated queue
//! manager killed, switched or drained — by connecting again (a connection list passes over
//! the replicas) and reopening every handle the application holds, under the same handle
//! numbers.
//!
//! What the application sees of a reconnection is only what it must act on:
//! - a call that needs no answer from the lost connection (an open, a close, an inquiry, a
//!   backout, or any call after the connection was seen lost) is made again on the new one;
//! - a call inside a unit of work fails with 2003 (MQRC_BACKED_OUT): the queue manager backed
//!   the unit of work out when it lost the connection, so the application does it again;
//! - a call whose outcome cannot be known — a put or get outside syncpoint, a commit, MQSC —
//!   fails with 2549 (MQRC_CALL_INTERRUPTED), as MQ's does: the application checks, or
//!   accepts the doubt;
//! - when no address serves within [`Reconnecting::timeout`], the call fails with 2548
//!   (MQRC_RECONNECT_FAILED); one that refuses for good (2035, say) fails at once with its
//!   reason.

use crate::{Client, ClientError, Result};
use sealmq_mqi::{GetOptions, Got, Md, OpenOptions};
use sealmq_types::ReasonCode;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// How long a reconnection is tried by default before calls fail with 2548 (MQ's default
/// reconnect timeout is 30 minutes; an application that wants that sets it).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

/// Makes a connection: typically [`Client::connect_first`] over a connection list, with the
/// application's TLS, channel, credentials and interception set up as the first time.
pub type Connector = Box<dyn FnMut() -> Result<Client> + Send>;

/// Whether a failure means the connection (or its queue manager) is gone, so that
/// reconnecting is the cure: broken, quiescing or stopping.
pub fn lost(e: &ClientError) -> bool {
    [
        ReasonCode::ConnectionBroken,
        ReasonCode::QMgrQuiescing,
        ReasonCode::QMgrStopping,
        ReasonCode::ConnectionQuiescing,
        ReasonCode::ConnectionStopping,
    ]
    .contains(&e.reason)
}

/// An open handle as the application knows it, and how to open it again.
struct Handle {
    name: String,
    qmgr: Option<String>,
    dyn_name: String,
    opts: OpenOptions,
    /// A topic opened to publish (object, string), or a subscription, instead of a queue.
    kind: Kind,
    /// The handle on the current connection.
    live: u32,
}

/// What a handle is, for reopening it.
enum Kind {
    Queue,
    /// Opened with [`Client::open_topic`]: opened again the same way.
    Topic {
        object: String,
        topic: String,
    },
    /// A subscription's queue: a durable one is resumed by name; a non-durable one is made
    /// again (what was published while the connection was lost is not in it, as in MQ).
    Subscription(crate::pubsub::Subscription),
}

/// What a call may do when its connection is lost mid-way.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Retry {
    /// Nothing happened that the application must know of: make it again.
    Again,
    /// It may or may not have taken effect: 2549.
    Unknown,
}

/// A connection that reconnects by itself (see the module's text).
pub struct Reconnecting {
    client: Option<Client>,
    /// `None`: a plain connection, whose loss every call reports (2009).
    connect: Option<Connector>,
    handles: BTreeMap<u32, Handle>,
    next_handle: u32,
    /// Whether the application has work under syncpoint not yet committed or backed out.
    in_uow: bool,
    /// How long a reconnection is tried before a call fails with 2548.
    pub timeout: Duration,
    reconnects: u64,
}

impl Reconnecting {
    /// Connects with `connect` (and again with it whenever the connection is lost).
    pub fn connect(mut connect: Connector) -> Result<Reconnecting> {
        let client = connect()?;
        let mut r = Reconnecting::plain(client);
        r.connect = Some(connect);
        Ok(r)
    }

    /// A connection that does not reconnect: the same calls, a lost connection reported.
    pub fn plain(client: Client) -> Reconnecting {
        Reconnecting {
            client: Some(client),
            connect: None,
            handles: BTreeMap::new(),
            next_handle: 1,
            in_uow: false,
            timeout: DEFAULT_TIMEOUT,
            reconnects: 0,
        }
    }

    /// How many times the connection was made again.
    pub fn reconnects(&self) -> u64 {
        self.reconnects
    }

    /// The connection in use, for what this type does not wrap (a reconnection does not
    /// restore what is done through it beyond the handles opened here).
    pub fn client(&mut self) -> Result<&mut Client> {
        self.live()
    }

    fn live(&mut self) -> Result<&mut Client> {
        if self.client.is_none() {
            self.reconnect()?;
        }
        self.client.as_mut().ok_or_else(|| ClientError {
            reason: ReasonCode::ReconnectFailed,
            detail: "no connection".into(),
        })
    }

    /// Connects again (until the timeout) and reopens every handle.
    fn reconnect(&mut self) -> Result<()> {
        let deadline = Instant::now() + self.timeout;
        let mut pause = Duration::from_millis(50);
        let mut last: String;
        let Some(connect) = self.connect.as_mut() else {
            return Err(ClientError {
                reason: ReasonCode::ConnectionBroken,
                detail: "the connection was lost (this connection does not reconnect)".into(),
            });
        };
        loop {
            match connect() {
                Ok(mut c) => match reopen(&mut c, &mut self.handles) {
                    Ok(()) => {
                        self.client = Some(c);
                        self.reconnects += 1;
                        return Ok(());
                    }
                    Err(e) if lost(&e) || crate::connlist::try_next(&e) => last = e.to_string(),
                    Err(e) => return Err(e),
                },
                Err(e) if lost(&e) || crate::connlist::try_next(&e) => last = e.to_string(),
                Err(e) => return Err(e),
            }
            if Instant::now() + pause > deadline {
                return Err(ClientError {
                    reason: ReasonCode::ReconnectFailed,
                    detail: format!(
                        "the connection was lost and no queue manager took it again within {} s \
                         (last: {last})",
                        self.timeout.as_secs()
                    ),
                });
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_secs(1));
        }
    }

    /// Runs `f` on the live connection with the live handle for `hobj` (0: none); on a lost
    /// connection reconnects and answers as the module's text says.
    fn with<T>(
        &mut self,
        hobj: u32,
        retry: Retry,
        mut f: impl FnMut(&mut Client, u32) -> Result<T>,
    ) -> Result<T> {
        loop {
            // Connected first (a reconnection reopens the handles), then the live handle.
            if self.client.is_none() {
                self.reconnect()?;
            }
            let live = match hobj {
                0 => 0,
                h => self
                    .handles
                    .get(&h)
                    .map(|x| x.live)
                    .ok_or_else(|| ClientError {
                        reason: ReasonCode::HobjError,
                        detail: format!("handle {h} is not open"),
                    })?,
            };
            let r = f(self.live()?, live);
            match r {
                Err(e) if lost(&e) && self.connect.is_some() => {
                    self.client = None;
                    let in_uow = std::mem::take(&mut self.in_uow);
                    self.reconnect()?;
                    if in_uow {
                        return Err(ClientError {
                            reason: ReasonCode::BackedOut,
                            detail: format!(
                                "the connection was lost ({}) and the queue manager backed the \
                                 unit of work out; connected again: do the unit of work again",
                                e.detail
                            ),
                        });
                    }
                    if retry == Retry::Unknown {
                        return Err(ClientError {
                            reason: ReasonCode::CallInterrupted,
                            detail: format!(
                                "the connection was lost during the call ({}), which may or may \
                                 not have taken effect; connected again",
                                e.detail
                            ),
                        });
                    }
                }
                r => return r,
            }
        }
    }

    /// MQOPEN; the handle stays valid across reconnections.
    pub fn open(&mut self, name: &str, opts: OpenOptions) -> Result<(u32, String)> {
        self.open_with(name, None, "", opts)
    }

    /// MQOPEN of `name` at queue manager `qmgr` (for output), as [`Client::open_at`].
    pub fn open_at(&mut self, name: &str, qmgr: &str, opts: OpenOptions) -> Result<(u32, String)> {
        self.open_with(name, Some(qmgr), "", opts)
    }

    /// MQOPEN of a model queue, as [`Client::open_dynamic`]: a reconnection makes the
    /// dynamic queue again under the name it was given first.
    pub fn open_dynamic(
        &mut self,
        name: &str,
        opts: OpenOptions,
        dyn_name: &str,
    ) -> Result<(u32, String)> {
        self.open_with(name, None, dyn_name, opts)
    }

    fn open_with(
        &mut self,
        name: &str,
        qmgr: Option<&str>,
        dyn_name: &str,
        opts: OpenOptions,
    ) -> Result<(u32, String)> {
        let (live, resolved) = self.with(0, Retry::Again, |c, _| {
            open_on(c, name, qmgr, dyn_name, &opts)
        })?;
        let h = self.next_handle;
        self.next_handle += 1;
        // A model queue's dynamic queue is reopened by the name it was given (a permanent
        // one is still there) or made again under it (a temporary one went with the
        // connection); for other queues the name given to MQOPEN is opened again.
        let made = qmgr.is_none() && resolved != name;
        self.handles.insert(
            h,
            Handle {
                name: name.to_string(),
                qmgr: qmgr.map(str::to_string),
                dyn_name: if made {
                    resolved.clone()
                } else {
                    String::new()
                },
                opts,
                kind: Kind::Queue,
                live,
            },
        );
        Ok((h, resolved))
    }

    /// A handle of another kind than a queue, known under a number of its own.
    fn keep(&mut self, name: &str, kind: Kind, live: u32) -> u32 {
        let h = self.next_handle;
        self.next_handle += 1;
        self.handles.insert(
            h,
            Handle {
                name: name.to_string(),
                qmgr: None,
                dyn_name: String::new(),
                opts: OpenOptions::default(),
                kind,
                live,
            },
        );
        h
    }

    /// Publishes on `topic` ([`Client::publish_with`]); lost mid-way: 2549 (or 2003 under
    /// syncpoint).
    pub fn publish(
        &mut self,
        topic: &str,
        md: &mut Md,
        payload: &[u8],
        syncpoint: bool,
        retain: bool,
    ) -> Result<()> {
        self.in_uow |= syncpoint;
        let first = md.clone();
        self.with(0, Retry::Unknown, |c, _| {
            *md = first.clone();
            c.publish_with(topic, md, payload, syncpoint, retain)
        })
    }

    /// MQOPEN of a topic to publish ([`Client::open_topic`]); the handle stays valid across
    /// reconnections.
    pub fn open_topic(&mut self, object: &str, topic: &str) -> Result<(u32, String)> {
        let (live, full) = self.with(0, Retry::Again, |c, _| c.open_topic(object, topic))?;
        let kind = Kind::Topic {
            object: object.to_string(),
            topic: topic.to_string(),
        };
        Ok((self.keep(&full, kind, live), full))
    }

    /// MQSUB with a managed queue ([`Client::subscribe`]); the handle stays valid across
    /// reconnections: a durable subscription is resumed, a non-durable one made again.
    pub fn subscribe(&mut self, s: &crate::pubsub::Subscription) -> Result<(u32, String)> {
        let (live, queue) = self.with(0, Retry::Again, |c, _| c.subscribe(s))?;
        let mut again = s.clone();
        if s.durable {
            again.resume = true;
        }
        Ok((self.keep(&queue, Kind::Subscription(again), live), queue))
    }

    /// Ends subscription `name` ([`Client::unsubscribe`]); handles on its queue close.
    pub fn unsubscribe(&mut self, name: &str) -> Result<()> {
        let r = self.with(0, Retry::Again, |c, _| c.unsubscribe(name));
        self.handles
            .retain(|_, x| !matches!(&x.kind, Kind::Subscription(s) if s.name == name));
        r
    }

    /// MQCLOSE.
    pub fn close(&mut self, hobj: u32) -> Result<()> {
        let r = self.with(hobj, Retry::Again, |c, h| c.close(h));
        self.handles.remove(&hobj);
        r
    }

    /// MQPUT (with client-side protection when the connector set a keystore).
    pub fn put(&mut self, hobj: u32, md: &mut Md, payload: &[u8], syncpoint: bool) -> Result<()> {
        self.in_uow |= syncpoint;
        let first = md.clone();
        self.with(hobj, Retry::Unknown, |c, h| {
            *md = first.clone();
            c.put(h, md, payload, syncpoint)
        })
    }

    /// MQPUT1.
    pub fn put1(&mut self, name: &str, md: &mut Md, payload: &[u8], syncpoint: bool) -> Result<()> {
        self.in_uow |= syncpoint;
        let first = md.clone();
        self.with(0, Retry::Unknown, |c, _| {
            *md = first.clone();
            c.put1(name, md, payload, syncpoint)
        })
    }

    /// MQGET.
    pub fn get(&mut self, hobj: u32, gmo: &GetOptions) -> Result<Got> {
        self.in_uow |= gmo.syncpoint;
        self.with(hobj, Retry::Unknown, |c, h| c.get(h, gmo))
    }

    /// MQCMIT. Lost mid-way, its outcome is unknown: 2549.
    pub fn commit(&mut self) -> Result<()> {
        if !self.in_uow {
            return self.with(0, Retry::Again, |c, _| c.commit());
        }
        // Cut off, the commit may have taken effect: not 2003 but 2549.
        self.in_uow = false;
        self.with(0, Retry::Unknown, |c, _| c.commit())
    }

    /// MQBACK: a lost connection backed the unit of work out already.
    pub fn backout(&mut self) -> Result<()> {
        let in_uow = std::mem::take(&mut self.in_uow);
        match self.with(0, Retry::Again, |c, _| c.backout()) {
            Err(e) if in_uow && e.reason == ReasonCode::BackedOut => Ok(()),
            r => r,
        }
    }

    /// Starts asynchronous consume of `hobj` on the connection in use ([`Client::consume`]).
    pub fn consume(&mut self, hobj: u32, opts: crate::ConsumeOptions) -> Result<crate::Consumer> {
        self.with(hobj, Retry::Again, |c, h| c.consume(h, opts.clone()))
    }

    /// After a consumer saw its connection lost: connects again (reopening the handles) unless
    /// another call did already; whether a unit of work was lost with it.
    pub(crate) fn recover(&mut self, seen: u64) -> Result<bool> {
        if self.connect.is_none() || self.reconnects > seen {
            return Ok(false);
        }
        self.client = None;
        let in_uow = std::mem::take(&mut self.in_uow);
        self.reconnect()?;
        Ok(in_uow)
    }

    /// MQSC through the connection; lost mid-way: 2549.
    pub fn mqsc(&mut self, script: &str, json: bool) -> Result<(String, u32)> {
        self.with(0, Retry::Unknown, |c, _| c.mqsc(script, json))
    }

    /// Ends the connection.
    pub fn disconnect(mut self) -> Result<()> {
        match self.client.take() {
            Some(c) => c.disconnect(),
            None => Ok(()),
        }
    }
}

fn open_on(
    c: &mut Client,
    name: &str,
    qmgr: Option<&str>,
    dyn_name: &str,
    opts: &OpenOptions,
) -> Result<(u32, String)> {
    match qmgr {
        Some(q) => c.open_at(name, q, *opts),
        None => c.open_dynamic(name, *opts, dyn_name),
    }
}

/// Opens a handle again: a dynamic queue first by its own name, then from its model; a topic
/// or a subscription as it was made.
fn reopen_one(c: &mut Client, x: &Handle) -> Result<u32> {
    match &x.kind {
        Kind::Queue => {}
        Kind::Topic { object, topic } => return c.open_topic(object, topic).map(|(l, _)| l),
        Kind::Subscription(s) => return c.subscribe(s).map(|(l, _)| l),
    }
    if !x.dyn_name.is_empty() {
        match c.open(&x.dyn_name, x.opts) {
            Ok((live, _)) => return Ok(live),
            Err(e) if e.reason == ReasonCode::UnknownObjectName => {}
            Err(e) => return Err(e),
        }
    }
    open_on(c, &x.name, x.qmgr.as_deref(), &x.dyn_name, &x.opts).map(|(live, _)| live)
}

/// Opens every handle again on a new connection.
fn reopen(c: &mut Client, handles: &mut BTreeMap<u32, Handle>) -> Result<()> {
    for (h, x) in handles.iter_mut() {
        let live = reopen_one(c, x).map_err(|e| ClientError {
            reason: e.reason,
            detail: format!(
                "reopening handle {h} ({}) after reconnecting: {}",
                x.name, e.detail
            ),
        })?;
        x.live = live;
    }
    Ok(())
}

/// Asynchronous consume that follows its connection ([`Reconnecting::consume_following`]):
/// when the connection is lost, [`Following::next`] connects again and starts consuming the
/// reopened handle again. Under syncpoint, messages handed out since the last commit the queue
/// manager confirmed are delivered again: the call that saw the loss fails with 2003 so the
/// application drops what it did with them; otherwise the consumer goes on as if nothing
/// happened (a message pushed but not yet handed out is simply pushed again).
pub struct Following {
    inner: Option<crate::Consumer>,
    hobj: u32,
    opts: crate::ConsumeOptions,
    /// Messages handed out by the current consumer.
    handed: u64,
    /// The connection's reconnection count when the current consumer started.
    seen: u64,
    /// Messages confirmed committed by consumers before the current one.
    committed_before: u64,
    /// The connection was made again: consume again at the next call (not at once, so that
    /// the application may first look at the queue, e.g. for what came back).
    restart: bool,
}

impl Reconnecting {
    /// Starts asynchronous consume of `hobj` that survives reconnections.
    pub fn consume_following(
        &mut self,
        hobj: u32,
        opts: crate::ConsumeOptions,
    ) -> Result<Following> {
        let inner = self.consume(hobj, opts.clone())?;
        Ok(Following {
            inner: Some(inner),
            hobj,
            opts,
            handed: 0,
            seen: self.reconnects,
            committed_before: 0,
            restart: false,
        })
    }
}

impl Following {
    /// The next message, waiting up to `wait`; `conn` is the connection the consumer was
    /// started on.
    pub fn next(&mut self, conn: &mut Reconnecting, wait: Duration) -> Result<Option<Got>> {
        self.next_by(wait, |f| f(conn))
    }

    /// [`Following::next`] reaching the connection through `with_conn` only to recover (an
    /// async application's other calls go on while this one waits).
    pub(crate) fn next_by(
        &mut self,
        wait: Duration,
        mut with_conn: impl FnMut(&mut dyn FnMut(&mut Reconnecting) -> Result<()>) -> Result<()>,
    ) -> Result<Option<Got>> {
        let deadline = Instant::now() + wait;
        loop {
            if self.restart {
                let (hobj, opts) = (self.hobj, self.opts.clone());
                let mut started = None;
                with_conn(&mut |conn| {
                    started = Some((conn.reconnects, conn.consume(hobj, opts.clone())?));
                    Ok(())
                })?;
                if let Some((seen, c)) = started {
                    (self.seen, self.inner, self.handed, self.restart) = (seen, Some(c), 0, false);
                }
            }
            let left = deadline.saturating_duration_since(Instant::now());
            let r = match self.inner.as_mut() {
                Some(c) => c.next(left),
                None => Err(ClientError {
                    reason: ReasonCode::ConnectionBroken,
                    detail: "the consumer is not running".into(),
                }),
            };
            let e = match r {
                Ok(Some(g)) => {
                    self.handed += 1;
                    return Ok(Some(g));
                }
                Ok(None) => return Ok(None),
                Err(e) if lost(&e) => e,
                Err(e) => return Err(e),
            };
            let seen = self.seen;
            let mut can = true;
            let uncommitted = self.lost();
            with_conn(&mut |conn| {
                can = conn.connect.is_some();
                if can {
                    conn.recover(seen).map(|_| ())
                } else {
                    Ok(())
                }
            })?;
            if !can {
                return Err(e);
            }
            if uncommitted {
                return Err(come_again(&e, ""));
            }
        }
    }

    /// The current consumer's connection is gone: it is to start again after a recovery.
    /// Whether messages it handed out were not confirmed committed (they come again).
    fn lost(&mut self) -> bool {
        let committed = self.inner.as_ref().map_or(0, |c| c.committed());
        let uncommitted =
            self.opts.mode == crate::ConsumeMode::Syncpoint && self.handed > committed;
        self.committed_before += committed;
        self.inner = None;
        self.restart = true;
        uncommitted
    }

    /// Messages the queue manager confirmed committed, over every reconnection (under
    /// syncpoint: the first this many handed out, never delivered again).
    pub fn committed(&self) -> u64 {
        self.committed_before + self.inner.as_ref().map_or(0, |c| c.committed())
    }

    /// Messages handed out and not yet confirmed committed (under syncpoint: those that come
    /// again if the connection is lost before their commit).
    pub fn uncommitted(&self) -> u64 {
        let committed = self.inner.as_ref().map_or(0, |c| c.committed());
        self.handed.saturating_sub(committed)
    }

    /// Stops the consumer ([`crate::Consumer::stop`]) on `conn`, the connection it was
    /// started on. Lost during the stop, under syncpoint with messages handed out since the
    /// last commit: the consumer is started again on a new connection and the call fails with
    /// 2003 (those messages come again: go on consuming, then stop again).
    pub fn stop(&mut self, conn: &mut Reconnecting) -> Result<Vec<Got>> {
        self.restart = false;
        let Some(c) = self.inner.as_mut() else {
            return Ok(Vec::new());
        };
        let e = match c.stop_inner() {
            Err(e) if lost(&e) && conn.connect.is_some() => e,
            r => {
                self.inner = None;
                return r;
            }
        };
        let uncommitted = self.lost();
        conn.recover(self.seen)?;
        if uncommitted {
            return Err(come_again(&e, " while the consumer stopped"));
        }
        self.restart = false;
        Ok(Vec::new())
    }
}

/// 2003 for a consumer whose connection was lost with messages not confirmed committed.
fn come_again(e: &ClientError, when: &str) -> ClientError {
    ClientError {
        reason: ReasonCode::BackedOut,
        detail: format!(
            "the connection was lost{when} ({}); messages handed out since the last commit \
             confirmed may have been backed out (they come again) or committed",
            e.detail
        ),
    }
}

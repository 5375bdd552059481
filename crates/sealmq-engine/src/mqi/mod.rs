//! The MQI (SPEC §3): connect, open, close here; put and put1 (`put.rs`), get with wait,
//! browse and match (`get.rs`), commit and backout (`uow.rs`). A [`Connection`] owns at most
//! one unit of work; dropping it backs the unit out.

use crate::authority::{AuthObj, auth};
use crate::error::{MqError, MqResult, mqerr};
use crate::objects::{DefType, QType, QueueDef};
use crate::qm::{QueueManager, read, write};
use crate::queue::{EntryState, Key, LocalQueue, TxId, Waiter};
use crate::records::Record;
use sealmq_types::ReasonCode;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

mod get;
mod publish;
mod put;
mod remote;
mod retained;
mod subscribe;
mod triggers;
mod uow;

pub use get::{DurableGet, GetStep, GetWait};
pub use put::{DurablePut, PutStep};
pub use retained::{TOPIC_PROP, retained_key};
pub use sealmq_mqi::{Browse, GetOptions, Got, OpenOptions, PutOptions};
pub use subscribe::{SubOpen, SubOptions};
pub use uow::{CommitStep, DurableCommit};

pub(crate) enum Target {
    Local(Arc<LocalQueue>),
    /// A remote queue: messages go to the transmission queue, addressed to `rqm`/`rname`.
    Remote {
        xmitq: Arc<LocalQueue>,
        rname: String,
        rqm: String,
    },
}

/// An open object.
pub struct Hobj {
    pub name: String,
    /// The local queue it resolved to (for a remote queue: the transmission queue).
    pub resolved: String,
    pub(crate) target: Target,
    opts: OpenOptions,
    /// Alias and base PUT/GET settings at open.
    put_allowed: bool,
    get_allowed: bool,
    cursor: Mutex<Option<Key>>,
    temporary: bool,
    closed: std::sync::atomic::AtomicBool,
    /// This handle's number in the connection registry.
    hid: u64,
    /// The connection's registry entry and the queue manager, to release the handle when it
    /// is closed or dropped (weak: a handle does not keep its connection alive).
    owner: Option<Owner>,
}

struct Owner {
    entry: std::sync::Weak<crate::conns::Entry>,
    qm: std::sync::Weak<QueueManager>,
}

impl Hobj {
    /// Opened with browse (MQOO_BROWSE).
    pub fn opened_for_browse(&self) -> bool {
        self.opts.browse
    }

    pub(crate) fn new(
        name: String,
        resolved: String,
        target: Target,
        opts: OpenOptions,
        put_allowed: bool,
    ) -> Hobj {
        Hobj {
            name,
            resolved,
            target,
            opts,
            put_allowed,
            get_allowed: false,
            cursor: Mutex::new(None),
            temporary: false,
            closed: std::sync::atomic::AtomicBool::new(false),
            hid: 0,
            owner: None,
        }
    }

    /// Gives back what the open took (the queue's open counts, the registry's handle, a
    /// temporary dynamic queue); `false` when that was done already.
    fn release(&self) -> bool {
        if self.closed.swap(true, Ordering::AcqRel) {
            return false;
        }
        let owner = self.owner.as_ref();
        if let Some(e) = owner.and_then(|o| o.entry.upgrade()) {
            e.closed(self.hid);
        }
        if let Target::Local(q) = &self.target {
            let mut st = q.lock();
            if self.opts.input_any() {
                st.open_input = st.open_input.saturating_sub(1);
                if self.opts.input_exclusive {
                    st.open_exclusive = false;
                }
            }
            if self.opts.output {
                st.open_output = st.open_output.saturating_sub(1);
            }
            if self.opts.browse {
                st.open_browse = st.open_browse.saturating_sub(1);
            }
        }
        if self.temporary
            && let Some(qm) = owner.and_then(|o| o.qm.upgrade())
        {
            write(&qm.defs).remove(&self.resolved);
            write(&qm.dyn_owners).remove(&self.resolved);
            // Its messages leave the cache's count, and a spill file goes with them.
            if let Some(q) = write(&qm.locals).remove(&self.resolved) {
                q.lock().destroy();
            }
        }
        true
    }
}

impl Drop for Hobj {
    /// A handle dropped without MQCLOSE (a refused AMQP attach, a task that ended, a
    /// connection that went) is closed: nothing an open took is kept.
    fn drop(&mut self) {
        self.release();
    }
}

impl std::fmt::Debug for Hobj {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Hobj({} -> {})", self.name, self.resolved)
    }
}

#[derive(Debug, Clone)]
enum Op {
    Put {
        q: Arc<LocalQueue>,
        seq: u64,
    },
    Get {
        q: Arc<LocalQueue>,
        seq: u64,
        persistent: bool,
    },
}

impl std::fmt::Debug for LocalQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "LocalQueue({})", self.name)
    }
}

/// The outcome of taking a message under the queue lock.
enum Taken {
    Done(Got),
    /// A persistent get outside a unit of work: hidden now, removed once the log is durable.
    Durable {
        got: Got,
        ticket: sealmq_storage::log::Ticket,
        seq: u64,
        tx: TxId,
    },
}

#[derive(Default)]
struct Uow {
    tx: TxId,
    ops: Vec<Op>,
    logged: bool,
    /// Units of work joined into this one (`Connection::join`): they end with it.
    joined: Vec<TxId>,
}

/// A connection to the queue manager.
pub struct Connection {
    pub(crate) qm: Arc<QueueManager>,
    /// The queue manager's own work (policies, the error queue): no authority checks.
    pub(crate) internal: bool,
    pub id: u64,
    pub user: String,
    pub appl: String,
    uow: Mutex<Option<Uow>>,
    /// This connection in the queue manager's registry (DISPLAY CONN).
    pub(crate) entry: Arc<crate::conns::Entry>,
    /// How a get that waits finds out, every so often, whether the application is still
    /// there (the server looks at its socket): see [`Connection::set_liveness`].
    liveness: Mutex<Option<Liveness>>,
}

/// Whether the application behind a connection is still there, asked every `every` while a
/// get waits.
#[derive(Clone)]
pub(crate) struct Liveness {
    pub(crate) every: Duration,
    pub(crate) alive: Arc<dyn Fn() -> bool + Send + Sync>,
}

impl Connection {
    /// Where this connection came from (the server sets it; DISPLAY CONN shows it).
    pub fn set_origin(&self, o: crate::conns::Origin) {
        self.entry.set_origin(o);
    }

    /// While a get waits, `alive` is asked every `every` (MQ's heartbeat interval, HBINT)
    /// whether the application is still there; when it is not, the get ends with 2009
    /// (CONNECTION_BROKEN) and the server ends the connection, backing out its unit of work.
    pub fn set_liveness(&self, every: Duration, alive: Arc<dyn Fn() -> bool + Send + Sync>) {
        *sealmq_types::sync::lock(&self.liveness) = Some(Liveness {
            every: every.max(Duration::from_millis(100)),
            alive,
        });
    }

    pub(crate) fn liveness(&self) -> Option<Liveness> {
        sealmq_types::sync::lock(&self.liveness).clone()
    }
}

pub use crate::objects::MAX_UNCOMMITTED;

impl Connection {
    /// MQCONN: `user` connects to `qm` (CONNECT authority on the queue manager) as
    /// application `appl`.
    pub fn connect(qm: &Arc<QueueManager>, user: &str, appl: &str) -> MqResult<Connection> {
        if qm.is_quiescing() {
            return mqerr!(QMgrQuiescing, "queue manager {} is ending", qm.name());
        }
        qm.check_authority(user, AuthObj::Qmgr, &qm.name(), auth::CONNECT)?;
        Ok(Connection::open_on(qm, user, appl, false))
    }

    /// A connection for the queue manager's own work (policies, triggers, channels): no
    /// authority checks, works while quiescing is not yet set.
    pub fn connect_internal(qm: &Arc<QueueManager>) -> MqResult<Connection> {
        Ok(Connection::open_on(
            qm,
            crate::md::QMGR_USER,
            "sealmq",
            true,
        ))
    }

    fn open_on(qm: &Arc<QueueManager>, user: &str, appl: &str, internal: bool) -> Connection {
        let id = qm.next_conn.fetch_add(1, Ordering::Relaxed);
        Connection {
            internal,
            qm: qm.clone(),
            id,
            user: user.to_string(),
            appl: appl.to_string(),
            uow: Mutex::new(None),
            entry: qm.conns.add(id, user, appl, internal),
            liveness: Mutex::new(None),
        }
    }
}

impl Connection {
    fn check_running(&self) -> MqResult<()> {
        if self.qm.is_quiescing() {
            return mqerr!(QMgrQuiescing, "queue manager {} is ending", self.qm.name());
        }
        Ok(())
    }

    /// MQOPEN: resolves aliases (one level, as MQ), remote definitions and model queues.
    pub fn open(&self, name: &str, opts: OpenOptions) -> MqResult<Hobj> {
        self.open_dynamic(name, opts, "AMQ.*")
    }

    /// MQOPEN with a dynamic queue name pattern for model queues (`PREFIX.*`).
    pub fn open_dynamic(&self, name: &str, opts: OpenOptions, dyn_name: &str) -> MqResult<Hobj> {
        // MAXHANDS: a place in the connection's handles before anything is made or counted.
        let max = if self.internal || self.entry.internal {
            None
        } else {
            Some(read(&self.qm.qmgr).max_handles())
        };
        let slot = self.entry.reserve(self.qm.conns.next_handle(), max)?;
        self.open_in(name, opts, dyn_name, slot, false)
    }

    /// Opens the managed queue of subscription `sub` for input, for its subscriber: the
    /// queue is the subscription's, so no queue authority is asked (SUB on the topic was).
    pub fn open_subscription(&self, sub: &crate::subs::SubDef) -> MqResult<Hobj> {
        if sub.destclas != crate::subs::DestClass::Managed
            || (!self.internal && sub.subuser != self.user)
        {
            return mqerr!(
                NotAuthorized,
                "subscription '{}' is not one of '{}''s with a managed queue",
                sub.name,
                self.user
            );
        }
        let max = Some(read(&self.qm.qmgr).max_handles());
        let slot = self.entry.reserve(self.qm.conns.next_handle(), max)?;
        self.open_in(&sub.dest, OpenOptions::input(), "AMQ.*", slot, true)
    }

    fn open_in(
        &self,
        name: &str,
        opts: OpenOptions,
        dyn_name: &str,
        slot: crate::conns::HandleSlot,
        trusted: bool,
    ) -> MqResult<Hobj> {
        self.check_running()?;
        check_open_options(name, &opts)?;
        let def = self.qm.queue_def(name)?;
        if !self.internal && !trusted {
            self.qm
                .check_authority(&self.user, AuthObj::Queue, name, needed_authority(&opts))?;
        }
        let (target_def, mut put_allowed, get_allowed, temporary) =
            self.target_def(&def, name, dyn_name)?;
        let target = match self.target(&target_def, name, &opts)? {
            Found::Target(t, put) => {
                put_allowed &= put;
                t
            }
            // A remote definition naming this queue manager: the local queue.
            Found::Here(local) => return self.open_in(&local, opts, dyn_name, slot, trusted),
        };
        let resolved = match &target {
            Target::Local(q) => q.name.clone(),
            Target::Remote { xmitq, .. } => xmitq.name.clone(),
        };
        // System queues hold the queue manager's own state (policies, channel sync records,
        // error and dead letters): a put from outside its administration paths needs an
        // authority record that grants it by name, whoever asks, the administrator included.
        if !self.internal
            && opts.output
            && matches!(target, Target::Local(_))
            && is_system_queue(&resolved)
        {
            let q = &resolved;
            self.qm
                .check_records(&self.user, AuthObj::Queue, q, auth::PUT, true)?;
        }
        let mut opts = opts;
        if let Target::Local(q) = &target {
            count_open(q, &mut opts)?;
        }
        let shown = if def.qtype == QType::Model {
            resolved.clone()
        } else {
            name.to_string()
        };
        let hid = slot.fill(&shown, &resolved, &opts);
        if opts.input_any() && matches!(target, Target::Local(_)) {
            for d in self.qm.triggers_at_initq_open(&resolved) {
                triggers::fire(&self.qm, &d);
            }
        }
        Ok(Hobj {
            name: shown,
            resolved,
            target,
            opts,
            put_allowed,
            get_allowed,
            cursor: Mutex::new(None),
            temporary,
            closed: std::sync::atomic::AtomicBool::new(false),
            hid,
            owner: Some(Owner {
                entry: Arc::downgrade(&self.entry),
                qm: Arc::downgrade(&self.qm),
            }),
        })
    }

    /// The definition an open of `def` reaches — an alias's base (put and get allowed only
    /// where both allow them), a dynamic queue made from a model, else `def` itself — with
    /// whether puts and gets are allowed and whether the queue is temporary.
    fn target_def(
        &self,
        def: &QueueDef,
        name: &str,
        dyn_name: &str,
    ) -> MqResult<(QueueDef, bool, bool, bool)> {
        let (put, get) = (def.put_enabled, def.get_enabled);
        match def.qtype {
            QType::Alias => {
                let Ok(base) = self.qm.queue_def(&def.target) else {
                    return mqerr!(
                        UnknownAliasBaseQ,
                        "alias '{name}' names '{}', which is not defined",
                        def.target
                    );
                };
                if base.qtype == QType::Alias || base.qtype == QType::Model {
                    return mqerr!(
                        UnknownAliasBaseQ,
                        "alias '{name}' must name a local or remote queue"
                    );
                }
                let (p, g) = (put && base.put_enabled, get && base.get_enabled);
                Ok((base, p, g, false))
            }
            QType::Model => {
                let dq = self.create_dynamic(def, dyn_name)?;
                let temporary = dq.def_type == DefType::TemporaryDynamic;
                Ok((dq, put, get, temporary))
            }
            _ => Ok((def.clone(), put, get, false)),
        }
    }

    /// Where puts and gets through the handle go: the local queue, or a remote queue's
    /// transmission queue (with whether it allows puts).
    fn target(&self, target_def: &QueueDef, name: &str, opts: &OpenOptions) -> MqResult<Found> {
        match target_def.qtype {
            QType::Local => match self.qm.local(&target_def.name) {
                Some(q) => Ok(Found::Target(Target::Local(q), true)),
                None => mqerr!(
                    UnknownObjectName,
                    "queue '{}' is not defined",
                    target_def.name
                ),
            },
            QType::Remote => {
                if opts.input_any() || opts.browse {
                    return mqerr!(
                        OptionNotValidForType,
                        "remote queue '{name}' can only be opened for output"
                    );
                }
                let xq = if !target_def.xmitq.is_empty() {
                    self.qm
                        .xmitq_named(&target_def.xmitq, &target_def.remote_qmgr)?
                } else {
                    match self.qm.route(&target_def.remote_qmgr)? {
                        Some((xq, _)) => xq,
                        None if target_def.remote_name != name => {
                            return Ok(Found::Here(target_def.remote_name.clone()));
                        }
                        None => {
                            return mqerr!(
                                UnknownObjectName,
                                "remote queue '{name}' names itself on this queue manager"
                            );
                        }
                    }
                };
                let put = xq.lock().def.put_enabled;
                Ok(Found::Target(
                    Target::Remote {
                        xmitq: xq,
                        rname: target_def.remote_name.clone(),
                        rqm: target_def.remote_qmgr.clone(),
                    },
                    put,
                ))
            }
            _ => mqerr!(UnknownObjectName, "'{name}' cannot be opened"),
        }
    }

    fn create_dynamic(&self, model: &QueueDef, pattern: &str) -> MqResult<QueueDef> {
        let prefix = pattern.strip_suffix('*').unwrap_or(pattern);
        let n = self.qm.next_seq.fetch_add(1, Ordering::Relaxed);
        let name = if pattern.ends_with('*') {
            format!("{prefix}{:016X}", n)
        } else {
            pattern.to_string()
        };
        let mut def = model.clone();
        def.name = name;
        def.qtype = QType::Local;
        if def.def_type == DefType::TemporaryDynamic {
            // Temporary dynamic queues live in memory and hold no persistent messages.
            crate::objects::validate_name(&def.name)?;
            if read(&self.qm.defs).contains_key(&def.name) {
                return mqerr!(
                    ObjectAlreadyExists,
                    "dynamic queue '{}' already exists",
                    def.name
                );
            }
            write(&self.qm.locals).insert(
                def.name.clone(),
                LocalQueue::new(def.clone(), self.qm.qctx.clone()),
            );
            write(&self.qm.defs).insert(def.name.clone(), def.clone());
            if !self.user.is_empty() {
                write(&self.qm.dyn_owners).insert(def.name.clone(), self.user.clone());
            }
        } else {
            self.qm.define(def.clone(), false)?;
            // Its creator holds every authority on it, as on a temporary one (MQ's rule), in
            // a record of its own, kept with the queue (removed when the queue is deleted).
            if !self.user.is_empty() {
                self.qm.set_authrec(crate::authority::AuthRec {
                    profile: def.name.clone(),
                    objtype: crate::authority::AuthObj::Queue,
                    principal: self.user.clone(),
                    auths: crate::authority::auth::ALL,
                    group: false,
                })?;
            }
        }
        Ok(def)
    }

    /// MQCLOSE. A temporary dynamic queue is deleted with its messages.
    pub fn close(&self, h: &Hobj) -> MqResult<()> {
        if !h.release() {
            return mqerr!(HobjError, "'{}' is already closed", h.name);
        }
        Ok(())
    }

    fn uow_tx(&self, uow: &mut Option<Uow>) -> TxId {
        self.entry.uow_active.store(true, Ordering::Relaxed);
        uow.get_or_insert_with(|| Uow {
            tx: self.qm.new_tx(),
            ..Default::default()
        })
        .tx
    }

    /// MQOPEN of `name` at `qmgr` with the authority of `principal` (a receiving channel's
    /// MCAUSER, or the user in a message's context under PUTAUT(CTX)): every check an
    /// application of that principal meets. The handle is used by this connection, so its puts
    /// join this connection's unit of work.
    pub fn open_as(
        &self,
        principal: &str,
        name: &str,
        qmgr: &str,
        opts: OpenOptions,
    ) -> MqResult<Hobj> {
        let twin = Connection {
            internal: false,
            qm: self.qm.clone(),
            id: self.id,
            user: principal.to_string(),
            appl: self.appl.clone(),
            uow: Mutex::new(None),
            entry: self.entry.clone(),
            liveness: Mutex::new(None),
        };
        twin.open_at(name, qmgr, opts)
    }

    /// A connection with this one's identity and handles' authority, and a unit of work of its
    /// own: asynchronous consume gets each pushed batch in one, settled apart from the
    /// application's. It shows as this connection (DISPLAY CONN).
    pub fn uow_twin(&self) -> Connection {
        Connection {
            internal: self.internal,
            qm: self.qm.clone(),
            id: self.id,
            user: self.user.clone(),
            appl: self.appl.clone(),
            uow: Mutex::new(None),
            entry: self.entry.clone(),
            liveness: Mutex::new(self.liveness()),
        }
    }

    /// A connection with this one's identity for the queue manager's own work (no authority
    /// checks) and no unit of work of its own.
    pub(crate) fn internal_twin(&self) -> Connection {
        let mut twin = self.uow_twin();
        twin.internal = true;
        twin
    }

    /// Whether a unit of work is in progress.
    pub fn in_uow(&self) -> bool {
        self.uow.lock().map(|u| u.is_some()).unwrap_or(false)
    }

    pub fn qm(&self) -> &Arc<QueueManager> {
        &self.qm
    }
}

impl Drop for Connection {
    /// A connection that ends without committing backs out (SPEC §3).
    fn drop(&mut self) {
        let _ = self.backout();
        // Twins (open_as, internal_twin) share the entry: the last connection holding it
        // (the registry holds one more) takes it out.
        if Arc::strong_count(&self.entry) <= 2 {
            self.qm.conns.remove(self.id);
        }
    }
}

/// Whether `name` is one of the queue manager's own queues (`SYSTEM.*`).
pub fn is_system_queue(name: &str) -> bool {
    name.starts_with("SYSTEM.")
}

/// What an open's target is found to be.
enum Found {
    /// The queue, with whether the queue it puts to allows puts.
    Target(Target, bool),
    /// A remote definition that names this queue manager: the local queue of that name.
    Here(String),
}

/// The open options make sense together.
fn check_open_options(name: &str, opts: &OpenOptions) -> MqResult<()> {
    if !(opts.input_any() || opts.browse || opts.output || opts.inquire || opts.set) {
        return mqerr!(OptionsError, "open '{name}': no open option given");
    }
    if opts.input_shared && opts.input_exclusive {
        return mqerr!(
            OptionsError,
            "open '{name}': input shared and exclusive together"
        );
    }
    Ok(())
}

/// The authority an open with `opts` needs.
fn needed_authority(opts: &OpenOptions) -> u32 {
    [
        (opts.output, auth::PUT),
        (opts.input_any(), auth::GET),
        (opts.browse, auth::BROWSE),
        (opts.inquire, auth::INQ),
        (opts.set, auth::SET),
    ]
    .into_iter()
    .filter(|(on, _)| *on)
    .fold(0, |n, (_, a)| n | a)
}

/// Counts the open on the local queue: NOSHARE makes every input open exclusive, DEFSOPT
/// decides AS_Q_DEF, and an exclusive open is refused while others have it open for input.
fn count_open(q: &LocalQueue, opts: &mut OpenOptions) -> MqResult<()> {
    let mut st = q.lock();
    if opts.input_any() {
        let exclusive = opts.input_exclusive
            || !st.def.share
            || (opts.input_as_q_def && st.def.defsopt_exclusive);
        opts.input_exclusive = exclusive;
        opts.input_shared = !exclusive;
        opts.input_as_q_def = false;
        if st.open_exclusive || (opts.input_exclusive && st.open_input > 0) {
            return mqerr!(
                ObjectInUse,
                "queue '{}' is open for exclusive input",
                q.name
            );
        }
        st.open_input += 1;
        st.open_exclusive |= opts.input_exclusive;
    }
    if opts.output {
        st.open_output += 1;
    }
    if opts.browse {
        st.open_browse += 1;
    }
    Ok(())
}

//! The connections a queue manager serves and the handles they hold, for DISPLAY CONN and
//! DISPLAY QSTATUS TYPE(HANDLE). Each [`Connection`](crate::Connection) registers itself here
//! when made and leaves when dropped; the server adds where it came from (process id, channel,
//! connection name). One short mutex per connection; nothing here is on the message path
//! beyond an open or close.

use sealmq_mqi::OpenOptions;
use sealmq_types::sync::lock;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Where a connection came from (set by the server).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Origin {
    /// The application's process id (local connections).
    pub pid: Option<u32>,
    /// The SVRCONN channel (network connections).
    pub channel: String,
    /// The partner's address, `host(port)`.
    pub conname: String,
    /// TLS: the protocol (SECPROT: TLSV13, TLSV12) and key-exchange group (SSLGROUP)
    /// negotiated; empty without TLS.
    pub secprot: String,
    pub sslgroup: String,
}

/// One open handle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HandleInfo {
    pub id: u64,
    /// The name opened, and the local queue it resolved to.
    pub name: String,
    pub resolved: String,
    pub input_shared: bool,
    pub input_exclusive: bool,
    pub output: bool,
    pub browse: bool,
    pub inquire: bool,
    pub set: bool,
}

/// A connection as DISPLAY CONN shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnInfo {
    pub id: u64,
    pub user: String,
    pub appl: String,
    pub internal: bool,
    pub origin: Origin,
    /// Seconds since the epoch.
    pub started: u64,
    pub uow_active: bool,
    pub handles: Vec<HandleInfo>,
}

pub(crate) struct Entry {
    id: u64,
    user: String,
    appl: String,
    pub(crate) internal: bool,
    started: u64,
    origin: Mutex<Origin>,
    handles: Mutex<HashMap<u64, HandleInfo>>,
    pub(crate) uow_active: AtomicBool,
}

impl Entry {
    pub(crate) fn set_origin(&self, o: Origin) {
        *lock(&self.origin) = o;
    }

    /// A place for handle `id` among this connection's handles, unless it holds `max`
    /// (MAXHANDS) already: 2017 HANDLE_NOT_AVAILABLE. Dropping the slot unfilled gives it back.
    pub(crate) fn reserve(
        self: &Arc<Self>,
        id: u64,
        max: Option<u32>,
    ) -> crate::error::MqResult<HandleSlot> {
        let mut h = lock(&self.handles);
        if let Some(max) = max
            && h.len() >= max as usize
        {
            return crate::error::mqerr!(
                HandleNotAvailable,
                "this connection holds MAXHANDS({max}) handles already: close some, or ALTER \
                 QMGR MAXHANDS(n)"
            );
        }
        h.insert(
            id,
            HandleInfo {
                id,
                name: String::new(),
                resolved: String::new(),
                input_shared: false,
                input_exclusive: false,
                output: false,
                browse: false,
                inquire: false,
                set: false,
            },
        );
        Ok(HandleSlot {
            entry: self.clone(),
            id,
            filled: false,
        })
    }

    pub(crate) fn closed(&self, id: u64) {
        lock(&self.handles).remove(&id);
    }

    fn info(&self) -> ConnInfo {
        let mut handles: Vec<HandleInfo> = lock(&self.handles).values().cloned().collect();
        handles.sort_by_key(|h| h.id);
        ConnInfo {
            id: self.id,
            user: self.user.clone(),
            appl: self.appl.clone(),
            internal: self.internal,
            origin: lock(&self.origin).clone(),
            started: self.started,
            uow_active: self.uow_active.load(Ordering::Relaxed),
            handles,
        }
    }
}

/// A handle's place reserved by [`Entry::reserve`]; given back when dropped unless filled.
pub(crate) struct HandleSlot {
    entry: Arc<Entry>,
    id: u64,
    filled: bool,
}

impl HandleSlot {
    /// Records what the handle opened; its number.
    pub(crate) fn fill(mut self, name: &str, resolved: &str, o: &OpenOptions) -> u64 {
        self.filled = true;
        lock(&self.entry.handles).insert(
            self.id,
            HandleInfo {
                id: self.id,
                name: name.to_string(),
                resolved: resolved.to_string(),
                input_shared: o.input_shared,
                input_exclusive: o.input_exclusive,
                output: o.output,
                browse: o.browse,
                inquire: o.inquire,
                set: o.set,
            },
        );
        self.id
    }
}

impl Drop for HandleSlot {
    fn drop(&mut self) {
        if !self.filled {
            self.entry.closed(self.id);
        }
    }
}

#[derive(Default)]
pub(crate) struct Registry {
    map: Mutex<HashMap<u64, Arc<Entry>>>,
    next_handle: AtomicU64,
}

impl Registry {
    pub(crate) fn add(&self, id: u64, user: &str, appl: &str, internal: bool) -> Arc<Entry> {
        let e = Arc::new(Entry {
            id,
            user: user.to_string(),
            appl: appl.to_string(),
            internal,
            started: sealmq_types::time::now_secs(),
            origin: Mutex::new(Origin::default()),
            handles: Mutex::new(HashMap::new()),
            uow_active: AtomicBool::new(false),
        });
        lock(&self.map).insert(id, e.clone());
        e
    }

    pub(crate) fn remove(&self, id: u64) {
        lock(&self.map).remove(&id);
    }

    pub(crate) fn next_handle(&self) -> u64 {
        self.next_handle.fetch_add(1, Ordering::Relaxed) + 1
    }

    pub(crate) fn all(&self) -> Vec<ConnInfo> {
        let entries: Vec<Arc<Entry>> = lock(&self.map).values().cloned().collect();
        let mut v: Vec<ConnInfo> = entries.iter().map(|e| e.info()).collect();
        v.sort_by_key(|c| c.id);
        v
    }
}

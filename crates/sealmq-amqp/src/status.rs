//! What DISPLAY CHSTATUS shows of a running AMQP channel's connections (MQ's
//! `DISPLAY CHSTATUS(name) CHLTYPE(AMQP) CLIENTID(*)`): who each one is, where it comes from,
//! how many messages it sent and received, and its links.

use sealmq_types::sync::lock;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// The connections of one channel.
#[derive(Default)]
pub struct Clients {
    next: AtomicU64,
    open: Mutex<BTreeMap<u64, Arc<Client>>>,
}

impl Clients {
    /// Records a connection that authenticated; it is shown until the guard is dropped.
    /// `container`: the container id of the client's Open, shown as its CLIENTID (as MQ does);
    /// without one, the connection's number on the channel (`AMQP00000001`).
    pub fn add(
        self: &Arc<Self>,
        conname: String,
        mcauser: String,
        clntuser: Option<String>,
        container: Option<&str>,
        tls: sealmq_wire::tls::Agreed,
    ) -> ClientGuard {
        let id = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        let client_id = container
            .map(client_id_of)
            .filter(|c| !c.is_empty())
            .unwrap_or_else(|| format!("AMQP{id:08}"));
        let c = Arc::new(Client {
            id,
            client_id,
            conname,
            mcauser,
            clntuser,
            tls,
            started_ms: now_ms(),
            sent: AtomicU64::new(0),
            rcvd: AtomicU64::new(0),
            last_ms: AtomicU64::new(0),
            next_link: AtomicU64::new(0),
            links: Mutex::default(),
        });
        lock(&self.open).insert(id, c.clone());
        ClientGuard {
            clients: self.clone(),
            client: c,
        }
    }

    /// Every connection, oldest first.
    pub fn all(&self) -> Vec<ClientStatus> {
        lock(&self.open).values().map(|c| c.status()).collect()
    }
}

/// Removes its connection from the channel's status when dropped.
pub struct ClientGuard {
    clients: Arc<Clients>,
    pub client: Arc<Client>,
}

impl Drop for ClientGuard {
    fn drop(&mut self) {
        lock(&self.clients.open).remove(&self.client.id);
    }
}

impl Client {
    /// The client's container id (as DISPLAY CHSTATUS shows it as CLIENTID).
    pub fn client_id(&self) -> &str {
        &self.client_id
    }
}

/// One connection's figures.
pub struct Client {
    id: u64,
    client_id: String,
    conname: String,
    mcauser: String,
    clntuser: Option<String>,
    /// TLS: the protocol and key-exchange group negotiated (empty without TLS).
    tls: sealmq_wire::tls::Agreed,
    started_ms: u64,
    sent: AtomicU64,
    rcvd: AtomicU64,
    last_ms: AtomicU64,
    next_link: AtomicU64,
    links: Mutex<BTreeMap<u64, String>>,
}

impl Client {
    /// A message the application sent was put.
    pub fn received(&self) {
        self.rcvd.fetch_add(1, Ordering::Relaxed);
        self.last_ms.store(now_ms(), Ordering::Relaxed);
    }

    /// A message was sent to the application.
    pub fn sent(&self) {
        self.sent.fetch_add(1, Ordering::Relaxed);
        self.last_ms.store(now_ms(), Ordering::Relaxed);
    }

    /// Records a link (`what`: `PUT:queue`, `GET:queue`, `BROWSE:queue`) until the guard
    /// is dropped.
    pub fn link(self: &Arc<Self>, what: String) -> LinkGuard {
        let id = self.next_link.fetch_add(1, Ordering::Relaxed);
        lock(&self.links).insert(id, what);
        LinkGuard {
            client: self.clone(),
            id,
        }
    }

    fn status(&self) -> ClientStatus {
        ClientStatus {
            client_id: self.client_id.clone(),
            conname: self.conname.clone(),
            mcauser: self.mcauser.clone(),
            clntuser: self.clntuser.clone().unwrap_or_default(),
            secprot: self.tls.secprot.clone(),
            sslgroup: self.tls.group.clone(),
            msgs_sent: self.sent.load(Ordering::Relaxed),
            msgs_rcvd: self.rcvd.load(Ordering::Relaxed),
            last_msg_ms: self.last_ms.load(Ordering::Relaxed),
            started_ms: self.started_ms,
            links: lock(&self.links).values().cloned().collect(),
        }
    }
}

/// Removes its link from the connection's status when dropped.
pub struct LinkGuard {
    client: Arc<Client>,
    id: u64,
}

impl Drop for LinkGuard {
    fn drop(&mut self) {
        lock(&self.client.links).remove(&self.id);
    }
}

/// Longest container id shown; the rest is cut.
const MAX_CLIENT_ID: usize = 128;

/// A container id as CLIENTID shows it: the client chooses it, so it is cut to
/// [`MAX_CLIENT_ID`] characters, and what could not stand in MQSC output (controls, blanks,
/// quotes, parentheses, non-ASCII) becomes `_`.
pub fn client_id_of(container: &str) -> String {
    container
        .chars()
        .take(MAX_CLIENT_ID)
        .map(|c| {
            if c.is_ascii_graphic() && !matches!(c, '(' | ')' | '\'' | '"') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// A connection as DISPLAY CHSTATUS ... CLIENTID shows it.
#[derive(Debug, Clone)]
pub struct ClientStatus {
    /// The connection's number on the channel (`AMQP00000001`): fe2o3-amqp does not give the
    /// client's container id to the listening side.
    pub client_id: String,
    /// The client's address.
    pub conname: String,
    /// The principal it runs as.
    pub mcauser: String,
    /// The user id it authenticated with (SASL PLAIN), if any.
    pub clntuser: String,
    /// TLS: the protocol (SECPROT) and key-exchange group (SSLGROUP); empty without TLS.
    pub secprot: String,
    pub sslgroup: String,
    pub msgs_sent: u64,
    pub msgs_rcvd: u64,
    /// When it last sent or was sent a message (ms since the epoch; 0: never).
    pub last_msg_ms: u64,
    pub started_ms: u64,
    /// Its links: `PUT:queue`, `GET:queue`, `BROWSE:queue`.
    pub links: Vec<String>,
}

/// MQI accounting of one AMQP connection (ACCTMQI(ON)), kept by the queue manager's server:
/// each put, get, browse, commit and backout its links make, with the message bytes as stored
/// and the CPU the calling thread spent. The record is written when the last holder drops it.
pub trait Tally: Send + Sync {
    /// The calling thread's CPU clock, in nanoseconds.
    fn clock(&self) -> u64;
    /// One call: `op` is `put`, `get`, `browse`, `commit` or `backout`; `bytes` the message's
    /// stored size (0 for others); `cpu_ns` measured with [`Tally::clock`].
    fn call(&self, op: &'static str, ok: bool, bytes: u64, cpu_ns: u64);
}

/// Makes a connection's [`Tally`] when accounting is on: `(connection id, user, appl)`.
pub type Accounts =
    std::sync::Arc<dyn Fn(u64, &str, &str) -> Option<std::sync::Arc<dyn Tally>> + Send + Sync>;

/// Runs `f` timed for the tally, if there is one: what `f` returned, its CPU nanoseconds.
pub fn timed<T>(tally: Option<&std::sync::Arc<dyn Tally>>, f: impl FnOnce() -> T) -> (T, u64) {
    match tally {
        Some(t) => {
            let c0 = t.clock();
            let r = f();
            (r, t.clock().saturating_sub(c0))
        }
        None => (f(), 0),
    }
}

/// A unit of work committed, counted by accounting: its record appended in place and the
/// log's force awaited holding no thread (as the native Session commits), then applied — or
/// backed out when the force failed.
pub async fn commit(
    t: &sealmq_engine::Connection,
    tally: Option<&Arc<dyn Tally>>,
) -> Result<(), sealmq_engine::MqError> {
    use sealmq_engine::mqi::CommitStep;
    let (step, mut cpu) = timed(tally, || t.commit_step());
    let r = match step {
        CommitStep::Done(r) => r,
        CommitStep::Durable(d) => {
            let waited = t.qm().durable(d.ticket()).await;
            let (r, more) = timed(tally, || t.commit_durable(d, waited));
            cpu += more;
            r
        }
    };
    if let Some(tl) = tally {
        tl.call("commit", r.is_ok(), 0, cpu);
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_container_id_is_shown_as_given_when_it_can_stand_in_mqsc_output() {
        assert_eq!(client_id_of("ID:4f1c-9a:1"), "ID:4f1c-9a:1");
        assert_eq!(client_id_of("a (b) 'c'\n"), "a__b___c__");
        assert_eq!(client_id_of(&"x".repeat(500)).len(), MAX_CLIENT_ID);
    }

    proptest! {
        /// Whatever a client sends, CLIENTID is short and plain ASCII without MQSC delimiters.
        #[test]
        fn any_container_id_becomes_a_safe_client_id(s in any::<String>()) {
            let id = client_id_of(&s);
            prop_assert!(id.chars().count() <= MAX_CLIENT_ID);
            prop_assert!(id.chars().all(|c| c.is_ascii_graphic() && !"()'\"".contains(c)));
        }
    }
}

//! The channel initiator (SPEC §6): runs the message channels of one queue manager.
//!
//! - A sending channel (SDR) is a thread of its own (its dispatcher: the socket is its only
//!   I/O) started by START CHANNEL, and again when the queue manager starts unless it was
//!   stopped by STOP CHANNEL; it retries its connection SHORTRTY times every SHORTTMR seconds,
//!   then LONGRTY times every LONGTMR.
//! - A receiving channel (RCVR) runs on the listener thread of the connection its sender made
//!   (the first frame of a connection says whether it is an application or a channel).
//! - Queue and protection work of both ends runs in CHIADAPS adapter slots, network work in
//!   CHIDISPS dispatcher slots ([`adapters`]).
//! - [`sync`]: what each end records on SYSTEM.CHANNEL.SYNCQ, in the same unit of work as each
//!   batch, so that a restart neither loses nor duplicates persistent messages.

pub mod adapters;
mod amqp;
pub mod net;
mod ping;
pub mod receiver;
pub mod requester;
pub mod sender;
pub mod splprot;
pub mod sync;
mod triggered;

use sealmq_engine::Connection;
use sealmq_engine::channels::{Attrs, ChannelControl, ChannelDef, ChlType};
use sealmq_engine::{MqError, MqResult, QueueManager};
use sealmq_types::ReasonCode;
use sealmq_types::attrs;
use sealmq_types::sync::lock;
use std::collections::HashMap;
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};
use sync::{Role, SyncQ};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum State {
    #[default]
    Starting,
    Binding,
    Running,
    Retrying,
    Stopping,
    Stopped,
}

impl State {
    pub fn name(self) -> &'static str {
        match self {
            State::Starting => "STARTING",
            State::Binding => "BINDING",
            State::Running => "RUNNING",
            State::Retrying => "RETRYING",
            State::Stopping => "STOPPING",
            State::Stopped => "STOPPED",
        }
    }
}

/// What DISPLAY CHSTATUS shows of one channel instance.
#[derive(Debug, Clone, Default)]
pub struct Status {
    pub state: State,
    pub conname: String,
    pub rqmname: String,
    pub xmitq: String,
    pub msgs: u64,
    pub bytes_sent: u64,
    pub bytes_rcvd: u64,
    pub batches: u64,
    /// The sequence number of the last message sent or received.
    pub cur_seq: u64,
    /// The sequence number of the last batch committed.
    pub lst_seq: u64,
    pub indoubt: bool,
    /// Why the channel last stopped or is retrying.
    pub error: String,
    /// TLS traffic-key refreshes done (SSLRKEYC).
    pub key_resets: u64,
    /// The TLS protocol (MQ's SECPROT: TLSV13, TLSV12) and key-exchange group (SSLGROUP:
    /// X25519MLKEM768, X25519, ...) the link negotiated; empty without TLS.
    pub secprot: String,
    pub sslgroup: String,
    /// When this instance started, and when it last sent or received a message (seconds
    /// since the epoch; 0: none yet).
    pub started: u64,
    pub last_msg: u64,
    /// What the instance is doing now (MQ's SUBSTATE: MQGET, SEND, RECEIVE, MQPUT, ...).
    pub substate: &'static str,
    /// MQ's BATCHSZ indicators: the messages per batch, weighted toward the recent batches
    /// (short term) and over many (long term); 0 before the first batch.
    pub batchsz_short: f64,
    pub batchsz_long: f64,
}

impl Status {
    /// Counts a batch of `n` messages in the batch-size indicators: exponentially weighted,
    /// about the last 4 batches for the short term and the last 32 for the long term (the
    /// first batch sets both).
    pub(crate) fn batch_done(&mut self, n: u64) {
        let n = n as f64;
        if self.batches == 0 {
            self.batchsz_short = n;
            self.batchsz_long = n;
        } else {
            self.batchsz_short += (n - self.batchsz_short) / 4.0;
            self.batchsz_long += (n - self.batchsz_long) / 32.0;
        }
        self.batches += 1;
    }
}

/// One channel instance: its status and how to stop it.
pub struct Run {
    pub name: String,
    pub chltype: ChlType,
    pub status: Mutex<Status>,
    stop: AtomicBool,
    wake: (Mutex<()>, Condvar),
    sock: Mutex<Option<TcpStream>>,
    done: (Mutex<bool>, Condvar),
}

impl Run {
    fn new(name: &str, chltype: ChlType) -> Arc<Run> {
        Arc::new(Run {
            name: name.to_string(),
            chltype,
            status: Mutex::new(Status {
                started: sealmq_types::time::now_secs(),
                ..Status::default()
            }),
            stop: AtomicBool::new(false),
            wake: (Mutex::new(()), Condvar::new()),
            sock: Mutex::new(None),
            done: (Mutex::new(false), Condvar::new()),
        })
    }

    pub fn stop_requested(&self) -> bool {
        self.stop.load(Ordering::Acquire)
    }

    pub fn status(&self) -> std::sync::MutexGuard<'_, Status> {
        lock(&self.status)
    }

    pub fn set_state(&self, s: State) {
        self.status().state = s;
    }

    /// The channel's definition as it is now, the status binding to its CONNAME; `None`, the
    /// error said, when the channel was deleted.
    pub fn bind(&self, qm: &QueueManager) -> Option<ChannelDef> {
        let Some(def) = qm.channel(&self.name) else {
            self.status().error = format!("channel {} was deleted", self.name);
            return None;
        };
        let mut s = self.status();
        s.state = State::Binding;
        s.conname = def.conname.clone();
        drop(s);
        Some(def)
    }

    /// Sleeps up to `d`, waking early on STOP CHANNEL.
    pub fn sleep(&self, d: Duration) {
        let g = lock(&self.wake.0);
        if self.stop_requested() {
            return;
        }
        let _ = self.wake.1.wait_timeout(g, d);
    }

    /// The socket this instance uses, so that STOP can close it.
    pub fn set_sock(&self, s: Option<TcpStream>) {
        *lock(&self.sock) = s;
    }

    fn request_stop(&self) {
        self.stop.store(true, Ordering::Release);
        {
            let _g = lock(&self.wake.0);
            self.wake.1.notify_all();
        }
        if let Some(s) = lock(&self.sock).as_ref() {
            let _ = s.shutdown(std::net::Shutdown::Both);
        }
    }

    pub fn finish(&self) {
        self.set_state(State::Stopped);
        self.set_sock(None);
        let (m, cv) = &self.done;
        *lock(m) = true;
        cv.notify_all();
    }

    /// Waits until the instance has ended (its unit of work settled); false on timeout.
    pub fn wait_done(&self, d: Duration) -> bool {
        let (m, cv) = &self.done;
        let deadline = Instant::now() + d;
        let mut g = lock(m);
        while !*g {
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            g = cv
                .wait_timeout(g, deadline - now)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        true
    }

    /// After a failed session: counts the attempt (a session that ran a minute starts the count
    /// again), shows RETRYING with the error and sleeps the retry interval. False when the
    /// retries are exhausted: the error is recorded and the channel stops.
    pub fn retry_after(
        &self,
        def: &ChannelDef,
        attempt: &mut u32,
        started: Instant,
        err: String,
    ) -> bool {
        if started.elapsed() > Duration::from_secs(60) {
            *attempt = 0;
        }
        *attempt += 1;
        let Some(delay) = retry_delay(def, *attempt) else {
            tracing::error!("channel {} stopped: {err}; retries exhausted", self.name);
            self.status().error = format!("{err}; retries exhausted (SHORTRTY/LONGRTY)");
            return false;
        };
        tracing::warn!(
            "channel {} retrying in {} s (attempt {attempt}): {err}",
            self.name,
            delay.as_secs()
        );
        {
            let mut s = self.status();
            s.state = State::Retrying;
            s.error = err;
        }
        self.sleep(delay);
        true
    }

    fn is_done(&self) -> bool {
        *lock(&self.done.0)
    }
}

/// The channel initiator of one queue manager.
pub struct Initiator {
    pub qm: Arc<QueueManager>,
    /// The queue manager's keystore directory (channel TLS, read at each connection) and the
    /// keystore in use for SPLPROT (read again by REFRESH SECURITY TYPE(SSL)).
    pub keystore_dir: std::path::PathBuf,
    pub security: Arc<crate::auth::security::Security>,
    pub adapters: adapters::Pool,
    runs: Mutex<HashMap<String, Arc<Run>>>,
    /// Running AMQP channels (amqp.rs).
    amqp: Mutex<HashMap<String, sealmq_amqp::AmqpChannel>>,
    /// MQI accounting for AMQP connections (`crate::observe::acct::amqp_accounts`).
    amqp_accounts: sealmq_amqp::status::Accounts,
    /// Connections counted against MAXCHL: the listeners' and the AMQP channels' alike.
    pub(crate) limit: Arc<crate::admit::limits::Limit>,
    /// Sockets not yet authenticated: the listeners' budget, which AMQP connections share
    /// until their open is done (set once the descriptors are shared out).
    pub(crate) pending: Arc<std::sync::OnceLock<Arc<crate::admit::limits::Pending>>>,
}

/// How long to wait before connection attempt `attempt` (1-based): SHORTRTY times every
/// SHORTTMR seconds, then LONGRTY times every LONGTMR; `None` when retries are exhausted.
pub fn retry_delay(def: &ChannelDef, attempt: u32) -> Option<Duration> {
    let secs = if attempt <= def.shortrty {
        def.shorttmr
    } else if attempt <= def.shortrty.saturating_add(def.longrty) {
        def.longtmr
    } else {
        return None;
    };
    Some(if secs == 0 {
        Duration::from_millis(200)
    } else {
        Duration::from_secs(secs as u64)
    })
}

fn fail(reason: ReasonCode, detail: String) -> MqError {
    MqError::new(reason, detail)
}

impl Initiator {
    pub fn new(
        qm: Arc<QueueManager>,
        keystore_dir: std::path::PathBuf,
        security: Arc<crate::auth::security::Security>,
        amqp_accounts: sealmq_amqp::status::Accounts,
    ) -> Arc<Initiator> {
        let q = qm.qmgr();
        Arc::new(Initiator {
            adapters: adapters::Pool::new(q.chiadaps as usize, q.chidisps as usize),
            qm,
            keystore_dir,
            security,
            runs: Mutex::new(HashMap::new()),
            amqp: Mutex::new(HashMap::new()),
            amqp_accounts,
            limit: Arc::default(),
            pending: Arc::default(),
        })
    }

    fn runs(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Run>>> {
        lock(&self.runs)
    }

    /// The channel instances of this run of the queue manager whose names match `pattern`,
    /// in name order, each with a copy of its status (DISPLAY CHSTATUS, statistics, metrics).
    pub fn statuses(&self, pattern: &str) -> Vec<(Arc<Run>, Status)> {
        let mut runs: Vec<Arc<Run>> = self
            .runs()
            .values()
            .filter(|r| crate::generic_match(pattern, &r.name))
            .cloned()
            .collect();
        runs.sort_by(|a, b| a.name.cmp(&b.name));
        runs.into_iter()
            .map(|r| {
                let s = r.status().clone();
                (r, s)
            })
            .collect()
    }

    fn def(&self, name: &str) -> MqResult<ChannelDef> {
        self.qm.channel(name).ok_or_else(|| {
            fail(
                ReasonCode::UnknownChannelName,
                format!("channel '{name}' is not defined"),
            )
        })
    }

    /// Starts the sending and AMQP channels that were running when the queue manager last
    /// ended (the channel's sync record says whether STOP CHANNEL stopped it).
    pub fn start_all(self: &Arc<Self>) {
        self.serve_initq();
        for d in self.qm.channels() {
            if !matches!(d.chltype, ChlType::Sdr | ChlType::Rqstr | ChlType::Amqp) {
                continue;
            }
            let Ok(conn) = Connection::connect_internal(&self.qm) else {
                return;
            };
            let Ok(sq) = SyncQ::open(&conn, role_of(&d), &d.name) else {
                continue;
            };
            let rec = sq.load_opt(&conn);
            sq.close(&conn);
            if let Ok(Some(r)) = rec
                && !r.stopped
            {
                if d.chltype == ChlType::Amqp {
                    if let Err(e) = self.start_amqp(&d) {
                        tracing::error!(channel = %d.name, "AMQP channel not restarted: {e}");
                    }
                } else if d.chltype == ChlType::Sdr {
                    self.spawn_sender(&d.name);
                } else {
                    self.spawn_requester(&d.name);
                }
            }
        }
    }

    fn spawn_sender(self: &Arc<Self>, name: &str) {
        tracing::info!("channel {name} starting");
        let run = Run::new(name, ChlType::Sdr);
        self.runs().insert(name.to_string(), run.clone());
        let ci = self.clone();
        std::thread::spawn(move || sender::main(ci, run));
    }

    fn spawn_requester(self: &Arc<Self>, name: &str) {
        tracing::info!("channel {name} starting");
        let run = Run::new(name, ChlType::Rqstr);
        self.runs().insert(name.to_string(), run.clone());
        let ci = self.clone();
        std::thread::spawn(move || requester::main(ci, run));
    }

    /// Registers a receiving instance, after the previous one for the channel has ended.
    pub fn receiver_run(&self, name: &str, chltype: ChlType) -> Arc<Run> {
        let old = self.runs().get(name).cloned();
        if let Some(o) = old
            && !o.is_done()
        {
            // The sender reconnected: the old connection is dead or dying. Its unit of
            // work must be backed out before the new one reads the sync record.
            o.request_stop();
            o.wait_done(Duration::from_secs(30));
        }
        let run = Run::new(name, chltype);
        self.runs().insert(name.to_string(), run.clone());
        run
    }

    /// Stops every channel (queue manager ending).
    pub fn stop_all(&self) {
        self.stop_all_amqp();
        let runs: Vec<Arc<Run>> = self.runs().values().cloned().collect();
        for r in &runs {
            r.request_stop();
        }
        for r in &runs {
            r.wait_done(Duration::from_secs(10));
        }
    }

    /// Reads a channel end's sync record, lets `change` edit it (true: store it), and stores it
    /// in a unit of work of its own.
    fn update_sync(
        &self,
        name: &str,
        role: Role,
        change: impl FnOnce(&mut sync::SyncRec) -> MqResult<bool>,
    ) -> MqResult<()> {
        let conn = Connection::connect_internal(&self.qm)?;
        let sq = SyncQ::open(&conn, role, name)?;
        let r = sq.load(&conn).and_then(|mut rec| {
            if change(&mut rec)? {
                sq.store(&conn, &rec)?;
            }
            Ok(())
        });
        sq.close(&conn);
        r
    }

    fn store_stopped(&self, name: &str, role: Role, stopped: bool) -> MqResult<()> {
        self.update_sync(name, role, |rec| {
            let changed = rec.stopped != stopped;
            rec.stopped = stopped;
            Ok(changed)
        })
    }

    /// Drops an instance that ended inactive (DISCINT): DISPLAY CHSTATUS no longer shows it.
    pub(crate) fn forget(&self, run: &Arc<Run>) {
        let mut runs = self.runs();
        if runs.get(&run.name).is_some_and(|r| Arc::ptr_eq(r, run)) {
            runs.remove(&run.name);
        }
    }

    fn running(&self, name: &str) -> Option<Arc<Run>> {
        self.runs().get(name).filter(|r| !r.is_done()).cloned()
    }
}

fn role_of(d: &ChannelDef) -> Role {
    if d.sends() {
        Role::Sender
    } else {
        Role::Receiver
    }
}

pub use crate::peer::host_port;

/// The initiator as MQSC reaches it through the queue manager.
pub struct Control(pub Arc<Initiator>);

impl std::ops::Deref for Control {
    type Target = Arc<Initiator>;
    fn deref(&self) -> &Arc<Initiator> {
        &self.0
    }
}

impl ChannelControl for Control {
    fn refresh_connauth(&self) -> MqResult<String> {
        let n = self
            .security
            .users
            .refresh()
            .map_err(|e| fail(ReasonCode::NotAuthorized, e))?;
        Ok(format!(
            "AMQ8560I: Connection authentication refreshed: {n} user(s) in the password file."
        ))
    }

    fn refresh_ssl(&self) -> MqResult<String> {
        self.security
            .refresh()
            .map_err(|e| fail(ReasonCode::KeyRepositoryError, e))
    }

    fn start(&self, name: &str) -> MqResult<String> {
        let d = self.def(name)?;
        match d.chltype {
            ChlType::Svrconn => Err(fail(
                ReasonCode::OptionNotValidForType,
                format!("'{name}' is a SVRCONN channel: applications start it by connecting"),
            )),
            ChlType::Sdr => {
                self.store_stopped(name, Role::Sender, false)?;
                if self.running(name).is_some() {
                    return Ok(format!("AMQ8018I: Channel {name} is already running."));
                }
                self.spawn_sender(name);
                Ok(format!("AMQ8018I: Channel {name} started."))
            }
            ChlType::Rqstr => {
                self.store_stopped(name, Role::Receiver, false)?;
                if self.running(name).is_some() {
                    return Ok(format!("AMQ8018I: Channel {name} is already running."));
                }
                self.spawn_requester(name);
                Ok(format!("AMQ8018I: Channel {name} started."))
            }
            ChlType::Amqp => {
                let started = self.start_amqp(&d)?;
                // Running across queue manager restarts until STOP CHANNEL: the record is
                // written even when it says what a missing one would (never stopped).
                self.update_sync(name, Role::Receiver, |rec| {
                    rec.stopped = false;
                    Ok(true)
                })?;
                Ok(started)
            }
            ChlType::Rcvr | ChlType::Svr => {
                self.store_stopped(name, role_of(&d), false)?;
                Ok(format!(
                    "AMQ8018I: Channel {name} enabled: it runs when its partner connects."
                ))
            }
        }
    }

    fn ping(&self, name: &str) -> MqResult<String> {
        self.ping_channel(name)
    }

    fn keystore_dn(&self) -> Option<String> {
        let p = self.security.protector()?;
        p.keystore()
            .identity()
            .map(|i| i.cert.subject().to_string())
    }

    fn stop(&self, name: &str) -> MqResult<String> {
        let d = self.def(name)?;
        if d.chltype == ChlType::Svrconn {
            return Err(fail(
                ReasonCode::OptionNotValidForType,
                format!("'{name}' is a SVRCONN channel"),
            ));
        }
        if d.chltype == ChlType::Amqp {
            self.store_stopped(name, Role::Receiver, true)?;
            return Ok(self
                .stop_amqp(name)
                .unwrap_or_else(|| format!("AMQ8019I: Channel {name} was not running.")));
        }
        self.store_stopped(name, role_of(&d), true)?;
        if let Some(r) = self.running(name) {
            r.set_state(State::Stopping);
            r.request_stop();
            if !r.wait_done(Duration::from_secs(30)) {
                return Ok(format!(
                    "AMQ8019I: Channel {name} is stopping (its batch has not finished yet)."
                ));
            }
        }
        Ok(format!("AMQ8019I: Channel {name} stopped."))
    }

    fn amqp_clients(&self, pattern: &str, client: &str) -> Vec<Attrs> {
        Initiator::amqp_clients(self, pattern, client)
    }

    fn status(&self, pattern: &str) -> Vec<Attrs> {
        self.statuses(pattern)
            .into_iter()
            .map(|(r, s)| {
                let sends = matches!(r.chltype, ChlType::Sdr | ChlType::Svr);
                let (stada, stati) = sealmq_types::time::mq_date_time(s.started);
                let (msgda, msgti) = if s.last_msg == 0 {
                    (String::new(), String::new())
                } else {
                    sealmq_types::time::mq_date_time(s.last_msg)
                };
                let xqmsgsa = if sends {
                    self.qm
                        .queue_status(&s.xmitq)
                        .map(|q| q.depth.to_string())
                        .unwrap_or_default()
                } else {
                    String::new()
                };
                attrs![
                    "CHANNEL" => r.name, "CHLTYPE" => r.chltype.name(), "STATUS" => s.state.name(),
                    "SUBSTATE" => s.substate, "CONNAME" => host_port(&s.conname),
                    "CHSTADA" => stada, "CHSTATI" => stati, "LSTMSGDA" => msgda,
                    "LSTMSGTI" => msgti, "XQMSGSA" => xqmsgsa, "RQMNAME" => s.rqmname,
                    "XMITQ" => if sends { s.xmitq } else { String::new() }, "MSGS" => s.msgs,
                    "BYTSSENT" => s.bytes_sent, "BYTSRCVD" => s.bytes_rcvd, "BATCHES" => s.batches,
                    "CURSEQNO" => s.cur_seq, "LSTSEQNO" => s.lst_seq,
                    "INDOUBT" => if s.indoubt { "YES" } else { "NO" }, "SSLRKEYS" => s.key_resets,
                    "SECPROT" => if s.secprot.is_empty() { "NONE".to_string() } else { s.secprot },
                    "SSLGROUP" => s.sslgroup,
                    "ERROR" => s.error,
                ]
            })
            .chain(self.amqp_status(pattern))
            .collect()
    }

    fn saved_status(&self, pattern: &str) -> MqResult<Vec<Attrs>> {
        let mut defs: Vec<ChannelDef> = self
            .qm
            .channels()
            .into_iter()
            .filter(|d| d.chltype != ChlType::Svrconn && crate::generic_match(pattern, &d.name))
            .collect();
        defs.sort_by(|a, b| a.name.cmp(&b.name));
        let conn = Connection::connect_internal(&self.qm)?;
        let mut out = Vec::new();
        for d in defs {
            let sq = SyncQ::open(&conn, role_of(&d), &d.name)?;
            let rec = sq.load_opt(&conn);
            sq.close(&conn);
            let Some(rec) = rec? else { continue };
            let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02X}")).collect::<String>();
            let (cur_seq, cur_luw, cur_msgs) = match &rec.indoubt {
                Some(i) => (i.last_seq, hex(&i.batch), i.xmitq_seqs.len()),
                None => (rec.seq, hex(&rec.batch), 0),
            };
            out.push(attrs![
                "CHANNEL" => d.name, "CHLTYPE" => d.chltype.name(),
                "XMITQ" => if d.sends() { d.xmitq.clone() } else { String::new() },
                "CURSEQNO" => cur_seq, "LSTSEQNO" => rec.seq, "CURLUWID" => cur_luw,
                "LSTLUWID" => hex(&rec.batch),
                "INDOUBT" => if rec.indoubt.is_some() { "YES" } else { "NO" },
                "CURMSGS" => cur_msgs, "STOPREQ" => if rec.stopped { "YES" } else { "NO" },
            ]);
        }
        Ok(out)
    }

    fn resolve(&self, name: &str, commit: bool) -> MqResult<String> {
        let d = self.def(name)?;
        if !d.sends() {
            return Err(fail(
                ReasonCode::OptionNotValidForType,
                format!(
                    "RESOLVE applies to the sending end; '{name}' is a {} channel",
                    d.chltype.name()
                ),
            ));
        }
        if self.running(name).is_some() {
            return Err(fail(
                ReasonCode::ObjectInUse,
                format!("channel {name} is running: STOP CHANNEL({name}) first"),
            ));
        }
        let n = sender::resolve(&self.qm, &d, commit)?;
        if let Some(r) = self.runs().get(name) {
            r.status().indoubt = false;
        }
        Ok(match n {
            None => format!("SMQ0142I: Channel {name} is not in doubt; nothing to resolve."),
            Some(n) if commit => {
                format!("SMQ0142I: Channel {name}: in-doubt batch of {n} message(s) committed.")
            }
            Some(n) => format!(
                "SMQ0142I: Channel {name}: in-doubt batch of {n} message(s) backed out (they will be sent again)."
            ),
        })
    }

    fn reset(&self, name: &str, seq: u64) -> MqResult<String> {
        let d = self.def(name)?;
        if self.running(name).is_some() && d.sends() {
            return Err(fail(
                ReasonCode::ObjectInUse,
                format!("channel {name} is running: STOP CHANNEL({name}) first"),
            ));
        }
        self.update_sync(name, role_of(&d), |rec| {
            if rec.indoubt.is_some() {
                return Err(fail(
                    ReasonCode::ObjectInUse,
                    format!("channel {name} is in doubt: RESOLVE CHANNEL({name}) first"),
                ));
            }
            rec.seq = seq;
            if d.sends() {
                rec.reset = Some(seq);
            }
            Ok(true)
        })?;
        Ok(format!(
            "AMQ8023I: Channel {name} reset to sequence number {seq}."
        ))
    }

    fn tasks(&self) -> Vec<Attrs> {
        self.adapters.stats()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_size_indicators_follow_recent_batches_short_and_many_long() {
        let mut s = Status::default();
        s.batch_done(50);
        assert_eq!(
            (s.batchsz_short, s.batchsz_long, s.batches),
            (50.0, 50.0, 1)
        );
        for _ in 0..20 {
            s.batch_done(10);
        }
        // The short term has all but forgotten the first batch; the long term has not.
        assert!((s.batchsz_short - 10.0).abs() < 0.2, "{}", s.batchsz_short);
        assert!(
            s.batchsz_long > 20.0 && s.batchsz_long < 50.0,
            "{}",
            s.batchsz_long
        );
        assert_eq!(s.batches, 21);
    }
}

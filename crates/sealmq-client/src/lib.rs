//! # sealmq-client: the MQI for applications
//!
//! A blocking client over the queue manager's Unix socket (local, "bindings" mode) or TCP.
//! Calls mirror the MQI; failures carry MQ reason codes: 2059 when the queue manager cannot be
//! reached, 2009 when the connection breaks (the queue manager then backs out the unit of
//! work).

pub mod connlist;
pub mod consume;
mod intercept;
pub mod nonblocking;
pub mod pubsub;
mod readahead;
pub mod reconnect;
mod reprotect;
pub use reprotect::Reprotected;

pub use consume::{CallbackHandle, ConsumeMode, ConsumeOptions, Consumer};
pub use reconnect::Reconnecting;

use sealmq_mqi::{GetOptions, OpenOptions};
use sealmq_mqi::{Got, Md};
use sealmq_types::ReasonCode;
use sealmq_wire::{GetReq, Request, Response, WireError, open};
use std::io::{BufReader, BufWriter, Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::path::Path;

/// A failed call: the MQ reason code and what happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientError {
    /// MQ's reason code; a number this build does not name is `ReasonCode::Other`.
    pub reason: ReasonCode,
    pub detail: String,
}

impl std::fmt::Display for ClientError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {}: {}",
            self.reason.code(),
            self.reason.name(),
            self.detail
        )
    }
}

impl std::error::Error for ClientError {}

pub type Result<T> = std::result::Result<T, ClientError>;

/// How long a connection waits for the queue manager's answer to its Hello (and, over TLS,
/// its handshake).
pub const HELLO_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

fn broken(e: WireError) -> ClientError {
    // A TLS alert after the handshake (TLS 1.3 rejects a client certificate only then) is a
    // TLS failure, not a broken connection.
    if let WireError::Io(io) = &e
        && let Some(tls) = io.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>())
    {
        return ClientError {
            reason: ReasonCode::SslInitializationError,
            detail: format!("TLS: {tls}"),
        };
    }
    ClientError {
        reason: ReasonCode::ConnectionBroken,
        detail: e.to_string(),
    }
}

/// The connection's writer: shared with its consumers (settlements and credit).
pub(crate) type Out = std::sync::Arc<std::sync::Mutex<BufWriter<Box<dyn Write + Send>>>>;

/// Where responses come from: the socket, or (once a consumer started) the thread that
/// reads it and hands pushed messages to consumers.
enum Reader {
    Direct(BufReader<Box<dyn Read + Send>>),
    Demux(std::sync::mpsc::Receiver<Result<(u32, Response)>>),
    Gone,
}

/// A connection to a queue manager.
pub struct Client {
    r: Reader,
    w: Out,
    next_id: u32,
    /// The protocol version the queue manager chose.
    pub version: u16,
    /// Consumers of this connection, for the reader thread.
    routes: std::sync::Arc<consume::Routes>,
    next_tag: u32,
    /// Handles that read ahead.
    ra: readahead::ReadAheads,
    /// The DEFREADA the last Opened answer gave (version 2).
    last_defreada: Option<u8>,
    /// The socket, to shut down when the client goes while its reader thread still reads
    /// it, and to bound a call's wait for its answer.
    sock: Option<Box<dyn SockCtl>>,
    /// How long a call waits for its answer beyond its own wait (`None`: as long as it takes).
    call_timeout: Option<std::time::Duration>,
    /// The current call's own wait (a get's).
    call_wait: std::time::Duration,
    max_frame: usize,
    pub qmgr: String,
    /// The principal the queue manager authenticated.
    pub user: String,
    /// Client-side protection (SPEC §5.5.1): see `intercept.rs`.
    pub(crate) icpt: intercept::State,
}

/// A user id and password for connection authentication (MQ's CONNAUTH). The password is
/// wiped from memory when this is dropped and is never printed.
#[derive(Clone, Debug, Default)]
pub struct Credentials {
    pub user: String,
    pub password: sealmq_wire::Secret,
    /// Send the password over TCP without TLS. Off by default: the client refuses to, and the
    /// queue manager refuses such a password unless its AUTHINFO says PWCLEAR(YES).
    pub allow_cleartext: bool,
}

impl Credentials {
    pub fn new(user: &str, password: &str) -> Credentials {
        Credentials {
            user: user.to_string(),
            password: sealmq_wire::Secret::new(password),
            allow_cleartext: false,
        }
    }
}

impl Client {
    /// Connects to the queue manager whose directory is `qm_dir` through its Unix socket.
    pub fn connect_local(qm_dir: &Path, appl: &str) -> Result<Client> {
        Client::connect_local_as(qm_dir, appl, None)
    }

    /// [`Client::connect_local`] authenticating with `creds`.
    pub fn connect_local_as(
        qm_dir: &Path,
        appl: &str,
        creds: Option<&Credentials>,
    ) -> Result<Client> {
        let path = qm_dir.join("qm.sock");
        let s = UnixStream::connect(&path).map_err(|e| ClientError {
            reason: ReasonCode::QMgrNotAvailable,
            detail: format!(
                "cannot reach the queue manager at {} ({e}); is it started?",
                path.display()
            ),
        })?;
        Client::hello_plain(s, appl, "", creds)
    }

    /// Connects over TCP through the default channel (SYSTEM.DEF.SVRCONN).
    pub fn connect_tcp(addr: &str, appl: &str) -> Result<Client> {
        Client::connect_tcp_channel(addr, "", appl)
    }

    /// Connects over TCP through the SVRCONN channel `channel`.
    pub fn connect_tcp_channel(addr: &str, channel: &str, appl: &str) -> Result<Client> {
        Client::connect_tcp_channel_as(addr, channel, appl, None)
    }

    /// [`Client::connect_tcp_channel`] authenticating with `creds`: refused here, before
    /// anything is sent, unless `creds.allow_cleartext` (a password over TCP without TLS).
    pub fn connect_tcp_channel_as(
        addr: &str,
        channel: &str,
        appl: &str,
        creds: Option<&Credentials>,
    ) -> Result<Client> {
        if let Some(c) = creds
            && !c.password.is_empty()
            && !c.allow_cleartext
        {
            return Err(ClientError {
                reason: ReasonCode::NotAuthorized,
                detail: "a password would cross the network in clear: connect with TLS, or \
                         allow it explicitly (--allow-cleartext-password)"
                    .into(),
            });
        }
        let s = TcpStream::connect(addr).map_err(|e| ClientError {
            reason: ReasonCode::QMgrNotAvailable,
            detail: format!("cannot reach a queue manager at {addr} ({e})"),
        })?;
        let _ = s.set_nodelay(true);
        Client::hello_plain(s, appl, channel, creds)
    }

    /// Connects over TCP with TLS: `keystore_dir` holds the application's identity and the
    /// certificates it trusts; `expect_qm` (when given) must be the server certificate's CN.
    pub fn connect_tls(
        addr: &str,
        keystore_dir: &Path,
        expect_qm: Option<&str>,
        appl: &str,
    ) -> Result<Client> {
        Client::connect_tls_channel(addr, keystore_dir, expect_qm, "", appl)
    }

    /// [`Client::connect_tls`] through the SVRCONN channel `channel`.
    pub fn connect_tls_channel(
        addr: &str,
        keystore_dir: &Path,
        expect_qm: Option<&str>,
        channel: &str,
        appl: &str,
    ) -> Result<Client> {
        Client::connect_tls_channel_as(addr, keystore_dir, expect_qm, channel, appl, None)
    }

    /// [`Client::connect_tls_channel`] authenticating with `creds`.
    pub fn connect_tls_channel_as(
        addr: &str,
        keystore_dir: &Path,
        expect_qm: Option<&str>,
        channel: &str,
        appl: &str,
        creds: Option<&Credentials>,
    ) -> Result<Client> {
        let ssl = |detail: String| ClientError {
            reason: ReasonCode::SslInitializationError,
            detail,
        };
        let cfg = sealmq_wire::tls::client_config(keystore_dir, expect_qm).map_err(ssl)?;
        let s = TcpStream::connect(addr).map_err(|e| ClientError {
            reason: ReasonCode::QMgrNotAvailable,
            detail: format!("cannot reach a queue manager at {addr} ({e})"),
        })?;
        let _ = s.set_nodelay(true);
        let name = rustls::pki_types::ServerName::try_from("sealmq.invalid")
            .map_err(|e| ssl(e.to_string()))?;
        let conn = rustls::ClientConnection::new(cfg, name).map_err(|e| ssl(e.to_string()))?;
        let _ = s.set_read_timeout(Some(HELLO_WAIT));
        let mut stream = rustls::StreamOwned::new(conn, s);
        while stream.conn.is_handshaking() {
            stream
                .conn
                .complete_io(&mut stream.sock)
                .map_err(|e| ssl(format!("TLS handshake with {addr} failed: {e}")))?;
        }
        let sock = stream.sock.try_clone().ok();
        // Read by the consumers' reader thread while the application writes (credits,
        // settles): locked only to move bytes through TLS, never while waiting.
        let rustls::StreamOwned { conn, sock: s } = stream;
        let duplex = sealmq_wire::duplex::Duplex::new(conn, s);
        let reader = duplex.handle().map_err(|e| ssl(e.to_string()))?;
        let mut c = Client::hello(Box::new(reader), Box::new(duplex), appl, channel, creds)?;
        if let Some(k) = &sock {
            let _ = k.set_read_timeout(None);
        }
        c.sock = sock.map(|s| -> Box<dyn SockCtl> { Box::new(s) });
        Ok(c)
    }

    /// Bounds how long a call waits for the queue manager's answer beyond its own wait (a
    /// get's): past it the connection counts as lost (2009) and is closed. A queue manager
    /// that hangs (a stopped process, a machine gone without a word) is so left for another
    /// — with [`crate::Reconnecting`], the next address of the list. `None` (the default):
    /// a call waits as long as it takes. Asynchronous consumers are not bounded by it.
    pub fn set_call_timeout(&mut self, t: Option<std::time::Duration>) {
        self.call_timeout = t;
    }

    /// Hello over a stream without TLS (Unix or TCP); a queue manager that accepts but never
    /// answers (hung, or paused) is given up on after [`HELLO_WAIT`].
    fn hello_plain<S: Plain>(
        s: S,
        appl: &str,
        channel: &str,
        creds: Option<&Credentials>,
    ) -> Result<Client> {
        let w = s.dup().map_err(|e| ClientError {
            reason: ReasonCode::QMgrNotAvailable,
            detail: e.to_string(),
        })?;
        let sock = s.dup().ok();
        s.read_timeout(Some(HELLO_WAIT));
        let mut c = Client::hello(Box::new(s), Box::new(w), appl, channel, creds)?;
        if let Some(k) = &sock {
            k.read_timeout(None);
        }
        c.sock = sock.map(|s| -> Box<dyn SockCtl> { Box::new(s) });
        Ok(c)
    }

    fn hello(
        r: Box<dyn Read + Send>,
        w: Box<dyn Write + Send>,
        appl: &str,
        channel: &str,
        creds: Option<&Credentials>,
    ) -> Result<Client> {
        let mut c = Client {
            r: Reader::Direct(BufReader::new(r)),
            w: std::sync::Arc::new(std::sync::Mutex::new(BufWriter::new(w))),
            next_id: 1,
            version: 1,
            routes: Default::default(),
            next_tag: 1,
            ra: Default::default(),
            last_defreada: None,
            sock: None,
            call_timeout: None,
            call_wait: std::time::Duration::ZERO,
            max_frame: sealmq_wire::HELLO_MAX,
            qmgr: String::new(),
            user: String::new(),
            icpt: intercept::State::default(),
        };
        match c.call(Request::Hello(sealmq_wire::Hello {
            versions: sealmq_wire::VERSIONS.to_vec(),
            max_msg: 100 << 20,
            appl: appl.to_string(),
            channel: channel.to_string(),
            user: creds.map(|c| c.user.clone()).unwrap_or_default(),
            password: creds.map(|c| c.password.clone()).unwrap_or_default(),
        }))? {
            Response::HelloOk {
                version,
                max_msg,
                qmgr,
                user,
            } => {
                c.version = version;
                c.max_frame = max_msg as usize + sealmq_wire::FRAME_OVERHEAD;
                c.qmgr = qmgr;
                c.user = user;
                Ok(c)
            }
            other => Err(ClientError {
                reason: ReasonCode::UnexpectedError,
                detail: format!("unexpected answer to Hello: {other:?}"),
            }),
        }
    }

    fn call(&mut self, req: Request) -> Result<Response> {
        let id = self.next_id;
        // Ids with the top bit set are the consumers' (consume.rs).
        self.next_id = (self.next_id % consume::CONSUMER_IDS) + 1;
        sealmq_wire::write_request(&mut *consume::lock(&self.w), id, &req)
            .map_err(|e| broken(WireError::Io(e)))?;
        self.icpt.idle_work();
        let bound = match (self.call_timeout, &self.r, &self.sock) {
            (Some(t), Reader::Direct(_), Some(s)) => {
                let t = t + self.call_wait;
                s.read_timeout(Some(t));
                Some(t)
            }
            _ => None,
        };
        let answer = match &mut self.r {
            Reader::Direct(r) => {
                let got = sealmq_wire::read_response(r, self.max_frame);
                if let (Some(t), Some(s)) = (bound, &self.sock) {
                    s.read_timeout(None);
                    if let Err(WireError::Io(e)) = &got
                        && matches!(
                            e.kind(),
                            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                        )
                    {
                        // An answer may still come: the connection cannot be used again.
                        s.close();
                        return Err(ClientError {
                            reason: ReasonCode::ConnectionBroken,
                            detail: format!(
                                "the queue manager did not answer within {} s; the connection \
                                 is closed",
                                t.as_secs_f64().ceil()
                            ),
                        });
                    }
                }
                got.map_err(broken)?.ok_or_else(consume::closed)?
            }
            Reader::Demux(rx) => rx.recv().map_err(|_| consume::closed())??,
            Reader::Gone => return Err(consume::closed()),
        };
        match answer {
            (_, Response::Err { reason, detail }) => Err(ClientError {
                reason: ReasonCode::of(reason),
                detail,
            }),
            (rid, resp) if rid == id => Ok(resp),
            (rid, _) => Err(ClientError {
                reason: ReasonCode::UnexpectedError,
                detail: format!("answer to request {rid} while waiting for {id}"),
            }),
        }
    }

    fn unexpected<T>(r: Response) -> Result<T> {
        Err(ClientError {
            reason: ReasonCode::UnexpectedError,
            detail: format!("unexpected answer {r:?}"),
        })
    }

    /// MQOPEN; returns the handle and the name it resolved to.
    pub fn open(&mut self, name: &str, opts: OpenOptions) -> Result<(u32, String)> {
        self.open_dynamic(name, opts, "")
    }

    /// MQOPEN of `name` on queue manager `qmgr` (for output; empty `qmgr`: this one). The
    /// queue manager resolves the transmission queue (SPEC §6); the policy applied is the
    /// policy of the name on this queue manager, if any.
    pub fn open_at(&mut self, name: &str, qmgr: &str, opts: OpenOptions) -> Result<(u32, String)> {
        let r = self.call(Request::OpenAt {
            name: name.to_string(),
            qmgr: qmgr.to_string(),
            options: open_bits(&opts),
        })?;
        self.opened(r)
    }

    /// The handle of an Opened answer, with its policy registered for interception.
    fn opened(&mut self, r: Response) -> Result<(u32, String)> {
        match r {
            Response::Opened(o) => {
                self.icpt.opened(o.hobj, &o.policy, o.intercepted)?;
                self.last_defreada = o.read_ahead;
                Ok((o.hobj, o.resolved))
            }
            r => Self::unexpected(r),
        }
    }

    pub fn open_dynamic(
        &mut self,
        name: &str,
        opts: OpenOptions,
        dyn_name: &str,
    ) -> Result<(u32, String)> {
        let bits = open_bits(&opts);
        let r = self.call(Request::Open {
            name: name.to_string(),
            options: bits,
            dyn_name: dyn_name.to_string(),
        })?;
        self.last_defreada = None;
        let (hobj, resolved) = self.opened(r)?;
        let input = opts.input_shared || opts.input_exclusive || opts.input_as_q_def;
        let defreada = self.last_defreada.take();
        self.ra.opened(hobj, input, opts.read_ahead, defreada);
        Ok((hobj, resolved))
    }

    pub fn close(&mut self, hobj: u32) -> Result<()> {
        self.ra.closed(hobj);
        self.call(Request::Close { hobj }).map(|_| ())
    }

    /// Message properties need protocol version 3: an older queue manager would not read them.
    fn check_properties(&self, md: &Md) -> Result<()> {
        if md.properties.is_empty() || self.version >= sealmq_wire::V_PROPERTIES {
            return Ok(());
        }
        Err(ClientError {
            reason: ReasonCode::UnexpectedError,
            detail: format!(
                "the queue manager speaks protocol version {}, which has no message properties; \
                 put without properties or upgrade it",
                self.version
            ),
        })
    }

    /// The descriptor as the queue manager's protocol version reads it: before version 6,
    /// without MQMD's report options and feedback (an older queue manager would not read
    /// them).
    pub(crate) fn for_peer(&self, md: &Md) -> Md {
        let mut md = md.clone();
        if self.version < sealmq_wire::V_MD_MORE {
            md.clear_more();
        }
        md
    }

    /// MQPUT without client-side protection; `md` comes back filled.
    pub(crate) fn put_raw(
        &mut self,
        hobj: u32,
        md: &mut Md,
        payload: Vec<u8>,
        syncpoint: bool,
    ) -> Result<()> {
        self.check_properties(md)?;
        let req = Request::Put {
            hobj,
            md: self.for_peer(md),
            payload,
            syncpoint,
        };
        self.call_put(req, md)
    }

    /// A put or put1: `md` comes back as the queue manager filled it.
    fn call_put(&mut self, req: Request, md: &mut Md) -> Result<()> {
        match self.call(req)? {
            Response::Put { md: filled } => {
                *md = filled;
                Ok(())
            }
            r => Self::unexpected(r),
        }
    }

    /// The security policy of queue `name` as the queue manager has it (MQ's dspmqspl for an
    /// application): needs INQ or PUT authority on the queue. `None`: the queue has none.
    pub fn policy(&mut self, name: &str) -> Result<Option<sealmq_protect::Policy>> {
        match self.call(Request::Policy {
            name: name.to_string(),
        })? {
            // A version 7 queue manager adds its policy epoch, which this call does not need.
            Response::Policy { policy } | Response::PolicyAt { policy, .. }
                if policy.is_empty() =>
            {
                Ok(None)
            }
            Response::Policy { policy } | Response::PolicyAt { policy, .. } => {
                sealmq_mqi::policy::decode(&policy)
                    .map(Some)
                    .map_err(|e| ClientError {
                        reason: ReasonCode::UnexpectedError,
                        detail: format!("the policy of '{name}' does not read: {e}"),
                    })
            }
            other => Self::unexpected(other),
        }
    }

    /// Reports a message `hobj` got that failed its protection checks: the queue manager puts
    /// it on SYSTEM.PROTECTION.ERROR.QUEUE behind a dead-letter header (the client library
    /// does this itself on a failed get). Refused (2035) for a message the handle did not get.
    pub fn report_protection_error(
        &mut self,
        hobj: u32,
        got: &Got,
        check: &str,
        detail: &str,
        syncpoint: bool,
    ) -> Result<()> {
        match self.call(Request::ProtectionError {
            hobj,
            md: got.md.clone(),
            payload: got.payload.clone(),
            check: check.to_string(),
            detail: detail.to_string(),
            signer: String::new(),
            syncpoint,
        })? {
            Response::Ok => Ok(()),
            other => Self::unexpected(other),
        }
    }

    pub(crate) fn put1_raw(
        &mut self,
        name: &str,
        md: &mut Md,
        payload: Vec<u8>,
        syncpoint: bool,
    ) -> Result<()> {
        self.check_properties(md)?;
        let req = Request::Put1 {
            name: name.to_string(),
            md: self.for_peer(md),
            payload,
            syncpoint,
        };
        self.call_put(req, md)
    }

    /// Wire version 7's put1: refused with 2041 when the queue manager's policies changed
    /// since `epoch`.
    pub(crate) fn put1_at_raw(
        &mut self,
        name: &str,
        md: &mut Md,
        payload: Vec<u8>,
        syncpoint: bool,
        epoch: u64,
    ) -> Result<()> {
        self.check_properties(md)?;
        let req = Request::Put1At {
            name: name.to_string(),
            md: self.for_peer(md),
            payload,
            syncpoint,
            epoch,
        };
        self.call_put(req, md)
    }

    /// MQGET without client-side protection.
    pub(crate) fn get_raw(&mut self, hobj: u32, gmo: &GetOptions) -> Result<Got> {
        let req = GetReq::from_options(hobj, gmo);
        self.call_wait = gmo.wait.unwrap_or_default();
        let answer = self.call(Request::Get(req));
        self.call_wait = std::time::Duration::ZERO;
        match answer? {
            Response::Got {
                md,
                payload,
                data_len,
                warning,
            } => Ok(Got {
                md,
                payload,
                data_len: data_len as usize,
                warning: (warning != 0)
                    .then(|| ReasonCode::from_code(warning))
                    .flatten(),
                // Queue positions stay inside the queue manager.
                seq: 0,
            }),
            r => Self::unexpected(r),
        }
    }

    pub fn commit(&mut self) -> Result<()> {
        let r = self.call(Request::Commit).map(|_| ());
        self.icpt.in_uow = false;
        r
    }

    pub fn backout(&mut self) -> Result<()> {
        let r = self.call(Request::Backout).map(|_| ());
        self.icpt.in_uow = false;
        r
    }

    /// Runs MQSC; returns the rendered output and how many commands failed.
    pub fn mqsc(&mut self, script: &str, json: bool) -> Result<(String, u32)> {
        match self.call(Request::Mqsc {
            script: script.to_string(),
            json,
        })? {
            Response::Mqsc { text, failed } => Ok((text, failed)),
            r => Self::unexpected(r),
        }
    }

    /// Asks the queue manager to end.
    pub fn stop(&mut self, immediate: bool) -> Result<()> {
        self.call(Request::Stop { immediate }).map(|_| ())
    }

    pub fn heartbeat(&mut self) -> Result<()> {
        self.call(Request::Heartbeat).map(|_| ())
    }

    pub fn disconnect(mut self) -> Result<()> {
        self.call(Request::Disconnect).map(|_| ())
    }
}

impl Drop for Client {
    /// A reader thread (asynchronous consume) holds the socket: shut it down, so the queue
    /// manager sees the connection end (and backs out what it holds) and the thread ends.
    fn drop(&mut self) {
        if let (Reader::Demux(_), Some(s)) = (&self.r, &self.sock) {
            s.close();
        }
    }
}

/// What the client does to its connection's socket beside reading and writing it.
pub(crate) trait SockCtl: Send + Sync {
    fn close(&self);
    fn read_timeout(&self, t: Option<std::time::Duration>);
}

/// A stream without TLS a connection is made on.
trait Plain: SockCtl + Read + Write + Sized + 'static {
    fn dup(&self) -> std::io::Result<Self>;
}

macro_rules! sock_ctl {
    ($($t:ty),*) => {$(
        impl SockCtl for $t {
            fn close(&self) {
                let _ = self.shutdown(std::net::Shutdown::Both);
            }
            fn read_timeout(&self, t: Option<std::time::Duration>) {
                let _ = self.set_read_timeout(t);
            }
        }
        impl Plain for $t {
            fn dup(&self) -> std::io::Result<Self> {
                self.try_clone()
            }
        }
    )*};
}
sock_ctl!(TcpStream, UnixStream);

fn open_bits(opts: &OpenOptions) -> u8 {
    let mut bits = 0u8;
    for (on, b) in [
        (opts.input_shared, open::INPUT_SHARED),
        (opts.input_exclusive, open::INPUT_EXCLUSIVE),
        (opts.input_as_q_def, open::INPUT_AS_Q_DEF),
        (opts.browse, open::BROWSE),
        (opts.output, open::OUTPUT),
        (opts.inquire, open::INQUIRE),
        (opts.set, open::SET),
    ] {
        if on {
            bits |= b;
        }
    }
    bits
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reason_this_build_does_not_name_is_kept_and_shown_as_unknown() {
        let e = ClientError {
            reason: ReasonCode::of(2999),
            detail: "from a newer queue manager".into(),
        };
        assert_eq!(e.reason, ReasonCode::Other(2999));
        assert_eq!(e.to_string(), "2999 UNKNOWN: from a newer queue manager");
        let known = ClientError {
            reason: ReasonCode::of(2033),
            detail: "none".into(),
        };
        assert_eq!(known.reason, ReasonCode::NoMsgAvailable);
        assert_eq!(known.to_string(), "2033 NO_MSG_AVAILABLE: none");
    }
}

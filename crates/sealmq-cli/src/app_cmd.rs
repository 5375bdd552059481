//! `sealmq put|get|browse`: the sample applications (SPEC §2.4), also the tools checks use.
//!
//! Generated payloads (`put --size`) are self-checking: `SMQG`, run id u64, sequence u64,
//! length u32, filler, CRC32C u32 of everything before it. `get --verify` checks them.

#![allow(unsafe_code)]

use crate::CliResult;
use crate::browse_fmt;
use crate::home::qm_dir;
use clap::Args;
use sealmq_client::reconnect::Connector;
use sealmq_client::{Client, Reconnecting};
use sealmq_mqi::{Browse, GetOptions, Md, OpenOptions, Persistence};
use sealmq_types::ReasonCode;
use std::collections::HashSet;
use std::io::Write;
use std::time::Duration;

const GEN_MAGIC: &[u8; 4] = b"SMQG";
const GEN_MIN: usize = 28;

#[derive(Args)]
pub struct ConnArgs {
    /// Queue manager name.
    pub qm: String,
    /// Queue name (for `pub` and `sub`: the topic string).
    pub queue: String,
    /// Reach the queue manager over TCP (HOST:PORT) instead of its local socket; a list
    /// (h1:p1,h2:p2,h3:p3 or MQ's h1(p1),h2(p2),h3(p3)) is tried in order until an address
    /// serves, e.g. the instances of a replicated queue manager.
    #[arg(long)]
    pub conn: Option<String>,
    /// Use TLS on --conn, with the identity and trust of --keystore (or SEALMQ_KEYSTORE).
    #[arg(long, requires = "conn")]
    pub tls: bool,
    /// The application's keystore (for --tls).
    #[arg(long, env = "SEALMQ_KEYSTORE")]
    pub keystore: Option<std::path::PathBuf>,
    /// The SVRCONN channel to connect through with --conn (default SYSTEM.DEF.SVRCONN).
    #[arg(long, default_value = "", requires = "conn")]
    pub channel: String,
    /// Authenticate as this user id (connection authentication); the password is read from
    /// --password-fd, else SEALMQ_PASSWORD, else asked on the terminal.
    #[arg(long)]
    pub user: Option<String>,
    /// Read the password of --user from this open file descriptor (its first line), e.g.
    /// `--password-fd 3 3<~/.sealmq/app.pw`: no password in the shell's history or the
    /// environment.
    #[arg(long, value_name = "FD", requires = "user")]
    pub password_fd: Option<i32>,
    /// Send the password over --conn without --tls (refused unless the queue manager allows it).
    #[arg(long, requires = "user")]
    pub allow_cleartext_password: bool,
    /// Reconnect by itself when the connection is lost (MQ's MQCNO_RECONNECT), e.g. when the
    /// active instance of a replicated queue manager is lost: the list is tried again, the
    /// queue reopened, a unit of work cut off done again (docs/ha.md).
    #[arg(long)]
    pub reconnect: bool,
    /// With --reconnect: give up (2548) after this many seconds without a connection.
    #[arg(
        long,
        value_name = "SECS",
        default_value_t = 120,
        requires = "reconnect"
    )]
    pub reconnect_timeout: u64,
    /// A call that gets no answer within this many seconds (beyond its own --wait) counts as
    /// a lost connection (2009; with --reconnect the next address is tried): a queue manager
    /// that hangs is left. Without it a call waits as long as it takes.
    #[arg(long, value_name = "SECS")]
    pub call_timeout: Option<u64>,
}

/// A password from an open file descriptor: its first line, without the line end. The
/// descriptor is read to its end and closed.
pub(crate) fn password_from_fd(fd: i32) -> CliResult<zeroize::Zeroizing<String>> {
    use std::io::Read;
    use std::os::fd::FromRawFd;
    // SAFETY: fcntl(F_GETFD) only asks whether `fd` is open; nothing is changed.
    if fd < 0 || unsafe { libc::fcntl(fd, libc::F_GETFD) } < 0 {
        return Err(format!(
            "--password-fd {fd}: no such open file descriptor (give one the shell opened, e.g. \
             3<FILE)"
        )
        .into());
    }
    // SAFETY: `fd` is open (checked above) and handed to us by our parent for this purpose;
    // the File takes it over and closes it, and nothing else here uses it.
    let mut f = unsafe { std::fs::File::from_raw_fd(fd) };
    let mut buf = zeroize::Zeroizing::new(Vec::new());
    (&mut f)
        .take(4096)
        .read_to_end(&mut buf)
        .map_err(|e| format!("--password-fd {fd}: cannot read: {e}"))?;
    let line = buf.split(|b| *b == b'\n').next().unwrap_or_default();
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let pw = std::str::from_utf8(line)
        .map_err(|_| format!("--password-fd {fd}: the password is not UTF-8"))?;
    if pw.is_empty() {
        return Err(format!("--password-fd {fd}: the first line is empty").into());
    }
    Ok(zeroize::Zeroizing::new(pw.to_string()))
}

/// The credentials of `--user`: the password from --password-fd, SEALMQ_PASSWORD or the
/// terminal.
pub(crate) fn credentials(
    user: Option<&str>,
    password_fd: Option<i32>,
    allow_cleartext: bool,
) -> CliResult<Option<sealmq_client::Credentials>> {
    let Some(user) = user else { return Ok(None) };
    let password = match (password_fd, std::env::var("SEALMQ_PASSWORD")) {
        (Some(fd), _) => password_from_fd(fd)?,
        (None, Ok(p)) => zeroize::Zeroizing::new(p),
        (None, Err(_)) => zeroize::Zeroizing::new(
            rpassword::prompt_password(format!("Password for {user}: ")).map_err(|e| {
                format!("--user {user}: no SEALMQ_PASSWORD and no terminal to ask on ({e})")
            })?,
        ),
    };
    let mut c = sealmq_client::Credentials::new(user, &password);
    c.allow_cleartext = allow_cleartext;
    Ok(Some(c))
}

#[derive(Args)]
pub struct PutArgs {
    #[command(flatten)]
    pub c: ConnArgs,
    /// Message text.
    #[arg(long, conflicts_with = "size")]
    pub message: Option<String>,
    /// Generate self-checking payloads of this many bytes (binary: format blank, MQFMT_NONE).
    #[arg(long)]
    pub size: Option<usize>,
    #[arg(long, default_value_t = 1)]
    pub count: u64,
    #[arg(long)]
    pub persistent: bool,
    /// Commit every K messages.
    #[arg(long)]
    pub syncpoint: Option<u64>,
    #[arg(long)]
    pub priority: Option<i32>,
    /// Correlation id (text, up to 24 bytes).
    #[arg(long)]
    pub correl: Option<String>,
    /// A message property, `name=value` (a string) or `name:TYPE=value` with TYPE boolean,
    /// byte, short, int, long, float, double, string, bytes (hex) or null; repeatable.
    #[arg(long = "property", value_name = "NAME[:TYPE]=VALUE", value_parser = sealmq_mqi::props::parse_assignment)]
    pub properties: Vec<sealmq_mqi::Property>,
    /// Use put1 (open, put, close) for every message.
    #[arg(long, conflicts_with = "qmgr")]
    pub put1: bool,
    /// The queue manager the queue is on (another one: reached through a channel).
    #[arg(long, default_value = "")]
    pub qmgr: String,
    /// Print `committed <total>` after each successful commit.
    #[arg(long)]
    pub log_commits: bool,
    /// Show progress on standard error.
    #[arg(long)]
    pub progress: bool,
}

#[derive(Args)]
pub struct GetArgs {
    #[command(flatten)]
    pub c: ConnArgs,
    #[arg(long, conflicts_with = "all")]
    pub count: Option<u64>,
    /// Get until the queue is empty.
    #[arg(long)]
    pub all: bool,
    /// Wait this many milliseconds for each message.
    #[arg(long, default_value_t = 0)]
    pub wait: u64,
    /// Commit every K messages.
    #[arg(long)]
    pub syncpoint: Option<u64>,
    /// Check generated payloads: `got <n> ok <n> corrupt <n> duplicate <n>`.
    #[arg(long)]
    pub verify: bool,
    /// Print a summary only.
    #[arg(long)]
    pub quiet: bool,
    /// Asynchronous consume: the queue manager pushes messages within a window (MQCB);
    /// with --syncpoint K each K messages are committed once processed.
    #[arg(long = "async")]
    pub async_consume: bool,
    /// With --async: messages pushed ahead and not yet processed.
    #[arg(long, default_value_t = 1000, requires = "async_consume")]
    pub window: u32,
}

#[derive(Args)]
pub struct BrowseArgs {
    #[command(flatten)]
    pub c: ConnArgs,
    /// Show the bytes as stored (a protected message shows its envelope).
    #[arg(long)]
    pub raw: bool,
    /// Show at most this many messages, from the first (the queue's order).
    #[arg(long, value_name = "N")]
    pub count: Option<u64>,
}

/// How the connection of `c` is made (and made again, with --reconnect).
fn dialer(c: &ConnArgs, appl: &str) -> CliResult<Connector> {
    let creds = credentials(c.user.as_deref(), c.password_fd, c.allow_cleartext_password)?;
    let tls_keystore = match (c.tls, &c.keystore) {
        (false, _) => None,
        (true, Some(ks)) => Some(ks.clone()),
        (true, None) => {
            return Err("--tls needs --keystore DIR (or SEALMQ_KEYSTORE)"
                .to_string()
                .into());
        }
    };
    let (conn, qm, channel) = (c.conn.clone(), c.qm.clone(), c.channel.clone());
    let (keystore, appl) = (c.keystore.clone(), appl.to_string());
    let call_timeout = c.call_timeout.map(Duration::from_secs);
    Ok(Box::new(move || {
        let creds = creds.as_ref();
        let mut client = match (&conn, &tls_keystore) {
            (Some(list), Some(ks)) => Client::connect_first(list, |addr| {
                Client::connect_tls_channel_as(addr, ks, Some(&qm), &channel, &appl, creds)
            }),
            (Some(list), None) => Client::connect_first(list, |addr| {
                Client::connect_tcp_channel_as(addr, &channel, &appl, creds)
            }),
            (None, _) => Client::connect_local_as(&qm_dir(&qm), &appl, creds),
        }?;
        if let Some(ks) = &keystore {
            client.set_keystore(ks)?;
        }
        client.set_call_timeout(call_timeout);
        Ok(client)
    }))
}

pub(crate) fn connect(c: &ConnArgs, appl: &str) -> CliResult<Client> {
    let mut dial = dialer(c, appl)?;
    dial().map_err(|e| e.to_string().into())
}

/// The connection of `put` and `get`: one that reconnects by itself with --reconnect.
pub(crate) fn connect_app(c: &ConnArgs, appl: &str) -> CliResult<Reconnecting> {
    if !c.reconnect {
        return Ok(Reconnecting::plain(connect(c, appl)?));
    }
    let mut r = Reconnecting::connect(dialer(c, appl)?).map_err(|e| e.to_string())?;
    r.timeout = Duration::from_secs(c.reconnect_timeout);
    Ok(r)
}

fn generated(run: u64, seq: u64, size: usize) -> Vec<u8> {
    let size = size.max(GEN_MIN);
    let mut v = Vec::with_capacity(size);
    v.extend_from_slice(GEN_MAGIC);
    v.extend_from_slice(&run.to_le_bytes());
    v.extend_from_slice(&seq.to_le_bytes());
    v.extend_from_slice(&(size as u32).to_le_bytes());
    while v.len() < size - 4 {
        v.push((v.len() as u64 ^ seq) as u8);
    }
    let crc = crc32c::crc32c(&v);
    v.extend_from_slice(&crc.to_le_bytes());
    v
}

/// (run, seq) of a valid generated payload.
fn check(p: &[u8]) -> Option<(u64, u64)> {
    if p.len() < GEN_MIN || &p[..4] != GEN_MAGIC {
        return None;
    }
    let n = p.len();
    let crc = u32::from_le_bytes(p[n - 4..].try_into().ok()?);
    let size = u32::from_le_bytes(p[20..24].try_into().ok()?) as usize;
    (crc32c::crc32c(&p[..n - 4]) == crc && size == n).then(|| {
        (
            u64::from_le_bytes(p[4..12].try_into().unwrap_or_default()),
            u64::from_le_bytes(p[12..20].try_into().unwrap_or_default()),
        )
    })
}

fn id24(s: &str) -> [u8; 24] {
    let mut id = [0u8; 24];
    for (d, b) in id.iter_mut().zip(s.bytes()) {
        *d = b;
    }
    id
}

pub fn put(a: PutArgs) -> CliResult {
    let mut c = connect_app(&a.c, "sealmq-put")?;
    let h = if a.put1 {
        None
    } else {
        Some(
            c.open_at(&a.c.queue, &a.qmgr, OpenOptions::output())
                .map_err(|e| e.to_string())?
                .0,
        )
    };
    let run = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    let sync = a.syncpoint.filter(|k| *k > 0);
    let mut out = std::io::stdout().lock();
    let mut committed = 0u64;
    let mut i = 0;
    while i < a.count {
        let payload = match (&a.message, a.size) {
            (Some(m), _) => m.as_bytes().to_vec(),
            (None, Some(s)) => generated(run, i, s),
            (None, None) => format!("message {i}").into_bytes(),
        };
        // A generated payload is binary (its header and checksum): MQ's MQFMT_NONE, blank,
        // so that a reader converts nothing; text is MQSTR.
        let binary = a.message.is_none() && a.size.is_some();
        let mut md = Md {
            persistence: Persistence::of(a.persistent),
            priority: a.priority.unwrap_or(-1),
            format: if binary { "" } else { "MQSTR" }.into(),
            ..Md::default()
        };
        if let Some(cid) = &a.correl {
            md.correl_id = id24(cid);
        }
        md.properties = a.properties.clone();
        let r = match h {
            Some(h) => c.put(h, &mut md, &payload, sync.is_some()),
            None => c.put1(&a.c.queue, &mut md, &payload, sync.is_some()),
        };
        match r {
            Ok(()) => {}
            // Reconnected: the unit of work since the last commit is gone; put it again.
            Err(e) if e.reason == ReasonCode::BackedOut && a.c.reconnect => {
                eprintln!("{e}: putting from message {} again", committed + 1);
                i = committed;
                continue;
            }
            // Reconnected during a put outside syncpoint: it may be there; put it again.
            Err(e) if e.reason == ReasonCode::CallInterrupted && a.c.reconnect => {
                eprintln!(
                    "{e}: putting message {} again (it may now be there twice)",
                    i + 1
                );
                continue;
            }
            Err(e) => return Err(format!("put {} of {}: {e}", i + 1, a.count).into()),
        }
        i += 1;
        let due = sync.is_some_and(|k| i % k == 0 || i == a.count);
        if !due {
            if a.progress && i % 1000 == 0 {
                eprintln!("put {i}/{}", a.count);
            }
            continue;
        }
        if !commit_put(&mut c, &a, md.msg_id, i)? {
            i = committed;
            continue;
        }
        committed = i;
        if a.log_commits {
            let _ = writeln!(out, "committed {committed}");
            let _ = out.flush();
        }
    }
    if let Some(h) = h {
        let _ = c.close(h);
    }
    let _ = c.disconnect();
    if !a.log_commits {
        let _ = writeln!(out, "put {} message(s) to {}", a.count, a.c.queue);
    }
    Ok(())
}

/// Commits the messages put up to `i`; `false` (with --reconnect) when the unit of work was
/// lost and is to be put again. A commit cut off by a lost connection is in doubt: the last
/// message's id on the queue says it took effect (a consumer that took it already makes it
/// look lost: the unit of work is then put twice).
fn commit_put(c: &mut Reconnecting, a: &PutArgs, last_id: [u8; 24], i: u64) -> CliResult<bool> {
    match c.commit() {
        Ok(()) => Ok(true),
        Err(e) if e.reason == ReasonCode::BackedOut && a.c.reconnect => {
            eprintln!("{e}: putting the unit of work again");
            Ok(false)
        }
        Err(e) if e.reason == ReasonCode::CallInterrupted && a.c.reconnect => {
            let there = a.qmgr.is_empty() && !on_queue(c, &a.c.queue, &[last_id])?.is_empty();
            eprintln!(
                "{e}: the unit of work ending at message {i} was {}",
                if there {
                    "committed"
                } else {
                    "lost: putting it again"
                }
            );
            Ok(there)
        }
        Err(e) => Err(format!("commit after {i} messages: {e}").into()),
    }
}

/// Which of the messages `ids` are on `queue` (browsed by message id).
fn on_queue(c: &mut Reconnecting, queue: &str, ids: &[[u8; 24]]) -> CliResult<HashSet<[u8; 24]>> {
    let mut there = HashSet::new();
    if ids.is_empty() {
        return Ok(there);
    }
    let (h, _) = c
        .open(queue, OpenOptions::browse())
        .map_err(|e| e.to_string())?;
    for id in ids {
        let gmo = GetOptions {
            browse: Browse::First,
            matching: sealmq_mqi::Match {
                msg_id: Some(*id),
                ..Default::default()
            },
            accept_truncated: true,
            buffer: Some(0),
            ..Default::default()
        };
        match c.get(h, &gmo) {
            Ok(_) => {
                there.insert(*id);
            }
            Err(e) if e.reason == ReasonCode::NoMsgAvailable => {}
            Err(e) => return Err(e.to_string().into()),
        }
    }
    let _ = c.close(h);
    Ok(there)
}

/// `sealmq get`'s connection, its input handle and how many messages it is to get.
pub(crate) fn open_for_get(a: &GetArgs) -> CliResult<(Reconnecting, u32, u64)> {
    let mut c = connect_app(&a.c, "sealmq-get")?;
    let (h, _) = c
        .open(&a.c.queue, OpenOptions::input())
        .map_err(|e| e.to_string())?;
    let limit = if a.all {
        u64::MAX
    } else {
        a.count.unwrap_or(1)
    };
    Ok((c, h, limit))
}

pub fn get(a: GetArgs) -> CliResult {
    let (mut c, h, limit) = open_for_get(&a)?;
    let sync = a.syncpoint.filter(|k| *k > 0);
    let gmo = GetOptions {
        syncpoint: sync.is_some(),
        wait: Some(Duration::from_millis(a.wait)),
        ..Default::default()
    };
    let mut t = Tally::new(&a);
    let shown = crate::progress::counter("got", "messages", (limit != u64::MAX).then_some(limit));
    loop {
        while t.got < limit {
            match c.get(h, &gmo) {
                Ok(m) => {
                    shown.inc(1);
                    // Printed messages and the bar share the terminal: print above it.
                    shown.suspend(|| t.take(&m));
                    if sync.is_some_and(|k| t.got.is_multiple_of(k)) {
                        commit_get(&mut c, &a, &mut t)?;
                    }
                }
                Err(e) if e.reason == ReasonCode::NoMsgAvailable => break,
                // Reconnected: what was got since the last commit is back on the queue.
                Err(e) if e.reason == ReasonCode::BackedOut && a.c.reconnect => {
                    eprintln!("{e}");
                    t.come_again(&mut c, &a.c.queue)?;
                }
                Err(e) if e.reason == ReasonCode::CallInterrupted && a.c.reconnect => {
                    eprintln!("{e}: a message got outside syncpoint may have been lost");
                }
                Err(e) => return Err(e.to_string().into()),
            }
        }
        if sync.is_none() || commit_get(&mut c, &a, &mut t)? {
            break;
        }
    }
    shown.finish_and_clear();
    let _ = c.close(h);
    let _ = c.disconnect();
    t.finish(&a, limit)
}

/// Commits what `get` got; `false` (with --reconnect) when the connection was lost first:
/// the messages got since the last commit come again unless the commit took effect (a
/// commit cut off is in doubt), and are not counted twice.
fn commit_get(c: &mut Reconnecting, a: &GetArgs, t: &mut Tally) -> CliResult<bool> {
    match c.commit() {
        Ok(()) => {
            t.committed();
            Ok(true)
        }
        Err(e)
            if (e.reason == ReasonCode::BackedOut || e.reason == ReasonCode::CallInterrupted)
                && a.c.reconnect =>
        {
            eprintln!("{e}");
            t.come_again(c, &a.c.queue)?;
            Ok(false)
        }
        Err(e) => Err(e.to_string().into()),
    }
}

/// What `sealmq get` got: printed, or checked (`--verify`), then summed up. With
/// --reconnect, the messages of a unit of work cut off by a lost connection were backed out,
/// or committed when the commit was under way: those still on the queue (browsed by message
/// id) are not counted, and are when they come again.
pub(crate) struct Tally {
    pub(crate) got: u64,
    ok: u64,
    corrupt: u64,
    dup: u64,
    seen: HashSet<(u64, u64)>,
    verify: bool,
    quiet: bool,
    /// The messages taken since the last commit (under syncpoint with --reconnect).
    pending: Option<Vec<([u8; 24], Taken)>>,
}

/// How one message was counted.
#[derive(Clone, Copy)]
enum Taken {
    Ok((u64, u64)),
    Dup,
    Corrupt,
    Shown,
}

impl Tally {
    pub(crate) fn new(a: &GetArgs) -> Tally {
        Tally {
            got: 0,
            ok: 0,
            corrupt: 0,
            dup: 0,
            seen: HashSet::new(),
            verify: a.verify,
            quiet: a.quiet,
            pending: (a.c.reconnect && a.syncpoint.is_some_and(|k| k > 0)).then(Vec::new),
        }
    }

    /// The messages taken so far are committed.
    pub(crate) fn committed(&mut self) {
        self.uncommitted(0);
    }

    /// All but the last `n` messages taken are committed (asynchronous consume under
    /// syncpoint commits by itself).
    pub(crate) fn uncommitted(&mut self, n: u64) {
        if let Some(p) = &mut self.pending {
            let n = (n as usize).min(p.len());
            p.drain(..p.len() - n);
        }
    }

    /// After a lost connection: the messages taken since the last commit that are on the
    /// queue again are taken back (they come again).
    pub(crate) fn come_again(&mut self, c: &mut Reconnecting, queue: &str) -> CliResult {
        let Some(p) = self.pending.take() else {
            return Ok(());
        };
        let ids: Vec<[u8; 24]> = p.iter().map(|(id, _)| *id).collect();
        let back = on_queue(c, queue, &ids)?;
        eprintln!(
            "{} of the {} message(s) got since the last commit are back on the queue",
            back.len(),
            p.len()
        );
        for (id, t) in p {
            if !back.contains(&id) {
                continue;
            }
            self.got -= 1;
            match t {
                Taken::Ok(k) => {
                    self.seen.remove(&k);
                    self.ok -= 1;
                }
                Taken::Dup => self.dup -= 1,
                Taken::Corrupt => self.corrupt -= 1,
                Taken::Shown => {}
            }
        }
        self.pending = Some(Vec::new());
        Ok(())
    }

    pub(crate) fn take(&mut self, m: &sealmq_mqi::Got) {
        self.got += 1;
        let payload = &m.payload;
        let taken = if self.verify {
            match check(payload) {
                Some(id) if self.seen.insert(id) => {
                    self.ok += 1;
                    Taken::Ok(id)
                }
                Some(_) => {
                    self.dup += 1;
                    Taken::Dup
                }
                None => {
                    self.corrupt += 1;
                    Taken::Corrupt
                }
            }
        } else {
            if !self.quiet {
                let _ = writeln!(
                    std::io::stdout().lock(),
                    "{}",
                    String::from_utf8_lossy(payload)
                );
            }
            Taken::Shown
        };
        if let Some(p) = &mut self.pending {
            p.push((m.md.msg_id, taken));
        }
    }

    pub(crate) fn finish(self, a: &GetArgs, limit: u64) -> CliResult {
        let mut out = std::io::stdout().lock();
        let (got, ok, corrupt, dup) = (self.got, self.ok, self.corrupt, self.dup);
        if a.verify {
            let _ = writeln!(out, "got {got} ok {ok} corrupt {corrupt} duplicate {dup}");
            if corrupt > 0 || dup > 0 {
                return Err(format!("{corrupt} corrupt and {dup} duplicate message(s)").into());
            }
        } else if a.quiet {
            let _ = writeln!(out, "got {got} message(s) from {}", a.c.queue);
        }
        if !a.all && got < limit {
            return Err(crate::refused(
                ReasonCode::NoMsgAvailable,
                format!("got {got} of {limit} message(s)"),
            ));
        }
        Ok(())
    }
}

pub fn browse(a: BrowseArgs) -> CliResult {
    let mut c = connect(&a.c, "sealmq-browse")?;
    c.set_raw(a.raw);
    let (h, _) = c
        .open(&a.c.queue, OpenOptions::browse())
        .map_err(|e| e.to_string())?;
    let mut gmo = GetOptions {
        browse: Browse::First,
        ..Default::default()
    };
    let mut out = std::io::stdout().lock();
    let mut n = 0;
    while a.count.is_none_or(|max| n < max) {
        match c.get(h, &gmo) {
            Ok(m) => {
                n += 1;
                if a.raw {
                    let hex: String = m
                        .payload
                        .iter()
                        .take(64)
                        .map(|b| format!("{b:02x}"))
                        .collect();
                    let _ = writeln!(
                        out,
                        "{n}: {} bytes {hex}{}",
                        m.payload.len(),
                        if m.payload.len() > 64 { "..." } else { "" }
                    );
                } else if m.md.format == sealmq_mqi::dlh::FORMAT {
                    let _ = writeln!(out, "Message {n}:\n{}", browse_fmt::descriptor(&m.md));
                    match sealmq_mqi::dlh::DeadLetterHeader::unwrap(&m.payload) {
                        Ok((h, inner)) => {
                            let _ =
                                writeln!(out, "{n}: {}", browse_fmt::dead_letter(&h, inner.len()));
                        }
                        Err(e) => {
                            let _ = writeln!(out, "{n}: unreadable dead-letter header: {e}");
                        }
                    }
                } else if m.md.format == sealmq_mqi::xqh::FORMAT {
                    let _ = writeln!(out, "Message {n}:\n{}", browse_fmt::descriptor(&m.md));
                    match sealmq_mqi::xqh::TransmissionHeader::unwrap(&m.payload) {
                        Ok((h, inner)) => {
                            let _ = writeln!(
                                out,
                                "{n}: for queue {} on {} (format '{}', {} bytes): {}",
                                h.remote_q,
                                h.remote_qm,
                                h.md.format,
                                inner.len(),
                                String::from_utf8_lossy(&inner)
                            );
                        }
                        Err(e) => {
                            let _ = writeln!(out, "{n}: unreadable transmission header: {e}");
                        }
                    }
                } else {
                    let _ = writeln!(
                        out,
                        "Message {n}:\n{}\n{n}: {}",
                        browse_fmt::descriptor(&m.md),
                        browse_fmt::payload(&m.payload)
                    );
                }
                gmo.browse = Browse::Next;
            }
            Err(e) if e.reason == ReasonCode::NoMsgAvailable => break,
            Err(e) => return Err(e.to_string().into()),
        }
    }
    let _ = c.close(h);
    let _ = writeln!(out, "{n} message(s) on {}", a.c.queue);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_payloads_check_themselves() {
        let p = generated(7, 42, 100);
        assert_eq!(p.len(), 100);
        assert_eq!(check(&p), Some((7, 42)));
        let mut bad = p.clone();
        bad[50] ^= 1;
        assert_eq!(check(&bad), None);
        assert_eq!(check(b"short"), None);
        assert_eq!(generated(1, 1, 3).len(), GEN_MIN);
    }
}

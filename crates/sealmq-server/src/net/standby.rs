//! A replica instance of a replicated queue manager (docs/ha.md) serves nobody: its local
//! socket and its TCP listener answer every connection with 2059 (MQRC_Q_MGR_NOT_AVAILABLE)
//! and the name of the active instance, so that an application with a connection list moves
//! on at once and an administrator knows where to go. Nothing is read from the caller.

use crate::admit::limits::EarlySock;
use std::net::{SocketAddr, TcpListener};
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

/// The reason a replica gives.
pub const REPLICA_REASON: sealmq_types::ReasonCode = sealmq_types::ReasonCode::QMgrNotAvailable;

/// What a replica says to a caller: computed at each connection (the active instance changes).
pub type Why = Arc<dyn Fn() -> String + Send + Sync>;

/// The listeners of a replica instance; [`Standby::stop`] frees their socket and port.
pub struct Standby {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
    socket: PathBuf,
}

fn refuse_loop<L, S>(
    l: L,
    stop: Arc<AtomicBool>,
    why: Why,
    accept: fn(&L) -> std::io::Result<S>,
) -> impl FnOnce() + Send + 'static
where
    L: Send + 'static,
    S: EarlySock + Send + 'static,
    for<'a> &'a S: std::io::Write + std::io::Read,
{
    move || {
        while !stop.load(Ordering::Relaxed) {
            match accept(&l) {
                Ok(s) => refuse(s, &why()),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(e) => crate::admit::limits::accept_failed("a replica's listener", &e),
            }
        }
    }
}

/// Answers 2059 and the reason, then lets the caller's Hello arrive before closing (closing
/// at once would make the caller's write fail, and it would see 2009 instead of the reason).
fn refuse<S>(s: S, why: &str)
where
    S: EarlySock + Send + 'static,
    for<'a> &'a S: std::io::Write + std::io::Read,
{
    s.set_write_timeout_ms(200);
    let mut w = &s;
    let _ = sealmq_wire::write_response(
        &mut w,
        0,
        &sealmq_wire::Response::Err {
            reason: REPLICA_REASON.code(),
            detail: why.into(),
        },
    );
    // Read (and drop) what the caller sends for a moment, off the accept loop; a flood of
    // callers past LINGERING is closed at once.
    static LINGERING: AtomicUsize = AtomicUsize::new(0);
    if LINGERING.fetch_add(1, Ordering::AcqRel) >= MAX_LINGERING {
        LINGERING.fetch_sub(1, Ordering::AcqRel);
        s.close();
        return;
    }
    std::thread::spawn(move || {
        s.set_read_timeout_ms(500);
        let mut buf = [0u8; 4096];
        let mut r = &s;
        let mut n = 0;
        while n < 1 << 16 {
            match std::io::Read::read(&mut r, &mut buf) {
                Ok(0) | Err(_) => break,
                Ok(k) => n += k,
            }
        }
        s.close();
        LINGERING.fetch_sub(1, Ordering::AcqRel);
    });
}

/// Refused connections a replica lets finish their Hello at once.
const MAX_LINGERING: usize = 64;

impl Standby {
    /// Binds `<QM dir>/qm.sock` and, when given, `listen`; refuses whoever connects.
    pub fn start(dir: &Path, listen: Option<SocketAddr>, why: Why) -> Result<Standby, String> {
        let stop = Arc::new(AtomicBool::new(false));
        let socket = crate::socket_path(dir);
        let _ = std::fs::remove_file(&socket);
        let ul = UnixListener::bind(&socket)
            .and_then(|l| l.set_nonblocking(true).map(|()| l))
            .map_err(|e| format!("cannot listen on {}: {e}", socket.display()))?;
        crate::auth::perms::share_socket(dir, &socket)?;
        let mut threads = vec![std::thread::spawn(refuse_loop(
            ul,
            stop.clone(),
            why.clone(),
            |l: &UnixListener| l.accept().map(|(s, _)| s),
        ))];
        if let Some(a) = listen {
            let tl = TcpListener::bind(a)
                .and_then(|l| l.set_nonblocking(true).map(|()| l))
                .map_err(|e| format!("cannot listen on {a}: {e}"))?;
            threads.push(std::thread::spawn(refuse_loop(
                tl,
                stop.clone(),
                why,
                |l: &TcpListener| {
                    l.accept().and_then(|(s, _)| {
                        s.set_nonblocking(false)?;
                        Ok(s)
                    })
                },
            )));
        }
        Ok(Standby {
            stop,
            threads,
            socket,
        })
    }

    /// Stops refusing: the socket file and the port are free when this returns.
    pub fn stop(self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads {
            let _ = t.join();
        }
        let _ = std::fs::remove_file(&self.socket);
    }
}

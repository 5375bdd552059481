//! The OS calls the server makes through libc (the crate's other unsafe code is in `perms.rs`,
//! `pam.rs` and the channel initiator's socket options): each one small, with its safety
//! argument next to it.

#![allow(unsafe_code)]

use std::os::unix::net::UnixStream;

/// This process's effective uid.
pub(crate) fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// Raises this process's open-file limit to its hard limit: each connection holds a few
/// descriptors, and the default soft limit (often 1024) would let a few hundred idle sockets
/// lock everyone out.
pub(crate) fn raise_fd_limit() -> u64 {
    let mut l = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit read and write one rlimit struct we own.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut l) == 0 && l.rlim_cur < l.rlim_max {
            l.rlim_cur = l.rlim_max;
            let _ = libc::setrlimit(libc::RLIMIT_NOFILE, &l);
            let _ = libc::getrlimit(libc::RLIMIT_NOFILE, &mut l);
        }
    }
    l.rlim_cur
}

/// The peer's (uid, pid) from SO_PEERCRED.
pub(crate) fn peer_cred(s: &UnixStream) -> Option<(u32, u32)> {
    use std::os::fd::AsRawFd;
    let mut cred = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: getsockopt writes at most `len` bytes into `cred`, a valid ucred.
    let rc = unsafe {
        libc::getsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        )
    };
    (rc == 0).then_some((cred.uid, cred.pid as u32))
}

/// Whether the peer of socket `fd` has gone: it closed (or shut down its writing side), the
/// connection was reset, or the socket failed. Looks without waiting and without reading
/// (bytes the peer sent are left for the reader).
pub(crate) fn hung_up(fd: std::os::fd::BorrowedFd<'_>) -> bool {
    use std::os::fd::AsRawFd;
    let mut p = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLRDHUP,
        revents: 0,
    };
    // SAFETY: poll reads and writes one pollfd we own, for a descriptor the caller keeps open.
    let n = unsafe { libc::poll(&mut p, 1, 0) };
    n > 0 && p.revents & (libc::POLLRDHUP | libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) != 0
}

/// CPU time of the calling thread, in nanoseconds.
pub fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec we own.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return 0;
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

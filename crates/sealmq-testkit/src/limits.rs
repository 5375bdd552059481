//! Resource limits for the processes tests start (a leaf: `cli` and `procs` both use it).

#![allow(unsafe_code)] // setrlimit between fork and exec

/// Makes `c`'s process hold at most `n` descriptors.
pub fn limit_fds(c: &mut std::process::Command, n: u64) {
    use std::os::unix::process::CommandExt;
    // SAFETY: setrlimit is async-signal-safe; it runs in the child between fork and exec.
    unsafe {
        c.pre_exec(move || {
            let lim = libc::rlimit {
                rlim_cur: n,
                rlim_max: n,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

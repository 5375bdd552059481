//! Loopback ports for servers a process starts itself (tests, benchmarks' throw-away queue
//! managers).

use std::sync::atomic::{AtomicU32, Ordering};

/// A loopback port free right now, that nothing else in this process was given and that no
/// outgoing connection will take before a server listens on it.
///
/// A port the kernel hands out for `bind(0)` lies in the ephemeral range, from which every
/// outgoing connection also takes its local port: between the moment a caller learns the port
/// and the moment its queue manager listens, a client connecting anywhere could take it ("the
/// port is in use"). Ports are therefore taken below that range, each once per process,
/// starting at a place that depends on the process id, and checked free by binding. `None`
/// only when no loopback port can be bound at all.
pub fn free_port() -> Option<u16> {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    const LOW: u32 = 10_000;
    let ephemeral_low = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|t| t.split_whitespace().next()?.parse::<u32>().ok())
        .unwrap_or(32_768);
    if ephemeral_low >= LOW + 2_000 {
        let span = ephemeral_low - LOW;
        let start = std::process::id().wrapping_mul(7_919) % span;
        for _ in 0..span {
            let n = NEXT.fetch_add(1, Ordering::Relaxed);
            let port = (LOW + (start + n) % span) as u16;
            if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
                return Some(port);
            }
        }
    }
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .ok()
}

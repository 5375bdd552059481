//! A partition (issue 26): the active instance is cut off from both replicas by loopback
//! proxies that drop its traffic, while its applications still reach it. It must stop
//! acknowledging (no split brain: no commit it answers may be missing later), the other two
//! elect one of them, and once the cut heals it comes back as a replica and catches up.
//!
//! Each instance listens for the others on its own loopback address (127.0.0.11, .12, .13,
//! `--ha-bind`) and calls them from it; the group's replication addresses are the proxies', on
//! 127.0.0.1. A proxy knows a connection's caller by its source address.

use super::{Group, LONG, QM, check_round, putter};
use sealmq_client::Client;
use sealmq_testkit::{free_port, wait_for};
use sealmq_types::ReasonCode;
use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

const NONE: usize = usize::MAX;

/// Instance `i`'s own loopback address.
fn own_ip(i: usize) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(127, 0, 0, 11 + i as u8))
}

/// The three proxies; `cut` names the instance whose traffic they drop.
struct Proxies {
    cut: Arc<AtomicUsize>,
    socks: Arc<Mutex<Vec<TcpStream>>>,
    stop: Arc<AtomicBool>,
}

impl Proxies {
    /// Proxies in front of `to[i]`, listening on `at[i]`.
    fn start(at: Vec<TcpListener>, to: Vec<SocketAddr>) -> Proxies {
        let p = Proxies {
            cut: Arc::new(AtomicUsize::new(NONE)),
            socks: Arc::default(),
            stop: Arc::default(),
        };
        for (dst, (l, to)) in at.into_iter().zip(to).enumerate() {
            let (cut, socks, stop) = (p.cut.clone(), p.socks.clone(), p.stop.clone());
            l.set_nonblocking(true).unwrap();
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let Ok((s, peer)) = l.accept() else {
                        std::thread::sleep(std::time::Duration::from_millis(10));
                        continue;
                    };
                    let src = (0..3).find(|i| own_ip(*i) == peer.ip()).unwrap_or(NONE);
                    let _ = s.set_nonblocking(false);
                    let Ok(t) = TcpStream::connect(to) else {
                        continue;
                    };
                    if let (Ok(s2), Ok(t2)) = (s.try_clone(), t.try_clone()) {
                        socks.lock().unwrap().extend([s2, t2]);
                    }
                    for (from, into) in [(&s, &t), (&t, &s)] {
                        let (Ok(from), Ok(into)) = (from.try_clone(), into.try_clone()) else {
                            continue;
                        };
                        let cut = cut.clone();
                        std::thread::spawn(move || pump(from, into, src, dst, &cut));
                    }
                }
            });
        }
        p
    }

    /// Drops every byte to or from instance `i` from now on (connections stay open: a
    /// blackhole, as a partition is, not a refusal).
    fn cut_off(&self, i: usize) {
        self.cut.store(i, Ordering::Relaxed);
    }

    /// Lets traffic through again; the connections that lost bytes are closed.
    fn heal(&self) {
        self.cut.store(NONE, Ordering::Relaxed);
        for s in self.socks.lock().unwrap().drain(..) {
            let _ = s.shutdown(Shutdown::Both);
        }
    }
}

impl Drop for Proxies {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        self.heal();
    }
}

fn pump(mut from: TcpStream, mut into: TcpStream, src: usize, dst: usize, cut: &AtomicUsize) {
    let mut buf = [0u8; 16 * 1024];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let c = cut.load(Ordering::Relaxed);
        if c != NONE && (c == src || c == dst) {
            continue;
        }
        if into.write_all(&buf[..n]).is_err() {
            break;
        }
    }
    let _ = into.shutdown(Shutdown::Write);
}

#[test]
fn an_active_instance_cut_off_from_both_replicas_stops_acknowledging_and_the_others_elect() {
    let listeners: Vec<TcpListener> = (0..3)
        .map(|_| TcpListener::bind("127.0.0.1:0").expect("a proxy port"))
        .collect();
    let proxy_addrs: Vec<SocketAddr> = listeners.iter().map(|l| l.local_addr().unwrap()).collect();
    let own: Vec<SocketAddr> = (0..3)
        .map(|i| SocketAddr::new(own_ip(i), free_port()))
        .collect();
    let proxies = Proxies::start(listeners, own.clone());
    let g = Group::at(|i| (proxy_addrs[i].to_string(), Some(own[i].to_string())));
    let a = g.wait_active();
    g.instances[a]
        .home
        .ok_in(&["mqsc", QM], Some("DEFINE QLOCAL(HA.Q) DEFPSIST(YES)\n"));
    g.wait_in_sync();
    // An application of the active instance puts in units of work through the cut.
    let stop = Arc::new(AtomicBool::new(false));
    let acked = Arc::new(AtomicU64::new(0));
    let t = {
        let (c, stop, acked) = (g.client(a), stop.clone(), acked.clone());
        std::thread::spawn(move || putter(c, 0, stop, acked))
    };
    wait_for(LONG, "units of work to be acknowledged", || {
        acked.load(Ordering::Relaxed) >= 50
    });
    proxies.cut_off(a);
    let cut = Instant::now();
    // The other two elect one of them.
    let mut b = None;
    wait_for(LONG, "another instance to become active", || {
        b = (0..3)
            .filter(|i| *i != a)
            .find(|i| Client::connect_local(&g.dir(*i), "ha-probe").is_ok());
        b.is_some()
    });
    let elected = cut.elapsed();
    // The cut-off one stops acknowledging: its application's commit fails, and it refuses
    // applications as a replica.
    let tried = t.join().unwrap();
    let stopped = cut.elapsed();
    wait_for(LONG, "the cut-off instance to refuse applications", || {
        Client::connect_local(&g.dir(a), "ha-probe")
            .is_err_and(|e| e.reason == ReasonCode::QMgrNotAvailable)
    });
    let acked = acked.load(Ordering::Relaxed);
    eprintln!(
        "partition: a new active instance after {:.2} s; the cut-off one's application stopped \
         after {:.2} s with {acked} acknowledged of {tried} tried",
        elected.as_secs_f64(),
        stopped.as_secs_f64()
    );
    // Every acknowledged unit is on the new active instance, once; the last, cut off, whole
    // or not at all.
    let b = b.unwrap_or(a);
    check_round(&mut g.client(b), 0, acked, tried);
    // Healed, the instance comes back as a replica and catches up.
    proxies.heal();
    stop.store(true, Ordering::Relaxed);
    g.wait_in_sync();
    let st = g.status(a);
    assert!(st.contains("ROLE(replica)"), "{st}");
}

//! An instance refuses what is not another instance of its group: a certificate from another
//! CA, one that names another instance, plain TCP, and frames before `Hello` larger than a
//! Hello may be. Refusals cost the attacker a closed connection and the group nothing.

mod common;
use common::no_state;
use sealmq_ha::{Group, Node};
use sealmq_storage::log::LogConfig;
use sealmq_testkit::free_port;
use std::io::{Read, Write};
use std::path::Path;
use std::time::{Duration, Instant};

fn ca(dir: &Path) {
    sealmq_testkit::pki::authority(dir, "CN=HA CA");
}

fn identity(dir: &Path, dn: &str, ca: &Path) {
    sealmq_testkit::pki::signed(&dir.join("keystore"), dn, ca);
}

fn start(dir: &Path, spec: &str, name: &str) -> Node {
    std::fs::create_dir_all(dir.join("ha")).unwrap();
    std::fs::write(dir.join("ha").join(sealmq_ha::FORM_FILE), b"").unwrap();
    let g = Group::parse(spec, name).unwrap();
    Node::start(dir, "QM", g, LogConfig::new(dir.join("log")), no_state()).unwrap()
}

/// A connection closed by the other side within a few seconds, having sent nothing useful.
fn closed(addr: &str, send: &[u8]) -> bool {
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(8))).unwrap();
    let _ = s.write_all(send);
    let mut buf = [0u8; 64];
    let t = Instant::now();
    loop {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => return t.elapsed() < Duration::from_secs(8),
            Ok(_) => {}
        }
    }
}

#[test]
fn instances_outside_the_group_and_strangers_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let (good, evil) = (tmp.path().join("ca"), tmp.path().join("evil-ca"));
    ca(&good);
    ca(&evil);
    let ports: Vec<u16> = (0..3).map(|_| free_port()).collect();
    let spec = format!(
        "a@127.0.0.1:{},b@127.0.0.1:{},c@127.0.0.1:{}",
        ports[0], ports[1], ports[2]
    );
    let dirs: Vec<_> = ["a", "b", "c"].iter().map(|n| tmp.path().join(n)).collect();
    identity(&dirs[0], &sealmq_ha::instance_dn("QM", "a"), &good);
    // b's certificate names instance c: it may not act as b.
    identity(&dirs[1], &sealmq_ha::instance_dn("QM", "c"), &good);
    // c's comes from another CA, though it names c.
    identity(&dirs[2], &sealmq_ha::instance_dn("QM", "c"), &evil);
    let nodes: Vec<Node> = ["a", "b", "c"]
        .iter()
        .zip(&dirs)
        .map(|(n, d)| start(d, &spec, n))
        .collect();
    // No two instances trust each other as group members: nobody is ever elected.
    sealmq_testkit::holds_for(
        Duration::from_secs(3),
        Duration::from_millis(50),
        "no instance active",
        || nodes.iter().all(|n| !n.is_active()),
    );
    for n in &nodes {
        assert!(!n.is_active(), "{:?}", n.status());
        assert_eq!(n.status().active, None);
    }
    // Strangers on the replication port: plain TCP junk, a huge length, an empty connection.
    let a = format!("127.0.0.1:{}", ports[0]);
    assert!(closed(&a, b"GET / HTTP/1.1\r\n\r\n"));
    assert!(closed(&a, &[0xff, 0xff, 0xff, 0x7f, 1, 2, 3]));
    assert!(closed(&a, b""));
    // The refusals are in the error log, with who was refused and why (none of it is told
    // to the caller).
    for n in nodes {
        n.shutdown();
    }
}

/// Sockets from eight other addresses that connect to every instance's replication port and
/// never speak, re-opened as soon as they are closed, until `stop`.
fn flood(ports: &[u16], stop: &std::sync::atomic::AtomicBool) -> u64 {
    use std::sync::atomic::Ordering;
    let mut held: Vec<(u16, usize, std::net::TcpStream)> = Vec::new();
    let mut opened = 0;
    while !stop.load(Ordering::Relaxed) {
        held.retain(|(_, _, s)| {
            let _ = s.set_nonblocking(true);
            !matches!((&*s).read(&mut [0u8; 1]), Ok(0))
                && !matches!((&*s).read(&mut [0u8; 1]), Err(e) if e.kind() != std::io::ErrorKind::WouldBlock)
        });
        for &p in ports {
            for i in 0..64 {
                if held.iter().any(|(hp, hi, _)| *hp == p && *hi == i) {
                    continue;
                }
                let src = [127, 0, 0, 2 + (i % 8) as u8];
                if let Some(s) = sealmq_testkit::connect_from(src, p) {
                    held.push((p, i, s));
                    opened += 1;
                }
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    opened
}

/// Issue 42: 16 strangers' sockets held every place of the replication ports, so that after
/// the active instance was lost the others could not reach each other to elect a new one for
/// 10-20 s (about 2 s without them). A stranger's socket now gives its place to a newcomer
/// until its Hello proves it an instance; failover takes its usual time under the flood.
#[test]
fn strangers_holding_the_replication_ports_do_not_delay_failover() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let tmp = tempfile::tempdir().unwrap();
    let good = tmp.path().join("ca");
    ca(&good);
    let ports: Vec<u16> = (0..3).map(|_| free_port()).collect();
    let spec = format!(
        "a@127.0.0.1:{},b@127.0.0.1:{},c@127.0.0.1:{}",
        ports[0], ports[1], ports[2]
    );
    let names = ["a", "b", "c"];
    let mut nodes: Vec<Option<Node>> = names
        .iter()
        .map(|n| {
            let d = tmp.path().join(n);
            identity(&d, &sealmq_ha::instance_dn("QM", n), &good);
            Some(start(&d, &spec, n))
        })
        .collect();
    let active_of = |nodes: &[Option<Node>]| {
        nodes
            .iter()
            .position(|n| n.as_ref().is_some_and(|n| n.is_active()))
    };
    let first = sealmq_testkit::wait_some(Duration::from_secs(30), "an active instance", || {
        active_of(&nodes)
    });
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        let f = s.spawn(|| flood(&ports, &stop));
        // Let the flood take every place it can.
        std::thread::sleep(Duration::from_secs(3));
        let t = Instant::now();
        nodes[first].take().unwrap().shutdown();
        let mut next = None;
        sealmq_testkit::poll(Duration::from_secs(30), Duration::from_millis(20), || {
            next = active_of(&nodes);
            next.is_some()
        });
        let took = t.elapsed();
        stop.store(true, Ordering::Relaxed);
        let opened = f.join().unwrap();
        eprintln!(
            "failover under a flood of the replication ports ({opened} sockets opened): {took:?}"
        );
        assert!(
            next.is_some() && took < Duration::from_secs(8),
            "failover took {took:?} ({next:?})"
        );
    });
    for n in nodes.into_iter().flatten() {
        n.shutdown();
    }
}

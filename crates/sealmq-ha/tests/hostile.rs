//! An instance refuses what is not another instance of its group: a certificate from another
//! CA, one that names another instance, plain TCP, and frames before `Hello` larger than a
//! Hello may be. Refusals cost the attacker a closed connection and the group nothing.

mod common;
use common::no_state;
use sealmq_ha::{Group, Node};
use sealmq_protect::dn::Dn;
use sealmq_protect::identity::IdentitySpec;
use sealmq_protect::{KeyKind, Keystore};
use sealmq_storage::log::LogConfig;
use sealmq_testkit::free_port;
use std::io::{Read, Write};
use std::path::Path;
use std::time::{Duration, Instant};

fn ca(dir: &Path) {
    let mut spec = IdentitySpec::new(Dn::parse("CN=HA CA").unwrap(), KeyKind::P256, 30);
    spec.authority = true;
    Keystore::init(dir, &spec, None).unwrap();
}

fn identity(dir: &Path, dn: &str, ca: &Path) {
    let spec = IdentitySpec::new(Dn::parse(dn).unwrap(), KeyKind::P256, 30);
    Keystore::init(&dir.join("keystore"), &spec, Some(ca)).unwrap();
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
    std::thread::sleep(Duration::from_secs(3));
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

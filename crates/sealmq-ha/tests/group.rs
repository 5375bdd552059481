//! Three instances in one process, each with its own directory and loopback port: the active
//! one's log batches reach every instance's log; when it goes, another becomes active with
//! every committed batch.

mod common;
use common::no_state;
use sealmq_ha::{Group, Node, Role};
use sealmq_storage::log::{Log, LogConfig, frame};
use sealmq_testkit::free_port;
use std::time::{Duration, Instant};

fn wait_for<T>(what: &str, f: impl FnMut() -> Option<T>) -> T {
    sealmq_testkit::wait_some(Duration::from_secs(30), what, f)
}

/// The (LSN, payload) of every record in the log at `dir`.
fn records(dir: &std::path::Path) -> Vec<(u64, Vec<u8>)> {
    let mut out = Vec::new();
    let (_log, _) = Log::open(LogConfig::new(dir), 0, |r| {
        out.push((r.lsn, r.payload.to_vec()));
        Ok(())
    })
    .unwrap();
    out
}

fn batch(first: u64, n: u64) -> Vec<u8> {
    let mut b = Vec::new();
    for l in first..first + n {
        frame(&mut b, l, 0, 7, format!("record {l}").as_bytes());
    }
    b
}

#[test]
fn batches_reach_every_instance_and_survive_the_active_ones_loss() {
    let tmp = tempfile::tempdir().unwrap();
    let spec: Vec<String> = ["a", "b", "c"]
        .iter()
        .map(|n| format!("{n}@127.0.0.1:{}", free_port()))
        .collect();
    let spec = spec.join(",");
    // One CA signs every instance's identity (subject CN=QM,OU=<instance>) and each trusts it.
    let ca = tmp.path().join("ca");
    sealmq_testkit::pki::authority(&ca, "CN=HA CA");
    let start = |name: &str| {
        let dir = tmp.path().join(name);
        std::fs::create_dir_all(&dir).unwrap();
        if !dir.join("keystore").exists() {
            let dn = sealmq_ha::instance_dn("QM", name);
            sealmq_testkit::pki::signed(&dir.join("keystore"), &dn, &ca);
        }
        // A new instance: it may form the group.
        std::fs::create_dir_all(dir.join("ha")).unwrap();
        std::fs::write(dir.join("ha").join(sealmq_ha::FORM_FILE), b"").unwrap();
        let g = Group::parse(&spec, name).unwrap();
        Node::start(&dir, "QM", g, LogConfig::new(dir.join("log")), no_state()).unwrap()
    };
    let mut nodes: Vec<Option<Node>> = ["a", "b", "c"].iter().map(|n| Some(start(n))).collect();
    // Every instance agrees who is active, and says so in its status (an early election may
    // change who: Raft allows it; agreement is what counts).
    let active = wait_for("every instance to agree on an active one", || {
        let a = nodes
            .iter()
            .position(|n| n.as_ref().is_some_and(|n| n.is_active()))?;
        let name = ["a", "b", "c"][a];
        nodes
            .iter()
            .all(|n| n.as_ref().unwrap().status().active.as_deref() == Some(name))
            .then_some(a)
    });
    let n = nodes[active].as_ref().unwrap();
    let until = Instant::now() + Duration::from_secs(30);
    assert!(n.wait_active(|| Instant::now() > until));
    n.release_log();
    n.set_serving();
    let rep = n.replicator();
    rep.0.replicate(1, 10, &batch(1, 10)).unwrap();
    rep.0.replicate(11, 15, &batch(11, 5)).unwrap();
    let st = n.status();
    assert_eq!(st.role, Role::Active);
    // The replicas apply what was committed into their own logs.
    let dirs: Vec<_> = ["a", "b", "c"]
        .iter()
        .map(|d| tmp.path().join(d).join("log"))
        .collect();
    wait_for("the replicas to apply", || {
        nodes
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != active)
            .all(|(_, n)| n.as_ref().unwrap().status().applied_index >= st.log_index)
            .then_some(())
    });
    // The old active instance goes; the others elect one of them with every batch.
    nodes[active].take().unwrap().shutdown();
    let next = wait_for("a new active instance", || {
        nodes
            .iter()
            .position(|n| n.as_ref().is_some_and(|n| n.is_active()))
    });
    assert_ne!(next, active);
    let n = nodes[next].as_ref().unwrap();
    let until = Instant::now() + Duration::from_secs(30);
    assert!(n.wait_active(|| Instant::now() > until));
    n.release_log();
    let got = records(&dirs[next]);
    assert_eq!(got.len(), 15);
    assert_eq!(got[14], (15, b"record 15".to_vec()));
    // It goes on from there; the last replica follows it, the lost one is missing from quorum.
    n.replicator().0.replicate(16, 16, &batch(16, 1)).unwrap();
    let st = n.status();
    assert_eq!(st.quorum.as_deref(), Some("2/3"), "{st:?}");
    // The remaining replica applies batch 16; the active one's engine (none here) writes its
    // own batches once they are committed.
    let last = (0..3).find(|i| *i != active && *i != next).unwrap();
    wait_for("the replica to apply batch 16", || {
        let s = nodes[last].as_ref().unwrap().status();
        (s.applied_index >= st.log_index).then_some(())
    });
    for n in nodes.into_iter().flatten() {
        n.shutdown();
    }
    assert_eq!(records(&dirs[last]).len(), 16);
    assert_eq!(records(&dirs[next]).len(), 15);
}

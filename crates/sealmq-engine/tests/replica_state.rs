//! A replica's state files (docs/ha.md, snapshots): a copy of the queue manager checkpointed
//! with its open units of work kept open, written out, and installed elsewhere, gives the same
//! queue manager; a damaged state file is refused and changes nothing.

use sealmq_engine::qm::{install_state, write_state};
use sealmq_engine::*;
use std::sync::Arc;

mod common;

use common::persistent;

/// The payloads on `q`, sorted: these tests compare which messages a copy holds.
fn bodies(qm: &Arc<QueueManager>, q: &str) -> Vec<Vec<u8>> {
    let mut out = common::bodies(qm, q);
    out.sort();
    out
}

/// A queue manager left as a crash leaves it, with one unit of work open (3 puts and a get).
fn crashed(cfg: QmConfig) {
    let qm = sealmq_engine::create(cfg).unwrap();
    qm.define(QueueDef::new("Q", QType::Local), false).unwrap();
    let c = Connection::connect(&qm, "t", "t").unwrap();
    for i in 0..20u32 {
        c.put1(
            "Q",
            &mut persistent(),
            &i.to_le_bytes(),
            PutOptions::default(),
        )
        .unwrap();
    }
    let uow = PutOptions {
        syncpoint: true,
        ..Default::default()
    };
    for i in 100..103u32 {
        c.put1("Q", &mut persistent(), &i.to_le_bytes(), uow)
            .unwrap();
    }
    let h = c.open("Q", OpenOptions::input()).unwrap();
    let got = GetOptions {
        syncpoint: true,
        ..Default::default()
    };
    c.get(&h, got).unwrap();
    std::mem::forget(c);
    qm.quiesce();
    qm.close_log_for_tests();
}

#[test]
fn a_state_installed_elsewhere_is_the_same_queue_manager_with_its_open_unit_of_work() {
    let d = tempfile::tempdir().unwrap();
    let a = QmConfig::new("QM1", d.path().join("a"));
    let b = QmConfig::new("QM1", d.path().join("b"));
    crashed(a.clone());
    let state = d.path().join("state");
    let lsn = write_state(a.clone(), &state).unwrap();
    assert!(lsn > 0);
    // The copy was checkpointed: a start replays only the open unit of work's records.
    std::fs::create_dir_all(&b.dir).unwrap();
    std::fs::write(b.dir.join("policy.key"), [7u8; 32]).unwrap();
    let key = std::fs::read(a.dir.join("policy.key")).unwrap();
    let lsn2 = write_state(a.clone(), &state).unwrap();
    assert_eq!(
        lsn2, lsn,
        "a second checkpoint of an unchanged copy stands at the same LSN"
    );
    assert_eq!(install_state(&b, &state).unwrap(), lsn);
    assert_eq!(std::fs::read(b.dir.join("policy.key")).unwrap(), key);
    let (qa, ra) = sealmq_engine::start(a).unwrap();
    let (qb, rb) = sealmq_engine::start(b).unwrap();
    // The unit of work open in the copy is backed out at a start, as on the original.
    assert_eq!((ra.backed_out, rb.backed_out), (1, 1));
    let (ma, mb) = (bodies(&qa, "Q"), bodies(&qb, "Q"));
    assert_eq!(ma.len(), 20, "the 20 committed, the got one back");
    assert_eq!(ma, mb);
}

#[test]
fn a_damaged_or_cut_state_file_is_refused_and_changes_nothing() {
    let d = tempfile::tempdir().unwrap();
    let a = QmConfig::new("QM1", d.path().join("a"));
    crashed(a.clone());
    let state = d.path().join("state");
    write_state(a, &state).unwrap();
    let good = std::fs::read(&state).unwrap();
    let c = QmConfig::new("QM1", d.path().join("c"));
    std::fs::create_dir_all(c.dir.join("log")).unwrap();
    std::fs::write(c.dir.join("log").join("keep"), b"x").unwrap();
    let bad = d.path().join("bad");
    for (what, bytes) in [
        ("flipped", {
            let mut b = good.clone();
            let at = b.len() / 2;
            b[at] ^= 0x55;
            b
        }),
        ("cut", good[..good.len() - 7].to_vec()),
        ("no END", good[..good.len() - 17].to_vec()),
        ("head only", good[..32].to_vec()),
        ("another magic", {
            let mut b = good.clone();
            b[0] = b'X';
            b
        }),
    ] {
        std::fs::write(&bad, bytes).unwrap();
        let e = install_state(&c, &bad).unwrap_err().to_string();
        assert!(e.contains("state file"), "{what}: {e}");
        assert!(c.dir.join("log").join("keep").exists(), "{what}: changed");
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
    #[test]
    fn any_bytes_after_a_head_are_refused_without_panic(
        body in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..400),
    ) {
        let d = tempfile::tempdir().unwrap();
        let mut bytes = b"SMQSTATE\x01\x00".to_vec();
        bytes.resize(32, 0);
        bytes.extend_from_slice(&body);
        let p = d.path().join("s");
        std::fs::write(&p, bytes).unwrap();
        let c = QmConfig::new("QM1", d.path().join("c"));
        proptest::prop_assert!(install_state(&c, &p).is_err());
    }
}

/// A queue manager with encryption at rest, segments of 64 KiB, its messages put and got
/// and then checkpointed; whether its first data key is still in its keyring.
fn first_key_kept(replicated: bool) -> bool {
    use sealmq_storage::dse::{Dse, MasterSource};
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("qm");
    std::fs::create_dir_all(&dir).unwrap();
    let key = d.path().join("mk");
    std::fs::write(
        &key,
        sealmq_storage::dse::new_master_hex().unwrap().as_str(),
    )
    .unwrap();
    std::fs::set_permissions(&key, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let src = MasterSource::File(key);
    Dse::create(&dir, &src).unwrap();
    let dse = Arc::new(Dse::open(&dir, &src).unwrap());
    let first = dse.current();
    if replicated {
        std::fs::write(dir.join("ha.toml"), "").unwrap();
    }
    let mut cfg = QmConfig::new("QM1", &dir);
    cfg.dse = Some(dse.clone());
    cfg.segment_bytes = 64 << 10;
    let qm = sealmq_engine::create(cfg).unwrap();
    qm.define(QueueDef::new("Q", QType::Local), false).unwrap();
    let c = Connection::connect(&qm, "t", "t").unwrap();
    for i in 0..2000u32 {
        c.put1(
            "Q",
            &mut persistent(),
            &[i as u8; 200],
            PutOptions::default(),
        )
        .unwrap();
    }
    let h = c.open("Q", OpenOptions::input()).unwrap();
    while c.get(&h, GetOptions::default()).is_ok() {}
    qm.checkpoint().unwrap();
    qm.checkpoint().unwrap();
    dse.has_key(first)
}

#[test]
fn an_instance_of_a_replicated_queue_manager_keeps_every_data_key() {
    // Its Raft log shares the keyring and holds entries sealed under the oldest keys.
    assert!(first_key_kept(true));
    assert!(
        !first_key_kept(false),
        "a single queue manager prunes its keyring"
    );
}

//! Restart in process: what was committed persistently comes back exactly once, nothing
//! else does; checkpoints bound the replay; a failed log write fails the call cleanly.

use sealmq_engine::objects::DefType;
use sealmq_engine::*;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

fn cfg(d: &tempfile::TempDir) -> QmConfig {
    QmConfig::new("QM1", d.path().join("QM1"))
}

fn restart(qm: Arc<QueueManager>, cfg: QmConfig) -> (Arc<QueueManager>, StartReport) {
    assert_eq!(
        Arc::strong_count(&qm),
        1,
        "every connection must be gone before a restart"
    );
    drop(qm);
    sealmq_engine::start(cfg).unwrap()
}

mod common;

use common::bodies;
use common::persistent;

#[test]
fn committed_persistent_messages_and_definitions_survive_nothing_else_does() {
    let d = tempfile::tempdir().unwrap();
    let qm = sealmq_engine::create(cfg(&d)).unwrap();
    let mut def = QueueDef::new("Q", QType::Local);
    def.descr = "kept".into();
    qm.define(def, false).unwrap();
    {
        let c = Connection::connect(&qm, "t", "t").unwrap();
        c.put1("Q", &mut persistent(), b"p1", PutOptions::default())
            .unwrap();
        c.put1("Q", &mut Md::default(), b"np", PutOptions::default())
            .unwrap();
        c.put1(
            "Q",
            &mut persistent(),
            b"p2",
            PutOptions {
                syncpoint: true,
                ..Default::default()
            },
        )
        .unwrap();
        c.commit().unwrap();
        c.put1(
            "Q",
            &mut persistent(),
            b"uncommitted",
            PutOptions {
                syncpoint: true,
                ..Default::default()
            },
        )
        .unwrap();
        let h = c.open("Q", OpenOptions::input()).unwrap();
        let g = c
            .get(
                &h,
                GetOptions {
                    syncpoint: true,
                    ..Default::default()
                },
            )
            .unwrap();
        assert_eq!(g.payload, b"p1");
        // Simulate a crash: the connection's unit of work is never ended. Leak it so its
        // drop does not back out, then drop the queue manager.
        c.close(&h).unwrap();
        std::mem::forget(c);
    }
    // The leaked connection holds an Arc: start a second instance from the same files after
    // closing the log through a fresh start is not possible, so end the log explicitly.
    let cfg2 = cfg(&d);
    drop_log_for_crash(&qm);
    let (qm2, report) = sealmq_engine::start(cfg2).unwrap();
    assert_eq!(report.backed_out, 1, "the open unit of work was backed out");
    assert_eq!(bodies(&qm2, "Q"), vec![b"p1".to_vec(), b"p2".to_vec()]);
    let c = Connection::connect(&qm2, "t", "t").unwrap();
    let h = c.open("Q", OpenOptions::input()).unwrap();
    let g = c.get(&h, GetOptions::default()).unwrap();
    assert_eq!(g.payload, b"p1");
    assert_eq!(
        g.md.backout_count, 1,
        "got in a unit of work that never ended: backout count +1"
    );
    assert_eq!(qm2.queue_def("Q").unwrap().descr, "kept");
}

/// Closes the log of a queue manager whose connections were leaked, as a crash would leave it
/// (pending records that were not waited for may or may not be on disk).
fn drop_log_for_crash(qm: &Arc<QueueManager>) {
    qm.quiesce();
    qm.close_log_for_tests();
}

#[test]
fn checkpoints_bound_the_replay_and_release_segments() {
    let d = tempfile::tempdir().unwrap();
    let mut c = cfg(&d);
    c.segment_bytes = 64 << 10;
    let qm = sealmq_engine::create(c.clone()).unwrap();
    qm.define(QueueDef::new("Q", QType::Local), false).unwrap();
    {
        let conn = Connection::connect(&qm, "t", "t").unwrap();
        for i in 0..1000u32 {
            conn.put1(
                "Q",
                &mut persistent(),
                &i.to_le_bytes(),
                PutOptions {
                    syncpoint: true,
                    ..Default::default()
                },
            )
            .unwrap();
            if i % 50 == 49 {
                conn.commit().unwrap();
            }
        }
        // A unit of work open across the checkpoint and committed after it.
        conn.put1(
            "Q",
            &mut persistent(),
            b"across",
            PutOptions {
                syncpoint: true,
                ..Default::default()
            },
        )
        .unwrap();
        qm.checkpoint().unwrap();
        conn.put1("Q", &mut persistent(), b"after", PutOptions::default())
            .unwrap();
        conn.commit().unwrap();
    }
    let (qm, report) = restart(qm, c.clone());
    assert!(report.checkpoint_lsn > 0);
    assert!(
        report.records_replayed < 10,
        "replayed {} records after the checkpoint",
        report.records_replayed
    );
    let all = bodies(&qm, "Q");
    assert_eq!(all.len(), 1002);
    assert!(all.contains(&b"across".to_vec()) && all.contains(&b"after".to_vec()));
    let segs = std::fs::read_dir(d.path().join("QM1/log")).unwrap().count();
    assert!(segs <= 2, "old segments released: {segs} left");
    // A clean shutdown checkpoints: the next start replays nothing.
    qm.shutdown().unwrap();
    let (qm, report) = restart(qm, c);
    assert_eq!(report.records_replayed, 0);
    assert_eq!(bodies(&qm, "Q").len(), 1002);
}

#[test]
fn a_failed_log_write_fails_the_call_and_changes_nothing() {
    let d = tempfile::tempdir().unwrap();
    let fail = Arc::new(AtomicBool::new(false));
    let mut c = cfg(&d);
    c.fail_writes = Some(fail.clone());
    let qm = sealmq_engine::create(c.clone()).unwrap();
    qm.define(QueueDef::new("Q", QType::Local), false).unwrap();
    {
        let conn = Connection::connect(&qm, "t", "t").unwrap();
        conn.put1("Q", &mut persistent(), b"before", PutOptions::default())
            .unwrap();
        // Appended to a unit of work, not yet written.
        conn.put1(
            "Q",
            &mut persistent(),
            b"lost too",
            PutOptions {
                syncpoint: true,
                ..Default::default()
            },
        )
        .unwrap();
        fail.store(true, Ordering::Relaxed);
        let e = conn
            .put1("Q", &mut persistent(), b"lost", PutOptions::default())
            .unwrap_err();
        assert_eq!(e.reason.code(), 2102, "{e}");
        let e = conn.commit().unwrap_err();
        assert_eq!(e.reason.code(), 2003, "{e}");
        let h = conn.open("Q", OpenOptions::input()).unwrap();
        let e = conn.get(&h, GetOptions::default()).unwrap_err();
        assert_eq!(e.reason.code(), 2102);
        assert_eq!(qm.depth("Q").unwrap(), 1, "the message is still there");
        // Out of space, the log spent its reserve: persistent puts wait until a checkpoint
        // finds space again.
        let e = conn
            .put1("Q", &mut persistent(), b"refused", PutOptions::default())
            .unwrap_err();
        assert!(e.detail.contains("disk is full"), "{e}");
        fail.store(false, Ordering::Relaxed);
        sealmq_testkit::wait_every(
            std::time::Duration::from_secs(20),
            std::time::Duration::from_millis(50),
            "puts to come back",
            || {
                conn.put1("Q", &mut persistent(), b"after", PutOptions::default())
                    .is_ok()
            },
        );
    }
    let (qm, _) = restart(qm, c);
    assert_eq!(
        bodies(&qm, "Q"),
        vec![b"before".to_vec(), b"after".to_vec()]
    );
}

#[test]
fn concurrent_checkpoints_do_not_collide() {
    let d = tempfile::tempdir().unwrap();
    let c = cfg(&d);
    let qm = sealmq_engine::create(c.clone()).unwrap();
    qm.define(QueueDef::new("Q", QType::Local), false).unwrap();
    Connection::connect(&qm, "t", "t")
        .unwrap()
        .put1("Q", &mut persistent(), b"x", PutOptions::default())
        .unwrap();
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let qm = qm.clone();
            std::thread::spawn(move || qm.checkpoint().map(|_| ()))
        })
        .collect();
    for t in threads {
        t.join().unwrap().unwrap();
    }
    let (qm, report) = restart(qm, c);
    assert!(report.checkpoint_lsn > 0);
    assert_eq!(bodies(&qm, "Q"), vec![b"x".to_vec()]);
}

#[test]
fn a_model_queue_survives_a_clean_restart_and_its_dynamic_queues_do_not() {
    let d = tempfile::tempdir().unwrap();
    let c = cfg(&d);
    let qm = sealmq_engine::create(c.clone()).unwrap();
    // DEFTYPE(TEMPDYN) is a model queue's default: the definition itself must stay.
    let model = QueueDef::new("APP.REPLY.MODEL", QType::Model);
    assert_eq!(model.def_type, DefType::TemporaryDynamic);
    qm.define(model, false).unwrap();
    let dynamic = {
        let conn = Connection::connect(&qm, "t", "t").unwrap();
        let h = conn
            .open_dynamic("APP.REPLY.MODEL", OpenOptions::input(), "REPLY.*")
            .unwrap();
        let name = h.resolved.clone();
        std::mem::forget(h); // left open across the stop
        name
    };
    qm.shutdown().unwrap();
    let (qm, _) = restart(qm, c);
    assert_eq!(
        qm.queue_def("APP.REPLY.MODEL").unwrap().qtype,
        QType::Model,
        "the model queue is still defined"
    );
    assert!(
        qm.queue_def(&dynamic).is_err(),
        "{dynamic} went with the stop"
    );
    // And it still makes dynamic queues.
    let conn = Connection::connect(&qm, "t", "t").unwrap();
    conn.open_dynamic("APP.REPLY.MODEL", OpenOptions::input(), "REPLY.*")
        .unwrap();
}

#[test]
fn a_start_after_a_crash_checkpoints_so_replays_do_not_grow() {
    let d = tempfile::tempdir().unwrap();
    let c = cfg(&d);
    let qm = sealmq_engine::create(c.clone()).unwrap();
    qm.define(QueueDef::new("Q", QType::Local), false).unwrap();
    let mut qm = qm;
    for round in 0..3u32 {
        let conn = Connection::connect(&qm, "t", "t").unwrap();
        for i in 0..300u32 {
            conn.put1(
                "Q",
                &mut persistent(),
                &(round * 1000 + i).to_le_bytes(),
                PutOptions::default(),
            )
            .unwrap();
        }
        drop(conn);
        drop_log_for_crash(&qm);
        let (next, report) = restart(qm, c.clone());
        // Each crash replays only what came after the previous start, never the history.
        assert!(
            report.records_replayed < 400,
            "round {round}: replayed {} records",
            report.records_replayed
        );
        qm = next;
    }
    assert_eq!(bodies(&qm, "Q").len(), 900);
    // Crashing straight after a recovery replays (almost) nothing.
    drop_log_for_crash(&qm);
    let (_qm, report) = restart(qm, c);
    assert!(report.records_replayed < 5, "{}", report.records_replayed);
}

/// Gets in two units of work of their own and a put in a third, joined into one (as an AMQP
/// transaction joins its deliveries): a crash before the commit backs all of it out, a commit
/// keeps all of it; a checkpoint between the joins changes neither.
#[test]
fn joined_units_of_work_recover_as_one() {
    let syncpoint = || PutOptions {
        syncpoint: true,
        ..Default::default()
    };
    let get_sp = GetOptions {
        syncpoint: true,
        ..Default::default()
    };
    for commit in [false, true] {
        let d = tempfile::tempdir().unwrap();
        let qm = sealmq_engine::create(cfg(&d)).unwrap();
        qm.define(QueueDef::new("IN", QType::Local), false).unwrap();
        qm.define(QueueDef::new("OUT", QType::Local), false)
            .unwrap();
        let c = Connection::connect(&qm, "t", "t").unwrap();
        for b in [b"m1", b"m2"] {
            c.put1("IN", &mut persistent(), b, PutOptions::default())
                .unwrap();
        }
        let h = c.open("IN", OpenOptions::input()).unwrap();
        let (a, b) = (c.uow_twin(), c.uow_twin());
        assert_eq!(a.get(&h, get_sp.clone()).unwrap().payload, b"m1");
        assert_eq!(b.get(&h, get_sp.clone()).unwrap().payload, b"m2");
        let t = c.uow_twin();
        t.put1("OUT", &mut persistent(), b"reply", syncpoint())
            .unwrap();
        t.join(&a).unwrap();
        qm.checkpoint().unwrap();
        t.join(&b).unwrap();
        assert!(!a.in_uow() && !b.in_uow() && t.in_uow());
        if commit {
            t.commit().unwrap();
        }
        for x in [a, b, t] {
            std::mem::forget(x);
        }
        c.close(&h).unwrap();
        std::mem::forget(c);
        drop_log_for_crash(&qm);
        let (qm2, report) = sealmq_engine::start(cfg(&d)).unwrap();
        if commit {
            assert_eq!(report.backed_out, 0);
            assert!(bodies(&qm2, "IN").is_empty(), "both gets committed");
            assert_eq!(bodies(&qm2, "OUT"), vec![b"reply".to_vec()]);
        } else {
            assert_eq!(report.backed_out, 1, "one unit of work, backed out");
            assert_eq!(bodies(&qm2, "IN"), vec![b"m1".to_vec(), b"m2".to_vec()]);
            assert!(bodies(&qm2, "OUT").is_empty());
            let c = Connection::connect(&qm2, "t", "t").unwrap();
            let h = c.open("IN", OpenOptions::input()).unwrap();
            let g = c.get(&h, GetOptions::default()).unwrap();
            assert_eq!(g.md.backout_count, 1);
        }
    }
}

/// In process: a joined unit of work backs out as one (both messages back, counts raised).
#[test]
fn a_joined_unit_of_work_backs_out_as_one() {
    let d = tempfile::tempdir().unwrap();
    let qm = sealmq_engine::create(cfg(&d)).unwrap();
    qm.define(QueueDef::new("IN", QType::Local), false).unwrap();
    let c = Connection::connect(&qm, "t", "t").unwrap();
    for b in [b"m1", b"m2"] {
        c.put1("IN", &mut Md::default(), b, PutOptions::default())
            .unwrap();
    }
    let h = c.open("IN", OpenOptions::input()).unwrap();
    let get_sp = GetOptions {
        syncpoint: true,
        ..Default::default()
    };
    let (a, t) = (c.uow_twin(), c.uow_twin());
    a.get(&h, get_sp.clone()).unwrap();
    t.get(&h, get_sp).unwrap();
    t.join(&a).unwrap();
    a.commit().unwrap(); // nothing left to commit there
    assert!(c.get(&h, GetOptions::default()).is_err(), "both still held");
    t.backout().unwrap();
    let mut counts = vec![];
    while let Ok(g) = c.get(&h, GetOptions::default()) {
        counts.push((g.payload, g.md.backout_count));
    }
    assert_eq!(counts, vec![(b"m1".to_vec(), 1), (b"m2".to_vec(), 1)]);
}

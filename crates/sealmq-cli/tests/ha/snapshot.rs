//! Snapshots (docs/ha.md): replicas checkpoint their copy of the queue manager and snapshot it,
//! the active instance takes up their snapshots, the Raft logs are purged behind them, and an instance whose disk was wiped is sent
//! a snapshot (its Raft log no longer reaches back) while messages flow — with encryption at
//! rest, each instance sealing its own files.

use super::*;

/// Error-log lines of instance `i` that contain `what`.
fn logged(g: &Group, i: usize, what: &str) -> usize {
    std::fs::read_to_string(g.dir(i).join("errors").join("SEALMQ01.LOG"))
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains(what))
        .count()
}

#[test]
fn replicas_snapshot_the_log_is_purged_and_a_wiped_instance_rejoins_by_snapshot_under_load() {
    let env = vec![
        ("SEALMQ_HA_MK".to_string(), "cd".repeat(32)),
        (
            "SEALMQ_HA_SNAPSHOT_BYTES".to_string(),
            (256 << 10).to_string(),
        ),
        ("SEALMQ_HA_SNAPSHOT_KEEP".to_string(), "4".to_string()),
    ];
    let g = Group::build(|_| (format!("127.0.0.1:{}", free_port()), None), env);
    let a = g.wait_active();
    g.instances[a].home.ok_in(
        &["mqsc", QM],
        Some("DEFINE QLOCAL(HA.Q) DEFPSIST(YES) MAXDEPTH(100000)\n"),
    );
    // A unit of work stays open across the replicas' snapshots: its records are before
    // their checkpoints, its commit after.
    let mut open_uow = g.client(a);
    let (h, _) = open_uow.open("HA.Q", OpenOptions::output()).unwrap();
    for n in 0..3u64 {
        let mut md = Md {
            persistence: Persistence::Persistent,
            ..Md::default()
        };
        open_uow
            .put(h, &mut md, &(1_000_000 + n).to_le_bytes(), true)
            .unwrap();
    }
    put_numbered(&mut g.client(a), BULK, 4000, 40);
    let replicas: Vec<usize> = (0..3).filter(|i| *i != a).collect();
    for &r in &replicas {
        wait_for(LONG, "the replicas' snapshots and purged Raft logs", || {
            logged(&g, r, "snapshot") > 0 && g.dir(r).join("ha").join("purged").exists()
        });
    }
    // The active instance takes up a replica's snapshot (it makes none of its own): its Raft
    // log is purged behind it too.
    wait_for(LONG, "the active instance's Raft log purged", || {
        logged(&g, a, "taken up from instance") > 0 && g.dir(a).join("ha").join("purged").exists()
    });
    assert!(
        g.dir(a).join("ha/snapshot/state").exists(),
        "the active instance keeps the snapshot it took up"
    );
    open_uow.commit().unwrap();
    drop(open_uow);
    g.wait_in_sync();
    // The replicas' logs were released by their checkpoints: their own copy is small.
    let r = replicas[0];
    let segments = std::fs::read_dir(g.dir(r).join("log")).unwrap().count();
    assert!(
        std::fs::read_dir(g.dir(r).join("checkpoint"))
            .unwrap()
            .count()
            >= 1,
        "a replica's checkpoint"
    );
    assert!(segments <= 2, "a replica kept {segments} log segments");
    // The other replica loses its disk and comes back while an application puts: the active
    // instance's log no longer reaches back, so it is sent the snapshot it took up.
    let b = r;
    let w = (0..3).find(|i| *i != b && *i != a).unwrap();
    g.instances[w].home.kill9(QM);
    for d in ["log", "ha", "checkpoint", "queues", "policy.key"] {
        let p = g.dir(w).join(d);
        let _ = std::fs::remove_dir_all(&p);
        let _ = std::fs::remove_file(&p);
    }
    let stop = Arc::new(AtomicBool::new(false));
    let acked = Arc::new(AtomicU64::new(0));
    let t = {
        let (c, stop, acked) = (g.client(a), stop.clone(), acked.clone());
        std::thread::spawn(move || putter(c, 0, stop, acked))
    };
    g.start(w);
    g.wait_in_sync();
    assert!(
        logged(&g, w, "installed") > 0,
        "the wiped instance was rebuilt without a snapshot"
    );
    // Snapshots made, sent and installed: nothing of a message is in clear on any disk.
    for i in 0..3 {
        assert!(
            g.dir(i).join("ha/snapshot/state").exists(),
            "instance {i}'s snapshot"
        );
        let clear = files_holding(&g.dir(i), MARKER);
        assert!(clear.is_empty(), "in clear on disk: {clear:?}");
    }
    stop.store(true, Ordering::Relaxed);
    let tried = t.join().unwrap();
    let acked = acked.load(Ordering::Relaxed);
    if tried != acked {
        for i in 0..3 {
            let log = std::fs::read_to_string(g.dir(i).join("errors").join("SEALMQ01.LOG"))
                .unwrap_or_default();
            let tail: Vec<&str> = log.lines().rev().take(30).collect();
            eprintln!("== instance {i}:\n{}", tail.join("\n"));
        }
    }
    assert_eq!(tried, acked, "the application's connection broke");
    // The active role moves to a replica whose Raft log was purged, then to the rebuilt
    // instance, which serves everything: the 4,000, the unit of work committed after the
    // snapshots, and what was put while it rejoined — each once.
    g.switch(a, b);
    g.wait_in_sync();
    g.switch(b, w);
    let seen = drain(&mut g.client(w));
    assert!(seen.values().all(|&k| k == 1), "duplicates");
    for n in 0..acked {
        assert!(
            seen.contains_key(&n),
            "{n} put while the instance rejoined is lost"
        );
    }
    for n in 0..3 {
        assert!(
            seen.contains_key(&(1_000_000 + n)),
            "the open unit of work is lost"
        );
    }
    for n in BULK..BULK + 4000 {
        assert!(seen.contains_key(&n), "{n} of the bulk is lost");
    }
    assert_eq!(seen.len() as u64, acked + 3 + 4000);
}

/// In every bulk message: no file of an instance may hold it in clear (encryption at rest).
const MARKER: &[u8] = b"SNAPSHOT-TEST-CLEAR-MARKER";

/// Files under `dir` whose bytes hold `what`.
fn files_holding(dir: &std::path::Path, what: &[u8]) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(files_holding(&p, what));
        } else if std::fs::read(&p).is_ok_and(|b| b.windows(what.len()).any(|w| w == what)) {
            out.push(p);
        }
    }
    out
}

/// Numbers of the bulk put before the snapshots.
const BULK: u64 = 2_000_000;

/// Puts `count` persistent messages of 1,000 bytes numbered from `from`, `unit` to a unit of
/// work.
fn put_numbered(c: &mut Client, from: u64, count: u64, unit: u64) {
    let (h, _) = c.open("HA.Q", OpenOptions::output()).unwrap();
    let mut body = vec![0u8; 1000];
    body[100..100 + MARKER.len()].copy_from_slice(MARKER);
    for n in from..from + count {
        body[..8].copy_from_slice(&n.to_le_bytes());
        let mut md = Md {
            persistence: Persistence::Persistent,
            ..Md::default()
        };
        c.put(h, &mut md, &body, true).unwrap();
        if (n - from + 1).is_multiple_of(unit) {
            c.commit().unwrap();
        }
    }
    c.commit().unwrap();
}

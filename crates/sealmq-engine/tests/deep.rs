//! Queues deeper than the message cache (issue 13): messages wait in queue files, memory
//! holds their index; gets, matches, browse cursors, expiry and restarts work the same;
//! damaged queue files are reported, never returned as messages.

use sealmq_engine::*;
use std::path::{Path, PathBuf};
use std::sync::Arc;

const CACHE: u64 = 64 << 10;

fn cfg(d: &Path) -> QmConfig {
    let mut c = QmConfig::new("QD", d.join("QD"));
    c.msg_cache_bytes = Some(CACHE);
    c.checkpoint_bytes = 256 << 10;
    c
}

fn queue_dir(d: &Path, q: &str) -> PathBuf {
    let hex: String = q.bytes().map(|b| format!("{b:02x}")).collect();
    d.join("QD").join("queues").join(hex)
}

fn files(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|r| r.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    v.retain(|p| p.extension().is_some_and(|x| x == ext));
    v.sort();
    v
}

fn id(n: u32, tag: u8) -> [u8; 24] {
    let mut i = [tag; 24];
    i[..4].copy_from_slice(&n.to_be_bytes());
    i
}

fn body(n: u32) -> Vec<u8> {
    let mut b = format!("message {n:06} ").into_bytes();
    b.resize(1000, b'.');
    b
}

/// Puts `n` messages (ids and correlation ids numbered) in batches under syncpoint.
fn fill(qm: &Arc<QueueManager>, q: &str, n: u32, persistent: bool) {
    let c = Connection::connect(qm, "t", "t").unwrap();
    let h = c.open(q, OpenOptions::output()).unwrap();
    for i in 0..n {
        let mut md = Md {
            persistence: Persistence::of(persistent),
            msg_id: id(i, 1),
            correl_id: id(i, 2),
            ..Md::default()
        };
        let pmo = PutOptions {
            syncpoint: true,
            ..Default::default()
        };
        c.put(&h, &mut md, &body(i), pmo).unwrap();
        if i % 200 == 199 {
            c.commit().unwrap();
        }
    }
    c.commit().unwrap();
}

fn define(qm: &Arc<QueueManager>, q: &str) {
    let mut d = QueueDef::new(q, QType::Local);
    d.max_depth = 1_000_000;
    qm.define(d, false).unwrap();
}

fn restart(qm: Arc<QueueManager>, c: QmConfig) -> Arc<QueueManager> {
    qm.shutdown().unwrap();
    drop(qm);
    sealmq_engine::start(c).unwrap().0
}

#[test]
fn a_queue_deeper_than_the_cache_waits_on_disk_and_comes_back_in_order() {
    let d = tempfile::tempdir().unwrap();
    let qm = sealmq_engine::create(cfg(d.path())).unwrap();
    define(&qm, "DEEP.Q");
    fill(&qm, "DEEP.Q", 3000, true);
    qm.checkpoint().unwrap();
    // 3 MB queued, the cache holds at most its size (plus what no checkpoint stored yet).
    assert!(
        qm.cached_bytes() <= CACHE + (64 << 10),
        "{} bytes cached",
        qm.cached_bytes()
    );
    let dir = queue_dir(d.path(), "DEEP.Q");
    assert!(
        !files(&dir, "qd").is_empty(),
        "data files in {}",
        dir.display()
    );
    let c = Connection::connect(&qm, "t", "t").unwrap();
    let h = c
        .open(
            "DEEP.Q",
            OpenOptions {
                input_shared: true,
                browse: true,
                ..Default::default()
            },
        )
        .unwrap();
    // Match by message id and by correlation id, deep in the queue.
    for (i, by_msg) in [(1777u32, true), (2999, false), (5, true)] {
        let matching = if by_msg {
            Match {
                msg_id: Some(id(i, 1)),
                correl_id: None,
                selector: None,
            }
        } else {
            Match {
                msg_id: None,
                correl_id: Some(id(i, 2)),
                selector: None,
            }
        };
        let g = c
            .get(
                &h,
                GetOptions {
                    matching,
                    ..Default::default()
                },
            )
            .unwrap();
        assert_eq!(g.payload, body(i));
    }
    // An id no message has: nothing, even though fingerprints are only 32 bits.
    let e = c
        .get(
            &h,
            GetOptions {
                matching: Match {
                    msg_id: Some(id(4000, 1)),
                    correl_id: None,
                    selector: None,
                },
                ..Default::default()
            },
        )
        .unwrap_err();
    assert_eq!(e.reason.code(), 2033);
    // A browse cursor walks across cached and stored messages in order.
    let mut opt = GetOptions {
        browse: Browse::First,
        ..Default::default()
    };
    let mut seen = Vec::new();
    while let Ok(g) = c.get(&h, opt.clone()) {
        seen.push(g.payload);
        opt.browse = Browse::Next;
    }
    let want: Vec<Vec<u8>> = (0..3000)
        .filter(|i| ![1777, 2999, 5].contains(i))
        .map(body)
        .collect();
    assert_eq!(seen.len(), want.len());
    assert!(seen == want, "browse order");
    drop(h);
    drop(c);
    // After a restart the index comes from the queue files: same messages, same order.
    let qm = restart(qm, cfg(d.path()));
    assert_eq!(qm.depth("DEEP.Q").unwrap(), 2997);
    assert!(qm.cached_bytes() <= CACHE, "nothing read back at start");
    let c = Connection::connect(&qm, "t", "t").unwrap();
    let h = c.open("DEEP.Q", OpenOptions::input()).unwrap();
    for want in want.iter() {
        assert_eq!(&c.get(&h, GetOptions::default()).unwrap().payload, want);
    }
    drop(h);
    drop(c);
    // Emptied, the next checkpoint returns the space.
    qm.checkpoint().unwrap();
    assert!(files(&dir, "qd").len() <= 1, "{:?}", files(&dir, "qd"));
    let s = qm.queue_status("DEEP.Q").unwrap();
    assert!(s.file_bytes < 64 << 10, "{} bytes of files", s.file_bytes);
}

#[test]
fn a_checkpoint_writes_what_changed_not_what_is_queued() {
    let d = tempfile::tempdir().unwrap();
    let qm = sealmq_engine::create(cfg(d.path())).unwrap();
    define(&qm, "DEEP.Q");
    let dir = queue_dir(d.path(), "DEEP.Q");
    let written = |qm: &Arc<QueueManager>| -> u64 {
        qm.checkpoint().unwrap();
        let ckp = d.path().join("QD").join("checkpoint");
        let newest = files(&ckp, "ckp").pop().unwrap();
        std::fs::metadata(newest).unwrap().len()
            + files(&dir, "qi")
                .iter()
                .map(|p| std::fs::metadata(p).unwrap().len())
                .sum::<u64>()
    };
    fill(&qm, "DEEP.Q", 100, true);
    let base_small = written(&qm);
    fill(&qm, "DEEP.Q", 10, true);
    let step_small = written(&qm) - base_small;
    fill(&qm, "DEEP.Q", 3000, true);
    let base_deep = written(&qm);
    fill(&qm, "DEEP.Q", 10, true);
    let step_deep = written(&qm) - base_deep;
    // Ten messages more cost the same index bytes at depth 110 and at depth 3110, and the
    // checkpoint file holds no message at all.
    assert!(
        step_deep <= step_small + 64,
        "{step_small} bytes at depth 100, {step_deep} at depth 3110"
    );
    let ckp = d.path().join("QD").join("checkpoint");
    let newest = files(&ckp, "ckp").pop().unwrap();
    assert!(std::fs::metadata(newest).unwrap().len() < 64 << 10);
}

#[test]
fn non_persistent_messages_spill_past_the_cache_and_are_gone_after_a_restart() {
    let d = tempfile::tempdir().unwrap();
    let qm = sealmq_engine::create(cfg(d.path())).unwrap();
    define(&qm, "NP.Q");
    fill(&qm, "NP.Q", 1500, false);
    assert!(qm.cached_bytes() <= CACHE + 2048, "{}", qm.cached_bytes());
    let dir = queue_dir(d.path(), "NP.Q");
    assert!(!files(&dir, "qn").is_empty(), "spill files");
    let c = Connection::connect(&qm, "t", "t").unwrap();
    let h = c.open("NP.Q", OpenOptions::input()).unwrap();
    for i in 0..700 {
        assert_eq!(c.get(&h, GetOptions::default()).unwrap().payload, body(i));
    }
    drop(h);
    drop(c);
    let qm = restart(qm, cfg(d.path()));
    assert_eq!(qm.depth("NP.Q").unwrap(), 0);
    assert!(files(&dir, "qn").is_empty(), "spill files removed at start");
    drop(qm);
}

#[test]
fn messages_only_on_disk_expire() {
    let d = tempfile::tempdir().unwrap();
    let qm = sealmq_engine::create(cfg(d.path())).unwrap();
    define(&qm, "EXP.Q");
    let c = Connection::connect(&qm, "t", "t").unwrap();
    let h = c.open("EXP.Q", OpenOptions::output()).unwrap();
    for i in 0..300u32 {
        let mut md = Md {
            persistence: Persistence::Persistent,
            expiry: if i < 200 { 2 } else { -1 },
            ..Md::default()
        };
        let pmo = PutOptions {
            syncpoint: true,
            ..Default::default()
        };
        c.put(&h, &mut md, &body(i), pmo).unwrap();
    }
    c.commit().unwrap();
    drop(h);
    qm.checkpoint().unwrap();
    let qm = restart(qm, cfg(d.path()));
    let c = Connection::connect(&qm, "t", "t").unwrap();
    let h = c.open("EXP.Q", OpenOptions::input()).unwrap();
    // Messages put with expiry 2 (0.2 s) are past it once 0.2 s went by since their put.
    let put_at = std::time::Instant::now();
    while put_at.elapsed() < std::time::Duration::from_millis(250) {
        std::thread::yield_now();
    }
    assert_eq!(
        qm.depth("EXP.Q").unwrap(),
        300,
        "all on the queue until met"
    );
    // A get discards the 200 expired ones (only on disk) and returns the first that lives.
    let g = c.get(&h, GetOptions::default()).unwrap();
    assert_eq!(g.payload, body(200));
    assert_eq!(qm.depth("EXP.Q").unwrap(), 99);
    drop(h);
    drop(c);
    // Their removal is durable: they do not come back.
    let qm = restart(qm, cfg(d.path()));
    assert_eq!(qm.depth("EXP.Q").unwrap(), 99);
}

#[test]
fn a_damaged_record_is_set_aside_with_file_and_offset_and_the_queue_served() {
    let d = tempfile::tempdir().unwrap();
    let qm = sealmq_engine::create(cfg(d.path())).unwrap();
    define(&qm, "BAD.Q");
    fill(&qm, "BAD.Q", 400, true);
    let qm = restart(qm, cfg(d.path()));
    qm.shutdown().unwrap();
    drop(qm);
    // Flip a byte inside the first message record of the first data file.
    let dir = queue_dir(d.path(), "BAD.Q");
    let data = files(&dir, "qd").remove(0);
    let mut bytes = std::fs::read(&data).unwrap();
    bytes[32 + 21 + 100] ^= 0x55;
    std::fs::write(&data, &bytes).unwrap();
    let qm = sealmq_engine::start(cfg(d.path())).unwrap().0;
    let c = Connection::connect(&qm, "t", "t").unwrap();
    let h = c.open("BAD.Q", OpenOptions::input()).unwrap();
    // The get meets the damaged first message, sets it aside and returns the second.
    let g = c.get(&h, GetOptions::default()).unwrap();
    assert_eq!(g.payload, body(1));
    assert_eq!(qm.depth("BAD.Q").unwrap(), 398);
    let note = std::fs::read_to_string(d.path().join("QD/damaged/damaged.log")).unwrap();
    assert!(
        note.contains(&format!("file={}", data.display())) && note.contains("offset=32 "),
        "{note}"
    );
    let s = qm.queue_status("BAD.Q").unwrap();
    assert_eq!(s.uncommitted, 0, "no reservation left behind");
    // The start's pass finds nothing more; a restart does not bring the damaged one back.
    assert_eq!(qm.verify_queue_files(), (398, 0));
    drop(h);
    drop(c);
    let qm = restart(qm, cfg(d.path()));
    assert_eq!(qm.depth("BAD.Q").unwrap(), 398);
}

/// A queue manager of the previous release kept its messages in the checkpoint (frames
/// version 1, MESSAGE frames, no queue files): its first start converts them, once.
#[test]
fn a_checkpoint_of_the_previous_format_is_converted_at_first_start() {
    use sealmq_engine::records::Frame;
    use sealmq_storage::checkpoint::{CheckpointWriter, latest};
    let d = tempfile::tempdir().unwrap();
    let qm = sealmq_engine::create(cfg(d.path())).unwrap();
    define(&qm, "OLD.Q");
    qm.shutdown().unwrap();
    drop(qm);
    // Rewrite the newest checkpoint as the previous release wrote it, with 50 messages.
    let ckp = d.path().join("QD").join("checkpoint");
    let (lsn, mut r) = latest(&ckp).unwrap().unwrap();
    let mut frames = Vec::new();
    while let Some(b) = r.next_frame().unwrap() {
        match Frame::decode(&b).unwrap() {
            Frame::Format(_) => {}
            Frame::Meta {
                next_tx,
                replay_from,
                ..
            } => frames.push(Frame::Meta {
                next_seq: 2_000_000,
                next_tx,
                replay_from,
            }),
            f => frames.push(f),
        }
    }
    for i in 0..50u32 {
        frames.push(Frame::Message {
            queue: "OLD.Q".into(),
            seq: 1_000_000 + u64::from(i),
            backout_count: i % 3,
            msg: Message {
                md: Md {
                    persistence: Persistence::Persistent,
                    ..Md::default()
                },
                payload: body(i),
                expires_at_ms: None,
            },
        });
    }
    for p in files(&ckp, "ckp") {
        std::fs::remove_file(p).unwrap();
    }
    let _ = std::fs::remove_dir_all(d.path().join("QD").join("queues"));
    let mut w = CheckpointWriter::create(&ckp, lsn).unwrap();
    for f in &frames {
        w.frame(&f.encode()).unwrap();
    }
    w.finish().unwrap();
    // First start: converted into queue files; then they come back from there.
    let (qm, report) = sealmq_engine::start(cfg(d.path())).unwrap();
    assert_eq!(report.messages, 50);
    assert!(!files(&queue_dir(d.path(), "OLD.Q"), "qd").is_empty());
    let qm = restart(qm, cfg(d.path()));
    let c = Connection::connect(&qm, "t", "t").unwrap();
    let h = c.open("OLD.Q", OpenOptions::input()).unwrap();
    for i in 0..50u32 {
        let g = c.get(&h, GetOptions::default()).unwrap();
        assert_eq!(g.payload, body(i));
        assert_eq!(g.md.backout_count, i % 3);
    }
}

/// A temporary dynamic queue whose messages spilled: closing it gives the cache its room back
/// and removes its files.
#[test]
fn a_temporary_dynamic_queue_takes_its_spilled_messages_with_it() {
    let d = tempfile::tempdir().unwrap();
    let qm = sealmq_engine::create(cfg(d.path())).unwrap();
    let c = Connection::connect(&qm, "t", "t").unwrap();
    let h = c
        .open(
            "SYSTEM.DEFAULT.MODEL.QUEUE",
            OpenOptions {
                input_shared: true,
                output: true,
                ..Default::default()
            },
        )
        .unwrap();
    for i in 0..400 {
        let mut md = Md::default();
        c.put(&h, &mut md, &body(i), PutOptions::default()).unwrap();
    }
    let dir = queue_dir(d.path(), &h.resolved);
    assert!(!files(&dir, "qn").is_empty(), "spilled");
    assert!(qm.cached_bytes() > 0);
    c.close(&h).unwrap();
    assert_eq!(qm.cached_bytes(), 0, "the cache counts nothing of it");
    assert!(!dir.exists(), "{} removed", dir.display());
}

fn data_bytes(dir: &Path) -> u64 {
    files(dir, "qd")
        .iter()
        .map(|p| std::fs::metadata(p).map_or(0, |m| m.len()))
        .sum()
}

fn get_by_id(c: &Connection, h: &Hobj, i: u32) -> Vec<u8> {
    c.get(
        h,
        GetOptions {
            matching: Match {
                msg_id: Some(id(i, 1)),
                correl_id: None,
                selector: None,
            },
            ..Default::default()
        },
    )
    .unwrap()
    .payload
}

/// Files of which most messages were got (here by message id, one in ten left) are compacted
/// after a checkpoint: the disk space comes back, the messages left are the same, in order,
/// also after a restart; gets going on meanwhile see each message once.
#[test]
fn sparse_data_files_are_compacted_while_gets_go_on() {
    let d = tempfile::tempdir().unwrap();
    let mut c0 = cfg(d.path());
    c0.queue_file_bytes = Some(256 << 10);
    let qm = sealmq_engine::create(c0.clone()).unwrap();
    define(&qm, "SPARSE.Q");
    fill(&qm, "SPARSE.Q", 3000, true);
    qm.checkpoint().unwrap();
    let dir = queue_dir(d.path(), "SPARSE.Q");
    let before = data_bytes(&dir);
    let nfiles = files(&dir, "qd").len();
    assert!(nfiles >= 10, "{nfiles} data files");
    let c = Connection::connect(&qm, "t", "t").unwrap();
    let h = c.open("SPARSE.Q", OpenOptions::input()).unwrap();
    for i in (0..3000).filter(|i| i % 10 != 3) {
        assert_eq!(get_by_id(&c, &h, i), body(i));
    }
    // The removals are recorded; no file is empty, so only compaction returns space.
    qm.checkpoint().unwrap();
    qm.checkpoint().unwrap();
    let after = data_bytes(&dir);
    assert!(
        after * 3 < before,
        "data files {before} bytes before, {after} after compaction"
    );
    let left: Vec<u32> = (0..3000).filter(|i| i % 10 == 3).collect();
    drop(h);
    drop(c);
    let qm = restart(qm, c0.clone());
    assert_eq!(qm.depth("SPARSE.Q").unwrap(), left.len());
    // Half are got now, by id, the rest by a getter that runs while checkpoints compact.
    let c = Connection::connect(&qm, "t", "t").unwrap();
    let h = c.open("SPARSE.Q", OpenOptions::input()).unwrap();
    for i in left.iter().filter(|i| *i % 20 == 3) {
        assert_eq!(get_by_id(&c, &h, *i), body(*i));
    }
    let rest: Vec<u32> = left.iter().copied().filter(|i| i % 20 != 3).collect();
    let getter = {
        let qm = qm.clone();
        std::thread::spawn(move || {
            let c = Connection::connect(&qm, "t", "t").unwrap();
            let h = c.open("SPARSE.Q", OpenOptions::input()).unwrap();
            let mut got = Vec::new();
            while let Ok(g) = c.get(&h, GetOptions::default()) {
                got.push(g.payload);
            }
            got
        })
    };
    for _ in 0..5 {
        qm.checkpoint().unwrap();
    }
    let got = getter.join().unwrap();
    let want: Vec<Vec<u8>> = rest.iter().map(|i| body(*i)).collect();
    assert!(
        got == want,
        "{} got, {} wanted, in order",
        got.len(),
        want.len()
    );
    drop(h);
    drop(c);
    qm.checkpoint().unwrap();
    assert!(files(&dir, "qd").len() <= 1, "{:?}", files(&dir, "qd"));
}

/// The checkpoint file records where each queue's index ended: damage to the last batch a
/// completed checkpoint wrote stops the start with file and offset instead of being cut as a
/// crash's torn tail (which would lose the messages it names: the log before it is gone).
#[test]
fn damage_to_the_last_durable_index_batch_stops_the_start() {
    let d = tempfile::tempdir().unwrap();
    let qm = sealmq_engine::create(cfg(d.path())).unwrap();
    define(&qm, "IDX.Q");
    fill(&qm, "IDX.Q", 400, true);
    qm.checkpoint().unwrap();
    qm.close_log_for_tests();
    drop(qm);
    let dir = queue_dir(d.path(), "IDX.Q");
    let index = files(&dir, "qi").pop().unwrap();
    let mut b = std::fs::read(&index).unwrap();
    let last = b.len() - 1;
    b[last] ^= 0x01;
    std::fs::write(&index, &b).unwrap();
    let e = sealmq_engine::start(cfg(d.path()))
        .err()
        .expect("start refused");
    let text = e.to_string();
    assert!(text.contains(&index.display().to_string()), "{text}");
    // Repaired, it starts with every message.
    b[last] ^= 0x01;
    std::fs::write(&index, &b).unwrap();
    let (qm, _) = sealmq_engine::start(cfg(d.path())).unwrap();
    assert_eq!(qm.depth("IDX.Q").unwrap(), 400);
}

use super::*;
use proptest::prelude::*;
use std::collections::BTreeMap;

fn placed(seq: u64, loc: Loc) -> Placed {
    Placed {
        seq,
        loc,
        priority: (seq % 10) as u8,
        expires_at_ms: i64::MIN,
        fp_msg: seq as u32,
        fp_correl: 0,
        backout: 0,
    }
}

fn cfg(file_bytes: u64) -> StoreConfig {
    StoreConfig {
        file_bytes,
        ..StoreConfig::new(None)
    }
}

fn dse(dir: &Path) -> Arc<Dse> {
    use crate::dse::MasterSource;
    let key = dir.join("master.key");
    let hex = crate::dse::new_master_hex().unwrap();
    crate::create_private_file(&key)
        .and_then(|mut f| std::io::Write::write_all(&mut f, hex.as_bytes()))
        .unwrap();
    let src = MasterSource::File(key);
    Dse::create(dir, &src).unwrap();
    Arc::new(Dse::open(dir, &src).unwrap())
}

/// Stores `n` messages starting at `from`, committed.
fn store_some(s: &QueueStore, from: u64, n: u64, body: &[u8]) -> Vec<Placed> {
    let mut ops = Vec::new();
    let mut v = Vec::new();
    for seq in from..from + n {
        let loc = s.append(seq, true, body).unwrap();
        let p = placed(seq, loc);
        ops.push(IndexOp::Add(p));
        v.push(p);
    }
    s.commit(1, &ops).unwrap();
    s.release().unwrap();
    v
}

#[test]
fn stored_messages_come_back_after_reopen_and_emptied_files_go() {
    let d = tempfile::tempdir().unwrap();
    let dir = queue_dir(d.path(), "APP/ORDERS%1");
    let (s, none) = QueueStore::open(&dir, cfg(4096), u64::MAX).unwrap();
    assert!(none.is_empty());
    let v = store_some(&s, 1, 40, &[7u8; 300]);
    assert!(
        file::list(&dir, Kind::Data).unwrap().len() > 3,
        "files roll"
    );
    assert_eq!(s.read(5, v[4].loc).unwrap(), vec![7u8; 300]);
    // The wrong message at a place is refused, never returned.
    assert!(s.read(6, v[4].loc).is_err());
    // Get the first 30 (and change one backout count).
    let mut ops: Vec<IndexOp> = v[..30]
        .iter()
        .map(|p| IndexOp::Del {
            seq: p.seq,
            loc: p.loc,
        })
        .collect();
    ops.push(IndexOp::Backout { seq: 35, count: 2 });
    s.commit(1, &ops).unwrap();
    s.release().unwrap();
    let files_now = file::list(&dir, Kind::Data).unwrap().len();
    drop(s);
    let (s, back) = QueueStore::open(&dir, cfg(4096), u64::MAX).unwrap();
    assert_eq!(back.len(), 10);
    assert_eq!(back[0].seq, 31);
    assert_eq!(back.iter().find(|p| p.seq == 35).unwrap().backout, 2);
    for p in &back {
        assert_eq!(s.read(p.seq, p.loc).unwrap(), vec![7u8; 300]);
    }
    assert!(files_now <= 4, "{files_now} data files hold 10 messages");
    // A rewrite keeps the same set in one BASE record.
    s.rewrite_index(2, &back).unwrap();
    s.release().unwrap();
    assert_eq!(file::list(&dir, Kind::Index).unwrap().len(), 1);
    drop(s);
    let (_, again) = QueueStore::open(&dir, cfg(4096), u64::MAX).unwrap();
    assert_eq!(again, back);
}

#[test]
fn a_torn_index_tail_is_cut_and_damage_elsewhere_is_reported_with_file_and_offset() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("q");
    let (s, _) = QueueStore::open(&dir, cfg(1 << 20), u64::MAX).unwrap();
    let v = store_some(&s, 1, 3, b"first");
    store_some(&s, 4, 3, b"second");
    drop(s);
    let index = dir.join(Kind::Index.name(1));
    let len = std::fs::metadata(&index).unwrap().len();
    // A crash in the middle of the last batch: that checkpoint never finished.
    let f = OpenOptions::new().write(true).open(&index).unwrap();
    f.set_len(len - 5).unwrap();
    let (s, back) = QueueStore::open(&dir, cfg(1 << 20), u64::MAX).unwrap();
    assert_eq!(back, v, "the torn batch is cut, the whole one stays");
    store_some(&s, 7, 1, b"third");
    drop(s);
    // A flipped byte in the first batch, with a valid one after it: damage, not a tear.
    let mut b = std::fs::read(&index).unwrap();
    b[HEADER as usize + 30] ^= 0xff;
    std::fs::write(&index, &b).unwrap();
    let e = QueueStore::open(&dir, cfg(1 << 20), u64::MAX)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("I00000001.qi") && e.contains("offset 32"), "{e}");
}

#[test]
fn a_damaged_message_record_is_reported_never_returned() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("q");
    let (s, _) = QueueStore::open(&dir, cfg(1 << 20), u64::MAX).unwrap();
    let v = store_some(&s, 1, 2, b"payload-bytes");
    let data = dir.join(Kind::Data.name(v[1].loc.file));
    let mut b = std::fs::read(&data).unwrap();
    let at = v[1].loc.offset as usize + file::REC_HEADER + 2;
    b[at] ^= 0x20;
    std::fs::write(&data, &b).unwrap();
    let e = s.read(2, v[1].loc).unwrap_err().to_string();
    assert!(e.contains("D00000001.qd"), "{e}");
    assert!(e.contains(&format!("offset {}", v[1].loc.offset)), "{e}");
    assert_eq!(s.read(1, v[0].loc).unwrap(), b"payload-bytes");
}

#[test]
fn encrypted_files_hold_no_payload_in_clear_and_moved_records_do_not_open() {
    let d = tempfile::tempdir().unwrap();
    let k = dse(d.path());
    let dir = d.path().join("q");
    let c = StoreConfig::new(Some(k.clone()));
    let (s, _) = QueueStore::open(&dir, c.clone(), u64::MAX).unwrap();
    let marker = b"MARKER-PAYROLL-0042";
    let v = store_some(&s, 1, 2, marker);
    let spilled = s.append(9, false, marker).unwrap();
    assert_eq!(s.read(9, spilled).unwrap(), marker);
    for e in std::fs::read_dir(&dir).unwrap().flatten() {
        let b = std::fs::read(e.path()).unwrap();
        assert!(
            !b.windows(marker.len()).any(|w| w == marker),
            "{} holds the payload in clear",
            e.path().display()
        );
    }
    assert!(s.min_key_id().is_some());
    // The second record copied over the first: whole, checksummed, and refused.
    let data = dir.join(Kind::Data.name(v[0].loc.file));
    let mut b = std::fs::read(&data).unwrap();
    let (a0, a1) = (v[0].loc.offset as usize, v[1].loc.offset as usize);
    let second = b[a1..a1 + v[1].loc.len as usize].to_vec();
    b[a0..a0 + second.len()].copy_from_slice(&second);
    std::fs::write(&data, &b).unwrap();
    let e = s.read(2, v[0].loc).unwrap_err().to_string();
    assert!(e.contains("does not open"), "{e}");
    drop(s);
    // Spill files do not outlive the start.
    let (s, back) = QueueStore::open(&dir, c, u64::MAX).unwrap();
    assert_eq!(back.len(), 2);
    assert!(file::list(&dir, Kind::Spill).unwrap().is_empty());
    drop(s);
    // Without the key, nothing opens.
    let e = QueueStore::open(&dir, cfg(1 << 20), u64::MAX)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("sealed with data key"), "{e}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Any sequence of stores, gets and backouts, reopened, gives the model's set.
    #[test]
    fn reopen_matches_the_model(steps in proptest::collection::vec((0u8..3, 1u64..40), 1..60)) {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("q");
        let (s, _) = QueueStore::open(&dir, cfg(2048), u64::MAX).unwrap();
        let mut model: BTreeMap<u64, Placed> = BTreeMap::new();
        let mut next = 1u64;
        for (what, n) in steps {
            let mut ops = Vec::new();
            match what {
                0 => {
                    for _ in 0..n % 5 + 1 {
                        let loc = s.append(next, true, &next.to_le_bytes()).unwrap();
                        let p = placed(next, loc);
                        model.insert(next, p);
                        ops.push(IndexOp::Add(p));
                        next += 1;
                    }
                }
                1 => {
                    let gone: Vec<Placed> = model.values().take(n as usize % 7).copied().collect();
                    for p in gone {
                        model.remove(&p.seq);
                        ops.push(IndexOp::Del { seq: p.seq, loc: p.loc });
                    }
                }
                _ => {
                    if let Some(p) = model.values_mut().nth(n as usize % 3) {
                        p.backout += 1;
                        ops.push(IndexOp::Backout { seq: p.seq, count: p.backout });
                    }
                }
            }
            s.commit(1, &ops).unwrap();
    s.release().unwrap();
        }
        drop(s);
        let (s, back) = QueueStore::open(&dir, cfg(2048), u64::MAX).unwrap();
        prop_assert_eq!(back, model.values().copied().collect::<Vec<_>>());
        for p in model.values() {
            prop_assert_eq!(s.read(p.seq, p.loc).unwrap(), p.seq.to_le_bytes().to_vec());
        }
    }
}

/// What a checkpoint that never completed wrote is ignored at the next start: its index
/// batches are cut, its index rewrite is void, and no file its removals emptied is gone.
#[test]
fn an_incomplete_checkpoint_is_undone_at_start() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("q");
    let (s, _) = QueueStore::open(&dir, cfg(1024), 0).unwrap();
    // Checkpoint 10 completes with 12 messages.
    let mut ops = Vec::new();
    let mut v = Vec::new();
    for seq in 1..=12 {
        let p = placed(seq, s.append(seq, true, &[3u8; 200]).unwrap());
        ops.push(IndexOp::Add(p));
        v.push(p);
    }
    s.commit(10, &ops).unwrap();
    s.release().unwrap();
    // Checkpoint 20 removes them all and rewrites the index, and never completes.
    let dels: Vec<IndexOp> = v
        .iter()
        .map(|p| IndexOp::Del {
            seq: p.seq,
            loc: p.loc,
        })
        .collect();
    s.commit(20, &dels).unwrap();
    s.rewrite_index(20, &[]).unwrap();
    drop(s);
    let (s, back) = QueueStore::open(&dir, cfg(1024), 10).unwrap();
    assert_eq!(back, v, "the state of checkpoint 10");
    for p in &back {
        assert_eq!(s.read(p.seq, p.loc).unwrap(), vec![3u8; 200]);
    }
    // Completed this time: removed, and the emptied files go at release.
    s.commit(20, &dels).unwrap();
    s.release().unwrap();
    drop(s);
    let (_, back) = QueueStore::open(&dir, cfg(1024), 20).unwrap();
    assert!(back.is_empty());
    assert!(file::list(&dir, Kind::Data).unwrap().len() <= 1);
}

/// A data file whose messages were mostly got is compacted: its live records move to the file
/// being written, the index names their new places, the old file goes; copies that were never
/// recorded (a crash before `relocated`) leave the old places valid.
#[test]
fn sparse_data_files_are_compacted_and_a_crash_midway_keeps_the_old_places() {
    let d = tempfile::tempdir().unwrap();
    let dir = queue_dir(d.path(), "SPARSE");
    let (s, _) = QueueStore::open(&dir, cfg(8192), u64::MAX).unwrap();
    let v = store_some(&s, 1, 60, &[3u8; 500]);
    let first = v[0].loc.file;
    let in_first: Vec<Placed> = v.iter().filter(|p| p.loc.file == first).copied().collect();
    assert!(in_first.len() > 8, "{} in the first file", in_first.len());
    assert!(s.sparse_files().is_empty(), "nothing got yet");
    // Get all but two messages of the first file.
    let keep = [in_first[1], in_first[in_first.len() - 2]];
    let dels: Vec<IndexOp> = in_first
        .iter()
        .filter(|p| !keep.contains(p))
        .map(|p| IndexOp::Del {
            seq: p.seq,
            loc: p.loc,
        })
        .collect();
    s.commit(2, &dels).unwrap();
    s.release().unwrap();
    let sparse: Vec<u32> = s.sparse_files().iter().map(|(n, _)| *n).collect();
    assert_eq!(sparse, vec![first]);
    let recs = s.records(first).unwrap();
    assert_eq!(recs.len(), in_first.len(), "every record, got or not");
    let wanted: Vec<(u64, Loc)> = recs
        .into_iter()
        .filter(|(seq, _)| keep.iter().any(|p| p.seq == *seq))
        .collect();
    assert_eq!(wanted.len(), 2);
    let new = s.copy(&wanted).unwrap();
    assert!(new.iter().all(|l| l.file != first));

    // A crash now: the index still names the old places, which still hold the messages.
    drop(s);
    let (s, back) = QueueStore::open(&dir, cfg(8192), 2).unwrap();
    let p = back.iter().find(|p| p.seq == keep[0].seq).unwrap();
    assert_eq!(p.loc, keep[0].loc);
    assert_eq!(s.read(p.seq, p.loc).unwrap(), vec![3u8; 500]);

    // Again, to the end: the moves recorded, the old file gone, the new places read.
    let new = s.copy(&wanted).unwrap();
    let moves: Vec<(Placed, Loc)> = keep
        .iter()
        .zip(&new)
        .map(|(p, l)| (placed(p.seq, *l), p.loc))
        .collect();
    s.relocated(2, &moves).unwrap();
    s.release().unwrap();
    assert!(
        !dir.join(Kind::Data.name(first)).exists(),
        "the compacted file is removed"
    );
    assert!(s.sparse_files().is_empty());
    drop(s);
    let (s, back) = QueueStore::open(&dir, cfg(8192), 2).unwrap();
    assert_eq!(back.len(), 60 - in_first.len() + 2);
    for (p, l) in keep.iter().zip(&new) {
        let b = back.iter().find(|b| b.seq == p.seq).unwrap();
        assert_eq!(b.loc, *l);
        assert_eq!(s.read(b.seq, b.loc).unwrap(), vec![3u8; 500]);
    }
}

/// Damage to the last index batch a completed checkpoint made durable looks like a torn tail;
/// knowing where the index ended at that checkpoint, it is reported (file and offset), never
/// cut with the messages it names. A tear after that point is still cut.
#[test]
fn damage_before_the_checkpoints_index_end_is_reported_not_cut() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("q");
    let (s, _) = QueueStore::open(&dir, cfg(1 << 20), u64::MAX).unwrap();
    let v = store_some(&s, 1, 3, b"first");
    let mid = s.index_end();
    store_some(&s, 4, 3, b"second");
    let end = s.index_end();
    assert_eq!(end.file, 1);
    drop(s);
    let index = dir.join(Kind::Index.name(1));
    let whole = std::fs::read(&index).unwrap();
    // Bit rot in the last byte of the last durable batch.
    let mut b = whole.clone();
    let last = b.len() - 1;
    b[last] ^= 0x01;
    std::fs::write(&index, &b).unwrap();
    let e = QueueStore::open_as_of(&dir, cfg(1 << 20), u64::MAX, Some(end))
        .err()
        .expect("damage refused")
        .to_string();
    assert!(
        e.contains("I00000001.qi") && e.contains(&format!("offset {}", mid.len)),
        "{e}"
    );
    // An index shorter than the checkpoint made it is refused too.
    std::fs::write(&index, &whole[..mid.len as usize]).unwrap();
    let e = QueueStore::open_as_of(&dir, cfg(1 << 20), u64::MAX, Some(end))
        .err()
        .expect("truncation refused")
        .to_string();
    assert!(e.contains("durable"), "{e}");
    // With the checkpoint ending at the first batch, the second one torn is a crash's tear.
    let mut b = whole.clone();
    b.truncate(b.len() - 3);
    std::fs::write(&index, &b).unwrap();
    let (_s, back) = QueueStore::open_as_of(&dir, cfg(1 << 20), u64::MAX, Some(mid)).unwrap();
    assert_eq!(back, v);
}

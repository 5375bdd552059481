//! The recovery log as a queue manager relies on it: durable appends come back in order after a
//! restart; a torn tail is cut at the last valid record; damage in the middle is reported;
//! a failed write loses only its own batch; group commit shares syncs.

use proptest::prelude::*;
use sealmq_storage::log::{LogConfig, SEG_HEADER};
use sealmq_storage::{Log, StorageError};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// A log in the test's temporary directory itself. No disk reserve: it would lie beside that
/// directory (`<dir>.reserve`, space.rs), outside what the test removes when it ends.
fn cfg(dir: &Path) -> LogConfig {
    let mut c = LogConfig::new(dir);
    c.reserve_bytes = 0;
    c
}

fn replay(dir: &Path) -> Result<Vec<(u64, u8, Vec<u8>)>, StorageError> {
    let mut out = Vec::new();
    let (log, _) = Log::open(cfg(dir), 0, |r| {
        out.push((r.lsn, r.kind, r.payload.to_vec()));
        Ok(())
    })?;
    log.close();
    Ok(out)
}

/// The segment files in `dir`, in order.
fn segments(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    v.sort();
    v
}

fn segment(dir: &Path) -> std::path::PathBuf {
    segments(dir).pop().unwrap()
}

#[test]
fn durable_records_come_back_in_order() {
    let d = tempfile::tempdir().unwrap();
    let (log, rec) = Log::open(cfg(d.path()), 0, |_| Ok(())).unwrap();
    assert_eq!(rec.records, 0);
    for i in 0..100u32 {
        log.append_durable((i % 7) as u8, &i.to_le_bytes()).unwrap();
    }
    drop(log);
    let got = replay(d.path()).unwrap();
    assert_eq!(got.len(), 100);
    for (i, (lsn, kind, p)) in got.iter().enumerate() {
        assert_eq!(*lsn, i as u64 + 1);
        assert_eq!(*kind, (i % 7) as u8);
        assert_eq!(p, &(i as u32).to_le_bytes());
    }
    // Appending after a reopen continues the LSNs.
    let (log, rec) = Log::open(cfg(d.path()), 50, |r| {
        assert!(r.lsn > 50);
        Ok(())
    })
    .unwrap();
    assert_eq!(rec.records, 50);
    assert_eq!(log.append_durable(1, b"more").unwrap(), 101);
}

#[test]
fn group_commit_shares_syncs() {
    let d = tempfile::tempdir().unwrap();
    let (log, _) = Log::open(cfg(d.path()), 0, |_| Ok(())).unwrap();
    let log = Arc::new(log);
    let threads: Vec<_> = (0..16)
        .map(|t| {
            let log = log.clone();
            std::thread::spawn(move || {
                for i in 0..50u32 {
                    log.append_durable(1, &[t as u8; 64]).unwrap();
                    let _ = i;
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let s = log.stats();
    assert_eq!(s.records, 800);
    assert!(
        s.batches < s.records,
        "16 committers never shared a sync: {s:?}"
    );
}

#[test]
fn torn_tail_is_cut_at_the_last_valid_record() {
    for cut in [1usize, 5, 20, 30] {
        let d = tempfile::tempdir().unwrap();
        let (log, _) = Log::open(cfg(d.path()), 0, |_| Ok(())).unwrap();
        for i in 0..10u8 {
            log.append_durable(i, &[i; 40]).unwrap();
        }
        drop(log);
        let seg = segment(d.path());
        let len = std::fs::metadata(&seg).unwrap().len();
        let f = std::fs::OpenOptions::new().write(true).open(&seg).unwrap();
        f.set_len(len - cut as u64).unwrap();
        drop(f);
        let mut got = Vec::new();
        let (log, rec) = Log::open(cfg(d.path()), 0, |r| {
            got.push(r.kind);
            Ok(())
        })
        .unwrap();
        assert_eq!(got, (0..9).collect::<Vec<u8>>(), "cut {cut}");
        assert!(rec.truncated.is_some());
        assert_eq!(log.append_durable(42, b"after").unwrap(), 10);
        drop(log);
        let again = replay(d.path()).unwrap();
        assert_eq!(again.len(), 10);
        assert_eq!(again[9].1, 42);
    }
}

/// The writer lays out zeros ahead of its position so that a batch's sync writes data only:
/// while the log is open the segment is longer than its records; a queue manager killed then
/// comes back with every record and no torn tail reported; a clean close cuts the zeros off.
#[test]
fn zeros_laid_out_ahead_are_the_end_of_the_log_not_a_torn_tail() {
    let d = tempfile::tempdir().unwrap();
    let (log, _) = Log::open(cfg(d.path()), 0, |_| Ok(())).unwrap();
    for i in 0..20u8 {
        log.append_durable(i, &[i; 100]).unwrap();
    }
    let written = SEG_HEADER + 20 * (21 + 100);
    let seg = segment(d.path());
    let laid = std::fs::metadata(&seg).unwrap().len();
    assert!(laid > written, "no space laid out ahead: {laid} bytes");
    let bytes = std::fs::read(&seg).unwrap();
    assert!(bytes[written as usize..].iter().all(|&b| b == 0));
    // As after kill -9: the file as it is now, opened by a new log (the old one never closes).
    let copy = tempfile::tempdir().unwrap();
    std::fs::copy(&seg, copy.path().join(seg.file_name().unwrap())).unwrap();
    let mut got = Vec::new();
    let (again, rec) = Log::open(cfg(copy.path()), 0, |r| {
        got.push(r.kind);
        Ok(())
    })
    .unwrap();
    assert_eq!(got, (0..20).collect::<Vec<u8>>());
    assert!(rec.truncated.is_none(), "zeros are not a torn tail");
    assert_eq!(again.append_durable(42, b"after").unwrap(), 21);
    drop(again);
    assert_eq!(replay(copy.path()).unwrap().len(), 21);
    drop(log);
    assert_eq!(std::fs::metadata(&seg).unwrap().len(), written);
}

#[test]
fn garbage_and_zeros_after_the_tail_are_cut() {
    let d = tempfile::tempdir().unwrap();
    let (log, _) = Log::open(cfg(d.path()), 0, |_| Ok(())).unwrap();
    log.append_durable(1, b"a").unwrap();
    log.append_durable(2, b"b").unwrap();
    drop(log);
    let seg = segment(d.path());
    let mut bytes = std::fs::read(&seg).unwrap();
    bytes.extend_from_slice(&[0u8; 4096]);
    std::fs::write(&seg, &bytes).unwrap();
    assert_eq!(replay(d.path()).unwrap().len(), 2);
    assert_eq!(
        std::fs::metadata(&seg).unwrap().len() as usize,
        bytes.len() - 4096
    );
}

#[test]
fn bit_flip_in_the_last_record_is_a_torn_tail_but_in_the_middle_is_damage() {
    let d = tempfile::tempdir().unwrap();
    let (log, _) = Log::open(cfg(d.path()), 0, |_| Ok(())).unwrap();
    for i in 0..5u8 {
        log.append_durable(i, &[i; 100]).unwrap();
    }
    drop(log);
    let seg = segment(d.path());
    let clean = std::fs::read(&seg).unwrap();
    let rec_len = 21 + 100;
    // Last record flipped: cut.
    let mut b = clean.clone();
    let last = b.len() - 10;
    b[last] ^= 0x10;
    std::fs::write(&seg, &b).unwrap();
    assert_eq!(replay(d.path()).unwrap().len(), 4);
    // Middle record flipped: an error naming the offset, nothing skipped.
    let mut b = clean.clone();
    let mid = SEG_HEADER as usize + rec_len + 30;
    b[mid] ^= 0x10;
    std::fs::write(&seg, &b).unwrap();
    match replay(d.path()) {
        Err(StorageError::Corrupt { offset, .. }) => {
            assert_eq!(offset, SEG_HEADER + rec_len as u64)
        }
        other => panic!("expected corruption, got {:?}", other.map(|v| v.len())),
    }
}

/// A copy of batches durable elsewhere (a replicated queue manager's log): no sync per batch,
/// so after a power loss its last segment's tail may hold anything, valid records after a hole
/// included. That tail is cut, not refused (the Raft log gives it again); a sealed segment
/// (synced when the next one began) is still refused when damaged.
#[test]
fn a_copy_cuts_its_damaged_unsynced_tail_even_with_valid_records_after_it() {
    let d = tempfile::tempdir().unwrap();
    let mut c = cfg(d.path());
    c.durable_elsewhere = true;
    c.segment_bytes = 4096;
    let (log, _) = Log::open(c.clone(), 0, |_| Ok(())).unwrap();
    for i in 0..40u8 {
        log.append_durable(i, &[i; 100]).unwrap();
    }
    log.sync_to_disk().unwrap();
    drop(log);
    let segs = segments(d.path());
    assert!(segs.len() >= 2, "the copy rolled its segments: {segs:?}");
    let last = segs.last().unwrap().clone();
    let clean = std::fs::read(&last).unwrap();
    let rec_len = 21 + 100;
    let in_last = (clean.len() - SEG_HEADER as usize) / rec_len;
    assert!(in_last >= 3);
    // A hole (zeros) over the last segment's second record, valid records after it.
    let mut b = clean.clone();
    let hole = SEG_HEADER as usize + rec_len;
    b[hole..hole + rec_len].fill(0);
    std::fs::write(&last, &b).unwrap();
    // The log as a single queue manager opens it: damage, nothing skipped.
    assert!(matches!(
        replay(d.path()),
        Err(StorageError::Corrupt { .. })
    ));
    // As a copy: cut after the first record of the last segment, and appending goes on there.
    let mut got = Vec::new();
    let (log, rec) = Log::open(c.clone(), 0, |r| {
        got.push(r.lsn);
        Ok(())
    })
    .unwrap();
    assert!(rec.truncated.is_some());
    let kept = 40 - in_last as u64 + 1;
    assert_eq!(got, (1..=kept).collect::<Vec<_>>());
    assert_eq!(log.append_durable(9, b"again").unwrap(), kept + 1);
    drop(log);
    // A damaged segment that is not the last is refused even for a copy.
    let first = segs.first().unwrap();
    let mut b = std::fs::read(first).unwrap();
    b[SEG_HEADER as usize + 30] ^= 0x10;
    std::fs::write(first, &b).unwrap();
    assert!(matches!(
        Log::open(c, 0, |_| Ok(())).map(|_| ()),
        Err(StorageError::Corrupt { .. })
    ));
}

#[test]
fn segments_roll_and_are_released_and_archived() {
    let d = tempfile::tempdir().unwrap();
    let archive = d.path().join("archive");
    let mut c = cfg(&d.path().join("log"));
    c.segment_bytes = 4096;
    c.archive_dir = Some(archive.clone());
    let (log, _) = Log::open(c.clone(), 0, |_| Ok(())).unwrap();
    for _ in 0..100 {
        log.append_durable(1, &[7u8; 200]).unwrap();
    }
    let n = log.segment_count();
    assert!(n > 3, "segments: {n}");
    let released = log.release_before(60).unwrap();
    assert!(released > 0);
    assert_eq!(log.segment_count(), n - released);
    assert_eq!(std::fs::read_dir(&archive).unwrap().count(), released);
    drop(log);
    let mut first = None;
    let (_log, rec) = Log::open(c, 0, |r| {
        first.get_or_insert(r.lsn);
        Ok(())
    })
    .unwrap();
    assert!(first.unwrap() <= 60, "records at or after 60 were kept");
    assert_eq!(rec.last_lsn, 100);
}

#[test]
fn a_failed_write_loses_only_its_batch_and_the_log_recovers() {
    let d = tempfile::tempdir().unwrap();
    let fail = Arc::new(AtomicBool::new(false));
    let mut c = cfg(d.path());
    c.fail_writes = Some(fail.clone());
    let (log, _) = Log::open(c, 0, |_| Ok(())).unwrap();
    log.append_durable(1, b"kept-1").unwrap();
    fail.store(true, Ordering::Relaxed);
    let e = log.append_durable(2, b"lost").unwrap_err();
    assert_eq!(e.reason().code(), 2102, "{e}");
    assert!(e.to_string().contains("No space left"), "{e}");
    fail.store(false, Ordering::Relaxed);
    log.append_durable(3, b"kept-2").unwrap();
    drop(log);
    let got: Vec<Vec<u8>> = replay(d.path()).unwrap().into_iter().map(|r| r.2).collect();
    assert_eq!(got, vec![b"kept-1".to_vec(), b"kept-2".to_vec()]);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn any_tail_garbage_recovers_the_valid_prefix(garbage in proptest::collection::vec(any::<u8>(), 0..300)) {
        let d = tempfile::tempdir().unwrap();
        let (log, _) = Log::open(cfg(d.path()), 0, |_| Ok(())).unwrap();
        for i in 0..3u8 {
            log.append_durable(i, &[i; 10]).unwrap();
        }
        drop(log);
        let seg = segment(d.path());
        let mut b = std::fs::read(&seg).unwrap();
        b.extend_from_slice(&garbage);
        std::fs::write(&seg, &b).unwrap();
        // Either the three records come back (garbage cut) or, if the garbage happens to hold
        // a valid record, more; never fewer, never a panic.
        let got = replay(d.path()).unwrap();
        prop_assert!(got.len() >= 3);
        prop_assert_eq!(got[2].2.clone(), vec![2u8; 10]);
    }

    #[test]
    fn random_segment_files_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("S0000000001.log"), &bytes).unwrap();
        let _ = replay(d.path());
    }
}

/// Zeros may end a segment that is not the last (its laid-out space, should the cut at its
/// end not have reached the disk) only where the next segment goes on from its last record:
/// records zeroed out of a closed segment are damage, not an end.
#[test]
fn zeros_ending_a_closed_segment_are_damage_when_records_are_missing() {
    let d = tempfile::tempdir().unwrap();
    let mut c = cfg(d.path());
    c.segment_bytes = 4096;
    let (log, _) = Log::open(c.clone(), 0, |_| Ok(())).unwrap();
    for i in 0..40u8 {
        log.append_durable(i, &[i; 100]).unwrap();
    }
    drop(log);
    let segs = segments(d.path());
    let first = segs.first().unwrap().clone();
    let clean = std::fs::read(&first).unwrap();
    // Zeros after the last record, as if the cut never reached the disk: read as its end.
    let mut b = clean.clone();
    b.extend_from_slice(&[0u8; 1000]);
    std::fs::write(&first, &b).unwrap();
    assert_eq!(replay(d.path()).unwrap().len(), 40);
    // The last record zeroed: the next segment does not go on from what is left.
    let mut b = clean.clone();
    let rec_len = 21 + 100;
    let n = b.len();
    b[n - rec_len..].fill(0);
    std::fs::write(&first, &b).unwrap();
    match replay(d.path()) {
        Err(StorageError::Corrupt { detail, .. }) => assert!(detail.contains("zeros"), "{detail}"),
        other => panic!("expected damage, got {:?}", other.map(|v| v.len())),
    }
}

/// A version 1 segment (written before space was laid out ahead) is read as it is; what this
/// build starts is version 2.
#[test]
fn a_version_1_segment_is_read_and_new_segments_are_version_2() {
    let d = tempfile::tempdir().unwrap();
    let mut c = cfg(d.path());
    c.segment_bytes = 4096;
    let (log, _) = Log::open(c.clone(), 0, |_| Ok(())).unwrap();
    for i in 0..5u8 {
        log.append_durable(i, &[i; 100]).unwrap();
    }
    drop(log);
    let seg = segment(d.path());
    let mut b = std::fs::read(&seg).unwrap();
    assert_eq!(u16::from_le_bytes([b[4], b[5]]), 2);
    // The same segment as version 1 wrote it: version field 1, the header's CRC again.
    b[4..6].copy_from_slice(&1u16.to_le_bytes());
    let crc = crc32c::crc32c(&b[0..24]);
    b[24..28].copy_from_slice(&crc.to_le_bytes());
    std::fs::write(&seg, &b).unwrap();
    assert_eq!(replay(d.path()).unwrap().len(), 5);
}

//! Encryption at rest in the log and checkpoints: nothing written is readable without the
//! master key, every start seals with a fresh data key while older records stay readable,
//! altered or moved records are refused, and a log or checkpoint without its key says why.

#![allow(unsafe_code)]

use sealmq_storage::checkpoint::{self, CheckpointWriter};
use sealmq_storage::dse::{Dse, MasterSource, new_master_hex};
use sealmq_storage::log::{LogConfig, RECORD_HEADER, SEG_HEADER};
use sealmq_storage::{Log, StorageError};
use std::path::Path;
use std::sync::Arc;

fn master(var: &str) -> MasterSource {
    // SAFETY (edition 2024): each test sets its own variable, read by this process only.
    unsafe { std::env::set_var(var, new_master_hex().unwrap().as_str()) };
    MasterSource::Env(var.into())
}

fn replay(dir: &Path, dse: Option<Arc<Dse>>) -> Result<Vec<Vec<u8>>, StorageError> {
    let mut cfg = LogConfig::new(dir);
    cfg.dse = dse;
    let mut out = Vec::new();
    let (log, _) = Log::open(cfg, 0, |r| {
        out.push(r.payload.to_vec());
        Ok(())
    })?;
    log.close();
    Ok(out)
}

fn all_bytes(dir: &Path) -> Vec<u8> {
    let mut v = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        if e.path().is_file() {
            v.extend(std::fs::read(e.path()).unwrap());
        }
    }
    v
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

#[test]
fn the_log_is_sealed_and_reads_back_across_starts_and_keys() {
    let d = tempfile::tempdir().unwrap();
    let src = master("SEALMQ_TEST_LOG_DSE");
    Dse::create(d.path(), &src).unwrap();
    let logdir = d.path().join("log");
    for start in 0..2u32 {
        let dse = Arc::new(Dse::open(d.path(), &src).unwrap());
        let mut cfg = LogConfig::new(&logdir);
        cfg.dse = Some(dse.clone());
        let (log, rec) = Log::open(cfg, 0, |_| Ok(())).unwrap();
        assert_eq!(rec.records, u64::from(start) * 50);
        for i in 0..50u32 {
            log.append_durable(3, format!("TOPSECRET-{start}-{i}").as_bytes())
                .unwrap();
        }
        log.close();
    }
    assert!(
        !contains(&all_bytes(&logdir), b"TOPSECRET"),
        "no plaintext on disk"
    );
    let dse = Arc::new(Dse::open(d.path(), &src).unwrap());
    let got = replay(&logdir, Some(dse.clone())).unwrap();
    assert_eq!(got.len(), 100);
    assert_eq!(got[0], b"TOPSECRET-0-0");
    assert_eq!(got[99], b"TOPSECRET-1-49");

    // Without the key: a clear error, not garbage and not an empty queue manager.
    match replay(&logdir, None) {
        Err(StorageError::Key(m)) => assert!(m.contains("master key"), "{m}"),
        other => panic!("expected a key error, got {other:?}"),
    }

    // A sealed payload altered with its CRC made good again is refused, never replayed.
    let seg = std::fs::read_dir(&logdir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .min()
        .unwrap();
    let mut b = std::fs::read(&seg).unwrap();
    let rec = SEG_HEADER as usize;
    let len = u32::from_le_bytes(b[rec..rec + 4].try_into().unwrap()) as usize;
    b[rec + RECORD_HEADER + 20] ^= 0x01;
    let crc = crc32c::crc32c(&b[rec + 8..rec + RECORD_HEADER + len]);
    b[rec + 4..rec + 8].copy_from_slice(&crc.to_le_bytes());
    std::fs::write(&seg, &b).unwrap();
    match replay(&logdir, Some(dse)) {
        Err(StorageError::Corrupt { detail, .. }) => {
            assert!(detail.contains("authentication"), "{detail}")
        }
        other => panic!("expected damage to be reported, got {other:?}"),
    }
}

#[test]
fn checkpoints_are_sealed_and_need_their_key() {
    let d = tempfile::tempdir().unwrap();
    let src = master("SEALMQ_TEST_CKP_DSE");
    Dse::create(d.path(), &src).unwrap();
    let dse = Arc::new(Dse::open(d.path(), &src).unwrap());
    let dir = d.path().join("checkpoint");
    let mut w = CheckpointWriter::create_with(&dir, 42, Some(dse.clone())).unwrap();
    for i in 0..3 {
        w.frame(format!("SNAPSHOT-SECRET-{i}").as_bytes()).unwrap();
    }
    w.finish().unwrap();
    assert!(!contains(&all_bytes(&dir), b"SNAPSHOT-SECRET"));
    let (lsn, mut r) = checkpoint::latest_with(&dir, Some(dse)).unwrap().unwrap();
    assert_eq!(lsn, 42);
    for i in 0..3 {
        assert_eq!(
            r.next_frame().unwrap().unwrap(),
            format!("SNAPSHOT-SECRET-{i}").as_bytes()
        );
    }
    assert!(r.next_frame().unwrap().is_none());
    assert!(matches!(
        checkpoint::latest(&dir),
        Err(StorageError::Key(_))
    ));
}

#[test]
fn a_torn_sealed_tail_is_cut_like_a_clear_one() {
    let d = tempfile::tempdir().unwrap();
    let src = master("SEALMQ_TEST_TORN_DSE");
    Dse::create(d.path(), &src).unwrap();
    let dse = Arc::new(Dse::open(d.path(), &src).unwrap());
    let logdir = d.path().join("log");
    let mut cfg = LogConfig::new(&logdir);
    cfg.dse = Some(dse.clone());
    let (log, _) = Log::open(cfg, 0, |_| Ok(())).unwrap();
    for i in 0..10u32 {
        log.append_durable(1, &i.to_le_bytes()).unwrap();
    }
    log.close();
    let seg = std::fs::read_dir(&logdir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .max()
        .unwrap();
    let len = std::fs::metadata(&seg).unwrap().len();
    // The last record loses its last bytes, as in a crash mid-write.
    std::fs::OpenOptions::new()
        .write(true)
        .open(&seg)
        .unwrap()
        .set_len(len - 5)
        .unwrap();
    let got = replay(&logdir, Some(dse)).unwrap();
    assert_eq!(got.len(), 9);
    assert_eq!(got[8], 8u32.to_le_bytes());
}

/// Data keys roll with the segments, also after the master key was rotated under a running
/// log (the new master key comes from the recorded source); everything reads back.
#[test]
fn keys_roll_with_segments_and_survive_a_rotation_while_running() {
    let d = tempfile::tempdir().unwrap();
    let src = master("SEALMQ_TEST_ROLL_A");
    Dse::create(d.path(), &src).unwrap();
    Dse::set_source(d.path(), &src).unwrap();
    let dse = Arc::new(Dse::open(d.path(), &src).unwrap());
    let first = dse.current();
    let logdir = d.path().join("log");
    let mut cfg = LogConfig::new(&logdir);
    cfg.segment_bytes = 4096;
    cfg.dse = Some(dse.clone());
    let (log, _) = Log::open(cfg, 0, |_| Ok(())).unwrap();
    let payload = vec![7u8; 700];
    for _ in 0..20 {
        log.append_durable(1, &payload).unwrap();
    }
    let rolled = dse.current();
    assert!(rolled >= first + 3, "a key per segment: {first} → {rolled}");
    // The master key rotates while the log runs; the next roll reads it from the source.
    let new = master("SEALMQ_TEST_ROLL_B");
    Dse::rotate(d.path(), &src, &new).unwrap();
    Dse::set_source(d.path(), &new).unwrap();
    for _ in 0..20 {
        log.append_durable(1, &payload).unwrap();
    }
    assert!(dse.current() > rolled, "keys still roll after the rotation");
    log.close();
    let again = Arc::new(Dse::open(d.path(), &new).unwrap());
    let got = replay(&logdir, Some(again)).unwrap();
    assert_eq!(got.len(), 40);
    assert!(got.iter().all(|p| p == &payload));
    assert!(
        Dse::open(d.path(), &src).is_err(),
        "the old master key is retired"
    );
}

/// Keys older than what is still on disk leave the keyring; what remains still reads.
#[test]
fn keys_nothing_uses_any_more_are_pruned() {
    let d = tempfile::tempdir().unwrap();
    let src = master("SEALMQ_TEST_PRUNE");
    Dse::create(d.path(), &src).unwrap();
    Dse::set_source(d.path(), &src).unwrap();
    let dse = Arc::new(Dse::open(d.path(), &src).unwrap());
    let logdir = d.path().join("log");
    let mut cfg = LogConfig::new(&logdir);
    cfg.segment_bytes = 4096;
    cfg.dse = Some(dse.clone());
    let (log, _) = Log::open(cfg, 0, |_| Ok(())).unwrap();
    let mut last = 0;
    for _ in 0..30 {
        last = log.append_durable(1, &[9u8; 700]).unwrap();
    }
    let keyring = d.path().join("dse.keyring");
    let before = std::fs::metadata(&keyring).unwrap().len();
    log.release_before(last).unwrap();
    let oldest = log.oldest_key_id().expect("the last segment has records");
    assert!(oldest > 1);
    let dropped = dse.prune_below(oldest).unwrap();
    assert!(dropped >= 3, "dropped {dropped}");
    assert!(std::fs::metadata(&keyring).unwrap().len() < before);
    log.close();
    let again = Arc::new(Dse::open(d.path(), &src).unwrap());
    let got = replay(&logdir, Some(again)).unwrap();
    assert!(!got.is_empty() && got.iter().all(|p| p == &[9u8; 700]));
}

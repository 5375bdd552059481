//! The log of a replicated queue manager (issue 26, docs/ha.md).
//!
//! On the active instance the flusher hands each batch, framed without encryption, to a
//! [`Replicator`] before writing it: the batch is durable (and its committers released) only
//! once a majority of the group holds it, and it is written to this instance's own segments
//! only then, so an instance's log never holds a record the group did not commit. A batch the
//! replicator refuses breaks the log: the instance has lost its majority and must stop
//! acknowledging.
//!
//! On a replica the records arrive already numbered: [`Log::append_replicated`] appends each at
//! the LSN the active instance gave it, sealed under this instance's own data key, and skips
//! those it holds already (a batch applied again after a restart).

use super::*;

/// Makes a batch durable on a majority of the group; blocks until it is, or fails.
pub trait Replicator: Send + Sync {
    /// `records` are framed as in a segment (`frame`), unencrypted, LSNs `first..=last`.
    fn replicate(&self, first: Lsn, last: Lsn, records: &[u8]) -> std::result::Result<(), String>;

    /// The group as this instance sees it now (DISPLAY QMSTATUS, the metrics).
    fn status(&self) -> Option<ReplicationStatus> {
        None
    }
}

/// A replicated queue manager's group as its active instance sees it (docs/ha.md).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReplicationStatus {
    /// This instance's name and role (ACTIVE, REPLICA, UNKNOWN).
    pub instance: String,
    pub role: String,
    /// Instances holding every committed entry, of the group (`3/3`); empty when unknown.
    pub quorum: String,
    pub term: u64,
    /// The last Raft entry held, and the last applied.
    pub log_index: u64,
    pub applied_index: u64,
    /// Elections seen begin since the instance started.
    pub elections: u64,
    /// Batches this instance replicated as the active one, their bytes, and the time they
    /// waited for a majority (microseconds: in all, and the longest).
    pub batches: u64,
    pub bytes: u64,
    pub wait_us: u64,
    pub wait_us_max: u64,
    pub instances: Vec<ReplicaStatus>,
}

/// One instance of the group.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReplicaStatus {
    pub name: String,
    pub role: String,
    /// Whether it holds every entry the active instance has; `None`: not known here.
    pub in_sync: Option<bool>,
    /// Bytes of Raft log it lacks; `None`: not known here.
    pub backlog: Option<u64>,
    pub address: String,
}

/// A shared [`Replicator`] in a [`LogConfig`].
#[derive(Clone)]
pub struct ReplicatorRef(pub Arc<dyn Replicator>);

impl std::fmt::Debug for ReplicatorRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Replicator")
    }
}

/// Splits a batch framed by [`frame`] into runs of whole records of at most `max` bytes (a
/// record larger than that alone): each run's first and last LSN and its bytes. A replicated
/// batch travels as one Raft entry per run, so that no entry — and no message between
/// instances — grows with the batch.
pub fn split_batch(buf: &[u8], max: usize) -> Result<Vec<(Lsn, Lsn, &[u8])>> {
    let mut out = Vec::new();
    let (mut start, mut off) = (0usize, 0usize);
    let (mut first, mut last) = (0, 0);
    while off < buf.len() {
        let head = buf.get(off..off + RECORD_HEADER).ok_or_else(|| {
            StorageError::Decode(format!("a batch ends inside a record at {off}"))
        })?;
        let len = u32::from_le_bytes([head[0], head[1], head[2], head[3]]) as usize;
        let lsn = u64::from_le_bytes(head[8..16].try_into().unwrap_or([0; 8]));
        let n = RECORD_HEADER + len;
        if off + n > buf.len() {
            return Err(StorageError::Decode(format!(
                "a batch ends inside the record of LSN {lsn}"
            )));
        }
        if off > start && off + n - start > max {
            out.push((first, last, &buf[start..off]));
            start = off;
        }
        if off == start {
            first = lsn;
        }
        last = lsn;
        off += n;
    }
    if off > start {
        out.push((first, last, &buf[start..off]));
    }
    Ok(out)
}

/// One record of a replicated batch.
pub struct Framed<'a> {
    pub lsn: Lsn,
    pub kind: u8,
    pub payload: &'a [u8],
}

/// The records of a batch framed by [`frame`] (unencrypted); an error names the first that is
/// not whole or fails its checksum.
pub fn parse_batch(mut buf: &[u8]) -> Result<Vec<Framed<'_>>> {
    let mut out = Vec::new();
    let mut after = 0;
    while !buf.is_empty() {
        let Some((r, n)) = parse_record(buf, after) else {
            return Err(StorageError::Decode(format!(
                "a replicated batch is damaged after LSN {after}"
            )));
        };
        if r.key_id != 0 {
            return Err(StorageError::Decode(
                "a replicated record is encrypted (each instance seals its own)".into(),
            ));
        }
        after = r.lsn;
        out.push(Framed {
            lsn: r.lsn,
            kind: r.kind,
            payload: r.payload,
        });
        buf = &buf[n..];
    }
    Ok(out)
}

impl Log {
    /// Makes an empty log in `cfg.dir` that goes on at LSN `first` (a replica that installed
    /// a snapshot: its log holds what follows the snapshot, at the group's LSNs). Refused
    /// when the directory already holds segments.
    pub fn begin_at(cfg: &LogConfig, first: Lsn) -> Result<()> {
        crate::create_private_dir(&cfg.dir)
            .map_err(|e| StorageError::io("cannot create the log directory", &cfg.dir, e))?;
        if !list_segments(&cfg.dir)?.is_empty() {
            return Err(StorageError::Decode(format!(
                "{} already holds a log",
                cfg.dir.display()
            )));
        }
        writer::create_segment(&cfg.dir, 1, first.max(1)).map(|_| ())
    }

    /// A replica's copy of a batch: each record at its own LSN, those at or below the log's
    /// last skipped; returns the ticket of the last appended (wait on it for durability).
    pub fn append_replicated(&self, records: &[u8]) -> Result<Option<Ticket>> {
        let mut last = None;
        for r in parse_batch(records)? {
            if r.lsn <= self.last_lsn() {
                continue;
            }
            last = Some(self.append_as(Some(r.lsn), r.kind, r.payload)?);
        }
        Ok(last)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_splits_into_runs_of_whole_records() {
        let mut buf = Vec::new();
        for (lsn, size) in [(5u64, 10usize), (6, 10), (7, 100), (8, 10), (9, 10)] {
            frame(&mut buf, lsn, 0, 1, &vec![lsn as u8; size]);
        }
        let runs = split_batch(&buf, 2 * (RECORD_HEADER + 10)).unwrap();
        let lsns: Vec<(Lsn, Lsn)> = runs.iter().map(|(f, l, _)| (*f, *l)).collect();
        // The large record goes alone; the others two by two.
        assert_eq!(lsns, vec![(5, 6), (7, 7), (8, 9)]);
        let whole: Vec<u8> = runs.iter().flat_map(|(_, _, b)| b.to_vec()).collect();
        assert_eq!(whole, buf);
        for (f, l, b) in runs {
            let recs = parse_batch(b).unwrap();
            assert_eq!((recs[0].lsn, recs[recs.len() - 1].lsn), (f, l));
        }
        assert_eq!(split_batch(&buf, usize::MAX).unwrap().len(), 1);
        assert!(split_batch(&buf[..buf.len() - 1], 1000).is_err());
        assert!(split_batch(&[], 10).unwrap().is_empty());
    }

    proptest::proptest! {
        #[test]
        fn any_bytes_split_or_are_refused_without_panic(
            b in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..200),
            max in 1usize..100,
        ) {
            let _ = split_batch(&b, max);
        }
    }
}

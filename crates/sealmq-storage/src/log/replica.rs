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

//! Damaged queue records (issue 24, finding 11). A message whose record in a queue file can
//! no longer be read (a failed checksum, a record that is not the message it should be, a
//! sealed record that does not open) would otherwise stop every get and browse of its queue at
//! that message. It is set aside instead: its bytes, as they are, copied to
//! `<QM>/damaged/<seq>.rec` with a line in `<QM>/damaged/damaged.log` naming the queue, the
//! file and the offset; taken off its queue durably (a log record, as an expiry's); reported in
//! the error log. The rest of the queue is served.
//!
//! A get or browse that meets one sets it aside and goes on; after a start, one background pass
//! reads every stored message once so that damage is reported at start, not when an
//! application happens to reach it.

use super::*;
use crate::queue::QueueState;
use sealmq_storage::qstore::Loc;
use sealmq_types::sync::read;

/// Under the queue manager's directory: where damaged records are copied.
pub const DAMAGED_DIR: &str = "damaged";

/// Entries read per lock of a queue during the start's pass.
const CHUNK: usize = 4096;

impl QueueManager {
    /// Sets aside message `seq` of `queue`, whose record at `loc` failed with `why` (the
    /// queue's lock held, as `st`). Returns false when it is no longer there to set aside.
    pub(crate) fn set_aside(
        &self,
        queue: &str,
        st: &mut QueueState,
        seq: u64,
        loc: Loc,
        why: &str,
    ) -> bool {
        let still = st.entries.locate(seq).map(|at| st.entries.at(at));
        if !still.is_some_and(|e| e.is_visible() && e.loc() == Some(loc)) {
            return false;
        }
        let copied = st
            .store
            .as_ref()
            .map(|s| self.copy_aside(s, queue, seq, loc, why));
        let Some(e) = st.remove(seq) else {
            return false;
        };
        if e.persistent() {
            // As an expired message's removal: a restart does not bring it back.
            let rec = Record::Get {
                tx: self.new_tx(),
                auto: true,
                queue: queue.to_string(),
                seq,
            };
            if let Err(err) = self.log.append(rec.kind(), &rec.encode()) {
                tracing::error!(
                    queue,
                    seq,
                    "cannot log the removal of a damaged message: {err}"
                );
            }
        }
        let place = match copied {
            Some(Ok(p)) => format!("its bytes are in {}", p.display()),
            Some(Err(err)) => format!("its bytes could not be copied aside: {err}"),
            None => "it had no queue file".into(),
        };
        tracing::error!(
            queue,
            seq,
            "a damaged message was set aside and the rest of the queue is served: {why}; \
             {place}"
        );
        true
    }

    /// Copies the record's bytes to `damaged/<seq>.rec` and notes it in `damaged/damaged.log`.
    fn copy_aside(
        &self,
        store: &sealmq_storage::qstore::QueueStore,
        queue: &str,
        seq: u64,
        loc: Loc,
        why: &str,
    ) -> Result<PathBuf, String> {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        let dir = self.cfg.dir.join(DAMAGED_DIR);
        sealmq_storage::create_private_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let (file, bytes) = store.raw(loc).map_err(|e| e.to_string())?;
        let out = dir.join(format!("{seq}.rec"));
        sealmq_storage::create_private_file(&out)
            .and_then(|mut f| f.write_all(&bytes).and_then(|()| f.sync_all()))
            .map_err(|e| format!("{}: {e}", out.display()))?;
        let line = format!(
            "{} queue={queue} seq={seq} file={} offset={} length={} copied={} reason={}\n",
            crate::md::now_ms(),
            file.display(),
            loc.offset,
            loc.len,
            bytes.len(),
            why.replace('\n', " ")
        );
        let log = dir.join("damaged.log");
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .open(&log)
            .and_then(|mut f| f.write_all(line.as_bytes()))
            .map_err(|e| format!("{}: {e}", log.display()))?;
        Ok(out)
    }

    /// Reads every stored message of every local queue once, on a thread of its own, setting
    /// aside those that are damaged; the result goes to the error log.
    pub fn verify_queue_files_in_background(self: &Arc<Self>) {
        let qm = self.clone();
        let r = std::thread::Builder::new()
            .name("sealmq-verify".into())
            .spawn(move || qm.verify_queue_files());
        if let Err(e) = r {
            tracing::warn!("the queue files are not verified at start: {e}");
        }
    }

    /// The start's pass: (messages read, damaged ones set aside).
    pub fn verify_queue_files(&self) -> (u64, u64) {
        let queues: Vec<Arc<LocalQueue>> = read(&self.locals).values().cloned().collect();
        let (mut read_n, mut damaged) = (0u64, 0u64);
        for q in queues {
            let mut after = None;
            loop {
                if self.is_quiescing() {
                    return (read_n, damaged);
                }
                let (store, batch) = {
                    let st = q.lock();
                    let Some(store) = st.store.clone() else { break };
                    let batch: Vec<_> = st
                        .entries
                        .iter_from(after)
                        .take(CHUNK)
                        .map(|(k, e)| (k, e.seq, e.loc()))
                        .collect();
                    (store, batch)
                };
                let Some(&(last, _, _)) = batch.last() else {
                    break;
                };
                after = Some(last);
                for (_, seq, loc) in batch {
                    let Some(loc) = loc.filter(|l| !l.spill) else {
                        continue;
                    };
                    read_n += 1;
                    if let Err(e) = crate::queue::read_message(&store, seq, loc)
                        && e.reason == ReasonCode::ObjectDamaged
                        && self.set_aside(&q.name, &mut q.lock(), seq, loc, &e.to_string())
                    {
                        damaged += 1;
                    }
                }
            }
        }
        if damaged > 0 {
            tracing::error!(
                "queue files verified at start: {damaged} damaged message(s) of {read_n} set \
                 aside in {}",
                self.cfg.dir.join(DAMAGED_DIR).display()
            );
        } else {
            tracing::info!("queue files verified at start: {read_n} stored message(s) readable");
        }
        (read_n, damaged)
    }
}

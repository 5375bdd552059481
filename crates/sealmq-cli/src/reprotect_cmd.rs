//! `sealmq reprotect QM QUEUE --keystore DIR`: a queue's backlog re-protected for its policy's
//! current recipients and algorithms without decrypting any payload (docs/protection.md). The
//! queue manager does the work, a batch per request, reading the keystore itself; this
//! command drives it, shows its progress and sums it up. Each batch ends durable, so after a
//! crash the same command carries on: what was rewritten is current and is left.

use crate::home::exists;
use crate::{CliResult, progress, refused};
use clap::Args;
use sealmq_client::{Client, Reprotected};
use sealmq_types::ReasonCode;
use std::path::PathBuf;
use std::time::Instant;

#[derive(Args)]
pub struct ReprotectArgs {
    /// Queue manager name.
    qm: String,
    /// Local queue whose messages are re-protected for its policy's current recipients.
    queue: String,
    /// Keystore holding a key that opens what is queued now (an old recipient's, retired keys
    /// included); the queue manager reads it, no key leaves it.
    #[arg(long)]
    keystore: PathBuf,
    /// Count what would be rewritten, and change nothing.
    #[arg(long)]
    dry_run: bool,
    /// Messages per batch (each batch is made durable as one).
    #[arg(long, default_value_t = 512)]
    batch: u32,
}

/// The sums of every batch.
#[derive(Default)]
struct Totals {
    scanned: u64,
    rewritten: u64,
    current: u64,
    other: u64,
    failed: u64,
    detail: String,
    unwraps: u64,
}

impl Totals {
    fn add(&mut self, r: &Reprotected) {
        self.scanned += u64::from(r.scanned);
        self.rewritten += u64::from(r.rewritten);
        self.current += u64::from(r.current);
        self.other += u64::from(r.other);
        self.failed += u64::from(r.failed);
        if self.detail.is_empty() {
            self.detail = r.detail.clone();
        }
        self.unwraps = r.unwraps;
    }
}

pub fn run(a: ReprotectArgs) -> CliResult {
    let dir = exists(&a.qm)?;
    let keystore = std::fs::canonicalize(&a.keystore)
        .map_err(|e| format!("keystore {}: {e}", a.keystore.display()))?;
    let keystore = keystore.to_string_lossy().to_string();
    let mut c = Client::connect_local(&dir, "sealmq-reprotect").map_err(|e| {
        format!(
            "{e} (reprotect works on a running queue manager: sealmq start {})",
            a.qm
        )
    })?;
    let start = Instant::now();
    let mut t = Totals::default();
    let mut after = None;
    let mut bar = None;
    loop {
        let r = c
            .reprotect(&a.queue, &keystore, after, a.batch.max(1), a.dry_run)
            .map_err(|e| refused(e.reason, e.detail))?;
        t.add(&r);
        let b = bar.get_or_insert_with(|| {
            let what = if a.dry_run {
                "looked at"
            } else {
                "re-protected"
            };
            progress::counter(what, "messages", Some(r.depth))
        });
        b.set_length(r.depth.max(t.scanned));
        b.set_position(t.scanned);
        match r.next {
            Some(n) => after = Some(n),
            None => break,
        }
    }
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let secs = start.elapsed().as_secs_f64();
    let verb = if a.dry_run {
        "would rewrite"
    } else {
        "rewrote"
    };
    println!(
        "{verb} {} of {} message(s) on {} in {secs:.1} s ({:.0} messages/s); already current {}, \
         not encrypted {}, failed {}; private-key operations {}",
        t.rewritten,
        t.scanned,
        a.queue,
        t.scanned as f64 / secs.max(1e-9),
        t.current,
        t.other,
        t.failed,
        t.unwraps
    );
    if t.failed > 0 {
        return Err(refused(
            ReasonCode::SecurityError,
            format!(
                "{} message(s) could not be re-protected (the first: {}); they are as they were",
                t.failed, t.detail
            ),
        ));
    }
    Ok(())
}

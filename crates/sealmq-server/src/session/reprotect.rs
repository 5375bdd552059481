//! `sealmq reprotect` (wire version 8): a queue's backlog re-protected for its policy's current
//! recipients, a batch per request, without decrypting any payload (`sealmq_protect::rewrap`).
//! The keys that open what is queued come from a keystore directory the queue manager reads
//! itself; the current recipients' certificates from the queue manager's keystore, as for
//! SPLPROT(ASPOLICY). The queue manager's own user only.

use super::Session;
use sealmq_protect::rewrap::{Outcome, Rewrapper, Target};
use sealmq_protect::{Keystore, ProtectError};
use sealmq_types::ReasonCode;
use sealmq_wire::Response;
use std::sync::Arc;

/// A Reprotect request's fields.
pub(crate) struct Step {
    pub queue: String,
    pub keystore: String,
    pub after: Option<(u8, u64)>,
    pub batch: u32,
    pub dry_run: bool,
}

fn refused(reason: ReasonCode, detail: String) -> Response {
    Response::Err {
        reason: reason.code(),
        detail,
    }
}

impl Session {
    pub(super) async fn reprotect(&mut self, s: Step) -> Response {
        if !self.admin {
            return refused(
                ReasonCode::NotAuthorized,
                "re-protecting a queue needs the queue manager's own user".into(),
            );
        }
        let Some(policy) = self.qm.policy(&s.queue) else {
            return refused(
                ReasonCode::UnknownObjectName,
                format!(
                    "queue '{}' has no security policy to re-protect for",
                    s.queue
                ),
            );
        };
        let Some(protector) = self.ctx.security.protector() else {
            return refused(
                ReasonCode::ResourceProblem,
                "the queue manager has no keystore to find the policy's recipients in".into(),
            );
        };
        let rw = match self.rewrapper(&s.keystore) {
            Ok(rw) => rw,
            Err(e) => return refused(e.reason(), format!("keystore {}: {e}", s.keystore)),
        };
        let qm = self.qm.clone();
        self.on_own_thread(move || {
            let certs = match protector.current_recipients(&policy) {
                Ok(c) => c,
                Err(e) => {
                    return refused(e.reason(), format!("policy {}: {e}", policy.name));
                }
            };
            if certs.is_empty() {
                return refused(
                    ReasonCode::SecurityError,
                    format!("policy {} names no recipients (ENCALG NONE)", policy.name),
                );
            }
            step(&qm, &s, &rw, &Target::new(certs))
        })
        .await
    }

    /// The rewrapper for keystore `dir`, kept for the connection's next batches (its caches of
    /// unwrapped keys are what spares a reused key's every message another unwrap).
    fn rewrapper(&mut self, dir: &str) -> Result<Arc<Rewrapper>, ProtectError> {
        if let Some((d, rw)) = &self.rewrapper
            && d == dir
        {
            return Ok(rw.clone());
        }
        let rw = Arc::new(Rewrapper::new(Keystore::load(std::path::Path::new(dir))?));
        self.rewrapper = Some((dir.to_string(), rw.clone()));
        Ok(rw)
    }
}

/// What re-protecting some messages came to: their new payloads and the counts.
#[derive(Default)]
struct Part {
    payloads: Vec<Option<Vec<u8>>>,
    current: u32,
    other: u32,
    failed: u32,
    detail: String,
}

/// Re-protects `msgs` in order.
fn rewrap_all(rw: &Rewrapper, target: &Target, msgs: &[&sealmq_engine::md::Message]) -> Part {
    let mut p = Part::default();
    for m in msgs {
        p.payloads.push(match rw.rewrap(&m.payload, target) {
            Ok(Outcome::Rewritten(new)) => Some(new),
            Ok(Outcome::Current) => {
                p.current += 1;
                None
            }
            Ok(Outcome::NotEncrypted | Outcome::Ibm) => {
                p.other += 1;
                None
            }
            Err(e) => {
                if p.failed == 0 {
                    p.detail = e.to_string();
                }
                p.failed += 1;
                None
            }
        });
    }
    p
}

/// Re-protects `msgs` on every core: consecutive runs (the messages that share a reused key
/// stand together, so each key is unwrapped on one core).
fn rewrap_parallel(rw: &Rewrapper, target: &Target, msgs: &[&sealmq_engine::md::Message]) -> Part {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let per = msgs.len().div_ceil(cores.max(1)).max(64);
    if msgs.len() <= per {
        return rewrap_all(rw, target, msgs);
    }
    let parts: Vec<Part> = std::thread::scope(|s| {
        let running: Vec<_> = msgs
            .chunks(per)
            .map(|c| (c.len(), s.spawn(move || rewrap_all(rw, target, c))))
            .collect();
        // A thread that failed leaves its messages as they were, each counted failed: every
        // payload stays in its message's place.
        running
            .into_iter()
            .map(|(n, h)| {
                h.join().unwrap_or_else(|_| Part {
                    payloads: vec![None; n],
                    failed: n as u32,
                    detail: "the re-protecting thread failed".into(),
                    ..Part::default()
                })
            })
            .collect()
    });
    let mut all = Part::default();
    for p in parts {
        all.payloads.extend(p.payloads);
        all.current += p.current;
        all.other += p.other;
        if all.failed == 0 {
            all.detail = p.detail;
        }
        all.failed += p.failed;
    }
    all
}

/// One batch: each message rewritten, left (current, not encrypted) or failed.
fn step(qm: &sealmq_engine::QueueManager, s: &Step, rw: &Rewrapper, target: &Target) -> Response {
    let mut part = Part::default();
    let done = qm.replace_payloads(&s.queue, s.after, s.batch as usize, s.dry_run, |msgs| {
        part = rewrap_parallel(rw, target, msgs);
        std::mem::take(&mut part.payloads)
    });
    let r = match done {
        Ok(r) => r,
        Err(e) => return refused(e.reason, e.to_string()),
    };
    let Part {
        current,
        other,
        failed,
        detail,
        ..
    } = part;
    if failed > 0 {
        tracing::warn!(queue = %s.queue, failed, "messages not re-protected: {detail}");
    }
    let (rank, seq) = r.next.unwrap_or((0, 0));
    Response::Reprotected {
        scanned: r.scanned as u32,
        rewritten: r.replaced as u32,
        current,
        other,
        failed,
        detail,
        more: r.next.is_some(),
        rank,
        seq,
        depth: qm.depth(&s.queue).unwrap_or(0) as u64,
        unwraps: rw.counters().key_unwrap,
    }
}

//! Asynchronous consume's requests (wire version 2): a consumer's pusher runs on the
//! pushers' runtime (`consume/`) and sends through the connection's pushers' channel, made
//! when the first consumer starts; answers that promise nothing more is pushed go behind
//! what was pushed.

use super::{Flow, Session};
use sealmq_types::ReasonCode;
use sealmq_wire::{Request, Response};

impl Session {
    /// The channel the connection's pushers send through.
    fn pushes(&mut self) -> Result<crate::consume::PushTx, String> {
        if let Some(t) = &self.pushes {
            return Ok(t.clone());
        }
        let make = self
            .make_out
            .take()
            .ok_or_else(|| "the connection's writer has gone".to_string())?;
        let t = make();
        self.pushes = Some(t.clone());
        Ok(t)
    }

    /// Asynchronous consume's requests: start (answered by its pusher, before its first
    /// push), credit (no answer), settle, stop (answered behind what was pushed).
    pub(super) async fn consume_request(&mut self, id: u32, req: Request) -> Flow {
        let resp = match req {
            Request::Consume(_)
            | Request::Credit { .. }
            | Request::Settle { .. }
            | Request::ConsumeStop { .. }
                if self.version < sealmq_wire::V_CONSUME =>
            {
                Response::Err {
                    reason: ReasonCode::UnexpectedError.code(),
                    detail: "asynchronous consume needs protocol version 2".into(),
                }
            }
            Request::Credit { tag, n } => {
                self.consumers.credit(tag, n);
                return Flow::Silent;
            }
            Request::Consume(ref c) => match self.handles.get(&c.hobj).cloned() {
                Some(h) => {
                    let out = match self.pushes() {
                        Ok(o) => o,
                        Err(detail) => {
                            return Flow::Reply(Response::Err {
                                reason: ReasonCode::ResourceProblem.code(),
                                detail,
                            });
                        }
                    };
                    let src = crate::consume::Source {
                        qm: &self.qm,
                        conn: &self.conn,
                        hobj: h,
                        topic: self.topics.get(&c.hobj).cloned(),
                        out,
                        intercept: if self.intercept {
                            self.protector.clone()
                        } else {
                            None
                        },
                        strip_properties: self.version < sealmq_wire::V_PROPERTIES,
                        strip_more: self.version < sealmq_wire::V_MD_MORE,
                        recent: self.recent.clone(),
                    };
                    // The pusher sends the answer before its first push (docs/wire.md:
                    // answered Ok, then the pushes begin).
                    match self.consumers.start(src, c.clone(), id) {
                        Ok(()) => return Flow::Silent,
                        Err((reason, detail)) => Response::Err { reason, detail },
                    }
                }
                None => Response::Err {
                    reason: ReasonCode::HobjError.code(),
                    detail: format!("object handle {} is not open", c.hobj),
                },
            },
            Request::Settle { tag, batch, commit } => {
                let (reason, detail) = self.settle(tag, batch, commit).await;
                Response::Settled {
                    tag,
                    batch,
                    reason,
                    detail,
                }
            }
            Request::ConsumeStop { tag } => match self.consumers.stop(tag) {
                Some(ended) => {
                    // Its pusher may be waiting for room in this connection's channel, which
                    // only this loop empties: its end is waited for on the pool.
                    if let Some(e) = ended {
                        let _ = self.pool(move || e.wait()).await;
                    }
                    self.consumers.forget_idle(tag);
                    // Everything the consumer pushed goes before the answer.
                    return self.behind_pushes(Response::Ok);
                }
                None => Response::Err {
                    reason: ReasonCode::UnexpectedError.code(),
                    detail: format!("no consumer {tag}"),
                },
            },
            other => Response::Err {
                reason: ReasonCode::UnexpectedError.code(),
                detail: format!("{other:?} is not an asynchronous consume request"),
            },
        };
        Flow::Reply(resp)
    }

    /// An answer that promises nothing more is pushed before it (docs/wire.md: ConsumeStop,
    /// the Close of a handle with consumers) goes behind the pushes when there are any.
    pub(super) fn behind_pushes(&self, resp: Response) -> Flow {
        if self.pushes.is_some() {
            Flow::Behind(resp)
        } else {
            Flow::Reply(resp)
        }
    }

    /// Answer `id` as a frame for the pushers' channel, with the channel (`Flow::Behind`): the
    /// channel keeps the order of what the pushers sent; the connection's own answers do not
    /// pass through it. None: no pusher ever started (answer as any other).
    pub(crate) fn behind(
        &self,
        id: u32,
        resp: &Response,
    ) -> Option<(crate::consume::PushTx, Vec<u8>)> {
        let tx = self.pushes.clone()?;
        let mut frame = Vec::new();
        sealmq_wire::write_response_unflushed(&mut frame, id, resp).ok()?;
        Some((tx, frame))
    }

    /// A pushed batch settled: committed on the loop (each unit of work's commit record
    /// appended, then their log force awaited together), or backed out on the pool (a
    /// message past its backout threshold moves by a durable record).
    async fn settle(&mut self, tag: u32, batch: u32, commit: bool) -> (u32, String) {
        let (s, conns) = match self.consumers.take_batch(tag, batch) {
            Ok(x) => x,
            Err(refused) => return refused,
        };
        let (conns, r) = if commit {
            let r = commit_all(&self.qm, &conns).await;
            (conns, r)
        } else {
            let backed = self
                .pool(move || {
                    let mut r = Ok(());
                    for c in &conns {
                        let done = c.backout();
                        if r.is_ok() {
                            r = done;
                        }
                    }
                    (conns, r)
                })
                .await;
            match backed {
                Ok(x) => x,
                // The units of work went with the pool's task, backed out as they dropped.
                Err(_) => (Vec::new(), Ok(())),
            }
        };
        self.consumers.settled(tag, s, conns, r)
    }
}

/// Commits every unit of work of a batch: their commit records appended first, their log
/// force awaited after (one group commit), holding no thread. The first failure is the
/// answer; the others still end.
async fn commit_all(
    qm: &sealmq_engine::QueueManager,
    conns: &[sealmq_engine::Connection],
) -> sealmq_engine::MqResult<()> {
    use sealmq_engine::mqi::CommitStep;
    let steps: Vec<CommitStep> = conns.iter().map(|c| c.commit_step()).collect();
    let mut r = Ok(());
    for (c, step) in conns.iter().zip(steps) {
        let done = match step {
            CommitStep::Done(d) => d,
            CommitStep::Durable(d) => {
                let waited = qm.durable(d.ticket()).await;
                c.commit_durable(d, waited)
            }
        };
        if r.is_ok() {
            r = done;
        }
    }
    r
}

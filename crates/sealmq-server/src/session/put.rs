//! MQPUT and MQPUT1 on the event loop: the engine's step never blocks, and a persistent put
//! outside a unit of work awaits its log force holding no thread. Under QM-side interception
//! the message is protected on the blocking pool first; sent as it is, plaintext to a
//! protected queue is refused (issue 42).

use super::{Session, no_handle};
use crate::icpt::security;
use crate::wiremap::err;
use sealmq_engine::intercept;
use sealmq_engine::mqi::{PutOptions, PutStep};
use sealmq_engine::{Md, MqResult};
use sealmq_types::ReasonCode;
use sealmq_wire::Response;

impl Session {
    /// MQPUT (through a topic opened to publish: a publication).
    pub(super) async fn put(
        &mut self,
        hobj: u32,
        mut md: Md,
        payload: Vec<u8>,
        sync: bool,
    ) -> Response {
        if let Some(topic) = self.publishers.get(&hobj).cloned() {
            return self.publish(topic, md, payload, sync, false).await;
        }
        let Some(h) = self.handles.get(&hobj).cloned() else {
            return no_handle(hobj);
        };
        let payload = match self.stored_form(&h.name, &md, payload).await {
            Ok(p) => p,
            Err(refused) => return refused,
        };
        let step = self.conn.put_step(&h, &mut md, &payload, pmo(sync));
        self.put_done(step, md).await
    }

    /// MQPUT1.
    pub(super) async fn put1(
        &mut self,
        name: String,
        mut md: Md,
        payload: Vec<u8>,
        sync: bool,
    ) -> Response {
        let payload = match self.stored_form(&name, &md, payload).await {
            Ok(p) => p,
            Err(refused) => return refused,
        };
        let step = self.conn.put1_step(&name, &mut md, &payload, pmo(sync));
        self.put_done(step, md).await
    }

    /// Version 7's put1: refused with 2041, nothing put, when the queue manager's policies
    /// changed since the application read the one it protected with (it reads it again).
    pub(super) async fn put1_at(
        &mut self,
        name: String,
        md: Md,
        payload: Vec<u8>,
        sync: bool,
        epoch: u64,
    ) -> Response {
        if self.version < sealmq_wire::V_POLICY_EPOCH {
            return super::protocol_error("Put1At before wire version 7");
        }
        if epoch != self.qm.policy_epoch() {
            return Response::Err {
                reason: ReasonCode::ObjectChanged.code(),
                detail: format!(
                    "the queue manager's security policies changed since the policy of '{name}' \
                     was read: read it again"
                ),
            };
        }
        self.put1(name, md, payload, sync).await
    }

    /// The bytes to store for a put to `name`: protected under its policy when the queue
    /// manager intercepts (on the pool; never protected twice), otherwise as sent, which a
    /// protected queue accepts only protected. `Err` is the refusal (2063).
    async fn stored_form(
        &mut self,
        name: &str,
        md: &Md,
        payload: Vec<u8>,
    ) -> Result<Vec<u8>, Response> {
        if !self.intercept {
            intercept::check_as_sent(&self.qm, name, &payload).map_err(security)?;
            return Ok(payload);
        }
        let (qm, protector, name, md) = (
            self.qm.clone(),
            self.protector.clone(),
            name.to_string(),
            md.clone(),
        );
        let protected = self
            .pool(move || {
                let p = intercept::protect(&qm, protector.as_deref(), &name, &md, &payload);
                p.map(|stored| stored.ok_or(payload))
            })
            .await?;
        match protected.map_err(security)? {
            Ok(stored) => {
                self.stored = Some(stored.len() as u64);
                Ok(stored)
            }
            // No policy: stored as sent.
            Err(payload) => Ok(payload),
        }
    }

    /// The put's answer once its step is done: a persistent message outside a unit of work
    /// turns visible when its record is durable, awaited here.
    async fn put_done(&mut self, step: MqResult<PutStep>, md: Md) -> Response {
        let done = match step {
            Ok(PutStep::Done) => Ok(()),
            Ok(PutStep::Durable(d)) => {
                let waited = self.qm.durable(d.ticket()).await;
                self.conn.put_durable(d, waited)
            }
            Err(e) => Err(e),
        };
        match done {
            Ok(()) => Response::Put { md },
            Err(e) => err(e),
        }
    }
}

fn pmo(syncpoint: bool) -> PutOptions {
    PutOptions {
        syncpoint,
        ..Default::default()
    }
}

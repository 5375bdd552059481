//! What an application asks of a name and tells about a message: the policy of a queue or a
//! topic (its recipients and signers, for the application's own protection), and a message
//! that failed a protection check in the application (moved to the protection error queue).

use super::{Session, no_handle};
use crate::wiremap::err;
use sealmq_engine::authority::{AuthObj, auth};
use sealmq_types::ReasonCode;
use sealmq_types::sync::lock;
use sealmq_wire::{Request, Response};

impl Session {
    /// Policy and ProtectionError.
    pub(super) async fn inquire_request(&mut self, req: Request) -> Response {
        match req {
            Request::Policy { name } => self.policy(&name),
            Request::ProtectionError {
                hobj,
                md,
                payload,
                check,
                detail,
                signer,
                syncpoint,
            } => {
                let failure = sealmq_engine::dlh::ProtectionFailure {
                    check,
                    detail,
                    signer,
                };
                self.protection_error(hobj, failure, md, payload, syncpoint)
                    .await
            }
            other => Response::Err {
                reason: ReasonCode::UnexpectedError.code(),
                detail: format!("{other:?} is not an inquiry"),
            },
        }
    }

    /// Whether IBM's AMS interceptor, for this connection's principal, is told the policy of
    /// `queue` (`net/evloop/mq/amspolicy.rs`): a principal that may inquire on it, put to it, or
    /// get or browse from it (a getter needs the policy to check what it reads). A policy names
    /// its recipients and signers, so no other principal learns it.
    pub(crate) fn may_learn_policy_of(&self, queue: &str) -> bool {
        [auth::INQ, auth::PUT, auth::GET, auth::BROWSE]
            .into_iter()
            .any(|a| {
                self.qm
                    .check_authority(&self.conn.user, AuthObj::Queue, queue, a)
                    .is_ok()
            })
    }

    /// A policy names its recipients and signers: told only to a principal that may inquire
    /// on the queue, or put to it (put1 learns the policy this way).
    fn policy(&self, name: &str) -> Response {
        let user = &self.conn.user;
        // The epoch a queue's policy was read at (wire version 7).
        let mut at = None;
        // A topic's (version 4: `topic://STRING`): told to a principal that may publish or
        // subscribe there.
        let (may, needs, what, policy) = match name.strip_prefix(sealmq_wire::TOPIC_PREFIX) {
            Some(topic) => {
                let may = |a| self.qm.check_topic_authority(user, topic, a).is_ok();
                let what = format!("topic '{topic}'");
                (
                    may(auth::PUB) || may(auth::SUB),
                    "PUB or SUB",
                    what,
                    self.qm.topic_policy(topic),
                )
            }
            None => {
                let may = |a| {
                    self.qm
                        .check_authority(user, AuthObj::Queue, name, a)
                        .is_ok()
                };
                let what = format!("'{name}'");
                let (policy, epoch) = self.qm.policy_at(name);
                at = Some(epoch);
                (
                    may(auth::INQ) || may(auth::PUT),
                    "INQ or PUT on it",
                    what,
                    policy,
                )
            }
        };
        if !may {
            return Response::Err {
                reason: ReasonCode::NotAuthorized.code(),
                detail: format!("'{user}' may not read the policy of {what}: it needs {needs}"),
            };
        }
        let policy = policy
            .map(|p| sealmq_engine::policies::encode(&p))
            .unwrap_or_default();
        match at {
            // A queue's, for a client that caches it (wire version 7).
            Some(epoch) if self.version >= sealmq_wire::V_POLICY_EPOCH => {
                Response::PolicyAt { policy, epoch }
            }
            _ => Response::Policy { policy },
        }
    }

    /// A message got through `hobj` failed a protection check in the application: moved to
    /// the protection error queue (on the pool: its record is durable) — only for a message
    /// this handle really got, so nobody puts forged entries there.
    async fn protection_error(
        &mut self,
        hobj: u32,
        failure: sealmq_engine::dlh::ProtectionFailure,
        md: sealmq_engine::Md,
        payload: Vec<u8>,
        syncpoint: bool,
    ) -> Response {
        let Some(h) = self.handles.get(&hobj).cloned() else {
            return no_handle(hobj);
        };
        if !lock(&self.recent).take(hobj, &md.msg_id, &payload) {
            return Response::Err {
                reason: ReasonCode::NotAuthorized.code(),
                detail: format!(
                    "a protection error may be reported only for a message handle {hobj} got"
                ),
            };
        }
        let conn = self.conn.clone();
        self.on_pool(move || {
            conn.put_protection_error(&h.name, failure, &md, &payload, syncpoint)
                .map(|_| Response::Ok)
                .unwrap_or_else(err)
        })
        .await
    }
}

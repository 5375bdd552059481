//! A link the application sends on to a topic (a JMS publisher, or a plain AMQP client
//! sending to `topic://...`): each transfer is a publication (issue 28, docs/pubsub.md), in
//! the transaction that posted it when there is one, else on its own; accepted once
//! delivered to every subscription it reaches, rejected with the MQ reason otherwise. On a
//! channel with INTERCEPT(YES) a publication on a topic with a policy is protected once by the
//! queue manager before it is delivered.

use crate::link::{Ctx, Intercept, amqp_error, blocking};
use crate::mapping;
use crate::status::timed;
use fe2o3_amqp::Receiver;
use fe2o3_amqp::types::definitions::{AmqpError, Error};
use fe2o3_amqp::types::messaging::Body;
use fe2o3_amqp::types::primitives::Value;
use sealmq_engine::mqi::PutOptions;
use sealmq_engine::{MqError, intercept};
use sealmq_types::ReasonCode;

/// Serves a link the application publishes on to `topic`; `made`: the temporary topic this
/// link keeps (gone as soon as the link is, before its detach is answered).
pub async fn incoming_topic(
    ctx: Ctx,
    mut r: Receiver,
    topic: String,
    made: Option<crate::temptopic::TempTopic>,
) {
    let _shown = ctx.client.link(format!("PUB:{topic}"));
    while let Ok(d) = r.recv::<Body<Value>>().await {
        let posted = ctx.txns.posted(*d.delivery_id());
        let (md, payload) = match mapping::to_mq(d.message()) {
            Ok(x) => x,
            Err(why) => {
                if let Some(p) = posted {
                    p.done(Err(format!("a transfer could not be read: {why}")));
                }
                let _ = r
                    .reject(&d, Error::new(AmqpError::DecodeError, why, None))
                    .await;
                continue;
            }
        };
        let uow = posted.as_ref().map(|p| p.uow.clone());
        let (mq, t, tally) = (ctx.mq.clone(), topic.clone(), ctx.tally.clone());
        let icpt = ctx.icpt.clone();
        let done = blocking(move || {
            let mut md = md;
            // Under interception: protected once, under the topic's policy, for every
            // subscriber (a 2063 when it cannot be).
            let payload = match &icpt {
                Some(Intercept(p)) => {
                    match intercept::protect_topic(mq.qm(), p.as_deref(), &t, &md, &payload) {
                        Ok(Some(stored)) => stored,
                        Ok(None) => payload,
                        Err(detail) => {
                            return Err(MqError::new(ReasonCode::SecurityError, detail));
                        }
                    }
                }
                None => {
                    // Sent as it is: plaintext on a protected topic is refused (issue 42).
                    if let Err(detail) = intercept::check_topic_as_sent(mq.qm(), &t, &payload) {
                        return Err(MqError::new(ReasonCode::SecurityError, detail));
                    }
                    payload
                }
            };
            let pmo = PutOptions {
                syncpoint: uow.is_some(),
                ..Default::default()
            };
            let on = uow.as_deref().unwrap_or(&mq);
            let (r, cpu) = timed(tally.as_ref(), || {
                on.publish(&t, &mut md, &payload, pmo, false)
            });
            if let Some(tl) = &tally {
                tl.call("publish", r.is_ok(), payload.len() as u64, cpu);
            }
            r
        })
        .await;
        let Some(done) = done else { break };
        match (done, posted) {
            (Ok(_), p) => {
                if let Some(p) = p {
                    p.done(Ok(()));
                }
                ctx.client.received();
                let _ = r.accept(&d).await;
            }
            (Err(e), p) => {
                if let Some(p) = p {
                    p.done(Err(format!("a publication failed: {e}")));
                }
                let _ = r.reject(&d, amqp_error(&e)).await;
            }
        }
    }
    drop(made);
    let _ = r.close().await;
}

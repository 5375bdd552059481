//! Links of an AMQP connection: a link the application sends on puts to the queue its target
//! names; a link it receives on gets from the queue its source names, each delivery in a unit
//! of work of its own, settled by the application's outcome: accepted commits, released and
//! modified back out (the backout count is the next delivery-count), rejected moves the
//! message to the dead-letter queue. A link or connection that ends backs out what it had not
//! settled.

use crate::mapping;
use fe2o3_amqp::types::definitions::{AmqpError, Error};
use fe2o3_amqp::types::messaging::{Body, Outcome};
use fe2o3_amqp::types::primitives::Value;
use fe2o3_amqp::{Receiver, Sender};
use sealmq_engine::mqi::{Browse, GetOptions, OpenOptions, PutOptions};
use sealmq_engine::{Connection, MqError};
use sealmq_types::ReasonCode;
use std::sync::Arc;
use std::time::Duration;

/// How long a receiving link's get waits before it looks whether the link is still there.
const GET_WAIT: Duration = Duration::from_millis(500);

/// An MQ error as the AMQP description carries it: `MQRC <code> <name>: <detail>`.
pub fn describe(e: &MqError) -> String {
    format!("MQRC {} {}: {}", e.reason.code(), e.reason.name(), e.detail)
}

/// The AMQP error condition of an MQ reason code, with the code and text in the description.
pub fn amqp_error(e: &MqError) -> Error {
    let cond = match e.reason {
        ReasonCode::NotAuthorized => AmqpError::UnauthorizedAccess,
        ReasonCode::UnknownObjectName => AmqpError::NotFound,
        ReasonCode::QFull | ReasonCode::QSpaceNotAvailable | ReasonCode::ResourceProblem => {
            AmqpError::ResourceLimitExceeded
        }
        ReasonCode::PutInhibited | ReasonCode::GetInhibited | ReasonCode::ObjectInUse => {
            AmqpError::NotAllowed
        }
        ReasonCode::MsgTooBigForQ | ReasonCode::MsgTooBigForQMgr => {
            AmqpError::ResourceLimitExceeded
        }
        _ => AmqpError::InternalError,
    };
    Error::new(cond, describe(e), None)
}

fn address(a: Option<&String>) -> Option<String> {
    a.map(|s| s.trim().to_string()).filter(|s| !s.is_empty())
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    tokio::task::spawn_blocking(f).await.ok()
}

/// Opens the queue a link's address names, as the connection's principal; the AMQP error to
/// close the link with when there is none or it may not be opened (`None`: the runtime is
/// ending).
async fn open_queue(
    mq: &Arc<Connection>,
    address: Option<String>,
    opts: OpenOptions,
    missing: (AmqpError, &str),
) -> Result<(String, Arc<sealmq_engine::Hobj>), Option<Error>> {
    let Some(name) = address else {
        return Err(Some(Error::new(missing.0, missing.1.to_string(), None)));
    };
    let (c, n) = (mq.clone(), name.clone());
    match blocking(move || c.open(&n, opts)).await {
        Some(Ok(h)) => Ok((name, Arc::new(h))),
        Some(Err(e)) => Err(Some(amqp_error(&e))),
        None => Err(None),
    }
}

/// The application sends on this link: each transfer is put to the target queue, and
/// accepted once the put is done (durable for a durable message); a put that fails is
/// rejected with the reason.
pub async fn incoming(mq: Arc<Connection>, mut r: Receiver) {
    let target = address(r.target().as_ref().and_then(|t| t.address.as_ref()));
    let missing = (AmqpError::InvalidField, "the target must name a queue");
    let h = match open_queue(&mq, target, OpenOptions::output(), missing).await {
        Ok((_, h)) => h,
        Err(e) => {
            if let Some(e) = e {
                let _ = r.close_with_error(e).await;
            }
            return;
        }
    };
    while let Ok(d) = r.recv::<Body<Value>>().await {
        let mapped = mapping::to_mq(d.message());
        let (mut md, payload) = match mapped {
            Ok(x) => x,
            Err(why) => {
                let e = Error::new(AmqpError::DecodeError, why, None);
                let _ = r.reject(&d, e).await;
                continue;
            }
        };
        let (c, h2) = (mq.clone(), h.clone());
        let put = blocking(move || c.put(&h2, &mut md, &payload, PutOptions::default())).await;
        let _ = match put {
            Some(Ok(_)) => r.accept(&d).await,
            Some(Err(e)) => r.reject(&d, amqp_error(&e)).await,
            None => break,
        };
    }
    let _ = r.close().await;
    let c = mq.clone();
    blocking(move || c.close(&h)).await;
}

/// What the application said of a delivery.
enum Settle {
    Commit,
    Backout,
    DeadLetter,
}

/// Temporary queues made for this session's dynamic receiving links (JMS temporary queues,
/// reply-to), with their handles until their link takes them: closing it deletes the queue.
pub type Dynamic = Arc<std::sync::Mutex<std::collections::HashMap<String, sealmq_engine::Hobj>>>;

/// The source of a dynamic receiving link: a temporary dynamic queue from the channel's
/// TMPMODEL (default SYSTEM.DEFAULT.MODEL.QUEUE) named TMPQPRFX (default `AMQP.*`), opened as
/// the connection's principal; `None` (the attach is refused) when it may not be made.
pub fn dynamic_source(
    mq: &Connection,
    dynamic: &Dynamic,
    model: &str,
    prefix: &str,
    mut source: fe2o3_amqp::types::messaging::Source,
) -> Option<fe2o3_amqp::types::messaging::Source> {
    match mq.open_dynamic(model, OpenOptions::input(), prefix) {
        Ok(h) => {
            let name = h.resolved.clone();
            dynamic
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(name.clone(), h);
            source.address = Some(name);
            Some(source)
        }
        Err(e) => {
            tracing::warn!("a dynamic AMQP source was refused: {e}");
            None
        }
    }
}

/// The application receives on this link: each message is got from the source queue in a
/// unit of work of its own and sent; its outcome settles it. A source with
/// `distribution-mode copy` browses instead: copies, nothing settled.
pub async fn outgoing(mq: Arc<Connection>, mut s: Sender, dynamic: Dynamic) {
    // A filter (a JMS selector, say) is never ignored: delivering what it would have left out
    // is worse than refusing the link.
    if s.source()
        .as_ref()
        .is_some_and(|src| src.filter.as_ref().is_some_and(|f| !f.is_empty()))
    {
        let e = Error::new(
            AmqpError::NotImplemented,
            "source filters (JMS selectors) are not provided yet".to_string(),
            None,
        );
        let _ = s.close_with_error(e).await;
        return;
    }
    let source = address(s.source().as_ref().and_then(|t| t.address.as_ref()));
    let copy = s.source().as_ref().is_some_and(|src| {
        src.distribution_mode == Some(fe2o3_amqp::types::messaging::DistributionMode::Copy)
    });
    let made = source
        .as_ref()
        .and_then(|n| dynamic.lock().unwrap_or_else(|p| p.into_inner()).remove(n));
    let opts = if copy {
        OpenOptions::browse()
    } else {
        OpenOptions::input()
    };
    let missing = (AmqpError::InvalidField, "the source must name a queue");
    let opened = match (made, source) {
        (Some(h), Some(n)) => Ok((n, Arc::new(h))),
        (_, source) => open_queue(&mq, source, opts, missing).await,
    };
    let (name, h) = match opened {
        Ok(x) => x,
        Err(e) => {
            if let Some(e) = e {
                let _ = s.close_with_error(e).await;
            }
            return;
        }
    };
    let twin = Arc::new(mq.uow_twin());
    let mut failed = None;
    loop {
        let (t, h2) = (twin.clone(), h.clone());
        let job = tokio::task::spawn_blocking(move || {
            t.get(
                &h2,
                GetOptions {
                    syncpoint: !copy,
                    wait: Some(GET_WAIT),
                    browse: if copy { Browse::Next } else { Browse::None },
                    ..Default::default()
                },
            )
        });
        tokio::pin!(job);
        let got = tokio::select! {
            r = &mut job => match r {
                Ok(g) => g,
                Err(_) => break,
            },
            _ = s.on_detach() => {
                // The link went while a get waited: whatever it took goes back.
                let _ = job.await;
                let t = twin.clone();
                blocking(move || t.backout()).await;
                break;
            }
        };
        let got = match got {
            Ok(g) => g,
            Err(e) if e.reason == ReasonCode::NoMsgAvailable => continue,
            Err(e) => {
                failed = Some(amqp_error(&e));
                break;
            }
        };
        let (md, payload) = (got.md.clone(), got.payload.clone());
        let msg = mapping::to_amqp(&got.md, got.payload);
        let how = match s.send(msg).await {
            // A copy has nothing to settle.
            Ok(_) if copy => continue,
            Ok(Outcome::Accepted(_)) => Settle::Commit,
            Ok(Outcome::Rejected(_)) => Settle::DeadLetter,
            Ok(_) => Settle::Backout,
            Err(_) => {
                let t = twin.clone();
                blocking(move || t.backout()).await;
                break;
            }
        };
        let (t, q) = (twin.clone(), name.clone());
        blocking(move || {
            let r = match how {
                Settle::Commit => t.commit(),
                Settle::Backout => t.backout(),
                Settle::DeadLetter => {
                    // The dead-letter header's reason: the consumer refused it.
                    let why = MqError::new(
                        ReasonCode::BackedOut,
                        "rejected by the AMQP application".to_string(),
                    );
                    match t.put_dead_letter(&why, &q, "", &md, &payload, true) {
                        Ok(()) => t.commit(),
                        Err(e) => {
                            // No dead-letter queue: the message stays where it was.
                            let _ = t.backout();
                            Err(e)
                        }
                    }
                }
            };
            if let Err(e) = r {
                tracing::warn!(queue = %q, "AMQP delivery not settled: {e}");
            }
        })
        .await;
    }
    let _ = match failed {
        Some(e) => s.close_with_error(e).await,
        None => s.close().await,
    };
    let c = mq.clone();
    blocking(move || c.close(&h)).await;
}

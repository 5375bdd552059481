//! What the links of an AMQP connection share: a link the application sends on
//! ([`crate::incoming`]) puts to the queue its target names; a link it receives on
//! ([`crate::outgoing`]) gets from the queue its source names. Opening queues, errors as AMQP
//! error conditions, selectors, temporary queues, interception.

pub(crate) use crate::common::{Caps, amqp_error, blocking, describe};
use fe2o3_amqp::types::definitions::{AmqpError, Error};
use sealmq_engine::mqi::OpenOptions;
use sealmq_engine::{Connection, MqError};
use sealmq_mqi::selector::Selector;
use sealmq_types::ReasonCode;
pub(crate) use sealmq_types::sync::lock;
use std::sync::Arc;

pub(crate) fn address(a: Option<&String>) -> Option<String> {
    a.map(|s| s.trim().to_string()).filter(|s| !s.is_empty())
}

/// Opens the queue a link's address names, as the connection's principal; the AMQP error to
/// close the link with when there is none or it may not be opened (`None`: the runtime is
/// ending).
pub(crate) async fn open_queue(
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

/// QM-side interception on a connection of a channel with INTERCEPT(YES): the keystore's
/// protector when the connection started (`None`: the queue manager has no keystore, and puts
/// to and gets from queues with a policy fail with 2063).
#[derive(Clone)]
pub struct Intercept(pub Option<Arc<sealmq_protect::Protector>>);

/// What a link's task has of its connection.
#[derive(Clone)]
pub struct Ctx {
    /// The connection to the queue manager, as the connection's principal.
    pub mq: Arc<Connection>,
    /// The session's temporary queues not yet taken by their link.
    pub dynamic: Dynamic,
    /// Why the last temporary queue was not made.
    pub refused: Refused,
    /// QM-side interception (INTERCEPT(YES)).
    pub icpt: Option<Intercept>,
    /// Its figures for DISPLAY CHSTATUS.
    pub client: Arc<crate::status::Client>,
    /// MQI accounting, when ACCTMQI is ON.
    pub tally: Option<Arc<dyn crate::status::Tally>>,
    /// The session's transactions.
    pub txns: Arc<crate::txn::Txns>,
    /// What the connection's receiving links hold unsettled (crate::held).
    pub held: Arc<crate::held::Held>,
}

/// The 2063 (MQRC_SECURITY_ERROR) a failed protection or check is reported as.
pub(crate) fn security_error(detail: String) -> Error {
    amqp_error(&MqError::new(ReasonCode::SecurityError, detail))
}

/// A dynamic link the application receives on whose source asks for a temporary topic is
/// refused with a clear error: temporary topics are made by a link it sends on (JMS
/// `createTemporaryTopic`, crate::temptopic).
fn dynamic_source_refusal() -> Error {
    Error::new(
        AmqpError::NotImplemented,
        "a temporary topic is made by a link that sends (a dynamic target, as JMS \
         createTemporaryTopic does), not by a dynamic source: attach one, then receive from \
         the address it is given"
            .to_string(),
        None,
    )
}

/// The topic string a terminus names when it is a topic (issue 28): an address with the
/// capability `topic` (a JMS Topic on Qpid JMS) or `temporary-topic` (a JMS TemporaryTopic),
/// or an address `topic://STRING` (MQ's and other brokers' convention for plain AMQP
/// clients). `None`: a queue.
pub fn topic_of(caps: Option<&Caps>, address: Option<&str>) -> Option<String> {
    let a = address?.trim();
    if let Some(t) = a.strip_prefix("topic://") {
        return Some(t.to_string());
    }
    caps?
        .iter()
        .any(|c| c.as_str() == "topic" || c.as_str() == crate::temptopic::CAPABILITY)
        .then(|| a.to_string())
}

/// The topic a link the application sends on publishes to (its target's).
pub fn target_topic(t: Option<&fe2o3_amqp::types::messaging::Target>) -> Option<String> {
    let t = t?;
    topic_of(t.capabilities.as_ref(), t.address.as_deref())
}

/// The topic an attach of a link the application sends on names, read from the attach (the
/// acceptor keeps no remote capabilities on the link).
pub fn attach_publish_topic(attach: &fe2o3_amqp::types::performatives::Attach) -> Option<String> {
    use fe2o3_amqp::types::definitions::Role;
    use fe2o3_amqp::types::messaging::TargetArchetype;
    match (&attach.role, attach.target.as_deref()) {
        (Role::Sender, Some(TargetArchetype::Target(t))) => target_topic(Some(t)),
        _ => None,
    }
}

/// A link the application sends on to `topic` is refused before its attach is answered when
/// its principal may not publish there (PUB up the topic tree, as MQ checks at MQOPEN), or
/// publish/subscribe is disabled.
pub fn publish_early(mq: &Connection, topic: &str) -> Result<(), Error> {
    let qm = mq.qm();
    qm.check_pubsub_enabled()
        .and_then(|()| {
            qm.check_topic_authority(&mq.user, topic, sealmq_engine::authority::auth::PUB)
        })
        .map_err(|e| amqp_error(&e))
}

/// The refusal of a link whose remote terminus (the target of a link the application sends
/// on, the source of one it receives on) is a temporary topic it may not use, read from its
/// attach (the acceptor does not keep the remote terminus's capabilities on the link): one
/// not living, another connection's to receive from, or a dynamic source.
pub fn attach_topic(
    mq: &Connection,
    attach: &fe2o3_amqp::types::performatives::Attach,
) -> Option<Error> {
    use crate::temptopic::{is_temporary, refusal};
    use fe2o3_amqp::types::definitions::Role;
    use fe2o3_amqp::types::messaging::TargetArchetype;
    match attach.role {
        Role::Sender => match attach.target.as_deref() {
            Some(TargetArchetype::Target(t)) if is_temporary(t.capabilities.as_ref()) => {
                match (t.dynamic, address(t.address.as_ref())) {
                    (true, _) => None,
                    (false, a) => refusal(mq, a.as_deref().unwrap_or_default(), false),
                }
            }
            _ => None,
        },
        Role::Receiver => match attach.source.as_deref() {
            Some(s) if is_temporary(s.capabilities.as_ref()) => {
                match (s.dynamic, address(s.address.as_ref())) {
                    (true, _) => Some(dynamic_source_refusal()),
                    (false, a) => refusal(mq, a.as_deref().unwrap_or_default(), true),
                }
            }
            _ => None,
        },
    }
}

/// A link's queue opened when its attach is read, before it is answered.
pub type Opened = (String, Arc<sealmq_engine::Hobj>);

/// Opens the queue an attach names (not a dynamic one) as the connection's principal before
/// the attach is answered — PUT for a link the application sends on; GET, or BROWSE with
/// `distribution-mode copy`, for one it receives on — and checks a receiving link's filter,
/// so that a refusal (2035, an unknown queue, a bad selector) is answered as AMQP refuses an
/// attach. `Ok(None)`: nothing to open yet (dynamic, or no address: the link says why).
pub async fn open_early(
    mq: &Arc<Connection>,
    attach: &fe2o3_amqp::types::performatives::Attach,
) -> Result<Option<Opened>, Error> {
    use fe2o3_amqp::types::definitions::Role;
    use fe2o3_amqp::types::messaging::{DistributionMode, TargetArchetype};
    let (name, opts) = match attach.role {
        Role::Sender => match attach.target.as_deref() {
            // A topic: publications, no queue to open (incoming.rs).
            Some(TargetArchetype::Target(t)) if target_topic(Some(t)).is_some() => {
                return Ok(None);
            }
            Some(TargetArchetype::Target(t)) if !t.dynamic => {
                (address(t.address.as_ref()), OpenOptions::output())
            }
            _ => return Ok(None),
        },
        Role::Receiver => match attach.source.as_deref() {
            Some(src) if !src.dynamic => {
                if let Some(f) = &src.filter {
                    selector_of(f)?;
                }
                let opts = if src.distribution_mode == Some(DistributionMode::Copy) {
                    OpenOptions::browse()
                } else {
                    OpenOptions::input()
                };
                (address(src.address.as_ref()), opts)
            }
            _ => return Ok(None),
        },
    };
    let Some(name) = name else { return Ok(None) };
    match open_queue(
        mq,
        Some(name),
        opts,
        (AmqpError::InvalidField, "the link must name a queue"),
    )
    .await
    {
        Ok(o) => Ok(Some(o)),
        Err(Some(e)) => Err(e),
        Err(None) => Err(Error::new(
            AmqpError::InternalError,
            "the channel is ending".to_string(),
            None,
        )),
    }
}

/// The descriptor of a JMS selector filter (AMQP filter registry), by name and by code.
const SELECTOR_NAME: &str = "apache.org:selector-filter:string";
const SELECTOR_CODE: u64 = 0x0000_468C_0000_0004;
/// The descriptor of a no-local filter (a JMS noLocal topic subscriber), by name and by code.
const NO_LOCAL_NAME: &str = "apache.org:no-local-filter:list";
const NO_LOCAL_CODE: u64 = 0x0000_468C_0000_0003;

/// What a source's filter set asks: a JMS selector, and whether the link takes no message
/// its own connection published (JMS noLocal: meaningful on a topic, ignored on a queue as
/// JMS says).
#[derive(Default)]
pub struct Filters {
    pub selector: Option<Selector>,
    pub no_local: bool,
}

/// The JMS selector a source's filter set carries (`None`: an empty set); any other filter,
/// or a selector that does not parse, is the error to refuse the link with.
pub fn selector_of(
    filter: &fe2o3_amqp::types::messaging::FilterSet,
) -> Result<Option<Selector>, Error> {
    filters_of(filter).map(|f| f.selector)
}

/// What a source's filter set asks ([`Filters`]); any filter not provided, or a selector that
/// does not parse, is the error to refuse the link with: a filter is never ignored.
pub fn filters_of(filter: &fe2o3_amqp::types::messaging::FilterSet) -> Result<Filters, Error> {
    use fe2o3_amqp::types::primitives::Value;
    use serde_amqp::descriptor::Descriptor;
    let mut found = Filters::default();
    for (key, v) in filter.iter() {
        let text = match v {
            Value::Described(d)
                if matches!(&d.descriptor, Descriptor::Name(n) if n.0 == NO_LOCAL_NAME)
                    || matches!(&d.descriptor, Descriptor::Code(c) if *c == NO_LOCAL_CODE) =>
            {
                found.no_local = true;
                continue;
            }
            Value::Described(d)
                if matches!(&d.descriptor, Descriptor::Name(n) if n.0 == SELECTOR_NAME)
                    || matches!(&d.descriptor, Descriptor::Code(c) if *c == SELECTOR_CODE) =>
            {
                match &d.value {
                    Value::String(t) => t.clone(),
                    _ => {
                        return Err(Error::new(
                            AmqpError::InvalidField,
                            "a selector filter's value must be a string".to_string(),
                            None,
                        ));
                    }
                }
            }
            _ => {
                return Err(Error::new(
                    AmqpError::NotImplemented,
                    format!(
                        "source filter '{}' is not provided (only JMS selectors, \
                         {SELECTOR_NAME}, and {NO_LOCAL_NAME})",
                        key.0
                    ),
                    None,
                ));
            }
        };
        let sel = Selector::parse(&text).map_err(|why| {
            let e = MqError::new(
                ReasonCode::SelectorSyntaxError,
                format!("selector \"{text}\": {why}"),
            );
            Error::new(AmqpError::InvalidField, describe(&e), None)
        })?;
        found.selector = Some(sel);
    }
    Ok(found)
}

/// Temporary queues made for this session's dynamic links (JMS temporary queues, reply-to),
/// with their handles until their link takes them: closing it deletes the queue.
pub type Dynamic = Arc<std::sync::Mutex<std::collections::HashMap<String, sealmq_engine::Hobj>>>;

/// Why the session's last dynamic link got no temporary queue (2035 without authority on the
/// model queue, say): its link is refused with that reason, not as a link naming no queue.
pub type Refused = Arc<std::sync::Mutex<Option<MqError>>>;

/// The refusal of a link left with no queue: the reason its temporary queue was not made, if
/// that is what happened, else `missing`.
pub(crate) fn no_queue(refused: &Refused, missing: (AmqpError, &str)) -> Error {
    match lock(refused).take() {
        Some(e) => amqp_error(&e),
        None => Error::new(missing.0, missing.1.to_string(), None),
    }
}

/// Makes the temporary dynamic queues of a session's dynamic links — a dynamic source
/// (python-qpid-proton, rhea) or a dynamic target (Qpid JMS temporary queues): from the
/// channel's TMPMODEL (default SYSTEM.DEFAULT.MODEL.QUEUE) named TMPQPRFX (default `AMQP.*`),
/// opened as the connection's principal and kept in `dynamic` until the link takes the
/// handle; the queue lives while that link does, and others open it by name.
#[derive(Clone)]
pub struct Temporaries {
    pub mq: Arc<Connection>,
    pub dynamic: Dynamic,
    pub refused: Refused,
    pub model: String,
    pub prefix: String,
}

impl Temporaries {
    /// A new temporary queue's name, or `None` (the attach is refused) when it may not be made.
    pub fn make(&self) -> Option<String> {
        match self
            .mq
            .open_dynamic(&self.model, OpenOptions::input(), &self.prefix)
        {
            Ok(h) => {
                let name = h.resolved.clone();
                lock(&self.dynamic).insert(name.clone(), h);
                Some(name)
            }
            Err(e) => {
                tracing::warn!("a dynamic AMQP link was refused: {e}");
                *lock(&self.refused) = Some(e);
                None
            }
        }
    }
}

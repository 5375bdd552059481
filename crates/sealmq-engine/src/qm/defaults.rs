//! The default objects every queue manager has, as MQ's `crtmqm` makes them: the system
//! queues, the templates a DEFINE without LIKE copies (SYSTEM.DEFAULT.LOCAL.QUEUE,
//! SYSTEM.DEF.SENDER, ...), the default listener, process and AUTHINFO, the channel
//! initiation queue, and the topic tree's root (SYSTEM.BASE.TOPIC) and template
//! (SYSTEM.DEFAULT.TOPIC) with the subscriptions' model queues. A queue manager created by an older release gains the ones it lacks
//! at its next start; an administrator's changes to them are kept.

use super::*;
use crate::authinfo::{AuthInfoDef, DEFAULT_IDPWOS};
use crate::channels::DEFAULT_SVRCONN;
use crate::services::{
    DEFAULT_LISTENER, DEFAULT_PROCESS, DEFAULT_SERVICE, ListenerDef, ProcessDef, ServiceDef,
};
use crate::topics::{BASE_TOPIC, DEFAULT_TOPIC, TopicDef};

/// The default channel of each type: a DEFINE CHANNEL without LIKE copies it.
pub fn default_channel_name(t: ChlType) -> &'static str {
    match t {
        ChlType::Sdr => "SYSTEM.DEF.SENDER",
        ChlType::Svr => "SYSTEM.DEF.SERVER",
        ChlType::Rcvr => "SYSTEM.DEF.RECEIVER",
        ChlType::Rqstr => "SYSTEM.DEF.REQUESTER",
        ChlType::Svrconn => DEFAULT_SVRCONN,
        ChlType::Amqp => "SYSTEM.DEF.AMQP",
    }
}

impl QueueManager {
    /// Defines each default object that does not exist.
    pub(crate) fn ensure_default_objects(&self) -> MqResult<()> {
        for def in crate::objects::system_queues() {
            if self.queue_def(&def.name).is_err() {
                self.define(def, false)?;
            }
        }
        for t in [
            ChlType::Sdr,
            ChlType::Svr,
            ChlType::Rcvr,
            ChlType::Rqstr,
            ChlType::Svrconn,
            ChlType::Amqp,
        ] {
            let name = default_channel_name(t);
            if self.channel(name).is_none() {
                self.define_channel(ChannelDef::new(name, t), false)?;
            }
        }
        if self.object::<ListenerDef>(DEFAULT_LISTENER).is_none() {
            self.define_object(ListenerDef::new(DEFAULT_LISTENER), false)?;
        }
        if self.object::<ProcessDef>(DEFAULT_PROCESS).is_none() {
            self.define_object(ProcessDef::new(DEFAULT_PROCESS), false)?;
        }
        if self.object::<ServiceDef>(DEFAULT_SERVICE).is_none() {
            self.define_object(ServiceDef::new(DEFAULT_SERVICE), false)?;
        }
        if self.object::<TopicDef>(BASE_TOPIC).is_none() {
            self.define_object(TopicDef::base(), false)?;
        }
        if self.object::<TopicDef>(DEFAULT_TOPIC).is_none() {
            self.define_object(TopicDef::new(DEFAULT_TOPIC), false)?;
        }
        if self.authinfo(DEFAULT_IDPWOS).is_none() {
            self.define_authinfo(AuthInfoDef::new(DEFAULT_IDPWOS))?;
        }
        Ok(())
    }
}

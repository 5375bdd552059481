//! MQSUB with a managed queue (issue 28), as the native protocol and AMQP links make
//! subscriptions: SUB authority up the topic tree, the subscription made (with the retained
//! publications it matches) or resumed, its queue opened for input for the subscriber.

use super::*;
use crate::subs::{DestClass, SubDef, SubType};

/// MQSUB's options beyond the subscription's name, topic, durability and selector.
#[derive(Debug, Clone, Default)]
pub struct SubOptions {
    /// MQSO_NEW_PUBLICATIONS_ONLY: a new subscription is not given the retained publications
    /// it matches, only what is published from now on.
    pub new_only: bool,
    /// A queue of the subscriber's for the copies (MQSUB without MQSO_MANAGED: PUT authority
    /// on it when the subscription is made, GET when it is opened); blank: a managed queue.
    pub dest: String,
}

/// Whether a subscription is made, resumed, or either (a JMS durable subscriber attaches the
/// same way both times).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubOpen {
    Create,
    Resume,
    CreateOrResume,
}

impl Connection {
    /// Makes or resumes subscription `name` (blank, non-durable: named by the queue manager)
    /// to `topic` and opens its managed queue for input. A durable subscription resumed with
    /// another topic string or selector (a JMS application changing its subscriber) is made
    /// again, as JMS requires.
    pub fn subscribe(
        &self,
        name: &str,
        topic: &str,
        durable: bool,
        selector: &str,
        how: SubOpen,
    ) -> MqResult<(SubDef, Hobj)> {
        self.subscribe_with(name, topic, durable, selector, how, SubOptions::default())
    }

    /// As [`Connection::subscribe`], with MQSUB's further options ([`SubOptions`]).
    pub fn subscribe_with(
        &self,
        name: &str,
        topic: &str,
        durable: bool,
        selector: &str,
        how: SubOpen,
        o: SubOptions,
    ) -> MqResult<(SubDef, Hobj)> {
        self.check_running()?;
        let dest = o.dest.trim();
        let existing = (!name.is_empty()).then(|| self.qm.sub(name)).flatten();
        let existing = match (existing, how) {
            (Some(s), SubOpen::CreateOrResume)
                if s.topicstr != topic
                    || s.selector != selector
                    || !s.durable
                    || (!dest.is_empty() && s.dest != dest) =>
            {
                self.own(&s)?;
                self.qm.delete_sub(&s.name)?;
                None
            }
            (e, _) => e,
        };
        // Whether this call made the subscription (then a failure below takes it away again,
        // durable or not: nothing is left the subscriber did not get).
        let made = existing.is_none();
        let sub = match (existing, how) {
            (None, SubOpen::Resume) => {
                return mqerr!(
                    NoSubscription,
                    "subscription '{name}' does not exist to resume"
                );
            }
            (Some(_), SubOpen::Create) => {
                return mqerr!(
                    SubAlreadyExists,
                    "subscription '{name}' already exists: resume it"
                );
            }
            (Some(s), _) => {
                if !self.internal {
                    self.qm
                        .check_topic_authority(&self.user, &s.topicstr, auth::SUB)?;
                }
                self.own(&s)?;
                s
            }
            (None, _) => self.new_subscription(name, topic, durable, selector, dest, o.new_only)?,
        };
        // A managed queue is opened for the subscriber; a given one as the subscriber opens
        // any queue for input (GET authority).
        let opened = match sub.destclas {
            DestClass::Managed => self.open_subscription(&sub),
            DestClass::Provided => self.open(&sub.dest, OpenOptions::input()),
        };
        match opened {
            Ok(h) => Ok((sub, h)),
            // Only a subscription this call made is taken away again: one resumed (a shared
            // one others take from) stays.
            Err(e) => {
                if made {
                    let _ = self.qm.delete_sub(&sub.name);
                }
                Err(e)
            }
        }
    }

    /// A subscription made for this call (SUB authority on the topic, PUT on a given queue),
    /// named when it has no name and is not durable, and given the retained publications it
    /// matches unless `new_only`.
    fn new_subscription(
        &self,
        name: &str,
        topic: &str,
        durable: bool,
        selector: &str,
        dest: &str,
        new_only: bool,
    ) -> MqResult<SubDef> {
        if !self.internal {
            self.qm
                .check_topic_authority(&self.user, topic, auth::SUB)?;
            // Copies land on a given queue on the subscriber's behalf: it must be
            // one the subscriber may put to.
            if !dest.is_empty() {
                self.qm
                    .check_authority(&self.user, AuthObj::Queue, dest, auth::PUT)?;
            }
        }
        let name = match (name.is_empty(), durable) {
            (false, _) => name.to_string(),
            (true, true) => {
                return mqerr!(ObjectNameError, "a durable subscription needs a name");
            }
            (true, false) => {
                let id = self.qm.unique_id();
                let tail: String = id[16..].iter().map(|b| format!("{b:02X}")).collect();
                format!("{}.{}.{tail}", self.qm.name(), self.id)
            }
        };
        let (destclas, dest) = match dest {
            "" => (DestClass::Managed, String::new()),
            q => (DestClass::Provided, q.to_string()),
        };
        let s = SubDef {
            topicstr: topic.to_string(),
            destclas,
            dest,
            durable,
            subtype: SubType::Api,
            subuser: self.user.clone(),
            selector: selector.to_string(),
            ..SubDef::new(&name)
        };
        self.qm.define_sub(s, false)?;
        let Some(s) = self.qm.sub(&name) else {
            return mqerr!(NoSubscription, "subscription '{name}' went as it was made");
        };
        // A new subscription gets the retained publications it matches (unless it
        // asked for new publications only).
        let given = if new_only {
            Ok(0)
        } else {
            self.deliver_retained(&s)
        };
        if let Err(e) = given {
            let _ = self.qm.delete_sub(&name);
            return Err(e);
        }
        Ok(s)
    }

    /// Ends subscription `name`: the subscriber's own, or any for the queue manager's work.
    pub fn unsubscribe(&self, name: &str) -> MqResult<()> {
        let Some(s) = self.qm.sub(name) else {
            return mqerr!(NoSubscription, "subscription '{name}' does not exist");
        };
        self.own(&s)?;
        self.qm.delete_sub(name).map(|_| ())
    }

    /// MQSO_NOT_OWN_PUBS (a JMS noLocal subscriber): subscription `name` is given no
    /// publication of this connection (its units of work included) while `on`, until it is
    /// set off or the subscription ends.
    pub fn not_own_pubs(&self, name: &str, on: bool) {
        let mut m = sealmq_types::sync::lock(&self.qm.not_own);
        match on {
            true => m.insert(name.to_string(), self.id),
            false => m.remove(name),
        };
    }

    /// Refuses (2035) a subscription that is not this connection's user's.
    fn own(&self, s: &SubDef) -> MqResult<()> {
        if self.internal || s.subuser == self.user || self.qm.admin() == Some(self.user.as_str()) {
            return Ok(());
        }
        mqerr!(
            NotAuthorized,
            "subscription '{}' is not '{}''s",
            s.name,
            self.user
        )
    }
}

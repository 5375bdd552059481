//! The steps DEFINE, ALTER, DELETE and DISPLAY take with one kind of named object (LISTENER,
//! PROCESS, SERVICE, TOPIC): one [`Kind`] per object type gives the names, messages and calls.
//! Shared by `services` and `topics`.

use crate::args::{Block, Fail, generic_match, not_defined, one};
use crate::display::Listing;
use crate::parse::{Attr, Command, Verb};
use sealmq_engine::QueueManager;

/// What DEFINE, ALTER, DELETE and DISPLAY do with one kind of object (LISTENER, PROCESS,
/// SERVICE): the same steps, with the kind's names, messages and calls.
pub(crate) struct Kind<T> {
    /// In messages: "service".
    pub(crate) what: &'static str,
    /// Starting answers: "Service".
    pub(crate) title: &'static str,
    /// DISPLAY's name attribute: "SERVICE".
    pub(crate) key: &'static str,
    /// DISPLAY's answer: "service(s)".
    pub(crate) plural: &'static str,
    /// The number of sealmq's "defined" message; altered, deleted and displayed follow it.
    pub(crate) msg: u32,
    /// MQ's answers (created, changed, deleted, displayed) where MQ has one, used instead.
    pub(crate) mq: [Option<&'static str>; 4],
    /// What DEFINE starts from without LIKE.
    pub(crate) default: &'static str,
    pub(crate) new: fn(&str) -> T,
    pub(crate) name: fn(&mut T) -> &mut String,
    pub(crate) apply: fn(&mut T, &[Attr]) -> Result<(), Fail>,
    pub(crate) block: fn(&T) -> Block,
}

impl<T: sealmq_engine::ServiceObject> Kind<T> {
    /// `c` when it defines, alters, deletes or displays; `None` for another verb.
    pub(crate) fn run(
        &self,
        qm: &QueueManager,
        c: &Command,
        name: &str,
    ) -> Option<Result<Answer, Fail>> {
        Some(match c.verb {
            Verb::Define => self.define_new(qm, c, name),
            Verb::Alter => self.get_or_fail(qm, name).and_then(|mut d| {
                (self.apply)(&mut d, &c.attrs)?;
                qm.define_object(d, true)?;
                Ok(self.said(1, name, "altered"))
            }),
            Verb::Delete => qm
                .delete_object::<T>(name)
                .map(|()| self.said(2, name, "deleted"))
                .map_err(Fail::from),
            Verb::Display => self.display(qm, c, name),
            _ => return None,
        })
    }

    fn define_new(&self, qm: &QueueManager, c: &Command, name: &str) -> Result<Answer, Fail> {
        let replace = c.attrs.iter().any(|a| a.key == "REPLACE");
        let get = |n: &str| qm.object::<T>(n);
        let mut d = match template(c, get, self.default, self.what)? {
            Some(mut t) => {
                *(self.name)(&mut t) = name.to_string();
                t
            }
            None => (self.new)(name),
        };
        (self.apply)(&mut d, &c.attrs)?;
        qm.define_object(d, replace)?;
        Ok(self.said(0, name, "defined"))
    }

    fn display(&self, qm: &QueueManager, c: &Command, name: &str) -> Result<Answer, Fail> {
        let mut all = qm.objects::<T>();
        all.retain_mut(|d| generic_match(name, (self.name)(d)));
        let head = format!("SMQ{:04}I: Display of", self.msg + 3);
        let listing = match self.mq[3] {
            Some(line) => Listing {
                ids: &[self.key],
                what: self.what,
                head: line,
                plural: "",
            },
            None => Listing {
                ids: &[self.key],
                what: self.what,
                head: &head,
                plural: self.plural,
            },
        };
        listing.answer(all.iter().map(self.block), &c.attrs, name)
    }

    fn get_or_fail(&self, qm: &QueueManager, name: &str) -> Result<T, Fail> {
        qm.object::<T>(name)
            .ok_or_else(|| not_defined(self.what, name))
    }

    fn said(&self, step: u32, name: &str, done: &str) -> Answer {
        if let Some(line) = self.mq[step as usize] {
            return (line.to_string(), vec![]);
        }
        let n = self.msg + step;
        (format!("SMQ{n:04}I: {} {name} {done}.", self.title), vec![])
    }
}

pub(crate) type Answer = (String, Vec<Block>);

/// The object DEFINE starts from: LIKE's, else the default object's.
fn template<T>(
    c: &Command,
    get: impl Fn(&str) -> Option<T>,
    default: &str,
    what: &str,
) -> Result<Option<T>, Fail> {
    match c.attrs.iter().find(|a| a.key == "LIKE") {
        Some(a) => {
            let n = one(a)?;
            get(n).map(Some).ok_or_else(|| not_defined(what, n))
        }
        None => Ok(get(default)),
    }
}

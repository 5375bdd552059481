//! The queue manager's LISTENER, PROCESS and SERVICE objects: logged, kept in checkpoints,
//! changed by MQSC. Listeners and services are run by the server through [`ListenerControl`]
//! and [`ServiceControl`].

use super::*;
use crate::services::{ListenerControl, ListenerDef, ProcessDef, ServiceControl, ServiceDef};
use crate::topics::TopicDef;
use sealmq_types::sync::{read, write};

#[derive(Debug, Clone, Default)]
pub struct ServiceObjects {
    pub(crate) listeners: HashMap<String, ListenerDef>,
    pub(crate) processes: HashMap<String, ProcessDef>,
    pub(crate) services: HashMap<String, ServiceDef>,
    pub(crate) topics: HashMap<String, TopicDef>,
    /// Subscriptions by name: durable ones are logged and checkpointed, non-durable ones
    /// live with their connection only.
    pub(crate) subs: HashMap<String, crate::subs::SubDef>,
}

/// What the server registered to run listeners and services.
#[derive(Default)]
pub(crate) struct Controls {
    listener: Option<Arc<dyn ListenerControl>>,
    service: Option<Arc<dyn ServiceControl>>,
}

impl ServiceObjects {
    pub(crate) fn frames(&self) -> Vec<Frame> {
        let mut f: Vec<Frame> = self
            .listeners
            .values()
            .cloned()
            .map(Frame::Listener)
            .collect();
        f.extend(self.processes.values().cloned().map(Frame::Process));
        f.extend(self.services.values().cloned().map(Frame::Service));
        f.extend(self.topics.values().cloned().map(Frame::Topic));
        f.extend(
            self.subs
                .values()
                .filter(|s| s.durable)
                .cloned()
                .map(Frame::Sub),
        );
        f
    }

    /// Applies a checkpoint frame of these objects' (others are ignored).
    pub(crate) fn apply_frame(&mut self, f: Frame) {
        match f {
            Frame::Listener(l) => {
                self.listeners.insert(l.name.clone(), l);
            }
            Frame::Process(p) => {
                self.processes.insert(p.name.clone(), p);
            }
            Frame::Service(s) => {
                self.services.insert(s.name.clone(), s);
            }
            Frame::Topic(t) => {
                self.topics.insert(t.name.clone(), t);
            }
            Frame::Sub(s) => {
                self.subs.insert(s.name.clone(), s);
            }
            _ => {}
        }
    }

    /// Applies a replayed record; false when it is not one of these objects'.
    pub(crate) fn apply(&mut self, r: &Record) -> bool {
        match r {
            Record::DefineListener(l) => {
                self.listeners.insert(l.name.clone(), l.clone());
            }
            Record::DeleteListener(n) => {
                self.listeners.remove(n);
            }
            Record::DefineProcess(p) => {
                self.processes.insert(p.name.clone(), p.clone());
            }
            Record::DeleteProcess(n) => {
                self.processes.remove(n);
            }
            Record::DefineService(s) => {
                self.services.insert(s.name.clone(), s.clone());
            }
            Record::DeleteService(n) => {
                self.services.remove(n);
            }
            Record::DefineTopic(t) => {
                self.topics.insert(t.name.clone(), t.clone());
            }
            Record::DeleteTopic(n) => {
                self.topics.remove(n);
            }
            Record::DefineSub(s) => {
                self.subs.insert(s.name.clone(), s.clone());
            }
            Record::DeleteSub(n) => {
                self.subs.remove(n);
            }
            _ => return false,
        }
        true
    }
}

/// A LISTENER, PROCESS or SERVICE definition: where it is kept and how it is logged. The
/// queue manager's [`define_object`](QueueManager::define_object) and its kin take any of them.
pub trait ServiceObject: Clone {
    /// In messages: "listener".
    const WHAT: &'static str;
    fn name(&self) -> &str;
    /// Whether the server runs it now (DELETE is refused then).
    fn running(_qm: &QueueManager, _name: &str) -> bool {
        false
    }
    fn validate(&self) -> MqResult<()>;
    /// Checks against the other objects of its kind (a topic string names one topic).
    fn check(&self, _all: &ServiceObjects) -> MqResult<()> {
        Ok(())
    }
    /// Whether DELETE is refused outright (the root of the topic tree).
    fn undeletable(_name: &str) -> Option<&'static str> {
        None
    }
    fn define_record(&self) -> Record;
    fn delete_record(name: &str) -> Record;
    fn map(o: &ServiceObjects) -> &HashMap<String, Self>;
    fn map_mut(o: &mut ServiceObjects) -> &mut HashMap<String, Self>;
}

macro_rules! svc_object {
    ($t:ty, $what:literal, $field:ident, $def:ident, $del:ident $(, $control:ident)?) => {
        impl ServiceObject for $t {
            const WHAT: &'static str = $what;
            fn name(&self) -> &str {
                &self.name
            }
            $(fn running(qm: &QueueManager, name: &str) -> bool {
                qm.$control()
                    .is_some_and(|c| c.status().iter().any(|s| s.name == name))
            })?
            fn validate(&self) -> MqResult<()> {
                <$t>::validate(self)
            }
            fn define_record(&self) -> Record {
                Record::$def(self.clone())
            }
            fn delete_record(name: &str) -> Record {
                Record::$del(name.to_string())
            }
            fn map(o: &ServiceObjects) -> &HashMap<String, Self> {
                &o.$field
            }
            fn map_mut(o: &mut ServiceObjects) -> &mut HashMap<String, Self> {
                &mut o.$field
            }
        }
    };
}
svc_object!(
    ListenerDef,
    "listener",
    listeners,
    DefineListener,
    DeleteListener,
    listener_control
);
svc_object!(
    ProcessDef,
    "process",
    processes,
    DefineProcess,
    DeleteProcess
);
impl ServiceObject for TopicDef {
    const WHAT: &'static str = "topic";
    fn name(&self) -> &str {
        &self.name
    }
    fn validate(&self) -> MqResult<()> {
        TopicDef::validate(self)
    }
    /// One topic object per topic string, as MQ's (2 objects for `a/b` would make its
    /// attributes ambiguous).
    fn check(&self, all: &ServiceObjects) -> MqResult<()> {
        // SYSTEM.DEFAULT.TOPIC, a template, shares the root's blank string.
        match all
            .topics
            .values()
            .filter(|_| !self.topicstr.is_empty())
            .find(|t| t.topicstr == self.topicstr && t.name != self.name)
        {
            Some(t) => mqerr!(
                TopicStringError,
                "topic string '{}' is already topic object {}'s",
                self.topicstr,
                t.name
            ),
            None => Ok(()),
        }
    }
    fn undeletable(name: &str) -> Option<&'static str> {
        (name == crate::topics::BASE_TOPIC)
            .then_some("it is the root of the topic tree that ASPARENT resolves to")
    }
    fn define_record(&self) -> Record {
        Record::DefineTopic(self.clone())
    }
    fn delete_record(name: &str) -> Record {
        Record::DeleteTopic(name.to_string())
    }
    fn map(o: &ServiceObjects) -> &HashMap<String, Self> {
        &o.topics
    }
    fn map_mut(o: &mut ServiceObjects) -> &mut HashMap<String, Self> {
        &mut o.topics
    }
}

impl QueueManager {
    /// The topic strings of the topic tree's nodes: those topic objects administer and
    /// those subscriptions are to.
    pub fn topic_nodes(&self) -> Vec<String> {
        let svc = read(&self.svc);
        svc.topics
            .values()
            .filter(|t| !t.topicstr.is_empty())
            .map(|t| t.topicstr.clone())
            .chain(svc.subs.values().map(|s| s.topicstr.clone()))
            .collect()
    }

    /// `topic`'s attributes, ASPARENT resolved up the tree (DISPLAY TPSTATUS, publish and
    /// subscribe).
    pub fn topic_effective(&self, topic: &str) -> crate::topics::Effective {
        let path = self.topic_path(topic);
        crate::topics::effective(topic, |s| {
            path.iter()
                .find(|(n, _)| n == s)
                .and_then(|(_, o)| o.as_ref())
        })
    }

    /// The nodes at and above `topic`, closest first, each with the topic object that
    /// administers it (SYSTEM.DEFAULT.TOPIC, a template, administers nothing): what
    /// attributes, authority and policies are resolved along.
    pub(crate) fn topic_path(&self, topic: &str) -> Vec<(String, Option<TopicDef>)> {
        let svc = read(&self.svc);
        let by_node: HashMap<&str, &TopicDef> = svc
            .topics
            .values()
            .filter(|t| !t.topicstr.is_empty() || t.name == crate::topics::BASE_TOPIC)
            .map(|t| (crate::topics::node_of(&t.topicstr), t))
            .collect();
        crate::topics::ancestors(topic)
            .map(|n| (n.to_string(), by_node.get(n).map(|t| (*t).clone())))
            .collect()
    }
}

svc_object!(
    ServiceDef,
    "service",
    services,
    DefineService,
    DeleteService,
    service_control
);

impl QueueManager {
    /// DEFINE (REPLACE) or ALTER of a listener, process or service: logged, then kept.
    pub fn define_object<T: ServiceObject>(&self, obj: T, replace: bool) -> MqResult<()> {
        obj.validate()?;
        let (what, name) = (T::WHAT, obj.name().to_string());
        let mut svc = write(&self.svc);
        obj.check(&svc)?;
        if T::map(&svc).contains_key(&name) && !replace {
            return mqerr!(
                ObjectAlreadyExists,
                "{what} '{name}' already exists (use REPLACE)"
            );
        }
        self.log_durable(&obj.define_record())?;
        T::map_mut(&mut svc).insert(name, obj);
        Ok(())
    }

    /// DELETE of a listener, process or service: refused while the server runs it.
    pub fn delete_object<T: ServiceObject>(&self, name: &str) -> MqResult<()> {
        let what = T::WHAT;
        if !T::map(&read(&self.svc)).contains_key(name) {
            return mqerr!(UnknownObjectName, "{what} '{name}' is not defined");
        }
        if let Some(why) = T::undeletable(name) {
            return mqerr!(ObjectInUse, "{what} {name} cannot be deleted: {why}");
        }
        if T::running(self, name) {
            return mqerr!(
                ObjectInUse,
                "{what} {name} is running: STOP {}({name}) first",
                what.to_ascii_uppercase()
            );
        }
        self.log_durable(&T::delete_record(name))?;
        T::map_mut(&mut write(&self.svc)).remove(name);
        Ok(())
    }

    /// The listener, process or service of that name.
    pub fn object<T: ServiceObject>(&self, name: &str) -> Option<T> {
        T::map(&read(&self.svc)).get(name).cloned()
    }

    /// Every listener, process or service, by name.
    pub fn objects<T: ServiceObject>(&self) -> Vec<T> {
        let svc = read(&self.svc);
        let mut v: Vec<(&String, &T)> = T::map(&svc).iter().collect();
        v.sort_by(|a, b| a.0.cmp(b.0));
        v.into_iter().map(|(_, t)| t.clone()).collect()
    }

    /// Registers the server's listener control (START/STOP LISTENER, DISPLAY LSSTATUS).
    pub fn set_listener_control(&self, c: Arc<dyn ListenerControl>) {
        write(&self.ctl).listener = Some(c);
    }

    pub fn listener_control(&self) -> Option<Arc<dyn ListenerControl>> {
        read(&self.ctl).listener.clone()
    }

    /// Registers the server's service control (START/STOP SERVICE, DISPLAY SVSTATUS).
    pub fn set_service_control(&self, c: Arc<dyn ServiceControl>) {
        write(&self.ctl).service = Some(c);
    }

    pub fn service_control(&self) -> Option<Arc<dyn ServiceControl>> {
        read(&self.ctl).service.clone()
    }
}

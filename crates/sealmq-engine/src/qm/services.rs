//! The queue manager's LISTENER, PROCESS and SERVICE objects: logged, kept in checkpoints,
//! changed by MQSC. Listeners and services are run by the server through [`ListenerControl`]
//! and [`ServiceControl`].

use super::*;
use crate::services::{ListenerControl, ListenerDef, ProcessDef, ServiceControl, ServiceDef};
use sealmq_types::sync::{read, write};

#[derive(Debug, Clone, Default)]
pub(crate) struct ServiceObjects {
    pub(crate) listeners: HashMap<String, ListenerDef>,
    pub(crate) processes: HashMap<String, ProcessDef>,
    pub(crate) services: HashMap<String, ServiceDef>,
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
            _ => return false,
        }
        true
    }
}

fn sorted<T: Clone>(m: &HashMap<String, T>) -> Vec<T> {
    let mut v: Vec<(&String, &T)> = m.iter().collect();
    v.sort_by(|a, b| a.0.cmp(b.0));
    v.into_iter().map(|(_, t)| t.clone()).collect()
}

/// Which map of [`ServiceObjects`] an object type lives in.
type Pick<T> = fn(&mut ServiceObjects) -> &mut HashMap<String, T>;

impl QueueManager {
    /// DEFINE (REPLACE) or ALTER of a listener, process or service: logged, then kept.
    fn define_obj<T>(
        &self,
        what: &str,
        name: &str,
        obj: T,
        replace: bool,
        pick: Pick<T>,
        rec: Record,
    ) -> MqResult<()> {
        let mut svc = write(&self.svc);
        if pick(&mut svc).contains_key(name) && !replace {
            return mqerr!(
                ObjectAlreadyExists,
                "{what} '{name}' already exists (use REPLACE)"
            );
        }
        self.log_durable(&rec)?;
        pick(&mut svc).insert(name.to_string(), obj);
        Ok(())
    }

    /// DELETE of a listener, process or service; `running` refuses one that runs.
    fn delete_obj<T>(
        &self,
        what: &str,
        name: &str,
        running: bool,
        pick: Pick<T>,
        rec: Record,
    ) -> MqResult<()> {
        if !pick(&mut write(&self.svc)).contains_key(name) {
            return mqerr!(UnknownObjectName, "{what} '{name}' is not defined");
        }
        if running {
            return mqerr!(
                ObjectInUse,
                "{what} {name} is running: STOP {}({name}) first",
                what.to_ascii_uppercase()
            );
        }
        self.log_durable(&rec)?;
        pick(&mut write(&self.svc)).remove(name);
        Ok(())
    }
}

impl QueueManager {
    /// DEFINE (REPLACE) or ALTER LISTENER.
    pub fn define_listener(&self, l: ListenerDef, replace: bool) -> MqResult<()> {
        l.validate()?;
        let rec = Record::DefineListener(l.clone());
        self.define_obj(
            "listener",
            &l.name.clone(),
            l,
            replace,
            |s| &mut s.listeners,
            rec,
        )
    }

    /// DELETE LISTENER: refused while it runs.
    pub fn delete_listener(&self, name: &str) -> MqResult<()> {
        let running = self
            .listener_control()
            .is_some_and(|c| c.status().iter().any(|s| s.name == name));
        let rec = Record::DeleteListener(name.to_string());
        self.delete_obj("listener", name, running, |s| &mut s.listeners, rec)
    }

    pub fn listener(&self, name: &str) -> Option<ListenerDef> {
        read(&self.svc).listeners.get(name).cloned()
    }

    pub fn listeners(&self) -> Vec<ListenerDef> {
        sorted(&read(&self.svc).listeners)
    }

    /// DEFINE (REPLACE) or ALTER PROCESS.
    pub fn define_process(&self, p: ProcessDef, replace: bool) -> MqResult<()> {
        p.validate()?;
        let rec = Record::DefineProcess(p.clone());
        self.define_obj(
            "process",
            &p.name.clone(),
            p,
            replace,
            |s| &mut s.processes,
            rec,
        )
    }

    pub fn delete_process(&self, name: &str) -> MqResult<()> {
        let rec = Record::DeleteProcess(name.to_string());
        self.delete_obj("process", name, false, |s| &mut s.processes, rec)
    }

    pub fn process(&self, name: &str) -> Option<ProcessDef> {
        read(&self.svc).processes.get(name).cloned()
    }

    pub fn processes(&self) -> Vec<ProcessDef> {
        sorted(&read(&self.svc).processes)
    }

    /// DEFINE (REPLACE) or ALTER SERVICE.
    pub fn define_service(&self, s: ServiceDef, replace: bool) -> MqResult<()> {
        s.validate()?;
        let rec = Record::DefineService(s.clone());
        self.define_obj(
            "service",
            &s.name.clone(),
            s,
            replace,
            |o| &mut o.services,
            rec,
        )
    }

    /// DELETE SERVICE: refused while a server service runs.
    pub fn delete_service(&self, name: &str) -> MqResult<()> {
        let running = self
            .service_control()
            .is_some_and(|c| c.status().iter().any(|s| s.name == name));
        let rec = Record::DeleteService(name.to_string());
        self.delete_obj("service", name, running, |s| &mut s.services, rec)
    }

    pub fn service(&self, name: &str) -> Option<ServiceDef> {
        read(&self.svc).services.get(name).cloned()
    }

    pub fn services(&self) -> Vec<ServiceDef> {
        sorted(&read(&self.svc).services)
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

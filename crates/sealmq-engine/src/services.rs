//! LISTENER, PROCESS and SERVICE objects (SPEC §2.2, issue 12): a listener is a TCP port the
//! queue manager accepts connections on, started and stopped by MQSC or with the queue manager
//! (CONTROL); a process names the program a trigger monitor starts for a triggered queue; a
//! service is a program the queue manager starts and stops (with itself, or by MQSC).

use crate::error::{MqResult, mqerr};
use crate::noted::Noted;
use sealmq_storage::codec::{Dec, Enc, Result};
use sealmq_types::{named_enum, put_fields, take_fields};

named_enum! {
    /// CONTROL: who starts and stops a listener or a service.
    /// - QMGR: Started and stopped with the queue manager.
    /// - STARTONLY: Started with the queue manager, stopped only by STOP LISTENER (or the end).
    /// - MANUAL: START / STOP LISTENER only.
    pub enum Control("CONTROL") { Qmgr = 0 "QMGR", StartOnly = 1 "STARTONLY", Manual = 2 "MANUAL" }
}

/// The port a listener with PORT(0) takes, as MQ's.
pub const DEFAULT_PORT: u16 = 1414;
pub const DEFAULT_LISTENER: &str = "SYSTEM.DEFAULT.LISTENER.TCP";
pub const DEFAULT_PROCESS: &str = "SYSTEM.DEFAULT.PROCESS";
pub const DEFAULT_SERVICE: &str = "SYSTEM.DEFAULT.SERVICE";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListenerDef {
    pub name: String,
    pub descr: String,
    /// 0: MQ's default port, 1414.
    pub port: u16,
    /// The address to listen on (blank: every address).
    pub ipaddr: String,
    /// Connection requests the system queues (0: its default).
    pub backlog: u32,
    pub control: Control,
    pub noted: Noted,
}

impl ListenerDef {
    pub fn new(name: &str) -> ListenerDef {
        ListenerDef {
            name: name.to_string(),
            descr: String::new(),
            port: 0,
            ipaddr: String::new(),
            backlog: 0,
            control: Control::Manual,
            noted: Noted::new(),
        }
    }

    pub fn validate(&self) -> MqResult<()> {
        crate::objects::validate_name(&self.name)
    }

    /// The address to bind: IPADDR (blank: all) and PORT (0: 1414).
    pub fn bind_addr(&self) -> String {
        let port = if self.port == 0 {
            DEFAULT_PORT
        } else {
            self.port
        };
        let ip = self.ipaddr.trim();
        match ip {
            "" => format!("0.0.0.0:{port}"),
            ip if ip.contains(':') && !ip.starts_with('[') => format!("[{ip}]:{port}"),
            ip => format!("{ip}:{port}"),
        }
    }

    pub fn encode(&self, e: &mut Enc) {
        e.u8(1);
        put_fields!(e, self: name, descr, port, ipaddr, backlog, control, noted);
    }

    pub fn decode(d: &mut Dec<'_>) -> Result<ListenerDef> {
        d.version("LISTENER record", 1..=1)?;
        let mut l = ListenerDef::new("");
        take_fields!(d, l: name, descr, port, ipaddr, backlog, control, noted);
        Ok(l)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessDef {
    pub name: String,
    pub descr: String,
    /// APPLTYPE: UNIX (the default here) and DEF run a program; others are kept as given.
    pub appltype: String,
    /// APPLICID: the program (and its fixed arguments) a trigger monitor starts.
    pub applicid: String,
    pub envrdata: String,
    pub userdata: String,
    pub noted: Noted,
}

impl ProcessDef {
    pub fn new(name: &str) -> ProcessDef {
        ProcessDef {
            name: name.to_string(),
            descr: String::new(),
            appltype: "UNIX".into(),
            applicid: String::new(),
            envrdata: String::new(),
            userdata: String::new(),
            noted: Noted::new(),
        }
    }

    /// MQ's limits (APPLICID 256, ENVRDATA and USERDATA 128), and a program named by an
    /// absolute path must exist and be executable: a trigger would otherwise fail later,
    /// far from the definition that caused it.
    pub fn validate(&self) -> MqResult<()> {
        crate::objects::validate_name(&self.name)?;
        for (what, v, max) in [
            ("APPLICID", &self.applicid, 256),
            ("ENVRDATA", &self.envrdata, 128),
            ("USERDATA", &self.userdata, 128),
        ] {
            if v.len() > max {
                return mqerr!(OptionsError, "{what} is longer than {max} characters");
            }
        }
        if let Some(program) = self.program()
            && program.starts_with('/')
            && !is_executable(std::path::Path::new(program))
        {
            return mqerr!(
                OptionsError,
                "APPLICID names '{program}', which is not an executable file: give the full \
                 path of the program the trigger monitor is to start"
            );
        }
        Ok(())
    }

    /// The program APPLICID names (its first word), for application types that run one.
    pub fn program(&self) -> Option<&str> {
        if !matches!(self.appltype.as_str(), "UNIX" | "DEF") {
            return None;
        }
        self.applicid.split_whitespace().next()
    }

    pub fn encode(&self, e: &mut Enc) {
        e.u8(1);
        put_fields!(e, self: name, descr, appltype, applicid, envrdata, userdata, noted);
    }

    pub fn decode(d: &mut Dec<'_>) -> Result<ProcessDef> {
        d.version("PROCESS record", 1..=1)?;
        let mut p = ProcessDef::new("");
        take_fields!(d, p: name, descr, appltype, applicid, envrdata, userdata, noted);
        Ok(p)
    }
}

named_enum! {
    /// SERVTYPE: a SERVER runs one instance, watched (DISPLAY SVSTATUS); a COMMAND runs to its
    /// end, any number at a time, unwatched.
    pub enum ServType("SERVTYPE") { Command = 0 "COMMAND", Server = 1 "SERVER" }
}

/// MQ's limits on a service's strings (MQ_SERVICE_COMMAND_LENGTH, _ARGS_LENGTH, _PATH_LENGTH).
const SERVICE_TEXT_MAX: usize = 255;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceDef {
    pub name: String,
    pub descr: String,
    pub servtype: ServType,
    pub control: Control,
    /// The program that starts the service (a full path, `+token+`s allowed).
    pub startcmd: String,
    pub startarg: String,
    /// The program that stops it; `+MQ_SERVER_PID+` names the running server's process.
    pub stopcmd: String,
    pub stoparg: String,
    /// Files the program's output is appended to (blank: discarded).
    pub stdout: String,
    pub stderr: String,
    pub noted: Noted,
}

impl ServiceDef {
    pub fn new(name: &str) -> ServiceDef {
        ServiceDef {
            name: name.to_string(),
            descr: String::new(),
            servtype: ServType::Command,
            control: Control::Manual,
            startcmd: String::new(),
            startarg: String::new(),
            stopcmd: String::new(),
            stoparg: String::new(),
            stdout: String::new(),
            stderr: String::new(),
            noted: Noted::new(),
        }
    }

    /// MQ's length limits, and programs named by a full path (or one starting with a
    /// `+token+`, such as `+MQ_INSTALL_PATH+bin/...`): a relative name would depend on
    /// whatever directory and PATH the queue manager happened to start with.
    pub fn validate(&self) -> MqResult<()> {
        crate::objects::validate_name(&self.name)?;
        for (what, v) in [
            ("STARTCMD", &self.startcmd),
            ("STARTARG", &self.startarg),
            ("STOPCMD", &self.stopcmd),
            ("STOPARG", &self.stoparg),
            ("STDOUT", &self.stdout),
            ("STDERR", &self.stderr),
        ] {
            if v.len() > SERVICE_TEXT_MAX {
                return mqerr!(
                    OptionsError,
                    "{what} is longer than {SERVICE_TEXT_MAX} characters"
                );
            }
        }
        for (what, v) in [
            ("STARTCMD", &self.startcmd),
            ("STOPCMD", &self.stopcmd),
            ("STDOUT", &self.stdout),
            ("STDERR", &self.stderr),
        ] {
            if !v.is_empty() && !v.starts_with('/') && !v.starts_with('+') {
                return mqerr!(
                    OptionsError,
                    "{what}('{v}') is not a full path: give the absolute path (a path may start \
                     with a token such as +MQ_Q_MGR_DATA_PATH+)"
                );
            }
        }
        Ok(())
    }

    pub fn encode(&self, e: &mut Enc) {
        e.u8(1);
        put_fields!(e, self: name, descr, servtype, control, startcmd, startarg, stopcmd, stoparg,
            stdout, stderr, noted);
    }

    pub fn decode(d: &mut Dec<'_>) -> Result<ServiceDef> {
        d.version("SERVICE record", 1..=1)?;
        let mut v = ServiceDef::new("");
        take_fields!(d, v: name, descr, servtype, control, startcmd, startarg, stopcmd, stoparg,
            stdout, stderr, noted);
        Ok(v)
    }
}

/// Replaces MQ's `+TOKEN+` inserts in a service's command, arguments or file names; an
/// unknown token is left as written (MQ does the same).
pub fn expand_tokens(s: &str, tokens: &[(&str, String)]) -> String {
    let mut out = s.to_string();
    for (k, v) in tokens {
        out = out.replace(&format!("+{k}+"), v);
    }
    out
}

/// Splits an argument string on blanks; double quotes keep blanks inside one argument.
pub fn split_args(s: &str) -> Vec<String> {
    let mut args = Vec::new();
    let mut cur = String::new();
    let (mut quoted, mut any) = (false, false);
    for c in s.chars() {
        match c {
            '"' => {
                quoted = !quoted;
                any = true;
            }
            c if c.is_whitespace() && !quoted => {
                if any {
                    args.push(std::mem::take(&mut cur));
                    any = false;
                }
            }
            c => {
                cur.push(c);
                any = true;
            }
        }
    }
    if any {
        args.push(cur);
    }
    args
}

/// A server service's state, as DISPLAY SVSTATUS shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceStatus {
    pub name: String,
    /// RUNNING, or STOPPING once STOP SERVICE ran the stop command.
    pub status: &'static str,
    pub pid: u32,
    /// Start time, seconds since the epoch.
    pub started: u64,
}

/// What MQSC's service commands ask of the server (which runs programs).
pub trait ServiceControl: Send + Sync {
    /// START SERVICE: runs STARTCMD; an error says why (no STARTCMD, a missing program).
    fn start(&self, def: &ServiceDef) -> MqResult<String>;
    /// STOP SERVICE: runs STOPCMD.
    fn stop(&self, def: &ServiceDef) -> MqResult<String>;
    /// Server services running now.
    fn status(&self) -> Vec<ServiceStatus>;
}

/// Whether `p` is a regular file someone may execute.
pub fn is_executable(p: &std::path::Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// A running listener, as DISPLAY LSSTATUS shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListenerStatus {
    pub name: String,
    /// The address actually bound (PORT(0) resolved).
    pub addr: String,
    /// Start time, seconds since the epoch.
    pub started: u64,
    pub backlog: u32,
}

/// What MQSC's listener commands ask of the server (which owns sockets).
pub trait ListenerControl: Send + Sync {
    /// START LISTENER: binds and accepts; an error says why (a port in use, a bad address).
    fn start(&self, def: &ListenerDef) -> MqResult<String>;
    /// STOP LISTENER.
    fn stop(&self, name: &str) -> MqResult<String>;
    /// Listeners running now.
    fn status(&self) -> Vec<ListenerStatus>;
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn round_trip_and_rules() {
        let mut l = ListenerDef::new("L1");
        l.port = 1415;
        l.control = Control::Qmgr;
        l.noted.insert("SESSIONS".into(), "0".into());
        let mut e = Enc::new();
        l.encode(&mut e);
        assert_eq!(ListenerDef::decode(&mut Dec::new(&e.buf, "l")).unwrap(), l);
        assert_eq!(l.bind_addr(), "0.0.0.0:1415");
        l.ipaddr = "::1".into();
        assert_eq!(l.bind_addr(), "[::1]:1415");
        let mut p = ProcessDef::new("P1");
        p.applicid = "/bin/sh -c true".into();
        p.validate().unwrap();
        let mut e = Enc::new();
        p.encode(&mut e);
        assert_eq!(ProcessDef::decode(&mut Dec::new(&e.buf, "p")).unwrap(), p);
        p.applicid = "/no/such/program".into();
        let err = p.validate().unwrap_err();
        assert!(err.detail.contains("/no/such/program"), "{err}");
        // Other application types name programs elsewhere (CICS transactions, ...).
        p.appltype = "CICS".into();
        p.validate().unwrap();
    }

    #[test]
    fn services_round_trip_and_rules() {
        let mut s = ServiceDef::new("S1");
        s.servtype = ServType::Server;
        s.control = Control::StartOnly;
        s.startcmd = "+MQ_INSTALL_PATH+bin/runmqtrm".into();
        s.startarg = "-m +QMNAME+ -q INITQ".into();
        s.stopcmd = "/bin/kill".into();
        s.stoparg = "+MQ_SERVER_PID+".into();
        s.validate().unwrap();
        let mut e = Enc::new();
        s.encode(&mut e);
        assert_eq!(ServiceDef::decode(&mut Dec::new(&e.buf, "s")).unwrap(), s);
        let tokens = [
            ("QMNAME", "QM1".to_string()),
            ("MQ_SERVER_PID", "42".into()),
        ];
        assert_eq!(
            expand_tokens(&s.startarg, &tokens),
            "-m QM1 -q INITQ".to_string()
        );
        assert_eq!(
            expand_tokens("+NOT_A_TOKEN+ +MQ_SERVER_PID+", &tokens),
            "+NOT_A_TOKEN+ 42"
        );
        s.startcmd = "runmqtrm".into();
        let err = s.validate().unwrap_err();
        assert!(err.detail.contains("STARTCMD('runmqtrm')"), "{err}");
        s.startcmd = "/x".repeat(200);
        assert!(s.validate().unwrap_err().detail.contains("longer than 255"));
    }

    proptest! {
        #[test]
        fn split_args_keeps_quoted_blanks(a in "[a-z]{1,6}", b in "[a-z ]{0,6}", c in "[a-z]{1,6}") {
            let args = split_args(&format!("  {a} \"{b}\"   {c} "));
            prop_assert_eq!(args, vec![a, b, c]);
        }
    }
}

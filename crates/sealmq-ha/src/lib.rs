//! A replicated queue manager (issue 26, docs/ha.md): one queue manager on three instances,
//! each with its own home, storage and master key. The active instance's recovery log is
//! replicated by Raft (the `openraft` crate: elections, terms, log matching and commitment are
//! its work); sealmq provides the Raft log's storage (`logstore.rs`), the state machine
//! (`machine.rs`: a replica's copy of the queue manager's log), the network between instances
//! (`net.rs`) and the node that ties them to a queue manager (`node.rs`).
//!
//! The group is written at `sealmq create --ha` into `<QM dir>/ha.toml` (this file's
//! [`Group`]); an instance refuses a peer that is not in it.

// openraft's storage traits fix their error type (`openraft::StorageError`, over 200 bytes).
#![allow(clippy::result_large_err)]

mod logstore;
mod machine;
mod net;
mod node;
mod serve;
mod snapwire;
mod status;
mod switch;
mod takeup;
mod types;

pub use machine::{SNAPSHOT_BYTES, SNAPSHOT_DIR, StateFiles};
pub use net::instance_dn;
pub use node::Node;
pub use status::{InstanceStatus, Role, Status};
pub use switch::SWITCH_HOLD;
pub use takeup::LocalSync;
pub use types::Batch;

use serde::{Deserialize, Serialize};
use std::path::Path;

/// The file that makes a queue manager's directory an instance of a replicated group.
pub const GROUP_FILE: &str = "ha.toml";
/// The instance's Raft state (log, vote) and its status, under the queue manager's directory.
pub const HA_DIR: &str = "ha";
/// Left in `ha/` by `sealmq create --ha` for a new instance: it may form the group at its
/// first start (an instance rebuilt with `--rejoin`, or whose data was lost, does not).
pub const FORM_FILE: &str = "form";
/// How many instances a group has (as MQ's Native HA).
pub const INSTANCES: usize = 3;

/// One instance of the group: its name and its replication address (`HOST:PORT`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Instance {
    pub name: String,
    pub addr: String,
}

/// The address this instance listens on for the others when it is not its replication
/// address (`sealmq create --ha-bind`: behind a NAT, a proxy or a load balancer). Its own
/// connections to the others then leave from that address's host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bind {
    pub addr: String,
}

/// The group of a replicated queue manager, as this instance knows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Group {
    /// Format version of `ha.toml`.
    pub version: u32,
    /// This instance's name.
    pub instance: String,
    /// Every instance, by name (so that every instance numbers them alike).
    pub instances: Vec<Instance>,
    /// Where this instance listens, when not at its replication address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bind: Option<Bind>,
}

fn valid_name(n: &str) -> bool {
    !n.is_empty()
        && n.len() <= 48
        && n.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

impl Group {
    /// `--ha a@HOST:PORT,b@HOST:PORT,c@HOST:PORT --instance a`.
    pub fn parse(spec: &str, instance: &str) -> Result<Group, String> {
        let mut instances = Vec::new();
        for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let Some((name, addr)) = part.split_once('@') else {
                return Err(format!("--ha: '{part}' is not NAME@HOST:PORT"));
            };
            if !valid_name(name) {
                return Err(format!(
                    "--ha: instance name '{name}' must be 1 to 48 letters, digits, '.', '_' or '-'"
                ));
            }
            let port_ok = addr
                .rsplit_once(':')
                .is_some_and(|(h, p)| !h.is_empty() && p.parse::<u16>().is_ok_and(|p| p > 0));
            if !port_ok {
                return Err(format!(
                    "--ha: '{addr}' of instance {name} is not HOST:PORT"
                ));
            }
            instances.push(Instance {
                name: name.to_string(),
                addr: addr.to_string(),
            });
        }
        if instances.len() != INSTANCES {
            return Err(format!(
                "--ha names {} instances; a group has {INSTANCES}",
                instances.len()
            ));
        }
        instances.sort_by(|a, b| a.name.cmp(&b.name));
        if instances.windows(2).any(|w| w[0].name == w[1].name) {
            return Err("--ha names an instance twice".into());
        }
        if instances
            .iter()
            .enumerate()
            .any(|(i, x)| instances[i + 1..].iter().any(|y| y.addr == x.addr))
        {
            return Err("--ha gives two instances one address".into());
        }
        if !instances.iter().any(|i| i.name == instance) {
            return Err(format!(
                "--instance {instance} is not one of --ha's instances"
            ));
        }
        Ok(Group {
            version: 1,
            instance: instance.to_string(),
            instances,
            bind: None,
        })
    }

    /// `--ha-bind HOST:PORT`: listen there, not at this instance's replication address.
    pub fn with_bind(mut self, addr: &str) -> Result<Group, String> {
        let ok = addr
            .rsplit_once(':')
            .is_some_and(|(h, p)| !h.is_empty() && p.parse::<u16>().is_ok());
        if !ok {
            return Err(format!("--ha-bind: '{addr}' is not HOST:PORT"));
        }
        self.bind = Some(Bind {
            addr: addr.to_string(),
        });
        Ok(self)
    }

    /// The address this instance listens on for the others.
    pub fn listen_addr(&self) -> Option<String> {
        match &self.bind {
            Some(b) => Some(b.addr.clone()),
            None => self.by_id(self.me()).map(|i| i.addr.clone()),
        }
    }

    /// The group of the queue manager in `dir`; `None` when it is not replicated.
    pub fn load(dir: &Path) -> Result<Option<Group>, String> {
        let path = dir.join(GROUP_FILE);
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
        };
        let g: Group =
            toml::from_str(&text).map_err(|e| format!("{} is damaged: {e}", path.display()))?;
        if g.version != 1 {
            return Err(format!(
                "{} has version {}; this sealmq reads version 1",
                path.display(),
                g.version
            ));
        }
        let spec: Vec<String> = g
            .instances
            .iter()
            .map(|i| format!("{}@{}", i.name, i.addr))
            .collect();
        let parsed = Group::parse(&spec.join(","), &g.instance)
            .and_then(|p| match &g.bind {
                Some(b) => p.with_bind(&b.addr),
                None => Ok(p),
            })
            .map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(Some(parsed))
    }

    pub fn save(&self, dir: &Path) -> Result<(), String> {
        let path = dir.join(GROUP_FILE);
        let text = toml::to_string(self).map_err(|e| e.to_string())?;
        std::fs::write(&path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
    }

    /// An instance's Raft node id: its place among the instances by name, from 1.
    pub fn id_of(&self, name: &str) -> Option<u64> {
        self.instances
            .iter()
            .position(|i| i.name == name)
            .map(|p| p as u64 + 1)
    }

    pub fn by_id(&self, id: u64) -> Option<&Instance> {
        self.instances.get(id.checked_sub(1)? as usize)
    }

    /// This instance's node id.
    pub fn me(&self) -> u64 {
        self.id_of(&self.instance).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_group_is_three_named_instances_numbered_by_name() {
        let g = Group::parse("c@h:3,a@h:1,b@h:2", "b").unwrap();
        assert_eq!(g.id_of("a"), Some(1));
        assert_eq!(g.me(), 2);
        assert_eq!(g.by_id(3).unwrap().addr, "h:3");
        for bad in [
            "a@h:1,b@h:2",
            "a@h:1,a@h:2,c@h:3",
            "a@h:1,b@h:1,c@h:3",
            "a@h,b@h:2,c@h:3",
            "a@h:0,b@h:2,c@h:3",
            "a b@h:1,b@h:2,c@h:3",
            "ah:1,b@h:2,c@h:3",
        ] {
            assert!(Group::parse(bad, "b").is_err(), "{bad}");
        }
        assert!(Group::parse("a@h:1,b@h:2,c@h:3", "d").is_err());
    }

    #[test]
    fn the_group_file_round_trips_and_a_damaged_one_is_refused() {
        let d = tempfile::tempdir().unwrap();
        assert_eq!(Group::load(d.path()).unwrap(), None);
        let g = Group::parse("a@h:1,b@h:2,c@h:3", "a").unwrap();
        g.save(d.path()).unwrap();
        assert_eq!(Group::load(d.path()).unwrap(), Some(g.clone()));
        let g = g.with_bind("127.0.0.11:7001").unwrap();
        assert_eq!(g.listen_addr().as_deref(), Some("127.0.0.11:7001"));
        g.save(d.path()).unwrap();
        assert_eq!(Group::load(d.path()).unwrap(), Some(g.clone()));
        assert!(g.with_bind("nowhere").is_err());
        std::fs::write(d.path().join(GROUP_FILE), "version = 1\ninstance = 3").unwrap();
        assert!(Group::load(d.path()).is_err());
    }

    proptest::proptest! {
        #[test]
        fn any_spec_is_parsed_or_refused_without_panic(s in ".{0,80}", i in ".{0,8}") {
            let _ = Group::parse(&s, &i);
        }
    }
}

//! The queue manager's channel authentication records and AUTHINFO objects: kept like
//! authority records (logged, in checkpoints), changed by MQSC, read when a channel starts.

use super::*;
use crate::authinfo::AuthInfoDef;
use crate::authority::{AuthObj, AuthRec};
use crate::chlauth::{ChlAuthRec, Decision, Partner, RuleType};
use sealmq_types::sync::{read, write};

/// CHLAUTH records and AUTHINFO objects.
#[derive(Debug, Clone, Default)]
pub(crate) struct SecurityObjects {
    pub(crate) rules: Vec<ChlAuthRec>,
    pub(crate) authinfo: HashMap<String, AuthInfoDef>,
}

impl SecurityObjects {
    pub(crate) fn set_rule(&mut self, r: ChlAuthRec) {
        let key = r.key();
        self.rules.retain(|x| x.key() != key);
        self.rules.push(r);
    }

    pub(crate) fn remove_rule(&mut self, r: &ChlAuthRec) {
        let key = r.key();
        self.rules.retain(|x| x.key() != key);
    }

    pub(crate) fn frames(&self) -> Vec<Frame> {
        let mut f: Vec<Frame> = self.rules.iter().cloned().map(Frame::ChlAuth).collect();
        f.extend(self.authinfo.values().cloned().map(Frame::AuthInfo));
        f
    }
}

/// SET CHLAUTH's ACTION.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChlAuthAction {
    Add,
    Replace,
    Remove,
    RemoveAll,
}

impl QueueManager {
    /// SET AUTHREC: grants `auths` (replacing the record with the same key).
    pub fn set_authrec(&self, rec: AuthRec) -> MqResult<()> {
        self.log_durable(&Record::SetAuth(rec.clone()))?;
        let mut recs = write(&self.authrecs);
        recs.retain(|r| !same_key(r, &rec));
        recs.push(rec);
        Ok(())
    }

    /// DELETE AUTHREC.
    pub fn delete_authrec(
        &self,
        profile: &str,
        objtype: AuthObj,
        principal: &str,
        group: bool,
    ) -> MqResult<()> {
        let key = AuthRec {
            profile: profile.into(),
            objtype,
            principal: principal.into(),
            auths: 0,
            group,
        };
        if !read(&self.authrecs).iter().any(|r| same_key(r, &key)) {
            return mqerr!(
                UnknownObjectName,
                "no authority record for '{principal}' on {} profile '{profile}'",
                objtype.name()
            );
        }
        self.log_durable(&Record::DeleteAuth(key.clone()))?;
        write(&self.authrecs).retain(|r| !same_key(r, &key));
        Ok(())
    }

    /// Every authority record.
    pub fn authrecs(&self) -> Vec<AuthRec> {
        read(&self.authrecs).clone()
    }

    /// Fails with 2035 unless `principal` holds `needed` on the object (or is the administrator,
    /// or checks are off).
    pub fn check_authority(
        &self,
        principal: &str,
        objtype: AuthObj,
        name: &str,
        needed: u32,
    ) -> MqResult<()> {
        if self.cfg.admin.as_deref() == Some(principal) {
            return Ok(());
        }
        self.check_records(principal, objtype, name, needed, false)
    }

    /// 2035 unless the records grant `needed`. With `explicit` the administrator passes only
    /// with a record too: for what even the queue manager's own user must be granted by name
    /// (puts to system queues from outside the administration paths); the refusal is worded
    /// for a system queue.
    pub fn check_records(
        &self,
        principal: &str,
        objtype: AuthObj,
        name: &str,
        needed: u32,
        explicit: bool,
    ) -> MqResult<()> {
        if self.cfg.admin.is_none() {
            return Ok(());
        }
        let has = self.authorities_of(principal, objtype, name);
        if has & needed == needed {
            return Ok(());
        }
        let missing = crate::authority::auth::names(needed & !has).join(",");
        let t = objtype.name();
        if explicit {
            return mqerr!(
                NotAuthorized,
                "'{principal}' is not authorized to {missing} on system queue '{name}': system \
                 queues take puts only from the queue manager's administration paths, or with \
                 SET AUTHREC PROFILE('{name}') OBJTYPE({t}) PRINCIPAL('{principal}') AUTHADD({missing})"
            );
        }
        mqerr!(
            NotAuthorized,
            "'{principal}' is not authorized to {missing} on {t} '{name}'"
        )
    }

    /// The administrator principal (the queue manager's own user), if authority is checked.
    pub fn admin(&self) -> Option<&str> {
        self.cfg.admin.as_deref()
    }

    /// What `principal` may do on an object: its own records united with those of its OS
    /// groups (looked up only when some record names a group).
    pub fn authorities_of(&self, principal: &str, objtype: AuthObj, name: &str) -> u32 {
        // The creator of a temporary dynamic queue holds every authority on it (MQ's rule).
        if objtype == AuthObj::Queue
            && read(&self.dyn_owners).get(name).map(String::as_str) == Some(principal)
        {
            return crate::authority::auth::ALL;
        }
        let recs = read(&self.authrecs);
        let groups = if recs.iter().any(|r| r.group) {
            crate::authority::os_groups(principal)
        } else {
            Vec::new()
        };
        crate::authority::authorities_with_groups(&recs, objtype, name, principal, &groups)
    }

    /// Stores a channel authentication record, replacing one with the same key.
    pub fn set_chlauth(&self, r: ChlAuthRec) -> MqResult<()> {
        r.validate()?;
        self.log_durable(&Record::SetChlAuth(r.clone()))?;
        write(&self.sec).set_rule(r);
        Ok(())
    }

    fn remove_chlauth(&self, r: &ChlAuthRec) -> MqResult<()> {
        self.log_durable(&Record::DeleteChlAuth(r.clone()))?;
        write(&self.sec).remove_rule(r);
        Ok(())
    }

    /// SET CHLAUTH with MQ's actions: ADD (a new mapping; for BLOCKUSER/BLOCKADDR, entries
    /// added to the list), REPLACE, REMOVE (a mapping; list entries), REMOVEALL (the list, or
    /// every mapping of that type and profile). Returns what changed, for the reply.
    pub fn chlauth_action(&self, r: ChlAuthRec, action: ChlAuthAction) -> MqResult<String> {
        let existing = read(&self.sec)
            .rules
            .iter()
            .find(|x| x.key() == r.key())
            .cloned();
        let what = r.describe();
        match (action, r.rtype.is_block()) {
            (ChlAuthAction::Replace, _) => {
                self.set_chlauth(r)?;
                Ok(format!("{what} set"))
            }
            (ChlAuthAction::Add, false) => {
                if existing.is_some() {
                    return mqerr!(
                        ObjectAlreadyExists,
                        "{what} already exists: use ACTION(REPLACE) to change it"
                    );
                }
                self.set_chlauth(r)?;
                Ok(format!("{what} added"))
            }
            (ChlAuthAction::Add, true) => {
                let mut merged = existing.unwrap_or_else(|| r.clone());
                for u in &r.userlist {
                    if !merged.userlist.contains(u) {
                        merged.userlist.push(u.clone());
                    }
                }
                for a in &r.addrlist {
                    if !merged.addrlist.contains(a) {
                        merged.addrlist.push(a.clone());
                    }
                }
                merged.warn = r.warn;
                if !r.descr.is_empty() {
                    merged.descr = r.descr.clone();
                }
                let shown = merged.describe();
                self.set_chlauth(merged)?;
                Ok(format!("{shown} set"))
            }
            (ChlAuthAction::Remove, false) => {
                if existing.is_none() {
                    return mqerr!(UnknownObjectName, "{what} does not exist");
                }
                self.remove_chlauth(&r)?;
                Ok(format!("{what} removed"))
            }
            (ChlAuthAction::Remove, true) => {
                let Some(mut rec) = existing else {
                    return mqerr!(UnknownObjectName, "{what} does not exist");
                };
                rec.userlist.retain(|u| !r.userlist.contains(u));
                rec.addrlist.retain(|a| !r.addrlist.contains(a));
                if rec.userlist.is_empty() && rec.addrlist.is_empty() {
                    self.remove_chlauth(&rec)?;
                    Ok(format!("{what} removed"))
                } else {
                    let shown = rec.describe();
                    self.set_chlauth(rec)?;
                    Ok(format!("{shown} left"))
                }
            }
            (ChlAuthAction::RemoveAll, _) => {
                let gone: Vec<ChlAuthRec> = read(&self.sec)
                    .rules
                    .iter()
                    .filter(|x| x.rtype == r.rtype && x.profile == r.profile)
                    .cloned()
                    .collect();
                for g in &gone {
                    self.remove_chlauth(g)?;
                }
                Ok(format!(
                    "{} {} record(s) of CHLAUTH('{}') removed",
                    gone.len(),
                    r.rtype.name(),
                    r.profile
                ))
            }
        }
    }

    /// Every channel authentication record.
    pub fn chlauth_rules(&self) -> Vec<ChlAuthRec> {
        read(&self.sec).rules.clone()
    }

    /// Judges a partner starting inbound channel `p.channel` that would run as
    /// `channel_user`. With CHLAUTH(DISABLED) everyone is allowed as the channel says.
    pub fn check_channel(&self, p: &Partner<'_>, channel_user: &str) -> Decision {
        if !read(&self.qmgr).chlauth_enabled {
            return Decision::Allow {
                user: channel_user.to_string(),
                chckclnt: crate::chlauth::ChckClnt::AsQmgr,
                warnings: Vec::new(),
            };
        }
        let admin = self.cfg.admin.clone().unwrap_or_default();
        crate::chlauth::evaluate(&read(&self.sec).rules, p, channel_user, &admin)
    }

    /// Why a connection from `ip` is refused by a BLOCKADDR rule before anything else is done
    /// with it (`None`: not blocked, or CHLAUTH(DISABLED)). Rules with WARN(YES) only warn,
    /// later, in [`check_channel`](Self::check_channel).
    pub fn address_blocked(&self, ip: &str) -> Option<String> {
        if !read(&self.qmgr).chlauth_enabled {
            return None;
        }
        read(&self.sec)
            .rules
            .iter()
            .filter(|r| r.rtype == RuleType::BlockAddr && !r.warn)
            .find(|r| {
                r.addrlist
                    .iter()
                    .any(|a| crate::chlauth::address_matches(a, ip))
            })
            .map(|r| format!("address {ip} is blocked by {}", r.describe()))
    }

    /// Whether any rule of `rtype` exists (for DISPLAY).
    pub fn has_chlauth(&self, rtype: RuleType) -> bool {
        read(&self.sec).rules.iter().any(|r| r.rtype == rtype)
    }

    /// DEFINE (or ALTER, `replace`) AUTHINFO.
    pub fn define_authinfo(&self, a: AuthInfoDef) -> MqResult<()> {
        a.validate()?;
        self.log_durable(&Record::DefineAuthInfo(a.clone()))?;
        write(&self.sec).authinfo.insert(a.name.clone(), a);
        Ok(())
    }

    /// DELETE AUTHINFO: refused while ALTER QMGR CONNAUTH names it.
    pub fn delete_authinfo(&self, name: &str) -> MqResult<()> {
        if !read(&self.sec).authinfo.contains_key(name) {
            return mqerr!(UnknownObjectName, "AUTHINFO '{name}' is not defined");
        }
        if read(&self.qmgr).connauth == name {
            return mqerr!(
                ObjectInUse,
                "AUTHINFO '{name}' is the queue manager's CONNAUTH: ALTER QMGR CONNAUTH(' ') first"
            );
        }
        self.log_durable(&Record::DeleteAuthInfo(name.to_string()))?;
        write(&self.sec).authinfo.remove(name);
        Ok(())
    }

    pub fn authinfo(&self, name: &str) -> Option<AuthInfoDef> {
        read(&self.sec).authinfo.get(name).cloned()
    }

    pub fn authinfos(&self) -> Vec<AuthInfoDef> {
        let mut v: Vec<AuthInfoDef> = read(&self.sec).authinfo.values().cloned().collect();
        v.sort_by(|a, b| a.name.cmp(&b.name));
        v
    }

    /// The AUTHINFO in force (ALTER QMGR CONNAUTH), if any.
    pub fn connauth(&self) -> Option<AuthInfoDef> {
        let name = read(&self.qmgr).connauth.clone();
        if name.trim().is_empty() {
            return None;
        }
        self.authinfo(&name)
    }
}

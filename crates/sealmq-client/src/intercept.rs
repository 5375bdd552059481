//! Client-side protection (SPEC §5.5.1): with a keystore, the client reads the policy of the
//! name it opens and protects on put and put1, unprotects on get and browse; the queue manager
//! never sees plaintext. One [`Protector`] per keystore per process, so key reuse spans every
//! connection and every put1 of the application.
//!
//! A message that fails a check on a destructive get is handed back to the queue manager for
//! the protection error queue (in the application's unit of work when it has one); the
//! application gets 2063.

use crate::{Client, ClientError, Result};
use sealmq_mqi::{Browse, GetOptions};
use sealmq_mqi::{Got, Md};
use sealmq_protect::{Keystore, Policy, Protector, Qop};
use sealmq_types::ReasonCode;
use sealmq_types::sync::lock;
use sealmq_wire::{Request, Response};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

#[derive(Default)]
pub(crate) struct State {
    pub(crate) protector: Option<Arc<Protector>>,
    /// Policies (and QM-side interception) of open handles.
    handles: HashMap<u32, (Option<Arc<Policy>>, bool)>,
    /// A unit of work is open on this connection.
    pub(crate) in_uow: bool,
    /// Raw mode: never protect or unprotect (`browse --raw`).
    pub(crate) raw: bool,
    /// A policy whose next reused key may be made while the queue manager works on the
    /// request just sent (see [`State::idle_work`]).
    pub(crate) next_key: Option<Arc<Policy>>,
    /// Wire version 7: the policies put1 read (none: `None`), by queue name, with the queue
    /// manager's policy epoch they were read at; a put1 carries the epoch and is refused
    /// (2041) when policies changed since, and then reads them again.
    put1_policies: HashMap<String, (Option<Arc<Policy>>, u64)>,
}

/// Queue names whose put1 policy is kept at most (past it the cache starts again).
const PUT1_POLICIES: usize = 1024;

pub(crate) fn security(detail: String) -> ClientError {
    ClientError {
        reason: ReasonCode::SecurityError,
        detail,
    }
}

/// The process-wide protector for a keystore directory.
fn shared_protector(dir: &Path, opts: Option<sealmq_protect::Options>) -> Result<Arc<Protector>> {
    static ALL: OnceLock<Mutex<HashMap<PathBuf, Arc<Protector>>>> = OnceLock::new();
    let key = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    let mut map = lock(ALL.get_or_init(Default::default));
    if let Some(p) = map.get(&key) {
        return Ok(p.clone());
    }
    let ks = Keystore::load(dir).map_err(|e| security(format!("cannot load keystore: {e}")))?;
    let p = Arc::new(match opts {
        Some(o) => Protector::with_options(ks, o),
        None => Protector::new(ks),
    });
    map.insert(key, p.clone());
    Ok(p)
}

impl State {
    pub(crate) fn opened(&mut self, hobj: u32, policy: &[u8], intercepted: bool) -> Result<()> {
        let policy = if policy.is_empty() {
            None
        } else {
            Some(Arc::new(sealmq_mqi::policy::decode(policy).map_err(
                |e| security(format!("unreadable policy from the queue manager: {e}")),
            )?))
        };
        self.handles.insert(hobj, (policy, intercepted));
        Ok(())
    }

    /// Work done between sending a request and reading its answer, time the client would
    /// otherwise spend waiting: making the next reused key of a policy it just put under, so
    /// that the put which uses up a key does not pay the wrap (SPEC §5.3). A failure here is
    /// not reported: the put that needs the key makes it and reports it.
    pub(crate) fn idle_work(&mut self) {
        if let (Some(policy), Some(p)) = (self.next_key.take(), &self.protector) {
            let _ = p.prepare_next_key(&policy);
        }
    }

    /// Whether this side protects and unprotects the messages of `hobj` (client-side
    /// protection, not raw).
    pub(crate) fn protects(&self, hobj: u32) -> bool {
        self.policy(hobj).is_some()
    }

    /// What a consumer of `hobj` unprotects with: the policy and the protector (`None`: the
    /// handle has no policy this side applies). An error when it has one and no keystore.
    pub(crate) fn guard(&self, hobj: u32) -> Result<Option<(Arc<Policy>, Arc<Protector>)>> {
        let Some(policy) = self.policy(hobj).cloned() else {
            return Ok(None);
        };
        match &self.protector {
            Some(p) => Ok(Some((policy, p.clone()))),
            None => Err(security(format!(
                "queue '{}' has a security policy ({}); the application needs a keystore (--keystore or SEALMQ_KEYSTORE)",
                policy.name,
                policy.qop()
            ))),
        }
    }

    /// The policy this client must apply for a handle, if any.
    fn policy(&self, hobj: u32) -> Option<&Arc<Policy>> {
        if self.raw {
            return None;
        }
        match self.handles.get(&hobj) {
            // A policy with no algorithms protects nothing.
            Some((Some(p), false)) if p.qop() != Qop::None => Some(p),
            _ => None,
        }
    }
}

impl Client {
    /// Protects and unprotects with the identity and trust of the keystore in `dir`.
    pub fn set_keystore(&mut self, dir: &Path) -> Result<()> {
        self.icpt.protector = Some(shared_protector(dir, None)?);
        Ok(())
    }

    /// [`Client::set_keystore`] with protection options (the first use of a keystore in the
    /// process decides them), e.g. the insecure RSA-1024 switch.
    pub fn set_keystore_with(&mut self, dir: &Path, opts: sealmq_protect::Options) -> Result<()> {
        self.icpt.protector = Some(shared_protector(dir, Some(opts))?);
        Ok(())
    }

    /// Raw mode: messages are put and got exactly as stored (no protection applied or removed).
    pub fn set_raw(&mut self, raw: bool) {
        self.icpt.raw = raw;
    }

    /// Counters of the protector in use (operations per message in benchmarks).
    pub fn protection_counters(&self) -> Option<sealmq_protect::counters::Snapshot> {
        self.icpt.protector.as_ref().map(|p| p.counters())
    }

    pub(crate) fn protect_for(&self, policy: &Policy, md: &Md, payload: &[u8]) -> Result<Vec<u8>> {
        if policy.qop() == Qop::None {
            return Ok(payload.to_vec());
        }
        let Some(p) = &self.icpt.protector else {
            return Err(security(format!(
                "queue '{}' has a security policy ({}); the application needs a keystore (--keystore or SEALMQ_KEYSTORE)",
                policy.name,
                policy.qop()
            )));
        };
        let original = md.protection_original();
        p.protect(policy, payload, original)
            .map_err(|e| security(e.to_string()))
    }

    /// MQPUT; protected first when the queue has a policy. `md` comes back filled.
    pub fn put(&mut self, hobj: u32, md: &mut Md, payload: &[u8], syncpoint: bool) -> Result<()> {
        let stored = match self.icpt.policy(hobj).cloned() {
            Some(policy) => {
                let stored = self.protect_for(&policy, md, payload)?;
                // Whether a next key is due is the protector's to decide (idle_work).
                self.icpt.next_key = Some(policy);
                stored
            }
            None => payload.to_vec(),
        };
        self.put_raw(hobj, md, stored, syncpoint)?;
        self.icpt.in_uow |= syncpoint;
        Ok(())
    }

    /// MQPUT1; the policy is read for the name (this is an open) and applied — from a wire
    /// version 7 queue manager once, then from the cache while its policies do not change.
    pub fn put1(&mut self, name: &str, md: &mut Md, payload: &[u8], syncpoint: bool) -> Result<()> {
        if self.version >= sealmq_wire::V_POLICY_EPOCH
            && !self.icpt.raw
            && self.icpt.protector.is_some()
        {
            return self.put1_cached(name, md, payload, syncpoint);
        }
        let stored = if self.icpt.raw || self.icpt.protector.is_none() {
            payload.to_vec()
        } else {
            match self.call(Request::Policy {
                name: name.to_string(),
            })? {
                Response::Policy { policy } if !policy.is_empty() => {
                    let p = Arc::new(
                        sealmq_mqi::policy::decode(&policy).map_err(|e| security(e.to_string()))?,
                    );
                    let stored = self.protect_for(&p, md, payload)?;
                    self.icpt.next_key = Some(p);
                    stored
                }
                _ => payload.to_vec(),
            }
        };
        self.put1_raw(name, md, stored, syncpoint)?;
        self.icpt.in_uow |= syncpoint;
        Ok(())
    }

    /// Put1 under the cached policy of `name` (read first when not cached); read again and
    /// retried once when the queue manager's policies changed since (2041).
    fn put1_cached(&mut self, name: &str, md: &mut Md, payload: &[u8], sync: bool) -> Result<()> {
        for fresh in [false, true] {
            let (policy, epoch) = match self.icpt.put1_policies.get(name) {
                Some(c) if !fresh => c.clone(),
                _ => self.read_policy_at(name)?,
            };
            let stored = match &policy {
                Some(p) => self.protect_for(p, md, payload)?,
                None => payload.to_vec(),
            };
            match self.put1_at_raw(name, md, stored, sync, epoch) {
                Err(e) if e.reason == ReasonCode::ObjectChanged && !fresh => {
                    self.icpt.put1_policies.clear();
                }
                r => {
                    r?;
                    self.icpt.next_key = policy;
                    self.icpt.in_uow |= sync;
                    return Ok(());
                }
            }
        }
        Err(ClientError {
            reason: ReasonCode::ObjectChanged,
            detail: format!("the policy of '{name}' kept changing while it was put to"),
        })
    }

    /// Reads `name`'s policy and the epoch it holds in, and caches them.
    fn read_policy_at(&mut self, name: &str) -> Result<(Option<Arc<Policy>>, u64)> {
        let (policy, epoch) = match self.call(Request::Policy {
            name: name.to_string(),
        })? {
            Response::PolicyAt { policy, epoch } => (policy, epoch),
            other => return Self::unexpected(other),
        };
        let policy = match policy.is_empty() {
            true => None,
            false => Some(Arc::new(
                sealmq_mqi::policy::decode(&policy).map_err(|e| security(e.to_string()))?,
            )),
        };
        let cache = &mut self.icpt.put1_policies;
        if cache.len() >= PUT1_POLICIES {
            cache.clear();
        }
        cache.insert(name.to_string(), (policy.clone(), epoch));
        Ok((policy, epoch))
    }

    /// MQGET; unprotected (and checked) when the queue has a policy. A message that fails a
    /// check gives 2063 and, on a destructive get, goes to the protection error queue in the
    /// same unit of work.
    pub fn get(&mut self, hobj: u32, gmo: &GetOptions) -> Result<Got> {
        if !self.icpt.protects(hobj)
            && let Some(g) = self.read_ahead_get(hobj, gmo)?
        {
            return Ok(g);
        }
        let Some(policy) = self.icpt.policy(hobj).cloned() else {
            let g = self.get_raw(hobj, gmo)?;
            self.icpt.in_uow |= gmo.syncpoint;
            return Ok(g);
        };
        let Some(p) = self.icpt.protector.clone() else {
            return Err(security(format!(
                "queue '{}' has a security policy ({}); the application needs a keystore (--keystore or SEALMQ_KEYSTORE)",
                policy.name,
                policy.qop()
            )));
        };
        let browsing = matches!(gmo.browse, Browse::First | Browse::Next);
        // Outside a unit of work the get is not made transactional (that would cost a second
        // round trip per message): a message failing its checks is moved to the error queue
        // at once, by the queue manager, right after it was got. Inside one, the move joins it.
        // A get with a buffer that must not truncate may have to leave the message on the
        // queue (2080), which only a unit of work can do once the envelope is taken: such a
        // get outside any unit of work runs in one of its own (one more round trip).
        let own_uow = !browsing
            && !gmo.syncpoint
            && !gmo.accept_truncated
            && gmo.buffer.is_some()
            && !self.icpt.in_uow;
        let mut opts = gmo.clone();
        opts.syncpoint |= own_uow;
        // The envelope is larger than the payload: take it whole, truncate after.
        opts.buffer = None;
        let got = self.get_raw(hobj, &opts)?;
        match p.unprotect(&policy, &got.payload) {
            Ok(u) => {
                self.icpt.in_uow |= opts.syncpoint;
                let fits = gmo.buffer.is_none_or(|b| b >= u.payload.len());
                if own_uow {
                    if fits {
                        self.commit()?;
                    } else {
                        self.backout()?;
                    }
                }
                let mut md = got.md;
                if let Some(o) = &u.original {
                    md.restore_original(o);
                }
                let data_len = u.payload.len();
                let mut payload = u.payload;
                let mut warning = None;
                if let Some(b) = gmo.buffer
                    && b < data_len
                {
                    if !gmo.accept_truncated && !browsing {
                        // Backed out above when the get ran in its own unit of work; inside
                        // the application's, the message stays with that unit.
                        return Err(ClientError {
                            reason: ReasonCode::TruncatedMsgFailed,
                            detail: format!(
                                "message of {data_len} bytes does not fit the {b}-byte buffer"
                            ),
                        });
                    }
                    payload.truncate(b);
                    warning = Some(sealmq_types::ReasonCode::TruncatedMsgAccepted);
                }
                Ok(Got {
                    md,
                    payload,
                    data_len,
                    warning,
                    seq: 0,
                })
            }
            Err(e) => {
                if !browsing {
                    let check = e.check().map(|c| c.name().to_string()).unwrap_or_default();
                    let signer = sealmq_protect::inspect(&got.payload, false)
                        .ok()
                        .and_then(|i| i.signer)
                        .unwrap_or_default();
                    let report = Request::ProtectionError {
                        hobj,
                        md: got.md.clone(),
                        payload: got.payload.clone(),
                        check,
                        detail: e.to_string(),
                        signer,
                        syncpoint: opts.syncpoint,
                    };
                    self.call(report)?;
                    self.icpt.in_uow |= opts.syncpoint;
                    if own_uow {
                        self.commit()?;
                    }
                }
                Err(security(e.to_string()))
            }
        }
    }
}

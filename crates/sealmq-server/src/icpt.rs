//! QM-side interception (SPEC §5.5.2): on a SVRCONN channel with INTERCEPT(YES) the queue
//! manager protects puts and unprotects gets with its own identity for the applications on it.

use crate::dispatch::{err, get_options};
use sealmq_engine::mqi::Browse;
use sealmq_engine::{Connection, Hobj, QueueManager};
use sealmq_wire::{GetReq, Response};

/// QM-side interception for one connection (SPEC §5.5.2): on a SVRCONN channel with
/// INTERCEPT(YES) the queue manager protects puts and unprotects gets with its own identity.
pub(crate) struct Icpt<'a> {
    pub(crate) on: bool,
    pub(crate) protector: Option<&'a sealmq_protect::Protector>,
    /// The size of the message as stored, when this request protected or unprotected one
    /// (accounting reports stored sizes).
    pub(crate) stored: std::cell::Cell<Option<u64>>,
}

pub(crate) fn security(detail: String) -> Response {
    Response::Err {
        reason: 2063,
        detail,
    }
}

impl Icpt<'_> {
    /// Errors are 2063 details.
    fn protector(&self) -> Result<&sealmq_protect::Protector, String> {
        self.protector.ok_or_else(|| {
            "the queue manager has no keystore to protect with (<QM dir>/keystore)".to_string()
        })
    }

    /// The bytes to store for a put to `name`: protected under its policy, unless they are
    /// already a protected message (never protected twice).
    pub(crate) fn protect(
        &self,
        qm: &QueueManager,
        name: &str,
        md: &sealmq_engine::Md,
        payload: Vec<u8>,
    ) -> Result<Vec<u8>, String> {
        if !self.on || sealmq_protect::header::has_magic(&payload) {
            return Ok(payload);
        }
        let Some(policy) = qm
            .policy(name)
            .filter(|p| p.qop() != sealmq_protect::Qop::None)
        else {
            return Ok(payload);
        };
        let original = md.protection_original();
        let stored = self
            .protector()?
            .protect(&policy, &payload, original)
            .map_err(|e| e.to_string())?;
        self.stored.set(Some(stored.len() as u64));
        Ok(stored)
    }

    /// A get under a policy: unprotected for the application; a message failing a check
    /// moves to the error queue in the same unit of work and the application gets 2063.
    pub(crate) fn get(
        &self,
        qm: &QueueManager,
        conn: &Connection,
        h: &Hobj,
        g: &GetReq,
    ) -> Response {
        let Some(policy) = qm.policy(&h.name) else {
            return Response::Err {
                reason: 2195,
                detail: "policy vanished".into(),
            };
        };
        let p = match self.protector() {
            Ok(p) => p,
            Err(e) => return security(e),
        };
        let gmo = get_options(g);
        let browsing = matches!(gmo.browse, Browse::First | Browse::Next);
        let own_uow = !browsing && !gmo.syncpoint && !conn.in_uow();
        let mut opts = gmo.clone();
        opts.syncpoint = gmo.syncpoint || own_uow;
        opts.buffer = None;
        let got = match conn.get(h, opts.clone()) {
            Ok(g) => g,
            Err(e) => return err(e),
        };
        self.stored.set(Some(got.payload.len() as u64));
        match p.unprotect(&policy, &got.payload) {
            Ok(u) => {
                let mut md = got.md;
                if let Some(o) = &u.original {
                    md.restore_original(o);
                }
                let data_len = u.payload.len();
                let mut payload = u.payload;
                let mut warning = 0;
                if let Some(b) = gmo.buffer
                    && b < data_len
                {
                    if !gmo.accept_truncated && !browsing {
                        if own_uow {
                            let _ = conn.backout();
                        }
                        return Response::Err {
                            reason: 2080,
                            detail: format!(
                                "message of {data_len} bytes does not fit the {b}-byte buffer"
                            ),
                        };
                    }
                    payload.truncate(b);
                    warning = 2079;
                }
                if own_uow && let Err(e) = conn.commit() {
                    return err(e);
                }
                Response::Got {
                    md,
                    payload,
                    data_len: data_len as u64,
                    warning,
                }
            }
            Err(e) => {
                if !browsing {
                    let failure = sealmq_engine::dlh::ProtectionFailure {
                        check: e.check().map(|c| c.name().to_string()).unwrap_or_default(),
                        detail: e.to_string(),
                        signer: sealmq_protect::inspect(&got.payload, false)
                            .ok()
                            .and_then(|i| i.signer)
                            .unwrap_or_default(),
                    };
                    let _ = conn.put_protection_error(
                        &h.name,
                        failure,
                        &got.md,
                        &got.payload,
                        opts.syncpoint,
                    );
                    if own_uow {
                        let _ = conn.commit();
                    }
                }
                security(e.to_string())
            }
        }
    }
}

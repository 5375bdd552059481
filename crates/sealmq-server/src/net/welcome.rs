//! What every application connection goes through before its first request, whichever
//! listener took it: the whole time its first frame has, the Hello answered and the principal
//! admitted (`welcome`, on the blocking pool: PAM may block), and the SVRCONN's DISCINT.

use crate::peer::Peer;
use crate::session::Negotiated;
use crate::wiremap::err;
use crate::{Ctx, HANDSHAKE, admit};
use sealmq_engine::Connection;
use sealmq_engine::QueueManager;
use sealmq_types::ReasonCode;
use sealmq_wire::Response;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// The whole time a new connection has for its TLS handshake and first frame, however it
/// trickles its bytes (each read also times out after [`HANDSHAKE`] of silence).
pub(crate) const FIRST_FRAME_TOTAL: std::time::Duration = std::time::Duration::from_secs(20);

/// A SVRCONN channel's DISCINT, when it has one: how long a client may stay silent.
pub(crate) fn svrconn_discint(qm: &QueueManager, channel: &str) -> Option<Duration> {
    if channel.is_empty() {
        return None;
    }
    qm.channel(channel)
        .filter(|c| c.chltype == sealmq_engine::channels::ChlType::Svrconn && c.discint > 0)
        .map(|c| Duration::from_secs(c.discint.into()))
}

/// Logs a read that ended at the deadline (not a peer that simply went away).
pub(crate) fn missed_deadline(e: &std::io::Error, ctx: &Ctx, peer: &Peer, what: &str) {
    if matches!(
        e.kind(),
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
    ) {
        ctx.security.events.log(&format!(
            "{} {what} within {} s: closed",
            peer.describe(),
            HANDSHAKE.as_secs()
        ));
    }
}

/// Counts a connection while it is served.
pub(crate) struct Active(Arc<std::sync::atomic::AtomicUsize>);

impl Active {
    /// Counts one more connection served, until dropped.
    pub(crate) fn count(ctx: &Ctx) -> Active {
        ctx.active.fetch_add(1, Ordering::Relaxed);
        Active(ctx.active.clone())
    }
}

impl Drop for Active {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// What a connection's Hello settled once admitted.
pub(crate) struct Admitted {
    pub(crate) admin: bool,
    pub(crate) intercept: bool,
    pub(crate) user: String,
    pub(crate) appl: String,
    pub(crate) channel: String,
    pub(crate) version: u16,
    pub(crate) max_frame: usize,
    /// The SVRCONN's heartbeat interval (a dead client is looked for that often).
    pub(crate) hbint: Option<u32>,
}

impl Admitted {
    pub(crate) fn negotiated(&self) -> Negotiated<'_> {
        Negotiated {
            version: self.version,
            intercept: self.intercept,
            appl: &self.appl,
            user: &self.user,
        }
    }
}

/// A Hello answered: a version both speak, the principal admitted (authentication, CHLAUTH,
/// MAXINST...: may block on PAM) and connected. `Ok`: the connection and the HelloOk to send;
/// `Err`: the refusal to send before closing.
#[allow(clippy::result_large_err)] // once per connection
pub(crate) fn welcome(
    qm: &Arc<QueueManager>,
    ctx: &Ctx,
    peer: &Peer,
    hello: sealmq_wire::Hello,
) -> Result<(Connection, Admitted, Response), Response> {
    let sealmq_wire::Hello {
        versions,
        max_msg: client_max,
        appl,
        channel,
        user: asserted,
        password,
    } = hello;
    if !versions.iter().any(|v| sealmq_wire::VERSIONS.contains(v)) {
        return Err(Response::Err {
            reason: ReasonCode::UnexpectedError.code(),
            detail: format!(
                "no common protocol version (server speaks {:?}, client {:?})",
                sealmq_wire::VERSIONS,
                versions
            ),
        });
    }
    let version = versions
        .iter()
        .copied()
        .filter(|v| sealmq_wire::VERSIONS.contains(v))
        .max()
        .unwrap_or(1);
    let hello = admit::Hello {
        appl: &appl,
        channel: &channel,
        user: &asserted,
        password: password.expose(),
    };
    let admitted = admit::admit(qm, &ctx.security, &ctx.instances, peer, &hello)
        .map_err(|(reason, detail)| Response::Err { reason, detail })?;
    drop(password);
    let user = admitted.user;
    let conn = Connection::connect(qm, &user, &appl).map_err(err)?;
    conn.set_origin(peer.origin(&channel));
    // A get that waits notices within HBINT an application that went away (its unit of
    // work is then backed out as the connection ends).
    let hbint = qm
        .channel(if channel.is_empty() {
            sealmq_engine::channels::DEFAULT_SVRCONN
        } else {
            &channel
        })
        .map(|c| c.hbint);
    let max_msg = client_max.min(qm.qmgr().max_msg_len).max(1024);
    let ok = Response::HelloOk {
        version,
        max_msg,
        qmgr: qm.name(),
        user: user.clone(),
    };
    Ok((
        conn,
        Admitted {
            admin: admitted.admin,
            intercept: admitted.intercept,
            user,
            appl,
            channel,
            version,
            max_frame: max_msg as usize + sealmq_wire::FRAME_OVERHEAD,
            hbint,
        },
        ok,
    ))
}

/// Logs a client ended for its SVRCONN's DISCINT.
pub(crate) fn discint_ended(channel: &str, peer: &str, limit: std::time::Duration) {
    tracing::info!(
        channel = %channel,
        peer = %peer,
        "client idle for DISCINT({}) seconds: connection ended",
        limit.as_secs()
    );
}

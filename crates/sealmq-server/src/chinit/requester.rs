//! Requester and server channels (RQSTR ↔ SVR, SPEC §6). The requester connects to the server
//! channel's queue manager and asks for its channel; the server then sends on that connection
//! exactly as a sender does, and the requester receives exactly as a receiver does. The
//! requester retries its connection (SHORTRTY/LONGRTY); the server end ends with its connection.

use super::net::Link;
use super::receiver::{PeerInfo, admit, refuse, serve_as};
use super::{Initiator, Run};
use sealmq_engine::channels::ChlType;
use sealmq_types::ReasonCode;
use sealmq_wire::chl::{CHL_VERSIONS, ChlFrame};
use std::io::{Read, Write};
use std::sync::Arc;
use std::time::Instant;

/// The requester's thread: connect, ask, receive; retry until stopped.
pub(crate) fn main(ci: Arc<Initiator>, run: Arc<Run>) {
    let mut attempt = 0u32;
    while !run.stop_requested() {
        let Some(def) = run.bind(&ci.qm) else {
            break;
        };
        let started = Instant::now();
        let ask = ChlFrame::Request {
            versions: CHL_VERSIONS.to_vec(),
            channel: def.name.clone(),
            qmgr: ci.qm.name(),
        };
        let err = match Link::connect_first(&def, &ci.keystore_dir, &ask) {
            Err(e) => e,
            Ok(a) => {
                run.set_sock(a.link.tcp.try_clone().ok());
                run.status().conname = a.addr;
                match a.answer {
                    start @ ChlFrame::Start { .. } => {
                        if let ChlFrame::Start { hbint, .. } = &start {
                            super::receiver::set_silence_limit(
                                &a.link.tcp,
                                (*hbint).min(def.hbint),
                            );
                        }
                        // Started here, not by a partner: no CHLAUTH (as MQ), the channel's user.
                        let user = super::receiver::channel_user(&ci.qm, &def);
                        serve_as(&ci, &run, &def, &user, start, a.link.r, a.link.w);
                        run.status().error.clone()
                    }
                    ChlFrame::Refused { reason, detail } => {
                        format!("the partner refused the channel [{reason}]: {detail}")
                    }
                    other => format!("unexpected answer {other:?}"),
                }
            }
        };
        if run.stop_requested() {
            break;
        }
        if !run.retry_after(&def, &mut attempt, started, err) {
            break;
        }
    }
    run.finish();
}

/// The server end: a requester connected and asked for channel `req`.
pub(crate) fn serve_request(
    ci: &Arc<Initiator>,
    req: ChlFrame,
    r: Box<dyn Read + Send>,
    mut w: Box<dyn Write + Send>,
    peer: PeerInfo,
) {
    let ChlFrame::Request {
        versions,
        channel,
        qmgr,
    } = req
    else {
        return;
    };
    if !versions.contains(&1) {
        return refuse(
            &mut w,
            ReasonCode::UnexpectedError,
            format!("no common channel protocol version (this end speaks {CHL_VERSIONS:?})"),
        );
    }
    let def = match admit(ci, &channel, &peer, ChlType::Svr, &qmgr) {
        Ok((d, _)) => d,
        Err((reason, detail)) => return refuse(&mut w, reason, detail),
    };
    let Some(tcp) = peer.sock else {
        return refuse(
            &mut w,
            ReasonCode::UnexpectedError,
            "channels run over TCP".into(),
        );
    };
    let link = Link::accepted(r, w, tcp, peer.negotiated.clone());
    super::sender::serve_svr(ci, &def, link, &peer.addr);
}

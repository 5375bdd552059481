//! PING CHANNEL: checks that a sender's partner answers — the connection (and TLS, when the
//! channel has SSLCIPH), the partner's listener and its receiver definition — without sending
//! a message or touching either end's sequence numbers. Refused while the channel runs.

use super::net::Link;
use super::sync::{Role, SyncQ};
use super::{Control, fail};
use sealmq_engine::Connection;
use sealmq_engine::MqResult;
use sealmq_engine::channels::ChlType;
use sealmq_types::ReasonCode;
use sealmq_wire::chl::{CHL_VERSIONS, ChlFrame, write_chl};
use std::io::Write;
use std::time::Instant;

impl Control {
    pub(crate) fn ping_channel(&self, name: &str) -> MqResult<String> {
        let def = self.def(name)?;
        if !matches!(def.chltype, ChlType::Sdr | ChlType::Svr) || def.conname.is_empty() {
            return Err(fail(
                ReasonCode::OptionNotValidForType,
                format!(
                    "PING CHANNEL needs a sending channel with CONNAME; {name} is {}",
                    def.chltype.name()
                ),
            ));
        }
        if self.running(name).is_some() {
            return Err(fail(
                ReasonCode::ObjectInUse,
                format!("channel {name} is running: it is answering already"),
            ));
        }
        let committed = Connection::connect_internal(&self.qm)
            .ok()
            .and_then(|c| {
                let sq = SyncQ::open(&c, Role::Sender, name).ok()?;
                let r = sq.load_opt(&c).ok().flatten();
                sq.close(&c);
                r.map(|r| r.seq)
            })
            .unwrap_or(0);
        let began = Instant::now();
        let unreachable = |m: String| {
            fail(
                ReasonCode::ChannelNotAvailable,
                format!("PING CHANNEL({name}): {m}"),
            )
        };
        let start = ChlFrame::Start {
            versions: CHL_VERSIONS.to_vec(),
            channel: def.name.clone(),
            qmgr: self.qm.name(),
            batchsz: def.batchsz,
            max_msg: def.max_msg_len,
            hbint: def.hbint,
            committed_seq: committed,
            indoubt: None,
            reset_seq: None,
        };
        let mut a = Link::connect_first(&def, &self.keystore_dir, &start).map_err(unreachable)?;
        let _ = write_chl(&mut a.link.w, &ChlFrame::Close).and_then(|_| a.link.w.flush());
        let addr = a.addr;
        match a.answer {
            ChlFrame::StartOk { qmgr, .. } => Ok(format!(
                "AMQ8020I: Channel {name} pinged: {qmgr} answered at {addr} in {} ms.",
                began.elapsed().as_millis()
            )),
            ChlFrame::Refused { reason, detail } => Err(fail(
                ReasonCode::from_code(reason).unwrap_or(ReasonCode::ChannelNotAvailable),
                format!("PING CHANNEL({name}): the partner refused: {detail}"),
            )),
            other => Err(unreachable(format!("unexpected answer {other:?}"))),
        }
    }
}

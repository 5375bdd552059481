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
use sealmq_wire::chl::{CHL_VERSIONS, ChlFrame, read_chl, write_chl};
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
        let mut link = Link::connect(&def, &self.keystore_dir).map_err(unreachable)?;
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
        write_chl(&mut link.w, &start)
            .and_then(|_| link.w.flush())
            .map_err(|e| unreachable(e.to_string()))?;
        let answer = read_chl(&mut link.r, sealmq_wire::HELLO_MAX);
        let _ = write_chl(&mut link.w, &ChlFrame::Close).and_then(|_| link.w.flush());
        match answer {
            Ok(Some(ChlFrame::StartOk { qmgr, .. })) => Ok(format!(
                "SMQ0148I Channel {name} pinged: {qmgr} answered at {} in {} ms.",
                def.conname,
                began.elapsed().as_millis()
            )),
            Ok(Some(ChlFrame::Refused { reason, detail })) => Err(fail(
                ReasonCode::from_code(reason).unwrap_or(ReasonCode::ChannelNotAvailable),
                format!("PING CHANNEL({name}): the partner refused: {detail}"),
            )),
            Ok(other) => Err(unreachable(format!("unexpected answer {other:?}"))),
            Err(e) => Err(unreachable(e.to_string())),
        }
    }
}

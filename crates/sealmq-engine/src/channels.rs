//! Channel definitions (SPEC §2.2, §6). This release serves SVRCONN channels (client
//! connections); the message channel types are defined here so MQSC and the log carry them,
//! and the channel initiator (a later issue) runs them.

use crate::error::{MqResult, mqerr};
use sealmq_storage::Result;
use sealmq_storage::codec::{Dec, Enc};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChlType {
    Sdr,
    Svr,
    Rcvr,
    Rqstr,
    Svrconn,
}

impl ChlType {
    pub fn parse(s: &str) -> Option<ChlType> {
        Some(match s.to_ascii_uppercase().as_str() {
            "SDR" => ChlType::Sdr,
            "SVR" => ChlType::Svr,
            "RCVR" => ChlType::Rcvr,
            "RQSTR" => ChlType::Rqstr,
            "SVRCONN" => ChlType::Svrconn,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            ChlType::Sdr => "SDR",
            ChlType::Svr => "SVR",
            ChlType::Rcvr => "RCVR",
            ChlType::Rqstr => "RQSTR",
            ChlType::Svrconn => "SVRCONN",
        }
    }

    fn byte(self) -> u8 {
        match self {
            ChlType::Sdr => 1,
            ChlType::Svr => 2,
            ChlType::Rcvr => 3,
            ChlType::Rqstr => 4,
            ChlType::Svrconn => 5,
        }
    }
}

/// A channel definition with MQ's defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChannelDef {
    pub name: String,
    pub chltype: ChlType,
    pub descr: String,
    pub conname: String,
    pub xmitq: String,
    pub batchsz: u32,
    pub hbint: u32,
    pub max_msg_len: u32,
    /// TLS cipher suite required (empty: no TLS needed; `ANY` accepts any suite).
    pub sslciph: String,
    /// Filter on the peer certificate's DN (`*` wildcards), empty: any.
    pub sslpeer: String,
    /// The principal applications on this channel run as (empty: their own).
    pub mcauser: String,
    /// SVRCONN: the queue manager protects and unprotects for the applications on this
    /// channel with its own identity (QM-side interception, SPEC §5.5.2).
    pub intercept: bool,
}

impl ChannelDef {
    pub fn new(name: &str, chltype: ChlType) -> ChannelDef {
        ChannelDef {
            name: name.to_string(),
            chltype,
            descr: String::new(),
            conname: String::new(),
            xmitq: String::new(),
            batchsz: 50,
            hbint: 300,
            max_msg_len: 4_194_304,
            sslciph: String::new(),
            sslpeer: String::new(),
            mcauser: String::new(),
            intercept: false,
        }
    }

    pub fn validate(&self) -> MqResult<()> {
        if self.name.is_empty()
            || self.name.len() > 20
            || !self
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '/' | '%'))
        {
            return mqerr!(
                ObjectNameError,
                "channel name '{}' must be 1-20 characters of A-Z a-z 0-9 . _ / %",
                self.name
            );
        }
        if matches!(self.chltype, ChlType::Sdr | ChlType::Rqstr) && self.conname.is_empty() {
            return mqerr!(
                OptionsError,
                "{} channel {} needs CONNAME",
                self.chltype.name(),
                self.name
            );
        }
        if self.intercept && self.chltype != ChlType::Svrconn {
            return mqerr!(
                OptionsError,
                "INTERCEPT applies only to SVRCONN channels; use SPLPROT on {} channel {}",
                self.chltype.name(),
                self.name
            );
        }
        if matches!(self.chltype, ChlType::Sdr | ChlType::Svr) && self.xmitq.is_empty() {
            return mqerr!(
                OptionsError,
                "{} channel {} needs XMITQ",
                self.chltype.name(),
                self.name
            );
        }
        Ok(())
    }

    pub fn encode(&self, e: &mut Enc) {
        e.str(&self.name)
            .u8(self.chltype.byte())
            .str(&self.descr)
            .str(&self.conname)
            .str(&self.xmitq)
            .u32(self.batchsz)
            .u32(self.hbint)
            .u32(self.max_msg_len)
            .str(&self.sslciph)
            .str(&self.sslpeer)
            .str(&self.mcauser)
            .bool(self.intercept);
    }

    pub fn decode(d: &mut Dec<'_>) -> Result<ChannelDef> {
        let name = d.str()?;
        let chltype = match d.u8()? {
            1 => ChlType::Sdr,
            2 => ChlType::Svr,
            3 => ChlType::Rcvr,
            4 => ChlType::Rqstr,
            5 => ChlType::Svrconn,
            other => {
                return Err(sealmq_storage::StorageError::Decode(format!(
                    "channel {name}: unknown channel type {other}"
                )));
            }
        };
        let mut c = ChannelDef::new(&name, chltype);
        c.descr = d.str()?;
        c.conname = d.str()?;
        c.xmitq = d.str()?;
        c.batchsz = d.u32()?;
        c.hbint = d.u32()?;
        c.max_msg_len = d.u32()?;
        c.sslciph = d.str()?;
        c.sslpeer = d.str()?;
        c.mcauser = d.str()?;
        c.intercept = d.bool()?;
        Ok(c)
    }
}

/// The default SVRCONN channel every queue manager has.
pub const DEFAULT_SVRCONN: &str = "SYSTEM.DEF.SVRCONN";

/// Whether a DN matches an SSLPEER filter: `*` matches any characters; attribute types are
/// compared without regard to case.
pub fn sslpeer_matches(filter: &str, dn: &str) -> bool {
    if filter.is_empty() {
        return true;
    }
    crate::authority::profile_matches(&filter.to_ascii_uppercase(), &dn.to_ascii_uppercase())
}

#[cfg(test)]
mod decode_tests {
    use super::*;
    use proptest::prelude::*;
    use sealmq_storage::codec::{Dec, Enc};

    #[test]
    fn an_unknown_channel_type_is_refused() {
        let mut c = ChannelDef::new("X", ChlType::Svrconn);
        c.mcauser = "app".into();
        let mut e = Enc::new();
        c.encode(&mut e);
        let mut bytes = e.buf;
        let back = ChannelDef::decode(&mut Dec::new(&bytes, "channel")).unwrap();
        assert_eq!(back.mcauser, "app");
        // The type byte follows the name (a u32 length and one byte).
        bytes[4 + 1] = 9;
        assert!(ChannelDef::decode(&mut Dec::new(&bytes, "channel")).is_err());
    }

    proptest! {
        #[test]
        fn garbage_never_panics(b in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = ChannelDef::decode(&mut Dec::new(&b, "channel"));
        }
    }
}

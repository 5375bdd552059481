//! Dead-letter headers (SPEC §3, §5.4): what a message carries when the queue manager moves it
//! to the dead-letter queue or the protection error queue. Stored as the message's payload
//! prefix (format `MQDEAD`): magic `DLH `, version, then the fields, then the original payload.

use sealmq_types::codec::{Dec, DecodeError, Enc, Result};

pub const FORMAT: &str = "MQDEAD";
const MAGIC: &[u8; 4] = b"DLH ";
const VERSION: u32 = 1;

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DeadLetterHeader {
    /// The reason code that sent the message here.
    pub reason: u32,
    /// For protection failures: the check that failed (SPEC §5.4), and what it said.
    pub check: String,
    pub detail: String,
    /// Where the message was going (or where it was got from).
    pub dest_q: String,
    pub dest_qm: String,
    /// The message's own format.
    pub orig_format: String,
    pub put_appl: String,
    pub put_time_ms: i64,
    /// Who got it (protection failures).
    pub getter: String,
    /// The signer's DN when known.
    pub signer: String,
    /// When it was moved here (ms since the epoch).
    pub time_ms: i64,
}

/// What the application (or the QM-side interceptor) found wrong with a protected message.
#[derive(Debug, Clone, Default)]
pub struct ProtectionFailure {
    /// The SPEC §5.4 check that failed, and what it said.
    pub check: String,
    pub detail: String,
    /// The signer's DN when the envelope names one.
    pub signer: String,
}

impl DeadLetterHeader {
    /// The header followed by the original payload.
    pub fn wrap(&self, payload: &[u8]) -> Vec<u8> {
        let mut e = Enc::with_capacity(payload.len() + 256);
        e.fixed(MAGIC)
            .u32(VERSION)
            .u32(self.reason)
            .str(&self.check)
            .str(&self.detail)
            .str(&self.dest_q)
            .str(&self.dest_qm)
            .str(&self.orig_format)
            .str(&self.put_appl)
            .i64(self.put_time_ms)
            .str(&self.getter)
            .str(&self.signer)
            .i64(self.time_ms)
            .bytes(payload);
        e.buf
    }

    /// Splits a dead-letter message into its header and original payload.
    pub fn unwrap(bytes: &[u8]) -> Result<(DeadLetterHeader, Vec<u8>)> {
        let mut d = Dec::new(bytes, "dead-letter header");
        if d.fixed::<4>()? != *MAGIC {
            return Err(DecodeError("not a dead-letter header".into()));
        }
        let v = d.u32()?;
        if v != VERSION {
            return Err(DecodeError(format!("dead-letter header version {v}")));
        }
        let h = DeadLetterHeader {
            reason: d.u32()?,
            check: d.str()?,
            detail: d.str()?,
            dest_q: d.str()?,
            dest_qm: d.str()?,
            orig_format: d.str()?,
            put_appl: d.str()?,
            put_time_ms: d.i64()?,
            getter: d.str()?,
            signer: d.str()?,
            time_ms: d.i64()?,
        };
        let payload = d.bytes()?.to_vec();
        d.finish()?;
        Ok((h, payload))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn round_trip() {
        let h = DeadLetterHeader {
            reason: 2063,
            check: "recipient".into(),
            dest_q: "Q".into(),
            getter: "carol".into(),
            ..Default::default()
        };
        let (back, p) = DeadLetterHeader::unwrap(&h.wrap(b"envelope")).unwrap();
        assert_eq!(back, h);
        assert_eq!(p, b"envelope");
    }

    proptest! {
        #[test]
        fn garbage_never_panics(b in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = DeadLetterHeader::unwrap(&b);
        }
    }
}

//! Transmission headers (SPEC §6): what a message carries on a transmission queue. Stored as the
//! message's payload prefix (format `MQXMIT`): magic `XQH `, version, the destination queue and
//! queue manager, the message's own descriptor, then its payload. The channel that moves the
//! message sends the header with it; the receiving end strips it and puts the original message,
//! with its original descriptor, to the destination.

use crate::md::Md;
use sealmq_types::codec::{Dec, DecodeError, Enc, Result};

pub const FORMAT: &str = "MQXMIT";
const MAGIC: &[u8; 4] = b"XQH ";
const VERSION: u32 = 1;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransmissionHeader {
    /// The queue on the remote queue manager.
    pub remote_q: String,
    /// The remote queue manager.
    pub remote_qm: String,
    /// The message's descriptor as it was put.
    pub md: Md,
}

impl TransmissionHeader {
    /// The header followed by the original payload.
    pub fn wrap(&self, payload: &[u8]) -> Vec<u8> {
        let mut e = Enc::with_capacity(payload.len() + 256);
        e.fixed(MAGIC)
            .u32(VERSION)
            .str(&self.remote_q)
            .str(&self.remote_qm);
        self.md.encode(&mut e);
        e.bytes(payload);
        e.buf
    }

    /// Splits a transmission-queue message into its header and original payload.
    pub fn unwrap(bytes: &[u8]) -> Result<(TransmissionHeader, Vec<u8>)> {
        let mut d = Dec::new(bytes, "transmission header");
        if d.fixed::<4>()? != *MAGIC {
            return Err(DecodeError("not a transmission header".into()));
        }
        let v = d.u32()?;
        if v != VERSION {
            return Err(DecodeError(format!(
                "transmission header version {v} (this queue manager reads version {VERSION})"
            )));
        }
        let h = TransmissionHeader {
            remote_q: d.str()?,
            remote_qm: d.str()?,
            md: Md::decode(&mut d)?,
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

    fn header() -> TransmissionHeader {
        let md = Md {
            format: "MQSTR".into(),
            priority: 7,
            reply_to_q: "REPLY".into(),
            ..Md::default()
        };
        TransmissionHeader {
            remote_q: "APP.ORDERS".into(),
            remote_qm: "QM2".into(),
            md,
        }
    }

    #[test]
    fn round_trip_and_refusals() {
        let h = header();
        let bytes = h.wrap(b"order 1");
        let (back, payload) = TransmissionHeader::unwrap(&bytes).unwrap();
        assert_eq!(back, h);
        assert_eq!(payload, b"order 1");
        assert!(TransmissionHeader::unwrap(b"DLH \x01\x00\x00\x00").is_err());
        let mut v2 = bytes.clone();
        v2[4] = 2;
        let e = TransmissionHeader::unwrap(&v2).unwrap_err().to_string();
        assert!(e.contains("version 2"), "{e}");
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(TransmissionHeader::unwrap(&longer).is_err());
    }

    proptest! {
        #[test]
        fn garbage_and_truncation_never_panic(
            b in proptest::collection::vec(any::<u8>(), 0..300),
            cut in any::<prop::sample::Index>(),
        ) {
            let _ = TransmissionHeader::unwrap(&b);
            let good = header().wrap(&b);
            let n = cut.index(good.len());
            prop_assert!(TransmissionHeader::unwrap(&good[..n]).is_err());
            prop_assert_eq!(TransmissionHeader::unwrap(&good).unwrap().1, b);
        }
    }
}

//! The sealmq envelope header (format documented in `docs/envelope.md`).
//!
//! A protected payload is this 32-byte header followed by a DER CMS object:
//!
//! | offset | size | field |
//! | --- | --- | --- |
//! | 0 | 4 | magic `SMQE` |
//! | 4 | 1 | header version (2; 1 is still read) |
//! | 5 | 1 | QoP: 1 Integrity, 2 Privacy, 3 Confidentiality |
//! | 6 | 2 | reserved, zero |
//! | 8 | 8 | original MD format, ASCII, space padded |
//! | 16 | 4 | original CCSID, big-endian |
//! | 20 | 4 | original encoding, big-endian |
//! | 24 | 4 | original payload length, big-endian |
//! | 28 | 4 | length of the CMS object that follows, big-endian |
//!
//! The first 28 bytes (the "core") are bound into the CMS object so that changing them is
//! detected: as a signed attribute when the message is signed, as an authenticated attribute
//! (GCM associated data) when it is only encrypted. From version 2 the bound value is the
//! core followed by the name of the policy (the queue) the message was protected for, so a
//! message moved to another queue fails its checks there.

use crate::error::{Check, Result, fail};
use crate::policy::Qop;

pub const MAGIC: [u8; 4] = *b"SMQE";
pub const VERSION: u8 = 2;
pub const HEADER_LEN: usize = 32;
pub const CORE_LEN: usize = 28;

/// What the header says of a protected message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// 1: only the core is bound; 2: the core and the policy's name.
    pub version: u8,
    pub qop: Qop,
    pub format: [u8; 8],
    pub ccsid: u32,
    pub encoding: u32,
    pub payload_len: u32,
}

/// Message-descriptor fields a protected payload keeps in its header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Original {
    pub format: [u8; 8],
    pub ccsid: u32,
    pub encoding: u32,
}

impl Default for Original {
    fn default() -> Self {
        Original {
            format: *b"        ",
            ccsid: 1208,
            encoding: 546,
        }
    }
}

impl Original {
    /// An 8-character MQ format name such as `MQSTR`, space padded.
    pub fn with_format(name: &str) -> Original {
        let mut format = *b"        ";
        for (slot, b) in format.iter_mut().zip(name.bytes()) {
            *slot = b;
        }
        Original {
            format,
            ..Original::default()
        }
    }

    pub fn format_str(&self) -> String {
        String::from_utf8_lossy(&self.format).trim_end().to_string()
    }
}

impl Header {
    pub fn new(qop: Qop, original: Original, payload_len: u32) -> Header {
        Header {
            version: VERSION,
            qop,
            format: original.format,
            ccsid: original.ccsid,
            encoding: original.encoding,
            payload_len,
        }
    }

    pub fn original(&self) -> Original {
        Original {
            format: self.format,
            ccsid: self.ccsid,
            encoding: self.encoding,
        }
    }

    /// The bytes bound into the CMS object.
    pub fn core(&self) -> [u8; CORE_LEN] {
        let mut b = [0u8; CORE_LEN];
        b[0..4].copy_from_slice(&MAGIC);
        b[4] = self.version;
        b[5] = self.qop.to_byte();
        b[8..16].copy_from_slice(&self.format);
        b[16..20].copy_from_slice(&self.ccsid.to_be_bytes());
        b[20..24].copy_from_slice(&self.encoding.to_be_bytes());
        b[24..28].copy_from_slice(&self.payload_len.to_be_bytes());
        b
    }

    /// What the CMS object binds for a message protected under policy `name`: the core, and
    /// from version 2 the name after it.
    pub fn bound(&self, name: &str) -> Vec<u8> {
        let mut b = self.core().to_vec();
        if self.version >= 2 {
            b.extend_from_slice(name.as_bytes());
        }
        b
    }

    /// The whole header for a CMS object of `cms_len` bytes.
    pub fn encode(&self, cms_len: u32) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        b[..CORE_LEN].copy_from_slice(&self.core());
        b[28..32].copy_from_slice(&cms_len.to_be_bytes());
        b
    }

    /// Splits a stored payload into its header and CMS object.
    pub fn decode(bytes: &[u8]) -> Result<(Header, &[u8])> {
        if bytes.len() < HEADER_LEN {
            return Err(fail!(
                Check::Header,
                "message is {} bytes, shorter than the {HEADER_LEN}-byte sealmq header",
                bytes.len()
            ));
        }
        if bytes[0..4] != MAGIC {
            return Err(fail!(Check::Header, "no sealmq header (bad magic)"));
        }
        if !(1..=VERSION).contains(&bytes[4]) {
            return Err(fail!(
                Check::Header,
                "header version {} is not supported (this build reads versions 1 to {VERSION})",
                bytes[4]
            ));
        }
        let qop = Qop::from_byte(bytes[5])
            .ok_or_else(|| fail!(Check::Header, "unknown QoP value {} in header", bytes[5]))?;
        if bytes[6] != 0 || bytes[7] != 0 {
            return Err(fail!(Check::Header, "reserved header bytes are not zero"));
        }
        let u32_at =
            |i: usize| u32::from_be_bytes([bytes[i], bytes[i + 1], bytes[i + 2], bytes[i + 3]]);
        let mut format = [0u8; 8];
        format.copy_from_slice(&bytes[8..16]);
        let header = Header {
            version: bytes[4],
            qop,
            format,
            ccsid: u32_at(16),
            encoding: u32_at(20),
            payload_len: u32_at(24),
        };
        let cms_len = u32_at(28) as usize;
        let cms = &bytes[HEADER_LEN..];
        if cms.len() != cms_len {
            return Err(fail!(
                Check::Header,
                "header says the CMS object is {cms_len} bytes but {} follow",
                cms.len()
            ));
        }
        Ok((header, cms))
    }
}

/// True if the payload starts with the sealmq magic (it claims to be protected).
pub fn has_magic(bytes: &[u8]) -> bool {
    bytes.len() >= 4 && bytes[0..4] == MAGIC
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn round_trip() {
        let h = Header::new(Qop::Privacy, Original::with_format("MQSTR"), 1234);
        let mut bytes = h.encode(3).to_vec();
        bytes.extend_from_slice(&[1, 2, 3]);
        let (back, cms) = Header::decode(&bytes).unwrap();
        assert_eq!(back, h);
        assert_eq!(cms, &[1, 2, 3]);
        assert_eq!(back.original().format_str(), "MQSTR");
    }

    #[test]
    fn each_defect_is_named() {
        let h = Header::new(Qop::Integrity, Original::default(), 0);
        let good = h.encode(0).to_vec();
        let mut v = good.clone();
        v[4] = 9;
        assert!(
            Header::decode(&v)
                .unwrap_err()
                .to_string()
                .contains("version 9")
        );
        let mut v = good.clone();
        v[5] = 0;
        assert!(Header::decode(&v).unwrap_err().to_string().contains("QoP"));
        let mut v = good.clone();
        v.push(0);
        assert!(
            Header::decode(&v)
                .unwrap_err()
                .to_string()
                .contains("follow")
        );
        assert!(
            Header::decode(&good[..10])
                .unwrap_err()
                .to_string()
                .contains("shorter")
        );
    }

    proptest! {
        #[test]
        fn decode_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..80)) {
            let _ = Header::decode(&bytes);
        }

        #[test]
        fn decode_with_magic_never_panics(tail in proptest::collection::vec(any::<u8>(), 0..80)) {
            let mut bytes = MAGIC.to_vec();
            bytes.extend(tail);
            let _ = Header::decode(&bytes);
        }
    }
}

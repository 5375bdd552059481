//! The files of a queue store: a 32-byte header, then records framed as the log's
//! (docs/storage.md, "Queue files"). A record is sealed under encryption at rest with its
//! position (file kind, file number, offset) and sequence number as associated data, so a
//! record copied elsewhere in the file, or into another file, does not open.

use crate::dse::Dse;
use crate::error::{Result, StorageError};
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// File header size.
pub(crate) const HEADER: u64 = 32;
/// Record header: len u32, crc32c u32, seq u64, key id u32, kind u8.
pub(crate) const REC_HEADER: usize = 21;
/// Largest record accepted (a message of MQ's 100 MB maximum with its descriptor).
pub(crate) const MAX_REC: usize = 128 << 20;
pub(crate) const VERSION: u16 = 1;

/// What a file holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Persistent messages (`D<n>.qd`).
    Data,
    /// The index journal (`I<n>.qi`).
    Index,
    /// Non-persistent messages spilled out of memory (`N<n>.qn`), removed at each start.
    Spill,
}

impl Kind {
    fn magic(self) -> &'static [u8; 4] {
        match self {
            Kind::Data => b"SMQD",
            Kind::Index => b"SMQI",
            Kind::Spill => b"SMQN",
        }
    }

    pub(crate) fn prefix(self) -> char {
        match self {
            Kind::Data => 'D',
            Kind::Index => 'I',
            Kind::Spill => 'N',
        }
    }

    pub(crate) fn ext(self) -> &'static str {
        match self {
            Kind::Data => "qd",
            Kind::Index => "qi",
            Kind::Spill => "qn",
        }
    }

    pub(crate) fn name(self, n: u32) -> String {
        format!("{}{n:08}.{}", self.prefix(), self.ext())
    }

    /// The file number of `name` if it is a file of this kind.
    pub(crate) fn number(self, name: &str) -> Option<u32> {
        let rest = name.strip_prefix(self.prefix())?;
        let num = rest.strip_suffix(self.ext())?.strip_suffix('.')?;
        (num.len() == 8).then(|| num.parse().ok()).flatten()
    }
}

pub(crate) fn header(kind: Kind, n: u32) -> [u8; HEADER as usize] {
    let mut h = [0u8; HEADER as usize];
    h[..4].copy_from_slice(kind.magic());
    h[4..6].copy_from_slice(&VERSION.to_le_bytes());
    h[8..12].copy_from_slice(&n.to_le_bytes());
    let crc = crc32c::crc32c(&h[..24]);
    h[24..28].copy_from_slice(&crc.to_le_bytes());
    h
}

pub(crate) fn corrupt(path: &Path, offset: u64, detail: impl Into<String>) -> StorageError {
    StorageError::Corrupt {
        path: path.to_path_buf(),
        offset,
        detail: detail.into(),
    }
}

/// Checks a file's header: its magic, version and number.
pub(crate) fn check_header(f: &File, path: &Path, kind: Kind, n: u32) -> Result<()> {
    let mut h = [0u8; HEADER as usize];
    f.read_exact_at(&mut h, 0)
        .map_err(|e| corrupt(path, 0, format!("the file header cannot be read: {e}")))?;
    if &h[..4] != kind.magic() {
        return Err(corrupt(
            path,
            0,
            "not a queue file of this kind (bad magic)",
        ));
    }
    let v = u16::from_le_bytes([h[4], h[5]]);
    if v != VERSION {
        return Err(corrupt(
            path,
            4,
            format!("format version {v}; this release reads version {VERSION}"),
        ));
    }
    if crc32c::crc32c(&h[..24]) != u32::from_le_bytes([h[24], h[25], h[26], h[27]]) {
        return Err(corrupt(path, 24, "the file header fails its checksum"));
    }
    if u32::from_le_bytes([h[8], h[9], h[10], h[11]]) != n {
        return Err(corrupt(path, 8, "the file number does not match its name"));
    }
    Ok(())
}

/// Associated data of a sealed record: where it is and which message it is.
pub(crate) fn aad(kind: Kind, n: u32, offset: u64, seq: u64, rec_kind: u8) -> [u8; 26] {
    let mut a = [0u8; 26];
    a[0] = kind.prefix() as u8;
    a[1..5].copy_from_slice(&n.to_le_bytes());
    a[5..13].copy_from_slice(&offset.to_le_bytes());
    a[13..21].copy_from_slice(&seq.to_le_bytes());
    a[21] = rec_kind;
    a
}

/// Frames (and under encryption at rest seals) a record that will be written at `offset`.
pub(crate) fn frame(
    dse: Option<&Dse>,
    kind: Kind,
    n: u32,
    offset: u64,
    seq: u64,
    rec_kind: u8,
    payload: &[u8],
) -> Result<Vec<u8>> {
    let (key_id, body) = match dse {
        Some(d) => {
            let k = d.current();
            (k, d.seal(k, &aad(kind, n, offset, seq, rec_kind), payload)?)
        }
        None => (0, payload.to_vec()),
    };
    let mut out = Vec::with_capacity(REC_HEADER + body.len());
    out.extend_from_slice(&(body.len() as u32).to_le_bytes());
    out.extend_from_slice(&[0u8; 4]);
    out.extend_from_slice(&seq.to_le_bytes());
    out.extend_from_slice(&key_id.to_le_bytes());
    out.push(rec_kind);
    out.extend_from_slice(&body);
    let crc = crc32c::crc32c(&out[8..]);
    out[4..8].copy_from_slice(&crc.to_le_bytes());
    Ok(out)
}

/// A record read back: its sequence number, kind, key id and (opened) payload.
pub(crate) struct Rec {
    pub seq: u64,
    pub kind: u8,
    pub key_id: u32,
    pub payload: Vec<u8>,
    /// Offset just past the record.
    pub end: u64,
}

/// Why a record could not be read at an offset.
pub(crate) enum ReadErr {
    /// Nothing, or less than a whole record, or bytes that fail the framing: at the end of the
    /// newest file this is a torn write, elsewhere damage.
    Torn(String),
    /// Whole and checksummed, but it does not open (a wrong key, a moved record).
    Bad(StorageError),
}

/// Reads the record at `offset` of file `n` (`len`: the file's length).
pub(crate) fn read_at(
    f: &File,
    path: &Path,
    dse: Option<&Dse>,
    kind: Kind,
    n: u32,
    offset: u64,
    len: u64,
) -> std::result::Result<Rec, ReadErr> {
    if offset + REC_HEADER as u64 > len {
        return Err(ReadErr::Torn("a partial record header".into()));
    }
    let mut h = [0u8; REC_HEADER];
    f.read_exact_at(&mut h, offset)
        .map_err(|e| ReadErr::Torn(format!("cannot read: {e}")))?;
    let body_len = u32::from_le_bytes([h[0], h[1], h[2], h[3]]) as usize;
    if body_len > MAX_REC || offset + (REC_HEADER + body_len) as u64 > len {
        return Err(ReadErr::Torn(format!(
            "a record of {body_len} bytes runs past the end of the file"
        )));
    }
    let mut buf = vec![0u8; REC_HEADER + body_len];
    buf[..REC_HEADER].copy_from_slice(&h);
    f.read_exact_at(&mut buf[REC_HEADER..], offset + REC_HEADER as u64)
        .map_err(|e| ReadErr::Torn(format!("cannot read: {e}")))?;
    let crc = u32::from_le_bytes([h[4], h[5], h[6], h[7]]);
    if crc32c::crc32c(&buf[8..]) != crc {
        return Err(ReadErr::Torn("the record fails its checksum".into()));
    }
    let seq = u64::from_le_bytes([h[8], h[9], h[10], h[11], h[12], h[13], h[14], h[15]]);
    let key_id = u32::from_le_bytes([h[16], h[17], h[18], h[19]]);
    let rec_kind = h[20];
    let body = buf.split_off(REC_HEADER);
    let payload = match (key_id, dse) {
        (0, _) => body,
        (k, Some(d)) => d
            .open_sealed(k, &aad(kind, n, offset, seq, rec_kind), &body)
            .ok_or_else(|| {
                ReadErr::Bad(corrupt(
                    path,
                    offset,
                    format!(
                        "the record sealed with data key {k} does not open (a wrong key, or a \
                         record moved or altered)"
                    ),
                ))
            })?,
        (k, None) => {
            return Err(ReadErr::Bad(StorageError::Key(format!(
                "{} offset {offset} is sealed with data key {k}, and this queue manager has no \
                 encryption at rest configured",
                path.display()
            ))));
        }
    };
    Ok(Rec {
        seq,
        kind: rec_kind,
        key_id,
        payload,
        end: offset + (REC_HEADER + body_len) as u64,
    })
}

/// Whether a whole record starts anywhere in the 4 KiB after `at`: a record that fails there
/// with another after it is damage, not a torn tail.
pub(crate) fn anything_after(f: &File, at: u64, len: u64) -> bool {
    let end = len.min(at + 4096);
    (at + 1..end).any(|o| {
        let mut h = [0u8; REC_HEADER];
        if o + REC_HEADER as u64 > len || f.read_exact_at(&mut h, o).is_err() {
            return false;
        }
        let n = u32::from_le_bytes([h[0], h[1], h[2], h[3]]) as u64;
        if n as usize > MAX_REC || o + REC_HEADER as u64 + n > len {
            return false;
        }
        let mut buf = vec![0u8; REC_HEADER + n as usize];
        f.read_exact_at(&mut buf, o).is_ok()
            && crc32c::crc32c(&buf[8..]) == u32::from_le_bytes([h[4], h[5], h[6], h[7]])
    })
}

/// The files of one kind in `dir`, by number.
pub(crate) fn list(dir: &Path, kind: Kind) -> Result<Vec<(u32, PathBuf)>> {
    let mut v = Vec::new();
    let rd = std::fs::read_dir(dir).map_err(|e| StorageError::io("cannot list", dir, e))?;
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if let Some(n) = kind.number(&name) {
            v.push((n, e.path()));
        }
    }
    v.sort();
    Ok(v)
}

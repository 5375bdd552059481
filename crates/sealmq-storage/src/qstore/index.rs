//! The index journal of a queue store: batches of operations on the set of stored messages,
//! each batch one record (docs/storage.md, "Queue files").

use crate::codec::{Dec, Enc};
use crate::error::Result;
use std::collections::HashMap;

/// Where a message's record is: file number, offset, record length. `spill` marks a
/// non-persistent message's spill file (never named by the index).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Loc {
    pub file: u32,
    pub offset: u32,
    pub len: u32,
    pub spill: bool,
}

/// A stored message as the index knows it: enough to order, match, expire and find it
/// without reading it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placed {
    pub seq: u64,
    pub loc: Loc,
    pub priority: u8,
    /// Milliseconds since the epoch; `i64::MIN`: never.
    pub expires_at_ms: i64,
    /// Fingerprints of the message and correlation ids ([`fingerprint`]).
    pub fp_msg: u32,
    pub fp_correl: u32,
    pub backout: u32,
}

/// One change to the stored set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexOp {
    /// A message stored (or stored again elsewhere: the newest place wins).
    Add(Placed),
    /// A message gone; its place, for the space accounting (not written).
    Del { seq: u64, loc: Loc },
    /// A stored message's backout count changed.
    Backout { seq: u64, count: u32 },
}

/// Record kinds in an index file.
pub(crate) const BATCH: u8 = 1;
/// The first record of a compacted index file: the whole stored set; older files are void.
pub(crate) const BASE: u8 = 2;

/// A 32-bit fingerprint of a message or correlation id (FNV-1a): the index matches on it, and a
/// candidate is confirmed against the message itself.
pub fn fingerprint(id: &[u8; 24]) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for b in id {
        h ^= u32::from(*b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h
}

fn enc_placed(e: &mut Enc, p: &Placed) {
    e.u64(p.seq)
        .u32(p.loc.file)
        .u32(p.loc.offset)
        .u32(p.loc.len)
        .u8(p.priority)
        .i64(p.expires_at_ms)
        .u32(p.fp_msg)
        .u32(p.fp_correl)
        .u32(p.backout);
}

fn dec_placed(d: &mut Dec<'_>) -> Result<Placed> {
    Ok(Placed {
        seq: d.u64()?,
        loc: Loc {
            file: d.u32()?,
            offset: d.u32()?,
            len: d.u32()?,
            spill: false,
        },
        priority: d.u8()?,
        expires_at_ms: d.i64()?,
        fp_msg: d.u32()?,
        fp_correl: d.u32()?,
        backout: d.u32()?,
    })
}

/// A batch record's payload. `Del` writes only the sequence number.
pub(crate) fn encode(ops: &[IndexOp]) -> Vec<u8> {
    let mut e = Enc::with_capacity(8 + ops.len() * 48);
    e.u32(ops.len() as u32);
    for op in ops {
        match op {
            IndexOp::Add(p) => {
                e.u8(1);
                enc_placed(&mut e, p);
            }
            IndexOp::Del { seq, .. } => {
                e.u8(2).u64(*seq);
            }
            IndexOp::Backout { seq, count } => {
                e.u8(3).u64(*seq).u32(*count);
            }
        }
    }
    e.buf
}

/// Decodes a batch or base record.
pub(crate) fn decode(bytes: &[u8]) -> Result<Vec<IndexOp>> {
    let mut d = Dec::new(bytes, "queue index batch");
    let n = d.u32()? as usize;
    // Each operation takes at least 9 bytes: never allocate more than the input can hold.
    let mut ops = Vec::with_capacity(n.min(bytes.len() / 9));
    for _ in 0..n {
        ops.push(match d.u8()? {
            1 => IndexOp::Add(dec_placed(&mut d)?),
            2 => IndexOp::Del {
                seq: d.u64()?,
                loc: Loc::default(),
            },
            3 => IndexOp::Backout {
                seq: d.u64()?,
                count: d.u32()?,
            },
            k => {
                return Err(crate::StorageError::Decode(format!(
                    "queue index operation {k}"
                )));
            }
        });
    }
    d.finish()?;
    Ok(ops)
}

/// The stored set as the index journal builds it, without a map of every message: additions
/// and removals are collected with their order, then sorted and merged once.
#[derive(Default)]
pub(crate) struct LiveSet {
    ord: u64,
    adds: Vec<(Placed, u64)>,
    dels: Vec<(u64, u64)>,
    backouts: HashMap<u64, (u64, u32)>,
}

impl LiveSet {
    pub(crate) fn apply(&mut self, ops: Vec<IndexOp>) {
        for op in ops {
            self.ord += 1;
            match op {
                IndexOp::Add(pl) => self.adds.push((pl, self.ord)),
                IndexOp::Del { seq, .. } => self.dels.push((seq, self.ord)),
                IndexOp::Backout { seq, count } => {
                    self.backouts.insert(seq, (self.ord, count));
                }
            }
        }
    }

    /// The live messages in sequence order: for each sequence number the latest addition,
    /// unless a removal followed it.
    pub(crate) fn finish(mut self) -> Vec<Placed> {
        self.adds.sort_unstable_by_key(|(p, o)| (p.seq, *o));
        self.dels.sort_unstable();
        let mut out: Vec<Placed> = Vec::with_capacity(self.adds.len());
        let mut d = 0;
        let n = self.adds.len();
        for i in 0..n {
            let (mut pl, ord) = self.adds[i];
            if i + 1 < n && self.adds[i + 1].0.seq == pl.seq {
                continue;
            }
            while d < self.dels.len() && self.dels[d].0 < pl.seq {
                d += 1;
            }
            let mut removed = false;
            let mut j = d;
            while j < self.dels.len() && self.dels[j].0 == pl.seq {
                removed |= self.dels[j].1 > ord;
                j += 1;
            }
            if removed {
                continue;
            }
            if let Some((bo, count)) = self.backouts.get(&pl.seq)
                && *bo > ord
            {
                pl.backout = *count;
            }
            out.push(pl);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn placed(seq: u64) -> Placed {
        Placed {
            seq,
            loc: Loc {
                file: 3,
                offset: 4096,
                len: 2100,
                spill: false,
            },
            priority: 4,
            expires_at_ms: i64::MIN,
            fp_msg: 7,
            fp_correl: 9,
            backout: 1,
        }
    }

    #[test]
    fn batches_round_trip() {
        let ops = vec![
            IndexOp::Add(placed(5)),
            IndexOp::Del {
                seq: 4,
                loc: Loc::default(),
            },
            IndexOp::Backout { seq: 5, count: 2 },
        ];
        assert_eq!(decode(&encode(&ops)).unwrap(), ops);
        assert_ne!(fingerprint(&[1; 24]), fingerprint(&[2; 24]));
    }

    proptest! {
        #[test]
        fn garbage_never_panics(b in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = decode(&b);
        }

        #[test]
        fn truncation_is_an_error(n in 1usize..5, cut in any::<prop::sample::Index>()) {
            let ops: Vec<IndexOp> = (0..n as u64).map(|s| IndexOp::Add(placed(s))).collect();
            let b = encode(&ops);
            let at = cut.index(b.len());
            prop_assert!(decode(&b[..at]).is_err());
        }
    }
}

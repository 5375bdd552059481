//! Programmable Command Format (PCF) messages as MQ lays them out: an MQCFH and its
//! parameters (MQCFIN integers, MQCFST strings, MQCFSL string lists), in either byte order.
//! sealmq writes them for IBM's AMS interceptor (its policy look-up, docs/mq-clients.md) and
//! reads them back in tests.

use crate::bytes::Order;

/// MQCFT_* structure types.
pub const CFT_COMMAND: u32 = 1;
pub const CFT_INTEGER: u32 = 3;
pub const CFT_STRING: u32 = 4;
pub const CFT_STRING_LIST: u32 = 6;
const CFH_LEN: usize = 36;
const UTF8: u32 = 1208;

/// A parameter of a PCF message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Param {
    Int(u32, i32),
    Str(u32, String),
    /// Strings of one length (`len`), space padded.
    StrList(u32, usize, Vec<String>),
}

/// A PCF message: its command and parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pcf {
    pub kind: u32,
    pub command: u32,
    pub params: Vec<Param>,
}

fn u32s(out: &mut Vec<u8>, order: Order, vals: &[u32]) {
    for v in vals {
        out.extend_from_slice(&match order {
            Order::Big => v.to_be_bytes(),
            Order::Little => v.to_le_bytes(),
        });
    }
}

fn padded(s: &str, len: usize) -> Vec<u8> {
    let mut b = s.as_bytes()[..s.len().min(len)].to_vec();
    b.resize(len, b' ');
    b
}

impl Pcf {
    /// The message's bytes in `order`.
    pub fn encode(&self, order: Order) -> Vec<u8> {
        let mut out = Vec::new();
        let n = self.params.len() as u32;
        u32s(
            &mut out,
            order,
            &[self.kind, CFH_LEN as u32, 1, self.command, 1, 1, 0, 0, n],
        );
        for p in &self.params {
            match p {
                Param::Int(id, v) => u32s(&mut out, order, &[CFT_INTEGER, 16, *id, *v as u32]),
                Param::Str(id, s) => {
                    let b = s.as_bytes();
                    let total = (20 + b.len()).next_multiple_of(4);
                    u32s(
                        &mut out,
                        order,
                        &[CFT_STRING, total as u32, *id, UTF8, b.len() as u32],
                    );
                    out.extend_from_slice(b);
                    out.resize(out.len() + total - 20 - b.len(), b' ');
                }
                Param::StrList(id, len, list) => {
                    let body: Vec<u8> = list.iter().flat_map(|s| padded(s, *len)).collect();
                    let total = (24 + body.len()).next_multiple_of(4);
                    let count = list.len() as u32;
                    u32s(
                        &mut out,
                        order,
                        &[CFT_STRING_LIST, total as u32, *id, UTF8, count, *len as u32],
                    );
                    out.extend_from_slice(&body);
                    out.resize(out.len() + total - 24 - body.len(), b' ');
                }
            }
        }
        out
    }

    /// Reads what [`Pcf::encode`] writes (and MQ's own messages of these parameter types).
    pub fn decode(b: &[u8], order: Order) -> Result<Pcf, String> {
        let word = |at: usize| -> Result<u32, String> {
            let w: [u8; 4] = b
                .get(at..at + 4)
                .and_then(|s| s.try_into().ok())
                .ok_or("PCF message cut short")?;
            Ok(match order {
                Order::Big => u32::from_be_bytes(w),
                Order::Little => u32::from_le_bytes(w),
            })
        };
        let text = |at: usize, len: usize| -> Result<String, String> {
            let s = b.get(at..at + len).ok_or("PCF string cut short")?;
            Ok(String::from_utf8_lossy(s).trim_end().to_string())
        };
        if word(4)? as usize != CFH_LEN {
            return Err("not an MQCFH".into());
        }
        let (kind, command, count) = (word(0)?, word(12)?, word(32)?);
        let mut at = CFH_LEN;
        let mut params = Vec::new();
        for _ in 0..count.min(4096) {
            let (t, len, id) = (word(at)?, word(at + 4)? as usize, word(at + 8)?);
            if len < 12 || at + len > b.len() {
                return Err(format!("parameter {id}: length {len}"));
            }
            params.push(match t {
                CFT_INTEGER => Param::Int(id, word(at + 12)? as i32),
                CFT_STRING => Param::Str(id, text(at + 20, word(at + 16)? as usize)?),
                CFT_STRING_LIST => {
                    let (n, l) = (word(at + 16)? as usize, word(at + 20)? as usize);
                    let list = (0..n.min(4096))
                        .map(|i| text(at + 24 + i * l, l))
                        .collect::<Result<_, _>>()?;
                    Param::StrList(id, l, list)
                }
                t => return Err(format!("parameter type {t}")),
            });
            at += len;
        }
        Ok(Pcf {
            kind,
            command,
            params,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn round_trips_and_never_panics(
            ints in proptest::collection::vec((0u32..5000, any::<i32>()), 0..6),
            strs in proptest::collection::vec((0u32..5000, "[A-Z0-9.=,]{0,20}"), 0..4),
            list in proptest::collection::vec("[A-Z0-9.]{0,10}", 0..4),
            little in any::<bool>(),
            junk in proptest::collection::vec(any::<u8>(), 0..200),
        ) {
            let order = if little { Order::Little } else { Order::Big };
            let mut params: Vec<Param> = ints.into_iter().map(|(i, v)| Param::Int(i, v)).collect();
            params.extend(strs.into_iter().map(|(i, s)| Param::Str(i, s)));
            params.push(Param::StrList(2, 12, list));
            let p = Pcf { kind: CFT_COMMAND, command: 206, params };
            prop_assert_eq!(Pcf::decode(&p.encode(order), order).unwrap(), p);
            let _ = Pcf::decode(&junk, order);
        }
    }
}

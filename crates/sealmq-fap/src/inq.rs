//! MQINQ: the selectors asked and the reply that answers them (integers, then characters,
//! each character attribute blank-padded to its MQ length).

use crate::bytes::{Fields, Order, Out};
use crate::{Result, err};

/// The most selectors one MQINQ may ask (MQ's own limit is 256).
pub const MAX_SELECTORS: u32 = 256;

/// What an MQINQ asks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inq {
    pub selectors: Vec<i32>,
    pub int_count: u32,
    pub char_len: u32,
}

pub fn parse(b: &[u8], order: Order) -> Result<Inq> {
    let f = Fields::new(b, order);
    let (n, int_count, char_len) = (f.u32(0)?, f.u32(4)?, f.u32(8)?);
    if n > MAX_SELECTORS || int_count > MAX_SELECTORS || char_len > 64 * 1024 {
        return err(format!(
            "an MQINQ of {n} selectors, {int_count} integers and {char_len} characters is refused"
        ));
    }
    let selectors = (0..n as usize)
        .map(|i| f.i32(12 + 4 * i))
        .collect::<Result<Vec<_>>>()?;
    Ok(Inq {
        selectors,
        int_count,
        char_len,
    })
}

/// MQ's rule: selectors below 2000 (MQIA_*) are integers, from 2000 (MQCA_*) characters.
pub fn is_char(selector: i32) -> bool {
    selector >= 2000
}

/// The reply body: the request's counts and selectors, then `ints` (as many as asked), then
/// `chars` blank-padded or cut to the character length asked.
pub fn reply(inq: &Inq, ints: &[i32], chars: &str, order: Order) -> Vec<u8> {
    let mut o = Out::new(order);
    o.u32(inq.selectors.len() as u32)
        .u32(inq.int_count)
        .u32(inq.char_len);
    for s in &inq.selectors {
        o.i32(*s);
    }
    for i in 0..inq.int_count as usize {
        o.i32(ints.get(i).copied().unwrap_or(-1));
    }
    o.name(chars, inq.char_len as usize);
    o.buf
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn selectors_read_and_answered() {
        let mut o = Out::new(Order::Big);
        o.u32(3).u32(2).u32(48).i32(31).i32(2015).i32(2);
        let q = parse(&o.buf, Order::Big).unwrap();
        assert_eq!(q.selectors, [31, 2015, 2]);
        assert!(is_char(2015) && !is_char(31));
        let r = reply(&q, &[940, 1208], "QM1", Order::Big);
        assert_eq!(r.len(), 12 + 12 + 8 + 48);
        assert_eq!(&r[24..28], &940i32.to_be_bytes());
        assert_eq!(&r[32..36], b"QM1 ");
        let mut lying = o.buf.clone();
        lying[3] = 4;
        assert!(
            parse(&lying, Order::Big).is_err(),
            "a fourth selector that is not there"
        );
    }

    proptest! {
        #[test]
        fn never_panics(b in proptest::collection::vec(any::<u8>(), 0..100)) {
            if let Ok(q) = parse(&b, Order::Big) {
                let _ = reply(&q, &[], "", Order::Big);
            }
        }
    }
}

//! A bounds-checked reader and a writer of MQ's fixed-layout fields: 2- and 4-byte integers in
//! the byte order the segment header names, and names blank-padded to their field's width.

use crate::{Result, err};

/// The byte order of a segment's integers (the TSH's byte-order field).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    Big,
    Little,
}

impl Order {
    /// The TSH's byte-order value: 1 big-endian, 2 little-endian.
    pub fn from_tsh(b: u8) -> Option<Order> {
        match b {
            1 => Some(Order::Big),
            2 => Some(Order::Little),
            _ => None,
        }
    }

    pub fn tsh_value(self) -> u8 {
        match self {
            Order::Big => 1,
            Order::Little => 2,
        }
    }
}

/// Reads fields at fixed offsets of `buf`; every read checks its bounds.
#[derive(Clone, Copy)]
pub struct Fields<'a> {
    pub buf: &'a [u8],
    pub order: Order,
}

impl<'a> Fields<'a> {
    pub fn new(buf: &'a [u8], order: Order) -> Self {
        Fields { buf, order }
    }

    pub fn bytes(&self, at: usize, n: usize) -> Result<&'a [u8]> {
        match at.checked_add(n).and_then(|end| self.buf.get(at..end)) {
            Some(b) => Ok(b),
            None => err(format!(
                "a field of {n} bytes at offset {at} lies past the {} bytes received",
                self.buf.len()
            )),
        }
    }

    pub fn u8(&self, at: usize) -> Result<u8> {
        Ok(self.bytes(at, 1)?[0])
    }

    pub fn u16(&self, at: usize) -> Result<u16> {
        let b: [u8; 2] = self.bytes(at, 2)?.try_into().map_err(|_| short())?;
        Ok(match self.order {
            Order::Big => u16::from_be_bytes(b),
            Order::Little => u16::from_le_bytes(b),
        })
    }

    pub fn u32(&self, at: usize) -> Result<u32> {
        let b: [u8; 4] = self.bytes(at, 4)?.try_into().map_err(|_| short())?;
        Ok(match self.order {
            Order::Big => u32::from_be_bytes(b),
            Order::Little => u32::from_le_bytes(b),
        })
    }

    pub fn i32(&self, at: usize) -> Result<i32> {
        Ok(self.u32(at)? as i32)
    }

    /// A blank-padded name (MQ's CHAR fields), trailing blanks and NULs removed; bytes that
    /// are not UTF-8 are replaced (a name with them is refused where names are looked up).
    pub fn name(&self, at: usize, n: usize) -> Result<String> {
        let b = self.bytes(at, n)?;
        let end = b
            .iter()
            .rposition(|c| *c != b' ' && *c != 0)
            .map_or(0, |i| i + 1);
        Ok(String::from_utf8_lossy(&b[..end]).into_owned())
    }
}

fn short() -> crate::FapError {
    crate::FapError("a field was cut short".into())
}

/// Writes fields in a segment's byte order.
pub struct Out {
    pub buf: Vec<u8>,
    pub order: Order,
}

impl Out {
    pub fn new(order: Order) -> Self {
        Out {
            buf: Vec::new(),
            order,
        }
    }

    pub fn u16(&mut self, v: u16) -> &mut Self {
        match self.order {
            Order::Big => self.buf.extend_from_slice(&v.to_be_bytes()),
            Order::Little => self.buf.extend_from_slice(&v.to_le_bytes()),
        }
        self
    }

    pub fn u32(&mut self, v: u32) -> &mut Self {
        match self.order {
            Order::Big => self.buf.extend_from_slice(&v.to_be_bytes()),
            Order::Little => self.buf.extend_from_slice(&v.to_le_bytes()),
        }
        self
    }

    pub fn i32(&mut self, v: i32) -> &mut Self {
        self.u32(v as u32)
    }

    pub fn raw(&mut self, b: &[u8]) -> &mut Self {
        self.buf.extend_from_slice(b);
        self
    }

    /// `s` blank-padded (or cut) to `n` bytes.
    pub fn name(&mut self, s: &str, n: usize) -> &mut Self {
        let b = s.as_bytes();
        let k = b.len().min(n);
        self.buf.extend_from_slice(&b[..k]);
        self.buf.resize(self.buf.len() + (n - k), b' ');
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_blank_padded_both_ways() {
        let mut o = Out::new(Order::Big);
        o.name("QM1", 8).u32(7);
        assert_eq!(&o.buf[..8], b"QM1     ");
        let f = Fields::new(&o.buf, Order::Big);
        assert_eq!(f.name(0, 8).unwrap(), "QM1");
        assert_eq!(f.u32(8).unwrap(), 7);
        assert!(f.u32(9).is_err(), "a read past the end is an error");
        assert!(
            f.bytes(usize::MAX, 2).is_err(),
            "an offset that overflows is an error"
        );
    }

    #[test]
    fn little_endian_reads_as_written() {
        let mut o = Out::new(Order::Little);
        o.u16(0x0333).u32(0x111);
        assert_eq!(o.buf, [0x33, 0x03, 0x11, 0x01, 0, 0]);
        let f = Fields::new(&o.buf, Order::Little);
        assert_eq!((f.u16(0).unwrap(), f.u32(2).unwrap()), (819, 273));
    }
}

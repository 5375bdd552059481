//! sealmq patch: a bound on how deeply the AMQP values a peer sends nest, looked at before
//! they are decoded.
//!
//! serde_amqp decodes described values, lists, maps and arrays recursively: a frame or a
//! message of a few kilobytes nesting thousands of described values or lists overflowed the
//! decoding thread's stack and aborted the whole process (a SASL frame, before any
//! authentication; an Open, an Attach's filter, a message's body or annotations). The bytes
//! are walked here first with a stack of counts — no recursion but for an array's
//! descriptor, itself bounded — and refused past [`MAX_DEPTH`] levels, or when a list, map or
//! array's header does not hold ([`BAD_COMPOUND`]: the decoder subtracts unchecked). Other bytes that do not parse are left to the decoder, which says what
//! is wrong with them.

/// The deepest nesting of described values, lists, maps and arrays accepted. AMQP's own
/// frames nest a few levels (an Attach's source's filter's described selector: 5).
pub const MAX_DEPTH: usize = 64;

/// Why bytes are refused.
pub const TOO_DEEP: &str = "AMQP values nested deeper than 64 levels are refused";

/// Why bytes are refused: serde_amqp subtracts a compound's header from its declared size,
/// and two from a map's count per entry, unchecked (a map8 of size 0, or of one item,
/// panicked a debug build's decoder on "attempt to subtract with overflow", and wrapped to
/// 2^64 in a release build).
pub const BAD_COMPOUND: &str = "an AMQP list, map or array whose header does not hold (a size \
     smaller than the header, or a map of an odd number of items) is refused";

struct Walk<I> {
    it: I,
}

/// Bytes that cannot be walked (the decoder reports them).
struct Malformed;

enum Fail {
    Deep,
    Malformed,
    /// A compound's header that does not hold (see [`BAD_COMPOUND`]).
    Short,
}

impl From<Malformed> for Fail {
    fn from(_: Malformed) -> Fail {
        Fail::Malformed
    }
}

impl<'a, I: Iterator<Item = &'a u8> + ExactSizeIterator> Walk<I> {
    fn u8(&mut self) -> Result<u8, Malformed> {
        self.it.next().copied().ok_or(Malformed)
    }

    fn u32(&mut self) -> Result<u32, Malformed> {
        Ok(u32::from_be_bytes([self.u8()?, self.u8()?, self.u8()?, self.u8()?]))
    }

    /// Skips `n` bytes (`nth`: no byte-by-byte walk over a slice's).
    fn skip(&mut self, n: u64) -> Result<(), Malformed> {
        let n = usize::try_from(n).map_err(|_| Malformed)?;
        if n == 0 {
            return Ok(());
        }
        if n > self.it.len() {
            return Err(Malformed);
        }
        self.it.nth(n - 1).map(|_| ()).ok_or(Malformed)
    }

    /// The body width of a fixed-width constructor (`None`: not one).
    fn fixed(code: u8) -> Option<u64> {
        Some(match code {
            0x40..=0x45 => 0,
            0x50..=0x56 => 1,
            0x60 | 0x61 => 2,
            0x70..=0x74 => 4,
            0x80..=0x84 => 8,
            0x94 | 0x98 => 16,
            _ => return None,
        })
    }

    /// Walks `values` values (all of them, to the end, when `None`), at nesting `base`.
    fn values(&mut self, values: Option<u64>, base: usize) -> Result<(), Fail> {
        // Each level: items left, and the element constructor of an array's items.
        let mut stack: Vec<(u64, Option<u8>)> = vec![(values.unwrap_or(u64::MAX), None)];
        loop {
            let levels = stack.len();
            let at_end = self.it.len() == 0;
            let Some(top) = stack.last_mut() else { break };
            if top.0 == 0 || (values.is_none() && levels == 1 && at_end) {
                stack.pop();
                continue;
            }
            top.0 -= 1;
            let elem = top.1;
            let code = match elem {
                Some(c) => c,
                None => self.u8()?,
            };
            let depth = base + levels;
            if depth > MAX_DEPTH {
                return Err(Fail::Deep);
            }
            if code == 0x00 && elem.is_none() {
                // A described value: its descriptor and its value, one level down.
                stack.push((2, None));
                continue;
            }
            if let Some(w) = Self::fixed(code) {
                self.skip(w)?;
                continue;
            }
            match code {
                0xa0 | 0xa1 | 0xa3 => {
                    let n = self.u8()?;
                    self.skip(u64::from(n))?;
                }
                0xb0 | 0xb1 | 0xb3 => {
                    let n = self.u32()?;
                    self.skip(u64::from(n))?;
                }
                0xc0 | 0xc1 => {
                    // The size counts the count byte; a map's count, its keys and values.
                    if self.u8()? < 1 {
                        return Err(Fail::Short);
                    }
                    let count = self.u8()?;
                    if code == 0xc1 && count % 2 == 1 {
                        return Err(Fail::Short);
                    }
                    stack.push((u64::from(count), None));
                }
                0xd0 | 0xd1 => {
                    if self.u32()? < 4 {
                        return Err(Fail::Short);
                    }
                    let count = self.u32()?;
                    if code == 0xd1 && count % 2 == 1 {
                        return Err(Fail::Short);
                    }
                    stack.push((u64::from(count), None));
                }
                0xe0 | 0xf0 => {
                    // The size counts the count and, when there are elements, the element
                    // constructor.
                    let (size, count, header) = if code == 0xe0 {
                        let size = u64::from(self.u8()?);
                        (size, u64::from(self.u8()?), 2)
                    } else {
                        let size = u64::from(self.u32()?);
                        (size, u64::from(self.u32()?), 5)
                    };
                    if count > 0 && size < header {
                        return Err(Fail::Short);
                    }
                    let mut ctor = self.u8()?;
                    let mut at = depth;
                    while ctor == 0x00 {
                        // The elements' descriptor, once: one value, a level down.
                        at += 1;
                        if at > MAX_DEPTH {
                            return Err(Fail::Deep);
                        }
                        self.values(Some(1), at)?;
                        ctor = self.u8()?;
                    }
                    match Self::fixed(ctor) {
                        // Fixed-width elements hold nothing nested: skipped at once.
                        Some(w) => self.skip(w.checked_mul(count).ok_or(Malformed)?)?,
                        None => stack.push((count, Some(ctor))),
                    }
                }
                _ => return Err(Fail::Malformed),
            }
        }
        Ok(())
    }
}

fn judge(r: Result<(), Fail>) -> Result<(), &'static str> {
    match r {
        Err(Fail::Deep) => Err(TOO_DEEP),
        Err(Fail::Short) => Err(BAD_COMPOUND),
        // Left to the decoder, which says what is wrong.
        Err(Fail::Malformed) | Ok(()) => Ok(()),
    }
}

/// The first value of `bytes` (a frame's performative) nests no deeper than [`MAX_DEPTH`].
pub fn check_first(bytes: &[u8]) -> Result<(), &'static str> {
    judge(Walk { it: bytes.iter() }.values(Some(1), 0))
}

/// Every value of `bytes` (a message's sections, in one or more frames' payloads) nests no
/// deeper than [`MAX_DEPTH`].
pub fn check_all<'a>(
    bytes: impl Iterator<Item = &'a u8> + ExactSizeIterator,
) -> Result<(), &'static str> {
    judge(Walk { it: bytes }.values(None, 0))
}

//! A small, bounds-checked little-endian encoding for log records, snapshots and wire frames.
//! Decoding never panics and never allocates more than the input can hold.

/// A value could not be decoded: what was being read and what was wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct DecodeError(pub String);

pub type Result<T> = std::result::Result<T, DecodeError>;

/// `Enc::u32(v)` and the like: the value's little-endian bytes.
macro_rules! little_endian {
    ($($t:ident),*) => {$(
        pub fn $t(&mut self, v: $t) -> &mut Self {
            self.buf.extend_from_slice(&v.to_le_bytes());
            self
        }
    )*};
}

/// `Dec::u32()` and the like.
macro_rules! from_little_endian {
    ($($t:ident),*) => {$(
        pub fn $t(&mut self) -> Result<$t> {
            Ok($t::from_le_bytes(self.arr()?))
        }
    )*};
}

/// Appends values to a buffer.
#[derive(Default)]
pub struct Enc {
    pub buf: Vec<u8>,
}

impl Enc {
    pub fn new() -> Enc {
        Enc::default()
    }
    pub fn with_capacity(n: usize) -> Enc {
        Enc {
            buf: Vec::with_capacity(n),
        }
    }
    pub fn u8(&mut self, v: u8) -> &mut Self {
        self.buf.push(v);
        self
    }
    little_endian!(u16, u32, u64, i32, i64);
    pub fn bool(&mut self, v: bool) -> &mut Self {
        self.u8(v as u8)
    }
    /// Length-prefixed (u32) bytes.
    pub fn bytes(&mut self, v: &[u8]) -> &mut Self {
        self.u32(v.len() as u32);
        self.buf.extend_from_slice(v);
        self
    }
    pub fn str(&mut self, v: &str) -> &mut Self {
        self.bytes(v.as_bytes())
    }
    pub fn fixed(&mut self, v: &[u8]) -> &mut Self {
        self.buf.extend_from_slice(v);
        self
    }
}

/// Reads values from a slice.
pub struct Dec<'a> {
    buf: &'a [u8],
    what: &'static str,
}

impl<'a> Dec<'a> {
    pub fn new(buf: &'a [u8], what: &'static str) -> Dec<'a> {
        Dec { buf, what }
    }
    /// An error about what is being read.
    pub fn error(&self, detail: &str) -> DecodeError {
        DecodeError(format!("{}: {detail}", self.what))
    }
    pub fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        if self.buf.len() < n {
            return Err(self.error(&format!("needs {n} more bytes, {} remain", self.buf.len())));
        }
        let (a, b) = self.buf.split_at(n);
        self.buf = b;
        Ok(a)
    }
    fn arr<const N: usize>(&mut self) -> Result<[u8; N]> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N)?);
        Ok(a)
    }
    pub fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }
    from_little_endian!(u16, u32, u64, i32, i64);
    pub fn bool(&mut self) -> Result<bool> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            v => Err(self.error(&format!("{v} is not a boolean"))),
        }
    }
    pub fn bytes(&mut self) -> Result<&'a [u8]> {
        let n = self.u32()? as usize;
        self.take(n)
    }
    pub fn str(&mut self) -> Result<String> {
        let b = self.bytes()?;
        String::from_utf8(b.to_vec()).map_err(|_| self.error("text is not UTF-8"))
    }
    pub fn fixed<const N: usize>(&mut self) -> Result<[u8; N]> {
        self.arr()
    }
    /// A record's version byte, refused unless this build reads it (in `known`).
    pub fn version(&mut self, record: &str, known: std::ops::RangeInclusive<u8>) -> Result<u8> {
        let v = self.u8()?;
        if known.contains(&v) {
            return Ok(v);
        }
        Err(self.error(&format!(
            "{record} version {v} is not one this build reads ({}-{})",
            known.start(),
            known.end()
        )))
    }
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }
    /// Fails unless everything was read.
    pub fn finish(&self) -> Result<()> {
        if self.buf.is_empty() {
            Ok(())
        } else {
            Err(self.error(&format!("{} trailing bytes", self.buf.len())))
        }
    }
}

/// A value with one encoding, so that records, snapshots and frames are described by their
/// fields once and encoded and decoded from that one description ([`coded_enum!`],
/// [`coded_struct!`]).
pub trait Field: Sized {
    fn put(&self, e: &mut Enc);
    fn take(d: &mut Dec<'_>) -> Result<Self>;
}

macro_rules! scalar_fields {
    ($($t:ty => $m:ident),*) => {$(
        impl Field for $t {
            fn put(&self, e: &mut Enc) {
                e.$m(*self);
            }
            fn take(d: &mut Dec<'_>) -> Result<Self> {
                d.$m()
            }
        }
    )*};
}
scalar_fields!(u8 => u8, u16 => u16, u32 => u32, u64 => u64, i32 => i32, i64 => i64, bool => bool);

impl Field for String {
    fn put(&self, e: &mut Enc) {
        e.str(self);
    }
    fn take(d: &mut Dec<'_>) -> Result<Self> {
        d.str()
    }
}

/// Bytes with a u32 length.
impl Field for Vec<u8> {
    fn put(&self, e: &mut Enc) {
        e.bytes(self);
    }
    fn take(d: &mut Dec<'_>) -> Result<Self> {
        Ok(d.bytes()?.to_vec())
    }
}

/// A list of versions: a u16 count, then each.
impl Field for Vec<u16> {
    fn put(&self, e: &mut Enc) {
        e.u16(self.len() as u16);
        for v in self {
            e.u16(*v);
        }
    }
    fn take(d: &mut Dec<'_>) -> Result<Self> {
        let n = d.u16()? as usize;
        let mut v = Vec::with_capacity(n.min(16));
        for _ in 0..n {
            v.push(d.u16()?);
        }
        Ok(v)
    }
}

impl<const N: usize> Field for [u8; N] {
    fn put(&self, e: &mut Enc) {
        e.fixed(self);
    }
    fn take(d: &mut Dec<'_>) -> Result<Self> {
        d.fixed()
    }
}

/// A flag byte (0: absent), then the value when present.
impl<T: Field> Field for Option<T> {
    fn put(&self, e: &mut Enc) {
        match self {
            Some(v) => {
                e.u8(1);
                v.put(e);
            }
            None => {
                e.u8(0);
            }
        }
    }
    fn take(d: &mut Dec<'_>) -> Result<Self> {
        Ok(match d.u8()? {
            0 => None,
            _ => Some(T::take(d)?),
        })
    }
}

/// A map of text (attributes kept as given): a u32 count, then each key and value, in order.
impl Field for std::collections::BTreeMap<String, String> {
    fn put(&self, e: &mut Enc) {
        e.u32(self.len() as u32);
        for (k, v) in self {
            e.str(k).str(v);
        }
    }
    fn take(d: &mut Dec<'_>) -> Result<Self> {
        let mut m = Self::new();
        for _ in 0..d.u32()? {
            let k = d.str()?;
            m.insert(k, d.str()?);
        }
        Ok(m)
    }
}

/// Puts fields of a value in the order named: `put_fields!(e, self: descr, max_depth);`.
/// For versioned records whose blocks are written one after another.
#[macro_export]
macro_rules! put_fields {
    ($e:expr, $s:ident: $($f:ident),* $(,)?) => {
        $( $crate::codec::Field::put(&$s.$f, $e); )*
    };
}

/// Reads fields into a value in the order named: `take_fields!(d, q: descr, max_depth);`
/// (in a function returning a `Result` that a [`DecodeError`] converts into).
#[macro_export]
macro_rules! take_fields {
    ($d:expr, $s:ident: $($f:ident),* $(,)?) => {
        $( $s.$f = $crate::codec::Field::take($d)?; )*
    };
}

/// Encodes and decodes a struct as its fields in the order named:
/// `coded_struct!(GetReq { hobj, syncpoint, wait_ms });` (each field's type is a [`Field`]).
#[macro_export]
macro_rules! coded_struct {
    ($ty:ident { $($f:ident),* $(,)? }) => {
        impl $crate::codec::Field for $ty {
            fn put(&self, e: &mut $crate::codec::Enc) {
                $( $crate::codec::Field::put(&self.$f, e); )*
            }
            fn take(d: &mut $crate::codec::Dec<'_>) -> $crate::codec::Result<Self> {
                Ok($ty { $( $f: $crate::codec::Field::take(d)? ),* })
            }
        }
    };
}

/// Gives an enum of records or frames a kind byte per variant and its body's encoding, from
/// one line per variant: `4 => Put { hobj, md }` (fields in order), `6 => Get(g)` (one
/// [`Field`]), `7 => Commit` (no body). Generates `kind`, `put_body` and `take_body`;
/// an unknown kind decodes to an error naming `what`.
#[macro_export]
macro_rules! coded_enum {
    ($ty:ident, $what:literal {
        $( $kind:literal => $v:ident $( ( $t:ident ) )? $( { $($f:ident),* $(,)? } )? ),* $(,)?
    }) => {
        impl $ty {
            /// This value's kind byte.
            pub fn kind(&self) -> u8 {
                match self {
                    $( $ty::$v { .. } => $kind, )*
                }
            }

            /// Encodes the body (the kind byte is the caller's).
            pub fn put_body(&self, e: &mut $crate::codec::Enc) {
                match self {
                    $( $ty::$v $( ($t) )? $( { $($f),* } )? => {
                        $( $crate::codec::Field::put($t, e); )?
                        $( $( $crate::codec::Field::put($f, e); )* )?
                    } )*
                }
            }

            /// Decodes the body of a value of kind `kind`.
            pub fn take_body(kind: u8, d: &mut $crate::codec::Dec<'_>) -> $crate::codec::Result<Self> {
                Ok(match kind {
                    $( $kind => $ty::$v
                        $( ( { let $t = $crate::codec::Field::take(d)?; $t } ) )?
                        $( { $( $f: $crate::codec::Field::take(d)? ),* } )?, )*
                    k => return Err($crate::codec::DecodeError(format!("unknown {} kind {k}", $what))),
                })
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn round_trip() {
        let mut e = Enc::new();
        e.u8(1)
            .u16(2)
            .u32(3)
            .u64(4)
            .i64(-5)
            .bool(true)
            .str("héllo")
            .bytes(&[9; 3]);
        let mut d = Dec::new(&e.buf, "test");
        assert_eq!(d.u8().unwrap(), 1);
        assert_eq!(d.u16().unwrap(), 2);
        assert_eq!(d.u32().unwrap(), 3);
        assert_eq!(d.u64().unwrap(), 4);
        assert_eq!(d.i64().unwrap(), -5);
        assert!(d.bool().unwrap());
        assert_eq!(d.str().unwrap(), "héllo");
        assert_eq!(d.bytes().unwrap(), &[9; 3]);
        d.finish().unwrap();
    }

    proptest! {
        #[test]
        fn decoding_garbage_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let mut d = Dec::new(&bytes, "fuzz");
            let _ = d.str();
            let _ = d.bytes();
            let _ = d.u64();
            let _ = d.bool();
        }
    }
}

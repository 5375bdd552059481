//! Keyword values: the enums whose values MQSC names (CHLTYPE(SDR), CONTROL(QMGR)) and the log
//! stores as a byte, declared once with [`named_enum!`].

/// Declares enums of keyword values, each value with its MQSC name and the byte it is stored
/// as, one enum a line, and generates for each `ALL`, `name`, `parse` (any case), `byte`, `from_byte` and a
/// [`Field`](crate::codec::Field) encoding that refuses an unknown byte, naming `$what`:
///
/// ```
/// sealmq_types::named_enum! {
///     /// CONTROL: who starts and stops a listener.
///     pub enum Control("CONTROL") { Qmgr = 0 "QMGR", Manual = 2 "MANUAL" }
/// }
/// assert_eq!(Control::parse("qmgr"), Some(Control::Qmgr));
/// assert_eq!(Control::Manual.byte(), 2);
/// ```
#[macro_export]
macro_rules! named_enum {
    ($(
        $(#[$meta:meta])*
        $vis:vis enum $ty:ident($what:literal) {
            $( $(#[$vmeta:meta])* $v:ident = $byte:literal $name:literal ),* $(,)?
        }
    )*) => {$(
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        $vis enum $ty {
            $( $(#[$vmeta])* $v, )*
        }

        #[allow(dead_code)]
        impl $ty {
            /// Every value, in declaration order.
            pub const ALL: &'static [$ty] = &[$($ty::$v),*];

            /// The MQSC keyword.
            pub fn name(self) -> &'static str {
                match self {
                    $( $ty::$v => $name, )*
                }
            }

            /// The value MQSC names `s` (in any case).
            pub fn parse(s: &str) -> Option<$ty> {
                Self::ALL.iter().copied().find(|v| v.name().eq_ignore_ascii_case(s))
            }

            /// The byte it is stored as.
            pub fn byte(self) -> u8 {
                match self {
                    $( $ty::$v => $byte, )*
                }
            }

            pub fn from_byte(b: u8) -> Option<$ty> {
                match b {
                    $( $byte => Some($ty::$v), )*
                    _ => None,
                }
            }
        }

        impl $crate::codec::Field for $ty {
            fn put(&self, e: &mut $crate::codec::Enc) {
                e.u8(self.byte());
            }
            fn take(d: &mut $crate::codec::Dec<'_>) -> $crate::codec::Result<Self> {
                let b = d.u8()?;
                $ty::from_byte(b).ok_or_else(|| d.error(&format!("unknown {} {b}", $what)))
            }
        }
    )*};
}

/// Keyword and value pairs as MQSC shows them (a DISPLAY block), a line of several for the
/// reader: `attrs!["DESCR" => d.descr, "MAXDEPTH" => d.max_depth]` gives the
/// `Vec<(String, String)>`, each value by its `Display`.
#[macro_export]
macro_rules! attrs {
    ($($k:literal => $v:expr),* $(,)?) => {
        ::std::vec![$(($k.to_string(), ::std::string::ToString::to_string(&$v))),*]
    };
}

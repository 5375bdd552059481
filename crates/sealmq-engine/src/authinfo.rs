//! AUTHINFO objects of AUTHTYPE(IDPWOS): connection authentication (MQ's CONNAUTH) — whether
//! local and client applications must present a user id and password, checked against the
//! operating system's users or the queue manager's password file. `ALTER QMGR CONNAUTH(name)`
//! names the one in force; `REFRESH SECURITY TYPE(CONNAUTH)` re-reads it and the password file.

use crate::error::{MqResult, mqerr};
use sealmq_storage::codec::{Dec, Enc};
use sealmq_storage::codec::{DecodeError, Result};

/// CHCKLOCL / CHCKCLNT: how strictly a password is required.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    /// Not checked (a password given is ignored).
    None,
    /// Checked when given; not required.
    Optional,
    /// Always required.
    Required,
    /// Required of privileged users (the queue manager's own user); optional for others.
    ReqdAdm,
}

impl Check {
    pub fn parse(s: &str) -> Option<Check> {
        Some(match s.to_ascii_uppercase().as_str() {
            "NONE" => Check::None,
            "OPTIONAL" => Check::Optional,
            "REQUIRED" => Check::Required,
            "REQDADM" => Check::ReqdAdm,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Check::None => "NONE",
            Check::Optional => "OPTIONAL",
            Check::Required => "REQUIRED",
            Check::ReqdAdm => "REQDADM",
        }
    }

    fn byte(self) -> u8 {
        self as u8
    }

    fn from_byte(b: u8) -> Option<Check> {
        [
            Check::None,
            Check::Optional,
            Check::Required,
            Check::ReqdAdm,
        ]
        .into_iter()
        .find(|c| c.byte() == b)
    }
}

/// An AUTHINFO object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthInfoDef {
    pub name: String,
    pub descr: String,
    pub chcklocl: Check,
    pub chckclnt: Check,
    /// ADOPTCTX(YES): an authenticated connection runs as the user id it authenticated.
    pub adoptctx: bool,
    /// Allow passwords over connections without TLS (sealmq's own switch: off by default, so
    /// a password never crosses the network in clear unless the administrator says so).
    pub allow_cleartext: bool,
}

/// The default AUTHINFO every queue manager has (the queue manager's CONNAUTH names it).
pub use crate::objects::DEFAULT_IDPWOS;

impl AuthInfoDef {
    pub fn new(name: &str) -> AuthInfoDef {
        AuthInfoDef {
            name: name.to_string(),
            descr: String::new(),
            chcklocl: Check::Optional,
            chckclnt: Check::ReqdAdm,
            adoptctx: true,
            allow_cleartext: false,
        }
    }

    pub fn validate(&self) -> MqResult<()> {
        crate::objects::validate_name(&self.name)?;
        if self.chcklocl == Check::ReqdAdm {
            return mqerr!(
                OptionsError,
                "CHCKLOCL takes NONE, OPTIONAL or REQUIRED (REQDADM is for CHCKCLNT)"
            );
        }
        Ok(())
    }

    pub fn encode(&self, e: &mut Enc) {
        e.u8(1)
            .str(&self.name)
            .str(&self.descr)
            .u8(self.chcklocl.byte())
            .u8(self.chckclnt.byte())
            .bool(self.adoptctx)
            .bool(self.allow_cleartext);
    }

    pub fn decode(d: &mut Dec<'_>) -> Result<AuthInfoDef> {
        let bad = |m: String| DecodeError(m);
        let v = d.u8()?;
        if v != 1 {
            return Err(bad(format!("AUTHINFO record version {v} is not 1")));
        }
        let name = d.str()?;
        let descr = d.str()?;
        let l = d.u8()?;
        let c = d.u8()?;
        Ok(AuthInfoDef {
            name,
            descr,
            chcklocl: Check::from_byte(l).ok_or_else(|| bad(format!("CHCKLOCL {l}")))?,
            chckclnt: Check::from_byte(c).ok_or_else(|| bad(format!("CHCKCLNT {c}")))?,
            adoptctx: d.bool()?,
            allow_cleartext: d.bool()?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn round_trip_and_rules() {
        let mut a = AuthInfoDef::new("MY.IDPW");
        a.chckclnt = Check::Required;
        let mut e = Enc::new();
        a.encode(&mut e);
        assert_eq!(AuthInfoDef::decode(&mut Dec::new(&e.buf, "a")).unwrap(), a);
        a.chcklocl = Check::ReqdAdm;
        assert!(a.validate().is_err());
    }

    proptest! {
        #[test]
        fn garbage_never_panics(b in proptest::collection::vec(any::<u8>(), 0..100)) {
            let _ = AuthInfoDef::decode(&mut Dec::new(&b, "authinfo"));
        }
    }
}

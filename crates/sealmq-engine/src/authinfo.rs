//! AUTHINFO objects of AUTHTYPE(IDPWOS): connection authentication (MQ's CONNAUTH) — whether
//! local and client applications must present a user id and password, checked against the
//! operating system's users or the queue manager's password file. `ALTER QMGR CONNAUTH(name)`
//! names the one in force; `REFRESH SECURITY TYPE(CONNAUTH)` re-reads it and the password file.

use crate::error::{MqResult, mqerr};
use sealmq_storage::codec::{Dec, Enc, Result};
use sealmq_types::{named_enum, put_fields, take_fields};

named_enum! {
    /// CHCKLOCL / CHCKCLNT: how strictly a password is required.
    /// - NONE: Not checked (a password given is ignored).
    /// - OPTIONAL: Checked when given; not required.
    /// - REQUIRED: Always required.
    /// - REQDADM: Required of privileged users (the queue manager's own user); optional for others.
    pub enum Check("CHCKLOCL or CHCKCLNT") {
        None = 0 "NONE", Optional = 1 "OPTIONAL", Required = 2 "REQUIRED", ReqdAdm = 3 "REQDADM"
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
        e.u8(1);
        put_fields!(e, self: name, descr, chcklocl, chckclnt, adoptctx, allow_cleartext);
    }

    pub fn decode(d: &mut Dec<'_>) -> Result<AuthInfoDef> {
        d.version("AUTHINFO record", 1..=1)?;
        let mut a = AuthInfoDef::new("");
        take_fields!(d, a: name, descr, chcklocl, chckclnt, adoptctx, allow_cleartext);
        Ok(a)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}

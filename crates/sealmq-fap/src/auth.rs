//! Who the client says it is: the user id flow (`UID `, USERID_DATA) and connection
//! authentication (`CAUT`, CONAUTH_INFO: MQCSP's user and password), docs/fap.md steps 3-4.

use crate::bytes::{Fields, Order};
use crate::{Result, err};
use zeroize::Zeroizing;

/// The user the client process runs as (USERID_DATA).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserId {
    /// The 12-character user id.
    pub user: String,
    /// The long user id (132-byte form), empty in the 28-byte form.
    pub long_user: String,
}

/// Reads a `UID ` (28 or 132 bytes).
pub fn parse_uid(body: &[u8], order: Order) -> Result<UserId> {
    if body.get(..4) != Some(b"UID ") {
        return err("a USERID_DATA segment must hold a UID structure");
    }
    if body.len() < 28 {
        return err(format!("a UID of {} bytes is cut short", body.len()));
    }
    let f = Fields::new(body, order);
    Ok(UserId {
        user: f.name(4, 12)?,
        long_user: if body.len() >= 92 {
            f.name(28, 64)?
        } else {
            String::new()
        },
    })
}

/// MQCSP's user id and password, as the client sent them (a password never printed).
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    pub auth_type: u32,
    pub user: String,
    pub password: Zeroizing<String>,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Credentials {{ auth_type: {}, user: {:?}, password: {} bytes }}",
            self.auth_type,
            self.user,
            self.password.len()
        )
    }
}

/// The longest user id or password read (MQ's MQCSP allows more, but no CONNAUTH check
/// needs it and the segment's size bounds it anyway).
pub const CRED_MAX: u32 = 1024;

/// Reads a `CAUT`: seven 4-byte fields after the struct id (auth type, user id maximum and
/// password maximum lengths, user id and password lengths, token length and maximum), then the
/// user id and the password.
pub fn parse_caut(body: &[u8], order: Order) -> Result<Credentials> {
    if body.get(..4) != Some(b"CAUT") {
        return err("a CONAUTH_INFO segment must hold a CAUT structure");
    }
    let f = Fields::new(body, order);
    let (user_len, pw_len) = (f.u32(16)?, f.u32(20)?);
    if user_len > CRED_MAX || pw_len > CRED_MAX {
        return err(format!(
            "a user id of {user_len} or password of {pw_len} bytes is over the {CRED_MAX} read"
        ));
    }
    let user = f.bytes(32, user_len as usize)?;
    let pw = f.bytes(32 + user_len as usize, pw_len as usize)?;
    let Ok(password) = std::str::from_utf8(pw) else {
        return err("the password is not text in the connection's CCSID");
    };
    Ok(Credentials {
        auth_type: f.u32(4)?,
        user: String::from_utf8_lossy(user).trim_end().to_string(),
        password: Zeroizing::new(password.to_string()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bytes::Out;
    use proptest::prelude::*;

    /// A CAUT with user and password lengths `user` and `pw` (the maxima the same), then
    /// `rest`: the layout IBM's Java client sends.
    fn caut(user: u32, pw: u32, rest: &[u8]) -> Vec<u8> {
        let mut o = Out::new(Order::Big);
        o.raw(b"CAUT").u32(1).u32(user).u32(pw).u32(user).u32(pw);
        o.u32(0).u32(0).raw(rest);
        o.buf
    }

    #[test]
    fn reads_the_java_clients_caut() {
        // As IBM's Java client sent it for user "app", password "passw0rd" at FAP 12.
        let c = parse_caut(&caut(3, 8, b"apppassw0rd\0"), Order::Big).unwrap();
        assert_eq!(c.user, "app");
        assert_eq!(c.password.as_str(), "passw0rd");
        assert!(
            !format!("{c:?}").contains("passw0rd"),
            "Debug hides the password"
        );
    }

    #[test]
    fn lying_lengths_are_refused() {
        assert!(
            parse_caut(&caut(3, 800, b"app"), Order::Big).is_err(),
            "800 bytes claimed, 0 sent"
        );
        let mut o = Out::new(Order::Big);
        o.raw(b"CAUT").u32(1).u32(0).u32(0).u32(u32::MAX).u32(0);
        assert!(parse_caut(&o.buf, Order::Big).is_err());
    }

    #[test]
    fn reads_both_uid_forms() {
        let mut o = Out::new(Order::Big);
        o.raw(b"UID ")
            .name("ROOT", 12)
            .name("", 12)
            .name("root", 64)
            .raw(&[0; 40]);
        let u = parse_uid(&o.buf, Order::Big).unwrap();
        assert_eq!((u.user.as_str(), u.long_user.as_str()), ("ROOT", "root"));
        let u = parse_uid(&o.buf[..28], Order::Big).unwrap();
        assert_eq!(u.long_user, "");
        assert!(parse_uid(&o.buf[..20], Order::Big).is_err());
    }

    proptest! {
        #[test]
        fn never_panics(b in proptest::collection::vec(any::<u8>(), 0..200)) {
            let mut c = b"CAUT".to_vec();
            c.extend_from_slice(&b);
            let _ = parse_caut(&c, Order::Big);
            let mut u = b"UID ".to_vec();
            u.extend_from_slice(&b);
            let _ = parse_uid(&u, Order::Little);
        }
    }
}

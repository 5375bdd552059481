//! SASL for AMQP channels: EXTERNAL when TLS authenticated the client with a certificate (its
//! subject DN is the principal), PLAIN checked by the queue manager's connection
//! authentication (password file, then PAM), ANONYMOUS only on a channel with an MCAUSER. The
//! channel's MCAUSER, when set, is the principal whatever the mechanism; the principal the
//! connection runs as is recorded for it.

use fe2o3_amqp::acceptor::sasl_acceptor::{SaslAcceptor, SaslServerFrame};
use fe2o3_amqp::types::primitives::{Array, Symbol};
use fe2o3_amqp::types::sasl::{SaslCode, SaslInit, SaslOutcome, SaslResponse};
use std::sync::{Arc, Mutex};

/// Checks a user id and password (the server's connection authentication).
pub type Verify = Arc<dyn Fn(&str, &str) -> bool + Send + Sync>;

/// The principal a connection authenticated as (set once SASL succeeds), and the user id the
/// client gave (SASL PLAIN), for CHLAUTH.
#[derive(Clone, Default)]
pub struct Principal(Arc<Mutex<(Option<String>, Option<String>)>>);

impl Principal {
    pub fn get(&self) -> Option<String> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).0.clone()
    }

    pub fn asserted(&self) -> Option<String> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).1.clone()
    }

    fn set(&self, p: String, asserted: Option<String>) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = (Some(p), asserted);
    }
}

#[derive(Clone)]
pub struct Sasl {
    verify: Verify,
    mcauser: String,
    principal: Principal,
    /// The subject DN of the client certificate TLS verified, if any (SASL EXTERNAL).
    dn: Option<String>,
    /// Whether SASL PLAIN may be used: over TLS, or when the queue manager's connection
    /// authentication accepts passwords in the clear (AUTHINFO PWCLEAR(YES)).
    plain_ok: bool,
}

impl Sasl {
    pub fn new(verify: Verify, mcauser: &str, principal: Principal, dn: Option<String>) -> Sasl {
        Sasl {
            verify,
            mcauser: mcauser.to_string(),
            principal,
            dn,
            plain_ok: true,
        }
    }

    /// Whether PLAIN is offered and taken (false: a channel without TLS on a queue manager that
    /// refuses passwords in the clear).
    pub fn plain(mut self, ok: bool) -> Sasl {
        self.plain_ok = ok;
        self
    }

    /// The channel's MCAUSER when set, else `who`.
    fn runs_as(&self, who: &str) -> String {
        if self.mcauser.is_empty() {
            who.to_string()
        } else {
            self.mcauser.clone()
        }
    }

    fn outcome(code: SaslCode) -> SaslServerFrame {
        SaslServerFrame::Outcome(SaslOutcome {
            code,
            additional_data: None,
        })
    }
}

/// `authzid NUL authcid NUL password` (RFC 4616): the user and password.
fn plain(response: &[u8]) -> Option<(String, String)> {
    let mut parts = response.split(|b| *b == 0);
    let _authzid = parts.next()?;
    let user = std::str::from_utf8(parts.next()?).ok()?;
    let password = std::str::from_utf8(parts.next()?).ok()?;
    if parts.next().is_some() || user.is_empty() || password.len() > 256 {
        return None;
    }
    Some((user.to_string(), password.to_string()))
}

impl SaslAcceptor for Sasl {
    fn mechanisms(&self) -> Array<Symbol> {
        let mut m = Vec::new();
        if self.dn.is_some() {
            m.push(Symbol::from("EXTERNAL"));
        }
        if self.plain_ok {
            m.push(Symbol::from("PLAIN"));
        }
        if !self.mcauser.is_empty() {
            m.push(Symbol::from("ANONYMOUS"));
        }
        Array::from(m)
    }

    fn on_init(&mut self, init: SaslInit) -> SaslServerFrame {
        match init.mechanism.as_str() {
            "PLAIN" if !self.plain_ok => {
                tracing::warn!(
                    "SASL PLAIN refused: a password over a channel without TLS, which this queue \
                     manager refuses (give the channel SSLCIPH, or ALTER AUTHINFO(..) \
                     AUTHTYPE(IDPWOS) PWCLEAR(YES))"
                );
                Sasl::outcome(SaslCode::Auth)
            }
            "PLAIN" => {
                let creds = init
                    .initial_response
                    .as_ref()
                    .and_then(|r| plain(r.as_ref()));
                match creds {
                    Some((user, password)) if (self.verify)(&user, &password) => {
                        let who = self.runs_as(&user);
                        self.principal.set(who, Some(user));
                        Sasl::outcome(SaslCode::Ok)
                    }
                    _ => Sasl::outcome(SaslCode::Auth),
                }
            }
            // The identity is the certificate's: an authorization id the client asserts in
            // its initial response is not taken.
            "EXTERNAL" if self.dn.is_some() => {
                let who = self.runs_as(self.dn.as_deref().unwrap_or_default());
                self.principal.set(who, None);
                Sasl::outcome(SaslCode::Ok)
            }
            "ANONYMOUS" if !self.mcauser.is_empty() => {
                self.principal.set(self.mcauser.clone(), None);
                Sasl::outcome(SaslCode::Ok)
            }
            _ => Sasl::outcome(SaslCode::Auth),
        }
    }

    fn on_response(&mut self, _response: SaslResponse) -> SaslServerFrame {
        Sasl::outcome(SaslCode::Auth)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn init(mechanism: &str, response: Option<&[u8]>) -> SaslInit {
        SaslInit {
            mechanism: Symbol::from(mechanism),
            initial_response: response.map(|r| r.to_vec().into()),
            hostname: None,
        }
    }

    fn ok(f: SaslServerFrame) -> bool {
        matches!(f, SaslServerFrame::Outcome(o) if o.code == SaslCode::Ok)
    }

    #[test]
    fn external_is_offered_and_taken_only_with_a_verified_certificate() {
        let verify: Verify = Arc::new(|u: &str, p: &str| u == "alice" && p == "pw");
        let dn = Some("CN=alice,O=Example".to_string());
        // No certificate: not offered, and refused when asked for.
        let p = Principal::default();
        let mut s = Sasl::new(verify.clone(), "", p.clone(), None);
        assert!(!s.mechanisms().iter().any(|m| m.as_str() == "EXTERNAL"));
        assert!(!ok(s.on_init(init("EXTERNAL", None))));
        assert_eq!(p.get(), None);
        // A certificate: its DN is the principal, whatever authorization id is asserted.
        let p = Principal::default();
        let mut s = Sasl::new(verify.clone(), "", p.clone(), dn.clone());
        assert_eq!(
            s.mechanisms().iter().next().map(|m| m.as_str()),
            Some("EXTERNAL")
        );
        assert!(ok(s.on_init(init("EXTERNAL", Some(b"CN=root")))));
        assert_eq!(p.get().as_deref(), Some("CN=alice,O=Example"));
        // The channel's MCAUSER wins over the DN; ANONYMOUS needs an MCAUSER.
        let p = Principal::default();
        let mut s = Sasl::new(verify.clone(), "app", p.clone(), dn);
        assert!(ok(s.on_init(init("EXTERNAL", None))));
        assert_eq!(p.get().as_deref(), Some("app"));
        let mut s = Sasl::new(verify.clone(), "", Principal::default(), None);
        assert!(!ok(s.on_init(init("ANONYMOUS", None))));
        assert!(!ok(s.on_init(init("PLAIN", Some(b"\0alice\0wrong")))));
        assert!(ok(s.on_init(init("PLAIN", Some(b"\0alice\0pw")))));
        // Without TLS, unless passwords in the clear are allowed: PLAIN neither offered nor taken.
        let mut s = Sasl::new(verify, "", Principal::default(), None).plain(false);
        assert!(!s.mechanisms().iter().any(|m| m.as_str() == "PLAIN"));
        assert!(!ok(s.on_init(init("PLAIN", Some(b"\0alice\0pw")))));
    }

    #[test]
    fn plain_responses_are_read_strictly() {
        assert_eq!(
            plain(b"\0alice\0s3cret"),
            Some(("alice".into(), "s3cret".into()))
        );
        assert_eq!(plain(b"alice\0s3cret"), None);
        assert_eq!(plain(b"\0\0pw"), None);
        assert_eq!(plain(b"\0a\0b\0c"), None);
        assert_eq!(plain(&[0, b'a', 0, 0xff]), None);
    }

    proptest::proptest! {
        #[test]
        fn any_response_is_read_without_panic(b in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..400)) {
            let _ = plain(&b);
        }
    }
}

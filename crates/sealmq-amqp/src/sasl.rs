//! SASL for AMQP channels: EXTERNAL when TLS authenticated the client with a certificate (its
//! subject DN is the principal), PLAIN checked by the queue manager's connection
//! authentication (password file, then PAM), ANONYMOUS only on a channel with an MCAUSER. The
//! channel's MCAUSER, when set, is the principal whatever the mechanism; the principal the
//! connection runs as is recorded for it.

use fe2o3_amqp::acceptor::sasl_acceptor::{SaslAcceptor, SaslServerFrame};
use fe2o3_amqp::types::primitives::{Array, Symbol};
use fe2o3_amqp::types::sasl::{SaslCode, SaslInit, SaslOutcome, SaslResponse};
use sealmq_types::sync::lock;
use std::sync::{Arc, Mutex};

/// Checks a user id and password from an address (the server's connection authentication,
/// through its authentication gate: bounded, delayed after failures, failures answered
/// after the same time). It blocks: the SASL exchange runs it off the runtime's workers.
pub type Verify = Arc<dyn Fn(&str, &str, &str) -> bool + Send + Sync>;

/// CHLAUTH judged before a password is looked at: `Err(why)` when the channel, running as
/// the second argument for the user the client asserted (the first), would be refused.
pub type Precheck = Arc<dyn Fn(Option<&str>, &str) -> Result<(), String> + Send + Sync>;

#[derive(Default)]
struct Said {
    principal: Option<String>,
    asserted: Option<String>,
    refusal: Option<String>,
}

/// The principal a connection authenticated as (set once SASL succeeds), the user id the
/// client gave (SASL PLAIN), for CHLAUTH, and why SASL refused it (for the log only).
#[derive(Clone, Default)]
pub struct Principal(Arc<Mutex<Said>>);

impl Principal {
    fn said(&self) -> std::sync::MutexGuard<'_, Said> {
        lock(&self.0)
    }

    pub fn get(&self) -> Option<String> {
        self.said().principal.clone()
    }

    pub fn asserted(&self) -> Option<String> {
        self.said().asserted.clone()
    }

    /// Why SASL refused the client, if it did.
    pub fn refusal(&self) -> Option<String> {
        self.said().refusal.clone()
    }

    fn set(&self, p: String, asserted: Option<String>) {
        let mut s = self.said();
        s.principal = Some(p);
        s.asserted = asserted;
    }

    fn refuse(&self, why: String) {
        self.said().refusal = Some(why);
    }
}

#[derive(Clone)]
pub struct Sasl {
    verify: Verify,
    /// The client's IP address (the gate's delays and bounds are per address).
    addr: String,
    precheck: Precheck,
    /// ANONYMOUS offered and taken: the channel has an MCAUSER that CHLAUTH and connection
    /// authentication would let in without a password.
    anonymous: bool,
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
            addr: String::new(),
            precheck: Arc::new(|_, _| Ok(())),
            anonymous: !mcauser.is_empty(),
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

    /// The client's address and the CHLAUTH judgement made before any password is checked;
    /// ANONYMOUS is offered only when that judgement lets the channel's MCAUSER in and
    /// `anonymous` (connection authentication does not require a password) holds.
    pub fn guarded(mut self, addr: &str, precheck: Precheck, anonymous: bool) -> Sasl {
        self.addr = addr.to_string();
        self.anonymous =
            anonymous && !self.mcauser.is_empty() && precheck(None, &self.mcauser).is_ok();
        self.precheck = precheck;
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
        if self.anonymous {
            m.push(Symbol::from("ANONYMOUS"));
        }
        Array::from(m)
    }

    fn on_init(&mut self, init: SaslInit) -> SaslServerFrame {
        let mech = init.mechanism.as_str().to_string();
        match mech.as_str() {
            "PLAIN" if !self.plain_ok => {
                self.principal.refuse(
                    "SASL PLAIN refused: a password over a channel without TLS, which this queue \
                     manager refuses (give the channel SSLCIPH, or ALTER AUTHINFO(..) \
                     AUTHTYPE(IDPWOS) PWCLEAR(YES))"
                        .into(),
                );
                Sasl::outcome(SaslCode::Auth)
            }
            "PLAIN" => {
                let creds = init
                    .initial_response
                    .as_ref()
                    .and_then(|r| plain(r.as_ref()));
                let Some((user, password)) = creds else {
                    self.principal
                        .refuse("SASL PLAIN refused: a malformed initial response".into());
                    return Sasl::outcome(SaslCode::Auth);
                };
                let password = zeroize::Zeroizing::new(password);
                let who = self.runs_as(&user);
                // CHLAUTH before the password: a blocked address or user learns nothing of it.
                if let Err(why) = (self.precheck)(Some(&user), &who) {
                    self.principal.refuse(format!("SASL PLAIN refused: {why}"));
                    return Sasl::outcome(SaslCode::Auth);
                }
                let verify = self.verify.clone();
                let check = || verify(&self.addr, &user, &password);
                // The check blocks (Argon2, PAM, the gate's delays): off the runtime's workers.
                let ok = match tokio::runtime::Handle::try_current() {
                    Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
                        tokio::task::block_in_place(check)
                    }
                    _ => check(),
                };
                if ok {
                    self.principal.set(who, Some(user));
                    Sasl::outcome(SaslCode::Ok)
                } else {
                    self.principal.refuse(format!(
                        "SASL PLAIN refused: user id '{user}' and password were not accepted"
                    ));
                    Sasl::outcome(SaslCode::Auth)
                }
            }
            // The identity is the certificate's: an authorization id the client asserts in
            // its initial response is not taken.
            "EXTERNAL" if self.dn.is_some() => {
                let who = self.runs_as(self.dn.as_deref().unwrap_or_default());
                self.principal.set(who, None);
                Sasl::outcome(SaslCode::Ok)
            }
            "EXTERNAL" => {
                self.principal
                    .refuse("SASL EXTERNAL refused: TLS verified no client certificate".into());
                Sasl::outcome(SaslCode::Auth)
            }
            "ANONYMOUS" if self.anonymous => {
                self.principal.set(self.mcauser.clone(), None);
                Sasl::outcome(SaslCode::Ok)
            }
            other => {
                let other: String = other.chars().take(40).filter(|c| !c.is_control()).collect();
                self.principal.refuse(format!(
                    "SASL mechanism '{other}' is not offered on this channel"
                ));
                Sasl::outcome(SaslCode::Auth)
            }
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
        let verify: Verify = Arc::new(|_a: &str, u: &str, p: &str| u == "alice" && p == "pw");
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

    /// A user CHLAUTH blocks is refused before its password is looked at: the answer is the
    /// same for a right and a wrong password, and the check never runs.
    #[test]
    fn chlauth_is_judged_before_the_password() {
        let checked = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let c = checked.clone();
        let verify: Verify = Arc::new(move |_a: &str, u: &str, p: &str| {
            c.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            u == "mqm" && p == "right"
        });
        let precheck: Precheck = Arc::new(|asserted: Option<&str>, _runs_as: &str| {
            if asserted == Some("mqm") {
                Err("BLOCKUSER".into())
            } else {
                Ok(())
            }
        });
        for pw in [&b"\0mqm\0right"[..], &b"\0mqm\0wrong"[..]] {
            let p = Principal::default();
            let mut s = Sasl::new(verify.clone(), "", p.clone(), None).guarded(
                "10.0.0.1",
                precheck.clone(),
                true,
            );
            assert!(!ok(s.on_init(init("PLAIN", Some(pw)))));
            assert!(p.refusal().unwrap().contains("BLOCKUSER"));
        }
        assert_eq!(checked.load(std::sync::atomic::Ordering::SeqCst), 0);
        // ANONYMOUS is not offered when CHLAUTH would refuse the MCAUSER, or a password is
        // required.
        let deny_all: Precheck = Arc::new(|_, _| Err("no".into()));
        let s = Sasl::new(verify.clone(), "app", Principal::default(), None)
            .guarded("10.0.0.1", deny_all, true);
        assert!(!s.mechanisms().iter().any(|m| m.as_str() == "ANONYMOUS"));
        let s = Sasl::new(verify, "app", Principal::default(), None)
            .guarded("10.0.0.1", precheck, false);
        assert!(!s.mechanisms().iter().any(|m| m.as_str() == "ANONYMOUS"));
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

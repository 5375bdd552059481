//! The queue manager's keystore (`<QM dir>/keystore`) as the server uses it: the protector for
//! SPLPROT and QM-side interception, and the TLS configuration of the listener. Both are read at
//! start and again by `REFRESH SECURITY TYPE(SSL)`, so that a new certificate, a new trusted
//! partner or a CRL takes effect without a restart.
//!
//! What takes the new keystore, and when: a TLS handshake on the listener from the next one on;
//! a client connection when it connects (QM-side interception keeps the keystore it started
//! with); a channel at its next batch (SPLPROT) and at its next connection (sending channels
//! read the keystore when they connect). A refresh that cannot read the keystore changes
//! nothing and says why.

use sealmq_protect::{Keystore, Protector};
use sealmq_types::sync::{read, write};
use std::path::PathBuf;
use std::sync::{Arc, RwLock};

/// What one reading of the keystore gave.
#[derive(Clone, Default)]
struct Loaded {
    protector: Option<Arc<Protector>>,
    tls: Option<Arc<rustls::ServerConfig>>,
}

pub struct Security {
    /// The password file of connection authentication (REFRESH SECURITY TYPE(CONNAUTH)).
    pub users: crate::auth::connauth::Users,
    /// Security events for the queue manager's log (rate-limited).
    pub events: crate::auth::events::Events,
    /// Every password check passes through it (bounded, delayed after failures).
    pub gate: crate::auth::authgate::Gate,
    dir: PathBuf,
    /// The listener serves TLS: a keystore that cannot make a TLS configuration is an error.
    tls: bool,
    loaded: RwLock<Loaded>,
}

impl Security {
    /// Reads the keystore in `dir`. At start a keystore that does not load leaves the queue
    /// manager without one (SPLPROT and QM-side interception then say so when used), unless
    /// the listener needs it for TLS.
    pub fn load(dir: PathBuf, tls: bool) -> Result<Security, String> {
        let protector = Keystore::load(&dir)
            .ok()
            .map(|ks| Arc::new(Protector::new(ks)));
        let tls_cfg = if tls {
            Some(sealmq_wire::tls::server_config(&dir)?)
        } else {
            None
        };
        let qm_dir = dir.parent().map(|p| p.to_path_buf()).unwrap_or_default();
        Ok(Security {
            users: crate::auth::connauth::Users::load(&qm_dir)?,
            events: crate::auth::events::Events::default(),
            gate: crate::auth::authgate::Gate::default(),
            dir,
            tls,
            loaded: RwLock::new(Loaded {
                protector,
                tls: tls_cfg,
            }),
        })
    }

    fn read(&self) -> Loaded {
        read(&self.loaded).clone()
    }

    /// Checks `user`'s password from `addr` (an IP address, or `local:<OS user>`) through
    /// the authentication gate; a refusal's detail goes to the log, never the password.
    pub fn check_password(&self, addr: &str, user: &str, password: &str) -> bool {
        use crate::auth::authgate::Verdict;
        match self
            .gate
            .check(addr, user, || self.users.verify(user, password))
        {
            Verdict::Accepted => true,
            Verdict::Refused => {
                self.events.log(&format!(
                    "password check failed: user id '{user}' from {addr}: an unknown user, or not its \
                     password"
                ));
                false
            }
            Verdict::Busy => {
                self.events.log(&format!(
                    "password check refused: user id '{user}' from {addr}: too many checks under \
                     way (from everywhere, or from this address)"
                ));
                false
            }
        }
    }

    /// The protector of the keystore in use, if the queue manager has one.
    pub fn protector(&self) -> Option<Arc<Protector>> {
        self.read().protector
    }

    /// The listener's TLS configuration, when it serves TLS.
    pub fn tls(&self) -> Option<Arc<rustls::ServerConfig>> {
        self.read().tls
    }

    /// A TLS configuration from the keystore as it is now, for a channel that serves TLS on a
    /// port of its own (AMQP channels): client certificates required or optional (SSLCAUTH).
    /// Only the suite SSLCIPH names is offered (all with ANY), so that a client offering it
    /// among others negotiates that one.
    pub fn channel_tls(
        &self,
        require_client: bool,
        sslciph: &str,
    ) -> Result<Arc<rustls::ServerConfig>, String> {
        let keep = |suite: &str| sealmq_engine::channels::sslciph_allows(sslciph, suite);
        sealmq_wire::tls::server_config_suites(&self.dir, require_client, keep).map_err(|e| {
            format!(
                "keystore {} with SSLCIPH({sslciph}): {e}",
                self.dir.display()
            )
        })
    }

    /// Reads the keystore again and puts it in use; on failure the one in use stays.
    pub fn refresh(&self) -> Result<String, String> {
        let fail = |e: String| {
            format!(
                "cannot read the keystore {} ({e}); the keystore in use is unchanged",
                self.dir.display()
            )
        };
        let protector = if self.dir.exists() {
            Some(Arc::new(Protector::new(
                Keystore::load(&self.dir).map_err(|e| fail(e.to_string()))?,
            )))
        } else {
            None
        };
        let tls = if self.tls {
            Some(sealmq_wire::tls::server_config(&self.dir).map_err(fail)?)
        } else {
            None
        };
        let what = match (&protector, self.tls) {
            (None, _) => "no keystore: SPLPROT and QM-side interception are unavailable",
            (Some(_), true) => "TLS listener, SPLPROT and QM-side interception use it",
            (Some(_), false) => "SPLPROT and QM-side interception use it",
        };
        *write(&self.loaded) = Loaded { protector, tls };
        Ok(format!("AMQ8560I: Keystore read again ({what})."))
    }
}

//! TLS for the TCP transport (rustls on aws-lc-rs), with identities and trust from sealmq
//! keystores (docs/keystore.md).
//!
//! The server presents the queue manager's keystore identity and requires a client certificate
//! that chains to a CA its keystore trusts (or is trusted as itself); the client's principal is
//! its certificate's subject DN. The client presents its own identity and accepts a server
//! certificate that its keystore trusts; when it expects a queue manager name, the certificate's
//! subject must carry it as CN (queue managers have no DNS names to match).

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, SupportedKxGroup};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::server::WebPkiClientVerifier;
use rustls::{DigitallySignedStruct, RootCertStore, SignatureScheme};
use rustls_pki_types::pem::PemObject;
use sealmq_protect::Keystore;
use sealmq_protect::cert::Cert;
use sealmq_protect::pathval::{self, Usage};
use sealmq_types::sync::lock;
use std::io::{Read, Write};
use std::path::Path;
use std::sync::{Arc, Mutex};

/// The environment variable that sets this process's post-quantum key exchange (every TLS
/// endpoint and client it makes): `prefer` (the default), `require` or `off`.
pub const PQ_ENV: &str = "SEALMQ_TLS_PQ";

/// Whether TLS key exchange is post-quantum (hybrid X25519MLKEM768: X25519 and ML-KEM-768
/// together, so a link is as strong as the stronger of the two).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PqMode {
    /// Offered and preferred; a classical group is accepted from a peer without it.
    Prefer,
    /// The only group offered or accepted: a peer offering only classical groups is refused.
    Require,
    /// Classical groups only (X25519, P-256, P-384).
    Off,
}

impl PqMode {
    /// This process's mode, from [`PQ_ENV`]; an unknown value is an error naming it.
    pub fn from_env() -> Result<PqMode, String> {
        match std::env::var(PQ_ENV) {
            Err(_) => Ok(PqMode::Prefer),
            Ok(v) => PqMode::parse(&v),
        }
    }

    pub fn parse(v: &str) -> Result<PqMode, String> {
        match v.trim().to_ascii_lowercase().as_str() {
            "" | "prefer" => Ok(PqMode::Prefer),
            "require" => Ok(PqMode::Require),
            "off" => Ok(PqMode::Off),
            other => Err(format!(
                "{PQ_ENV}='{other}': expected prefer, require or off"
            )),
        }
    }

    /// The key-exchange groups offered, most preferred first.
    fn groups(self) -> Vec<&'static dyn SupportedKxGroup> {
        use rustls::crypto::aws_lc_rs::kx_group::{SECP256R1, SECP384R1, X25519, X25519MLKEM768};
        match self {
            PqMode::Prefer => vec![X25519MLKEM768, X25519, SECP256R1, SECP384R1],
            PqMode::Require => vec![X25519MLKEM768],
            PqMode::Off => vec![X25519, SECP256R1, SECP384R1],
        }
    }
}

/// aws-lc-rs with the key-exchange groups of this process's [`PqMode`].
fn provider() -> Result<Arc<CryptoProvider>, String> {
    let mut p = rustls::crypto::aws_lc_rs::default_provider();
    p.kx_groups = PqMode::from_env()?.groups();
    Ok(Arc::new(p))
}

/// What a link's TLS handshake agreed on, as DISPLAY CHSTATUS and DISPLAY CONN show it;
/// empty without TLS.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Agreed {
    /// The protocol as MQ's SECPROT spells it: `TLSV13`, `TLSV12`.
    pub secprot: String,
    /// The key-exchange group (SSLGROUP): `X25519MLKEM768`, `X25519`, ...
    pub group: String,
}

/// What a link negotiated (empty before the handshake).
pub fn negotiated(conn: &rustls::CommonState) -> Agreed {
    let protocol = match conn.protocol_version() {
        Some(rustls::ProtocolVersion::TLSv1_3) => "TLSV13".to_string(),
        Some(rustls::ProtocolVersion::TLSv1_2) => "TLSV12".to_string(),
        Some(other) => format!("{other:?}"),
        None => String::new(),
    };
    let group = conn
        .negotiated_key_exchange_group()
        .map(|g| format!("{:?}", g.name()))
        .unwrap_or_default();
    Agreed {
        secprot: protocol,
        group,
    }
}

fn identity(
    dir: &Path,
    ks: &Keystore,
) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), String> {
    let id = ks.require_identity().map_err(|e| e.to_string())?;
    let mut chain = vec![CertificateDer::from(id.cert.der().to_vec())];
    chain.extend(
        id.chain
            .iter()
            .map(|c| CertificateDer::from(c.der().to_vec())),
    );
    let key_path = dir.join("identity.key");
    let bytes =
        sealmq_protect::keystore::read_private_key_file(&key_path).map_err(|e| e.to_string())?;
    let key = PrivateKeyDer::from_pem_slice(&bytes)
        .map_err(|e| format!("{}: {e}", key_path.display()))?;
    Ok((chain, key))
}

/// The server side: the queue manager's identity, client certificates required.
pub fn server_config(keystore_dir: &Path) -> Result<Arc<rustls::ServerConfig>, String> {
    server_config_auth(keystore_dir, true)
}

/// The server side with a channel's SSLCAUTH: `require_client` false (SSLCAUTH(OPTIONAL))
/// lets a client without a certificate in; a certificate a client does present must still
/// chain to one the keystore trusts.
pub fn server_config_auth(
    keystore_dir: &Path,
    require_client: bool,
) -> Result<Arc<rustls::ServerConfig>, String> {
    server_config_suites(keystore_dir, require_client, |_| true)
}

/// The server side offering only the cipher suites `keep` accepts (by name, e.g.
/// `TLS13_AES_128_GCM_SHA256`): a channel whose SSLCIPH names one suite negotiates that one
/// with any client that offers it. An error when `keep` accepts none.
pub fn server_config_suites(
    keystore_dir: &Path,
    require_client: bool,
    keep: impl Fn(&str) -> bool,
) -> Result<Arc<rustls::ServerConfig>, String> {
    let ks = Keystore::load(keystore_dir).map_err(|e| e.to_string())?;
    let (chain, key) = identity(keystore_dir, &ks)?;
    let mut roots = RootCertStore::empty();
    for c in ks.trusted() {
        roots
            .add(CertificateDer::from(c.der().to_vec()))
            .map_err(|e| format!("trusted certificate '{}': {e}", c.subject()))?;
    }
    let provider = provider()?;
    let mut verifier =
        WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider.clone());
    if !require_client {
        verifier = verifier.allow_unauthenticated();
    }
    let verifier = verifier
        .build()
        .map_err(|e| format!("client certificate verifier: {e}"))?;
    let mut suites = (*provider).clone();
    suites
        .cipher_suites
        .retain(|c| keep(&format!("{:?}", c.suite())));
    if suites.cipher_suites.is_empty() {
        return Err("no cipher suite of this TLS implementation matches".to_string());
    }
    let cfg = rustls::ServerConfig::builder_with_provider(Arc::new(suites))
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_client_cert_verifier(verifier)
        .with_single_cert(chain, key)
        .map_err(|e| format!("queue manager identity: {e}"))?;
    Ok(Arc::new(cfg))
}

/// Checks the server's certificate against the client's keystore (and the expected QM name).
#[derive(Debug)]
struct QmVerifier {
    trusted: Vec<Cert>,
    expect_qm: Option<String>,
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for QmVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let bad = |m: String| rustls::Error::General(m);
        let cert = Cert::from_der(end_entity).map_err(|e| bad(e.to_string()))?;
        let inter: Vec<Cert> = intermediates
            .iter()
            .filter_map(|c| Cert::from_der(c).ok())
            .collect();
        pathval::validate(
            &cert,
            &inter,
            &self.trusted,
            &pathval::Crls::none(),
            std::time::SystemTime::now(),
            Usage::Tls,
        )
        .map_err(|e| bad(e.to_string()))?;
        if let Some(qm) = &self.expect_qm {
            let cn_ok = cert
                .subject()
                .attributes()
                .any(|(oid, v)| oid == "2.5.4.3" && v == qm);
            if !cn_ok {
                return Err(bad(format!(
                    "the server certificate '{}' is not queue manager '{qm}'",
                    cert.subject()
                )));
            }
        }
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// The client side: the application's identity; the server must be trusted by its keystore.
pub fn client_config(
    keystore_dir: &Path,
    expect_qm: Option<&str>,
) -> Result<Arc<rustls::ClientConfig>, String> {
    let ks = Keystore::load(keystore_dir).map_err(|e| e.to_string())?;
    let (chain, key) = identity(keystore_dir, &ks)?;
    let provider = provider()?;
    let verifier = QmVerifier {
        trusted: ks.trusted().to_vec(),
        expect_qm: expect_qm.map(String::from),
        provider: provider.clone(),
    };
    let cfg = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier))
        .with_client_auth_cert(chain, key)
        .map_err(|e| format!("application identity: {e}"))?;
    Ok(Arc::new(cfg))
}

/// The principal of a verified client: its certificate's subject DN.
pub fn principal(certs: Option<&[CertificateDer<'_>]>) -> Option<String> {
    let first = certs?.first()?;
    Cert::from_der(first).ok().map(|c| c.subject().to_string())
}

/// One TLS stream shared by a reader and a writer that take turns (requests and responses
/// alternate, so they never wait on each other).
pub struct Shared<S>(pub Arc<Mutex<S>>);

impl<S> Clone for Shared<S> {
    fn clone(&self) -> Self {
        Shared(self.0.clone())
    }
}

impl<S: Read> Read for Shared<S> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        lock(&self.0).read(buf)
    }
}

impl<S: Write> Write for Shared<S> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        lock(&self.0).write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        lock(&self.0).flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_post_quantum_setting_reads_its_three_values_and_refuses_others() {
        assert_eq!(PqMode::parse("prefer"), Ok(PqMode::Prefer));
        assert_eq!(PqMode::parse(""), Ok(PqMode::Prefer));
        assert_eq!(PqMode::parse(" REQUIRE "), Ok(PqMode::Require));
        assert_eq!(PqMode::parse("off"), Ok(PqMode::Off));
        let e = PqMode::parse("hybrid").unwrap_err();
        assert!(e.contains("SEALMQ_TLS_PQ='hybrid'"), "{e}");
    }

    #[test]
    fn each_setting_offers_its_groups_in_order() {
        use rustls::NamedGroup;
        let names = |m: PqMode| m.groups().iter().map(|g| g.name()).collect::<Vec<_>>();
        assert_eq!(names(PqMode::Prefer)[0], NamedGroup::X25519MLKEM768);
        assert!(names(PqMode::Prefer).contains(&NamedGroup::X25519));
        assert_eq!(names(PqMode::Require), vec![NamedGroup::X25519MLKEM768]);
        assert!(!names(PqMode::Off).contains(&NamedGroup::X25519MLKEM768));
        assert!(!names(PqMode::Off).is_empty());
    }
}

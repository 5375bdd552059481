//! Keystores made in-process for tests that run a queue manager or a group in-process (the
//! black-box tests make theirs with the `sealmq keystore` command: [`crate::cli::Home`]):
//! P-256 identities, self-signed or signed by an authority, and trust between keystores.

use sealmq_protect::identity::IdentitySpec;
use sealmq_protect::{Dn, KeyKind, Keystore};
use std::path::Path;

fn spec(dn: &str) -> IdentitySpec {
    let dn = Dn::parse(dn).unwrap_or_else(|e| panic!("'{dn}' is not a DN: {e}"));
    IdentitySpec::new(dn, KeyKind::P256, 30)
}

/// A keystore at `dir` with a self-signed identity `dn`.
pub fn keystore(dir: &Path, dn: &str) {
    Keystore::init(dir, &spec(dn), None).expect("a keystore is made");
}

/// A keystore at `dir` whose identity `dn` is a certificate authority.
pub fn authority(dir: &Path, dn: &str) {
    let mut s = spec(dn);
    s.authority = true;
    Keystore::init(dir, &s, None).expect("an authority's keystore is made");
}

/// A keystore at `dir` whose identity `dn` is signed by the authority in `ca`.
pub fn signed(dir: &Path, dn: &str, ca: &Path) {
    Keystore::init(dir, &spec(dn), Some(ca)).expect("a signed keystore is made");
}

/// Keystore `ks` trusts the identity of keystore `of`.
pub fn trust(ks: &Path, of: &Path) {
    let cert = std::fs::read(of.join("identity.pem")).expect("the identity's certificate");
    Keystore::load(ks)
        .and_then(|mut k| k.trust(&cert))
        .expect("the certificate is trusted");
}

/// Keystores `a` and `b` trust each other's identity (TLS with client certificates).
pub fn trust_each_other(a: &Path, b: &Path) {
    trust(a, b);
    trust(b, a);
}

//! Shared test fixtures: a CA and identities in real keystore directories.
#![allow(dead_code)]

use sealmq_protect::identity::IdentitySpec;
use sealmq_protect::{Dn, KeyKind, Keystore, Policy, Protector};
use std::path::{Path, PathBuf};

pub struct World {
    pub dir: tempfile::TempDir,
}

impl World {
    pub fn new() -> World {
        let w = World {
            dir: tempfile::tempdir().expect("tempdir"),
        };
        let mut spec = IdentitySpec::new(
            Dn::parse("CN=Test CA,O=Example").unwrap(),
            KeyKind::P256,
            30,
        );
        spec.authority = true;
        Keystore::init(&w.path("ca"), &spec, None).expect("ca");
        w
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// A keystore `name` with identity `CN=name,O=Example` of `kind`, signed by the CA.
    pub fn identity(&self, name: &str, kind: KeyKind) -> PathBuf {
        let spec = IdentitySpec::new(dn(name), kind, 30);
        Keystore::init(&self.path(name), &spec, Some(&self.path("ca"))).expect("identity");
        self.path(name)
    }

    /// Makes `from` know `to`'s certificate as a recipient.
    pub fn introduce(&self, from: &Path, to: &Path) {
        let cert = std::fs::read(to.join("identity.pem")).unwrap();
        let mut ks = Keystore::load(from).unwrap();
        ks.trust(&cert).unwrap();
    }

    pub fn protector(&self, name: &str) -> Protector {
        Protector::new(Keystore::load(&self.path(name)).unwrap())
    }
}

pub fn dn(name: &str) -> Dn {
    Dn::parse(&format!("CN={name},O=Example")).unwrap()
}

pub fn policy(sign: &str, enc: &str, recips: &[&str]) -> Policy {
    let mut p = Policy::none("APP.Q");
    p.sign_alg = sealmq_protect::SignAlg::parse(sign).unwrap();
    p.enc_alg = sealmq_protect::EncAlg::parse(enc).unwrap();
    p.recipients = recips.iter().map(|r| dn(r)).collect();
    p
}

/// Every byte of a message `from` protects under `pol`, flipped in turn: `to` refuses it with
/// 2063, or (a byte no check covers) still reads the same payload and format.
pub fn every_flip_is_refused(w: &World, from: &str, to: &str, pol: &Policy) {
    let payload = b"transfer 100.00 to 12345";
    let stored = w
        .protector(from)
        .protect(pol, payload, sealmq_protect::Original::with_format("MQSTR"))
        .unwrap();
    let get = w.protector(to);
    for i in 0..stored.len() {
        let mut t = stored.clone();
        t[i] ^= 0x01;
        match get.unprotect(pol, &t) {
            Err(e) => assert_eq!(e.reason().code(), 2063, "byte {i}: {e}"),
            Ok(out) => {
                assert_eq!(out.payload, payload, "byte {i} changed the payload");
                assert_eq!(
                    out.original.unwrap().format_str(),
                    "MQSTR",
                    "byte {i} changed the format"
                );
            }
        }
    }
}

//! Every way an unprotect can fail gets its own error (SPEC §5.4), tampering never yields a
//! different payload, and malformed input never panics.

mod common;
use common::*;
use proptest::prelude::*;
use sealmq_protect::identity::IdentitySpec;
use sealmq_protect::keystore::make_crl_pem;
use sealmq_protect::{Check, KeyKind, Keystore, Original, Protector};
use std::time::{Duration, SystemTime};

fn pair() -> World {
    let w = World::new();
    let a = w.identity("alice", KeyKind::P256);
    let b = w.identity("bob", KeyKind::Rsa(2048));
    w.introduce(&a, &b);
    w.introduce(&b, &a);
    w
}

fn check_of(r: sealmq_protect::Result<sealmq_protect::Unprotected>) -> Check {
    let e = r.expect_err("unprotect should fail");
    assert_eq!(e.reason().code(), 2063);
    e.check()
        .unwrap_or_else(|| panic!("not a check failure: {e}"))
}

#[test]
fn not_a_recipient_and_wrong_key() {
    let w = pair();
    w.identity("eve", KeyKind::Rsa(2048));
    let pol = policy("SHA256", "AES256", &["bob"]);
    let stored = w
        .protector("alice")
        .protect(&pol, b"secret", Original::default())
        .unwrap();
    assert_eq!(
        check_of(w.protector("eve").unprotect(&pol, &stored)),
        Check::Recipient
    );

    // Wrong key: the RecipientInfo names bob's certificate but the private key is eve's.
    let cms = &stored[32..];
    let rec = sealmq_protect::enveloped::parse(cms).unwrap();
    let ris = sealmq_protect::recipients::decode(rec.recipient_infos).unwrap();
    let bob = Keystore::load(&w.path("bob")).unwrap();
    let eve = Keystore::load(&w.path("eve")).unwrap();
    let e = sealmq_protect::recipients::unwrap(
        &ris,
        &[(&bob.identity().unwrap().cert, &eve.identity().unwrap().key)],
        &Default::default(),
    )
    .unwrap_err();
    assert_eq!(e.check(), Some(Check::Decrypt), "{e}");
    assert!(e.to_string().contains("wrong private key"), "{e}");
}

#[test]
fn keystore_refuses_world_readable_and_mismatched_keys() {
    use std::os::unix::fs::PermissionsExt;
    let w = pair();
    let key = w.path("bob").join("identity.key");
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).unwrap();
    let e = Keystore::load(&w.path("bob"))
        .err()
        .expect("world-readable key refused");
    assert!(e.to_string().contains("chmod 600"), "{e}");
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
    // A key that is not the certificate's.
    std::fs::copy(w.path("alice").join("identity.key"), &key).unwrap();
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
    let e = Keystore::load(&w.path("bob"))
        .err()
        .expect("mismatched key refused");
    assert!(e.to_string().contains("does not belong"), "{e}");
}

#[test]
fn untrusted_expired_revoked_and_unlisted_signers() {
    let w = pair();
    let pol = policy("SHA256", "NONE", &[]);
    // Untrusted: a self-signed identity bob does not trust.
    let mallory = w.path("mallory");
    Keystore::init(
        &mallory,
        &IdentitySpec::new(dn("mallory"), KeyKind::P256, 30),
        None,
    )
    .unwrap();
    let m = w
        .protector("mallory")
        .protect(&pol, b"x", Original::default())
        .unwrap();
    let e = w.protector("bob").unprotect(&pol, &m).unwrap_err();
    assert_eq!(e.check(), Some(Check::SignerTrust));
    assert!(e.to_string().contains("does not chain"), "{e}");

    // Expired signer certificate, issued by the trusted CA.
    let mut spec = IdentitySpec::new(dn("old"), KeyKind::P256, 1);
    spec.not_before = SystemTime::now() - Duration::from_secs(10 * 86400);
    spec.not_after = SystemTime::now() - Duration::from_secs(86400);
    Keystore::init(&w.path("old"), &spec, Some(&w.path("ca"))).unwrap();
    let m = w
        .protector("old")
        .protect(&pol, b"x", Original::default())
        .unwrap();
    let e = w.protector("bob").unprotect(&pol, &m).unwrap_err();
    assert_eq!(e.check(), Some(Check::SignerTrust));
    assert!(e.to_string().contains("expired"), "{e}");

    // Revoked signer (CRL in bob's keystore).
    let m = w
        .protector("alice")
        .protect(&pol, b"x", Original::default())
        .unwrap();
    assert!(w.protector("bob").unprotect(&pol, &m).is_ok());
    let alice = Keystore::load(&w.path("alice")).unwrap();
    let crl = make_crl_pem(&w.path("ca"), &[&alice.identity().unwrap().cert], 1, 7).unwrap();
    let mut bob = Keystore::load(&w.path("bob")).unwrap();
    assert_eq!(bob.trust(crl.as_bytes()).unwrap().crls, 1);
    let e = Protector::new(Keystore::load(&w.path("bob")).unwrap())
        .unprotect(&pol, &m)
        .unwrap_err();
    assert_eq!(e.check(), Some(Check::SignerTrust));
    assert!(e.to_string().contains("revoked"), "{e}");

    // Signer not in the SIGNER list.
    let mut listed = pol.clone();
    listed.signers = vec![dn("carol")];
    let m = w
        .protector("bob")
        .protect(&pol, b"x", Original::default())
        .unwrap();
    let e = w.protector("alice").unprotect(&listed, &m).unwrap_err();
    assert_eq!(e.check(), Some(Check::SignerList), "{e}");
    assert!(e.to_string().contains("CN=bob"), "{e}");
    listed.signers.push(dn("bob"));
    assert!(w.protector("alice").unprotect(&listed, &m).is_ok());
}

#[test]
fn weaker_qop_algorithms_and_unprotected_messages() {
    let w = pair();
    let integrity = policy("SHA256", "NONE", &[]);
    let privacy = policy("SHA256", "AES256", &["bob"]);
    let m = w
        .protector("alice")
        .protect(&integrity, b"x", Original::default())
        .unwrap();
    assert_eq!(
        check_of(w.protector("bob").unprotect(&privacy, &m)),
        Check::Qop
    );

    let weak = policy("NONE", "AES128", &["bob"]);
    let m = w
        .protector("alice")
        .protect(&weak, b"x", Original::default())
        .unwrap();
    assert_eq!(
        check_of(
            w.protector("bob")
                .unprotect(&policy("NONE", "AES256", &["bob"]), &m)
        ),
        Check::Algorithms
    );

    let bob = w.protector("bob");
    assert_eq!(check_of(bob.unprotect(&privacy, b"plain text")), Check::Qop);
    let mut tolerant = privacy.clone();
    tolerant.tolerate = true;
    let out = bob.unprotect(&tolerant, b"plain text").unwrap();
    assert_eq!(out.payload, b"plain text");
    assert!(out.tolerated);
}

#[test]
fn flipping_any_byte_is_detected() {
    let w = pair();
    for (sign, enc) in [("SHA256", "NONE"), ("SHA256", "AES256"), ("NONE", "AES256")] {
        let recips: &[&str] = if enc == "NONE" { &[] } else { &["bob"] };
        every_flip_is_refused(&w, "alice", "bob", &policy(sign, enc, recips));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]
    #[test]
    fn garbage_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..600), magic in any::<bool>()) {
        thread_local! {
            static W: World = pair();
        }
        W.with(|w| {
            let mut input = bytes.clone();
            if magic && input.len() >= 32 {
                input[..4].copy_from_slice(b"SMQE");
                input[4] = 1;
                input[5] = 1 + (input[5] % 3);
                input[6] = 0;
                input[7] = 0;
                let n = (input.len() - 32) as u32;
                input[28..32].copy_from_slice(&n.to_be_bytes());
            }
            let bob = w.protector("bob");
            let _ = bob.unprotect(&policy("SHA256", "AES256", &["bob"]), &input);
            let _ = bob.unprotect_cms(&policy("NONE", "NONE", &[]), &bytes);
            let _ = sealmq_protect::inspect(&input, false);
            let _ = sealmq_protect::inspect(&bytes, true);
        });
    }

    #[test]
    fn truncations_are_errors(cut in 0usize..2000) {
        thread_local! {
            static M: (World, Vec<u8>) = {
                let w = pair();
                let m = w.protector("alice").protect(&policy("SHA256", "AES256", &["bob"]), b"hello", Original::default()).unwrap();
                (w, m)
            };
        }
        M.with(|(w, m)| {
            let cut = cut % m.len();
            let r = w.protector("bob").unprotect(&policy("SHA256", "AES256", &["bob"]), &m[..cut]);
            prop_assert!(r.is_err());
            Ok(())
        })?;
    }
}

#[test]
fn huge_lengths_are_errors_not_allocations() {
    let w = pair();
    let mut m = b"SMQE\x01\x03\x00\x00".to_vec();
    m.extend_from_slice(&[b' '; 8]);
    m.extend_from_slice(&[0, 0, 4, 0xb8, 0, 0, 0x02, 0x22, 0xff, 0xff, 0xff, 0xff]);
    m.extend_from_slice(&6u32.to_be_bytes());
    m.extend_from_slice(&[0x30, 0x84, 0x7f, 0xff, 0xff, 0xff]);
    let e = w
        .protector("bob")
        .unprotect(&policy("NONE", "AES256", &["bob"]), &m)
        .unwrap_err();
    assert_eq!(e.check(), Some(Check::Header), "{e}");
}

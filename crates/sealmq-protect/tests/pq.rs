//! Post-quantum recipients: ML-KEM certificates as KEMRecipientInfo (RFC 9629/9936).

mod common;
use common::*;
use sealmq_protect::identity::IdentitySpec;
use sealmq_protect::{KeyKind, KeyReuse, Keystore, Original, Qop, inspect};

const LEVELS: [(&str, KeyKind); 3] = [
    ("kem512", KeyKind::MlKem(512)),
    ("kem768", KeyKind::MlKem(768)),
    ("kem1024", KeyKind::MlKem(1024)),
];

#[test]
fn ml_kem_recipients_read_privacy_and_confidentiality_at_every_level() {
    let w = World::new();
    let alice = w.identity("alice", KeyKind::P256);
    let payload = b"pay 100 EUR to account 42".to_vec();
    for (name, kind) in LEVELS {
        let reader = w.identity(name, kind);
        w.introduce(&alice, &reader);
        w.introduce(&reader, &alice);
        let (put, get) = (w.protector("alice"), w.protector(name));
        for (sign, enc, qop) in [
            ("SHA256", "AES256", Qop::Privacy),
            ("NONE", "AES128", Qop::Confidentiality),
            ("NONE", "AES256", Qop::Confidentiality),
        ] {
            let pol = policy(sign, enc, &[name]);
            let stored = put
                .protect(&pol, &payload, Original::with_format("MQSTR"))
                .unwrap();
            assert!(!stored.windows(payload.len()).any(|x| x == payload));
            let seen = inspect(&stored, false).unwrap();
            assert_eq!(seen.recipients.len(), 1, "{seen:?}");
            assert!(
                seen.recipients[0].ends_with(&kind.name()),
                "{}",
                seen.recipients[0]
            );
            let out = get
                .unprotect(&pol, &stored)
                .unwrap_or_else(|e| panic!("{name} {qop}: {e}"));
            assert_eq!(out.payload, payload);
            assert_eq!(out.qop, qop);
        }
    }
}

#[test]
fn key_reuse_encapsulates_once_per_reused_key() {
    let w = World::new();
    let alice = w.identity("alice", KeyKind::P256);
    let bob = w.identity("bob", KeyKind::MlKem(768));
    w.introduce(&alice, &bob);
    let mut pol = policy("NONE", "AES256", &["bob"]);
    pol.key_reuse = KeyReuse::Count(32);
    let (put, get) = (w.protector("alice"), w.protector("bob"));
    let stored: Vec<Vec<u8>> = (0..320u32)
        .map(|i| {
            put.protect(&pol, &i.to_be_bytes(), Original::default())
                .unwrap()
        })
        .collect();
    for (i, s) in stored.iter().enumerate() {
        assert_eq!(
            get.unprotect(&pol, s).unwrap().payload,
            (i as u32).to_be_bytes()
        );
    }
    assert_eq!(put.counters().key_wrap, 10, "encapsulations");
    assert_eq!(get.counters().key_unwrap, 10, "decapsulations");
}

#[test]
fn a_reader_with_both_kinds_of_certificate_gets_both_recipients_and_reads_with_either() {
    let w = World::new();
    let alice = w.identity("alice", KeyKind::P256);
    // The same reader, before and after its migration: one DN, two keystores.
    let classic = w.identity("bob", KeyKind::Rsa(2048));
    let pq = w.path("bob-pq");
    let spec = IdentitySpec::new(dn("bob"), KeyKind::MlKem(768), 30);
    Keystore::init(&pq, &spec, Some(&w.path("ca"))).unwrap();
    w.introduce(&alice, &classic);
    w.introduce(&alice, &pq);
    let pol = policy("SHA256", "AES256", &["bob"]);
    let stored = w
        .protector("alice")
        .protect(&pol, b"hybrid", Original::default())
        .unwrap();
    let seen = inspect(&stored, false).unwrap();
    assert_eq!(seen.recipients.len(), 2, "{:?}", seen.recipients);
    assert!(seen.recipients.iter().any(|r| r.ends_with("RSA-OAEP")));
    assert!(seen.recipients.iter().any(|r| r.ends_with("ML-KEM-768")));
    for reader in ["bob", "bob-pq"] {
        w.introduce(&w.path(reader), &alice);
        let got = w
            .protector(reader)
            .unprotect(&pol, &stored)
            .unwrap_or_else(|e| panic!("{reader}: {e}"));
        assert_eq!(got.payload, b"hybrid");
    }
}

#[test]
fn an_ml_kem_key_signs_nothing_and_is_never_self_signed() {
    let w = World::new();
    let spec = IdentitySpec::new(dn("lone"), KeyKind::MlKem(768), 30);
    let e = Keystore::init(&w.path("lone"), &spec, None).err().unwrap();
    assert!(e.to_string().contains("--ca"), "{e}");
    let mut ca = IdentitySpec::new(dn("pqca"), KeyKind::MlKem(768), 30);
    ca.authority = true;
    assert!(Keystore::init(&w.path("pqca"), &ca, Some(&w.path("ca"))).is_err());

    let kem = w.identity("kem", KeyKind::MlKem(768));
    w.introduce(&kem, &kem);
    let e = w
        .protector("kem")
        .protect(&policy("SHA256", "NONE", &[]), b"x", Original::default())
        .err()
        .unwrap();
    assert!(e.to_string().contains("cannot sign"), "{e}");
}

#[test]
fn an_ml_kem_certificate_has_key_encipherment_only_and_reloads() {
    let w = World::new();
    let p = w.identity("kem", KeyKind::MlKem(1024));
    let ks = Keystore::load(&p).unwrap();
    let id = ks.identity().unwrap();
    assert_eq!(id.cert.public_key().kind, KeyKind::MlKem(1024));
    assert_eq!(id.key.kind(), KeyKind::MlKem(1024));
    assert!(id.cert.may_encrypt_to());
}

#[test]
fn flipping_any_byte_of_an_ml_kem_envelope_is_detected() {
    let w = World::new();
    let alice = w.identity("alice", KeyKind::P256);
    let bob = w.identity("bob", KeyKind::MlKem(768));
    w.introduce(&alice, &bob);
    w.introduce(&bob, &alice);
    for (sign, enc) in [("SHA256", "AES256"), ("NONE", "AES256")] {
        every_flip_is_refused(&w, "alice", "bob", &policy(sign, enc, &["bob"]));
    }
}

/// A world whose authority signs with ML-DSA-65 and issues ML-DSA signers and ML-KEM readers:
/// nothing in it is classical.
fn pq_world() -> World {
    let w = World::new();
    let mut ca = IdentitySpec::new(dn("PQ CA"), KeyKind::MlDsa(65), 30);
    ca.authority = true;
    Keystore::init(&w.path("pqca"), &ca, None).unwrap();
    w
}

fn pq_identity(w: &World, name: &str, kind: KeyKind) -> std::path::PathBuf {
    let spec = IdentitySpec::new(dn(name), kind, 30);
    Keystore::init(&w.path(name), &spec, Some(&w.path("pqca"))).unwrap();
    w.path(name)
}

#[test]
fn ml_dsa_signers_at_every_level_sign_integrity_and_privacy() {
    let w = pq_world();
    let bob = pq_identity(&w, "bob", KeyKind::MlKem(768));
    for level in [44, 65, 87] {
        let name = format!("dsa{level}");
        let signer = pq_identity(&w, &name, KeyKind::MlDsa(level));
        w.introduce(&signer, &bob);
        w.introduce(&bob, &signer);
        let (put, get) = (w.protector(&name), w.protector("bob"));
        for (enc, qop) in [("NONE", Qop::Integrity), ("AES256", Qop::Privacy)] {
            let recips: &[&str] = if enc == "NONE" { &[] } else { &["bob"] };
            let pol = policy("SHA256", enc, recips);
            let stored = put
                .protect(&pol, b"signed after the quantum years", Original::default())
                .unwrap();
            if qop == Qop::Integrity {
                let seen = inspect(&stored, false).unwrap();
                assert_eq!(seen.signature.as_deref(), Some(&*format!("ML-DSA-{level}")));
                assert_eq!(seen.digest.as_deref(), Some("SHA512"));
            }
            let out = get
                .unprotect(&pol, &stored)
                .unwrap_or_else(|e| panic!("{name} {qop}: {e}"));
            assert_eq!(out.payload, b"signed after the quantum years");
            assert_eq!(out.qop, qop);
            assert_eq!(out.signer, Some(dn(&name).to_string()));
        }
    }
}

#[test]
fn an_ml_dsa_certificate_reloads_and_never_receives() {
    let w = pq_world();
    let a = pq_identity(&w, "alice", KeyKind::MlDsa(65));
    let ks = Keystore::load(&a).unwrap();
    let id = ks.identity().unwrap();
    assert_eq!(id.cert.public_key().kind, KeyKind::MlDsa(65));
    assert_eq!(id.key.kind(), KeyKind::MlDsa(65));
    assert!(!id.cert.may_encrypt_to());
    // A self-signed ML-DSA identity is made as any other.
    let spec = IdentitySpec::new(dn("solo"), KeyKind::MlDsa(44), 30);
    Keystore::init(&w.path("solo"), &spec, None).unwrap();
    let e = w
        .protector("alice")
        .protect(
            &policy("NONE", "AES256", &["alice"]),
            b"x",
            Original::default(),
        )
        .err()
        .unwrap();
    assert!(
        e.to_string().contains("keyUsage that does not allow"),
        "{e}"
    );
}

#[test]
fn flipping_any_byte_of_an_ml_dsa_signed_message_is_detected() {
    let w = pq_world();
    let a = pq_identity(&w, "alice", KeyKind::MlDsa(65));
    let b = pq_identity(&w, "bob", KeyKind::MlKem(768));
    w.introduce(&a, &b);
    w.introduce(&b, &a);
    for enc in ["NONE", "AES256"] {
        let recips: &[&str] = if enc == "NONE" { &[] } else { &["bob"] };
        every_flip_is_refused(&w, "alice", "bob", &policy("SHA256", enc, recips));
    }
}

/// One keystore signs with ML-DSA and reads with an added ML-KEM key: two such applications
/// exchange Privacy both ways. A keystore with a further key is format version 2; one without
/// stays version 1 (older sealmq reads it).
#[test]
fn a_keystore_signs_with_ml_dsa_and_reads_with_an_added_ml_kem_key() {
    let w = pq_world();
    for name in ["alice", "bob"] {
        let p = pq_identity(&w, name, KeyKind::MlDsa(65));
        let toml = std::fs::read_to_string(p.join("keystore.toml")).unwrap();
        assert!(toml.contains("version = 1"), "{toml}");
        let mut ks = Keystore::load(&p).unwrap();
        let (kem, file) = ks
            .add_key(KeyKind::MlKem(768), 30, &w.path("pqca"))
            .unwrap();
        assert_eq!(kem.subject(), &dn(name));
        assert!(file.starts_with(p.join("keys")), "{}", file.display());
        let toml = std::fs::read_to_string(p.join("keystore.toml")).unwrap();
        assert!(
            toml.contains("version = 2") && toml.contains("[[keys]]"),
            "{toml}"
        );
        let again = Keystore::load(&p).unwrap();
        assert_eq!(again.more_keys().len(), 1);
        assert!(again.more_keys()[0].retired.is_none());
    }
    // Each knows the other's two certificates (the signing one and the ML-KEM one).
    for (a, b) in [("alice", "bob"), ("bob", "alice")] {
        w.introduce(&w.path(a), &w.path(b));
        let kem_cert = Keystore::load(&w.path(b)).unwrap().more_keys()[0]
            .cert
            .clone();
        Keystore::load(&w.path(a))
            .unwrap()
            .trust(kem_cert.to_pem().as_bytes())
            .unwrap();
    }
    for (from, to) in [("alice", "bob"), ("bob", "alice")] {
        let pol = policy("SHA256", "AES256", &[to]);
        let m = w
            .protector(from)
            .protect(&pol, b"both ways", Original::default())
            .unwrap();
        let seen = inspect(&m, false).unwrap();
        assert_eq!(
            seen.recipients.len(),
            1,
            "only the ML-KEM key receives: {seen:?}"
        );
        assert!(seen.recipients[0].ends_with("ML-KEM-768"));
        let out = w.protector(to).unprotect(&pol, &m).unwrap();
        assert_eq!(out.payload, b"both ways");
        assert_eq!(out.signer, Some(dn(from).to_string()));
    }
}

/// An identity replaced by `import` is kept, retired with its date: what was encrypted to it
/// still opens; `retire` marks an added key retired the same way.
#[test]
fn a_replaced_identity_is_retired_and_still_opens_what_was_sent_to_it() {
    let w = World::new();
    let alice = w.identity("alice", KeyKind::P256);
    let bob = w.identity("bob", KeyKind::Rsa(2048));
    w.introduce(&alice, &bob);
    let pol = policy("NONE", "AES256", &["bob"]);
    let old = w
        .protector("alice")
        .protect(&pol, b"queued under the old key", Original::default())
        .unwrap();
    // bob's new identity, made elsewhere and imported over the old one.
    let fresh = w.identity("bob-new", KeyKind::P256);
    let mut ks = Keystore::load(&bob).unwrap();
    ks.import(
        &std::fs::read(fresh.join("identity.pem")).unwrap(),
        &std::fs::read(fresh.join("identity.key")).unwrap(),
    )
    .unwrap();
    let ks = Keystore::load(&bob).unwrap();
    let retired = &ks.more_keys()[0];
    assert_eq!(retired.key.kind(), KeyKind::Rsa(2048));
    let when = retired.retired.clone().expect("retired with a date");
    assert!(when.len() == 20 && when.ends_with('Z'), "{when}");
    let out = w.protector("bob").unprotect(&pol, &old).unwrap();
    assert_eq!(out.payload, b"queued under the old key");

    let mut ks = Keystore::load(&bob).unwrap();
    let (kem, _) = ks.add_key(KeyKind::MlKem(768), 30, &w.path("ca")).unwrap();
    ks.retire(&kem.serial_hex()).unwrap();
    assert!(ks.retire(&kem.serial_hex()).is_err(), "retired once");
    let ks = Keystore::load(&bob).unwrap();
    assert!(ks.more_keys().iter().all(|k| k.retired.is_some()));
}

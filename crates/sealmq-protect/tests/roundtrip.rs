//! Protect with one identity, unprotect with another, for every QoP and key type.

mod common;
use common::*;
use sealmq_protect::{KeyKind, KeyReuse, Original, Policy, Protector, Qop};

#[test]
fn every_qop_and_key_type_round_trips() {
    let w = World::new();
    let kinds = [
        ("rsa", KeyKind::Rsa(2048)),
        ("p256", KeyKind::P256),
        ("p384", KeyKind::P384),
        ("ed", KeyKind::Ed25519),
    ];
    for (n, k) in kinds {
        w.identity(n, k);
    }
    for (n, _) in kinds {
        for (m, _) in kinds {
            w.introduce(&w.path(n), &w.path(m));
        }
    }
    let payload = b"pay 100 EUR to account 42".to_vec();
    for (sender, skind) in kinds {
        let put = w.protector(sender);
        for (recip, rkind) in kinds {
            if rkind == KeyKind::Ed25519 {
                continue; // Ed25519 only signs
            }
            let get = w.protector(recip);
            let sign_alg = if skind == KeyKind::P256 {
                "SHA256"
            } else {
                "SHA384"
            };
            for (sign, enc, qop) in [
                (sign_alg, "NONE", Qop::Integrity),
                (sign_alg, "AES256", Qop::Privacy),
                ("NONE", "AES128", Qop::Confidentiality),
            ] {
                let one = [recip];
                let recips: &[&str] = if enc == "NONE" { &[] } else { &one };
                let pol = policy(sign, enc, recips);
                let stored = put
                    .protect(&pol, &payload, Original::with_format("MQSTR"))
                    .unwrap();
                assert_ne!(stored, payload);
                if qop != Qop::Integrity {
                    assert!(
                        !stored.windows(payload.len()).any(|w| w == payload),
                        "plaintext visible"
                    );
                }
                let out = get
                    .unprotect(&pol, &stored)
                    .unwrap_or_else(|e| panic!("{sender}->{recip} {qop}: {e}"));
                assert_eq!(out.payload, payload);
                assert_eq!(out.qop, qop);
                assert_eq!(out.original.unwrap().format_str(), "MQSTR");
                if qop.is_signed() {
                    assert_eq!(out.signer, Some(dn(sender).to_string()));
                }
            }
        }
    }
}

#[test]
fn several_recipients_each_can_read() {
    let w = World::new();
    let a = w.identity("alice", KeyKind::P256);
    let b = w.identity("bob", KeyKind::Rsa(2048));
    let c = w.identity("carol", KeyKind::P384);
    w.introduce(&a, &b);
    w.introduce(&a, &c);
    let pol = policy("SHA256", "AES256", &["bob", "carol"]);
    let stored = w
        .protector("alice")
        .protect(&pol, b"hello", Original::default())
        .unwrap();
    for r in ["bob", "carol"] {
        assert_eq!(
            w.protector(r).unprotect(&pol, &stored).unwrap().payload,
            b"hello"
        );
    }
    let e = w.protector("alice").unprotect(&pol, &stored).unwrap_err();
    assert_eq!(e.check(), Some(sealmq_protect::Check::Recipient), "{e}");
}

/// alice (P-256) encrypting to bob (RSA-2048) under Confidentiality with KEYREUSE(32): the
/// world, the policy, alice's protector and bob's.
fn alice_to_bob_reuse_32() -> (World, Policy, Protector, Protector) {
    let w = World::new();
    let a = w.identity("alice", KeyKind::P256);
    let b = w.identity("bob", KeyKind::Rsa(2048));
    w.introduce(&a, &b);
    let mut pol = policy("NONE", "AES256", &["bob"]);
    pol.key_reuse = KeyReuse::Count(32);
    let (put, get) = (w.protector("alice"), w.protector("bob"));
    (w, pol, put, get)
}

#[test]
fn key_reuse_32_costs_ten_wraps_and_ten_unwraps_for_320_messages() {
    let (_w, pol, put, get) = alice_to_bob_reuse_32();
    let mut stored = Vec::new();
    for i in 0..320u32 {
        stored.push(
            put.protect(&pol, &i.to_be_bytes(), Original::default())
                .unwrap(),
        );
    }
    for (i, s) in stored.iter().enumerate() {
        assert_eq!(
            get.unprotect(&pol, s).unwrap().payload,
            (i as u32).to_be_bytes()
        );
    }
    let p = put.counters();
    let g = get.counters();
    assert_eq!(p.key_wrap, 10, "putter key wraps per recipient");
    assert_eq!(p.put_reuse_misses, 10);
    assert_eq!(p.put_reuse_hits, 310);
    assert_eq!(g.key_unwrap, 10, "getter private-key operations");
    assert_eq!(g.private_key_ops(), 10);
    assert_eq!(g.get_reuse_hits, 310);
    // Same key, same payload: each message still gets its own nonce, so the bytes differ.
    let x = put.protect(&pol, b"same", Original::default()).unwrap();
    let y = put.protect(&pol, b"same", Original::default()).unwrap();
    assert_ne!(x, y);
    assert_eq!(put.counters().key_wrap, 11);
}

#[test]
fn next_key_made_ahead_spares_the_message_that_uses_a_key_up() {
    let w = World::new();
    let a = w.identity("alice", KeyKind::P256);
    let b = w.identity("bob", KeyKind::P256);
    w.introduce(&a, &b);
    let mut pol = policy("NONE", "AES256", &["bob"]);
    pol.key_reuse = KeyReuse::Count(4);
    let put = w.protector("alice");
    let get = w.protector("bob");
    // Nothing to make ahead before a key is in use, nor for policies without a count.
    assert!(!put.prepare_next_key(&pol).unwrap());
    let mut stored = Vec::new();
    for i in 0..12u32 {
        let wraps = put.counters().key_wrap;
        stored.push(
            put.protect(&pol, &i.to_be_bytes(), Original::default())
                .unwrap(),
        );
        if i > 0 {
            // Every key after the first was made ahead: no message pays a wrap.
            assert_eq!(put.counters().key_wrap, wraps, "message {i} wrapped a key");
        }
        // What the client library does while the queue manager handles the put.
        put.prepare_next_key(&pol).unwrap();
    }
    let p = put.counters();
    // Keys for messages 0-3, 4-7, 8-11, and the standby made for the next ones.
    assert_eq!(p.key_wrap, 4);
    assert_eq!(p.put_reuse_misses, 3);
    assert_eq!(p.put_reuse_hits, 9);
    for (i, s) in stored.iter().enumerate() {
        assert_eq!(
            get.unprotect(&pol, s).unwrap().payload,
            (i as u32).to_be_bytes()
        );
    }
    assert_eq!(
        get.counters().key_unwrap,
        3,
        "three keys, four messages each"
    );
    let mut unlimited = pol.clone();
    unlimited.key_reuse = KeyReuse::Unlimited;
    put.protect(&unlimited, b"x", Original::default()).unwrap();
    assert!(!put.prepare_next_key(&unlimited).unwrap());
}

/// Getters of one process meeting a new key at the same moment unwrap it once between them.
#[test]
fn concurrent_getters_unwrap_a_new_key_once() {
    let (_w, pol, put, get) = alice_to_bob_reuse_32();
    let get = std::sync::Arc::new(get);
    let msgs: Vec<Vec<u8>> = (0..8u32)
        .map(|i| {
            put.protect(&pol, &i.to_be_bytes(), Original::default())
                .unwrap()
        })
        .collect();
    let start = std::sync::Arc::new(std::sync::Barrier::new(msgs.len()));
    let threads: Vec<_> = msgs
        .into_iter()
        .map(|m| {
            let (get, start, pol) = (get.clone(), start.clone(), pol.clone());
            std::thread::spawn(move || {
                start.wait();
                get.unprotect(&pol, &m).unwrap().payload
            })
        })
        .collect();
    for t in threads {
        assert_eq!(t.join().unwrap().len(), 4);
    }
    let g = get.counters();
    assert_eq!(
        g.key_unwrap, 1,
        "one private-key operation for one key: {g:?}"
    );
    assert_eq!((g.get_reuse_misses, g.get_reuse_hits), (1, 7));
}

#[test]
fn key_reuse_disabled_and_unlimited() {
    let w = World::new();
    let a = w.identity("alice", KeyKind::P256);
    let _b = w.identity("bob", KeyKind::P256);
    w.introduce(&a, &w.path("bob"));
    let mut pol = policy("NONE", "AES128", &["bob"]);
    let put = w.protector("alice");
    for _ in 0..5 {
        put.protect(&pol, b"x", Original::default()).unwrap();
    }
    assert_eq!(put.counters().key_wrap, 5);
    pol.key_reuse = KeyReuse::Unlimited;
    for _ in 0..50 {
        put.protect(&pol, b"x", Original::default()).unwrap();
    }
    assert_eq!(put.counters().key_wrap, 6);
}

#[test]
fn confidentiality_1kb_rsa2048_is_stored_in_at_most_1600_bytes() {
    // IBM MQ stores this in 1,520 bytes with RSA-1024; RSA-2048 wraps the key in 128 more.
    let w = World::new();
    let a = w.identity("alice", KeyKind::P256);
    let b = w.identity("bob", KeyKind::Rsa(2048));
    w.introduce(&a, &b);
    let mut pol = policy("NONE", "AES256", &["bob"]);
    pol.key_reuse = KeyReuse::Count(32);
    let stored = w
        .protector("alice")
        .protect(&pol, &[0u8; 1024], Original::default())
        .unwrap();
    assert!(stored.len() <= 1600, "stored size {} > 1600", stored.len());
}

#[test]
fn rsa1024_only_behind_the_insecure_switch() {
    use sealmq_protect::identity::IdentitySpec;
    use sealmq_protect::{Keystore, Options, Protector};
    let w = World::new();
    let a = w.identity("alice", KeyKind::P256);
    // Refused without the switch, made with it.
    let spec = IdentitySpec::new(dn("old"), KeyKind::Rsa(1024), 30);
    let e = Keystore::init(&w.path("old"), &spec, Some(&w.path("ca")))
        .err()
        .unwrap();
    assert!(e.to_string().contains("insecure"), "{e}");
    let mut spec = IdentitySpec::new(dn("old"), KeyKind::Rsa(1024), 30);
    spec.insecure_rsa1024 = true;
    let old = w.path("old");
    Keystore::init(&old, &spec, Some(&w.path("ca"))).unwrap();
    // A self-signed RSA-1024 identity too (the certificate is signed by the 1024-bit key).
    Keystore::init(&w.path("old-self"), &spec, None).unwrap();
    w.introduce(&a, &old);
    w.introduce(&old, &a);

    let insecure = |dir: &std::path::Path| {
        let opts = Options {
            insecure_rsa1024: true,
            ..Options::default()
        };
        Protector::with_options(Keystore::load(dir).unwrap(), opts)
    };
    let conf = policy("NONE", "AES256", &["old"]);
    let e = w
        .protector("alice")
        .protect(&conf, b"x", Original::default())
        .unwrap_err();
    assert!(e.to_string().contains("insecure"), "{e}");
    let m = insecure(&a)
        .protect(&conf, b"to rsa1024", Original::default())
        .unwrap();
    let e = w.protector("old").unprotect(&conf, &m).unwrap_err();
    assert_eq!(e.check(), Some(sealmq_protect::Check::Algorithms), "{e}");
    assert_eq!(
        insecure(&old).unprotect(&conf, &m).unwrap().payload,
        b"to rsa1024"
    );

    let integ = policy("SHA256", "NONE", &[]);
    assert!(
        w.protector("old")
            .protect(&integ, b"x", Original::default())
            .is_err()
    );
    let m = insecure(&old)
        .protect(&integ, b"signed by rsa1024", Original::default())
        .unwrap();
    let e = w.protector("alice").unprotect(&integ, &m).unwrap_err();
    assert_eq!(e.check(), Some(sealmq_protect::Check::Algorithms), "{e}");
    assert_eq!(
        insecure(&a).unprotect(&integ, &m).unwrap().payload,
        b"signed by rsa1024"
    );
}

#[test]
fn an_envelope_is_bound_to_the_queue_it_was_protected_for() {
    let w = World::new();
    w.identity("alice", KeyKind::P256);
    w.identity("bob", KeyKind::P256);
    w.introduce(&w.path("alice"), &w.path("bob"));
    w.introduce(&w.path("bob"), &w.path("alice"));
    let (put, get) = (w.protector("alice"), w.protector("bob"));
    for (sign, enc, recips) in [
        ("SHA256", "NONE", &[][..]),
        ("SHA256", "AES256", &["bob"][..]),
        ("NONE", "AES256", &["bob"][..]),
    ] {
        let mut orders = policy(sign, enc, recips);
        orders.name = "ORDERS".into();
        let mut refunds = orders.clone();
        refunds.name = "REFUNDS".into();
        let stored = put
            .protect(&orders, b"pay 100", Original::default())
            .unwrap();
        assert_eq!(stored[4], 2, "header version 2 binds the queue name");
        assert_eq!(get.unprotect(&orders, &stored).unwrap().payload, b"pay 100");
        // The same envelope on another queue with the same policy: refused.
        let e = get.unprotect(&refunds, &stored).unwrap_err().to_string();
        assert!(
            e.contains("protected for queue 'ORDERS', not 'REFUNDS'"),
            "{e}"
        );
        // Where the caller says which name counts (a channel's destination), or any (REMOVE).
        get.unprotect_bound(&refunds, &stored, sealmq_protect::Binds::Name("ORDERS"))
            .unwrap();
        get.unprotect_bound(&refunds, &stored, sealmq_protect::Binds::AnyName)
            .unwrap();
        // The name cannot be edited in the header: it is not there, only in the signed or
        // authenticated part.
        let mut v1 = stored.clone();
        v1[4] = 1;
        assert!(get.unprotect(&orders, &v1).is_err());
    }
}

/// The SignedData a signer assembles from encoded parts is the DER the `cms` types write:
/// decoded and encoded again, every byte is the same (and `openssl cms` reads it, tests/openssl.rs).
#[test]
fn a_signed_message_is_the_der_the_cms_types_encode() {
    use der::{Decode, Encode};
    let w = World::new();
    let kinds = [
        ("rsa", KeyKind::Rsa(2048)),
        ("p256", KeyKind::P256),
        ("ed", KeyKind::Ed25519),
    ];
    for (n, k) in kinds {
        w.identity(n, k);
    }
    for (n, _) in kinds {
        let put = w.protector(n);
        let sign_alg = if n == "p256" { "SHA256" } else { "SHA384" };
        for (payload, bound) in [
            (vec![], false),
            (vec![7u8; 100], false),
            (vec![0x42; 70_000], false),
            (vec![9u8; 100], true),
        ] {
            let pol = policy(sign_alg, "NONE", &[]);
            // In an envelope the SignedData also signs the header's core (a fourth attribute).
            let cms = if bound {
                let stored = put.protect(&pol, &payload, Original::default()).unwrap();
                let (_, cms) = sealmq_protect::header::Header::decode(&stored).unwrap();
                cms.to_vec()
            } else {
                put.protect_cms(&pol, &payload).unwrap()
            };
            let ci = cms::content_info::ContentInfo::from_der(&cms).unwrap();
            assert_eq!(ci.to_der().unwrap(), cms, "{n}, {} bytes", payload.len());
            let sd = ci
                .content
                .decode_as::<cms::signed_data::SignedData>()
                .unwrap();
            assert_eq!(sd.certificates.map(|c| c.0.len()), Some(1));
            assert_eq!(sd.signer_infos.0.len(), 1);
            let si = sd.signer_infos.0.iter().next().unwrap();
            let attrs = si.signed_attrs.as_ref().map(|a| a.len());
            assert_eq!(attrs, Some(3 + usize::from(bound)));
        }
    }
}

//! Re-protecting stored messages for new recipients without decrypting them (`sealmq
//! reprotect`'s core).

mod common;
use common::*;
use sealmq_protect::rewrap::{Outcome, Rewrapper, Target};
use sealmq_protect::{KeyKind, KeyReuse, Keystore, Original};

/// The bytes of a stored message after its RecipientInfos: the encrypted content, its tag and
/// authenticated attributes.
fn after_recipients(stored: &[u8]) -> Vec<u8> {
    let cms = &stored[32..];
    let ris = sealmq_protect::enveloped::parse(cms)
        .unwrap()
        .recipient_infos;
    let end = ris.as_ptr() as usize - cms.as_ptr() as usize + ris.len();
    cms[end..].to_vec()
}

#[test]
fn a_backlog_moves_from_a_departed_rsa_reader_to_an_ml_kem_one_without_decrypting() {
    let w = World::new();
    let alice = w.identity("alice", KeyKind::P256);
    let bob = w.identity("bob", KeyKind::Rsa(2048));
    let carol = w.identity("carol", KeyKind::MlKem(768));
    for r in [&bob, &carol] {
        w.introduce(&alice, r);
        w.introduce(r, &alice);
    }
    let put = w.protector("alice");
    let mut conf = policy("NONE", "AES256", &["bob"]);
    conf.key_reuse = KeyReuse::Count(32);
    let priv_ = policy("SHA256", "AES256", &["bob"]);
    let mut stored: Vec<Vec<u8>> = (0..64u32)
        .map(|i| {
            put.protect(&conf, &i.to_be_bytes(), Original::default())
                .unwrap()
        })
        .collect();
    stored.extend((0..5u32).map(|i| {
        put.protect(
            &priv_,
            format!("signed {i}").as_bytes(),
            Original::default(),
        )
        .unwrap()
    }));
    let integrity = put
        .protect(
            &policy("SHA256", "NONE", &[]),
            b"signed only",
            Original::default(),
        )
        .unwrap();

    // The policy now names carol (ML-KEM) instead of bob.
    let carol_cert = Keystore::load(&carol)
        .unwrap()
        .identity()
        .unwrap()
        .cert
        .clone();
    let target = Target::new(vec![carol_cert]);
    let rw = Rewrapper::new(Keystore::load(&bob).unwrap());
    let mut rewritten = Vec::new();
    for s in &stored {
        match rw.rewrap(s, &target).unwrap() {
            Outcome::Rewritten(n) => {
                assert_eq!(after_recipients(&n), after_recipients(s), "content changed");
                assert_eq!(n[..28], s[..28], "header core changed");
                rewritten.push(n);
            }
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(
        rw.rewrap(&integrity, &target).unwrap(),
        Outcome::NotEncrypted
    );
    let c = rw.counters();
    assert_eq!(
        c.key_unwrap,
        2 + 5,
        "once per reused key, once per Privacy message"
    );
    assert_eq!(c.key_wrap, 2 + 5);
    let (get_c, get_b) = (w.protector("carol"), w.protector("bob"));
    for (i, n) in rewritten.iter().enumerate() {
        let pol = if i < 64 { &conf } else { &priv_ };
        let mut pol = pol.clone();
        pol.recipients = vec![dn("carol")];
        let out = get_c
            .unprotect(&pol, n)
            .unwrap_or_else(|e| panic!("message {i}: {e}"));
        if i < 64 {
            assert_eq!(out.payload, (i as u32).to_be_bytes());
        } else {
            assert_eq!(out.signer, Some(dn("alice").to_string()));
        }
        let e = get_b.unprotect(&pol, n).unwrap_err();
        assert_eq!(e.check(), Some(sealmq_protect::Check::Recipient), "{e}");
        // Done once: a second pass leaves it.
        assert_eq!(rw.rewrap(n, &target).unwrap(), Outcome::Current);
    }
}

#[test]
fn without_the_old_key_nothing_is_rewritten() {
    let w = World::new();
    let alice = w.identity("alice", KeyKind::P256);
    let bob = w.identity("bob", KeyKind::P256);
    let eve = w.identity("eve", KeyKind::P256);
    w.introduce(&alice, &bob);
    let m = w
        .protector("alice")
        .protect(
            &policy("NONE", "AES256", &["bob"]),
            b"x",
            Original::default(),
        )
        .unwrap();
    let target = Target::new(vec![
        Keystore::load(&eve)
            .unwrap()
            .identity()
            .unwrap()
            .cert
            .clone(),
    ]);
    let e = Rewrapper::new(Keystore::load(&eve).unwrap())
        .rewrap(&m, &target)
        .unwrap_err();
    assert_eq!(e.check(), Some(sealmq_protect::Check::Recipient), "{e}");
}

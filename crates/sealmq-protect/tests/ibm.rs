//! IBM MQ AMS's envelope (`PDMQ`, `ENVELOPE(IBM)` policies): every quality of protection round
//! trips, key reuse shares one key envelope, a sealmq policy refuses the format, tampering
//! never yields a different message where the format authenticates it, and malformed input
//! never panics. (Against IBM's own interceptor: crates/sealmq-cli/tests/mqclient/ams.rs.)

mod common;
use common::*;
use proptest::prelude::*;
use sealmq_protect::{Check, Envelope, KeyKind, KeyReuse, Original, Policy};

fn rsa_pair() -> World {
    let w = World::new();
    let a = w.identity("alice", KeyKind::Rsa(2048));
    let b = w.identity("bob", KeyKind::Rsa(2048));
    w.introduce(&a, &b);
    w.introduce(&b, &a);
    w
}

fn ibm(sign: &str, enc: &str, recips: &[&str]) -> Policy {
    let mut p = policy(sign, enc, recips);
    p.envelope = Envelope::Ibm;
    p
}

fn be32(b: &[u8], at: usize) -> usize {
    u32::from_be_bytes(b[at..at + 4].try_into().unwrap()) as usize
}

#[test]
fn every_quality_of_protection_round_trips_in_ibms_format() {
    let w = rsa_pair();
    for (sign, enc) in [("SHA256", "NONE"), ("SHA512", "AES256"), ("NONE", "AES128")] {
        let recips: &[&str] = if enc == "NONE" { &[] } else { &["bob"] };
        let pol = ibm(sign, enc, recips);
        let payload = vec![7u8; 100];
        let stored = w
            .protector("alice")
            .protect(&pol, &payload, Original::with_format("MQSTR"))
            .unwrap();
        assert_eq!(&stored[..4], b"PDMQ");
        assert_eq!(&stored[56..62], b"APP.Q\0");
        let out = w.protector("bob").unprotect(&pol, &stored).unwrap();
        assert_eq!(out.payload, payload, "{sign}/{enc}");
        assert_eq!(out.qop, pol.qop());
        let o = out.original.unwrap();
        assert_eq!(
            (o.format_str().as_str(), o.ccsid, o.encoding),
            ("MQSTR", 0, 0)
        );
        // Under a policy that does not name IBM's format, it is refused.
        let mut own = pol.clone();
        own.envelope = Envelope::Sealmq;
        let e = w.protector("bob").unprotect(&own, &stored).unwrap_err();
        assert_eq!(e.check(), Some(Check::Header), "{e}");
        assert!(e.to_string().contains("ENVELOPE(IBM)"), "{e}");
    }
}

#[test]
fn confidentiality_reuses_one_key_envelope_as_keyreuse_says() {
    let w = rsa_pair();
    let mut pol = ibm("NONE", "AES256", &["bob"]);
    pol.key_reuse = KeyReuse::Count(3);
    let alice = w.protector("alice");
    let bob = w.protector("bob");
    let key = |b: &[u8]| b[112..112 + be32(b, 28)].to_vec();
    let msgs: Vec<Vec<u8>> = (0..4)
        .map(|i| {
            alice
                .protect(&pol, format!("m{i}").as_bytes(), Original::default())
                .unwrap()
        })
        .collect();
    assert_eq!(key(&msgs[0]), key(&msgs[1]));
    assert_eq!(key(&msgs[0]), key(&msgs[2]));
    assert_ne!(
        key(&msgs[0]),
        key(&msgs[3]),
        "a new key after three messages"
    );
    for (i, m) in msgs.iter().enumerate() {
        assert_eq!(
            bob.unprotect(&pol, m).unwrap().payload,
            format!("m{i}").as_bytes()
        );
    }
    let c = bob.counters();
    assert_eq!(
        (c.get_reuse_hits, c.get_reuse_misses),
        (2, 2),
        "each key unwrapped once: {c:?}"
    );
}

#[test]
fn flipping_a_byte_never_yields_a_different_message() {
    let w = rsa_pair();
    for (sign, enc) in [("SHA256", "NONE"), ("SHA256", "AES256")] {
        let recips: &[&str] = if enc == "NONE" { &[] } else { &["bob"] };
        let pol = ibm(sign, enc, recips);
        let payload = b"transfer 100.00 to 12345";
        let stored = w
            .protector("alice")
            .protect(&pol, payload, Original::with_format("MQSTR"))
            .unwrap();
        let bob = w.protector("bob");
        // The original format (bytes 32..40) is not authenticated by IBM's format.
        for i in (0..stored.len()).filter(|i| !(32..40).contains(i)) {
            let mut t = stored.clone();
            t[i] ^= 0x01;
            match bob.unprotect(&pol, &t) {
                Err(e) => assert_eq!(e.reason().code(), 2063),
                Ok(out) => assert_eq!(out.payload, payload, "byte {i} of {sign}/{enc}"),
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]
    #[test]
    fn garbage_after_ibms_magic_never_panics(
        bytes in proptest::collection::vec(any::<u8>(), 0..700),
        v3 in any::<bool>(),
    ) {
        thread_local! {
            static W: World = rsa_pair();
        }
        W.with(|w| {
            let mut input = bytes.clone();
            if input.len() >= 112 {
                input[..4].copy_from_slice(b"PDMQ");
                input[4..8].copy_from_slice(if v3 { &[3, 0, 1, 0] } else { &[2, 0, 1, 0] });
                let h: u32 = if v3 { 112 } else { 104 };
                input[8..12].copy_from_slice(&h.to_be_bytes());
                input[12..16].copy_from_slice(&h.to_be_bytes());
                input[20..24].copy_from_slice(&1208u32.to_be_bytes());
            }
            let bob = w.protector("bob");
            for pol in [ibm("SHA256", "AES256", &["bob"]), ibm("NONE", "AES128", &["bob"])] {
                prop_assert!(bob.unprotect(&pol, &input).is_err() || input.len() < 4);
            }
            Ok(())
        })?;
    }
}

#[test]
fn the_queue_name_in_ibms_header_binds_as_sealmqs_does() {
    let w = rsa_pair();
    let pol = ibm("SHA256", "AES256", &["bob"]);
    let stored = w
        .protector("alice")
        .protect(&pol, b"for APP.Q", Original::default())
        .unwrap();
    let bob = w.protector("bob");
    let mut other = pol.clone();
    other.name = "OTHER.Q".into();
    let e = bob.unprotect(&other, &stored).unwrap_err();
    assert_eq!(e.check(), Some(Check::Header), "{e}");
    // SPLPROT(REMOVE) at an island's exit takes any queue name; a channel names its target.
    use sealmq_protect::envelope::Binds;
    assert!(bob.unprotect_bound(&other, &stored, Binds::AnyName).is_ok());
    assert!(
        bob.unprotect_bound(&other, &stored, Binds::Name("APP.Q"))
            .is_ok()
    );
}

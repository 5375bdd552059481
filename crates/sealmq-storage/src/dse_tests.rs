//! Tests of encryption at rest's keys (`dse.rs`): the keyring, its versions, rotation, streams.

use super::*;

fn env_key(var: &str) -> MasterSource {
    let hex = new_master_hex().unwrap();
    // SAFETY (edition 2024): tests set distinct variables, read by this process only.
    unsafe { std::env::set_var(var, hex.as_str()) };
    MasterSource::Env(var.into())
}

#[test]
fn a_version_1_keyring_opens_and_is_rewritten_as_version_2_with_key_times() {
    let d = tempfile::tempdir().unwrap();
    let src = env_key("SEALMQ_TEST_DSE_V1");
    Dse::create(d.path(), &src).unwrap();
    let k = Dse::open(d.path(), &src).unwrap();
    let sealed = k
        .seal(k.current(), b"aad", b"kept across the upgrade")
        .unwrap();
    let id = k.current();
    drop(k);
    // The same ring in version 1's layout: no master time, no key times.
    let path = d.path().join(KEYRING);
    let ring = Keyring::read(&path).unwrap();
    let mut e = crate::codec::Enc::new();
    e.buf.extend_from_slice(MAGIC);
    e.buf.extend_from_slice(&1u16.to_le_bytes());
    e.buf.extend_from_slice(&ring.salt);
    e.bytes(&ring.check).u32(ring.entries.len() as u32);
    for k in &ring.entries {
        e.u32(k.id).bytes(&k.wrapped);
    }
    std::fs::write(&path, &e.buf).unwrap();
    let (master_age, key_age) = Dse::ages(d.path()).unwrap();
    assert!(master_age < 60 && key_age < 60, "{master_age} {key_age}");
    // It opens, its keys still open what they sealed, and the start rewrote it as v2.
    let k = Dse::open(d.path(), &src).unwrap();
    assert_eq!(
        k.open_sealed(id, b"aad", &sealed).as_deref(),
        Some(&b"kept across the upgrade"[..])
    );
    let b = std::fs::read(&path).unwrap();
    assert_eq!(u16::from_le_bytes([b[4], b[5]]), VERSION);
    assert!(k.data_key_age() < 60 && k.master_key_age() < 60);
    // Truncated or with bytes after it: an error, not a panic.
    for bad in [&b[..b.len() - 1], &[&b[..], &[0u8][..]].concat()[..]] {
        std::fs::write(&path, bad).unwrap();
        assert!(Keyring::read(&path).is_err());
    }
}

#[test]
fn a_rotation_restarts_the_master_key_age_and_keeps_the_data_keys_times() {
    let d = tempfile::tempdir().unwrap();
    let (old, new) = (
        env_key("SEALMQ_TEST_DSE_AGE_OLD"),
        env_key("SEALMQ_TEST_DSE_AGE_NEW"),
    );
    Dse::create(d.path(), &old).unwrap();
    drop(Dse::open(d.path(), &old).unwrap());
    let path = d.path().join(KEYRING);
    // Make the ring look a day old, then rotate.
    let mut ring = Keyring::read(&path).unwrap();
    ring.master_since -= 86_400;
    for k in &mut ring.entries {
        k.made -= 86_400;
    }
    ring.write(&path).unwrap();
    let (master_age, key_age) = Dse::ages(d.path()).unwrap();
    assert!(master_age >= 86_400 && key_age >= 86_400);
    Dse::rotate(d.path(), &old, &new).unwrap();
    let (master_age, key_age) = Dse::ages(d.path()).unwrap();
    assert!(master_age < 60, "{master_age}");
    assert!(key_age >= 86_400, "data keys keep their times: {key_age}");
}

#[test]
fn a_stream_reads_back_from_any_offset_and_differs_per_stream() {
    let d = tempfile::tempdir().unwrap();
    let src = env_key("SEALMQ_TEST_DSE_STREAM");
    Dse::create(d.path(), &src).unwrap();
    let k = Dse::open(d.path(), &src).unwrap();
    let plain: Vec<u8> = (0..20_000u32).map(|i| (i % 251) as u8).collect();
    let (s1, s2) = (Dse::new_stream().unwrap(), Dse::new_stream().unwrap());
    let mut whole = plain.clone();
    k.stream_xor(k.current(), s1, 0, &mut whole).unwrap();
    assert_ne!(whole, plain);
    // Pieces at any offset, as chunks of a snapshot, give the same bytes back.
    for (from, to) in [
        (0, 7),
        (7, 4096),
        (4096, 4097),
        (4097, 13_001),
        (13_001, 20_000),
    ] {
        let mut piece = whole[from..to].to_vec();
        k.stream_xor(k.current(), s1, from as u64, &mut piece)
            .unwrap();
        assert_eq!(piece, plain[from..to]);
    }
    let mut other = plain.clone();
    k.stream_xor(k.current(), s2, 0, &mut other).unwrap();
    assert_ne!(other, whole, "another stream, another keystream");
    assert!(k.stream_xor(99, s1, 0, &mut other).is_err());
}

#[test]
fn keyring_create_open_rotate_and_wrong_keys() {
    let d = tempfile::tempdir().unwrap();
    let src = env_key("SEALMQ_TEST_DSE_A");
    Dse::create(d.path(), &src).unwrap();
    assert!(
        Dse::create(d.path(), &src).is_err(),
        "never replaces a keyring"
    );
    let a = Dse::open(d.path(), &src).unwrap();
    let sealed = a.seal(a.current(), b"pos1", b"payload").unwrap();
    assert_eq!(sealed.len(), 7 + OVERHEAD);
    assert!(!sealed.windows(7).any(|w| w == b"payload"));
    assert_eq!(
        a.open_sealed(a.current(), b"pos1", &sealed).unwrap(),
        b"payload"
    );
    assert!(
        a.open_sealed(a.current(), b"pos2", &sealed).is_none(),
        "position bound"
    );
    let mut tampered = sealed.clone();
    tampered[NONCE_LEN] ^= 1;
    assert!(a.open_sealed(a.current(), b"pos1", &tampered).is_none());

    // A second start: a new current key, the first still readable.
    let b = Dse::open(d.path(), &src).unwrap();
    assert_eq!(b.current(), a.current() + 1);
    assert_eq!(
        b.open_sealed(a.current(), b"pos1", &sealed).unwrap(),
        b"payload"
    );

    // Another master key does not open the keyring.
    let other = env_key("SEALMQ_TEST_DSE_B");
    let e = Dse::open(d.path(), &other).unwrap_err().to_string();
    assert!(e.contains("does not open"), "{e}");
    // Rotation: the new key opens it, the old one no longer does, data keys unchanged.
    assert_eq!(Dse::rotate(d.path(), &src, &other).unwrap(), 2);
    assert!(Dse::open(d.path(), &src).is_err());
    let c = Dse::open(d.path(), &other).unwrap();
    assert_eq!(
        c.open_sealed(a.current(), b"pos1", &sealed).unwrap(),
        b"payload"
    );
}

proptest::proptest! {
    /// A damaged or foreign keyring is an error, never a panic; so is a damaged copy of a
    /// good one.
    #[test]
    fn damaged_keyrings_are_refused(
        junk in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..200),
        flip in 0usize..400,
    ) {
        let d = tempfile::tempdir().unwrap();
        let src = env_key("SEALMQ_TEST_DSE_FUZZ");
        std::fs::write(d.path().join(KEYRING), &junk).unwrap();
        proptest::prop_assert!(Dse::open(d.path(), &src).is_err());
        std::fs::remove_file(d.path().join(KEYRING)).unwrap();
        Dse::create(d.path(), &src).unwrap();
        Dse::open(d.path(), &src).unwrap();
        let mut good = std::fs::read(d.path().join(KEYRING)).unwrap();
        let i = flip % good.len();
        good[i] ^= 0x55;
        std::fs::write(d.path().join(KEYRING), &good).unwrap();
        // Flipping a byte of the salt changes nothing for an env key: it may still open.
        let _ = Dse::open(d.path(), &src);
    }
}

#[test]
fn master_sources_are_checked() {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("master.key");
    std::fs::write(&f, new_master_hex().unwrap().as_str()).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).unwrap();
    let e = Master::load(&MasterSource::File(f.clone()), &[])
        .err()
        .unwrap();
    assert!(e.to_string().contains("chmod 600"), "{e}");
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).unwrap();
    assert!(Master::load(&MasterSource::File(f.clone()), &[]).is_ok());
    std::fs::write(&f, "not hex").unwrap();
    assert!(Master::load(&MasterSource::File(f), &[]).is_err());
    assert!(Master::load(&MasterSource::Env("SEALMQ_TEST_DSE_UNSET".into()), &[]).is_err());
    unsafe { std::env::set_var("SEALMQ_TEST_DSE_PASS", "correct horse") };
    let p = MasterSource::Passphrase("SEALMQ_TEST_DSE_PASS".into());
    Dse::create(d.path(), &p).unwrap();
    assert!(Dse::open(d.path(), &p).is_ok());
    assert_eq!(
        MasterSource::parse("file:/x").unwrap(),
        MasterSource::File("/x".into())
    );
    assert!(MasterSource::parse("vault:x").is_err());
    assert_eq!(p.to_string(), "passphrase-env:SEALMQ_TEST_DSE_PASS");
}

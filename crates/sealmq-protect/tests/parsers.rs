//! Fuzz-style property tests: every parser of the protection layer answers arbitrary input
//! with a value or an error, never a panic.

use proptest::prelude::*;
use sealmq_protect::cert::Cert;
use sealmq_protect::keys::PrivateKey;
use sealmq_protect::keystore::parse_crls;
use sealmq_protect::{Dn, EncAlg, KeyKind, KeyReuse, Keystore, SignAlg};

fn pem_of(label: &str, body: &[u8]) -> String {
    sealmq_protect::cert::pem_encode(label, body)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn dn_parse(s in "\\PC{0,80}") {
        if let Ok(dn) = Dn::parse(&s) {
            // Whatever parses round-trips through DER to an equal name.
            prop_assert_eq!(Dn::from_der(&dn.to_der()).unwrap(), dn);
        }
    }

    #[test]
    fn dn_parse_structured(parts in proptest::collection::vec(("(?i)(cn|o|ou|c|l|st)", "[ -~]{0,12}"), 0..5)) {
        let s: Vec<String> = parts.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let _ = Dn::parse(&s.join(","));
    }

    #[test]
    fn policy_attribute_values(s in "\\PC{0,20}") {
        let _ = SignAlg::parse(&s);
        let _ = EncAlg::parse(&s);
        let _ = KeyReuse::parse(&s);
        let _ = KeyKind::parse(&s);
    }

    #[test]
    fn der_and_pem_credentials(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        let _ = Cert::from_der(&bytes);
        let _ = Cert::all_from_pem_or_der(&bytes);
        let _ = parse_crls(&bytes);
        let _ = PrivateKey::from_pkcs8(&bytes);
        let _ = PrivateKey::from_pem(&bytes);
        for label in ["CERTIFICATE", "X509 CRL", "PRIVATE KEY", "RSA PRIVATE KEY", "EC PRIVATE KEY"] {
            let pem = pem_of(label, &bytes);
            let _ = Cert::all_from_pem_or_der(pem.as_bytes());
            let _ = parse_crls(pem.as_bytes());
            let _ = PrivateKey::from_pem(pem.as_bytes());
        }
    }

    #[test]
    fn keystore_manifest(text in "\\PC{0,200}") {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("keystore.toml"), &text).unwrap();
        prop_assert!(Keystore::load(dir.path()).is_err() || text.contains("version"));
    }
}

#[test]
fn keystore_manifest_defects_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let ks = dir.path();
    let load_err = |text: &str| {
        std::fs::write(ks.join("keystore.toml"), text).unwrap();
        Keystore::load(ks).err().expect("refused").to_string()
    };
    assert!(load_err("version = 3\n").contains("version 3 is not supported"));
    let keys = "version = 2\n[[keys]]\ncert = \"k.pem\"\nkey = \"k.key\"\n";
    assert!(load_err(keys).contains("k.pem"));
    assert!(load_err("version = 1\nsurprise = 1\n").contains("unknown field"));
    assert!(load_err("version = 1\ntrusted = [\"missing.pem\"]\n").contains("missing.pem"));
    std::fs::write(ks.join("bad.pem"), "not a certificate").unwrap();
    assert!(load_err("version = 1\ntrusted = [\"bad.pem\"]\n").contains("no certificate found"));
    assert!(
        Keystore::load(&ks.join("nowhere"))
            .err()
            .unwrap()
            .to_string()
            .contains("keystore init")
    );
}

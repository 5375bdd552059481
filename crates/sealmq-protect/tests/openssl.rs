//! Interoperability with OpenSSL 3 (`openssl cms`), both ways, for every QoP and key type
//! `openssl cms` supports. These tests need the `openssl` command (CI installs it).

mod common;
use common::*;
use sealmq_protect::{KeyKind, Qop};
use std::path::Path;
use std::process::Command;

thread_local! {
    /// The `openssl` command this test runs: the distribution's, or (post-quantum tests) the
    /// OpenSSL 4.0 that `tools/openssl-pq.sh` builds into `target/`.
    static OPENSSL: std::cell::RefCell<std::path::PathBuf> = std::cell::RefCell::new("openssl".into());
}

/// Makes this test's `openssl` the one built from the `openssl-src` crate (≥ 3.6: ML-KEM in CMS).
fn use_openssl_pq() {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/openssl-pq/bin/openssl");
    assert!(
        p.exists(),
        "{} is missing: run tools/openssl-pq.sh (./test does)",
        p.display()
    );
    OPENSSL.with(|o| *o.borrow_mut() = p);
}

fn openssl(args: &[&str]) {
    let bin = OPENSSL.with(|o| o.borrow().clone());
    let out = Command::new(bin).args(args).output().expect(
        "the `openssl` command is needed for interoperability tests (apt-get install openssl)",
    );
    assert!(
        out.status.success(),
        "openssl {} failed: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// RSA key transport as sealmq does it: OAEP with SHA-256.
const OAEP: [&str; 6] = [
    "-keyopt",
    "rsa_padding_mode:oaep",
    "-keyopt",
    "rsa_oaep_md:sha256",
    "-keyopt",
    "rsa_mgf1_md:sha256",
];

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// `openssl cms -encrypt` of `input` to `recip`'s certificate with `cipher`, DER, to `out`,
/// with `extra` options.
fn cms_encrypt(cipher: &str, input: &Path, out: &Path, recip: &Path, extra: &[&str]) {
    let mut args = vec![
        "cms",
        "-encrypt",
        "-binary",
        cipher,
        "-outform",
        "DER",
        "-in",
        s(input),
        "-out",
        s(out),
        "-recip",
        s(recip),
    ];
    args.extend(extra);
    openssl(&args);
}

/// `openssl cms -decrypt` of DER `input` with the identity in keystore `dir`, to `out`.
fn cms_decrypt(input: &Path, dir: &Path, out: &Path) {
    let (cert, key) = (dir.join("identity.pem"), dir.join("identity.key"));
    openssl(&[
        "cms",
        "-decrypt",
        "-binary",
        "-inform",
        "DER",
        "-in",
        s(input),
        "-recip",
        s(&cert),
        "-inkey",
        s(&key),
        "-out",
        s(out),
    ]);
}

/// `openssl cms -verify` of DER `input` against the authority `ca`, the content to `out`.
fn cms_verify(input: &Path, ca: &Path, out: &Path) {
    openssl(&[
        "cms",
        "-verify",
        "-binary",
        "-inform",
        "DER",
        "-in",
        s(input),
        "-CAfile",
        s(ca),
        "-purpose",
        "any",
        "-out",
        s(out),
    ]);
}

/// `openssl cms -sign` of `input` by the identity in keystore `dir` with digest `md`, the
/// content attached, DER, to `out`, with `extra` options.
fn cms_sign(input: &Path, dir: &Path, md: &str, out: &Path, extra: &[&str]) {
    let args = sign_args(input, dir, md, out);
    let mut args: Vec<&str> = args.iter().map(String::as_str).collect();
    args.extend(extra);
    openssl(&args);
}

/// The arguments of `openssl cms -sign` (see [`cms_sign`]).
fn sign_args(input: &Path, dir: &Path, md: &str, out: &Path) -> Vec<String> {
    let (cert, key) = (dir.join("identity.pem"), dir.join("identity.key"));
    [
        "cms",
        "-sign",
        "-binary",
        "-nodetach",
        "-outform",
        "DER",
        "-in",
        s(input),
        "-signer",
        s(&cert),
        "-inkey",
        s(&key),
        "-md",
        md,
        "-out",
        s(out),
    ]
    .map(String::from)
    .to_vec()
}

/// The key types `openssl cms` can use here. OpenSSL 3.0 and 3.1 cannot sign or verify
/// CMS with Ed25519 ("no default digest" / "invalid digest"); 3.2 and later can, and then
/// Ed25519 is tested too.
fn kinds(w: &World) -> Vec<(&'static str, KeyKind)> {
    let mut v = vec![
        ("rsa", KeyKind::Rsa(2048)),
        ("p256", KeyKind::P256),
        ("p384", KeyKind::P384),
    ];
    let ed = w.path("ed");
    let p = w.path("probe.txt");
    std::fs::write(&p, b"probe").unwrap();
    let ok = Command::new("openssl")
        .args(sign_args(&p, &ed, "sha512", &w.path("probe.der")))
        .output()
        .is_ok_and(|o| o.status.success());
    if ok {
        v.push(("ed", KeyKind::Ed25519));
    } else {
        eprintln!("note: this openssl cannot use Ed25519 in CMS; Ed25519 interop not tested");
    }
    v
}

fn world() -> (World, Vec<(&'static str, KeyKind)>) {
    let w = World::new();
    let all = [
        ("rsa", KeyKind::Rsa(2048)),
        ("p256", KeyKind::P256),
        ("p384", KeyKind::P384),
        ("ed", KeyKind::Ed25519),
    ];
    for (n, k) in all {
        w.identity(n, k);
    }
    for (n, _) in all {
        for (m, _) in all {
            w.introduce(&w.path(n), &w.path(m));
        }
    }
    let k = kinds(&w);
    (w, k)
}

fn digest_for(kind: KeyKind) -> &'static str {
    match kind {
        KeyKind::P256 => "SHA256",
        _ => "SHA384",
    }
}

#[test]
fn openssl_reads_what_sealmq_writes() {
    let (w, kinds) = world();
    let payload = b"interop payload \x00\x01\x02 with binary bytes".to_vec();
    let ca = w.path("ca").join("identity.pem");
    for &(sender, skind) in &kinds {
        let put = w.protector(sender);
        for &(recip, rkind) in &kinds {
            if rkind == KeyKind::Ed25519 {
                continue;
            }
            let rdir = w.path(recip);
            for (sign, enc) in [
                (digest_for(skind), "NONE"),
                (digest_for(skind), "AES256"),
                ("NONE", "AES128"),
            ] {
                let one = [recip];
                let recips: &[&str] = if enc == "NONE" { &[] } else { &one };
                let pol = policy(sign, enc, recips);
                let cms = put.protect_cms(&pol, &payload).unwrap();
                let tag = format!("{sender}-{recip}-{sign}-{enc}");
                let m = w.path(&format!("{tag}.der"));
                std::fs::write(&m, &cms).unwrap();
                let mut signed = m.clone();
                if enc != "NONE" {
                    let dec = w.path(&format!("{tag}.dec"));
                    cms_decrypt(&m, &rdir, &dec);
                    if sign == "NONE" {
                        assert_eq!(std::fs::read(&dec).unwrap(), payload, "{tag}");
                        continue;
                    }
                    signed = dec;
                }
                let out = w.path(&format!("{tag}.out"));
                cms_verify(&signed, &ca, &out);
                assert_eq!(std::fs::read(&out).unwrap(), payload, "{tag}");
            }
        }
    }
}

#[test]
fn sealmq_reads_what_openssl_writes() {
    let (w, kinds) = world();
    let payload = b"made by openssl cms".to_vec();
    let p = w.path("payload.bin");
    std::fs::write(&p, &payload).unwrap();
    for &(sender, skind) in &kinds {
        let sdir = w.path(sender);
        let md = match skind {
            KeyKind::P256 => "sha256",
            KeyKind::Ed25519 => "sha512",
            _ => "sha384",
        };
        let signed = w.path(&format!("{sender}.signed.der"));
        cms_sign(&p, &sdir, md, &signed, &[]);
        for &(recip, rkind) in &kinds {
            let get = w.protector(recip);
            // Integrity
            let pol = policy(digest_for(skind), "NONE", &[]);
            let out = get
                .unprotect_cms(&pol, &std::fs::read(&signed).unwrap())
                .unwrap_or_else(|e| panic!("{sender}: {e}"));
            assert_eq!(out.payload, payload);
            assert_eq!(out.qop, Qop::Integrity);
            if rkind == KeyKind::Ed25519 {
                continue;
            }
            let rcert = w.path(recip).join("identity.pem");
            let keyopts: &[&str] = match rkind {
                KeyKind::Rsa(_) => &OAEP,
                _ => &["-keyopt", "ecdh_kdf_md:sha256"],
            };
            for (input, qop) in [(&p, Qop::Confidentiality), (&signed, Qop::Privacy)] {
                let enc = w.path(&format!("{sender}-{recip}-{qop}.der"));
                cms_encrypt("-aes-256-gcm", input, &enc, &rcert, keyopts);
                let pol = if qop == Qop::Privacy {
                    policy(digest_for(skind), "AES256", &[recip])
                } else {
                    policy("NONE", "AES256", &[recip])
                };
                let out = get
                    .unprotect_cms(&pol, &std::fs::read(&enc).unwrap())
                    .unwrap_or_else(|e| panic!("{sender}->{recip} {qop}: {e}"));
                assert_eq!(out.payload, payload, "{sender}->{recip} {qop}");
                assert_eq!(out.qop, qop);
            }
        }
    }
}

#[test]
fn openssl_default_cbc_and_pkcs1_key_transport_are_refused() {
    let (w, _) = world();
    let p = w.path("payload.bin");
    std::fs::write(&p, b"x").unwrap();
    let enc = w.path("cbc.der");
    cms_encrypt(
        "-aes-256-cbc",
        &p,
        &enc,
        &w.path("rsa").join("identity.pem"),
        &[],
    );
    let e = w
        .protector("rsa")
        .unprotect_cms(
            &policy("NONE", "AES256", &["rsa"]),
            &std::fs::read(&enc).unwrap(),
        )
        .unwrap_err();
    assert_eq!(e.check(), Some(sealmq_protect::Check::Algorithms), "{e}");
    let enc = w.path("v15.der");
    cms_encrypt(
        "-aes-256-gcm",
        &p,
        &enc,
        &w.path("rsa").join("identity.pem"),
        &[],
    );
    let e = w
        .protector("rsa")
        .unprotect_cms(
            &policy("NONE", "AES256", &["rsa"]),
            &std::fs::read(&enc).unwrap(),
        )
        .unwrap_err();
    assert!(e.to_string().contains("insecure"), "{e}");
}

#[test]
fn rsa_pss_signatures_both_ways() {
    let w = World::new();
    let rsa = w.identity("rsa", KeyKind::Rsa(2048));
    let opts = sealmq_protect::Options {
        rsa_pss: true,
        ..Default::default()
    };
    let put = sealmq_protect::Protector::with_options(
        sealmq_protect::Keystore::load(&rsa).unwrap(),
        opts,
    );
    let pol = policy("SHA256", "NONE", &[]);
    let cms = put.protect_cms(&pol, b"pss signed").unwrap();
    let m = w.path("pss.der");
    std::fs::write(&m, &cms).unwrap();
    let out = w.path("pss.out");
    let ca = w.path("ca").join("identity.pem");
    cms_verify(&m, &ca, &out);
    assert_eq!(std::fs::read(&out).unwrap(), b"pss signed");
    assert!(
        sealmq_protect::inspect(&cms, true)
            .unwrap()
            .signature
            .unwrap()
            .contains("PSS")
    );

    let p = w.path("p.bin");
    std::fs::write(&p, b"pss by openssl").unwrap();
    let m = w.path("o-pss.der");
    cms_sign(
        &p,
        &rsa,
        "sha256",
        &m,
        &[
            "-keyopt",
            "rsa_padding_mode:pss",
            "-keyopt",
            "rsa_pss_saltlen:digest",
        ],
    );
    let got = w
        .protector("rsa")
        .unprotect_cms(&pol, &std::fs::read(&m).unwrap())
        .unwrap();
    assert_eq!(got.payload, b"pss by openssl");
}

#[test]
fn rsa1024_behind_the_switch_interoperates() {
    use sealmq_protect::identity::IdentitySpec;
    let w = World::new();
    let mut spec = IdentitySpec::new(dn("old"), KeyKind::Rsa(1024), 30);
    spec.insecure_rsa1024 = true;
    let old = w.path("old");
    sealmq_protect::Keystore::init(&old, &spec, Some(&w.path("ca"))).unwrap();
    let opts = sealmq_protect::Options {
        insecure_rsa1024: true,
        ..Default::default()
    };
    let p = sealmq_protect::Protector::with_options(
        sealmq_protect::Keystore::load(&old).unwrap(),
        opts,
    );
    let cms = p
        .protect_cms(&policy("SHA256", "AES128", &["old"]), b"rsa-1024 privacy")
        .unwrap();
    let m = w.path("m.der");
    std::fs::write(&m, &cms).unwrap();
    let dec = w.path("m.dec");
    cms_decrypt(&m, &old, &dec);
    let out = w.path("m.out");
    let ca = w.path("ca").join("identity.pem");
    cms_verify(&dec, &ca, &out);
    assert_eq!(std::fs::read(&out).unwrap(), b"rsa-1024 privacy");

    let enc = w.path("o.der");
    let pl = w.path("p.bin");
    std::fs::write(&pl, b"from openssl to rsa-1024").unwrap();
    cms_encrypt("-aes-256-gcm", &pl, &enc, &old.join("identity.pem"), &OAEP);
    let got = p
        .unprotect_cms(
            &policy("NONE", "AES256", &["old"]),
            &std::fs::read(&enc).unwrap(),
        )
        .unwrap();
    assert_eq!(got.payload, b"from openssl to rsa-1024");
}

/// A world with a P-256 signer and an ML-KEM reader of each parameter set, all issued by the
/// P-256 CA.
fn kem_world() -> World {
    let w = World::new();
    let alice = w.identity("alice", KeyKind::P256);
    for level in [512, 768, 1024] {
        let name = format!("kem{level}");
        let r = w.identity(&name, KeyKind::MlKem(level));
        w.introduce(&alice, &r);
        w.introduce(&r, &alice);
    }
    w
}

#[test]
fn openssl_opens_ml_kem_envelopes_sealmq_writes() {
    use_openssl_pq();
    let w = kem_world();
    let put = w.protector("alice");
    let payload = b"for the quantum years \x00\x01".to_vec();
    let ca = w.path("ca").join("identity.pem");
    for level in [512, 768, 1024] {
        let name = format!("kem{level}");
        // The certificate sealmq made is one OpenSSL accepts.
        openssl(&[
            "verify",
            "-CAfile",
            s(&ca),
            s(&w.path(&name).join("identity.pem")),
        ]);
        for (sign, enc) in [("NONE", "AES256"), ("NONE", "AES128"), ("SHA256", "AES256")] {
            let pol = policy(sign, enc, &[&name]);
            let tag = format!("{name}-{sign}-{enc}");
            let m = w.path(&format!("{tag}.der"));
            std::fs::write(&m, put.protect_cms(&pol, &payload).unwrap()).unwrap();
            let dec = w.path(&format!("{tag}.dec"));
            cms_decrypt(&m, &w.path(&name), &dec);
            let plain = if sign == "NONE" {
                dec
            } else {
                let out = w.path(&format!("{tag}.out"));
                cms_verify(&dec, &ca, &out);
                out
            };
            assert_eq!(std::fs::read(&plain).unwrap(), payload, "{tag}");
        }
    }
}

#[test]
fn sealmq_opens_ml_kem_envelopes_openssl_writes() {
    use_openssl_pq();
    let w = kem_world();
    let payload = b"made by openssl cms for ML-KEM".to_vec();
    let p = w.path("payload.bin");
    std::fs::write(&p, &payload).unwrap();
    let signed = w.path("alice.signed.der");
    cms_sign(&p, &w.path("alice"), "sha256", &signed, &[]);
    for level in [512, 768, 1024] {
        let name = format!("kem{level}");
        let get = w.protector(&name);
        let rcert = w.path(&name).join("identity.pem");
        for (input, qop) in [(&p, Qop::Confidentiality), (&signed, Qop::Privacy)] {
            let enc = w.path(&format!("{name}-{qop}.der"));
            cms_encrypt("-aes-256-gcm", input, &enc, &rcert, &[]);
            let sign = if qop == Qop::Privacy {
                "SHA256"
            } else {
                "NONE"
            };
            let out = get
                .unprotect_cms(
                    &policy(sign, "AES256", &[&name]),
                    &std::fs::read(&enc).unwrap(),
                )
                .unwrap_or_else(|e| panic!("{name} {qop}: {e}"));
            assert_eq!(out.payload, payload, "{name} {qop}");
            assert_eq!(out.qop, qop);
        }
    }
}

/// An ML-KEM key OpenSSL generates (its default form: seed and expanded key) with a
/// certificate OpenSSL issues from sealmq's CA is imported into a keystore and reads what
/// OpenSSL encrypts to it, and what sealmq encrypts to it.
#[test]
fn an_ml_kem_identity_openssl_makes_is_a_sealmq_identity() {
    use_openssl_pq();
    let w = kem_world();
    let ca = w.path("ca");
    let (key, public, cert) = (w.path("o.key"), w.path("o.pub"), w.path("o.pem"));
    openssl(&["genpkey", "-algorithm", "ML-KEM-768", "-out", s(&key)]);
    openssl(&["pkey", "-in", s(&key), "-pubout", "-out", s(&public)]);
    openssl(&[
        "x509",
        "-new",
        "-subj",
        "/O=Example/CN=ossl",
        "-force_pubkey",
        s(&public),
        "-CA",
        s(&ca.join("identity.pem")),
        "-CAkey",
        s(&ca.join("identity.key")),
        "-days",
        "30",
        "-extfile",
        s(&write_ext(&w)),
        "-out",
        s(&cert),
    ]);
    let dir = w.path("ossl");
    let mut ks = sealmq_protect::Keystore::load_or_create(&dir).unwrap();
    ks.import(
        &std::fs::read(&cert).unwrap(),
        &std::fs::read(&key).unwrap(),
    )
    .unwrap();
    ks.trust(&std::fs::read(ca.join("identity.pem")).unwrap())
        .unwrap();
    ks.trust(&std::fs::read(w.path("alice").join("identity.pem")).unwrap())
        .unwrap();
    w.introduce(&w.path("alice"), &dir);
    let p = w.path("payload.bin");
    std::fs::write(&p, b"to an OpenSSL-made key").unwrap();
    let enc = w.path("to-ossl.der");
    cms_encrypt("-aes-256-gcm", &p, &enc, &cert, &[]);
    let get = w.protector("ossl");
    let pol = policy("NONE", "AES256", &["ossl"]);
    let out = get
        .unprotect_cms(&pol, &std::fs::read(&enc).unwrap())
        .unwrap();
    assert_eq!(out.payload, b"to an OpenSSL-made key");
    let mine = w
        .protector("alice")
        .protect_cms(&pol, b"from sealmq")
        .unwrap();
    assert_eq!(
        get.unprotect_cms(&pol, &mine).unwrap().payload,
        b"from sealmq"
    );
}

fn write_ext(w: &World) -> std::path::PathBuf {
    let p = w.path("kem.ext");
    std::fs::write(
        &p,
        "basicConstraints=critical,CA:FALSE\nkeyUsage=critical,keyEncipherment\n\
         subjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid\n",
    )
    .unwrap();
    p
}

/// An ML-DSA-65 authority issuing ML-DSA signers of each set and an ML-KEM-768 reader.
fn dsa_world() -> World {
    use sealmq_protect::Keystore;
    use sealmq_protect::identity::IdentitySpec;
    let w = World::new();
    let mut ca = IdentitySpec::new(dn("PQ CA"), KeyKind::MlDsa(65), 30);
    ca.authority = true;
    Keystore::init(&w.path("pqca"), &ca, None).unwrap();
    let mut names = vec!["bob".to_string()];
    let spec = IdentitySpec::new(dn("bob"), KeyKind::MlKem(768), 30);
    Keystore::init(&w.path("bob"), &spec, Some(&w.path("pqca"))).unwrap();
    for level in [44, 65, 87] {
        let name = format!("dsa{level}");
        let spec = IdentitySpec::new(dn(&name), KeyKind::MlDsa(level), 30);
        Keystore::init(&w.path(&name), &spec, Some(&w.path("pqca"))).unwrap();
        names.push(name);
    }
    for a in &names {
        for b in &names {
            w.introduce(&w.path(a), &w.path(b));
        }
    }
    w
}

#[test]
fn openssl_verifies_ml_dsa_signatures_sealmq_makes() {
    use_openssl_pq();
    let w = dsa_world();
    let ca = w.path("pqca").join("identity.pem");
    let payload = b"signed with ML-DSA by sealmq".to_vec();
    for level in [44, 65, 87] {
        let name = format!("dsa{level}");
        // sealmq's ML-DSA certificates (and its ML-KEM one, issued by ML-DSA) pass OpenSSL.
        openssl(&[
            "verify",
            "-CAfile",
            s(&ca),
            s(&w.path(&name).join("identity.pem")),
        ]);
        openssl(&[
            "verify",
            "-CAfile",
            s(&ca),
            s(&w.path("bob").join("identity.pem")),
        ]);
        let put = w.protector(&name);
        for enc in ["NONE", "AES256"] {
            let recips: &[&str] = if enc == "NONE" { &[] } else { &["bob"] };
            let tag = format!("{name}-{enc}");
            let m = w.path(&format!("{tag}.der"));
            std::fs::write(
                &m,
                put.protect_cms(&policy("SHA256", enc, recips), &payload)
                    .unwrap(),
            )
            .unwrap();
            let signed = if enc == "NONE" {
                m
            } else {
                let dec = w.path(&format!("{tag}.dec"));
                cms_decrypt(&m, &w.path("bob"), &dec);
                dec
            };
            let out = w.path(&format!("{tag}.out"));
            cms_verify(&signed, &ca, &out);
            assert_eq!(std::fs::read(&out).unwrap(), payload, "{tag}");
        }
    }
}

#[test]
fn sealmq_verifies_ml_dsa_signatures_openssl_makes() {
    use_openssl_pq();
    let w = dsa_world();
    let p = w.path("payload.bin");
    std::fs::write(&p, b"signed with ML-DSA by openssl").unwrap();
    let get = w.protector("bob");
    for level in [44, 65, 87] {
        let name = format!("dsa{level}");
        let signed = w.path(&format!("{name}.signed.der"));
        cms_sign(&p, &w.path(&name), "sha512", &signed, &[]);
        let out = get
            .unprotect_cms(
                &policy("SHA256", "NONE", &[]),
                &std::fs::read(&signed).unwrap(),
            )
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(out.payload, b"signed with ML-DSA by openssl");
        assert_eq!(out.signer, Some(dn(&name).to_string()));
        // Signed by OpenSSL, encrypted by OpenSSL to an ML-KEM reader: Privacy end to end.
        let enc = w.path(&format!("{name}.enc.der"));
        cms_encrypt(
            "-aes-256-gcm",
            &signed,
            &enc,
            &w.path("bob").join("identity.pem"),
            &[],
        );
        let out = get
            .unprotect_cms(
                &policy("SHA256", "AES256", &["bob"]),
                &std::fs::read(&enc).unwrap(),
            )
            .unwrap_or_else(|e| panic!("{name} privacy: {e}"));
        assert_eq!(out.qop, Qop::Privacy);
    }
}

/// An ML-DSA key and self-signed authority OpenSSL makes are a sealmq authority: the keystore
/// imports them and issues with them; OpenSSL's ML-DSA signer verifies in sealmq under it.
#[test]
fn an_ml_dsa_authority_openssl_makes_issues_for_sealmq() {
    use sealmq_protect::Keystore;
    use sealmq_protect::identity::IdentitySpec;
    use_openssl_pq();
    let w = World::new();
    let (key, cert, cnf) = (w.path("oca.key"), w.path("oca.pem"), w.path("req.cnf"));
    std::fs::write(&cnf, "[req]\ndistinguished_name=dn\n[dn]\n").unwrap();
    openssl(&[
        "req",
        "-config",
        s(&cnf),
        "-x509",
        "-newkey",
        "ML-DSA-65",
        "-nodes",
        "-keyout",
        s(&key),
        "-out",
        s(&cert),
        "-subj",
        "/O=Example/CN=OpenSSL PQ CA",
        "-days",
        "30",
        "-addext",
        "keyUsage=critical,keyCertSign,cRLSign,digitalSignature",
        "-addext",
        "basicConstraints=critical,CA:TRUE",
        "-addext",
        "subjectKeyIdentifier=hash",
    ]);
    let ca = w.path("oca");
    let mut ks = Keystore::load_or_create(&ca).unwrap();
    ks.import(
        &std::fs::read(&cert).unwrap(),
        &std::fs::read(&key).unwrap(),
    )
    .unwrap();
    ks.trust(&std::fs::read(&cert).unwrap()).unwrap();
    for (name, kind) in [("alice", KeyKind::MlDsa(65)), ("bob", KeyKind::MlKem(768))] {
        let spec = IdentitySpec::new(dn(name), kind, 30);
        Keystore::init(&w.path(name), &spec, Some(&ca)).unwrap();
        openssl(&[
            "verify",
            "-CAfile",
            s(&cert),
            s(&w.path(name).join("identity.pem")),
        ]);
    }
    w.introduce(&w.path("alice"), &w.path("bob"));
    w.introduce(&w.path("bob"), &w.path("alice"));
    let pol = policy("SHA256", "AES256", &["bob"]);
    let m = w
        .protector("alice")
        .protect_cms(&pol, b"all post-quantum")
        .unwrap();
    assert_eq!(
        w.protector("bob").unprotect_cms(&pol, &m).unwrap().payload,
        b"all post-quantum"
    );
}

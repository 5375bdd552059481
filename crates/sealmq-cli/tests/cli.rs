//! The `sealmq keystore` and `sealmq message` commands as a user runs them.

mod common;
use std::path::Path;
use std::process::{Command, Output};

/// The keystore and message commands need no queue manager: a home of their own each time.
fn sealmq(args: &[&str], stdin: Option<&[u8]>) -> Output {
    common::Home::new().run_bytes(args, stdin)
}

fn ok(args: &[&str]) -> String {
    common::Home::new().ok(args)
}

fn p(d: &Path, f: &str) -> String {
    d.join(f).to_string_lossy().into_owned()
}

#[test]
fn keystores_protect_unprotect_inspect() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    ok(&[
        "keystore",
        "init",
        &p(d, "ca"),
        "--dn",
        "CN=CLI CA,O=Example",
        "--authority",
    ]);
    let out = ok(&[
        "keystore",
        "init",
        &p(d, "alice"),
        "--dn",
        "CN=alice,O=Example",
        "--key",
        "p384",
        "--ca",
        &p(d, "ca"),
    ]);
    assert!(out.contains("identity: CN=alice,O=Example (P-384"), "{out}");
    ok(&[
        "keystore",
        "init",
        &p(d, "bob"),
        "--dn",
        "CN=bob,O=Example",
        "--key",
        "rsa2048",
        "--ca",
        &p(d, "ca"),
    ]);
    let out = ok(&[
        "keystore",
        "trust",
        &p(d, "alice"),
        &p(d, "bob/identity.pem"),
    ]);
    assert!(out.contains("recipient: CN=bob,O=Example"), "{out}");
    let out = ok(&["keystore", "list", &p(d, "alice")]);
    assert!(
        out.contains("trusted: CN=CLI CA,O=Example")
            && out.contains("recipient: CN=bob,O=Example (RSA-2048)"),
        "{out}"
    );

    std::fs::write(d.join("msg.txt"), b"hello bob").unwrap();
    ok(&[
        "message",
        "protect",
        "--keystore",
        &p(d, "alice"),
        "--sign-alg",
        "SHA384",
        "--enc-alg",
        "AES256",
        "--recip",
        "CN=bob,O=Example",
        "--in",
        &p(d, "msg.txt"),
        "--out",
        &p(d, "msg.env"),
    ]);
    let out = ok(&["message", "inspect", "--in", &p(d, "msg.env")]);
    assert!(
        out.contains("qop: PRIVACY")
            && out.contains("encryption: AES256-GCM")
            && out.contains("RSA-OAEP"),
        "{out}"
    );
    assert!(out.contains("payload 9 bytes"), "{out}");
    ok(&[
        "message",
        "unprotect",
        "--keystore",
        &p(d, "bob"),
        "--sign-alg",
        "SHA256",
        "--signer",
        "CN=alice,O=Example",
        "--in",
        &p(d, "msg.env"),
        "--out",
        &p(d, "msg.out"),
    ]);
    assert_eq!(std::fs::read(d.join("msg.out")).unwrap(), b"hello bob");

    // Wrong signer list: exit non-zero with the reason code and the failing check.
    let o = sealmq(
        &[
            "message",
            "unprotect",
            "--keystore",
            &p(d, "bob"),
            "--signer",
            "CN=carol,O=Example",
            "--in",
            &p(d, "msg.env"),
        ],
        None,
    );
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("2063 SECURITY_ERROR") && err.contains("signer-list"),
        "{err}"
    );

    // Alice is not a recipient.
    let o = sealmq(
        &[
            "message",
            "unprotect",
            "--keystore",
            &p(d, "alice"),
            "--in",
            &p(d, "msg.env"),
        ],
        None,
    );
    assert!(String::from_utf8_lossy(&o.stderr).contains("'recipient' failed"));

    // Standard input and output, Confidentiality with key reuse.
    let o = sealmq(
        &[
            "message",
            "protect",
            "--keystore",
            &p(d, "alice"),
            "--enc-alg",
            "AES128",
            "--recip",
            "CN=bob,O=Example",
            "--key-reuse",
            "32",
        ],
        Some(b"via pipes"),
    );
    assert!(o.status.success());
    let o = sealmq(
        &["message", "unprotect", "--keystore", &p(d, "bob")],
        Some(&o.stdout),
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(o.stdout, b"via pipes");
}

#[test]
fn bad_input_gets_a_clear_error() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    let o = sealmq(
        &[
            "keystore",
            "init",
            &p(d, "x"),
            "--dn",
            "CN=x",
            "--key",
            "rsa1024",
        ],
        None,
    );
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("insecure"));
    let o = sealmq(
        &[
            "message",
            "protect",
            "--keystore",
            &p(d, "none"),
            "--sign-alg",
            "MD5",
        ],
        Some(b"x"),
    );
    assert!(String::from_utf8_lossy(&o.stderr).contains("insecure"));
    ok(&["keystore", "init", &p(d, "k"), "--dn", "CN=k"]);
    let o = sealmq(
        &[
            "message",
            "protect",
            "--keystore",
            &p(d, "k"),
            "--enc-alg",
            "AES256",
        ],
        Some(b"x"),
    );
    assert!(String::from_utf8_lossy(&o.stderr).contains("needs at least one RECIP"));
    let o = sealmq(&["message", "inspect"], Some(b"garbage"));
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("2063"));
    let o = sealmq(
        &["message", "unprotect", "--keystore", &p(d, "k")],
        Some(b"plain"),
    );
    assert!(!o.status.success());
    let o = sealmq(
        &[
            "message",
            "unprotect",
            "--keystore",
            &p(d, "k"),
            "--tolerate",
        ],
        Some(b"plain"),
    );
    assert!(o.status.success());
    assert_eq!(o.stdout, b"plain");
}

#[test]
fn cms_only_exchanges_with_openssl() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    ok(&[
        "keystore",
        "init",
        &p(d, "bob"),
        "--dn",
        "CN=bob,O=Example",
        "--key",
        "p256",
    ]);
    std::fs::write(d.join("m.txt"), b"to openssl").unwrap();
    ok(&[
        "message",
        "protect",
        "--keystore",
        &p(d, "bob"),
        "--sign-alg",
        "SHA256",
        "--enc-alg",
        "AES256",
        "--recip",
        "CN=bob,O=Example",
        "--cms-only",
        "--in",
        &p(d, "m.txt"),
        "--out",
        &p(d, "m.der"),
    ]);
    let out = ok(&["message", "inspect", "--cms-only", "--in", &p(d, "m.der")]);
    assert!(
        out.contains("recipient: issuer 'CN=bob,O=Example'"),
        "{out}"
    );
    let o = Command::new("openssl")
        .args([
            "cms",
            "-decrypt",
            "-binary",
            "-inform",
            "DER",
            "-in",
            &p(d, "m.der"),
            "-recip",
            &p(d, "bob/identity.pem"),
        ])
        .args([
            "-inkey",
            &p(d, "bob/identity.key"),
            "-out",
            &p(d, "inner.der"),
        ])
        .output()
        .expect("openssl is needed for this test");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = Command::new("openssl")
        .args([
            "cms",
            "-verify",
            "-binary",
            "-inform",
            "DER",
            "-in",
            &p(d, "inner.der"),
            "-CAfile",
            &p(d, "bob/identity.pem"),
        ])
        .args(["-purpose", "any"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(o.stdout, b"to openssl");
    // And back: openssl's own envelope through sealmq.
    let o = Command::new("openssl")
        .args([
            "cms",
            "-encrypt",
            "-binary",
            "-aes-128-gcm",
            "-outform",
            "DER",
            "-in",
            &p(d, "m.txt"),
            "-out",
            &p(d, "o.der"),
        ])
        .args([
            "-recip",
            &p(d, "bob/identity.pem"),
            "-keyopt",
            "ecdh_kdf_md:sha256",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = sealmq(
        &[
            "message",
            "unprotect",
            "--keystore",
            &p(d, "bob"),
            "--cms-only",
            "--in",
            &p(d, "o.der"),
        ],
        None,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.stdout, b"to openssl");
}

#[test]
fn import_pem_and_pkcs12_identities_made_by_openssl() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    let run = |args: &[&str]| {
        let o = Command::new("openssl")
            .args(args)
            .output()
            .expect("openssl is needed for this test");
        assert!(
            o.status.success(),
            "openssl {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&o.stderr)
        );
    };
    run(&[
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-subj",
        "/CN=dave",
        "-days",
        "2",
        "-keyout",
        &p(d, "k.pem"),
        "-out",
        &p(d, "c.pem"),
    ]);
    run(&[
        "req",
        "-x509",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-nodes",
        "-subj",
        "/O=Example/CN=carol",
        "-days",
        "2",
        "-keyout",
        &p(d, "ec.key"),
        "-out",
        &p(d, "ec.pem"),
    ]);
    run(&[
        "pkcs12",
        "-export",
        "-in",
        &p(d, "ec.pem"),
        "-inkey",
        &p(d, "ec.key"),
        "-out",
        &p(d, "ec.p12"),
        "-passout",
        "pass:s3cret",
    ]);
    ok(&["keystore", "init", &p(d, "ks"), "--dn", "CN=placeholder"]);
    let o = sealmq(
        &[
            "keystore",
            "import",
            &p(d, "ks"),
            "--p12",
            &p(d, "ec.p12"),
            "--password",
            "wrong",
        ],
        None,
    );
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("wrong password"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let out = ok(&[
        "keystore",
        "import",
        &p(d, "ks"),
        "--p12",
        &p(d, "ec.p12"),
        "--password",
        "s3cret",
    ]);
    assert!(out.contains("identity: CN=carol,O=Example"), "{out}");
    // The imported identity signs, and a keystore trusting its certificate verifies it.
    ok(&["keystore", "trust", &p(d, "ks"), &p(d, "ec.pem")]);
    std::fs::write(d.join("m"), b"signed by carol").unwrap();
    ok(&[
        "message",
        "protect",
        "--keystore",
        &p(d, "ks"),
        "--sign-alg",
        "SHA256",
        "--in",
        &p(d, "m"),
        "--out",
        &p(d, "m.env"),
    ]);
    let o = sealmq(
        &[
            "message",
            "unprotect",
            "--keystore",
            &p(d, "ks"),
            "--in",
            &p(d, "m.env"),
        ],
        None,
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(o.stdout, b"signed by carol");

    // PEM import: the openssl key file is 0600 by default; a world-readable one is refused.
    let key = d.join("k.pem");
    std::fs::set_permissions(&key, std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
    let o = sealmq(
        &[
            "keystore",
            "import",
            &p(d, "ks"),
            "--cert",
            &p(d, "c.pem"),
            "--key",
            &p(d, "k.pem"),
        ],
        None,
    );
    assert!(String::from_utf8_lossy(&o.stderr).contains("chmod 600"));
    std::fs::set_permissions(&key, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    ok(&[
        "keystore",
        "import",
        &p(d, "ks"),
        "--cert",
        &p(d, "c.pem"),
        "--key",
        &p(d, "k.pem"),
    ]);
    let out = ok(&["keystore", "list", &p(d, "ks")]);
    assert!(out.contains("(RSA-2048"), "{out}");
    // A key that is not the certificate's.
    let o = sealmq(
        &[
            "keystore",
            "import",
            &p(d, "ks"),
            "--cert",
            &p(d, "ec.pem"),
            "--key",
            &p(d, "k.pem"),
        ],
        None,
    );
    assert!(String::from_utf8_lossy(&o.stderr).contains("does not belong"));
}

/// A reader that has gone (`sealmq status | head -1` once head has its line) ends a command
/// quietly with the shell's code for a closed pipe, never a panic.
#[test]
fn a_closed_output_pipe_ends_a_command_quietly() {
    let h = sealmq_testkit::cli::Home::new();
    h.ok(&["create", "QP1"]);
    h.ok(&["create", "QP2"]);
    h.ok(&["start", "QP1", "--background"]);
    for args in [
        &["status"][..],
        &["mqsc", "QP1"][..],
        &["dump", "QP1"][..],
        &["--help"][..],
    ] {
        let (r, w) = std::io::pipe().unwrap();
        drop(r);
        let o = h
            .cmd(args)
            .stdin(std::process::Stdio::null())
            .stdout(w)
            .stderr(std::process::Stdio::piped())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            !err.contains("panicked") && !err.contains("Broken pipe"),
            "sealmq {args:?}: {err}"
        );
        assert!(
            matches!(o.status.code(), Some(0) | Some(141)),
            "sealmq {args:?}: {:?} {err}",
            o.status
        );
    }
    h.ok(&["stop", "QP1"]);
}

//! IBM MQ AMS's interceptor in tests (issue 45): keystores made with keytool, the
//! keystore.conf IBM's Java interceptor reads, sealmq keystores holding the same identities,
//! and IBM's AMS-enabled MQI program (`IbmAms.java`).

use super::*;
use sealmq_testkit::cli::Home;
use std::path::{Path, PathBuf};

pub const PASS: &str = "passw0rd";
const PEOPLE: [&str; 3] = ["alice", "bob", "eve"];

pub fn dn(who: &str) -> String {
    format!("CN={who},O=Test,C=GB")
}

fn keytool(args: &[&str]) {
    let out = Command::new("keytool")
        .args(args)
        .output()
        .expect("keytool runs");
    assert!(
        out.status.success(),
        "keytool {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Makes `who`'s identity (from the PKCS#12 `pki` exported) the identity of sealmq keystore
/// `ks` (an application's, or a queue manager's).
pub fn import(h: &Home, ks: &Path, d: &Path, who: &str) {
    let p12 = d.join(format!("{who}.p12")).display().to_string();
    let out = h
        .cmd(&[
            "keystore",
            "import",
            &ks.display().to_string(),
            "--p12",
            &p12,
        ])
        .env("SEALMQ_P12_PASSWORD", PASS)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// For each person: a JKS keystore made with keytool (their key, the others' certificates),
/// the keystore.conf IBM's interceptor reads, and a sealmq keystore holding the same identity
/// (imported from PKCS#12) and trusting the others. Returns the directory.
pub fn pki(h: &Home) -> PathBuf {
    let d = h.dir.path().join("ams");
    std::fs::create_dir_all(&d).unwrap();
    let f = |name: &str| d.join(name).display().to_string();
    for who in PEOPLE {
        let jks = f(&format!("{who}.jks"));
        keytool(&[
            "-genkeypair",
            "-alias",
            who,
            "-keyalg",
            "RSA",
            "-keysize",
            "2048",
            "-sigalg",
            "SHA256withRSA",
            "-dname",
            &dn(who),
            "-validity",
            "30",
            "-keystore",
            &jks,
            "-storetype",
            "JKS",
            "-storepass",
            PASS,
            "-keypass",
            PASS,
        ]);
        keytool(&[
            "-exportcert",
            "-alias",
            who,
            "-keystore",
            &jks,
            "-storepass",
            PASS,
            "-rfc",
            "-file",
            &f(&format!("{who}.pem")),
        ]);
    }
    for who in PEOPLE {
        let jks = f(&format!("{who}.jks"));
        for other in PEOPLE.iter().filter(|o| **o != who) {
            keytool(&[
                "-importcert",
                "-noprompt",
                "-alias",
                other,
                "-file",
                &f(&format!("{other}.pem")),
                "-keystore",
                &jks,
                "-storepass",
                PASS,
            ]);
        }
        // IBM's interceptor appends .jks to the keystore it is given.
        std::fs::write(
            d.join(format!("{who}.conf")),
            format!(
                "jks.keystore = {}\njks.certificate = {who}\njks.encrypted = no\n\
                 jks.keystore_pass = {PASS}\njks.key_pass = {PASS}\n",
                f(who)
            ),
        )
        .unwrap();
        let p12 = f(&format!("{who}.p12"));
        keytool(&[
            "-importkeystore",
            "-srckeystore",
            &jks,
            "-srcstorepass",
            PASS,
            "-srcalias",
            who,
            "-destkeystore",
            &p12,
            "-deststoretype",
            "PKCS12",
            "-deststorepass",
            PASS,
            "-noprompt",
        ]);
        let ks = f(&format!("ks-{who}"));
        import(h, Path::new(&ks), &d, who);
        for other in PEOPLE.iter().filter(|o| **o != who) {
            h.trust(Path::new(&ks), &d.join(format!("{other}.pem")));
        }
    }
    d
}

/// IBM's AMS-enabled MQI program as `who` through APP.SVRCONN; its JSON lines.
pub fn ams(d: &Path, port: u16, who: &str, args: &[&str]) -> Vec<serde_json::Value> {
    ams_with(&[], d, port, "APP.SVRCONN", who, args)
}

/// As [`ams`], through `channel`, with system properties for the JVM (TLS stores, cipher).
pub fn ams_with(
    jvm: &[String],
    d: &Path,
    port: u16,
    channel: &str,
    who: &str,
    args: &[&str],
) -> Vec<serde_json::Value> {
    let mut cmd = Command::new("java");
    cmd.current_dir(env!("CARGO_TARGET_TMPDIR"));
    cmd.args(jvm);
    cmd.arg(format!(
        "-DMQS_KEYSTORE_CONF={}",
        d.join(format!("{who}.conf")).display()
    ));
    cmd.args([
        "-cp",
        &ibm_classpath(),
        "IbmAms",
        &port.to_string(),
        channel,
    ]);
    json_lines(cmd, "IBM AMS", args)
}

pub fn ks(d: &Path, who: &str) -> String {
    d.join(format!("ks-{who}")).display().to_string()
}

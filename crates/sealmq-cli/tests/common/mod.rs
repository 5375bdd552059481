//! What the black-box tests share, from `sealmq-testkit`: a SEALMQ_HOME of their own, the
//! `sealmq` binary run as a user runs it, queue managers on ephemeral loopback ports, `kill
//! -9`, PKI, polling with a deadline; and here, third-party clients' JSON output.

#![allow(dead_code, unused_imports)] // not every test binary uses every fixture

pub mod ams;
pub mod mqraw;

pub use sealmq_testkit::cli::*;
pub use sealmq_testkit::procs::*;
pub use sealmq_testkit::{connect_from, free_port, wait_every, wait_for};
use std::process::Command;

/// The accounting records (SPEC §8) a queue manager has written: every JSON line of every
/// file under `<QM dir>/accounting` (none yet: empty).
pub fn accounting_records(qm_dir: &std::path::Path) -> Vec<serde_json::Value> {
    std::fs::read_dir(qm_dir.join("accounting"))
        .into_iter()
        .flatten()
        .flatten()
        .flat_map(|f| {
            std::fs::read_to_string(f.path())
                .unwrap_or_default()
                .lines()
                .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Runs a third-party client program; the JSON lines it printed (it must succeed).
pub fn json_lines(mut cmd: Command, what: &str, args: &[&str]) -> Vec<serde_json::Value> {
    let out = cmd.args(args).output().expect("the client runs");
    assert!(
        out.status.success(),
        "{what} {args:?} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

/// Compiles the Java program of `sources` (paths under this crate) against the jars of
/// `target/LIB` (checked for `jar`, which `install` fetches) into `CARGO_TARGET_TMPDIR/CLASSES`;
/// its class path.
pub fn javac(lib: &str, jar: &str, install: &str, sources: &[&str], classes: &str) -> String {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let lib = root.join("target").join(lib);
    assert!(lib.join(jar).exists(), "{jar} is not installed: {install}");
    let classes = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(classes);
    std::fs::create_dir_all(&classes).unwrap();
    let cp = format!("{}/*", lib.display());
    let out = Command::new("javac")
        .args(["-d", &classes.display().to_string(), "-cp", &cp])
        .args(
            sources
                .iter()
                .map(|s| std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(s)),
        )
        .output()
        .expect("javac runs");
    assert!(
        out.status.success(),
        "javac: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    format!("{}:{cp}", classes.display())
}

/// Compiles tests/mqclient/ibm/src/main/java/IbmJms.java (JMS) and IbmMqi.java (IBM MQ
/// classes for Java: the MQI) against IBM's client once per test process; their class path.
pub fn ibm_classpath() -> String {
    static BUILT: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            javac(
                "ibm-mq-lib",
                "com.ibm.mq.allclient-9.4.4.0.jar",
                "mvn -f crates/sealmq-cli/tests/mqclient/ibm/pom.xml dependency:copy-dependencies \
                 -DoutputDirectory=$PWD/target/ibm-mq-lib (./test does)",
                &[
                    "tests/mqclient/ibm/src/main/java/IbmJms.java",
                    "tests/mqclient/ibm/src/main/java/IbmMqi.java",
                    "tests/mqclient/ibm/src/main/java/IbmAms.java",
                    "tests/common/java/JmsTypes.java",
                ],
                "ibm-classes",
            )
        })
        .clone()
}

/// Compiles tests/amqp/jms/JmsClient.java against Qpid JMS (libraries in target/jms-lib,
/// fetched by ./test from Maven Central) once per test process; its class path.
pub fn qpid_classpath() -> String {
    static BUILT: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            javac(
                "jms-lib",
                "qpid-jms-client-1.11.0.jar",
                "mvn -f crates/sealmq-cli/tests/amqp/jms/pom.xml dependency:copy-dependencies \
                 -DoutputDirectory=$PWD/target/jms-lib (./test does)",
                &[
                    "tests/amqp/jms/src/main/java/JmsClient.java",
                    "tests/common/java/JmsTypes.java",
                ],
                "jms-classes",
            )
        })
        .clone()
}

/// Runs the Qpid JMS application (tests/amqp/jms) against AMQP address `url`; its JSON lines.
pub fn qpid_jms(url: &str, args: &[&str]) -> Vec<serde_json::Value> {
    let mut cmd = Command::new("java");
    cmd.args(["-cp", &qpid_classpath(), "JmsClient", url]);
    json_lines(cmd, "Qpid JMS", args)
}

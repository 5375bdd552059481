//! Encryption at rest (SPEC §7) as an operator uses it: a queue manager created with `--dse`
//! keeps no payload in clear in any file, even after `kill -9`; it restarts with its master key
//! and refuses to start with another; the master key rotates while it runs.

use std::path::Path;
use std::process::Output;

mod common;
use common::Home;

const MARKER: &str = "TOPSECRET-PAYROLL-4711";

/// Every byte of every file under `dir`.
fn contains_anywhere(dir: &Path, needle: &[u8]) -> Option<std::path::PathBuf> {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            if let Some(f) = contains_anywhere(&p, needle) {
                return Some(f);
            }
        } else if std::fs::read(&p)
            .map(|b| b.windows(needle.len()).any(|w| w == needle))
            .unwrap_or(false)
        {
            return Some(p);
        }
    }
    None
}

fn with_env(h: &Home, var: &str, val: &str, args: &[&str]) -> Output {
    h.cmd(args).env(var, val).output().unwrap()
}

#[test]
fn encrypted_at_rest_across_kill_restart_wrong_key_and_rotation() {
    let h = Home::new();
    let key = h.dir.path().join("master.key");
    let out = h.ok(&["dse", "keygen", key.to_str().unwrap()]);
    assert!(out.contains("mode 600"), "{out}");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&key).unwrap().permissions().mode() & 0o777,
        0o600
    );
    h.ok(&["create", "QME", "--dse", &format!("file:{}", key.display())]);
    assert!(h.ok(&["dse", "status", "QME"]).contains("DSE(ON)"));
    h.ok(&["start", "QME", "--background"]);
    h.mqsc("QME", "DEFINE QLOCAL(PAY.Q)\n");
    h.ok(&[
        "put",
        "QME",
        "PAY.Q",
        "--message",
        MARKER,
        "--count",
        "20",
        "--persistent",
    ]);
    h.kill9("QME");
    let dir = h.qm_dir("QME");
    assert_eq!(
        contains_anywhere(&dir, MARKER.as_bytes()),
        None,
        "the payload is in clear in a file"
    );
    // A plain queue manager, for contrast: the same put leaves the payload readable.
    h.ok(&["create", "QMP"]);
    h.ok(&["start", "QMP", "--background"]);
    h.mqsc("QMP", "DEFINE QLOCAL(PAY.Q)\n");
    h.ok(&["put", "QMP", "PAY.Q", "--message", MARKER, "--persistent"]);
    h.ok(&["stop", "QMP"]);
    assert!(contains_anywhere(&h.qm_dir("QMP"), MARKER.as_bytes()).is_some());
    assert!(h.ok(&["dse", "status", "QMP"]).contains("DSE(OFF)"));

    // Restart with the key: every message is there; the metrics tell the keys' ages.
    h.ok(&["start", "QME", "--background", "--metrics", "127.0.0.1:0"]);
    assert_eq!(h.depth("QME", "PAY.Q"), 20);
    let scrape = std::process::Command::new("curl")
        .args(["-s", "--max-time", "10"])
        .arg(format!("http://{}/metrics", h.listener("QME", "metrics")))
        .output()
        .unwrap();
    let scrape = String::from_utf8_lossy(&scrape.stdout);
    for name in [
        "sealmq_dse_data_key_age_seconds",
        "sealmq_dse_master_key_age_seconds",
    ] {
        let age: f64 = scrape
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{name}{{qmgr=\"QME\"}} ")))
            .or_else(|| {
                scrape
                    .lines()
                    .find_map(|l| l.strip_prefix(&format!("{name} ")))
            })
            .unwrap_or_else(|| panic!("{name} missing:\n{scrape}"))
            .trim()
            .parse()
            .unwrap();
        assert!((0.0..600.0).contains(&age), "{name} {age}");
    }
    let status = h.ok(&["dse", "status", "QME"]);
    assert!(
        status.contains("MASTERAGE(") && status.contains("KEYAGE("),
        "{status}"
    );

    // Rotation while it runs: the data keys are rewrapped under a key from the environment.
    let new_hex = "5eed".repeat(16);
    let o = with_env(
        &h,
        "SEALMQ_TEST_MASTER",
        &new_hex,
        &["dse", "rotate", "QME", "--to", "env:SEALMQ_TEST_MASTER"],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout).contains("rewrapped"));
    let got = h.ok(&["get", "QME", "PAY.Q", "--count", "5"]);
    assert_eq!(got.matches(MARKER).count(), 5, "{got}");
    h.ok(&["stop", "QME"]);

    // The start needs the new master key now...
    let o = h.run(&["start", "QME", "--background"], None);
    assert!(!o.status.success(), "started without its master key");
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("SEALMQ_TEST_MASTER"), "{e}");
    // ...and a wrong one is refused with a clear reason.
    let o = with_env(
        &h,
        "SEALMQ_TEST_MASTER",
        &"ab".repeat(32),
        &["start", "QME", "--background"],
    );
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("does not open"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let o = with_env(
        &h,
        "SEALMQ_TEST_MASTER",
        &new_hex,
        &["start", "QME", "--background"],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(h.depth("QME", "PAY.Q"), 15);
    h.ok(&["stop", "QME"]);
    // The 15 wait in PAY.Q's queue files: sealed there too.
    assert!(
        common::queue_data_files(&dir, "PAY.Q") > 0,
        "PAY.Q's messages are in queue data files"
    );
    assert_eq!(contains_anywhere(&dir, MARKER.as_bytes()), None);
    assert!(
        h.fails(&["create", "QMX", "--dse", "vault:x"])
            .contains("file:PATH")
    );
}

#[test]
fn programs_the_queue_manager_starts_do_not_inherit_the_master_key() {
    let h = Home::new();
    let hex = "a1b2".repeat(16);
    let o = with_env(
        &h,
        "SMQ_SVC_MASTER",
        &hex,
        &["create", "QMS", "--dse", "env:SMQ_SVC_MASTER"],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = h
        .cmd(&["start", "QMS", "--background"])
        .env("SMQ_SVC_MASTER", &hex)
        .env("SEALMQ_PASSWORD", "hunter2")
        .env("SMQ_HARMLESS", "visible")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = h.qm_dir("QMS").join("env.out");
    h.mqsc(
        "QMS",
        &format!(
            "DEFINE SERVICE(ENV) SERVTYPE(COMMAND) STARTCMD('/usr/bin/env') STDOUT('{}')\n\
             START SERVICE(ENV)\n",
            out.display()
        ),
    );
    common::wait_for(
        std::time::Duration::from_secs(60),
        "the service's output",
        || std::fs::read_to_string(&out).is_ok_and(|s| s.contains("SMQ_HARMLESS=visible")),
    );
    let env = std::fs::read_to_string(&out).unwrap();
    assert!(
        !env.contains(&hex) && !env.contains("SMQ_SVC_MASTER"),
        "{env}"
    );
    assert!(!env.contains("hunter2"), "{env}");
    // Nor can a program of the same user read them from the queue manager's /proc entry: the
    // process is not dumpable (its environ unreadable to another process of its user) and the
    // values are overwritten in the block the kernel shows (what root still reads).
    let pid = h.pid("QMS");
    let (got, err) = (
        h.qm_dir("QMS").join("environ.out"),
        h.qm_dir("QMS").join("environ.err"),
    );
    h.mqsc(
        "QMS",
        &format!(
            "DEFINE SERVICE(PEEK) SERVTYPE(COMMAND) STARTCMD('/bin/cat') STARTARG('/proc/{pid}/environ') \
             STDOUT('{}') STDERR('{}')\nSTART SERVICE(PEEK)\n",
            got.display(),
            err.display()
        ),
    );
    let read = |p: &std::path::Path| {
        String::from_utf8_lossy(&std::fs::read(p).unwrap_or_default()).into_owned()
    };
    common::wait_for(
        std::time::Duration::from_secs(60),
        "the service to read /proc/PID/environ or be refused",
        || read(&got).contains("SMQ_HARMLESS=visible") || read(&err).contains("ermission denied"),
    );
    let seen = read(&got);
    assert!(!seen.contains(&hex) && !seen.contains("hunter2"), "{seen}");
    h.ok(&["stop", "QMS"]);
}

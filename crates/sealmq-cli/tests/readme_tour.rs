//! The README's five-minute tour, run as a newcomer would paste it into a shell: every command
//! block of the section, in order, with `sealmq` on the PATH, in an empty directory, on
//! ephemeral ports instead of the well-known ones. If the README drifts from the product, this
//! fails.

mod common;

use common::free_port;
use std::path::Path;
use std::process::Command;

/// The shell code blocks between two headings of the README.
fn blocks(readme: &str, from: &str, to: &str) -> Vec<String> {
    let start = readme.find(from).expect("the tour's heading");
    let end = readme[start..].find(to).map_or(readme.len(), |i| start + i);
    readme[start..end]
        .split("```sh\n")
        .skip(1)
        .map(|b| b.split("```").next().unwrap_or_default().to_string())
        .collect()
}

#[test]
fn the_readme_tour_runs_as_written() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let tour = blocks(&readme, "## A five-minute tour", "## What sealmq provides");
    assert!(tour.len() >= 5, "the tour has its five steps: {tour:?}");
    let mut script = String::from("set -euo pipefail\n");
    for b in &tour {
        script.push_str(b);
    }
    for port in [
        "1414", "1415", "5672", "5682", "9157", "9101", "9102", "9103",
    ] {
        script = script.replace(port, &free_port().to_string());
    }
    let dir = tempfile::tempdir().unwrap();
    let bin = Path::new(env!("CARGO_BIN_EXE_sealmq")).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let o = Command::new("bash")
        .arg("-c")
        .arg(&script)
        .current_dir(dir.path())
        .env("PATH", path)
        .env("SEALMQ_HOME", dir.path().join("home"))
        .env_remove("SEALMQ_KEYSTORE")
        .output()
        .unwrap();
    let (out, err) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    // Whatever happened, the queue managers go.
    for qm in ["QM1", "QM2"] {
        let _ = Command::new(env!("CARGO_BIN_EXE_sealmq"))
            .args(["stop", qm, "--immediate"])
            .env("SEALMQ_HOME", dir.path().join("home"))
            .output();
    }
    for i in ["a", "b", "c"] {
        let _ = Command::new(env!("CARGO_BIN_EXE_sealmq"))
            .args(["stop", "QMHA", "--immediate"])
            .env("SEALMQ_HOME", dir.path().join(format!("ha-{i}")))
            .output();
    }
    assert!(o.status.success(), "the tour failed:\n{out}\n{err}");
    for seen in [
        "got 1000 ok 1000",
        "order 1",
        "hello",
        "hi",
        "RUNNING",
        "sealmq_",
        "ROLE(active)",
        "kept by the group",
    ] {
        assert!(
            out.contains(seen),
            "the tour did not show {seen:?}:\n{out}\n{err}"
        );
    }
}

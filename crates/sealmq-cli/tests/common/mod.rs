//! What the black-box tests share, from `sealmq-testkit`: a SEALMQ_HOME of their own, the
//! `sealmq` binary run as a user runs it, queue managers on ephemeral loopback ports, `kill
//! -9`, PKI, polling with a deadline; and here, third-party clients' JSON output.

#![allow(dead_code, unused_imports)] // not every test binary uses every fixture

pub use sealmq_testkit::cli::*;
pub use sealmq_testkit::procs::*;
pub use sealmq_testkit::{connect_from, free_port, wait_every, wait_for};
use std::process::Command;

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

//! An application links the client, wire, MQI-data and protection crates, never the queue
//! manager: nothing of the engine, storage, server or MQSC layers may reach the client's
//! dependency graph (ARCHITECTURE.md).

use std::process::Command;

#[test]
fn the_client_does_not_link_the_queue_manager() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "tree",
            "--offline",
            "-p",
            "sealmq-client",
            "-e",
            "normal",
            "--prefix",
            "none",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo tree runs");
    assert!(
        out.status.success(),
        "cargo tree failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let tree = String::from_utf8_lossy(&out.stdout);
    let mut ours: Vec<&str> = tree
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| n.starts_with("sealmq"))
        .collect();
    ours.sort();
    ours.dedup();
    assert_eq!(
        ours,
        [
            "sealmq-client",
            "sealmq-mqi",
            "sealmq-protect",
            "sealmq-types",
            "sealmq-wire"
        ],
        "the client's dependency graph:\n{tree}"
    );
}

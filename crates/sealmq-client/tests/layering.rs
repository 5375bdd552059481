//! An application links the client, wire, MQI-data and protection crates, never the queue
//! manager: nothing of the engine, storage, server or MQSC layers may reach the client's
//! dependency graph (ARCHITECTURE.md). The graph is followed through the workspace's own
//! manifests (their `[dependencies]`), so the test needs neither cargo nor the network.

use std::collections::BTreeSet;
use std::path::Path;

/// The workspace crates `name` depends on (normal dependencies only).
fn deps(crates: &Path, name: &str) -> Vec<String> {
    let manifest = crates.join(name).join("Cargo.toml");
    let text = std::fs::read_to_string(&manifest)
        .unwrap_or_else(|e| panic!("{}: {e}", manifest.display()));
    let mut in_deps = false;
    let mut out = Vec::new();
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            in_deps = line == "[dependencies]";
        } else if in_deps && line.starts_with("sealmq") {
            let dep: String = line
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
                .collect();
            out.push(dep);
        }
    }
    out
}

#[test]
fn the_client_does_not_link_the_queue_manager() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("crates directory");
    let mut seen = BTreeSet::new();
    let mut todo = vec!["sealmq-client".to_string()];
    while let Some(c) = todo.pop() {
        if seen.insert(c.clone()) {
            todo.extend(deps(crates, &c));
        }
    }
    assert_eq!(
        seen.into_iter().collect::<Vec<_>>(),
        [
            "sealmq-client",
            "sealmq-mqi",
            "sealmq-protect",
            "sealmq-types",
            "sealmq-wire"
        ],
        "the client's dependency graph"
    );
    // The test can fail: the queue manager's own crates do reach the engine.
    assert!(deps(crates, "sealmq-server").contains(&"sealmq-engine".to_string()));
    // The server reaches storage through the engine (`sealmq_engine::host`), not beside it.
    assert!(
        !deps(crates, "sealmq-server").contains(&"sealmq-storage".to_string()),
        "sealmq-server depends on sealmq-storage directly: go through sealmq_engine::host"
    );
}

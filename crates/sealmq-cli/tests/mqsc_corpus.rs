//! Real MQSC scripts from IBM's public repositories (tests/mqsc-corpus, sources in SOURCES.md),
//! each replayed on a new queue manager through `sealmq mqsc --json`: every command succeeds or
//! is refused naming a feature docs/administration.md lists as not provided, and at least 90% of all the
//! commands succeed (the refusals are publish/subscribe, clusters and AMQP over TLS
//! channels). The only change made to a script is its listener port (1414 becomes a free
//! loopback port, so that the test does not depend on what else runs here).

mod common;

use common::{Home, free_port};
use std::path::Path;

fn corpus() -> Vec<std::path::PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mqsc-corpus");
    let mut v: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "mqsc"))
        .collect();
    v.sort();
    v
}

#[test]
fn real_mqsc_scripts_run_unchanged() {
    let files = corpus();
    assert!(files.len() >= 15, "{} scripts in the corpus", files.len());
    let (mut total, mut ok) = (0usize, 0usize);
    let mut wrong = Vec::new();
    let mut report = String::new();
    for (i, f) in files.iter().enumerate() {
        let h = Home::new();
        let qm = format!("CORPUS{i}");
        h.ok(&["create", &qm]);
        h.ok(&["start", &qm, "--background"]);
        let port = free_port().to_string();
        let script = std::fs::read_to_string(f)
            .unwrap()
            .replace("PORT(1414)", &format!("PORT({port})"))
            .replace("port(1414)", &format!("port({port})"));
        let o = h.run(&["mqsc", &qm, "--json"], Some(&script));
        let out = String::from_utf8_lossy(&o.stdout);
        let responses: serde_json::Value = serde_json::from_str(&out)
            .unwrap_or_else(|e| panic!("{}: not JSON ({e}): {out}", f.display()));
        let (mut file_ok, mut file_total) = (0, 0);
        for r in responses.as_array().unwrap() {
            file_total += 1;
            if r["ok"] == true {
                file_ok += 1;
            } else {
                let msg = r["message"].as_str().unwrap_or_default();
                if !msg.contains("not provided") {
                    wrong.push(format!(
                        "{}: {} -> {msg}",
                        f.file_name().unwrap().to_string_lossy(),
                        r["command"]
                    ));
                }
            }
        }
        report.push_str(&format!(
            "{:<55} {file_ok:>3}/{file_total:<3}\n",
            f.file_name().unwrap().to_string_lossy()
        ));
        total += file_total;
        ok += file_ok;
        h.ok(&["stop", &qm]);
    }
    println!("{report}all: {ok}/{total} commands succeeded");
    assert!(
        wrong.is_empty(),
        "refused without naming a feature that is not provided:\n{}",
        wrong.join("\n")
    );
    assert!(
        ok * 100 >= total * 90,
        "only {ok} of {total} commands succeeded:\n{report}"
    );
}

//! Every file the documents name exists: links in README.md, ARCHITECTURE.md, SECURITY.md,
//! CONTRIBUTING.md and docs/*.md, and code paths written in backquotes (`crates/.../x.rs`
//! exactly; a shorter `server/acct.rs` for crates/sealmq-server/src/acct.rs; a shorter
//! `qm/security.rs` or `policy.rs` as the end of some file's path in the repository). Paths outside the repository
//! (`../shared/...`) and files sealmq writes at run time are not checked.

use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    sealmq_testkit::repo_root()
}

/// Every file under `dir` (target/ and hidden directories left out), relative to the root.
fn files(root: &Path, dir: &Path, out: &mut Vec<String>) {
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') && name != ".ci" || name == "target" || name == "node_modules" {
            continue;
        }
        if p.is_dir() {
            files(root, &p, out);
        } else if let Ok(rel) = p.strip_prefix(root) {
            out.push(rel.to_string_lossy().into_owned());
        }
    }
}

fn documents(root: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = [
        "README.md",
        "ARCHITECTURE.md",
        "SECURITY.md",
        "CONTRIBUTING.md",
    ]
    .iter()
    .map(|f| root.join(f))
    .collect();
    for e in std::fs::read_dir(root.join("docs")).unwrap().flatten() {
        if e.path().extension().is_some_and(|x| x == "md") {
            v.push(e.path());
        }
    }
    v
}

/// Link targets `](target)` that are not web addresses or anchors.
fn links(text: &str) -> Vec<String> {
    let mut v = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find("](") {
        rest = &rest[i + 2..];
        let Some(end) = rest.find(')') else { break };
        let t = rest[..end].split('#').next().unwrap_or_default();
        if !t.is_empty() && !t.contains("://") && !t.starts_with("mailto:") {
            v.push(t.to_string());
        }
        rest = &rest[end..];
    }
    v
}

/// Files sealmq writes at run time, named in the documents (not in the repository).
const RUNTIME: &[&str] = &["keystore.toml", "ha.toml"];

const CODE_EXT: &[&str] = &["rs", "md", "toml", "py", "java", "js", "sh", "xml"];

/// Backquoted words that are paths of files in the repository.
fn code_paths(text: &str) -> Vec<String> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .filter(|w| {
            !w.is_empty()
                && w.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "._/-".contains(c))
                && !w.starts_with('/')
                && w.rsplit_once('.')
                    .is_some_and(|(stem, ext)| !stem.is_empty() && CODE_EXT.contains(&ext))
        })
        .map(str::to_string)
        .collect()
}

#[test]
fn every_path_the_documents_name_exists() {
    let root = repo();
    let mut all = Vec::new();
    files(&root, &root, &mut all);
    let mut missing = Vec::new();
    for doc in documents(&root) {
        let text = std::fs::read_to_string(&doc).unwrap();
        let dir = doc.parent().unwrap();
        let name = doc.strip_prefix(&root).unwrap().display().to_string();
        for l in links(&text) {
            if !dir.join(&l).exists() {
                missing.push(format!("{name}: link {l}"));
            }
        }
        for p in code_paths(&text) {
            if p.starts_with("../") || RUNTIME.contains(&p.as_str()) {
                continue;
            }
            let found = if p.starts_with("crates/") || p.starts_with("docs/") {
                root.join(&p).exists()
            } else {
                // `server/listeners.rs`: crates/sealmq-server/src/listeners.rs.
                let short = p.split_once('/').is_some_and(|(c, rest)| {
                    root.join(format!("crates/sealmq-{c}/src/{rest}")).exists()
                });
                short || all.iter().any(|f| f == &p || f.ends_with(&format!("/{p}")))
            };
            if !found {
                missing.push(format!("{name}: `{p}`"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "named but missing:\n{}",
        missing.join("\n")
    );
}

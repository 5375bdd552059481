//! One reason-code enum end to end: outside `sealmq_types::ReasonCode`, library and command
//! code names a reason, never writes its number. Looks for what a bare number looks like in
//! this code base — `reason == 2033`, `reason: 2035`, `Some(2085)`, `"2058 Q_MGR_NAME_ERROR:` —
//! in every crate's `src/`, leaving out unit tests (a file's `#[cfg(test)]` module and
//! `tests.rs`), where a wire format's fields are numbers by definition.

use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    sealmq_testkit::repo_root()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// A four-digit MQ reason number (2001 to 2599) starting at byte `i` of `s`, not part of a
/// longer number.
fn reason_at(s: &[u8], i: usize) -> bool {
    s.len() >= i + 4
        && s[i] == b'2'
        && s[i + 1] <= b'5'
        && s[i + 1..i + 4].iter().all(u8::is_ascii_digit)
        && !s.get(i + 4).is_some_and(u8::is_ascii_digit)
        && !(i > 0 && s[i - 1].is_ascii_digit())
}

/// What on `line` writes a reason as a bare number, if anything.
fn bare_reason(line: &str) -> Option<&'static str> {
    let code = line.split("//").next().unwrap_or("");
    let b = code.as_bytes();
    for (prefix, what) in [
        ("reason == ", "a comparison"),
        ("reason != ", "a comparison"),
        ("reason: ", "a field"),
        ("Some(", "an optional reason"),
        ("Err(", "an error"),
        ("\"", "a message"),
    ] {
        let mut from = 0;
        while let Some(k) = code[from..].find(prefix) {
            let i = from + k + prefix.len();
            if reason_at(b, i) {
                let after = &code[i + 4..];
                let message = after.starts_with(' ')
                    && after[1..].starts_with(|c: char| c.is_ascii_uppercase())
                    && after[1..].split(':').next().is_some_and(|w| {
                        w.chars().all(|c| c.is_ascii_uppercase() || c == '_') && w.len() >= 4
                    });
                if prefix != "\"" || message {
                    return Some(what);
                }
            }
            from = i;
        }
    }
    None
}

#[test]
fn no_reason_number_outside_the_enum() {
    let mut files = Vec::new();
    for e in std::fs::read_dir(repo().join("crates"))
        .expect("crates/")
        .flatten()
    {
        rust_files(&e.path().join("src"), &mut files);
    }
    files.sort();
    assert!(files.len() > 100, "the crates' sources were not found");
    let mut found = Vec::new();
    for f in &files {
        let rel = f
            .strip_prefix(repo())
            .unwrap_or(f)
            .to_string_lossy()
            .into_owned();
        if rel.ends_with("sealmq-types/src/lib.rs") || rel.ends_with("/tests.rs") {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(f) else {
            continue;
        };
        for (n, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("#[cfg(test)]") {
                break;
            }
            if let Some(what) = bare_reason(line) {
                found.push(format!("{rel}:{}: {what}: {}", n + 1, line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "name the reason (sealmq_types::ReasonCode::X, .code() where a number must go):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_check_sees_each_form() {
    assert!(bare_reason("        Err(e) if e.reason == 2033 => break,").is_some());
    assert!(bare_reason("            reason: 2063,").is_some());
    assert!(bare_reason("    matches!(r, Some(2035) | Some(2537))").is_some());
    assert!(bare_reason(r#"Err(format!("2058 Q_MGR_NAME_ERROR: no queue manager"))"#).is_some());
    assert!(
        bare_reason("        Err(e) if e.reason == ReasonCode::NoMsgAvailable => break,").is_none()
    );
    assert!(bare_reason("    let port = 2048; // reason: 2033 in a comment").is_none());
    assert!(bare_reason(r#"    "2024 was a year""#).is_none());
    assert!(bare_reason("    buffer: Some(20480),").is_none());
}

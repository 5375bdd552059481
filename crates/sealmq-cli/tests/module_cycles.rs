//! No module cycle in any crate of the workspace.
//!
//! The rule, read as a maintainer reads a folder: among the modules that share a parent (the
//! files of one folder, or the top-level modules of a crate), the "uses" arrows form no cycle.
//! A module uses a sibling when any file inside it names a path into the sibling (`crate::a::b`,
//! `super::b`, `self::b`, in `use` items, in code and in macro arguments alike). A module
//! using its own ancestors or descendants is not counted: a folder's `mod.rs` holds what its
//! children share, and its children are what it is made of.
//!
//! The source is read as tokens (`proc-macro2`), not compiled, so the test is a few
//! milliseconds and needs nothing but the files.

use proc_macro2::{Delimiter, TokenStream, TokenTree};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::str::FromStr;

fn repo() -> PathBuf {
    sealmq_testkit::repo_root()
}

type Module = Vec<String>;

/// Every `.rs` file under a crate's `src/`, with the module it is.
fn modules(src: &Path) -> Vec<(Module, PathBuf)> {
    fn walk(dir: &Path, at: &Module, out: &mut Vec<(Module, PathBuf)>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .collect();
        entries.sort_by_key(|e| e.path());
        for e in entries {
            let p = e.path();
            let name = e.file_name().to_string_lossy().into_owned();
            if p.is_dir() {
                let mut m = at.clone();
                m.push(name);
                walk(&p, &m, out);
            } else if let Some(stem) = name.strip_suffix(".rs") {
                let mut m = at.clone();
                if !matches!(stem, "mod" | "lib" | "main") || !at.is_empty() && stem != "mod" {
                    m.push(stem.to_string());
                }
                out.push((m, p));
            }
        }
    }
    let mut out = Vec::new();
    walk(src, &Vec::new(), &mut out);
    // Binaries under src/bin are crates of their own.
    out.retain(|(m, _)| m.first().map(String::as_str) != Some("bin"));
    out
}

/// The paths a token stream names, each as written (`crate`, `super`, `self` first).
fn paths(ts: TokenStream, module: &Module, out: &mut Vec<(Module, Vec<String>)>) {
    let toks: Vec<TokenTree> = ts.into_iter().collect();
    let mut i = 0;
    while i < toks.len() {
        match &toks[i] {
            TokenTree::Ident(id) if id == "mod" => {
                // An inline module: what is inside is relative to it.
                if let (Some(TokenTree::Ident(name)), Some(TokenTree::Group(g))) =
                    (toks.get(i + 1), toks.get(i + 2))
                    && g.delimiter() == Delimiter::Brace
                {
                    let mut inner = module.clone();
                    inner.push(name.to_string());
                    paths(g.stream(), &inner, out);
                    i += 3;
                    continue;
                }
            }
            TokenTree::Ident(id) if id == "crate" || id == "super" || id == "self" => {
                let preceded_by_sep = i >= 2 && is_sep(&toks, i - 2);
                if !preceded_by_sep {
                    let (found, next) = path_at(&toks, i, Vec::new());
                    for p in found {
                        out.push((module.clone(), p));
                    }
                    i = next.max(i + 1);
                    continue;
                }
            }
            TokenTree::Group(g) => paths(g.stream(), module, out),
            _ => {}
        }
        i += 1;
    }
}

fn is_sep(toks: &[TokenTree], i: usize) -> bool {
    matches!((toks.get(i), toks.get(i + 1)),
        (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b))) if a.as_char() == ':' && b.as_char() == ':')
}

/// The path (or, with a `{...}` group, the paths) starting at `toks[i]`; the index after it.
fn path_at(toks: &[TokenTree], mut i: usize, mut prefix: Vec<String>) -> (Vec<Vec<String>>, usize) {
    let mut found = Vec::new();
    loop {
        match toks.get(i) {
            Some(TokenTree::Ident(id)) => {
                prefix.push(id.to_string());
                i += 1;
            }
            Some(TokenTree::Group(g))
                if g.delimiter() == Delimiter::Brace && !prefix.is_empty() =>
            {
                let inner: Vec<TokenTree> = g.stream().into_iter().collect();
                for part in inner.split(|t| matches!(t, TokenTree::Punct(p) if p.as_char() == ','))
                {
                    let (sub, _) = path_at(part, 0, prefix.clone());
                    found.extend(sub);
                }
                return (found, i + 1);
            }
            _ => break,
        }
        if is_sep(toks, i) {
            i += 2;
        } else {
            break;
        }
    }
    if !prefix.is_empty() {
        found.push(prefix);
    }
    (found, i)
}

/// The module a written path lands in: the longest known module it starts with.
fn resolve(from: &Module, path: &[String], known: &BTreeSet<Module>) -> Option<Module> {
    let mut at: Module = match path.first()?.as_str() {
        "crate" => Vec::new(),
        "self" => from.clone(),
        "super" => {
            let mut m = from.clone();
            m.pop()?;
            m
        }
        _ => return None,
    };
    let mut rest = &path[1..];
    while let Some(s) = rest.first() {
        if s == "super" {
            at.pop()?;
        } else if s == "self" {
        } else {
            break;
        }
        rest = &rest[1..];
    }
    for s in rest {
        let mut next = at.clone();
        next.push(s.clone());
        if known.contains(&next) {
            at = next;
        } else {
            break;
        }
    }
    Some(at)
}

/// The cycles among siblings: parent → the strongly connected sets of its children.
fn cycles(edges: &BTreeSet<(Module, String, String)>) -> Vec<String> {
    let mut by_parent: BTreeMap<&Module, BTreeMap<&str, BTreeSet<&str>>> = BTreeMap::new();
    for (p, a, b) in edges {
        by_parent
            .entry(p)
            .or_default()
            .entry(a)
            .or_default()
            .insert(b);
    }
    let mut out = Vec::new();
    for (parent, graph) in by_parent {
        let nodes: BTreeSet<&str> = graph
            .iter()
            .flat_map(|(a, bs)| std::iter::once(*a).chain(bs.iter().copied()))
            .collect();
        let reach = |from: &str| {
            let mut seen = BTreeSet::new();
            let mut stack = vec![from];
            while let Some(n) = stack.pop() {
                for &m in graph.get(n).into_iter().flatten() {
                    if seen.insert(m) {
                        stack.push(m);
                    }
                }
            }
            seen
        };
        let reaches: BTreeMap<&str, BTreeSet<&str>> =
            nodes.iter().map(|n| (*n, reach(n))).collect();
        let mut done = BTreeSet::new();
        for n in &nodes {
            if done.contains(n) || !reaches[n].contains(n) {
                continue;
            }
            let scc: Vec<&str> = nodes
                .iter()
                .copied()
                .filter(|m| reaches[n].contains(m) && reaches[m].contains(n))
                .collect();
            done.extend(scc.iter().copied());
            let mut arrows = Vec::new();
            for a in &scc {
                for b in graph.get(a).into_iter().flatten() {
                    if scc.contains(b) {
                        arrows.push(format!("{a} → {b}"));
                    }
                }
            }
            let at = if parent.is_empty() {
                "crate".to_string()
            } else {
                parent.join("::")
            };
            out.push(format!("in {at}: {}", arrows.join(", ")));
        }
    }
    out
}

/// The sibling arrows of one crate: (parent, from child, to child).
fn sibling_edges(src: &Path) -> BTreeSet<(Module, String, String)> {
    let files = modules(src);
    let known: BTreeSet<Module> = files.iter().map(|(m, _)| m.clone()).collect();
    let mut edges = BTreeSet::new();
    for (module, file) in &files {
        let Ok(text) = std::fs::read_to_string(file) else {
            continue;
        };
        let Ok(ts) = TokenStream::from_str(&text) else {
            panic!("{} does not lex", file.display());
        };
        let mut found = Vec::new();
        paths(ts, module, &mut found);
        for (from, path) in found {
            let Some(to) = resolve(&from, &path, &known) else {
                continue;
            };
            // The file's own module stands for inline modules inside it.
            let from = module;
            let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
            if let (Some(a), Some(b)) = (from.get(common), to.get(common)) {
                edges.insert((from[..common].to_vec(), a.clone(), b.clone()));
            }
        }
    }
    edges
}

#[test]
fn no_crate_has_a_module_cycle() {
    let root = repo().join("crates");
    let mut crates: Vec<PathBuf> = std::fs::read_dir(&root)
        .expect("crates/")
        .flatten()
        .map(|e| e.path().join("src"))
        .filter(|p| p.is_dir())
        .collect();
    crates.sort();
    assert!(
        crates.len() >= 10,
        "the workspace's crates were not found under {}",
        root.display()
    );
    let mut found = Vec::new();
    // `SEALMQ_MODULE_EDGES=sealmq-server cargo test -p sealmq --test module_cycles -- --nocapture`
    // prints one crate's arrows, to see where a cycle runs.
    let show = std::env::var("SEALMQ_MODULE_EDGES").unwrap_or_default();
    for src in &crates {
        let name = src
            .parent()
            .and_then(Path::file_name)
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let edges = sibling_edges(src);
        if name == show {
            for (p, a, b) in &edges {
                println!(
                    "{}: {a} → {b}",
                    if p.is_empty() {
                        "crate".into()
                    } else {
                        p.join("::")
                    }
                );
            }
        }
        for c in cycles(&edges) {
            found.push(format!("{name}: {c}"));
        }
    }
    assert!(found.is_empty(), "module cycles:\n{}", found.join("\n"));
}

#[test]
fn the_check_sees_a_cycle_when_there_is_one() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let src = dir.path();
    std::fs::create_dir_all(src.join("net")).expect("net/");
    std::fs::write(src.join("lib.rs"), "mod a; mod b; mod net;").expect("lib.rs");
    std::fs::write(src.join("a.rs"), "pub fn f() { crate::b::g() }").expect("a.rs");
    std::fs::write(src.join("b.rs"), "use crate::{net::x::Y, a};").expect("b.rs");
    std::fs::write(
        src.join("net/mod.rs"),
        "pub mod x; pub mod y; use self::x::Y;",
    )
    .expect("mod.rs");
    std::fs::write(
        src.join("net/x.rs"),
        "pub struct Y; fn h() { super::y::z() }",
    )
    .expect("x.rs");
    std::fs::write(
        src.join("net/y.rs"),
        "pub fn z() { format!(\"{}\", super::super::a::f()); }",
    )
    .expect("y.rs");
    let found = cycles(&sibling_edges(src));
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].contains("a → b") && found[0].contains("b → a"),
        "{found:?}"
    );
    // y → crate::a is an arrow net → a; a → b → net closes a cycle of three.
    assert!(
        found[0].contains("b → net") && found[0].contains("net → a"),
        "{found:?}"
    );
    // x → y inside net is one-way, so net holds no cycle of its own.
    assert!(!found[0].contains("in net"), "{found:?}");
}

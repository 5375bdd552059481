//! The engine's modules form layers: no module reaches (through `crate::...`) a module that
//! reaches back to it, directly or through others. A cycle (the queue manager calling the MQI
//! that calls the queue manager) is what made the code hard to follow; this test keeps it out.
//! Every `impl QueueManager` block is in `qm/`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Each top-level module of `src/` and the modules its code (tests left out) names.
fn module_graph() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut stack = vec![src.clone()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let p = entry.path();
            if p.is_dir() {
                if p.file_name().is_some_and(|n| n != "bin") {
                    stack.push(p);
                }
                continue;
            }
            if p.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let rel = p.strip_prefix(&src).unwrap();
            let module = rel
                .components()
                .next()
                .unwrap()
                .as_os_str()
                .to_string_lossy()
                .trim_end_matches(".rs")
                .to_string();
            let text = std::fs::read_to_string(&p).unwrap();
            let code = text.split("#[cfg(test)]").next().unwrap_or_default();
            let uses = graph.entry(module.clone()).or_default();
            for (i, _) in code.match_indices("crate::") {
                let name: String = code[i + 7..]
                    .chars()
                    .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                    .collect();
                if !name.is_empty() && name != module {
                    uses.insert(name);
                }
            }
        }
    }
    graph
}

/// The modules `from` reaches.
fn reach(graph: &BTreeMap<String, BTreeSet<String>>, from: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut todo: Vec<&str> = vec![from];
    while let Some(m) = todo.pop() {
        for n in graph.get(m).into_iter().flatten() {
            if seen.insert(n.clone()) {
                todo.push(n);
            }
        }
    }
    seen
}

#[test]
fn no_module_of_the_engine_reaches_back_to_itself() {
    let graph = module_graph();
    assert!(
        graph.contains_key("qm") && graph.contains_key("mqi"),
        "{graph:?}"
    );
    // The MQI is above the queue manager.
    assert!(graph["mqi"].contains("qm"));
    let cycles: Vec<String> = graph
        .keys()
        .filter(|m| reach(&graph, m).contains(*m))
        .map(|m| {
            let back: Vec<&String> = graph[m]
                .iter()
                .filter(|n| reach(&graph, n).contains(m))
                .collect();
            format!("{m} -> {back:?} -> ... -> {m}")
        })
        .collect();
    assert!(cycles.is_empty(), "module cycles: {cycles:#?}");
}

#[test]
fn every_impl_of_the_queue_manager_is_in_qm() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut outside = Vec::new();
    let mut stack = vec![src.clone()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let p = entry.path();
            if p.is_dir() {
                stack.push(p);
            } else if !p.starts_with(src.join("qm"))
                && std::fs::read_to_string(&p)
                    .unwrap_or_default()
                    .lines()
                    .any(|l| l.trim_start().starts_with("impl QueueManager"))
            {
                outside.push(p.display().to_string());
            }
        }
    }
    assert!(
        outside.is_empty(),
        "impl QueueManager outside qm/: {outside:?}"
    );
}

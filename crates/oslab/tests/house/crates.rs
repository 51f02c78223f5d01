//! The crates' own rules, held by Cargo and checked here: the crate graph
//! docs/architecture.md draws is the one the Cargo.toml files have; the harness
//! and the services know no experiment (so a command that needs a service does
//! not pull the experiments in); an experiment family uses no other family (what
//! two families share is a service, and the registry alone knows them all).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::mod_tree::strip_comments_and_strings;
use super::{repository, shown};

type Graph = BTreeMap<String, BTreeSet<String>>;

/// The workspace crates each manifest under crates/ lists in [dependencies], by
/// folder name (`oslab-wcall-table` is `wcall-table`).
fn graph_of_manifests() -> Graph {
    let mut graph = Graph::new();
    for entry in std::fs::read_dir(repository().join("crates")).unwrap() {
        let dir = entry.unwrap().path();
        let Ok(manifest) = std::fs::read_to_string(dir.join("Cargo.toml")) else {
            continue;
        };
        let name = dir.file_name().unwrap().to_string_lossy().to_string();
        graph.insert(name, dependencies_in(&manifest));
    }
    graph
}

/// The `oslab-*` names of a manifest's [dependencies] table, without the prefix.
fn dependencies_in(manifest: &str) -> BTreeSet<String> {
    let mut deps = BTreeSet::new();
    let mut in_table = false;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_table = line == "[dependencies]";
        } else if in_table && let Some(rest) = line.strip_prefix("oslab-") {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                .collect();
            deps.insert(name);
        }
    }
    deps
}

/// The graph in docs/architecture.md's block after "The crates, as their
/// Cargo.toml files have them": `a -> b, c` lines, and one line of the crates
/// that depend on no crate of the workspace.
fn graph_in_docs() -> Graph {
    let doc = std::fs::read_to_string(repository().join("docs/architecture.md")).unwrap();
    let after = doc
        .split_once("The crates, as their Cargo.toml files have them")
        .expect("docs/architecture.md draws the crate graph")
        .1;
    let block = after.split("```").nth(1).expect("the graph's code block");
    let mut graph = Graph::new();
    for line in block.lines().filter(|l| !l.trim().is_empty()) {
        if let Some((leaves, _)) = line.split_once(": no crate of the workspace") {
            for leaf in leaves.split(',') {
                graph.insert(leaf.trim().to_string(), BTreeSet::new());
            }
        } else {
            let (from, to) = line.split_once("->").expect("a line `a -> b, c`");
            let to: BTreeSet<String> = to.split(',').map(|t| t.trim().to_string()).collect();
            for from in from.split(',') {
                graph.insert(from.trim().to_string(), to.clone());
            }
        }
    }
    graph
}

#[test]
fn the_docs_draw_the_crate_graph_the_manifests_have() {
    let manifests = graph_of_manifests();
    let docs = graph_in_docs();
    for (name, deps) in &manifests {
        assert_eq!(
            docs.get(name),
            Some(deps),
            "docs/architecture.md's crate graph for `{name}` differs from crates/{name}/Cargo.toml"
        );
    }
    let extra: Vec<_> = docs
        .keys()
        .filter(|k| !manifests.contains_key(*k))
        .collect();
    assert!(
        extra.is_empty(),
        "the docs draw crates that are not there: {extra:?}"
    );
}

/// The crates below the experiments, and those they must not depend on.
const LAYERS: [(&str, &[&str]); 2] = [("harness", &["services", "lab"]), ("services", &["lab"])];

#[test]
fn the_harness_and_the_services_know_no_experiment() {
    let graph = graph_of_manifests();
    for (low, above) in LAYERS {
        for high in above {
            assert!(
                !reaches(&graph, low, high),
                "crates/{low} depends on crates/{high}: the harness and the services use no experiment"
            );
        }
    }
    for (name, deps) in &graph {
        assert!(
            name == "oslab" || !deps.contains("lab"),
            "crates/{name} depends on the experiments (crates/lab): only the binary may"
        );
    }
}

fn reaches(graph: &Graph, from: &str, to: &str) -> bool {
    let mut seen = BTreeSet::new();
    let mut todo = vec![from.to_string()];
    while let Some(c) = todo.pop() {
        for d in graph.get(&c).into_iter().flatten() {
            if d == to {
                return true;
            }
            if seen.insert(d.clone()) {
                todo.push(d.clone());
            }
        }
    }
    false
}

/// The experiment families: the folders of crates/lab/src.
fn families(src: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(src)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .map(|p| p.file_name().unwrap().to_string_lossy().to_string())
        .collect();
    names.sort();
    names
}

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// What in `code` (comments and strings left out) names another family than
/// `own`: `crate::<family>` or the lab crate by name.
fn other_families_named(code: &str, own: &str, families: &[String]) -> Vec<String> {
    let words: Vec<&str> = code
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
        .collect();
    let mut named = Vec::new();
    for w in words {
        if w.starts_with("oslab_lab::") {
            named.push(w.to_string());
        }
        if let Some(rest) = w.strip_prefix("crate::") {
            let first = rest.split("::").next().unwrap_or("");
            if first != own && (families.iter().any(|f| f == first) || first == "registry") {
                named.push(w.to_string());
            }
        }
    }
    named
}

#[test]
fn an_experiment_family_uses_no_other_family() {
    let src = repository().join("crates/lab/src");
    let families = families(&src);
    assert!(
        families.len() >= 6,
        "the families were not found: {families:?}"
    );
    let mut found = Vec::new();
    for family in &families {
        let mut files = Vec::new();
        rust_files(&src.join(family), &mut files);
        for file in files {
            // test code too: a family's tests judge its own experiments
            let code = strip_comments_and_strings(&std::fs::read_to_string(&file).unwrap());
            for name in other_families_named(&code, family, &families) {
                found.push(format!("{} names {name}", shown(&file)));
            }
        }
    }
    assert!(
        found.is_empty(),
        "a family uses another (share it through crates/services instead):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_family_rule_sees_a_family_named_in_code_and_not_in_a_comment() {
    let families = ["sim".to_string(), "wb".to_string()];
    let code = strip_comments_and_strings(
        "// crate::wb::x in a comment\nuse crate::wb::background::Background;\nuse crate::sim::y;\nconst S: &str = \"crate::wb::z\";\n#[cfg(test)]\nmod tests { use crate::registry::SIM; }\n",
    );
    assert_eq!(
        other_families_named(&code, "sim", &families),
        ["crate::wb::background::Background", "crate::registry::SIM"]
    );
}

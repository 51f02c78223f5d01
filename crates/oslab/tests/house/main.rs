//! The workspace checks its own shape: no file of product code over 500 code lines, no
//! import circle between files of different folders nor between the files of one
//! folder (its mod.rs aside), every repository path the docs
//! name exists in a clone, and every crate takes the workspace's lints (`lints.rs`:
//! functions over 80 code lines are clippy's `too_many_lines`, switched on for every
//! crate in the root Cargo.toml, its threshold in clippy.toml, never allowed in
//! product code), and the crates keep their layers (`crates.rs`).

mod crates;
mod lints;
mod mod_tree;
mod paths;

use mod_tree::{Crate, code_lines};
use paths::Index;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

const MAX_CODE_LINES: usize = 500;

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// Every crate of the workspace, read from its lib.rs or main.rs.
fn crates() -> Vec<(String, Crate)> {
    let mut found = Vec::new();
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(repository().join("crates"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    dirs.sort();
    for dir in dirs {
        for root in ["src/lib.rs", "src/main.rs"] {
            if dir.join(root).exists() {
                let name = format!("{}/{root}", dir.file_name().unwrap().to_string_lossy());
                found.push((name, Crate::read(&dir.join(root))));
            }
        }
    }
    assert!(found.len() >= 10, "the workspace's crates were not found");
    found
}

fn shown(path: &Path) -> String {
    path.strip_prefix(repository())
        .unwrap_or(path)
        .display()
        .to_string()
}

#[test]
fn no_file_of_product_code_is_over_500_code_lines() {
    let mut over = Vec::new();
    let mut files = 0;
    for (_, krate) in crates() {
        for m in &krate.modules {
            files += 1;
            let n = code_lines(&m.plain);
            if n > MAX_CODE_LINES {
                over.push(format!("{} ({n} code lines)", shown(&m.file)));
            }
        }
    }
    assert!(files > 100, "only {files} files read");
    assert!(
        over.is_empty(),
        "files over {MAX_CODE_LINES} code lines (blank lines, comments and #[cfg(test)] \
         items not counted): split them by what they do:\n{}",
        over.join("\n")
    );
}

/// Strongly connected components of the import graph (Tarjan), of more than one file.
fn circles(edges: &[BTreeSet<usize>]) -> Vec<Vec<usize>> {
    struct State<'a> {
        edges: &'a [BTreeSet<usize>],
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        on_stack: Vec<bool>,
        stack: Vec<usize>,
        next: usize,
        found: Vec<Vec<usize>>,
    }
    fn visit(s: &mut State, v: usize) {
        s.index[v] = Some(s.next);
        s.low[v] = s.next;
        s.next += 1;
        s.stack.push(v);
        s.on_stack[v] = true;
        for &w in s.edges[v].iter() {
            match s.index[w] {
                None => {
                    visit(s, w);
                    s.low[v] = s.low[v].min(s.low[w]);
                }
                Some(i) if s.on_stack[w] => s.low[v] = s.low[v].min(i),
                Some(_) => {}
            }
        }
        if Some(s.low[v]) == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack[w] = false;
                component.push(w);
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                s.found.push(component);
            }
        }
    }
    let n = edges.len();
    let mut s = State {
        edges,
        index: vec![None; n],
        low: vec![0; n],
        on_stack: vec![false; n],
        stack: Vec::new(),
        next: 0,
        found: Vec::new(),
    };
    for v in 0..n {
        if s.index[v].is_none() {
            visit(&mut s, v);
        }
    }
    s.found
}

/// A circle in words: the crate, its size and each import that ties it.
fn described(name: &str, krate: &Crate, edges: &[BTreeSet<usize>], circle: &[usize]) -> String {
    let members: BTreeSet<usize> = circle.iter().copied().collect();
    let mut ties = Vec::new();
    for &from in circle {
        for to in edges[from].intersection(&members) {
            ties.push(format!(
                "    {} -> {}",
                shown(&krate.modules[from].file),
                shown(&krate.modules[*to].file)
            ));
        }
    }
    ties.sort();
    format!(
        "{name}: a circle of {} files\n{}",
        circle.len(),
        ties.join("\n")
    )
}

#[test]
fn no_import_circle_runs_between_files_of_different_folders() {
    let mut bad = Vec::new();
    for (name, krate) in crates() {
        let index = Index::new(&krate);
        let edges: Vec<BTreeSet<usize>> =
            (0..krate.modules.len()).map(|m| index.imports(m)).collect();
        for circle in circles(&edges) {
            let folders: BTreeSet<PathBuf> = circle.iter().map(|&m| krate.folder(m)).collect();
            if folders.len() >= 2 {
                bad.push(described(&name, &krate, &edges, &circle));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "import circles between folders (move what both sides use to a module neither \
         imports back):\n{}",
        bad.join("\n")
    );
}

/// The file that declares a folder's modules (lib.rs, main.rs, a mod.rs, or a file
/// with a folder of children): the folder's face, which names its files' shared
/// types and hands their work on, so imports between it and them run both ways.
fn is_face(krate: &Crate, m: usize) -> bool {
    let module = &krate.modules[m];
    !module.children.is_empty()
        || module
            .file
            .file_name()
            .is_some_and(|n| n == "lib.rs" || n == "main.rs" || n == "mod.rs")
}

/// The imports between files that are no folder's face.
fn imports_beside(krate: &Crate) -> Vec<BTreeSet<usize>> {
    let index = Index::new(krate);
    (0..krate.modules.len())
        .map(|m| {
            let mut to = index.imports(m);
            to.retain(|&t| !is_face(krate, m) && !is_face(krate, t));
            to
        })
        .collect()
}

#[test]
fn imports_between_the_files_of_one_folder_run_one_way() {
    let mut bad = Vec::new();
    for (name, krate) in crates() {
        let edges = imports_beside(&krate);
        for circle in circles(&edges) {
            bad.push(described(&name, &krate, &edges, &circle));
        }
    }
    assert!(
        bad.is_empty(),
        "import circles between files beside each other (move what both use to a file of \
         its own that both import, e.g. the figures the judging and the claims read):\n{}",
        bad.join("\n")
    );
}

#[test]
fn the_circle_finder_sees_a_circle_through_a_re_export() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    std::fs::create_dir_all(src.join("a")).unwrap();
    std::fs::create_dir_all(src.join("b")).unwrap();
    std::fs::write(src.join("lib.rs"), "mod a;\nmod b;\n").unwrap();
    std::fs::write(src.join("a/mod.rs"), "mod one;\npub use one::One;\n").unwrap();
    std::fs::write(
        src.join("a/one.rs"),
        "// crate::b::Two in a comment is no import\npub struct One(crate::b::Two);\n",
    )
    .unwrap();
    std::fs::write(
        src.join("b/mod.rs"),
        "use crate::a::One;\n#[cfg(test)]\nmod tests { use crate::a::One; }\npub struct Two;\npub fn f(_: One) {}\n",
    )
    .unwrap();
    let krate = Crate::read(&src.join("lib.rs"));
    let index = Index::new(&krate);
    let file = |m: usize| {
        krate.modules[m]
            .file
            .strip_prefix(src)
            .unwrap()
            .to_path_buf()
    };
    let edges: Vec<BTreeSet<usize>> = (0..krate.modules.len()).map(|m| index.imports(m)).collect();
    let found = circles(&edges);
    assert_eq!(found.len(), 1, "{:?}", found);
    let mut names: Vec<PathBuf> = found[0].iter().map(|&m| file(m)).collect();
    names.sort();
    assert_eq!(
        names,
        [PathBuf::from("a/one.rs"), PathBuf::from("b/mod.rs")]
    );
}

#[test]
fn a_circle_beside_the_face_is_seen_and_the_face_is_not_one() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    std::fs::create_dir_all(src.join("a")).unwrap();
    std::fs::write(src.join("lib.rs"), "mod a;\nmod c;\n").unwrap();
    // the face and its files import each other: no circle
    std::fs::write(
        src.join("a/mod.rs"),
        "mod one;\nmod two;\npub struct Raw;\npub use one::judge;\n",
    )
    .unwrap();
    std::fs::write(
        src.join("a/one.rs"),
        "use super::Raw;\nuse super::two::claims;\npub fn judge(r: Raw) { claims(r) }\npub fn median() {}\n",
    )
    .unwrap();
    // two.rs takes a helper back from one.rs: the circle
    std::fs::write(
        src.join("a/two.rs"),
        "use super::Raw;\npub fn claims(_: Raw) { super::one::median() }\n",
    )
    .unwrap();
    // a file beside lib.rs that only imports one way
    std::fs::write(
        src.join("c.rs"),
        "pub fn f() { crate::a::judge(crate::a::Raw) }\n",
    )
    .unwrap();
    let krate = Crate::read(&src.join("lib.rs"));
    let found = circles(&imports_beside(&krate));
    assert_eq!(found.len(), 1, "{:?}", found);
    let mut names: Vec<PathBuf> = found[0]
        .iter()
        .map(|&m| {
            krate.modules[m]
                .file
                .strip_prefix(src)
                .unwrap()
                .to_path_buf()
        })
        .collect();
    names.sort();
    assert_eq!(
        names,
        [PathBuf::from("a/one.rs"), PathBuf::from("a/two.rs")]
    );
}

#[test]
fn code_lines_leave_out_comments_blank_lines_and_test_items() {
    let source = "//! doc\n\nfn a() {\n    // note\n    let s = \"x\ny\";\n}\n/* block\n */\n#[cfg(test)]\nmod tests {\n    fn t() {}\n}\n";
    let (plain, test_mods) = mod_tree::plain_source(source);
    assert_eq!(code_lines(&plain), 4, "{plain}");
    assert_eq!(test_mods, ["tests"]);
}

/// Backquoted paths of the repository in a Markdown text (`crates/...`, `docs/...`,
/// `scripts/...`, `dashboards/...`), without those that hold a placeholder.
fn named_paths(text: &str) -> Vec<String> {
    const ROOTS: [&str; 5] = ["crates/", "docs/", "scripts/", "dashboards/", ".ci/"];
    text.split('`')
        .skip(1)
        .step_by(2)
        .map(|s| {
            s.split_whitespace()
                .next()
                .unwrap_or("")
                .trim_end_matches([',', ':'])
        })
        .filter(|s| ROOTS.iter().any(|r| s.starts_with(r)))
        // a placeholder, or the experiment the recipe adds (`mem.example`)
        .filter(|s| !s.contains(['<', '*', '{', '$']) && !s.contains("NAME"))
        .filter(|s| !s.contains("...") && !s.contains("example"))
        .map(|s| s.split(':').next().unwrap().to_string())
        .collect()
}

#[test]
fn every_path_the_docs_name_is_in_the_repository() {
    let root = repository();
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    docs.push(root.join("README.md"));
    let mut missing = Vec::new();
    let mut named = 0;
    for doc in &docs {
        let text = std::fs::read_to_string(doc).unwrap();
        for path in named_paths(&text) {
            named += 1;
            if !root.join(&path).exists() {
                missing.push(format!("{}: {path}", shown(doc)));
            }
        }
        if text.contains("../shared") || text.contains("shared/spec") {
            missing.push(format!(
                "{}: names ../shared, which a clone of the repository does not have",
                shown(doc)
            ));
        }
    }
    assert!(named > 20, "only {named} paths found in the docs");
    let architecture = std::fs::read_to_string(root.join("docs/architecture.md")).unwrap();
    let recipes: Vec<&str> = architecture.split("## Recipe").skip(1).collect();
    assert!(
        recipes.len() >= 3,
        "docs/architecture.md has {} recipes, not 3",
        recipes.len()
    );
    for recipe in recipes {
        let section = recipe.split("\n#").next().unwrap();
        assert!(
            named_paths(section)
                .iter()
                .any(|p| p.starts_with("crates/")),
            "the recipe{} names no file",
            section.lines().next().unwrap_or("")
        );
    }
    assert!(
        missing.is_empty(),
        "the docs name what is not here:\n{}",
        missing.join("\n")
    );
}

/// The words of oslab's making that a user of the docs has not learned: the
/// source as "the material", the simulator's "blind" and "seeded" predictions,
/// the "session chain", "cells" of a matrix, "the issue" that asked for a
/// change, raw data as "fixtures", and a machine named by its details in
/// brackets. Code spans (`blind.*`, a claim's id) are names, not prose,
/// and are left out; docs/architecture.md is for those who change oslab.
const DEVELOPMENT_WORDS: [&str; 9] = [
    "the material",
    "blind",
    "blindly",
    "seeded",
    "session chain",
    "cell",
    "cells",
    "the issue",
    "fixture",
];

/// `text` with its code spans and fenced blocks blanked, line for line.
fn prose(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let (mut fence, mut span) = (false, false);
    for line in text.split_inclusive('\n') {
        if line.trim_start().starts_with("```") {
            fence = !fence;
            out.push('\n');
            continue;
        }
        for c in line.chars() {
            if c == '`' && !fence {
                span = !span;
            }
            out.push(if fence || span || c == '`' {
                if c == '\n' { c } else { ' ' }
            } else {
                c
            });
        }
    }
    out
}

/// Where `word` stands in `text` as a word (or words) of its own, case ignored.
fn uses(text: &str, word: &str) -> bool {
    let lower = text.to_lowercase();
    lower.match_indices(word).any(|(at, _)| {
        let before = lower[..at].chars().next_back();
        let after = lower[at + word.len()..].chars().next();
        !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric)
    })
}

#[test]
fn the_users_docs_speak_no_development_vocabulary() {
    assert!(uses("every cell ran", "cell") && !uses("a cellar", "cell"));
    assert!(!uses(&prose("the `blind.*` findings"), "blind"));
    let root = repository();
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .filter(|p| !p.ends_with("architecture.md"))
        .collect();
    docs.push(root.join("README.md"));
    docs.sort();
    let mut found = Vec::new();
    for doc in &docs {
        let text = prose(&std::fs::read_to_string(doc).unwrap());
        for (n, line) in text.lines().enumerate() {
            for w in DEVELOPMENT_WORDS {
                if uses(line, w) {
                    found.push(format!("{}:{}: {w}", shown(doc), n + 1));
                }
            }
            if line.contains("this machine (") {
                found.push(format!("{}:{}: this machine (...)", shown(doc), n + 1));
            }
        }
    }
    assert!(docs.len() >= 8, "{} docs", docs.len());
    assert!(
        found.is_empty(),
        "words a user has not learned, in the docs ({}):\n{}",
        found.len(),
        found.join("\n")
    );
}

/// Regression: sim.validate was missing from the README's table of experiments.
#[test]
fn the_readme_names_every_experiment() {
    let readme = std::fs::read_to_string(repository().join("README.md")).unwrap();
    let table = readme
        .split("Experiments so far:")
        .nth(1)
        .expect("the README's table of experiments");
    let missing: Vec<&str> = oslab_lab::Registry::default()
        .all()
        .map(|e| e.meta().id)
        .filter(|id| !table.contains(&format!("| `{id}` |")))
        .collect();
    assert!(missing.is_empty(), "not in the README's table: {missing:?}");
}

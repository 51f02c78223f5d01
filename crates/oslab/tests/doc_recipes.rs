//! The recipes of docs/architecture.md (the sections headed `## Recipe: ...`)
//! name real files: every `crates/...` or `docs/...` path they quote in
//! backticks exists (a `<placeholder>` in a path stands for the new file's name
//! and is not looked for).

use std::path::{Path, PathBuf};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The text of each `## Recipe` section, with its heading.
fn recipes(doc: &str) -> Vec<(&str, String)> {
    let mut out: Vec<(&str, String)> = Vec::new();
    let mut current: Option<(&str, String)> = None;
    for line in doc.lines() {
        if line.starts_with("## ") {
            out.extend(current.take());
            if line.starts_with("## Recipe") {
                current = Some((line, String::new()));
            }
        } else if let Some((_, text)) = current.as_mut() {
            text.push_str(line);
            text.push('\n');
        }
    }
    out.extend(current);
    out
}

/// The quoted paths of a text: backticked words under crates/ or docs/.
fn quoted_paths(text: &str) -> Vec<&str> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .filter(|q| q.starts_with("crates/") || q.starts_with("docs/"))
        .filter(|q| !q.contains('<') && !q.contains(' '))
        .collect()
}

#[test]
fn every_path_a_recipe_names_exists() {
    let root = workspace();
    let doc = std::fs::read_to_string(root.join("docs/architecture.md")).unwrap();
    let recipes = recipes(&doc);
    assert!(
        recipes.len() >= 2,
        "docs/architecture.md has no recipes to check"
    );
    let mut missing = Vec::new();
    for (heading, text) in &recipes {
        let paths = quoted_paths(text);
        assert!(!paths.is_empty(), "{heading} names no file");
        for p in paths {
            if !root.join(p).exists() {
                missing.push(format!("{heading}: {p}"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "paths that do not exist:\n{}",
        missing.join("\n")
    );
}

#[test]
fn a_recipe_naming_a_file_that_is_gone_is_caught() {
    let doc = "## Recipe: x\n1. `crates/oslab/src/nowhere.rs` and `crates/<new>.rs`\n## Other\n`crates/also-not-checked.rs`\n";
    let recipes = recipes(doc);
    assert_eq!(recipes.len(), 1);
    assert_eq!(quoted_paths(&recipes[0].1), ["crates/oslab/src/nowhere.rs"]);
    assert!(!workspace().join("crates/oslab/src/nowhere.rs").exists());
}

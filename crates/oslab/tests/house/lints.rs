//! The lints every crate shares are set once, for the workspace: `[workspace.lints]`
//! in the root Cargo.toml (with the 80-line threshold of `too_many_lines` in
//! clippy.toml), and every crate's manifest inherits them (`[lints] workspace =
//! true`), so a new crate cannot escape them. Product code never allows a long
//! function; a test crate may, in one place at its top, and a crate's unit tests
//! in one place. Generated code (a module of `include!`s from `OUT_DIR`) is not
//! ours to split.

use std::path::{Path, PathBuf};

use crate::mod_tree::{self, Crate};
use crate::{crates, repository, shown};

/// The clippy lints the workspace sets for every crate.
const SHARED_CLIPPY_LINTS: [&str; 2] = ["too_many_lines", "dbg_macro"];

/// Where an attribute names one of these, it can switch `too_many_lines` off.
const LONG_FUNCTION_LINTS: [&str; 2] = ["too_many_lines", "pedantic"];

/// An attribute that allows (or expects) long functions.
#[derive(Debug, PartialEq)]
struct Exemption {
    /// 1-based.
    line: usize,
    /// `#![...]`: it covers the whole crate or module it stands at the top of.
    inner: bool,
    /// It sits on a module of generated code only.
    generated: bool,
}

/// The attributes of `plain` (a source without comments or string contents, line for
/// line as `raw`) that allow or expect long functions.
fn exemptions(raw: &str, plain: &str) -> Vec<Exemption> {
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(at) = plain[from..].find('#').map(|i| i + from) {
        let inner = plain[at + 1..].starts_with('!');
        let open = at + if inner { 2 } else { 1 };
        from = at + 1;
        if !plain[open..].starts_with('[') {
            continue;
        }
        let Some(close) = closing(plain, open, '[', ']') else {
            break;
        };
        let attribute = &plain[open..close];
        let level = ["allow", "expect"]
            .iter()
            .any(|l| attribute.contains(&format!("{l}(")));
        if level && LONG_FUNCTION_LINTS.iter().any(|l| attribute.contains(l)) {
            found.push(Exemption {
                line: line_of(plain, at),
                inner,
                generated: !inner && generated_module(raw, plain, close + 1),
            });
        }
        from = close + 1;
    }
    found
}

/// The index of the bracket that closes the one at `open`.
fn closing(text: &str, open: usize, left: char, right: char) -> Option<usize> {
    let mut depth = 0usize;
    for (i, c) in text[open..].char_indices() {
        if c == left {
            depth += 1;
        } else if c == right {
            depth -= 1;
            if depth == 0 {
                return Some(open + i);
            }
        }
    }
    None
}

fn line_of(text: &str, at: usize) -> usize {
    text[..at].matches('\n').count() + 1
}

/// Whether the item at `at` is `mod NAME { ... }` (pub or not) whose lines are
/// nested modules and `include!(concat!(env!("OUT_DIR"), ...));` only.
fn generated_module(raw: &str, plain: &str, at: usize) -> bool {
    let Some(open) = plain[at..].find('{').map(|i| i + at) else {
        return false;
    };
    let head: Vec<&str> = plain[at..open].split_whitespace().collect();
    let is_module = matches!(
        head.as_slice(),
        ["mod", _] | ["pub" | "pub(crate)", "mod", _]
    );
    let Some(close) = closing(plain, open, '{', '}') else {
        return false;
    };
    let raw_lines: Vec<&str> = raw.lines().collect();
    let plain_lines: Vec<&str> = plain.lines().collect();
    let (first, last) = (line_of(plain, open), line_of(plain, close));
    // 0-based, `first..last - 1` are the lines between the braces' lines
    is_module
        && first < last
        && (first..last - 1).all(|i| {
            let code = plain_lines[i].trim();
            let words: Vec<&str> = code.split_whitespace().collect();
            code.is_empty()
                || code == "}"
                || matches!(words.as_slice(), ["mod", _, "{"] | ["pub", "mod", _, "{"])
                || (raw_lines[i]
                    .trim()
                    .starts_with(r#"include!(concat!(env!("OUT_DIR"), "#)
                    && code.ends_with(");"))
        })
}

fn toml_of(path: &Path) -> toml::Table {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    text.parse()
        .unwrap_or_else(|e| panic!("{} is not TOML: {e}", path.display()))
}

/// Why a crate's manifest does not take the workspace's lints, if it does not.
fn not_inheriting(manifest: &toml::Table) -> Option<&'static str> {
    match manifest.get("lints").map(|l| l.get("workspace")) {
        None => Some("has no [lints] table"),
        Some(Some(toml::Value::Boolean(true))) => None,
        Some(_) => Some("has [lints] without workspace = true"),
    }
}

/// The shared lints the root manifest's `[workspace.lints.clippy]` lacks, or
/// leaves at allow.
fn missing_shared_lints(root: &toml::Table) -> Vec<&'static str> {
    let clippy = root
        .get("workspace")
        .and_then(|w| w.get("lints"))
        .and_then(|l| l.get("clippy"));
    SHARED_CLIPPY_LINTS
        .into_iter()
        .filter(|lint| {
            let level = clippy.and_then(|c| c.get(*lint)).and_then(|v| match v {
                toml::Value::String(s) => Some(s.as_str()),
                toml::Value::Table(t) => t.get("level").and_then(toml::Value::as_str),
                _ => None,
            });
            !matches!(level, Some("warn" | "deny" | "forbid"))
        })
        .collect()
}

/// The crates' folders: every folder of crates/ with a Cargo.toml.
fn crate_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(repository().join("crates"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|d| d.join("Cargo.toml").exists())
        .collect();
    dirs.sort();
    dirs
}

/// Every .rs file under `dir`, sorted.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return files;
    };
    for entry in entries {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(rust_files(&path));
        } else if path.extension().is_some_and(|x| x == "rs") {
            files.push(path);
        }
    }
    files.sort();
    files
}

/// The exemptions of a whole file, test items included.
fn file_exemptions(file: &Path) -> Vec<Exemption> {
    let raw = std::fs::read_to_string(file).unwrap();
    exemptions(&raw, &mod_tree::strip_comments_and_strings(&raw))
}

#[test]
fn every_crate_inherits_the_workspace_lints() {
    let root = repository();
    let mut wrong = Vec::new();
    for lint in missing_shared_lints(&toml_of(&root.join("Cargo.toml"))) {
        wrong.push(format!(
            "Cargo.toml: [workspace.lints.clippy] does not set {lint} to warn"
        ));
    }
    let threshold = toml_of(&root.join("clippy.toml"))
        .get("too-many-lines-threshold")
        .and_then(toml::Value::as_integer);
    if threshold != Some(80) {
        wrong.push(format!(
            "clippy.toml: too-many-lines-threshold is {threshold:?}, not 80"
        ));
    }
    let dirs = crate_dirs();
    assert!(dirs.len() >= 10, "only {} crates found", dirs.len());
    for dir in dirs {
        let manifest = dir.join("Cargo.toml");
        if let Some(why) = not_inheriting(&toml_of(&manifest)) {
            wrong.push(format!("{}: {why}", shown(&manifest)));
        }
    }
    assert!(
        wrong.is_empty(),
        "the workspace's lints are not every crate's ([lints] workspace = true in each \
         crate's Cargo.toml):\n{}",
        wrong.join("\n")
    );
}

#[test]
fn product_code_never_allows_a_long_function() {
    let mut found = Vec::new();
    let mut files = 0;
    for (_, krate) in crates() {
        let Crate { modules } = krate;
        for m in modules {
            files += 1;
            let raw = std::fs::read_to_string(&m.file).unwrap();
            for e in exemptions(&raw, &m.plain) {
                if !e.generated {
                    found.push(format!("{}:{}", shown(&m.file), e.line));
                }
            }
        }
    }
    assert!(files > 100, "only {files} files read");
    assert!(
        found.is_empty(),
        "product code allows clippy::too_many_lines: split the function into pieces \
         of one job each (80 code lines at most; a crate's unit tests may allow it on \
         their `#[cfg(test)]` module):\n{}",
        found.join("\n")
    );
}

#[test]
fn tests_allow_long_functions_in_one_place_per_crate() {
    let mut wrong = Vec::new();
    for dir in crate_dirs() {
        let mut unit = Vec::new();
        for file in rust_files(&dir.join("src")) {
            for e in file_exemptions(&file) {
                if !e.generated {
                    unit.push(format!("{}:{}", shown(&file), e.line));
                }
            }
        }
        if unit.len() > 1 {
            wrong.push(format!(
                "unit tests in {} places: {}",
                unit.len(),
                unit.join(", ")
            ));
        }
        for folder in ["tests", "benches", "examples"] {
            let top = dir.join(folder);
            for file in rust_files(&top) {
                // a test crate's root: tests/NAME.rs or tests/NAME/main.rs
                let parent = file.parent().unwrap();
                let root = parent == top
                    || (file.ends_with("main.rs") && parent.parent() == Some(top.as_path()));
                let found = file_exemptions(&file);
                let misplaced = found.iter().any(|e| !e.inner) || !root;
                if found.len() > 1 || (!found.is_empty() && misplaced) {
                    let lines: Vec<String> = found.iter().map(|e| e.line.to_string()).collect();
                    wrong.push(format!("{}:{}", shown(&file), lines.join(",")));
                }
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "long functions allowed in more than one place of a crate (a test crate: one \
         #![allow(clippy::too_many_lines)] at its top; unit tests: one #[cfg(test)] \
         module):\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_rules_see_an_exemption_and_a_crate_outside_the_workspace_lints() {
    let source = concat!(
        "#![allow(clippy::too_many_lines)]\n",
        "// #[allow(clippy::too_many_lines)] in a comment\n",
        "const S: &str = \"#[allow(clippy::too_many_lines)]\";\n",
        "#[warn(clippy::too_many_lines)]\n",
        "#[cfg_attr(test, allow(clippy::too_many_lines))]\n",
        "#[allow(clippy::pedantic, dead_code)]\n",
        "fn long() {}\n",
        "#[allow(clippy::all, clippy::too_many_lines)]\n",
        "mod generated {\n",
        "    pub mod skel {\n",
        "        include!(concat!(env!(\"OUT_DIR\"), \"/skel.rs\"));\n",
        "    }\n",
        "}\n",
        "#[expect(clippy::too_many_lines)]\n",
        "mod ours {\n",
        "    include!(concat!(env!(\"CARGO_MANIFEST_DIR\"), \"/src/long.rs\"));\n",
        "}\n",
    );
    let found = exemptions(source, &mod_tree::strip_comments_and_strings(source));
    let seen: Vec<(usize, bool, bool)> = found
        .iter()
        .map(|e| (e.line, e.inner, e.generated))
        .collect();
    assert_eq!(
        seen,
        [
            (1, true, false),
            (5, false, false),
            (6, false, false),
            (8, false, true),
            (14, false, false)
        ]
    );
    let manifest = |text: &str| not_inheriting(&text.parse().unwrap());
    assert_eq!(manifest("[lints]\nworkspace = true\n"), None);
    assert_eq!(manifest("lints.workspace = true\n"), None);
    assert!(manifest("[package]\nname = \"new\"\n").is_some());
    assert!(manifest("[lints]\nworkspace = false\n").is_some());
    assert!(manifest("[lints.clippy]\ndbg_macro = \"warn\"\n").is_some());
    let root = |text: &str| missing_shared_lints(&text.parse().unwrap());
    assert_eq!(
        root("[workspace.lints.clippy]\ndbg_macro = \"warn\"\n"),
        ["too_many_lines"]
    );
    assert_eq!(
        root(
            "[workspace.lints.clippy]\ndbg_macro = \"deny\"\ntoo_many_lines = { level = \"allow\" }\n"
        ),
        ["too_many_lines"]
    );
    assert!(
        root("[workspace.lints.clippy]\ndbg_macro = \"warn\"\ntoo_many_lines = \"warn\"\n")
            .is_empty()
    );
}

//! A crate's modules as the compiler finds them (`mod NAME;` from lib.rs or main.rs
//! down), each with its source made plain for counting and reading paths: comments gone,
//! string contents blanked, and every `#[cfg(test)]` item cut out.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub struct Module {
    pub file: PathBuf,
    /// The source without comments, string contents or test-only items.
    pub plain: String,
    pub children: BTreeMap<String, usize>,
    pub parent: Option<usize>,
}

pub struct Crate {
    pub modules: Vec<Module>,
}

impl Crate {
    /// The crate whose root is `root` (a lib.rs or main.rs).
    pub fn read(root: &Path) -> Crate {
        let mut krate = Crate {
            modules: Vec::new(),
        };
        krate.add(root, None);
        krate
    }

    fn add(&mut self, file: &Path, parent: Option<usize>) -> usize {
        let source = std::fs::read_to_string(file)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", file.display()));
        let (plain, test_mods) = plain_source(&source);
        let index = self.modules.len();
        self.modules.push(Module {
            file: file.to_path_buf(),
            plain: plain.clone(),
            children: BTreeMap::new(),
            parent,
        });
        let dir = children_dir(file);
        for name in declared_modules(&plain) {
            if test_mods.contains(&name) {
                continue;
            }
            let flat = dir.join(format!("{name}.rs"));
            let nested = dir.join(&name).join("mod.rs");
            let child_file = if flat.exists() { flat } else { nested };
            if !child_file.exists() {
                continue; // an inline `mod NAME { ... }` is part of this file
            }
            let child = self.add(&child_file, Some(index));
            self.modules[index].children.insert(name, child);
        }
        index
    }

    /// The folder a file stands for: where its children live, or where it lies.
    pub fn folder(&self, index: usize) -> PathBuf {
        let m = &self.modules[index];
        if m.children.is_empty() {
            m.file.parent().unwrap().to_path_buf()
        } else {
            children_dir(&m.file)
        }
    }
}

fn children_dir(file: &Path) -> PathBuf {
    let dir = file.parent().unwrap();
    match file.file_name().and_then(|n| n.to_str()) {
        Some("lib.rs" | "main.rs" | "mod.rs") => dir.to_path_buf(),
        _ => dir.join(file.file_stem().unwrap()),
    }
}

/// `mod NAME;` declarations of a plain source (inline modules included: the caller
/// checks for a file).
fn declared_modules(plain: &str) -> Vec<String> {
    let words = crate::paths::words(plain);
    let mut names = Vec::new();
    for (i, w) in words.iter().enumerate() {
        if w.text == "mod" {
            if let Some(next) = words.get(i + 1) {
                if crate::paths::is_ident(&next.text) {
                    names.push(next.text.clone());
                }
            }
        }
    }
    names
}

/// Comments removed, the characters of string and char literals replaced by `s` (so a
/// line of a long string still counts as code), and each `#[cfg(test)]` item cut out.
/// Also returns the names of modules declared under `#[cfg(test)]`.
pub fn plain_source(source: &str) -> (String, Vec<String>) {
    let stripped = strip_comments_and_strings(source);
    cut_test_items(&stripped)
}

/// Comments removed and the characters of string and char literals replaced by `s`,
/// line for line.
pub fn strip_comments_and_strings(source: &str) -> String {
    let c: Vec<char> = source.chars().collect();
    let mut out = String::with_capacity(source.len());
    let mut i = 0;
    while i < c.len() {
        let at = |k: usize| c.get(k).copied().unwrap_or('\0');
        if c[i] == '/' && at(i + 1) == '/' {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if c[i] == '/' && at(i + 1) == '*' {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && at(i + 1) == '*' {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && at(i + 1) == '/' {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    if c[i] == '\n' {
                        out.push('\n');
                    }
                    i += 1;
                }
            }
        } else if let Some(hashes) = raw_string_start(&c, i) {
            // r"..." or r#"..."#: skip the prefix, blank to the closing quote and hashes
            while c[i] != '"' {
                out.push(c[i]);
                i += 1;
            }
            out.push('"');
            i += 1;
            while i < c.len() {
                if c[i] == '"' && (0..hashes).all(|k| at(i + 1 + k) == '#') {
                    out.push('"');
                    i += 1 + hashes;
                    break;
                }
                out.push(if c[i] == '\n' { '\n' } else { 's' });
                i += 1;
            }
        } else if c[i] == '"' {
            out.push('"');
            i += 1;
            while i < c.len() && c[i] != '"' {
                if c[i] == '\\' {
                    out.push('s');
                    i += 1;
                }
                if i < c.len() {
                    out.push(if c[i] == '\n' { '\n' } else { 's' });
                    i += 1;
                }
            }
            out.push('"');
            i += 1;
        } else if c[i] == '\'' && is_char_literal(&c, i) {
            out.push_str("'s'");
            i += 1;
            if c[i] == '\\' {
                i += 1;
            }
            i += 1;
            while i < c.len() && c[i] != '\'' {
                i += 1;
            }
            i += 1;
        } else {
            out.push(c[i]);
            i += 1;
        }
    }
    out
}

fn raw_string_start(c: &[char], i: usize) -> Option<usize> {
    let before = if i == 0 { ' ' } else { c[i - 1] };
    let starts = c[i] == 'r' || (c[i] == 'b' && c.get(i + 1) == Some(&'r'));
    if !starts || before.is_alphanumeric() || before == '_' {
        return None;
    }
    let mut k = if c[i] == 'b' { i + 2 } else { i + 1 };
    let mut hashes = 0;
    while c.get(k) == Some(&'#') {
        hashes += 1;
        k += 1;
    }
    (c.get(k) == Some(&'"')).then_some(hashes)
}

fn is_char_literal(c: &[char], i: usize) -> bool {
    match c.get(i + 1) {
        Some('\\') => true,
        Some(_) => c.get(i + 2) == Some(&'\''),
        None => false,
    }
}

fn cut_test_items(text: &str) -> (String, Vec<String>) {
    const MARK: &str = "#[cfg(test)]";
    let mut out = String::with_capacity(text.len());
    let mut test_mods = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find(MARK) {
        out.push_str(&rest[..at]);
        let item = &rest[at + MARK.len()..];
        let end = item_end(item);
        let words = crate::paths::words(&item[..end]);
        if let Some(pos) = words.iter().position(|w| w.text == "mod") {
            if let Some(name) = words.get(pos + 1) {
                test_mods.push(name.text.clone());
            }
        }
        // keep the line breaks so that line numbers stay right
        out.extend(item[..end].chars().filter(|c| *c == '\n'));
        rest = &item[end..];
    }
    out.push_str(rest);
    (out, test_mods)
}

/// Where the item that starts `text` ends: after its `;` or its balanced `{ }` block,
/// whichever comes first (further attributes included).
fn item_end(text: &str) -> usize {
    let mut depth = 0usize;
    let mut brackets = 0usize;
    for (i, ch) in text.char_indices() {
        match ch {
            '[' => brackets += 1,
            ']' => brackets = brackets.saturating_sub(1),
            ';' if depth == 0 && brackets == 0 => return i + 1,
            '{' => depth += 1,
            '}' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return i + 1;
                }
            }
            _ => {}
        }
    }
    text.len()
}

/// Lines of `plain` that hold anything but white space.
pub fn code_lines(plain: &str) -> usize {
    plain.lines().filter(|l| !l.trim().is_empty()).count()
}

//! Which file of its crate each file takes names from: the paths of `use` trees and of
//! the code (`crate::`, `super::`, `self::`, a child module, a name a `use` brought in),
//! each followed through re-exports to the file that defines the name.

use crate::mod_tree::Crate;
use std::collections::{BTreeMap, BTreeSet};

pub struct Word {
    pub text: String,
}

pub fn is_ident(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_alphabetic() || c == '_')
        && chars.all(|c| c.is_alphanumeric() || c == '_')
}

/// Identifiers, `::` and single punctuation characters (`$crate` reads as `crate`).
pub fn words(text: &str) -> Vec<Word> {
    let c: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < c.len() {
        if c[i].is_alphabetic() || c[i] == '_' {
            let start = i;
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            out.push(Word {
                text: c[start..i].iter().collect(),
            });
        } else if c[i] == ':' && c.get(i + 1) == Some(&':') {
            out.push(Word { text: "::".into() });
            i += 2;
        } else if c[i].is_whitespace() || c[i] == '$' {
            i += 1;
        } else {
            out.push(Word {
                text: c[i].to_string(),
            });
            i += 1;
        }
    }
    out
}

/// What a module's `use` statements bring in: a name (or alias) for a path as written,
/// and the paths of its glob imports.
#[derive(Default)]
pub struct Uses {
    pub named: BTreeMap<String, Vec<String>>,
    pub globs: Vec<Vec<String>>,
}

/// The `use` trees of a module, and the rest of its words (the code).
pub fn split_uses(words: &[Word]) -> (Uses, Vec<&Word>) {
    let mut uses = Uses::default();
    let mut code = Vec::new();
    let mut i = 0;
    while i < words.len() {
        if words[i].text == "use" && starts_statement(words, i) {
            let end = (i..words.len())
                .find(|&k| words[k].text == ";")
                .unwrap_or(words.len());
            let tree: Vec<&str> = words[i + 1..end].iter().map(|w| w.text.as_str()).collect();
            expand(&tree, &mut Vec::new(), &mut uses);
            i = end + 1;
        } else {
            code.push(&words[i]);
            i += 1;
        }
    }
    (uses, code)
}

fn starts_statement(words: &[Word], i: usize) -> bool {
    matches!(
        i.checked_sub(1).map(|k| words[k].text.as_str()),
        None | Some(";" | "{" | "}" | "]" | ")" | "pub")
    )
}

/// Expands a use tree (`a::b::{c, d as e, f::*}`) below `prefix`.
fn expand(tree: &[&str], prefix: &mut Vec<String>, uses: &mut Uses) {
    let depth = prefix.len();
    let mut i = 0;
    let leading = tree.first() == Some(&"::");
    if leading {
        return; // `::name` names another crate
    }
    while i < tree.len() {
        match tree[i] {
            "::" => {}
            "*" => uses.globs.push(prefix.clone()),
            "{" => {
                let close = matching(tree, i);
                for part in split_top(&tree[i + 1..close]) {
                    expand(part, prefix, uses);
                }
                i = close;
            }
            "as" => {
                if let Some(alias) = tree.get(i + 1) {
                    if *alias != "_" {
                        uses.named.insert(alias.to_string(), prefix.clone());
                    }
                }
                prefix.truncate(depth);
                return;
            }
            word if is_ident(word) => prefix.push(word.to_string()),
            _ => {}
        }
        i += 1;
    }
    if prefix.len() > depth && !tree.contains(&"{") && !tree.contains(&"*") {
        let mut path = prefix.clone();
        let name = if path.last().map(String::as_str) == Some("self") {
            path.pop();
            path.last().cloned()
        } else {
            path.last().cloned()
        };
        if let Some(name) = name {
            uses.named.insert(name, path);
        }
    }
    prefix.truncate(depth);
}

fn matching(tree: &[&str], open: usize) -> usize {
    let mut depth = 0;
    for (k, w) in tree.iter().enumerate().skip(open) {
        match *w {
            "{" => depth += 1,
            "}" => {
                depth -= 1;
                if depth == 0 {
                    return k;
                }
            }
            _ => {}
        }
    }
    tree.len()
}

fn split_top<'a>(tree: &'a [&'a str]) -> Vec<&'a [&'a str]> {
    let mut parts = Vec::new();
    let mut depth = 0;
    let mut start = 0;
    for (k, w) in tree.iter().enumerate() {
        match *w {
            "{" => depth += 1,
            "}" => depth -= 1,
            "," if depth == 0 => {
                parts.push(&tree[start..k]);
                start = k + 1;
            }
            _ => {}
        }
    }
    parts.push(&tree[start..]);
    parts
}

/// Names a module's file defines itself (items, and macros by `macro_rules!`).
pub fn defined_names(words: &[Word]) -> BTreeSet<String> {
    const KINDS: [&str; 10] = [
        "fn",
        "struct",
        "enum",
        "trait",
        "const",
        "static",
        "type",
        "union",
        "mod",
        "macro_rules",
    ];
    let mut names = BTreeSet::new();
    for (i, w) in words.iter().enumerate() {
        if KINDS.contains(&w.text.as_str()) {
            let mut k = i + 1;
            if words.get(k).map(|w| w.text.as_str()) == Some("!") {
                k += 1;
            }
            if let Some(name) = words.get(k) {
                if is_ident(&name.text) {
                    names.insert(name.text.clone());
                }
            }
        }
    }
    names
}

/// Each module's uses and definitions, read once.
pub struct Index<'a> {
    pub krate: &'a Crate,
    pub uses: Vec<Uses>,
    pub defined: Vec<BTreeSet<String>>,
}

impl<'a> Index<'a> {
    pub fn new(krate: &'a Crate) -> Index<'a> {
        let mut uses = Vec::new();
        let mut defined = Vec::new();
        for m in &krate.modules {
            let w = words(&m.plain);
            defined.push(defined_names(&w));
            uses.push(split_uses(&w).0);
        }
        Index {
            krate,
            uses,
            defined,
        }
    }

    /// The module whose file defines what `path` (as written in module `from`) names, or
    /// None for a path into another crate.
    pub fn resolve(&self, from: usize, path: &[String], hops: usize) -> Option<usize> {
        if hops > 16 || path.is_empty() {
            return None;
        }
        let modules = &self.krate.modules;
        let (mut at, mut rest) = match path[0].as_str() {
            "crate" => (0, &path[1..]),
            "self" => (from, &path[1..]),
            "super" => {
                let mut at = from;
                let mut rest = path;
                while rest.first().map(String::as_str) == Some("super") {
                    at = modules[at].parent?;
                    rest = &rest[1..];
                }
                (at, rest)
            }
            first => {
                if let Some(&child) = modules[from].children.get(first) {
                    (child, &path[1..])
                } else if let Some(target) = self.uses[from].named.get(first) {
                    if target.len() == 1 && target[0] == first {
                        return None; // `use serde;`: another crate
                    }
                    let mut whole = target.clone();
                    whole.extend_from_slice(&path[1..]);
                    return self.resolve(from, &whole, hops + 1);
                } else {
                    return None;
                }
            }
        };
        while let Some(&child) = rest.first().and_then(|n| modules[at].children.get(n)) {
            at = child;
            rest = &rest[1..];
        }
        let Some(name) = rest.first() else {
            return Some(at);
        };
        if self.defined[at].contains(name) {
            return Some(at);
        }
        if let Some(target) = self.uses[at].named.get(name) {
            let mut whole = target.clone();
            whole.extend_from_slice(&rest[1..]);
            // a name brought in from another crate ties to no file of this one
            return self.resolve(at, &whole, hops + 1);
        }
        for glob in &self.uses[at].globs {
            let mut whole = glob.clone();
            whole.extend_from_slice(rest);
            if let Some(found) = self.resolve(at, &whole, hops + 1) {
                if found != at {
                    return Some(found);
                }
            }
        }
        // not defined here nor brought in by name: a macro exported to the crate root
        // from elsewhere, or generated; no tie is drawn
        None
    }

    /// The modules whose files module `from` takes names from (itself left out).
    pub fn imports(&self, from: usize) -> BTreeSet<usize> {
        let w = words(&self.krate.modules[from].plain);
        let (uses, code) = split_uses(&w);
        let mut found = BTreeSet::new();
        for path in uses.named.values().chain(uses.globs.iter()) {
            found.extend(self.resolve(from, path, 0));
        }
        for path in code_paths(&code) {
            found.extend(self.resolve(from, &path, 0));
        }
        found.remove(&from);
        found
    }
}

/// `a::b::c` paths in code (a path after `::`, as in `::std::x`, belongs to another crate).
fn code_paths(code: &[&Word]) -> Vec<Vec<String>> {
    let mut paths = Vec::new();
    let mut i = 0;
    while i < code.len() {
        let after_colons = i > 0 && code[i - 1].text == "::";
        if is_ident(&code[i].text) && !after_colons {
            let mut path = vec![code[i].text.clone()];
            let mut k = i + 1;
            while k + 1 < code.len() && code[k].text == "::" && is_ident(&code[k + 1].text) {
                path.push(code[k + 1].text.clone());
                k += 2;
            }
            if path.len() > 1 {
                paths.push(path);
            }
            i = k;
        } else {
            i += 1;
        }
    }
    paths
}

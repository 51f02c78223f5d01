//! Every experiment module opens with what it measures, its method, its pitfalls
//! and its references (issue 17): a `//!` paragraph for each, `What:`, `Method`,
//! `Pitfalls:` (or a method paragraph that names where its pitfalls are) and
//! `References:`.

use std::path::{Path, PathBuf};

use oslab_lab::Registry;

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The experiment ids a module declares (beside `impl Experiment for`),
/// and its header.
fn experiment_modules() -> Vec<(Vec<String>, PathBuf, Vec<String>)> {
    let mut files = Vec::new();
    rust_files(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut files,
    );
    files
        .into_iter()
        .filter_map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            if !text.contains("impl Experiment for ") {
                return None;
            }
            let ids = text
                .split("id: \"")
                .skip(1)
                .filter_map(|t| Some(t.split('"').next()?.to_string()))
                .collect();
            let header = text
                .lines()
                .take_while(|l| l.starts_with("//!"))
                .map(|l| l.trim_start_matches("//!").trim().to_string())
                .collect();
            Some((ids, p, header))
        })
        .collect()
}

#[test]
fn every_experiment_module_has_what_method_pitfalls_references() {
    let modules = experiment_modules();
    let mut missing = Vec::new();
    for e in Registry::default().all() {
        if e.meta().internal {
            continue;
        }
        let id = e.meta().id;
        let Some((_, path, header)) = modules
            .iter()
            .find(|(ids, _, _)| ids.iter().any(|i| i == id))
        else {
            missing.push(format!("{id}: no module declares it"));
            continue;
        };
        let has = |start: &str| header.iter().any(|l| l.starts_with(start));
        for (heading, ok) in [
            ("What:", has("What:")),
            ("Method", has("Method")),
            (
                "Pitfalls:",
                has("Pitfalls:") || has("Method, rules and pitfalls:"),
            ),
            ("References:", has("References:")),
        ] {
            if !ok {
                missing.push(format!("{id} ({}): no {heading}", path.display()));
            }
        }
    }
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}

//! The recipe "add an experiment" in docs/architecture.md names files to edit: each
//! one it names must exist (the experiment it adds, `mem.example`, excepted).

use std::path::Path;

#[test]
fn every_path_the_add_an_experiment_recipe_names_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let doc = std::fs::read_to_string(root.join("docs/architecture.md")).unwrap();
    let recipe = doc
        .split("### Recipe: add an experiment")
        .nth(1)
        .expect("docs/architecture.md has the recipe 'add an experiment'");
    let recipe = recipe.split("\n## ").next().unwrap_or(recipe);
    let recipe = recipe.split("\n### ").next().unwrap_or(recipe);
    let paths: Vec<&str> = recipe
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|s| s.starts_with("crates/") && !s.contains("example"))
        .collect();
    assert!(paths.len() >= 4, "the recipe names its files: {paths:?}");
    for p in paths {
        assert!(
            root.join(p.trim_end_matches('/')).exists(),
            "docs/architecture.md, 'add an experiment': {p} does not exist"
        );
    }
}

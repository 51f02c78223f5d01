//! Every experiment folder has one shape (docs/architecture.md, "The shape of an
//! experiment"): `mod.rs` declares it and plans, `measure.rs` measures,
//! `judge.rs` judges; claims, when in a file of their own, are in `claims.rs`,
//! unit tests in `tests.rs` (or `tests/`).

use std::path::{Path, PathBuf};

fn experiment_folders(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            experiment_folders(&path, out);
        } else if path.file_name().is_some_and(|n| n == "mod.rs")
            && std::fs::read_to_string(&path)
                .unwrap()
                .contains("impl Experiment for ")
        {
            out.push(dir.to_path_buf());
        }
    }
}

#[test]
fn every_experiment_folder_has_the_same_files_for_the_same_jobs() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut folders = Vec::new();
    experiment_folders(&src, &mut folders);
    assert!(folders.len() >= 22, "experiment folders found: {folders:?}");
    for dir in folders {
        for needed in ["measure.rs", "judge.rs"] {
            assert!(
                dir.join(needed).is_file(),
                "{}: an experiment folder holds its {needed}",
                dir.display()
            );
        }
        for other_name in ["claim.rs", "verdicts.rs", "run.rs", "measurement.rs"] {
            assert!(
                !dir.join(other_name).exists(),
                "{}: {other_name} is named as the shape names it (claims.rs, measure.rs)",
                dir.display()
            );
        }
    }
}

#[test]
fn no_experiment_is_a_single_file() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut stack = vec![src];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.file_name().is_some_and(|n| n != "mod.rs")
                && path.extension().is_some_and(|e| e == "rs")
            {
                let text = std::fs::read_to_string(&path).unwrap();
                assert!(
                    !text.contains("impl Experiment for "),
                    "{}: an experiment is a folder, declared in its mod.rs",
                    path.display()
                );
            }
        }
    }
}

//! Helpers of the replay tests: judge a raw fixture captured on this machine.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use oslab_harness::rawfile::RawFile;
use oslab_harness::runner::judge_file;
use oslab_lab::Registry;
use oslab_model::{ExperimentResult, Status, Verdict};

/// tests/fixtures/raw, where `oslab run ID --quick --save-raw` files are kept as
/// `ID.raw.json` (or `.raw.json.gz`).
pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/raw")
}

/// The raw file of `id`.
pub fn raw_file(id: &str) -> RawFile {
    let path = ["raw.json", "raw.json.gz"]
        .iter()
        .map(|ext| fixtures().join(format!("{id}.{ext}")))
        .find(|p| p.exists())
        .unwrap_or_else(|| panic!("no raw fixture for {id}"));
    RawFile::read(&path, oslab_sys::infile::DEFAULT_MAX_INPUT).unwrap()
}

/// The fixture of `id` judged by today's analysis; it must complete.
pub fn judged(id: &str) -> ExperimentResult {
    judged_fixture(id, id)
}

/// The fixture `name` (a second recording of experiment `id`) judged by today's
/// analysis; it must complete.
pub fn judged_fixture(name: &str, id: &str) -> ExperimentResult {
    let reg = Registry::default();
    let r = judge_file(reg.get(id).unwrap(), &raw_file(name));
    assert_eq!(r.status, Status::Completed, "{name}: {:?}", r.status);
    r
}

pub fn verdict(r: &ExperimentResult, id: &str) -> Verdict {
    r.claim(id).unwrap_or_else(|| panic!("claim {id}")).verdict
}

pub fn finding(r: &ExperimentResult, name: &str) -> f64 {
    r.finding(name)
        .unwrap_or_else(|| panic!("finding {name}"))
        .value
}

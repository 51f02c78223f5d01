//! Raw data recorded on this machine (tests/fixtures/raw, written by
//! `oslab run ID --quick --save-raw`) judged again: the verdicts and key findings
//! are pinned, so a change of analysis that moves them shows here, without
//! measuring anything.

use std::path::Path;

use oslab_lab::Registry;
use oslab_lab::rawfile::RawFile;
use oslab_lab::runner::judge_file;
use oslab_model::{ExperimentResult, Status, Verdict};

fn judged(id: &str) -> ExperimentResult {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/raw");
    let path = ["raw.json", "raw.json.gz"]
        .iter()
        .map(|ext| dir.join(format!("{id}.{ext}")))
        .find(|p| p.exists())
        .unwrap_or_else(|| panic!("no raw fixture for {id}"));
    let file = RawFile::read(&path).unwrap();
    let reg = Registry::default();
    let r = judge_file(reg.get(id).unwrap(), &file);
    assert_eq!(r.status, Status::Completed, "{id}: {:?}", r.status);
    r
}

fn verdict(r: &ExperimentResult, id: &str) -> Verdict {
    r.claim(id).unwrap_or_else(|| panic!("claim {id}")).verdict
}

fn finding(r: &ExperimentResult, name: &str) -> f64 {
    r.finding(name)
        .unwrap_or_else(|| panic!("finding {name}"))
        .value
}

#[test]
fn every_experiment_in_the_shape_has_a_fixture() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/raw");
    for e in Registry::default().all() {
        if e.shaped().is_some() && !e.meta().internal {
            let id = e.meta().id;
            assert!(
                dir.join(format!("{id}.raw.json")).exists()
                    || dir.join(format!("{id}.raw.json.gz")).exists(),
                "no raw fixture for {id}"
            );
        }
    }
}

#[test]
fn cpu_syscall() {
    let r = judged("cpu.syscall");
    assert_eq!(verdict(&r, "syscall-is-mode-switch"), Verdict::Holds);
    // this guest pays for Spectre mitigations: gettid above the material's band
    assert_eq!(verdict(&r, "syscall-cost-tens-of-ns"), Verdict::Differs);
    let g = finding(&r, "gettid_ns");
    assert!((160.0..180.0).contains(&g), "{g}");
    assert!(finding(&r, "gettid_uncorrected_ns") > g);
    assert!(
        r.claim("syscall-cost-tens-of-ns")
            .unwrap()
            .why
            .contains("mitigations")
    );
}

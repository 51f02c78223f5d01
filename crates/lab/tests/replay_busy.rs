//! Verdicts a busy machine cannot flip (issue 53): raw data of `oslab run all
//! --quick --save-raw` recorded on a 2-vCPU KVM guest beside a busy loop pinned
//! on one CPU for the whole run (`fixtures/hog/busy/`, pair 2 of the three), and of the quiet run
//! right after it (`fixtures/hog/quiet/`), judged by today's analysis. Every
//! claim of the busy run has the quiet run's verdict or is not judged with the
//! interference named; none holds on one side and differs on the other. Replayed,
//! not measured, so the test does not depend on this machine's load.

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use oslab_harness::rawfile::RawFile;
use oslab_harness::runner::judge_file;
use oslab_lab::Registry;
use oslab_model::{ExperimentResult, Verdict};

/// Every result in `dir`, by experiment.
fn judged_all(dir: &Path) -> BTreeMap<String, ExperimentResult> {
    let reg = Registry::default();
    let mut out = BTreeMap::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let path = e.unwrap().path();
        let f = RawFile::read(&path, oslab_sys::infile::DEFAULT_MAX_INPUT).unwrap();
        let exp = reg.get(&f.experiment).unwrap();
        out.insert(f.experiment.clone(), judge_file(exp, &f));
    }
    assert!(
        out.len() >= 15,
        "{} raw files in {}",
        out.len(),
        dir.display()
    );
    out
}

#[test]
fn beside_a_busy_cpu_a_claim_keeps_its_quiet_verdict_or_is_not_judged() {
    let hog = common::fixtures().with_file_name("hog");
    let busy = judged_all(&hog.join("busy"));
    let quiet = judged_all(&hog.join("quiet"));
    let mut not_judged = 0;
    let mut compared = 0;
    for (id, b) in &busy {
        let q = &quiet[id];
        // the quiet run was quiet: nothing in it was put aside for interference
        for c in &q.claims {
            assert!(
                !c.why.starts_with("not judged: other"),
                "{id} {}: {}",
                c.id,
                c.why
            );
        }
        for c in &b.claims {
            let Some(qc) = q.claim(&c.id) else { continue };
            compared += 1;
            if c.verdict == qc.verdict {
                continue;
            }
            assert_eq!(
                c.verdict,
                Verdict::NotJudged,
                "{id} {}: busy {:?}, quiet {:?} ({})",
                c.id,
                c.verdict,
                qc.verdict,
                c.why
            );
            // put aside for the interference, its figures kept; or not judged
            // for a reason of its own (a figure the busy run did not yield)
            if c.why.starts_with("not judged: other programs kept") {
                assert!(c.observed != "not measured", "{id} {}: figures kept", c.id);
                not_judged += 1;
            } else {
                assert!(!c.why.is_empty(), "{id} {}: a reason", c.id);
            }
        }
    }
    assert!(compared >= 30, "{compared} claims compared");
    // the busy loop did disturb the run: the rule is what kept the verdicts apart
    assert!(not_judged >= 10, "{not_judged} claims put aside");
}

/// What the busy run recorded of other programs' work: about one CPU of two.
#[test]
fn the_busy_run_recorded_the_busy_loop() {
    let hog = common::fixtures().with_file_name("hog");
    let busy = judged_all(&hog.join("busy"));
    let shares: Vec<f64> = busy
        .values()
        .filter_map(|r| r.environment.load.others_cpu_fraction)
        .collect();
    assert!(shares.len() >= 15, "{shares:?}");
    let loaded = shares.iter().filter(|s| **s > 0.2).count();
    assert!(loaded * 2 > shares.len(), "{shares:?}");
    let quiet = judged_all(&hog.join("quiet"));
    for r in quiet.values() {
        let o = r.environment.load.others_cpu_fraction.unwrap_or(0.0);
        assert!(o < 0.1, "{}: {o}", r.experiment);
    }
}

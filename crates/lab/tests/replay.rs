//! Raw data recorded on this machine (tests/fixtures/raw, written by
//! `oslab run ID --quick --save-raw`) judged again: the verdicts and key findings
//! are pinned, so a change of analysis that moves them shows here, without
//! measuring anything. Each family has its own file (replay_cpu.rs, ...); this one
//! checks that every experiment has a fixture.

mod common;

use oslab_lab::Registry;

#[test]
fn every_experiment_has_a_fixture() {
    for e in Registry::default().all() {
        if !e.meta().internal {
            let id = e.meta().id;
            let dir = common::fixtures();
            assert!(
                dir.join(format!("{id}.raw.json")).exists()
                    || dir.join(format!("{id}.raw.json.gz")).exists(),
                "no raw fixture for {id}"
            );
        }
    }
}

/// The figure `oslab history` heads each row with, and holds against the
/// machine's history after a run, is one the experiment reports.
#[test]
fn every_headline_is_a_figure_its_experiment_reports() {
    for e in Registry::default().all() {
        let (id, headline) = (e.meta().id, e.headline());
        if e.meta().internal || headline.is_empty() {
            continue;
        }
        let r = common::judged(id);
        assert!(
            r.measurement(headline).is_some() || r.finding(headline).is_some(),
            "{id}: no figure {headline}"
        );
    }
}

use super::*;
use oslab_model::Verdict;
use oslab_services::dirty_rules;
use oslab_services::sawtooth::testing::{saw_raw, sawtooth_polls};

#[test]
fn expire_ten_writeback_five_gives_ten_seconds() {
    let p = dirty_rules::periodic(4 << 20, 10.0, 5.0);
    assert_eq!(p.period_s, 10.0);
    assert_eq!(p.peak_mib, 40.0);
    // expire 12 s with 5 s wake-ups: the third wake-up (15 s) writes
    assert_eq!(dirty_rules::periodic(1 << 20, 12.0, 5.0).period_s, 15.0);
}

fn plan() -> Plan {
    Plan {
        rate: 4 << 20,
        expire: 2.0,
        interval: 1.0,
        duration: 20.0,
    }
}

#[test]
fn every_verdict() {
    let claim = |raw: &SawRaw| judge::judge(&plan(), raw, 1).claims[0].clone();
    // 8 MiB every 2 s, down to 0
    let c = claim(&saw_raw(sawtooth_polls(4.0, 8.0, 0.0, 20.0), 0));
    assert_eq!(c.verdict, Verdict::Holds, "{c:?}");
    assert!(
        c.expectation.contains("ceil(expire / writeback interval)"),
        "{}",
        c.expectation
    );
    // every 3 s: one interval late (the file dirtied again just after each pass)
    let c = claim(&saw_raw(sawtooth_polls(4.0, 12.0, 0.0, 20.0), 0));
    assert_eq!(c.verdict, Verdict::Differs);
    assert!(
        c.why.contains("one writeback interval (1 s) later"),
        "{}",
        c.why
    );
    // every 4 s: later still
    let c = claim(&saw_raw(sawtooth_polls(4.0, 16.0, 0.0, 20.0), 0));
    assert!(
        c.why.contains("later than 2.0 s: the flusher wakes"),
        "{}",
        c.why
    );
    // other programs' dirty pages keep the troughs up
    let c = claim(&saw_raw(sawtooth_polls(4.0, 14.0, 6.0, 20.0), 6));
    assert_eq!(c.verdict, Verdict::Differs);
    assert!(c.why.contains("other programs kept 6.0 MiB"), "{}", c.why);
    assert!(
        c.why.contains("own dirty pages sawed between 7.6"),
        "{}",
        c.why
    );
    // no drop at all
    let c = claim(&saw_raw(sawtooth_polls(4.0, 100.0, 0.0, 20.0), 0));
    assert_eq!(c.verdict, Verdict::NotJudged);
}

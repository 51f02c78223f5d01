//! Replay of the page-cache experiments' raw fixtures (see replay.rs), captured on
//! this KVM guest: with `oslab run all --quick` on a quiet machine (`ID.raw.json`)
//! and, for io.write, with `--set size=64MiB --repeat 1` while parallel builds kept
//! both CPUs busy (`io.write.busy.raw.json.gz`), where new page-cache pages cost 4x
//! more to touch.

mod common;
use common::{finding, judged, verdict};
use oslab_harness::rawfile::RawFile;
use oslab_harness::runner::judge_file;
use oslab_lab::Registry;
use oslab_model::{ExperimentResult, Status, Verdict};

/// An extra fixture of `id`, `ID.NAME.raw.json[.gz]`, judged.
fn judged_extra(id: &str, name: &str) -> ExperimentResult {
    let path = ["raw.json", "raw.json.gz"]
        .iter()
        .map(|ext| common::fixtures().join(format!("{id}.{name}.{ext}")))
        .find(|p| p.exists())
        .unwrap_or_else(|| panic!("no fixture {id}.{name}"));
    let reg = Registry::default();
    let r = judge_file(
        reg.get(id).unwrap(),
        &RawFile::read(&path, oslab_sys::infile::DEFAULT_MAX_INPUT).unwrap(),
    );
    assert_eq!(r.status, Status::Completed, "{:?}", r.status);
    r
}

#[test]
fn io_read() {
    let r = judged("io.read");
    assert_eq!(verdict(&r, "warm-read-faster"), Verdict::Holds);
    assert_eq!(verdict(&r, "cache-grows-once"), Verdict::Holds);
    let s = finding(&r, "speedup_warm_vs_cold");
    assert!((10.0..30.0).contains(&s), "{s}");
    assert_eq!(finding(&r, "file_bytes"), (256 << 20) as f64);
    assert_eq!(finding(&r, "warm_device_share"), 0.0);
    assert!((0.99..1.05).contains(&finding(&r, "cold_device_share")));
    assert_eq!(finding(&r, "cached_before_cold"), 0.0);
    assert_eq!(finding(&r, "cached_after_warm"), 1.0);
    assert_eq!(r.params["size_bytes"], 256 << 20);
    assert_eq!(r.params["device"], "vda");
    assert!(
        !r.system.is_empty(),
        "the sar series comes from the raw snapshots"
    );
}

#[test]
fn io_write() {
    let r = judged("io.write");
    assert_eq!(verdict(&r, "buffered-faster-than-direct"), Verdict::Holds);
    assert_eq!(verdict(&r, "device-work-later"), Verdict::Holds);
    assert_eq!(finding(&r, "device_during.buffered.1M"), 0.0);
    assert!((0.99..1.05).contains(&finding(&r, "device_after.buffered.1M")));
    // O_DSYNC at 4 KiB commits the journal with every write: twice the bytes written,
    // a ratio with its unit and the reason it can pass 1
    let dsync = r.finding("device_during.dsync.4K").unwrap();
    assert!((1.5..3.0).contains(&dsync.value), "{dsync:?}");
    assert_eq!(dsync.unit, "x");
    assert!(dsync.detail.contains("journal"), "{}", dsync.detail);
    let t = finding(&r, "first_touch_ns_per_page");
    assert!((1000.0..4000.0).contains(&t), "{t}");
    assert_eq!(r.params["size"], 256 << 20);
    // the fixture's guest reports free pages: the order of the buffered cells matters
    assert!(
        r.notes
            .iter()
            .any(|n| n.contains("first buffered write") && n.contains("buffered 4K figure")),
        "{:?}",
        r.notes
    );
}

#[test]
fn io_write_on_a_busy_guest() {
    let r = judged_extra("io.write", "busy");
    // O_DIRECT to the host-cached virtual disk beat new page-cache pages at 6.7 us each
    assert_eq!(verdict(&r, "buffered-faster-than-direct"), Verdict::Differs);
    let why = &r.claim("buffered-faster-than-direct").unwrap().why;
    assert!(why.contains("virtual disk under KVM"), "{why}");
    assert!(why.contains("free page reporting"), "{why}");
    assert_eq!(verdict(&r, "device-work-later"), Verdict::Holds);
    let t = finding(&r, "first_touch_ns_per_page");
    assert!((5000.0..8000.0).contains(&t), "{t}");
    // another writer's bytes on the same device during 4 KiB O_DSYNC writes
    assert!(finding(&r, "device_during.dsync.4K") > 5.0);
}

//! io.write judged on synthetic raw data: every verdict of both claims, and the
//! "why" of each environment (hypervisor or not, write cache, rotational).

use oslab_model::{Claim, Verdict};

use super::*;
use oslab_harness::testing::captured_env as test_env;

const MIB: u64 = 1 << 20;

fn plan() -> Plan {
    Plan {
        size: 64 * MIB,
        samples: 1,
        block_sizes: vec![4 << 10, MIB],
        small_cap: 32 * MIB,
    }
}

/// A run writing 64 MiB at `mb_s`, with `during` and `after` device bytes per byte.
fn run(mb_s: f64, during: f64, after: f64) -> WriteRun {
    let bytes = 64 * MIB;
    WriteRun {
        bytes,
        write_s: bytes as f64 / 1e6 / mb_s,
        sync_s: Some(0.1),
        dirty_after: Some(bytes),
        writeback_after: Some(0),
        dev_during: (bytes as f64 * during) as u64,
        dev_after: (bytes as f64 * after) as u64,
    }
}

fn cell(mode: &str, runs: Vec<WriteRun>) -> Cell {
    Cell {
        mode: mode.into(),
        block: MIB,
        runs,
    }
}

/// Buffered at `buffered` MB/s with the given device shares, O_DIRECT at `direct`.
fn raw(buffered: f64, direct: Option<f64>, during: f64, after: f64) -> Raw {
    let mut cells = vec![cell("buffered", vec![run(buffered, during, after)])];
    if let Some(d) = direct {
        cells.push(cell("direct", vec![run(d, 1.0, 0.0)]));
    }
    cells.push(cell("dsync", vec![run(100.0, 2.0, 0.0)]));
    Raw {
        disk: Some(DiskFacts {
            device: "sda1".into(),
            disk: "sda".into(),
            write_cache: Some("write back".into()),
            rotational: Some(false),
        }),
        page_bytes: 4096,
        cells,
        refused: None,
        touch: TouchProbe {
            bytes: 64 * MIB,
            first_ns: 16384 * 2000,
            again_ns: 16384 * 50,
        },
        overwrite: OverwriteProbe {
            bytes: 64 * MIB,
            secs: 0.02,
        },
        snapshots: vec![],
    }
}

fn claim(out: &Output, id: &str) -> Claim {
    out.claims.iter().find(|c| c.id == id).unwrap().clone()
}

fn buffered_claim(r: &Raw, hypervisor: Option<&str>) -> Claim {
    claim(
        &judge::judge(&plan(), r, &test_env(hypervisor)),
        "buffered-faster-than-direct",
    )
}

#[test]
fn buffered_faster_every_verdict_and_environment() {
    let c = buffered_claim(&raw(1300.0, Some(430.0), 0.0, 1.0), None);
    assert_eq!(c.verdict, Verdict::Holds, "{c:?}");
    assert_eq!(
        c.expectation,
        "buffered write() rate over O_DIRECT's, 1 MiB blocks at least 1.50x"
    );
    // under a hypervisor: the virtual disk and the balloon
    let c = buffered_claim(&raw(800.0, Some(1000.0), 0.0, 1.0), Some("KVM"));
    assert_eq!(c.verdict, Verdict::Differs);
    assert!(c.why.contains("virtual disk under KVM"), "{}", c.why);
    assert!(c.why.contains("2000 ns"), "{}", c.why);
    // bare metal: the device's own cache, or a solid-state disk, never a host
    let mut r = raw(800.0, Some(1000.0), 0.0, 1.0);
    let c = buffered_claim(&r, None);
    assert!(c.why.contains("volatile write cache"), "{}", c.why);
    assert!(!c.why.contains("host"), "{}", c.why);
    r.disk.as_mut().unwrap().write_cache = Some("write through".into());
    let c = buffered_claim(&r, None);
    assert!(c.why.contains("solid-state"), "{}", c.why);
    r.disk.as_mut().unwrap().rotational = Some(true);
    let c = buffered_claim(&r, None);
    assert!(
        c.why.contains("sda ('write through' cache)") || c.why.contains("sda (it reports"),
        "{}",
        c.why
    );
    assert!(
        !c.why.contains("host") && !c.why.contains("solid"),
        "{}",
        c.why
    );
    // O_DIRECT refused: not testable; missing for another reason: not judged
    let mut r = raw(800.0, None, 0.0, 1.0);
    assert_eq!(buffered_claim(&r, None).verdict, Verdict::NotJudged);
    r.refused = Some("the file system refuses O_DIRECT (Invalid argument)".into());
    let c = buffered_claim(&r, None);
    assert_eq!(c.verdict, Verdict::NotTestable);
    assert!(c.why.contains("refuses O_DIRECT"), "{}", c.why);
}

#[test]
fn device_work_later_every_verdict() {
    let j = |r: &Raw| {
        claim(
            &judge::judge(&plan(), r, &test_env(None)),
            "device-work-later",
        )
    };
    assert_eq!(
        j(&raw(1300.0, Some(400.0), 0.05, 1.0)).verdict,
        Verdict::Holds
    );
    let c = j(&raw(1300.0, Some(400.0), 0.5, 0.5));
    assert_eq!(c.verdict, Verdict::Differs);
    assert!(c.why.contains("write back started"), "{}", c.why);
    let c = j(&raw(1300.0, Some(400.0), 0.0, 0.5));
    assert_eq!(c.verdict, Verdict::Differs);
    assert!(c.why.contains("fewer bytes"), "{}", c.why);
    let mut r = raw(1300.0, Some(400.0), 0.0, 1.0);
    r.disk = None;
    assert_eq!(j(&r).verdict, Verdict::NotTestable);
}

#[test]
fn device_ratios_above_one_are_ratios_with_a_reason() {
    let out = judge::judge(
        &plan(),
        &raw(1300.0, Some(400.0), 0.0, 1.0),
        &test_env(None),
    );
    let f = out
        .findings
        .iter()
        .find(|f| f.name == "device_during.dsync.1M")
        .unwrap();
    assert_eq!(f.value, 2.0);
    assert_eq!(f.unit, "x");
    assert!(f.detail.contains("can put it above 1"), "{}", f.detail);
    let names: Vec<&str> = out.measurements.iter().map(|m| m.name.as_str()).collect();
    assert!(names.contains(&"sync_s.buffered.1M") && names.contains(&"write_rate.direct.1M"));
    let touch = out
        .findings
        .iter()
        .find(|f| f.name == "first_touch_ns_per_page")
        .unwrap();
    assert_eq!(touch.value, 2000.0);
}

#[test]
fn the_page_reuse_note_comes_with_free_page_reporting_and_names_the_first_figure() {
    let note = |samples: usize, reporting: Option<bool>| {
        let mut env = test_env(Some("KVM"));
        env.machine.hypervisor.balloon_free_page_reporting = reporting;
        let p = Plan { samples, ..plan() };
        let raw = raw(800.0, Some(1000.0), 0.0, 1.0);
        judge::judge(&p, &raw, &env)
            .notes
            .into_iter()
            .find(|n| n.contains("smallest block first"))
    };
    let one = note(1, Some(true)).expect("the note");
    assert!(
        one.contains("that is the whole buffered 4K figure"),
        "{one}"
    );
    let three = note(3, Some(true)).expect("the note");
    assert!(three.contains("one of the 3 runs whose median"), "{three}");
    assert_eq!(note(1, Some(false)), None);
    assert_eq!(note(1, None), None);
}

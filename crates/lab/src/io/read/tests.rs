//! io.read judged on synthetic raw data: every verdict of both claims.

use oslab_model::Verdict;

use super::*;
use oslab_harness::testing::captured_env as env;
use oslab_services::disk_probe::DiskFacts;

const SIZE: u64 = 64 << 20;

fn plan() -> Plan {
    Plan {
        size: SIZE,
        drop_caches: false,
        samples: 2,
        size_bytes: SIZE,
        available_bytes: Some(1 << 30),
    }
}

/// A read of the whole file in `secs` with `dev` bytes from the device and the cache
/// growing by `grow` bytes.
fn op(secs: f64, dev: u64, grow: i64) -> OpStats {
    OpStats {
        secs,
        dev_read_bytes: dev,
        cache_delta_bytes: grow,
        ..Default::default()
    }
}

/// Two rounds: cold `cold_s` and warm `warm_s`, the warm read fetching `warm_dev`.
fn raw(cold_s: f64, warm_s: f64, warm_dev: u64, grow_cold: i64, grow_warm: i64) -> Raw {
    let pages = SIZE / 4096;
    let round = Round {
        cold: op(cold_s, SIZE, grow_cold),
        warm: op(warm_s, warm_dev, grow_warm),
        mmap_cold: op(cold_s, SIZE, 0),
        mmap_warm: op(warm_s, 0, 0),
        cached_before_cold: Some(0),
        cached_after_cold: Some(pages),
        cached_after_warm: Some(pages),
    };
    Raw {
        disk: Some(DiskFacts {
            device: "vda".into(),
            disk: "vda".into(),
            write_cache: Some("write back".into()),
            rotational: Some(true),
        }),
        page_bytes: 4096,
        residency_method: Some("cachestat".into()),
        create: op(0.5, 0, 0),
        rounds: vec![round.clone(), round],
        snapshots: vec![],
    }
}

fn judged(r: &Raw, hypervisor: Option<&str>) -> Output {
    judge::judge(&plan(), r, &env(hypervisor))
}

fn claim<'a>(out: &'a Output, id: &str) -> &'a oslab_model::Claim {
    out.claims.iter().find(|c| c.id == id).unwrap()
}

#[test]
fn warm_read_faster_every_verdict() {
    let ok = judged(&raw(0.5, 0.05, 0, SIZE as i64, 0), Some("KVM"));
    let c = claim(&ok, "warm-read-faster");
    assert_eq!(c.verdict, Verdict::Holds, "{c:?}");
    assert!(c.expectation.contains("at least 3"), "{}", c.expectation);
    // the warm read went to the device
    let out = judged(&raw(0.5, 0.05, SIZE / 2, SIZE as i64, 0), None);
    let c = claim(&out, "warm-read-faster");
    assert_eq!(c.verdict, Verdict::Differs);
    assert!(c.why.contains("still went to the device"), "{}", c.why);
    // cold at 3.4 GB/s: under a hypervisor the host's cache, on bare metal a fast device
    let fast = raw(0.02, 0.01, 0, SIZE as i64, 0);
    let c = claim(&judged(&fast, Some("KVM")), "warm-read-faster").clone();
    assert_eq!(c.verdict, Verdict::Differs);
    assert!(c.why.contains("under KVM the host caches"), "{}", c.why);
    let c = claim(&judged(&fast, None), "warm-read-faster").clone();
    assert!(!c.why.contains("host"), "{}", c.why);
    assert!(c.why.contains("similar speed"), "{}", c.why);
    // not judged without a warm time
    let out = judged(&raw(0.5, 0.0, 0, SIZE as i64, 0), None);
    assert_eq!(claim(&out, "warm-read-faster").verdict, Verdict::NotJudged);
}

#[test]
fn cache_grows_once_every_verdict() {
    let out = judged(&raw(0.5, 0.05, 0, SIZE as i64, 0), None);
    assert_eq!(claim(&out, "cache-grows-once").verdict, Verdict::Holds);
    let out = judged(&raw(0.5, 0.05, 0, SIZE as i64 / 2, 0), None);
    let c = claim(&out, "cache-grows-once");
    assert_eq!(c.verdict, Verdict::Differs);
    assert!(c.why.contains("global"), "{}", c.why);
    let out = judged(&raw(0.5, 0.05, 0, SIZE as i64, -(SIZE as i64) / 4), None);
    let c = claim(&out, "cache-grows-once");
    assert_eq!(c.verdict, Verdict::Differs);
    assert!(c.why.contains("moved"), "{}", c.why);
}

#[test]
fn findings_keep_their_names_and_ratios_say_what_they_are() {
    let out = judged(&raw(0.5, 0.05, 0, SIZE as i64, 0), None);
    let f = |n: &str| out.findings.iter().find(|f| f.name == n).unwrap();
    assert!((f("speedup_warm_vs_cold").value - 10.0).abs() < 1e-9);
    assert_eq!(f("cold_device_share").value, 1.0);
    assert_eq!(f("cold_device_share").unit, "x");
    assert_eq!(f("cached_after_warm").value, 1.0);
    assert_eq!(out.measurements.len(), 16);
    assert_eq!(out.params["device"], "vda");
    let mut r = raw(0.5, 0.05, 0, SIZE as i64, 0);
    r.rounds.iter_mut().for_each(|x| x.cached_after_warm = None);
    r.residency_method = None;
    let out = judged(&r, None);
    let v = out
        .findings
        .iter()
        .find(|f| f.name == "cached_after_warm")
        .unwrap();
    assert!(v.value.is_nan());
}

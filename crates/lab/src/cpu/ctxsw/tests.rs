//! Synthetic raw data through `cpu.ctxsw`'s judge: every verdict of every claim.

use oslab_model::{Environment, Verdict};
use oslab_sys::parse::procstat::CpuTimes;

use super::*;

const RTS: u64 = 1000;
const ONE: (u64, u64) = (1, 1);
const TWO: (u64, u64) = (1, 2);

/// The 2-CPU KVM guest of the sys fixtures, under `hv` (None: bare metal).
pub(crate) fn env(hv: Option<&str>, busy: f64) -> Environment {
    let mut env = oslab_harness::testing::captured_env_in(hv, "/tmp");
    env.timer = "CLOCK_MONOTONIC".into();
    env.load.cpu_busy_fraction = busy;
    env
}

/// One clean launch: a batch per figure (ns per handoff), seen on `cpus`.
fn launch(ns: &[f64], cpus: (u64, u64)) -> LaunchRaw {
    let n = RTS * ns.len() as u64;
    LaunchRaw {
        round_trips: RTS,
        warmup: 350,
        batch_ns: ns.iter().map(|x| (x * 2.0 * RTS as f64) as u64).collect(),
        own_voluntary: n / 2,
        own_involuntary: n / 2,
        peer_voluntary: n + 350,
        peer_involuntary: 0,
        own_cpus: cpus.0,
        peer_cpus: cpus.1,
    }
}

fn cell(tasks: &str, mech: &str, place: &str, launches: Vec<LaunchRaw>) -> CellRaw {
    CellRaw {
        tasks: tasks.into(),
        mechanism: mech.into(),
        placement: place.into(),
        launches,
        stat_before: Some(CpuTimes::default()),
        stat_after: Some(CpuTimes {
            user: 1000,
            ..Default::default()
        }),
    }
}

/// Same-CPU processes at `pinned`, threads at `threads` ns; the unpinned futex
/// cell from `unpinned` launches; the other cells steady.
fn raw(pinned: f64, threads: f64, unpinned: Vec<LaunchRaw>) -> Raw {
    let steady = |x: f64| vec![launch(&[x, x * 1.01, x * 0.99], ONE)];
    let mut cells = Vec::new();
    for tasks in ["processes", "threads"] {
        let same = if tasks == "processes" {
            pinned
        } else {
            threads
        };
        for mech in ["futex", "pipe"] {
            cells.push(cell(tasks, mech, "same-cpu", steady(same)));
            cells.push(cell(
                tasks,
                mech,
                "cross-cpu.same-l3",
                vec![launch(&[30e3; 3], TWO)],
            ));
            let free = if tasks == "processes" && mech == "futex" {
                unpinned.clone()
            } else {
                vec![launch(&[1100.0, 31e3, 1050.0], TWO)]
            };
            cells.push(cell(tasks, mech, "unpinned", free));
        }
    }
    Raw {
        cells,
        futex_wake_no_waiter_ns: vec![100.0; 3],
        futex_wait_mismatch_ns: vec![120.0; 3],
        pipe_write_read_ns: Some(vec![300.0; 3]),
        perf: Some(
            [("processes", "same-cpu"), ("processes", "unpinned")]
                .iter()
                .map(|(t, p)| PerfRaw {
                    tasks: t.to_string(),
                    placement: p.to_string(),
                    cpu: (*p == "same-cpu").then_some(0),
                    loops: 3000,
                    usecs_per_op: vec![Some(2.0 * pinned / 1000.0); 3],
                })
                .collect(),
        ),
        pcid: Some(true),
        kernel: Default::default(),
    }
}

fn plan() -> Plan {
    Plan {
        launches: 3,
        samples: 3,
        round_trips: RTS,
        placements: vec![],
        perf_runs: 3,
        perf_loops: 3000,
    }
}

fn judged(r: &Raw, e: &Environment) -> Output {
    judge::judge(&plan(), r, e)
}

fn claim<'a>(o: &'a Output, id: &str) -> &'a oslab_model::Claim {
    o.claims.iter().find(|c| c.id == id).unwrap()
}

fn finding<'a>(o: &'a Output, name: &str) -> &'a oslab_model::Finding {
    o.findings.iter().find(|f| f.name == name).unwrap()
}

#[test]
fn pinning_holds_and_differs_on_one_mode() {
    let kvm = env(Some("KVM"), 0.3);
    let o = judged(&raw(1000.0, 900.0, vec![launch(&[2000.0; 3], TWO)]), &kvm);
    let c = claim(&o, "pinning-cheaper");
    assert_eq!(c.verdict, Verdict::Holds, "{}", c.observed);
    assert_eq!(
        c.expectation,
        "saving of pinned vs unpinned between 45 % and 70 %"
    );
    // every handoff a cross-CPU wake-up: the why follows the hypervisor
    let far = raw(1000.0, 900.0, vec![launch(&[30e3; 3], TWO)]);
    let c = claim(&judged(&far, &kvm), "pinning-cheaper").clone();
    assert_eq!(c.verdict, Verdict::Differs);
    assert!(
        c.why.contains("under KVM") && c.why.contains("idle 70 %"),
        "{}",
        c.why
    );
    let c = claim(&judged(&far, &env(None, 0.9)), "pinning-cheaper").clone();
    assert!(
        c.why.contains("bare metal") && !c.why.contains("vCPU"),
        "{}",
        c.why
    );
    assert!(c.why.contains("90 % busy"), "{}", c.why);
    // cheaper than the band: kept on one CPU, or a cheap cross-CPU wake-up
    let near = raw(1000.0, 900.0, vec![launch(&[1100.0; 3], ONE)]);
    let c = claim(&judged(&near, &kvm), "pinning-cheaper").clone();
    assert_eq!(c.verdict, Verdict::Differs);
    assert!(c.why.contains("kept both tasks on cpu0"), "{}", c.why);
    let cheap = raw(1000.0, 900.0, vec![launch(&[1100.0; 3], TWO)]);
    let c = claim(&judged(&cheap, &kvm), "pinning-cheaper").clone();
    assert!(c.why.contains("waking another CPU is cheap"), "{}", c.why);
}

#[test]
fn a_bimodal_unpinned_figure_is_judged_by_its_lower_mode_whatever_the_shares() {
    let kvm = env(Some("KVM"), 0.3);
    let one = || launch(&[1100.0, 1050.0, 1120.0], ONE);
    let two = || launch(&[30e3, 31e3, 29.5e3], TWO);
    // two launches on one CPU and one on two, then the other way round: the median
    // moves from one mode to the other, the verdict and figure do not
    let a = judged(&raw(1000.0, 900.0, vec![one(), one(), two()]), &kvm);
    let b = judged(&raw(1000.0, 900.0, vec![one(), two(), two()]), &kvm);
    let (ca, cb) = (claim(&a, "pinning-cheaper"), claim(&b, "pinning-cheaper"));
    assert_eq!(ca.verdict, Verdict::Differs);
    assert_eq!(cb.verdict, Verdict::Differs);
    assert!(ca.expectation.contains("lower mode"), "{}", ca.expectation);
    assert!(ca.observed.contains("two modes"), "{}", ca.observed);
    assert_eq!(
        ca.observed.split(';').next(),
        cb.observed.split(';').next(),
        "same lower mode"
    );
    assert!(ca.why.contains("cheaper unpinned mode") && ca.why.contains("mix of placements"));
    assert_eq!(finding(&a, "unpinned_modes.processes.futex").value, 2.0);
    // both modes dearer than the band's low end: holds against the lower mode
    let lo = || launch(&[2000.0, 2050.0, 1980.0], TWO);
    let h = judged(&raw(1000.0, 900.0, vec![lo(), two(), two()]), &kvm);
    let c = claim(&h, "pinning-cheaper");
    assert_eq!(c.verdict, Verdict::Holds, "{}", c.observed);
    assert!(c.why.contains("even than the cheaper"), "{}", c.why);
}

#[test]
fn unpinned_cheaper_than_pinned_is_explained_by_the_load() {
    let r = raw(3000.0, 2700.0, vec![launch(&[1100.0; 3], TWO)]);
    let mut busy = env(Some("KVM"), 0.9);
    busy.load.warning = Some("other programs kept about 80 % of the CPUs busy".into());
    let c = claim(&judged(&r, &busy), "pinning-cheaper").clone();
    assert_eq!(c.verdict, Verdict::Differs);
    assert!(
        c.why.contains("while other programs kept") && c.why.contains("cpu 0"),
        "{}",
        c.why
    );
    let c = claim(&judged(&r, &env(Some("KVM"), 0.5)), "pinning-cheaper").clone();
    assert!(c.why.contains("no other load recorded"), "{}", c.why);
    // far dearer unpinned, yet seen on one CPU only
    let r = raw(1000.0, 900.0, vec![launch(&[30e3; 3], ONE)]);
    let c = claim(&judged(&r, &env(None, 0.1)), "pinning-cheaper").clone();
    assert!(c.why.contains("seen only on cpus 0 / 0"), "{}", c.why);
}

#[test]
fn the_why_of_two_modes_follows_where_each_ran() {
    // one launch, both modes on cpu0: the same placement, disturbed
    let mut busy = env(Some("KVM"), 0.95);
    busy.load.warning = Some("other programs kept about 86 % of the CPUs busy".into());
    let same = raw(1000.0, 900.0, vec![launch(&[1100.0, 7800.0, 7900.0], ONE)]);
    let c = claim(&judged(&same, &busy), "pinning-cheaper").clone();
    assert_eq!(c.verdict, Verdict::Differs);
    assert!(
        c.why.contains("kept both tasks on cpu0") && c.why.contains("disturbed by other work"),
        "{}",
        c.why
    );
    // one launch on both CPUs gave both modes: the record cannot place the batches
    let mixed = raw(1000.0, 900.0, vec![launch(&[1100.0, 30e3, 31e3], TWO)]);
    let c = claim(&judged(&mixed, &busy), "pinning-cheaper").clone();
    assert!(c.why.contains("cannot tell where"), "{}", c.why);
    assert!(c.why.contains("mix of placements"), "{}", c.why);
}

#[test]
fn a_bimodal_pinned_figure_is_judged_by_its_lower_mode_too() {
    let mut r = raw(1000.0, 900.0, vec![launch(&[5000.0; 3], TWO)]);
    // other work on the pinned CPU during two of three batches
    r.cells[0].launches = vec![launch(&[2500.0, 8000.0, 8600.0], ONE)];
    let o = judged(&r, &env(Some("KVM"), 0.9));
    let c = claim(&o, "pinning-cheaper");
    assert_eq!(c.verdict, Verdict::Holds, "{}", c.observed);
    assert!(
        c.expectation
            .starts_with("saving of pinned (lower mode) vs unpinned between"),
        "{}",
        c.expectation
    );
    assert!(
        c.observed.contains("pinned 2500 ns (two modes"),
        "{}",
        c.observed
    );
    let t = claim(&o, "threads-cheaper");
    assert!(
        t.expectation.contains("vs processes (lower mode)"),
        "{}",
        t.expectation
    );
    assert!(t.why.contains("not steady"), "{}", t.why);
}

#[test]
fn pinning_is_not_judged_without_its_cells() {
    let mut r = raw(1000.0, 900.0, vec![]);
    r.cells.retain(|c| c.key() != "processes.futex.unpinned");
    let c = claim(&judged(&r, &env(None, 0.1)), "pinning-cheaper").clone();
    assert_eq!(c.verdict, Verdict::NotJudged);
    assert!(c.why.contains("processes.futex.unpinned"), "{}", c.why);
}

#[test]
fn threads_every_verdict() {
    let e = env(Some("KVM"), 0.3);
    let free = || vec![launch(&[2000.0; 3], TWO)];
    let v = |r: &Raw| claim(&judged(r, &e), "threads-cheaper").clone();
    assert_eq!(v(&raw(1000.0, 900.0, free())).verdict, Verdict::Holds);
    let c = v(&raw(1000.0, 990.0, free()));
    assert_eq!(c.verdict, Verdict::Differs);
    assert!(c.why.contains("has PCID"), "{}", c.why);
    let mut r = raw(1000.0, 990.0, free());
    r.pcid = Some(false);
    assert!(v(&r).why.contains("no PCID"));
    r.pcid = None;
    assert!(v(&r).why.contains("lists no flags"));
    let c = v(&raw(1000.0, 700.0, free()));
    assert_eq!(c.verdict, Verdict::Differs);
    assert!(c.why.contains("costs more here"), "{}", c.why);
    let mut r = raw(1000.0, 900.0, free());
    r.cells.retain(|c| c.key() != "threads.futex.same-cpu");
    assert_eq!(v(&r).verdict, Verdict::NotJudged);
}

#[test]
fn the_hypervisor_claim_is_not_testable_and_says_where_it_ran() {
    let r = raw(1000.0, 900.0, vec![launch(&[2000.0; 3], TWO)]);
    let c = claim(&judged(&r, &env(Some("KVM"), 0.3)), "vm-dearer").clone();
    assert_eq!(c.verdict, Verdict::NotTestable);
    assert!(
        c.observed.starts_with("running under KVM: 1000 ns"),
        "{}",
        c.observed
    );
    assert!(c.observed.contains("cross-CPU wake-up"), "{}", c.observed);
    let c = claim(&judged(&r, &env(None, 0.3)), "vm-dearer").clone();
    assert!(c.why.starts_with("bare metal"), "{}", c.why);
}

#[test]
fn perf_ratio_is_an_agreement_check_only_when_both_are_steady() {
    let r = raw(1000.0, 900.0, vec![launch(&[2000.0; 3], TWO)]);
    let o = judged(&r, &env(None, 0.3));
    let pinned = finding(&o, "perf_bench.processes.same-cpu");
    assert_eq!(pinned.value, 1000.0);
    assert!(
        pinned.detail.contains("the ratio is an agreement check"),
        "{}",
        pinned.detail
    );
    // our unpinned pipe cell is bimodal
    let free = finding(&o, "ours_over_perf.processes.unpinned");
    assert!(
        free.detail.contains("no agreement check"),
        "{}",
        free.detail
    );
    assert!(free.detail.contains("bimodal"), "{}", free.detail);
    assert!(
        free.detail.contains("seen on cpus 0 / 1"),
        "{}",
        free.detail
    );
    assert!(
        o.notes
            .iter()
            .any(|n| n.starts_with("perf_bench.processes.unpinned"))
    );
    // perf ran once: its spread is unknown
    let mut once = r.clone();
    for p in once.perf.as_mut().unwrap() {
        p.usecs_per_op.truncate(1);
    }
    let o = judged(&once, &env(None, 0.3));
    let f = finding(&o, "perf_bench.processes.same-cpu");
    assert!(f.detail.contains("spread is unknown"), "{}", f.detail);
    let mut none = r;
    none.perf = None;
    let o = judged(&none, &env(None, 0.3));
    assert!(o.notes.iter().any(|n| n.contains("perf is not installed")));
    assert!(o.findings.iter().all(|f| !f.name.starts_with("perf_bench")));
}

#[test]
fn switch_counts_estimates_and_steal() {
    let mut r = raw(1000.0, 900.0, vec![launch(&[2000.0; 3], TWO)]);
    // a same-CPU launch where the measuring side switched only 0.6 times a round trip
    r.cells[0].launches[0].own_voluntary = 1800;
    r.cells[0].launches[0].own_involuntary = 0;
    r.cells[0].stat_after = Some(CpuTimes {
        user: 900,
        steal: 100,
        ..Default::default()
    });
    let o = judged(&r, &env(None, 0.3));
    let f = finding(&o, "switches_per_round_trip.processes.futex.same-cpu");
    assert!(f.detail.contains("1 of 1 launches flagged"), "{}", f.detail);
    assert!(o.notes.iter().any(|n| n.contains("steal 10.0 %")));
    assert_eq!(
        finding(&o, "estimate.switch_alone.futex").value,
        1000.0 - 220.0
    );
    assert_eq!(finding(&o, "estimate.switch_alone.pipe").value, 700.0);
    let clean_cell = finding(&o, "switches_per_round_trip.threads.futex.same-cpu");
    assert!(
        (clean_cell.value - 2.0).abs() < 0.01,
        "{}",
        clean_cell.value
    );
    assert_eq!(o.plots[0].x_labels.len(), o.plots[0].series[0].points.len());
}

#[test]
fn bookkeeping_of_switch_counts() {
    assert_eq!(per_round_trip(2000, 3, 2000), (1.0, 0.0015));
    assert!(clean((1.0, 0.0), (1.005, 0.002)));
    assert!(
        clean((0.58, 0.42), (0.65, 0.35)),
        "wake-up preemption counts as involuntary"
    );
    assert!(
        !clean((0.6, 0.0), (1.0, 0.0)),
        "a side that did not switch each time"
    );
    assert!(
        !clean((1.0, 0.05), (1.0, 0.0)),
        "extra switches: something else ran"
    );
}

use super::judge::{copy_share, judge, quantile};
use super::measure::{all_zeros, latencies, transactions};
use super::*;
use oslab_model::Verdict;

fn plan() -> Plan {
    Plan {
        duration: 60.0,
        runs: 1,
        guard: 8 << 20,
        scale: 10,
        bandwidth: 40 << 20,
    }
}

fn data(rows: u64) -> DataCheck {
    DataCheck {
        history_rows: rows,
        balances_match: true,
        indexes_checked: 3,
        copy_intact: Some(true),
    }
}

fn cell(mode: Mode, counts: Vec<(u64, u64)>, copy_mib: u64, device_mib: u64) -> CellRaw {
    let n = counts.iter().map(|c| c.1).sum();
    CellRaw {
        run: 0,
        mode,
        latency_counts: counts,
        transactions: n,
        span_s: 60.0,
        device_bytes: device_mib << 20,
        copy_bytes: copy_mib << 20,
        data: data(n),
        steal_pct: 0.0,
    }
}

/// The note's figures, rounded: alone p99 1.5 ms, vanilla seconds, governed 3 ms.
fn raw() -> Raw {
    Raw {
        postgres: "15.14".into(),
        testbed_device: "/dev/loop0".into(),
        testbed_cap: Default::default(),
        testbed_measured_bytes_s: (40 << 20) as f64,
        cells: vec![
            cell(
                Mode::Alone,
                vec![(400, 980), (1_500, 10), (12_000, 10)],
                0,
                2300,
            ),
            cell(
                Mode::Vanilla,
                vec![(1_500_000, 50), (2_400_000, 9)],
                2468,
                2531,
            ),
            cell(
                Mode::Governed,
                vec![(500, 985), (3_000, 10), (17_000, 5)],
                700,
                2400,
            ),
        ],
        teardown_errors: Vec::new(),
    }
}

#[test]
fn quantiles_take_the_nearest_rank_of_counted_values() {
    let c = [(1, 98), (5, 1), (9, 1)];
    assert_eq!(quantile(&c, 0.5), Some(1));
    assert_eq!(quantile(&c, 0.98), Some(1));
    assert_eq!(quantile(&c, 0.99), Some(5));
    assert_eq!(quantile(&c, 1.0), Some(9));
    assert_eq!(quantile(&[], 0.99), None);
}

#[test]
fn pgbench_output_and_logs_are_read() {
    // a per-transaction log as pgbench 15 writes it (client, transaction, latency
    // in µs, script, epoch, µs)
    let log =
        "0 1 412 0 1795759525 123456\n1 1 398 0 1795759525 123700\n0 2 1510 0 1795759525 125000\n";
    assert_eq!(latencies(log).collect::<Vec<_>>(), vec![412, 398, 1510]);
    let out = "transaction type: <builtin: simple update>\nnumber of transactions actually processed: 224455\nnumber of failed transactions: 0 (0.000%)\n";
    assert_eq!(transactions(out), 224_455);
    assert_eq!(transactions("nothing"), 0);
}

#[test]
fn the_guard_holds_when_commits_stay_fast_and_the_copy_takes_what_is_left() {
    let out = judge(&plan(), &raw());
    let verdict = |id: &str| out.claims.iter().find(|c| c.id == id).unwrap().verdict;
    assert_eq!(verdict("commits-guarded"), Verdict::Holds);
    assert_eq!(verdict("nothing-lost"), Verdict::Holds);
    assert_eq!(verdict("copy-stalls-commits"), Verdict::Holds);
    // governed: the database wrote 1700 MiB of 2400 MiB in 60 s on a 40 MiB/s
    // device: it left 2400 - 1700 = 700 MiB, all of which the copy took
    let g = &raw().cells[2];
    assert!((copy_share(g, (40 << 20) as f64).unwrap() - 1.0).abs() < 1e-9);
    assert_eq!(verdict("copy-share"), Verdict::Holds);
}

#[test]
fn one_slow_commit_a_lost_row_or_a_starved_copy_each_differ() {
    let mut r = raw();
    r.cells[2].latency_counts.push((250_000, 1));
    r.cells[2].transactions += 1;
    r.cells[2].data.history_rows += 1;
    let out = judge(&plan(), &r);
    let claim = |id: &str| out.claims.iter().find(|c| c.id == id).unwrap().clone();
    assert_eq!(claim("commits-guarded").verdict, Verdict::Differs);
    assert_eq!(claim("nothing-lost").verdict, Verdict::Holds);

    let mut r = raw();
    r.cells[0].data.history_rows -= 1;
    // the database's 1700 MiB left 700 MiB of the device; the copy took 300
    r.cells[2].copy_bytes = 300 << 20;
    r.cells[2].device_bytes = 2000 << 20;
    let out = judge(&plan(), &r);
    let claim = |id: &str| out.claims.iter().find(|c| c.id == id).unwrap().clone();
    assert_eq!(claim("nothing-lost").verdict, Verdict::Differs);
    assert!(
        claim("nothing-lost").why.contains("run 1 alone"),
        "{}",
        claim("nothing-lost").why
    );
    assert_eq!(claim("copy-share").verdict, Verdict::Differs);
}

#[test]
fn a_governed_run_without_a_commit_is_not_dropped_from_the_worst_case() {
    let mut r = raw();
    let mut stalled = r.cells[2].clone();
    stalled.run = 1;
    stalled.latency_counts.clear();
    stalled.transactions = 0;
    stalled.data.history_rows = 0;
    let mut alone = r.cells[0].clone();
    alone.run = 1;
    r.cells.extend([alone, stalled]);
    let out = judge(&plan(), &r);
    let claim = out
        .claims
        .iter()
        .find(|c| c.id == "commits-guarded")
        .unwrap();
    assert_eq!(claim.verdict, Verdict::Differs, "{}", claim.observed);
    assert!(claim.observed.contains("without a commit logged = 1"));
}

#[test]
fn without_governed_cells_nothing_is_judged_about_them() {
    let mut r = raw();
    r.cells.retain(|c| c.mode != Mode::Governed);
    let out = judge(&plan(), &r);
    let verdict = |id: &str| out.claims.iter().find(|c| c.id == id).unwrap().verdict;
    assert_eq!(verdict("commits-guarded"), Verdict::NotJudged);
    assert_eq!(verdict("copy-share"), Verdict::NotJudged);
}

#[test]
fn a_copy_with_a_hole_or_a_nonzero_byte_is_not_intact() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("copy");
    std::fs::write(&p, vec![0u8; 1 << 20]).unwrap();
    assert!(all_zeros(&p));
    std::fs::write(&p, [0u8, 0, 1]).unwrap();
    assert!(!all_zeros(&p), "{:?}", std::fs::read(&p));
    let f = std::fs::File::create(&p).unwrap();
    f.set_len(1 << 20).unwrap(); // all hole
    assert!(!all_zeros(&p));
}

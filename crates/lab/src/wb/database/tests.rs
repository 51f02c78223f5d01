use super::judge::{copy_share, judge, quantile};
use super::measure::{all_zeros, latencies, transactions};
use super::*;
use oslab_model::Verdict;

fn plan() -> Plan {
    Plan {
        duration: 60.0,
        runs: 1,
        guard: Some(8 << 20),
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
        kernel: None,
        guard: Vec::new(),
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

/// A captured trace: a slow fdatasync of the server, blocked twice in two places,
/// a write of the server of exactly 200 ms, and a slower write of dd that is not
/// the server's; `lost` records lost.
fn traced_losing(lost: u64) -> oslab_trace::TraceOutcome {
    let call = |pid: u32, comm: &str, call: &str, start: u64, dur: u64, wb: u64, blocked: u64| {
        serde_json::json!({
            "pid": pid, "tgid": pid, "call": call, "fd": 3, "count": 0, "ret": 0,
            "start_ns": start, "dur_ns": dur, "throttle_ns": 0, "wbwait_ns": wb,
            "blocked_ns": blocked, "runq_ns": 0, "pauses": 0, "prio": 120,
            "comm": comm, "file_name": "000000010000000000000003"
        })
    };
    let off = |pid: u32, start: u64, dur: u64, frames: &[&str]| {
        serde_json::json!({"pid": pid, "tgid": pid, "call": "fdatasync",
            "start_ns": start, "dur_ns": dur, "stack": frames})
    };
    let c = serde_json::json!({
        "writes": [
            call(10, "postgres", "fdatasync", 1_000_000_000, 612_000_000, 410_000_000, 190_000_000),
            call(11, "postgres", "write", 3_000_000_000, 200_000_000, 0, 0),
            call(12, "dd", "write", 4_000_000_000, 900_000_000, 0, 0),
        ],
        "offcpu": [
            off(10, 1_100_000_000, 120_000_000, &["schedule+0x1", "io_schedule+0x2", "wait_for_completion_io_timeout+0x3", "submit_bio_wait+0x4"]),
            off(10, 1_300_000_000, 70_000_000, &["schedule+0x1", "jbd2_log_wait_commit+0x9", "ext4_sync_file+0x2"]),
            // the same thread blocked longer, but after the call ended
            off(10, 2_000_000_000, 500_000_000, &["schedule+0x1", "futex_wait+0x2", "do_futex+0x3"]),
            // another thread blocked longer, inside the call's time
            off(11, 1_200_000_000, 300_000_000, &["schedule+0x1", "futex_wait+0x2", "do_futex+0x3"]),
        ],
        "lost": lost, "undecoded": 0, "hz": 250
    });
    oslab_trace::TraceOutcome::Traced(Box::new(serde_json::from_value(c).unwrap()))
}

fn traced() -> oslab_trace::TraceOutcome {
    traced_losing(0)
}

#[test]
fn the_kernels_account_names_the_servers_slowest_calls_and_where_they_blocked() {
    let a = account::account(&traced(), 500_000_000);
    assert_eq!(a.not_traced, None);
    assert_eq!(
        a.calls_over_slow, 1,
        "only the 612 ms fdatasync is over 200 ms, not the write of 200 ms"
    );
    assert_eq!(a.slowest.len(), 2, "dd's write is not the server's");
    let s = &a.slowest[0];
    assert_eq!((s.call.as_str(), s.ms), ("fdatasync", 612.0));
    assert_eq!(s.cause, "write-back wait");
    assert_eq!(
        s.blocked_in,
        "wait_for_completion_io_timeout <- submit_bio_wait"
    );
    assert_eq!(
        s.describe(),
        "fdatasync of 000000010000000000000003, 612 ms at 0.5 s: write-back wait 410 ms, blocked 190 ms (blocked in wait_for_completion_io_timeout <- submit_bio_wait)"
    );
    assert_eq!(a.slowest[1].blocked_in, "", "never blocked inside the call");
    assert_eq!(
        a.over_slow_by_kind,
        vec![("fdatasync of a WAL segment".to_string(), 1)]
    );
}

#[test]
fn a_clusters_files_are_told_apart_by_name() {
    use account::file_kind;
    assert_eq!(file_kind("xlogtemp.28544"), "a new WAL segment");
    assert_eq!(file_kind("00000001000000000000001B"), "a WAL segment");
    for table in ["16397", "16397.1", "16397_fsm", "16397_vm"] {
        assert_eq!(file_kind(table), "a table or index", "{table}");
    }
    assert_eq!(file_kind(""), "no file");
    assert_eq!(file_kind("postmaster.pid"), "another file");
    assert_eq!(file_kind("0000000100000000000000XY"), "another file");
}

#[test]
fn the_judgement_carries_each_modes_account_and_says_why_one_is_missing() {
    let mut r = raw();
    r.cells[2].kernel = Some(account::account(&traced(), 500_000_000));
    r.cells[1].kernel = Some(account::account(
        &oslab_trace::TraceOutcome::NotAvailable {
            reason: "needs root".into(),
        },
        0,
    ));
    let out = judge(&plan(), &r);
    let f = |id: &str| out.findings.iter().find(|f| f.name == id);
    assert!(
        f("alone.server_calls_over_200ms").is_none(),
        "no account kept"
    );
    assert!(f("vanilla.server_calls_over_200ms").unwrap().value.is_nan());
    assert_eq!(f("governed.server_calls_over_200ms").unwrap().value, 1.0);
    assert!(out.notes.iter().any(|n| n.starts_with(
        "kernel's account, governed: the server's slowest calls: fdatasync of 000000010000000000000003, 612 ms at 0.5 s"
    )));
    assert!(
        out.notes
            .iter()
            .any(|n| n == "kernel's account, vanilla: kernel tracing: not available (needs root)")
    );
    // lost records are said where the counts are
    r.cells[2].kernel = Some(account::account(&traced_losing(7), 0));
    let out = judge(&plan(), &r);
    let f = out
        .findings
        .iter()
        .find(|f| f.name == "governed.server_calls_over_200ms")
        .unwrap();
    assert!(f.detail.contains("lost 7 records"), "{}", f.detail);
}

#[test]
fn slow_commits_of_the_database_alone_are_explained_by_the_kernels_account() {
    let mut r = raw();
    // one governed commit over 200 ms; the p99s still hold
    r.cells[2].latency_counts.push((250_000, 1));
    r.cells[0].latency_counts.push((300_000, 1));
    let mut alone = account::account(&traced(), 500_000_000);
    alone.over_slow_by_kind = vec![("fsync of a new WAL segment".into(), 2)];
    r.cells[0].kernel = Some(alone);
    r.cells[2].kernel = Some(account::account(&traced(), 500_000_000));
    let out = judge(&plan(), &r);
    let c = &out.claims[0];
    assert_eq!(c.verdict, Verdict::Differs);
    assert!(
        c.why.contains(
            "alone: fsync of a new WAL segment 2; governed: fdatasync of a WAL segment 1"
        ),
        "{c:?}"
    );
    assert!(c.why.contains("fills each new 16 MiB WAL segment"), "{c:?}");
    // without new segments among the slow calls, nothing is said of them
    r.cells[0].kernel = Some(account::account(&traced(), 500_000_000));
    let c = judge(&plan(), &r).claims.remove(0);
    assert!(
        c.why.contains("alone: fdatasync of a WAL segment 1"),
        "{c:?}"
    );
    assert!(!c.why.contains("16 MiB"), "{c:?}");
}

/// An account of the server's calls over 200 ms: `segments` fsyncs of a new WAL
/// segment.
fn account_of_new_segments(segments: u64) -> account::Account {
    account::Account {
        not_traced: None,
        calls_over_slow: segments,
        over_slow_by_kind: vec![(format!("fsync of {}", account::NEW_SEGMENT), segments)],
        slowest: Vec::new(),
        lost: 0,
    }
}

#[test]
fn slow_commits_the_server_shows_on_its_own_are_not_the_governors() {
    // three governed commits over 200 ms: one the ungoverned restart shows too,
    // two (both clients) behind a new WAL segment's fsync
    let mut r = raw();
    r.cells[2].latency_counts.push((250_000, 3));
    let claim = |r: &Raw| {
        judge(&plan(), r)
            .claims
            .into_iter()
            .find(|c| c.id == "commits-guarded")
            .unwrap()
    };
    assert_eq!(
        claim(&r).verdict,
        Verdict::Differs,
        "nothing excuses them yet"
    );
    let mut restarted = cell(Mode::Restarted, vec![(400, 990), (300_000, 1)], 0, 900);
    restarted.data.copy_intact = None;
    r.cells.push(restarted);
    assert_eq!(claim(&r).verdict, Verdict::Differs, "one of three excused");
    r.cells[2].kernel = Some(account_of_new_segments(1));
    let c = claim(&r);
    assert_eq!(c.verdict, Verdict::Holds, "{}", c.observed);
    assert!(
        c.observed.contains("of which the server's own: 3"),
        "{}",
        c.observed
    );
    // a restart of another run excuses nothing in this one
    r.cells[3].run = 1;
    assert_eq!(claim(&r).verdict, Verdict::Differs);
}

#[test]
fn the_governor_alone_is_a_finding_of_its_own() {
    let mut r = raw();
    assert!(
        judge(&plan(), &r)
            .findings
            .iter()
            .all(|f| !f.name.starts_with("governed_alone"))
    );
    let mut ga = cell(
        Mode::GovernedAlone,
        vec![(400, 980), (3_000, 10), (12_000, 10)],
        0,
        900,
    );
    ga.data.copy_intact = None;
    r.cells.push(ga);
    let out = judge(&plan(), &r);
    let f = out
        .findings
        .iter()
        .find(|f| f.name == "governed_alone.p99_over_alone")
        .unwrap();
    // p99 3 ms against 1.5 ms alone
    assert!((f.value - 2.0).abs() < 1e-9, "{}", f.value);
    assert!(
        out.measurements
            .iter()
            .any(|m| m.name == "governed-alone.commit_p99")
    );
    assert!(
        !out.measurements
            .iter()
            .any(|m| m.name == "governed-alone.copy_rate")
    );
}

#[test]
fn the_result_says_when_the_governor_turned_the_guard_on_and_off_and_how_large() {
    use super::guard_log::GuardChange;
    let mut r = raw();
    r.cells[2].guard = vec![
        GuardChange {
            at_s: 0.0,
            bytes: None,
            bandwidth_bytes_s: None,
        },
        GuardChange {
            at_s: 0.5,
            bytes: Some(2 << 20),
            bandwidth_bytes_s: None,
        },
        GuardChange {
            at_s: 59.5,
            bytes: None,
            bandwidth_bytes_s: Some(40 << 20),
        },
    ];
    let out = judge(&plan(), &r);
    let note = out
        .notes
        .iter()
        .find(|n| n.starts_with("the sync guard as the governor chose it, governed:"))
        .expect("a note on the guard");
    assert!(
        note.ends_with(
            "run 1: on at 0.5 s, off at 59.5 s; 2.0 MiB (median 2.0), its first size: no bandwidth measured"
        ),
        "{note}"
    );
    // cells with no record (the ungoverned ones, older raw files) get no note
    assert_eq!(
        out.notes
            .iter()
            .filter(|n| n.starts_with("the sync guard"))
            .count(),
        1
    );
    assert!(
        judge(&plan(), &raw())
            .notes
            .iter()
            .all(|n| !n.starts_with("the sync guard"))
    );
}

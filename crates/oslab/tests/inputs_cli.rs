//! Every way a value comes in, end to end (issue 27, items 5 and 6): input files
//! bounded and only regular ones opened, a byte-order mark skipped, lax units and
//! values refused, and one exit code for each kind of answer: 2 for a usage error
//! (a bad argument or input), 1 for a failure at run time, nothing found included.

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../lab/tests/fixtures/raw");
const ONE_RESULT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../store/tests/fixtures/null-result.json"
);

fn oslab() -> Command {
    let mut c = common::oslab();
    c.env("OSLAB_JOURNAL_DIR", common::journal_dir("inputs-cli"));
    c
}

/// One sentence on stderr naming what is wrong, the exit code, nothing on stdout.
fn refused(out: Output, code: i32, says: &str) -> String {
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(code), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains(says), "{err} does not say {says}");
    assert!(
        out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    err
}

/// A value clap's own parser refused: exit 2, the error on its first line.
fn refused_by_parser(out: Output, says: &str) {
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.lines().next().unwrap_or("").contains(says), "{err}");
}

fn run(args: &[&str]) -> Output {
    oslab().args(args).output().unwrap()
}

fn raw_fixture(name: &str) -> PathBuf {
    Path::new(FIXTURES).join(name)
}

/// A raw file of cpu.syscall with one value of its JSON changed.
fn syscall_raw_with(
    dir: &Path,
    name: &str,
    change: impl FnOnce(&mut serde_json::Value),
) -> PathBuf {
    let text = std::fs::read_to_string(raw_fixture("cpu.syscall.raw.json")).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    change(&mut v);
    let p = dir.join(name);
    std::fs::write(&p, serde_json::to_vec(&v).unwrap()).unwrap();
    p
}

#[test]
fn devices_are_refused_at_once_by_every_command_that_reads_a_file() {
    let started = std::time::Instant::now();
    for args in [
        &["judge", "/dev/zero"][..],
        &["report", "/dev/zero"],
        &["compare", "/dev/zero", "/dev/zero"],
        &["import", "/dev/zero"],
        &["sim", "run", "/dev/zero"],
        &["sim", "sweep", "/dev/zero", "--vary", "hz=100,250"],
    ] {
        refused(
            run(args),
            2,
            "/dev/zero is a character device, not a regular file",
        );
    }
    // nothing was read from the device (it never ends): each refusal was at once
    assert!(started.elapsed() < std::time::Duration::from_secs(60));
}

#[test]
fn a_fifo_is_refused_without_waiting_for_a_writer() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("results.json");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let f = fifo.to_str().unwrap();
    refused(run(&["report", f]), 2, "is a FIFO, not a regular file");
    refused(run(&["judge", f]), 2, "is a FIFO, not a regular file");
}

#[test]
fn an_input_over_the_limit_is_refused_and_the_limit_can_be_raised() {
    let raw = raw_fixture("cpu.syscall.raw.json");
    let r = raw.to_str().unwrap();
    refused(
        run(&["judge", r, "--max-input", "4KiB"]),
        2,
        "holds more than 4 KiB, the limit on an input (--max-input raises it)",
    );
    assert!(run(&["judge", r, "--max-input", "1MiB"]).status.success());
    refused(
        run(&["report", ONE_RESULT, "--max-input", "1KiB"]),
        2,
        "holds more than 1 KiB",
    );
    refused_by_parser(run(&["judge", r, "--max-input", "lots"]), "--max-input");
}

#[test]
fn standard_input_is_bounded_too() {
    let mut child = oslab()
        .args(["report", "-", "--max-input", "64KiB"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    // a writer that never ends: oslab stops reading after the limit and says so
    let writer = std::thread::spawn(move || while stdin.write_all(&[b' '; 4096]).is_ok() {});
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    refused(out, 2, "standard input holds more than 64 KiB");
}

#[test]
fn a_gzip_bomb_is_refused_by_its_decompressed_size() {
    let dir = tempfile::tempdir().unwrap();
    let spaces = dir.path().join("bomb.raw.json");
    std::fs::write(&spaces, vec![b' '; 8 << 20]).unwrap();
    assert!(
        Command::new("gzip")
            .arg("-9")
            .arg(&spaces)
            .status()
            .unwrap()
            .success()
    );
    let bomb = dir.path().join("bomb.raw.json.gz");
    assert!(std::fs::metadata(&bomb).unwrap().len() < 64 << 10);
    refused(
        run(&["judge", bomb.to_str().unwrap(), "--max-input", "1MiB"]),
        2,
        "decompresses to more than 1 MiB",
    );
}

#[test]
fn a_byte_order_mark_is_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let with_bom = |name: &str, from: &Path| {
        let p = dir.path().join(name);
        let mut bytes = b"\xEF\xBB\xBF".to_vec();
        bytes.extend(std::fs::read(from).unwrap());
        std::fs::write(&p, bytes).unwrap();
        p
    };
    let results = with_bom("results.json", Path::new(ONE_RESULT));
    let out = run(&["report", results.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let raw = with_bom("x.raw.json", &raw_fixture("cpu.syscall.raw.json"));
    let out = run(&["judge", raw.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn raw_data_that_cannot_be_judged_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let inner = syscall_raw_with(dir.path(), "inner.raw.json", |v| {
        v["recorded"]["raw"]["probes"] = serde_json::json!("x");
    });
    refused(
        run(&["judge", inner.to_str().unwrap()]),
        2,
        "the raw data of cpu.syscall cannot be read",
    );
    let negative = syscall_raw_with(dir.path(), "neg.raw.json", |v| {
        v["recorded"]["raw"]["probes"][1]["ns_per_call"][3] = serde_json::json!(-5.0);
    });
    refused(
        run(&["judge", negative.to_str().unwrap()]),
        2,
        "holds raw.probes[1].ns_per_call[3] = -5.0, but a time or size cannot be negative",
    );
}

#[test]
fn a_results_file_without_results_is_nothing_found() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.json");
    std::fs::write(
        &empty,
        r#"{"schema_version": 1, "oslab_version": "0.1.0", "command": "oslab run", "results": []}"#,
    )
    .unwrap();
    let e = empty.to_str().unwrap();
    refused(run(&["report", e]), 1, "holds no results");
    refused(run(&["compare", e, ONE_RESULT]), 1, "holds no results");
    refused(run(&["import", e]), 1, "holds no results");
}

#[test]
fn a_size_is_not_a_rate() {
    for rate in ["1.5GiB", "10MiB/s/s", "40M"] {
        refused_by_parser(
            run(&["testbed", "up", "--bandwidth", rate]),
            &format!("invalid value '{rate}' for '--bandwidth <RATE>': not a bandwidth"),
        );
        refused_by_parser(
            run(&[
                "dirty",
                "advise",
                "--device-bandwidth",
                rate,
                "--rate",
                "1MiB/s",
            ]),
            &format!("invalid value '{rate}' for '--device-bandwidth <RATE>': not a rate"),
        );
        refused(
            run(&[
                "sim",
                "run",
                "testbed-alone",
                "--set",
                &format!("bandwidth={rate}"),
            ]),
            2,
            "bandwidth",
        );
    }
}

#[test]
fn tweak_refuses_a_value_the_kernel_would_cut_short() {
    refused(run(&["tweak", "vm.dirty_ratio="]), 2, "gives no value");
    refused(
        run(&["tweak", "vm.dirty_ratio=30 x"]),
        2,
        "vm.dirty_ratio=30 x: give a whole number",
    );
}

#[test]
fn watch_refuses_a_device_that_is_not_there() {
    refused(
        run(&["watch", "--device", "nosuchdev", "--once"]),
        2,
        "--device nosuchdev: no block device of that name here",
    );
}

/// `export` with nothing matching is nothing found (exit 1), like `compare` and
/// `report` of a run that is not there; a malformed value stays a usage error.
#[test]
fn export_of_nothing_is_nothing_found() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    let with_db = |args: &[&str]| oslab().env("OSLAB_DB", &db).args(args).output().unwrap();
    assert!(with_db(&["run", "null"]).status.success());
    assert!(with_db(&["export", "--run", "1"]).status.success());
    refused(with_db(&["export", "--run", "99"]), 1, "no stored run 99");
    refused(
        with_db(&["export", "--experiment", "nosuch"]),
        1,
        "no stored run of nosuch",
    );
    refused(
        with_db(&["export", "--machine", "nosuch"]),
        1,
        "no stored run on machine nosuch",
    );
    refused(with_db(&["report", "99"]), 1, "there is no run 99");
    refused(
        with_db(&["history", "--machine", "nosuch"]),
        1,
        "no stored runs on machine nosuch",
    );
    refused_by_parser(with_db(&["export", "--run", "x"]), "--run");
}

/// A scenario file of two writers, values that the tests below change one by one.
const SCENARIO: &str = r#"rules = "linux-6"
dirtyable_bytes = 1073741824
duration_s = 2.0
cpus = 2
[device]
bandwidth_bytes_s = 10485760.0
[[writers]]
name = "rt"
type = "periodic"
bytes = 524288
period_ms = 20.0
count = 50
class = { rt = { priority = 55 } }
[[writers]]
name = "bulk"
type = "bulk"
chunk = 524288
class = { normal = { nice = 0 } }
"#;

/// Issue 27: each of these ran (exit 0) from a scenario file although `--set`
/// refuses it; now the file meets the same ranges and each is one sentence with
/// the file, the line and the field.
#[test]
fn a_scenario_file_meets_the_ranges_set_meets() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.toml");
    let f = file.to_str().unwrap();
    let ok = dir.path().join("ok.toml");
    std::fs::write(&ok, SCENARIO).unwrap();
    let out = run(&["sim", "run", ok.to_str().unwrap(), "--policy", "vanilla"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for (from, to, says) in [
        (
            "cpus = 2",
            "cpus = 2\nhz = 0",
            "line 5, hz: 0 is out of range: give 100 to 1000",
        ),
        (
            "cpus = 2",
            "cpus = 2\nfolio_bytes = 0",
            "line 5, folio_bytes: 0 B is out of range",
        ),
        (
            "cpus = 2",
            "cpus = 0",
            "line 4, cpus: 0 is out of range: give 1 to 4096",
        ),
        (
            "cpus = 2",
            "cpus = 2\n[governor]\npass_ms = nan",
            "line 6, governor.pass_ms: expected a number, got nan",
        ),
        (
            "nice = 0",
            "nice = 100",
            "line 18, writers[1].class.normal.nice: 100 is out of range: give -20 to 19",
        ),
        (
            "cpus = 2",
            "cpus = 2\n[initial]\nwb_share = 5.0",
            "line 6, initial.wb_share: 5 is out of range: give 0 to 1",
        ),
        (
            "bandwidth_bytes_s = 10485760.0",
            "bandwidth_bytes_s = 10485760.0\nmax_request_bytes = 0",
            "line 7, device.max_request_bytes: 0 B is out of range",
        ),
        (
            "cpus = 2",
            "cpus = 2\nfoo = 1",
            "line 5, foo: unknown field",
        ),
        (
            "bandwidth_bytes_s = 10485760.0",
            "bandwidth_bytes_s = \"fast\"",
            "line 6, device.bandwidth_bytes_s: expected a number, got \"fast\"",
        ),
        (
            "chunk = 524288\n",
            "",
            "line 14, writers[1] (bulk): missing field chunk",
        ),
    ] {
        std::fs::write(&file, SCENARIO.replacen(from, to, 1)).unwrap();
        refused(run(&["sim", "run", f]), 2, &format!("{f} {says}"));
    }
}

#[test]
fn a_scenario_comes_from_standard_input_with_or_without_a_byte_order_mark() {
    for text in [SCENARIO.to_string(), format!("\u{feff}{SCENARIO}")] {
        let out = common::output_with_input(
            oslab().args(["sim", "run", "-", "--policy", "vanilla"]),
            text.as_bytes(),
        )
        .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// Regression (issue 53, item 7): a bare number was ms to `--threshold`, seconds
/// to `tweak --for` and `--target-latency`, and `wcall --block-ms` was named for
/// its unit. Every duration option and `--set` duration takes its unit now; a bare
/// number other than 0 is refused with the hint, before anything runs.
#[test]
fn every_duration_takes_its_unit_and_a_bare_number_is_refused_with_the_hint() {
    for args in [
        &["stalls", "--threshold", "5"][..],
        &["stalls", "--interval", "2"],
        &["watch", "--interval", "1", "--once"],
        &["tweak", "vm.dirty_ratio=20", "--for", "5"],
        &[
            "dirty",
            "advise",
            "--rate",
            "1MiB/s",
            "--target-latency",
            "2",
        ],
        &["sim", "advise", "paper-fig2", "--p99", "50"],
        &["wcall", "daemon", "--every", "2"],
        &["wcall", "daemon", "--block", "100"],
        &["wcall", "daemon", "--interval", "10"],
        &["wcall", "daemon", "--sync-guard-quiet", "30"],
    ] {
        refused_by_parser(run(args), "needs its unit");
    }
    refused(
        run(&["run", "sched.slices", "--set", "duration=2"]),
        2,
        "a duration needs its unit: 2ms or 2s",
    );
    // the unit named is taken, and 0 needs none
    refused_by_parser(run(&["wcall", "daemon", "--block-ms", "100"]), "--block-ms");
    let ok = run(&["watch", "--interval", "50ms", "--count", "1"]);
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
}

/// The governor's options are read by clap into their types: a bad value is
/// refused before any governor starts, exit 2, on one line that names the
/// option, the value and what the option takes.
#[test]
fn a_governors_option_refuses_a_bad_value_with_what_it_takes() {
    let policy = "a governor's policy is wcall or wcall-fair";
    let cases: &[(&str, &str, &[&str], &str)] = &[
        (
            "--policy",
            "POLICY",
            &["vanilla", "greedy", "WCALL"],
            policy,
        ),
        ("--headroom", "SIZE", &["lots", "MiB"], "is not a size"),
        ("--headroom", "SIZE", &["8 parsecs"], "unknown unit"),
        (
            "--recycle",
            "on|off|auto",
            &["yes", "ON"],
            "on, off or auto",
        ),
        (
            "--sync-guard",
            "off|auto|SIZE",
            &["512KiB", "always"],
            "at least 1MiB",
        ),
        (
            "--memory-high",
            "GROUP=SIZE",
            &[
                "vip=1GiB",
                "auto=1GiB",
                "normal",
                "normal=lots",
                "rt-high=10",
            ],
            "expected GROUP=SIZE with GROUP rt-high, rt-low or normal and SIZE of at least 1MiB",
        ),
    ];
    for (flag, name, bads, says) in cases {
        for bad in *bads {
            // a value taken by mistake still starts nothing: the name and the
            // program are refused before a governor would start
            let daemon = format!("wcall daemon {flag} BAD --name ../x");
            let own = format!("wcall run --private {flag} BAD -- no-such-program-xyz");
            for line in [daemon, own] {
                refused_value(&line, flag, name, bad, says);
            }
        }
    }
}

/// `line` (words; `BAD` stands for `bad`) refused by clap for `bad`, the value
/// of `flag`: its first line names the option, its value's name and the value,
/// and says `says`; exit 2, nothing on standard output. Each command line would
/// fail or start nothing of the machine's were the value taken.
fn refused_value(line: &str, flag: &str, name: &str, bad: &str, says: &str) {
    let args: Vec<&str> = line
        .split_whitespace()
        .map(|w| if w == "BAD" { bad } else { w })
        .collect();
    let out = run(&args);
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    let first = err.lines().next().unwrap_or("");
    let named = format!("invalid value '{bad}' for '{flag} <{name}>'");
    assert!(
        first.contains(&named) && first.contains(says),
        "{args:?}: {err}"
    );
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(out.stdout.is_empty(), "{args:?}");
}

/// `wcall run --group`, `wcall daemon --service`, every `--name` of a governor
/// and `wcall writer --chunk` are
/// typed by clap, as the governor's options are: a bad value is clap's first
/// line, naming the option, the value and what it takes.
#[test]
fn a_governed_commands_name_group_service_and_chunk_refuse_a_bad_value() {
    let run = "wcall run --private --group BAD -- no-such-program-xyz";
    let group = "use rt-high (high), rt-low (low), normal (non-rt) or auto";
    for bad in ["vip", "", "auto=1"] {
        refused_value(run, "--group", "GROUP", bad, group);
    }
    let daemon = "wcall daemon --service BAD --name ../x";
    for (bad, says) in [
        (
            "postgresql.service",
            "give UNIT=GROUP such as postgresql@*.service=rt-high",
        ),
        (
            "a.service=vip",
            "no group 'vip' (use rt-high, rt-low or normal)",
        ),
        (
            "a.service=auto",
            "no group 'auto' (use rt-high, rt-low or normal)",
        ),
        ("a/b.service=normal", "is not a service unit's name"),
        ("*.service=normal", "is not a service unit's name"),
        ("db=normal", "is not a service unit's name"),
    ] {
        refused_value(daemon, "--service", "UNIT=GROUP", bad, says);
    }
    let rule = "use 1 to 64 letters, digits, '.', '_' or '-', not starting with '.'";
    for bad in ["../x", "/tmp/x", ".x", "", "a b"] {
        refused_value("wcall daemon --name BAD", "--name", "NAME", bad, rule);
        let run = "wcall run --name BAD -- no-such-program-xyz";
        refused_value(run, "--name", "NAME", bad, rule);
        refused_value("wcall status --name BAD", "--name", "NAME", bad, rule);
    }
    let writer = "wcall writer --file /nonexistent/oslab/x --chunk BAD";
    for bad in ["0", "2GiB", "lots"] {
        refused_value(
            writer,
            "--chunk",
            "CHUNK",
            bad,
            "give a size from 1 B to 1 GiB",
        );
    }
}

/// `testbed up --bandwidth` and `--size`, `dirty advise`'s rates and the
/// simulator's `--policy`, `--prefer` and `--others-at-least` are typed by
/// clap, not strings parsed once the command ran.
#[test]
fn the_testbed_advice_and_simulator_options_refuse_a_bad_value() {
    let size = "testbed up --bandwidth 10MiB/s --size BAD";
    for bad in ["1MiB", "-5", "big"] {
        refused_value(
            size,
            "--size",
            "SIZE",
            bad,
            "give a size of at least 64 MiB",
        );
    }
    for bad in ["512KiB/s", "-1MiB/s", "11GiB/s"] {
        let cap = "testbed up --bandwidth BAD";
        refused_value(cap, "--bandwidth", "RATE", bad, "from 1MiB/s to 10GiB/s");
    }
    for (bad, says) in [("-5", "cannot be negative"), ("4MiB", "a size needs /s")] {
        let rate = "dirty advise --device-bandwidth 10MiB/s --rate BAD";
        refused_value(rate, "--rate", "RATE", bad, says);
        let others = "sim advise paper-fig2 --p99 50ms --others-at-least BAD";
        refused_value(others, "--others-at-least", "RATE", bad, says);
    }
    let device = "dirty advise --rate 0 --device-bandwidth BAD";
    refused_value(
        device,
        "--device-bandwidth",
        "RATE",
        "512KiB/s",
        "give 1MiB/s or more",
    );
    let policy = "unknown policy (use vanilla, wcall or wcall-fair)";
    for bad in ["greedy", "WCALL"] {
        refused_value(
            "sim run paper-fig2 --policy BAD",
            "--policy",
            "POLICY",
            bad,
            policy,
        );
    }
    let sweep = "sim sweep paper-fig2 --vary dirty_ratio=10..20 --policy BAD";
    refused_value(sweep, "--policy", "POLICY", "x", policy);
    let prefer = "sim advise paper-fig2 --p99 50ms --prefer BAD";
    refused_value(prefer, "--prefer", "WHAT", "speed", "");
    // --prefer's refusal lists what it takes, as its help does
    let out = run(&[
        "sim",
        "advise",
        "paper-fig2",
        "--p99",
        "50ms",
        "--prefer",
        "speed",
    ]);
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(
        err.contains("[possible values: throughput, latency, memory]"),
        "{err}"
    );
}

/// Regression: `export` took `--format json -o` and refused `--json -`; every
/// command's `--json FILE` writes FILE, `-` standard output.
#[test]
fn export_takes_json_file_as_every_command_does() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("e.db");
    let ran = oslab()
        .env("OSLAB_DB", &db)
        .args(["run", "null"])
        .output()
        .unwrap();
    assert!(ran.status.success());
    let out = oslab()
        .env("OSLAB_DB", &db)
        .args(["export", "--json", "-"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["runs"].as_array().is_some_and(|r| r.len() == 1), "{v}");
    let file = dir.path().join("runs.json");
    let out = oslab()
        .env("OSLAB_DB", &db)
        .args(["export", "--json"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let back: serde_json::Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    assert_eq!(back["runs"], v["runs"]);
    refused_by_parser(
        oslab()
            .env("OSLAB_DB", &db)
            .args(["export", "--json", "-", "--format", "csv"])
            .output()
            .unwrap(),
        "cannot be used with",
    );
}

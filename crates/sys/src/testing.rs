//! Shared by the property tests of every crate (feature `testing`, or this crate's
//! own tests).

use proptest::test_runner::Config;

/// A property test's configuration: `cases` cases unless PROPTEST_CASES is set (a
/// fuzz-like run, e.g. `PROPTEST_CASES=100000 cargo test -p oslab-sys`); failing
/// cases are printed, not saved to proptest-regressions/.
pub fn proptest_config(cases: u32) -> Config {
    let d = Config::default();
    Config {
        cases: if std::env::var_os("PROPTEST_CASES").is_some() {
            d.cases
        } else {
            cases
        },
        failure_persistence: None,
        ..d
    }
}

/// The configuration of a fuzz run (the `#[ignore]`d `fuzz_*` tests, run with
/// `cargo test --release -- --ignored fuzz`): PROPTEST_CASES cases when set, else
/// `cases` (many); failing cases are printed, not saved.
pub fn fuzz_config(cases: u32) -> Config {
    Config {
        cases: std::env::var("PROPTEST_CASES")
            .ok()
            .and_then(|c| c.parse().ok())
            .unwrap_or(cases),
        failure_persistence: None,
        ..Config::default()
    }
}

/// Marks a folder delegated as systemd does for `Delegate=yes` (user.delegate=1),
/// for tests of the rules that ask for it.
pub fn mark_delegated(dir: &std::path::Path) -> std::io::Result<()> {
    crate::cgroup_place::set_delegate(dir, c"user.delegate")
}

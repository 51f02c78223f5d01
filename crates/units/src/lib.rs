//! Sizes, rates and durations as people type them (`256MiB`, `40MiB/s`, `10ms`)
//! and as oslab prints them (`256 MiB`, `40 MiB/s`): one grammar for every option,
//! setting and scenario value, and formatting that this grammar reads back.
//!
//! Binary units throughout: K, M, G and T are powers of 1024, with or without
//! `i` and `B`. No dependencies, so every crate that reads or prints a size can
//! use it.
#![forbid(unsafe_code)]

mod duration;
mod error;
mod rate;
mod size;

pub use duration::{Span, TimeUnit, parse_duration, parse_duration_with_unit};
pub use error::UnitError;
pub use rate::{human_rate, parse_human_rate};
pub use size::{human_bytes, parse_human_size};

/// The configuration of this crate's property tests: `cases` unless PROPTEST_CASES
/// says otherwise; failures are printed, not saved.
#[cfg(test)]
fn proptest_config(cases: u32) -> proptest::test_runner::Config {
    let d = proptest::test_runner::Config::default();
    proptest::test_runner::Config {
        cases: if std::env::var_os("PROPTEST_CASES").is_some() {
            d.cases
        } else {
            cases
        },
        failure_persistence: None,
        ..d
    }
}

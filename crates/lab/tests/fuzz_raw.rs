//! Property tests of the raw file reader behind `oslab judge`: any bytes, every
//! truncation of a raw fixture (plain or gzip-compressed), a damaged gzip stream
//! and a gzip bomb are refused in one sentence (a usage error) without a panic or
//! an allocation beyond the limit; a fixture with one value changed is refused or
//! judged by its experiment without a panic. The `fuzz_*` tests run the same
//! with many cases, outside the default run (docs/architecture.md, "Property tests
//! and fuzz runs"):
//! `cargo test -p oslab-lab --release --test fuzz_raw -- --ignored fuzz`

mod common;

use std::io::Write;
use std::sync::OnceLock;

use oslab_harness::rawfile::RawFile;
use oslab_harness::runner::judge_outside_file;
use oslab_lab::Registry;
use oslab_sys::infile::InputError;
use oslab_sys::testing::{fuzz_config, proptest_config as config};
use proptest::prelude::*;
use proptest::sample::Index;

/// The limit the tests read under: a bomb must be refused at it.
const MAX: u64 = 8 << 20;

/// Every raw fixture's JSON, decompressed.
fn fixtures() -> &'static [(String, String)] {
    static ALL: OnceLock<Vec<(String, String)>> = OnceLock::new();
    ALL.get_or_init(|| {
        let mut all: Vec<(String, String)> = std::fs::read_dir(common::fixtures())
            .unwrap()
            .map(|e| e.unwrap().path())
            .map(|p| {
                let bytes = std::fs::read(&p).unwrap();
                let name = p.file_name().unwrap().to_string_lossy().into_owned();
                let json = oslab_sys::infile::maybe_gunzip(bytes, &name, 1 << 30).unwrap();
                (name, String::from_utf8(json).unwrap())
            })
            .collect();
        all.sort();
        all
    })
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(bytes).unwrap();
    gz.finish().unwrap()
}

/// What `RawFile::read` makes of a file of these bytes (it reads the file with
/// `oslab_sys::infile`, whose own tests cover the reading, then this).
fn read(bytes: &[u8]) -> Result<RawFile, InputError> {
    RawFile::from_bytes(bytes.to_vec(), "x.raw.json", MAX)
}

fn refused(r: Result<RawFile, InputError>) -> Result<(), TestCaseError> {
    match r {
        Ok(f) => Err(TestCaseError::fail(format!(
            "read as a raw file of {}",
            f.experiment
        ))),
        Err(e) => {
            prop_assert!(!e.at_run_time, "{}", e);
            prop_assert!(!e.to_string().contains('\n'), "{}", e);
            Ok(())
        }
    }
}

/// Judges a file that was read, as `oslab judge` does: an error or a result,
/// never a panic.
fn judged(f: &RawFile) -> Result<(), TestCaseError> {
    let reg = Registry::default();
    let Some(exp) = reg.get(&f.experiment) else {
        return Ok(());
    };
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        judge_outside_file(exp, f).map(|_| ())
    }));
    prop_assert!(r.is_ok(), "judging {} panicked", f.experiment);
    Ok(())
}

/// A JSON value of another kind or size than the one it replaces.
fn value() -> impl Strategy<Value = String> {
    prop_oneof![
        proptest::sample::select(vec![
            "null",
            "0",
            "-1",
            "1e308",
            "-1e308",
            "1e-320",
            "[]",
            "{}",
            "\"\"",
            "true",
            "18446744073709551615",
            "-9223372036854775808",
            "4294967296",
            "[null]",
            "[1e308, -1e308]",
            "[0]",
            "[-1]",
            "\"x\"",
            "{\"a\": 1}",
        ])
        .prop_map(String::from),
        any::<f64>().prop_map(|f| if f.is_finite() {
            format!("{f:?}")
        } else {
            "null".into()
        }),
        any::<i64>().prop_map(|n| n.to_string()),
        (0u32..64).prop_map(|s| (1u64 << s).to_string()),
    ]
}

fn any_bytes() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..600),
        "(?s)\\PC{0,400}".prop_map(String::into_bytes),
        proptest::collection::vec(any::<u8>(), 0..600).prop_map(|b| gzip(&b)),
    ]
}

/// A fixture cut anywhere (but in its trailing white space) is refused, plain or
/// compressed.
fn truncated(which: Index, cut: Index, compress: bool) -> Result<(), TestCaseError> {
    let (_, full) = &fixtures()[which.index(fixtures().len())];
    let n = cut.index(full.len());
    let part = &full.as_bytes()[..n];
    let bytes = if compress { gzip(part) } else { part.to_vec() };
    if full[n..].trim().is_empty() {
        prop_assert!(read(&bytes).is_ok());
        Ok(())
    } else {
        refused(read(&bytes))
    }
}

/// A compressed fixture with a byte changed or the stream cut: refused, or read
/// and judged (a change the checksum cannot see is not possible: gzip checks a
/// CRC-32 of the whole).
fn damaged_gzip(which: Index, at: Index, byte: u8, cut: bool) -> Result<(), TestCaseError> {
    let (_, full) = &fixtures()[which.index(fixtures().len())];
    let mut gz = gzip(full.as_bytes());
    let i = at.index(gz.len());
    if cut {
        gz.truncate(i);
    } else {
        gz[i] ^= byte.max(1);
    }
    match read(&gz) {
        Ok(f) => judged(&f),
        Err(e) => {
            prop_assert!(!e.at_run_time, "{}", e);
            Ok(())
        }
    }
}

/// A small file that decompresses beyond the limit is refused by its size.
fn bomb(len: usize, fill: u8) -> Result<(), TestCaseError> {
    let gz = gzip(&vec![fill; len]);
    match read(&gz) {
        Err(e) if len as u64 > MAX => {
            prop_assert!(e.why.starts_with("decompresses to more than"), "{}", e);
            Ok(())
        }
        r => refused(r),
    }
}

/// One value of a fixture replaced: refused, or read and judged without a panic.
fn changed_value(which: Index, at: Index, v: &str) -> Result<(), TestCaseError> {
    let (name, full) = &fixtures()[which.index(fixtures().len())];
    // a value starts after ':' or '[' or ',' (the fixtures are compact JSON)
    let starts: Vec<usize> = full
        .match_indices([':', '[', ','])
        .map(|(i, _)| i + 1)
        .filter(|&i| !full[i..].starts_with(['{', '"', ']']))
        .collect();
    if starts.is_empty() {
        return Ok(());
    }
    let s = starts[at.index(starts.len())];
    let end = s + full[s..].find([',', ']', '}']).unwrap_or(full.len() - s);
    let text = format!("{}{v}{}", &full[..s], &full[end..]);
    match read(text.as_bytes()) {
        Ok(f) => judged(&f).map_err(|e| {
            TestCaseError::fail(format!(
                "{name} at {s}: {e} ({})",
                &text[s.saturating_sub(40)..(s + 40).min(text.len())]
            ))
        }),
        Err(e) => {
            prop_assert!(!e.at_run_time, "{}", e);
            Ok(())
        }
    }
}

proptest! {
    #![proptest_config(config(32))]

    #[test]
    fn any_bytes_are_refused(bytes in any_bytes()) {
        refused(read(&bytes))?;
    }

    #[test]
    fn every_truncation_is_refused(which in any::<Index>(), cut in any::<Index>(), compress in any::<bool>()) {
        truncated(which, cut, compress)?;
    }

    #[test]
    fn a_damaged_gzip_stream_is_refused_or_judged(which in any::<Index>(), at in any::<Index>(), byte in any::<u8>(), cut in any::<bool>()) {
        damaged_gzip(which, at, byte, cut)?;
    }

    #[test]
    fn a_gzip_bomb_is_refused(len in prop_oneof![0usize..1024, (MAX as usize - 16)..(MAX as usize + 16), (MAX as usize)..(64 << 20)], fill in any::<u8>()) {
        bomb(len, fill)?;
    }

    #[test]
    fn a_changed_value_is_refused_or_judged(which in any::<Index>(), at in any::<Index>(), v in value()) {
        changed_value(which, at, &v)?;
    }
}

// The same with many cases, outside the default run:
// `cargo test -p oslab-lab --release --test fuzz_raw -- --ignored fuzz`
proptest! {
    #![proptest_config(fuzz_config(5_000))]

    #[test]
    #[ignore = "a fuzz run: cargo test -p oslab-lab --release --test fuzz_raw -- --ignored fuzz"]
    fn fuzz_raw_any_bytes(bytes in any_bytes()) {
        refused(read(&bytes))?;
    }

    #[test]
    #[ignore = "a fuzz run: cargo test -p oslab-lab --release --test fuzz_raw -- --ignored fuzz"]
    fn fuzz_raw_truncated(which in any::<Index>(), cut in any::<Index>(), compress in any::<bool>()) {
        truncated(which, cut, compress)?;
    }

    #[test]
    #[ignore = "a fuzz run: cargo test -p oslab-lab --release --test fuzz_raw -- --ignored fuzz"]
    fn fuzz_raw_damaged_gzip(which in any::<Index>(), at in any::<Index>(), byte in any::<u8>(), cut in any::<bool>()) {
        damaged_gzip(which, at, byte, cut)?;
    }

    #[test]
    #[ignore = "a fuzz run: cargo test -p oslab-lab --release --test fuzz_raw -- --ignored fuzz"]
    fn fuzz_raw_bomb(len in (MAX as usize)..(256 << 20), fill in any::<u8>()) {
        bomb(len, fill)?;
    }

    #[test]
    #[ignore = "a fuzz run: cargo test -p oslab-lab --release --test fuzz_raw -- --ignored fuzz"]
    fn fuzz_raw_changed_value(which in any::<Index>(), at in any::<Index>(), v in value()) {
        changed_value(which, at, &v)?;
    }
}

//! What `report` and `compare` read: result files written by `oslab run --json`, or
//! run ids of the results database.

use std::path::Path;

use oslab_model::{ExperimentResult, ResultSet};
use oslab_store::Store;
use oslab_sys::infile;

use crate::db;
use crate::failure::Failure;

/// Results from one named source.
pub struct Loaded {
    /// How to name it to the user: the file name or "run N".
    pub label: String,
    pub results: Vec<ExperimentResult>,
}

/// Opens the database once, on the first run id.
pub struct LazyStore<'a> {
    arg: Option<&'a Path>,
    store: Option<Store>,
}

impl<'a> LazyStore<'a> {
    pub fn new(arg: Option<&'a Path>) -> LazyStore<'a> {
        LazyStore { arg, store: None }
    }

    pub fn get(&mut self) -> Result<&mut Store, Failure> {
        if self.store.is_none() {
            self.store = Some(db::open_existing(self.arg)?);
        }
        Ok(self.store.as_mut().expect("opened above"))
    }
}

/// Reads a results file (`-`: standard input): a result set (`oslab run --json`)
/// or a single result, at most `max` bytes.
pub fn read_file(path: &Path, max: u64) -> Result<Vec<ExperimentResult>, Failure> {
    read_set(path, max).map(|set| set.results)
}

/// Reads a results file as a result set; a single result is a set of one, whose
/// command is unknown (empty).
pub fn read_set(path: &Path, max: u64) -> Result<ResultSet, Failure> {
    let text = infile::read_text(path, max)?;
    parse_set(&text, &infile::display_name(path))
}

/// A results file's text as a result set; `name` names it in the sentence when it
/// is not one.
fn parse_set(text: &str, name: &str) -> Result<ResultSet, Failure> {
    if let Ok(set) = serde_json::from_str::<ResultSet>(text) {
        return Ok(set);
    }
    serde_json::from_str::<ExperimentResult>(text)
        .map(|r| ResultSet {
            schema_version: r.schema_version,
            oslab_version: r.environment.oslab_version.clone(),
            command: String::new(),
            results: vec![r],
        })
        .map_err(|e| {
            Failure::usage(format!(
                "{name} is not an oslab results file (the JSON that `oslab run --json` writes): {e}"
            ))
        })
}

/// Loads one source: `-` (standard input) or an existing file, else a run id.
/// Nothing found, a file without results included, is a failure at run time (as
/// grep's and ripgrep's "no match" is exit 1).
pub fn load(arg: &str, store: &mut LazyStore, max: u64) -> Result<Loaded, Failure> {
    let path = Path::new(arg);
    if infile::is_stdin(path) || path.symlink_metadata().is_ok() {
        let results = read_file(path, max)?;
        if results.is_empty() {
            return Err(Failure::runtime(format!(
                "{} holds no results",
                infile::display_name(path)
            )));
        }
        return Ok(Loaded {
            label: arg.to_string(),
            results,
        });
    }
    let id = if arg == "latest" {
        let s = store.get()?;
        let newest = s
            .runs(&oslab_store::RunFilter {
                limit: Some(1),
                ..Default::default()
            })
            .map_err(|e| Failure::runtime(e.to_string()))?;
        match newest.first() {
            Some(r) => r.id,
            None => {
                return Err(Failure::runtime(format!(
                    "there are no runs in {} yet",
                    s.location()
                )));
            }
        }
    } else {
        arg.trim_start_matches('#').parse::<i64>().map_err(|_| {
            Failure::usage(format!(
                "{arg} is neither a results file nor a run id (see `oslab history`; `latest` names the newest run)"
            ))
        })?
    };
    let s = store.get()?;
    match s.run(id).map_err(|e| Failure::runtime(e.to_string()))? {
        Some((_, results)) => Ok(Loaded {
            label: format!("run {id}"),
            results,
        }),
        None => Err(Failure::runtime(format!(
            "there is no run {id} in {} (`oslab history` lists the runs)",
            s.location()
        ))),
    }
}

/// Property tests of the results reader behind `report` and `compare`: every
/// truncation of a valid result file and any bytes give a usage error, never a
/// panic; a valid file with a value changed either is refused or reads and renders
/// (terminal table, claims, HTML page, comparison) without a panic. The `fuzz_*`
/// tests run the same with 20,000 cases (or PROPTEST_CASES), outside the default run:
/// `cargo test -p oslab --release --bin oslab -- --ignored fuzz`
#[cfg(test)]
mod props {
    use super::*;
    use crate::failure::EXIT_USAGE;
    use oslab_sys::testing::{fuzz_config, proptest_config as config};
    use proptest::prelude::*;
    use proptest::sample::Index;

    /// A result of the null experiment as `oslab run --json` wrote it.
    const ONE: &str = include_str!("../../store/tests/fixtures/null-result.json");

    /// The same result inside a result set, as `--json` writes a whole run.
    fn set() -> String {
        format!(
            "{{\"schema_version\": 1, \"oslab_version\": \"0.1.0\", \"command\": \"oslab run null --json x\", \"results\": [{ONE}]}}\n"
        )
    }

    /// What `read_file` makes of a file of these bytes (it reads the file with
    /// `oslab_sys::infile`, whose own tests cover the reading, then this).
    fn read(bytes: &[u8]) -> Result<Vec<ExperimentResult>, Failure> {
        let text = std::str::from_utf8(oslab_sys::infile::skip_bom(bytes))
            .map_err(|_| Failure::usage("results.json is not UTF-8 text"))?;
        parse_set(text, "results.json").map(|set| set.results)
    }

    fn judge_refused(r: Result<Vec<ExperimentResult>, Failure>) -> Result<(), TestCaseError> {
        match r {
            Ok(_) => Err(TestCaseError::fail("read as results")),
            Err(f) => {
                prop_assert_eq!(f.code, EXIT_USAGE, "{}", f.message);
                prop_assert!(!f.message.is_empty());
                Ok(())
            }
        }
    }

    /// Everything `report` and `compare` do with results they read.
    fn render(results: &[ExperimentResult]) {
        for r in results {
            let _ = oslab_report::table::render_result(r, Some(80));
        }
        let _ = oslab_report::table::render_verdicts(results, Some(80));
        let _ = oslab_report::html::report(results, "fuzz");
        let reference: Vec<ExperimentResult> = vec![serde_json::from_str(ONE).unwrap()];
        use oslab_model::compare::{compare, side};
        for (a, b) in [(results, &reference[..]), (&reference[..], results)] {
            let c = compare(side("a", a), a, side("b", b), b, 7);
            let _ = oslab_report::compare::text(&c, Some(80));
            let _ = oslab_report::compare::html(&c);
            let _ = serde_json::to_string_pretty(&c).unwrap();
        }
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
                "[null]",
                "[1e308, -1e308]",
                "\"Skipped\"",
                "{\"state\": \"failed\", \"error\": \"x\"}",
            ])
            .prop_map(String::from),
            any::<f64>().prop_map(|f| if f.is_finite() {
                format!("{f:?}")
            } else {
                "null".into()
            }),
            any::<i64>().prop_map(|n| n.to_string()),
            "\\PC{0,6}".prop_map(|s| serde_json::to_string(&s).unwrap()),
        ]
    }

    fn any_bytes() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            proptest::collection::vec(any::<u8>(), 0..300),
            "(?s)\\PC{0,300}".prop_map(String::into_bytes),
        ]
    }

    /// A file cut anywhere (but in its trailing white space) is refused.
    fn truncated(cut: Index, whole_set: bool) -> Result<(), TestCaseError> {
        let full = if whole_set { set() } else { ONE.to_string() };
        let n = cut.index(full.len());
        let part = &full.as_bytes()[..n];
        if full[n..].trim().is_empty() {
            prop_assert!(read(part).is_ok());
            Ok(())
        } else {
            judge_refused(read(part))
        }
    }

    /// One value of the file replaced (a number, a string, a list, ...): refused,
    /// or read and rendered without a panic.
    fn changed_value(at: Index, v: &str, whole_set: bool) -> Result<(), TestCaseError> {
        let full = if whole_set { set() } else { ONE.to_string() };
        // a value starts after ": ", or begins a line of its own in a list
        let mut starts: Vec<usize> = full.match_indices(": ").map(|(i, _)| i + 2).collect();
        let mut line_start = 0;
        for line in full.split_inclusive('\n') {
            let indent = line.len() - line.trim_start().len();
            if !line.trim_start().starts_with(['"', '}', ']']) && !line.trim().is_empty() {
                starts.push(line_start + indent);
            }
            line_start += line.len();
        }
        let s = starts[at.index(starts.len())];
        let rest = &full[s..];
        // the end of that value: the next comma or line end outside a string
        let end = s + rest.find([',', '\n']).unwrap_or(rest.len());
        let text = format!("{}{v}{}", &full[..s], &full[end..]);
        match read(text.as_bytes()) {
            Ok(results) => {
                let r = std::panic::catch_unwind(|| render(&results));
                prop_assert!(
                    r.is_ok(),
                    "rendering panicked for {}",
                    &text[s.saturating_sub(40)..(s + 60).min(text.len())]
                );
            }
            Err(f) => prop_assert_eq!(f.code, EXIT_USAGE),
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(config(128))]

        #[test]
        fn every_truncation_is_a_usage_error(cut in any::<Index>(), whole_set in any::<bool>()) {
            truncated(cut, whole_set)?;
        }

        #[test]
        fn any_bytes_are_a_usage_error(bytes in any_bytes()) {
            judge_refused(read(&bytes))?;
        }

        #[test]
        fn a_changed_value_is_refused_or_renders(
            at in any::<Index>(),
            v in value(),
            whole_set in any::<bool>(),
        ) {
            changed_value(at, &v, whole_set)?;
        }
    }

    // The same with many cases, outside the default run (docs/architecture.md,
    // "Fuzz runs"): `cargo test -p oslab --release --bin oslab -- --ignored fuzz`
    proptest! {
        #![proptest_config(fuzz_config(20_000))]

        #[test]
        #[ignore = "a fuzz run: cargo test -p oslab --release --bin oslab -- --ignored fuzz"]
        fn fuzz_results_truncated(cut in any::<Index>(), whole_set in any::<bool>()) {
            truncated(cut, whole_set)?;
        }

        #[test]
        #[ignore = "a fuzz run: cargo test -p oslab --release --bin oslab -- --ignored fuzz"]
        fn fuzz_results_any_bytes(bytes in any_bytes()) {
            judge_refused(read(&bytes))?;
        }

        #[test]
        #[ignore = "a fuzz run: cargo test -p oslab --release --bin oslab -- --ignored fuzz"]
        fn fuzz_results_changed_value(
            at in any::<Index>(),
            v in value(),
            whole_set in any::<bool>(),
        ) {
            changed_value(at, &v, whole_set)?;
        }
    }

    /// Regression (found by `a_changed_value_is_refused_or_renders`): the machine
    /// section multiplied the kernel's dirty threshold in pages by the page size
    /// unchecked, so a result file with a huge threshold made `report` panic.
    #[test]
    fn a_huge_dirty_threshold_renders() {
        let text = ONE.replacen(
            "\"nr_dirty_threshold_pages\": ",
            "\"nr_dirty_threshold_pages\": 4503599627370496, \"was\": ",
            1,
        );
        let results = read(text.as_bytes()).unwrap();
        render(&results);
    }

    #[test]
    fn the_fixture_reads_both_ways() {
        assert_eq!(read(ONE.as_bytes()).unwrap().len(), 1);
        assert_eq!(read(set().as_bytes()).unwrap().len(), 1);
        render(&read(set().as_bytes()).unwrap());
    }
}

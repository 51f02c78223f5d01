//! Property tests of scenario files and `--set` values (see the module doc in
//! `scenario/mod.rs`).
use super::*;
use oslab_sys::testing::{fuzz_config, proptest_config as config};
use proptest::prelude::*;

/// A valid scenario using every field a user may write.
const VALID: &str = r#"
title = "mine"
description = "every field"
rules = "linux-6"
dirtyable_bytes = 1073741824
duration_s = 5.0
cpus = 2
copy_bytes_s = 2000000000.0
policy = "wcall-fair"
sample_ms = 100.0
wcall_block_ms = 100.0
[sysctls]
dirty_ratio = 20
dirty_bytes = 67108864
dirty_background_ratio = 10
dirty_background_bytes = 33554432
dirty_writeback_centisecs = 500
dirty_expire_centisecs = 3000
[device]
bandwidth_bytes_s = 10485760.0
request_latency_ns = 100000
max_request_bytes = 524288
queue_bytes = 67108864
[[writers]]
name = "rt"
type = "periodic"
bytes = 524288
period_ms = 20.0
count = 100
class = { rt = { priority = 55 } }
group = "rt-high"
fsync_every = 4
start_ms = 10.0
[[writers]]
name = "stream"
type = "rate"
bytes_per_s = 1048576.0
chunk = 65536
class = { normal = { nice = 5 } }
[[writers]]
name = "bulk"
type = "bulk"
chunk = 1048576
class = { normal = { nice = 0 } }
"#;

/// Values that poke at the edges of every number the scenario holds.
fn value() -> impl Strategy<Value = String> {
    prop_oneof![
        proptest::sample::select(vec![
            "0",
            "-1",
            "1",
            "0.0",
            "-0.0",
            "nan",
            "inf",
            "-inf",
            "1e308",
            "-1e308",
            "18446744073709551615",
            "18446744073709551616",
            "9223372036854775807",
            "-9223372036854775808",
            "4294967295",
            "4294967296",
            "1e-300",
            "\"x\"",
            "\"\"",
            "true",
            "[]",
            "{}",
            "\"linux-2.6.26\"",
            "\"wcall\"",
            "0x10",
            "1_000",
        ])
        .prop_map(String::from),
        any::<i64>().prop_map(|n| n.to_string()),
        any::<f64>().prop_map(|f| format!("{f:?}")),
    ]
}

/// One edit of a text: a byte range cut or duplicated, characters put in, a
/// value after an `=` replaced, or two lines swapped.
#[derive(Debug, Clone)]
enum Edit {
    Cut(proptest::sample::Index, usize),
    Insert(proptest::sample::Index, String),
    Value(proptest::sample::Index, String),
    Swap(proptest::sample::Index, proptest::sample::Index),
    Duplicate(proptest::sample::Index, usize),
    /// A number replaced by another of the same TOML type, of any magnitude.
    Number(proptest::sample::Index, u64, f64),
}

/// A float as TOML writes it.
fn toml_float(f: f64) -> String {
    if f.is_nan() {
        "nan".into()
    } else if f.is_infinite() {
        if f > 0.0 { "inf".into() } else { "-inf".into() }
    } else {
        format!("{f:?}")
    }
}

fn edit() -> impl Strategy<Value = Edit> {
    use proptest::sample::Index;
    prop_oneof![
        1 => (any::<Index>(), 1usize..40).prop_map(|(i, n)| Edit::Cut(i, n)),
        1 => (any::<Index>(), "(?s).{1,8}").prop_map(|(i, s)| Edit::Insert(i, s)),
        4 => (any::<Index>(), value()).prop_map(|(i, v)| Edit::Value(i, v)),
        1 => (any::<Index>(), any::<Index>()).prop_map(|(a, b)| Edit::Swap(a, b)),
        1 => (any::<Index>(), 1usize..60).prop_map(|(i, n)| Edit::Duplicate(i, n)),
        6 => (
            any::<Index>(),
            (any::<u64>(), 0u32..64).prop_map(|(n, s)| (n >> s).min(i64::MAX as u64)),
            prop_oneof![any::<f64>(), (-1e3f64..1e3, -30i32..30).prop_map(|(m, e)| m * 10f64.powi(e))],
        )
            .prop_map(|(i, n, f)| Edit::Number(i, n, f)),
    ]
}

/// The byte offset `i` picks, moved back to a character boundary.
fn at(text: &str, i: &proptest::sample::Index) -> usize {
    let mut k = i.index(text.len() + 1);
    while !text.is_char_boundary(k) {
        k -= 1;
    }
    k
}

fn apply(text: &str, e: &Edit) -> String {
    let mut t = text.to_string();
    match e {
        Edit::Cut(i, n) => {
            let a = at(&t, i);
            let mut b = (a + n).min(t.len());
            while !t.is_char_boundary(b) {
                b -= 1;
            }
            t.replace_range(a..b, "");
        }
        Edit::Insert(i, s) => t.insert_str(at(&t, i), s),
        Edit::Value(i, v) => {
            let mut lines: Vec<String> = t.lines().map(String::from).collect();
            let with_value: Vec<usize> = (0..lines.len())
                .filter(|&k| lines[k].contains('='))
                .collect();
            if !with_value.is_empty() {
                let k = with_value[i.index(with_value.len())];
                let key = lines[k].split('=').next().unwrap().to_string();
                lines[k] = format!("{key}= {v}");
            }
            t = lines.join("\n");
        }
        Edit::Number(i, n, f) => {
            let mut lines: Vec<String> = t.lines().map(String::from).collect();
            let numeric: Vec<usize> = (0..lines.len())
                .filter(|&k| {
                    lines[k]
                        .split_once('=')
                        .is_some_and(|(_, v)| v.trim().parse::<f64>().is_ok())
                })
                .collect();
            if !numeric.is_empty() {
                let k = numeric[i.index(numeric.len())];
                let (key, v) = lines[k].split_once('=').unwrap();
                let v = if v.trim().parse::<i64>().is_ok() {
                    n.to_string()
                } else {
                    toml_float(*f)
                };
                lines[k] = format!("{key}= {v}");
            }
            t = lines.join("\n");
        }
        Edit::Swap(a, b) => {
            let mut lines: Vec<&str> = t.lines().collect();
            if !lines.is_empty() {
                let (x, y) = (a.index(lines.len()), b.index(lines.len()));
                lines.swap(x, y);
            }
            t = lines.join("\n");
        }
        Edit::Duplicate(i, n) => {
            let a = at(&t, i);
            let mut b = (a + n).min(t.len());
            while !t.is_char_boundary(b) {
                b -= 1;
            }
            let copy = t[a..b].to_string();
            t.insert_str(b, &copy);
        }
    }
    t
}

fn judge(text: &str) -> Result<(), TestCaseError> {
    match from_toml("s.toml", text) {
        Ok(s) => {
            validate(&s.config)
                .map_err(|e| TestCaseError::fail(format!("accepted but invalid: {e}")))?;
        }
        Err(e) => {
            prop_assert!(e.starts_with("s.toml"), "{}", e);
            prop_assert!(!e.contains('\n'), "{}", e);
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(config(256))]

    #[test]
    fn any_text_never_panics(text in "(?s).{0,200}") {
        judge(&text)?;
    }

    #[test]
    fn mutations_of_a_valid_scenario_never_panic(edits in proptest::collection::vec(edit(), 1..4)) {
        let text = edits.iter().fold(VALID.to_string(), |t, e| apply(&t, e));
        judge(&text)?;
    }

    #[test]
    fn mutations_of_the_builtins_never_panic(
        which in any::<proptest::sample::Index>(),
        edits in proptest::collection::vec(edit(), 1..4),
    ) {
        let all = builtin();
        let text = toml::to_string(&all[which.index(all.len())].config).unwrap();
        let text = edits.iter().fold(text, |t, e| apply(&t, e));
        judge(&text)?;
    }

    #[test]
    fn settings_of_any_text_never_panic(
        key in prop_oneof![
            proptest::sample::select(
                crate::keys::KEYS.iter().map(|k| k.setting.name()).collect::<Vec<_>>()
            ).prop_map(String::from),
            ".{0,12}",
        ],
        v in prop_oneof![value(), ".{0,12}", "[0-9.]{1,24}[KMGT]?(iB)?(/s)?"],
    ) {
        let base = find("testbed-fig2").unwrap().config;
        let _ = parse_bytes(&v);
        let set = crate::sets::parse_sets(&[format!("{key}={v}")]);
        if let Ok(c) = set.and_then(|sets| crate::sets::configure(&base, &sets)) {
            validate(&c).map_err(|e| TestCaseError::fail(e.to_string()))?;
        }
    }
}

proptest! {
    #![proptest_config(config(64))]

    /// A scenario `from_toml` accepts can be simulated: no panic (run for at
    /// most a simulated second, so the property stays fast).
    #[test]
    fn accepted_scenarios_simulate_without_panic(edits in proptest::collection::vec(edit(), 1..3)) {
        let text = edits.iter().fold(VALID.to_string(), |t, e| apply(&t, e));
        if let Ok(mut s) = from_toml("s.toml", &text) {
            s.config.duration_s = s.config.duration_s.min(1.0);
            let r = std::panic::catch_unwind(|| crate::engine::simulate(&s.config));
            prop_assert!(r.is_ok(), "{}", text);
        }
    }
}

// The same with many cases, outside the default run (docs/architecture.md,
// "Property tests and fuzz runs"):
// `cargo test -p oslab-wbsim --release --lib -- --ignored fuzz`
proptest! {
    #![proptest_config(fuzz_config(20_000))]

    #[test]
    #[ignore = "a fuzz run: cargo test -p oslab-wbsim --release --lib -- --ignored fuzz"]
    fn fuzz_scenario_any_text(text in "(?s).{0,400}") {
        judge(&text)?;
    }

    #[test]
    #[ignore = "a fuzz run: cargo test -p oslab-wbsim --release --lib -- --ignored fuzz"]
    fn fuzz_scenario_mutations(edits in proptest::collection::vec(edit(), 1..6)) {
        let text = edits.iter().fold(VALID.to_string(), |t, e| apply(&t, e));
        judge(&text)?;
    }

    #[test]
    #[ignore = "a fuzz run: cargo test -p oslab-wbsim --release --lib -- --ignored fuzz"]
    fn fuzz_scenario_builtin_mutations(
        which in any::<proptest::sample::Index>(),
        edits in proptest::collection::vec(edit(), 1..6),
    ) {
        let all = builtin();
        let text = toml::to_string(&all[which.index(all.len())].config).unwrap();
        let text = edits.iter().fold(text, |t, e| apply(&t, e));
        judge(&text)?;
    }

    #[test]
    #[ignore = "a fuzz run: cargo test -p oslab-wbsim --release --lib -- --ignored fuzz"]
    fn fuzz_scenario_accepted_simulate(edits in proptest::collection::vec(edit(), 1..4)) {
        let text = edits.iter().fold(VALID.to_string(), |t, e| apply(&t, e));
        if let Ok(mut s) = from_toml("s.toml", &text) {
            s.config.duration_s = s.config.duration_s.min(1.0);
            let r = std::panic::catch_unwind(|| crate::engine::simulate(&s.config));
            prop_assert!(r.is_ok(), "{}", text);
        }
    }
}

/// Regression (found by `accepted_scenarios_simulate_without_panic`): each of
/// these passed `from_toml` and then made the engine panic (an overflow of its
/// nanosecond clock or of the kernel's limit arithmetic); now each is refused
/// with a sentence naming the field.
#[test]
fn values_the_engine_cannot_run_are_refused() {
    for (key, value) in [
        ("period_ms", "1.8795746559375476e158"),
        ("dirty_ratio", "4611686018427387904"),
        ("dirty_background_ratio", "4611686018427387904"),
        ("copy_bytes_s", "1e-300"),
        ("bandwidth_bytes_s", "1e-300"),
        ("chunk", "9223372036854775807"),
        ("dirty_writeback_centisecs", "9223372036854775807"),
    ] {
        let text: String = VALID
            .lines()
            .map(|l| match l.split_once('=') {
                Some((k, _)) if k.trim() == key => format!("{key} = {value}\n"),
                _ => format!("{l}\n"),
            })
            .collect();
        let e = from_toml("s.toml", &text).expect_err(key);
        assert!(e.contains(key) || e.contains("write of"), "{key}: {e}");
    }
}

#[test]
fn the_valid_scenario_is_valid() {
    let s = from_toml("s.toml", VALID).unwrap();
    assert_eq!(s.config.writers.len(), 3);
}

/// Every built-in scenario written as TOML reads back as the same scenario.
#[test]
fn builtins_round_trip_through_toml() {
    for s in builtin() {
        let text = toml::to_string(&s.config).unwrap();
        let back = from_toml(&s.name, &text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert_eq!(back.config, s.config, "{}", s.name);
    }
}

//! Typed settings declared once, for what a user changes with `--set NAME=VALUE`:
//! an experiment's (`oslab run ID --set ...`) and the simulator's (`oslab sim
//! run|sweep --set ...`).
//!
//! Each setting is declared once, as a typed static (`Setting<Bytes>`,
//! `Setting<Seconds>`, ...) with its help, its quick and full defaults and the range
//! it accepts. The CLI parses every `--set` once against the declarations of the
//! experiments it names ([`AnySetting::parse_value`]): a value of the wrong kind or
//! outside the range is a usage error naming the range, never a silent clamp. An
//! experiment reads the parsed value in its plan with the lab's `Planner::get`
//! (`p.get(&SETTING)`), which also records it in the result's parameters, so what is
//! recorded is what ran. The simulator's keys (`oslab_wbsim::settings`) are declared
//! the same way; `oslab list --settings` and `oslab sim list --settings` print both
//! from the declarations. Sizes, rates and durations are read and shown in
//! `oslab_units`' grammar.
//!
//! Its own crate (not a module of the lab) because the simulator, which the lab
//! depends on, declares its keys with it.
#![forbid(unsafe_code)]

use std::any::Any;
use std::fmt::Debug;
use std::path::PathBuf;
use std::sync::Arc;

use oslab_units::{
    TimeUnit, UnitError, human_bytes, parse_duration_with_unit, parse_human_rate, parse_human_size,
};

/// Why a duration setting's value was refused: a bare number needs its unit, as
/// every duration on the command line does.
fn duration_refused(e: &UnitError) -> String {
    match e {
        UnitError::DurationNeedsUnit(t) => format!("a duration needs its unit: {t}ms or {t}s"),
        _ => "not a duration such as 10ms or 1.5s".into(),
    }
}

/// Why a rate setting's value was refused: a size is not a rate, and the
/// refusal gives the rate to type instead (`8MiB` was the writer's rate once).
fn rate_refused(e: &UnitError) -> String {
    match e {
        UnitError::RateNeedsPerSecond(t) if parse_human_size(t).is_ok() => {
            format!("not a rate (a size needs /s: {t}/s)")
        }
        _ => "not a rate (try 40MiB/s)".into(),
    }
}

/// A kind of setting: how its text is parsed and shown.
pub trait Kind: 'static {
    type Value: Clone + PartialOrd + Debug + serde::Serialize + Send + Sync + 'static;
    /// What `oslab list --settings` calls the kind.
    fn label(names: &'static [&'static str]) -> String;
    /// The value of `text`, or why not (without the setting's name).
    fn parse(text: &str, names: &'static [&'static str]) -> Result<Self::Value, String>;
    fn show(v: &Self::Value) -> String;
}

/// A size: `256MiB`, `1G`, `4096`.
pub struct Bytes;
/// A whole number.
pub struct Count;
/// Seconds, fractional allowed: `2.5`, `2.5s` or `500ms`.
pub struct Seconds;
/// `true`/`false`, `yes`/`no`, `on`/`off`, `1`/`0`.
pub struct Flag;
/// A file to write; none by default.
pub struct FilePath;
/// A command line, run by `sh -c`; none by default. `{file}` in it stands for a
/// file the experiment names.
pub struct Command;
/// A comma-separated subset of the setting's `names`; all of them by default or
/// when given `all`.
pub struct Choices;
/// Exactly one of the setting's `names`.
pub struct OneOf;
/// Bytes per second: `40MiB/s`, `41943040` (a size needs /s).
pub struct Rate;
/// Milliseconds, fractional allowed: `2.5`, `2.5ms` or `1s`.
pub struct Millis;
/// A plain number, fractional or negative allowed: `0.5`, `-20`.
pub struct Number;
/// `auto` (held as 0: the program decides) or a size of at least 1 MiB.
pub struct SizeOrAuto;

impl Kind for Bytes {
    type Value = u64;
    fn label(_: &'static [&'static str]) -> String {
        "bytes".into()
    }
    fn parse(text: &str, _: &'static [&'static str]) -> Result<u64, String> {
        parse_human_size(text).map_err(|_| "not a size (try 256MiB or 1G)".into())
    }
    fn show(v: &u64) -> String {
        human_bytes(*v)
    }
}

impl Kind for Count {
    type Value = u64;
    fn label(_: &'static [&'static str]) -> String {
        "count".into()
    }
    fn parse(text: &str, _: &'static [&'static str]) -> Result<u64, String> {
        text.parse().map_err(|_| "not a whole number".into())
    }
    fn show(v: &u64) -> String {
        v.to_string()
    }
}

impl Kind for Seconds {
    type Value = f64;
    fn label(_: &'static [&'static str]) -> String {
        "seconds".into()
    }
    fn parse(text: &str, _: &'static [&'static str]) -> Result<f64, String> {
        parse_duration_with_unit(text)
            .map(|d| d.in_unit(TimeUnit::Seconds))
            .map_err(|e| duration_refused(&e))
    }
    fn show(v: &f64) -> String {
        format!("{v} s")
    }
}

impl Kind for Flag {
    type Value = bool;
    fn label(_: &'static [&'static str]) -> String {
        "bool".into()
    }
    fn parse(text: &str, _: &'static [&'static str]) -> Result<bool, String> {
        match text.to_ascii_lowercase().as_str() {
            "true" | "yes" | "1" | "on" => Ok(true),
            "false" | "no" | "0" | "off" => Ok(false),
            _ => Err("not true or false".into()),
        }
    }
    fn show(v: &bool) -> String {
        v.to_string()
    }
}

impl Kind for FilePath {
    type Value = Option<PathBuf>;
    fn label(_: &'static [&'static str]) -> String {
        "path".into()
    }
    fn parse(text: &str, _: &'static [&'static str]) -> Result<Option<PathBuf>, String> {
        if text.is_empty() {
            Err("needs a file name".into())
        } else {
            Ok(Some(PathBuf::from(text)))
        }
    }
    fn show(v: &Option<PathBuf>) -> String {
        v.as_ref()
            .map_or_else(|| "none".into(), |p| p.display().to_string())
    }
}

impl Kind for Command {
    type Value = Option<String>;
    fn label(_: &'static [&'static str]) -> String {
        "command".into()
    }
    fn parse(text: &str, _: &'static [&'static str]) -> Result<Option<String>, String> {
        let t = text.trim();
        if t.is_empty() {
            Err("needs a command".into())
        } else {
            Ok(Some(t.to_string()))
        }
    }
    fn show(v: &Option<String>) -> String {
        v.clone().unwrap_or_else(|| "none".into())
    }
}

impl Kind for Choices {
    /// The chosen names in the declaration's order; empty means all (the default).
    type Value = Vec<&'static str>;
    fn label(names: &'static [&'static str]) -> String {
        format!("some of {}", names.join(","))
    }
    fn parse(text: &str, names: &'static [&'static str]) -> Result<Vec<&'static str>, String> {
        if text == "all" && !names.contains(&"all") {
            return Ok(Vec::new());
        }
        let given: Vec<&str> = text.split(',').map(str::trim).collect();
        if let Some(bad) = given.iter().find(|g| !names.contains(g)) {
            return Err(format!("'{bad}' is not one of {}", names.join(", ")));
        }
        Ok(names
            .iter()
            .copied()
            .filter(|n| given.contains(n))
            .collect())
    }
    fn show(v: &Vec<&'static str>) -> String {
        if v.is_empty() {
            "all".into()
        } else {
            v.join(",")
        }
    }
}

impl Kind for OneOf {
    type Value = &'static str;
    fn label(names: &'static [&'static str]) -> String {
        format!("one of {}", names.join(","))
    }
    fn parse(text: &str, names: &'static [&'static str]) -> Result<&'static str, String> {
        names
            .iter()
            .copied()
            .find(|n| *n == text)
            .ok_or_else(|| format!("'{text}' is not one of {}", names.join(", ")))
    }
    fn show(v: &&'static str) -> String {
        v.to_string()
    }
}

impl Kind for SizeOrAuto {
    type Value = u64;
    fn label(_: &'static [&'static str]) -> String {
        "auto or bytes".into()
    }
    fn parse(text: &str, _: &'static [&'static str]) -> Result<u64, String> {
        if text == "auto" {
            return Ok(0);
        }
        parse_human_size(text)
            .ok()
            .filter(|b| *b >= 1 << 20)
            .ok_or_else(|| "use auto or a size of at least 1MiB such as 2MiB".into())
    }
    fn show(v: &u64) -> String {
        if *v == 0 {
            "auto".into()
        } else {
            human_bytes(*v)
        }
    }
}

impl Kind for Rate {
    type Value = u64;
    fn label(_: &'static [&'static str]) -> String {
        "bytes/s".into()
    }
    fn parse(text: &str, _: &'static [&'static str]) -> Result<u64, String> {
        parse_human_rate(text).map_err(|e| rate_refused(&e))
    }
    fn show(v: &u64) -> String {
        format!("{}/s", human_bytes(*v))
    }
}

impl Kind for Millis {
    type Value = f64;
    fn label(_: &'static [&'static str]) -> String {
        "ms".into()
    }
    fn parse(text: &str, _: &'static [&'static str]) -> Result<f64, String> {
        parse_duration_with_unit(text)
            .map(|d| d.in_unit(TimeUnit::Millis))
            .map_err(|e| duration_refused(&e))
    }
    fn show(v: &f64) -> String {
        format!("{v} ms")
    }
}

impl Kind for Number {
    type Value = f64;
    fn label(_: &'static [&'static str]) -> String {
        "number".into()
    }
    fn parse(text: &str, _: &'static [&'static str]) -> Result<f64, String> {
        match text.parse::<f64>() {
            Ok(v) if v.is_finite() => Ok(v),
            _ => Err("not a number".into()),
        }
    }
    fn show(v: &f64) -> String {
        format!("{v}")
    }
}

/// One setting, declared once.
pub struct Setting<K: Kind> {
    pub name: &'static str,
    pub help: &'static str,
    pub quick: K::Value,
    pub full: K::Value,
    /// The least and the most accepted, both included.
    pub bounds: Option<(K::Value, K::Value)>,
    /// For [`Choices`]: the names to choose from.
    pub names: &'static [&'static str],
}

impl<K: Kind> Setting<K> {
    /// The default for the mode.
    pub fn default_for(&self, quick: bool) -> K::Value {
        if quick {
            self.quick.clone()
        } else {
            self.full.clone()
        }
    }

    /// Parses `text` and checks it against the bounds.
    pub fn parse(&self, text: &str) -> Result<K::Value, String> {
        let t = text.trim();
        let v = K::parse(t, self.names).map_err(|why| format!("{}={t}: {why}", self.name))?;
        self.check(&v)
            .map_err(|range| format!("{}={t} is out of range: {range}", self.name))?;
        Ok(v)
    }

    /// Checks a value however it came (`--set`, a scenario file) against the
    /// bounds; the error is the range to give ("give 100 to 1000"). A value that
    /// compares with nothing (NaN) is outside any range.
    pub fn check(&self, v: &K::Value) -> Result<(), String> {
        match &self.bounds {
            Some((lo, hi)) if !(*lo <= *v && *v <= *hi) => {
                Err(format!("give {} to {}", K::show(lo), K::show(hi)))
            }
            _ => Ok(()),
        }
    }
}

/// A parsed `--set` value, typed as its declaration says.
#[derive(Clone)]
pub struct SetValue {
    pub text: String,
    value: Arc<dyn Any + Send + Sync>,
}

impl Debug for SetValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

impl SetValue {
    /// The value as `K` declares it; None when it was parsed for another kind.
    pub fn get<K: Kind>(&self) -> Option<&K::Value> {
        self.value.downcast_ref::<K::Value>()
    }
}

/// What the CLI and `oslab list --settings` need of any setting.
pub trait AnySetting: Sync {
    fn name(&self) -> &'static str;
    fn help(&self) -> &'static str;
    fn kind_label(&self) -> String;
    /// The default in quick and in full mode, as text.
    fn defaults(&self) -> (String, String);
    /// "a to b", when the setting has bounds.
    fn range(&self) -> Option<String>;
    /// Parses and checks `text`, or says in one sentence why not.
    fn parse_value(&self, text: &str) -> Result<SetValue, String>;
}

impl<K: Kind> AnySetting for Setting<K>
where
    K::Value: Sync,
{
    fn name(&self) -> &'static str {
        self.name
    }
    fn help(&self) -> &'static str {
        self.help
    }
    fn kind_label(&self) -> String {
        K::label(self.names)
    }
    fn defaults(&self) -> (String, String) {
        (K::show(&self.quick), K::show(&self.full))
    }
    fn range(&self) -> Option<String> {
        self.bounds
            .as_ref()
            .map(|(lo, hi)| format!("{} to {}", K::show(lo), K::show(hi)))
    }
    fn parse_value(&self, text: &str) -> Result<SetValue, String> {
        let v = self.parse(text)?;
        Ok(SetValue {
            text: text.trim().to_string(),
            value: Arc::new(v),
        })
    }
}

/// A `--set NAME=VALUE` argument split into its name and its value, each
/// trimmed: the one grammar of `--set`, for the experiments' settings and the
/// simulator's alike. Without `=` it is one sentence naming the argument.
pub fn split_assignment(arg: &str) -> Result<(&str, &str), String> {
    arg.split_once('=')
        .map(|(name, value)| (name.trim(), value.trim()))
        .ok_or_else(|| format!("{arg}: expected NAME=VALUE"))
}

/// Declared settings of every experiment must not repeat a name.
pub type Declared = &'static [&'static dyn AnySetting];

#[cfg(test)]
mod tests {
    use super::*;

    static SIZE: Setting<Bytes> = Setting {
        name: "size",
        help: "",
        quick: 64 << 20,
        full: 1 << 30,
        bounds: Some((1 << 20, 16 << 30)),
        names: &[],
    };
    static WHICH: Setting<Choices> = Setting {
        name: "s",
        help: "",
        quick: Vec::new(),
        full: Vec::new(),
        bounds: None,
        names: &["alone", "bulk", "rt"],
    };

    #[test]
    fn a_size_or_auto_reads_auto_as_zero_and_refuses_less_than_a_mebibyte() {
        let s: Setting<SizeOrAuto> = Setting {
            name: "sync_guard",
            help: "",
            quick: 0,
            full: 0,
            bounds: Some((0, 256 << 20)),
            names: &[],
        };
        assert_eq!(s.parse("auto"), Ok(0));
        assert_eq!(s.parse("2MiB"), Ok(2 << 20));
        assert_eq!(SizeOrAuto::show(&0), "auto");
        assert!(s.parse("512KiB").unwrap_err().contains("at least 1MiB"));
        assert!(s.parse("0").is_err(), "0 is not how auto is asked for");
        assert!(s.parse("1GiB").unwrap_err().contains("out of range"));
    }

    #[test]
    fn parses_each_kind() {
        assert_eq!(SIZE.parse("64MiB"), Ok(64 << 20));
        assert_eq!(
            SIZE.parse("big").unwrap_err(),
            "size=big: not a size (try 256MiB or 1G)"
        );
        assert_eq!(
            SIZE.parse("100").unwrap_err(),
            "size=100 is out of range: give 1 MiB to 16 GiB"
        );
        assert_eq!(Flag::parse("yes", &[]), Ok(true));
        assert!(Flag::parse("maybe", &[]).is_err());
        assert_eq!(Count::parse("12", &[]), Ok(12));
        assert_eq!(Seconds::parse("1.5s", &[]), Ok(1.5));
        // regression: the defaults `oslab list --settings` shows did not parse back
        assert_eq!(Seconds::parse("1.5 s", &[]), Ok(1.5));
        assert_eq!(WHICH.parse("all"), Ok(vec![]));
        assert!(Seconds::parse("inf", &[]).is_err());
        // one grammar with the duration options: a bare number is refused
        assert_eq!(
            Seconds::parse("5", &[]).unwrap_err(),
            "a duration needs its unit: 5ms or 5s"
        );
        assert_eq!(Millis::parse("250ms", &[]), Ok(250.0));
        assert!(Millis::parse("250", &[]).is_err());
        assert_eq!(Millis::parse("0", &[]), Ok(0.0));
        assert_eq!(WHICH.parse("rt, alone"), Ok(vec!["alone", "rt"]));
        assert_eq!(
            WHICH.parse("rt,solo").unwrap_err(),
            "s=rt,solo: 'solo' is not one of alone, bulk, rt"
        );
        assert!(WHICH.parse("").is_err());
        assert!(FilePath::parse("", &[]).is_err());
        assert!(Command::parse("  ", &[]).is_err());
        assert_eq!(
            Command::parse(" dd of={file} ", &[]),
            Ok(Some("dd of={file}".to_string()))
        );
        assert_eq!(OneOf::parse("bulk", WHICH.names), Ok("bulk"));
        assert_eq!(
            OneOf::parse("rt,bulk", WHICH.names).unwrap_err(),
            "'rt,bulk' is not one of alone, bulk, rt"
        );
        assert_eq!(Rate::parse("40MiB/s", &[]), Ok(40 << 20));
        assert_eq!(Rate::parse("4096", &[]), Ok(4096));
        assert_eq!(
            Rate::parse("fast", &[]).unwrap_err(),
            "not a rate (try 40MiB/s)"
        );
        assert_eq!(Rate::show(&(40 << 20)), "40 MiB/s");
        assert_eq!(Millis::parse("2.5ms", &[]), Ok(2.5));
        assert_eq!(Millis::parse("1s", &[]), Ok(1000.0));
        assert_eq!(Seconds::parse("500ms", &[]), Ok(0.5));
        assert!(Seconds::parse("5 parsecs", &[]).is_err());
        assert!(Millis::parse("nan", &[]).is_err());
        assert_eq!(Number::parse("-20", &[]), Ok(-20.0));
        assert!(Number::parse("nan", &[]).is_err());
        assert_eq!(
            Rate::parse("40MiB", &[]).unwrap_err(),
            "not a rate (a size needs /s: 40MiB/s)",
            "a size is not a rate, and the refusal gives the rate to type"
        );
        assert_eq!(Rate::parse("8 MiB/s", &[]), Ok(8 << 20), "as shown");
    }

    /// A value checked as it comes from a file: the same bounds as `--set`, NaN
    /// outside every range.
    #[test]
    fn values_from_elsewhere_are_checked_against_the_same_bounds() {
        static SHARE: Setting<Number> = Setting {
            name: "share",
            help: "",
            quick: 0.5,
            full: 0.5,
            bounds: Some((0.0, 1.0)),
            names: &[],
        };
        assert_eq!(SHARE.check(&0.25), Ok(()));
        assert_eq!(SHARE.check(&5.0), Err("give 0 to 1".to_string()));
        assert_eq!(SHARE.check(&f64::NAN), Err("give 0 to 1".to_string()));
        assert_eq!(
            SHARE.parse("5").unwrap_err(),
            "share=5 is out of range: give 0 to 1"
        );
    }

    #[test]
    fn an_assignment_is_a_name_and_a_value() {
        assert_eq!(split_assignment(" size = 2MiB "), Ok(("size", "2MiB")));
        assert_eq!(split_assignment("cmd=a=b"), Ok(("cmd", "a=b")));
        assert_eq!(
            split_assignment("size").unwrap_err(),
            "size: expected NAME=VALUE"
        );
    }

    #[test]
    fn a_parsed_value_comes_back_typed() {
        let v = SIZE.parse_value(" 2MiB ").unwrap();
        assert_eq!(v.text, "2MiB");
        assert_eq!(v.get::<Bytes>(), Some(&(2 << 20)));
        assert_eq!(v.get::<Seconds>(), None);
        assert_eq!(SIZE.range().as_deref(), Some("1 MiB to 16 GiB"));
        assert_eq!(WHICH.defaults().0, "all");
    }
}

/// Property tests of every kind's parser: any text gives a value or a reason, never a
/// panic; a value a setting accepts is inside its bounds; what `show` prints (the
/// defaults and ranges `oslab list --settings` shows) parses back. A fuzz-like run:
/// `PROPTEST_CASES=100000 cargo test -p oslab-settings -- props`
#[cfg(test)]
mod props {
    use super::*;
    use oslab_sys::testing::proptest_config as config;
    use proptest::prelude::*;

    const NAMES: &[&str] = &["alone", "bulk", "rt45x2", "fig7-nice4"];

    static BOUNDED: Setting<Seconds> = Setting {
        name: "duration",
        help: "",
        quick: 1.0,
        full: 10.0,
        bounds: Some((0.2, 60.0)),
        names: &[],
    };

    fn any_kind_parses(text: &str) {
        let _ = Bytes::parse(text, &[]);
        let _ = Count::parse(text, &[]);
        let _ = Seconds::parse(text, &[]);
        let _ = Flag::parse(text, &[]);
        let _ = FilePath::parse(text, &[]);
        let _ = Choices::parse(text, NAMES);
        let _ = OneOf::parse(text, NAMES);
        let _ = Rate::parse(text, &[]);
        let _ = Millis::parse(text, &[]);
    }

    proptest! {
        #![proptest_config(config(512))]

        #[test]
        fn any_text_never_panics(text in "\\PC{0,40}") {
            any_kind_parses(&text);
        }

        #[test]
        fn value_shaped_text_never_panics(
            text in "[-+]?[0-9]{0,22}(\\.[0-9]{0,6})?[ ]?(s|ms|K|MiB|GB|T|/s|MiB/s|,|e9|e400)?",
        ) {
            any_kind_parses(&text);
            if let Ok(v) = BOUNDED.parse(&text) {
                prop_assert!((0.2..=60.0).contains(&v), "{} accepted as {}", text, v);
            }
        }

        #[test]
        fn counts_and_flags_read_back(n in any::<u64>(), b in any::<bool>()) {
            prop_assert_eq!(Count::parse(&Count::show(&n), &[]), Ok(n));
            prop_assert_eq!(Flag::parse(&Flag::show(&b), &[]), Ok(b));
        }

        /// `2.5 s` and `2.5 ms` as shown read back exactly (Rust prints the
        /// shortest text that reads back as the same f64).
        #[test]
        fn seconds_and_millis_read_back(v in proptest::num::f64::NORMAL | proptest::num::f64::ZERO) {
            prop_assert_eq!(Seconds::parse(Seconds::show(&v).trim(), &[]), Ok(v));
            prop_assert_eq!(Millis::parse(Millis::show(&v).trim(), &[]), Ok(v));
        }

        /// Sizes and rates as shown read back within their three significant figures.
        #[test]
        fn bytes_and_rates_read_back_within_rounding(v in 0u64..(1 << 50)) {
            for back in [Bytes::parse(&Bytes::show(&v), &[]), Rate::parse(&Rate::show(&v), &[])] {
                let back = back.map_err(TestCaseError::fail)?;
                prop_assert!((back as f64 - v as f64).abs() <= v as f64 * 0.005 + 0.5, "{} -> {}", v, back);
            }
        }

        #[test]
        fn choices_and_names_read_back(pick in proptest::collection::vec(any::<bool>(), 4)) {
            let chosen: Vec<&'static str> =
                NAMES.iter().zip(&pick).filter(|(_, p)| **p).map(|(n, _)| *n).collect();
            prop_assert_eq!(Choices::parse(&Choices::show(&chosen), NAMES), Ok(chosen.clone()));
            for n in chosen {
                prop_assert_eq!(OneOf::parse(&OneOf::show(&n), NAMES), Ok(n));
            }
        }

        #[test]
        fn file_paths_read_back(p in "[^\\s]\\PC{0,30}") {
            let v = Some(PathBuf::from(&p));
            prop_assert_eq!(FilePath::parse(&FilePath::show(&v), &[]), Ok(v));
        }
    }
}

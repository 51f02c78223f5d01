//! Value parsers for oslab's numeric command-line options (clap `value_parser`s): a value outside its range, negative ones
//! included, is refused with one sentence that names the range.
#![forbid(unsafe_code)]

use oslab_units::{TimeUnit, UnitError, parse_duration_with_unit};

/// A whole number from `lo` to `hi`.
pub fn whole(lo: u64, hi: u64) -> impl Fn(&str) -> Result<u64, String> + Clone + Send + Sync {
    move |text: &str| {
        let t = text.trim();
        let range = if hi == u64::MAX {
            format!("a whole number of {lo} or more")
        } else {
            format!("a whole number from {lo} to {hi}")
        };
        match t.parse::<i128>() {
            Ok(v) if v >= lo as i128 && v <= hi as i128 => Ok(v as u64),
            Ok(_) => Err(format!("out of range: give {range}")),
            Err(_) => Err(format!("not a number: give {range}")),
        }
    }
}

/// A duration from `lo` to `hi` seconds, in seconds, typed with its unit as
/// every duration is (`200ms`, `1.5s`; a bare number other than 0 is refused).
pub fn seconds(lo: f64, hi: f64) -> impl Fn(&str) -> Result<f64, String> + Clone + Send + Sync {
    in_unit(lo, hi, TimeUnit::Seconds, "s", "2.5s or 200ms")
}

/// A duration from `lo` to `hi` milliseconds, in milliseconds, typed with its
/// unit (`100ms`, `0.5s`).
pub fn millis(lo: f64, hi: f64) -> impl Fn(&str) -> Result<f64, String> + Clone + Send + Sync {
    in_unit(lo, hi, TimeUnit::Millis, "ms", "100ms or 0.5s")
}

fn in_unit(
    lo: f64,
    hi: f64,
    unit: TimeUnit,
    name: &'static str,
    example: &'static str,
) -> impl Fn(&str) -> Result<f64, String> + Clone + Send + Sync {
    move |text: &str| {
        let range = format!("give {lo}{name} to {hi}{name}, e.g. {example}");
        match parse_duration_with_unit(text) {
            Ok(d) if (lo..=hi).contains(&d.in_unit(unit)) => Ok(d.in_unit(unit)),
            Ok(_) => Err(format!("out of range: {range}")),
            Err(e) => Err(refused(&e, &range)),
        }
    }
}

/// A duration such as `10ms`, `1.5s`, `250us` or `2000000ns`, from `lo` to `hi`
/// seconds; the value in nanoseconds.
pub fn duration(lo: f64, hi: f64) -> impl Fn(&str) -> Result<u64, String> + Clone + Send + Sync {
    move |text: &str| {
        let range = format!("give a duration from {lo}s to {hi}s, e.g. 10ms or 1.5s");
        match parse_duration_with_unit(text) {
            Ok(d) if (lo..=hi).contains(&d.in_unit(TimeUnit::Seconds)) => {
                Ok(d.in_unit(TimeUnit::Nanos).round() as u64)
            }
            Ok(_) => Err(format!("out of range: {range}")),
            Err(e) => Err(refused(&e, &range)),
        }
    }
}

/// Why a duration was refused, with the range to give.
fn refused(e: &UnitError, range: &str) -> String {
    match e {
        UnitError::UnknownTimeUnit { unit, .. } => format!("unknown unit '{unit}': {range}"),
        // a negative number is out of every range, whatever its unit
        UnitError::DurationNeedsUnit(t) if t.parse::<f64>().is_ok_and(|v| v < 0.0) => {
            format!("out of range: {range}")
        }
        UnitError::DurationNeedsUnit(t) => {
            format!("a duration needs its unit ({t}ms or {t}s): {range}")
        }
        _ => format!("not a duration: {range}"),
    }
}

/// A size such as `512MiB`, `4G` or `65536` (bytes), from `lo` to `hi` bytes
/// (`u64::MAX`: no more than a u64 holds).
pub fn size(lo: u64, hi: u64) -> impl Fn(&str) -> Result<u64, String> + Clone + Send + Sync {
    use oslab_units::{human_bytes, parse_human_size};
    move |text: &str| {
        let range = if hi == u64::MAX {
            format!("give a size of at least {}, e.g. 512MiB", human_bytes(lo))
        } else {
            format!(
                "give a size from {} to {}, e.g. 512MiB",
                human_bytes(lo),
                human_bytes(hi)
            )
        };
        match parse_human_size(text) {
            Ok(v) if (lo..=hi).contains(&v) => Ok(v),
            Ok(_) => Err(format!("out of range: {range}")),
            Err(_) => Err(format!("not a size: {range}")),
        }
    }
}

/// A rate a person typed (`4MiB/s`, `512KiBps`, `5000000`): bytes per second,
/// zero included; a size without /s is not a rate. An error sentence for anything
/// else, negative rates named as such (clap puts the option and the value before
/// it).
pub fn rate(text: &str) -> Result<f64, String> {
    let t = text.trim();
    oslab_units::parse_human_rate(t)
        .map(|b| b as f64)
        .map_err(|_| {
            if t.starts_with('-') {
                "a rate cannot be negative (e.g. 4MiB/s)".to_string()
            } else {
                "not a rate such as 4MiB/s (a size needs /s)".to_string()
            }
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression: a bare number was milliseconds here and seconds to `seconds`.
    #[test]
    fn durations_take_their_unit_and_a_bare_number_is_refused_with_the_hint() {
        let d = duration(0.0001, 10.0);
        assert_eq!(d("10ms"), Ok(10_000_000));
        assert_eq!(d("1.5s"), Ok(1_500_000_000));
        assert_eq!(d("250us"), Ok(250_000));
        assert_eq!(
            d("20").unwrap_err(),
            "a duration needs its unit (20ms or 20s): give a duration from 0.0001s to 10s, e.g. 10ms or 1.5s"
        );
        assert!(seconds(0.0, 10.0)("5").unwrap_err().contains("(5ms or 5s)"));
        assert!(millis(1.0, 10.0)("5").unwrap_err().contains("(5ms or 5s)"));
        assert_eq!(seconds(0.0, 10.0)("0"), Ok(0.0), "0 needs no unit");
        assert!(
            seconds(0.5, 10.0)("-1")
                .unwrap_err()
                .starts_with("out of range")
        );
        assert!(d("-5ms").unwrap_err().starts_with("out of range"));
        assert!(d("11s").unwrap_err().starts_with("out of range"));
        assert!(d("5 parsecs").unwrap_err().starts_with("unknown unit"));
        assert!(d("ms").unwrap_err().starts_with("not a duration"));
    }

    #[test]
    fn ranges_are_named_and_negatives_refused() {
        let w = whole(1, 1_000_000);
        assert_eq!(w("12"), Ok(12));
        assert_eq!(
            w("-1").unwrap_err(),
            "out of range: give a whole number from 1 to 1000000"
        );
        assert!(w("x").unwrap_err().starts_with("not a number"));
        assert!(whole(0, u64::MAX)("-3").unwrap_err().contains("0 or more"));
        let s = seconds(0.5, 600.0);
        assert_eq!(s("2.5s"), Ok(2.5));
        assert_eq!(
            s("-5s").unwrap_err(),
            "out of range: give 0.5s to 600s, e.g. 2.5s or 200ms"
        );
        assert_eq!(s("750ms"), Ok(0.75), "a duration's units, as everywhere");
        assert_eq!(s("2s"), Ok(2.0));
        assert!(s("200ms").unwrap_err().starts_with("out of range"));
        assert!(s("3 fortnights").unwrap_err().starts_with("unknown unit"));
        let ms = millis(1.0, 10_000.0);
        assert_eq!(ms("100ms"), Ok(100.0));
        assert_eq!(ms("0.5s"), Ok(500.0));
        assert!(s("inf").is_err());
        assert!(s("NaN").is_err());
    }

    #[test]
    fn sizes_take_units_and_a_range() {
        let s = size(1024, 1 << 40);
        assert_eq!(s("512MiB"), Ok(512 << 20));
        assert_eq!(s("4096"), Ok(4096));
        assert_eq!(
            s("100").unwrap_err(),
            "out of range: give a size from 1 KiB to 1 TiB, e.g. 512MiB"
        );
        assert!(s("lots").unwrap_err().starts_with("not a size"));
        assert!(s("-5M").unwrap_err().starts_with("not a size"));
        assert_eq!(
            size(64 << 20, u64::MAX)("1MiB").unwrap_err(),
            "out of range: give a size of at least 64 MiB, e.g. 512MiB"
        );
    }

    #[test]
    fn rates_in_the_forms_people_type() {
        assert_eq!(rate("4MiB/s"), Ok(4.0 * 1048576.0));
        assert_eq!(rate("40M/s"), Ok(40.0 * 1048576.0));
        assert_eq!(rate("512KiBps"), Ok(512.0 * 1024.0));
        assert_eq!(rate(" 1 "), Ok(1.0));
        assert_eq!(rate("0"), Ok(0.0));
        assert_eq!(
            rate("-5").unwrap_err(),
            "a rate cannot be negative (e.g. 4MiB/s)"
        );
        assert_eq!(
            rate("fast").unwrap_err(),
            "not a rate such as 4MiB/s (a size needs /s)"
        );
        for lax in ["40M", "1.5GiB", "10MiB/s/s"] {
            assert!(rate(lax).is_err(), "{lax}");
        }
    }
}

/// Property tests: any text gives a value or one sentence, never a panic; a value is
/// accepted exactly when it is inside the range, and reads back as given; a rate
/// printed by oslab (`human_rate`) reads back within its rounding. A fuzz-like run:
/// `PROPTEST_CASES=100000 cargo test -p oslab-arg-values -- props`
#[cfg(test)]
mod props {
    use super::*;
    use oslab_sys::testing::proptest_config as config;
    use oslab_units::human_rate;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(config(512))]

        #[test]
        fn any_text_never_panics(text in "\\PC{0,40}", lo in any::<u64>(), hi in any::<u64>()) {
            let _ = whole(lo, hi)(&text);
            let _ = seconds(0.5, 600.0)(&text);
            let _ = millis(1.0, 10_000.0)(&text);
            let _ = rate(&text);
        }

        #[test]
        fn whole_numbers_in_range_and_only_those(v in any::<i128>(), lo in 0u64..1000, span in 0u64..1_000_000) {
            let hi = lo + span;
            let got = whole(lo, hi)(&v.to_string());
            if v >= lo as i128 && v <= hi as i128 {
                prop_assert_eq!(got, Ok(v as u64));
            } else {
                prop_assert!(got.unwrap_err().starts_with("out of range: give a whole number from"));
            }
        }

        #[test]
        fn numbers_in_range_and_only_those(v in any::<f64>()) {
            let got = seconds(0.5, 600.0)(&format!("{v}s"));
            if (0.5..=600.0).contains(&v) {
                prop_assert_eq!(got, Ok(v));
            } else {
                prop_assert!(got.is_err());
            }
        }

        #[test]
        fn rates_in_whole_units_read_back(n in 0u64..1 << 40, unit in 0usize..4, per in 1usize..3) {
            let (suffix, mult) = [("", 1u64), ("K", 1 << 10), ("MiB", 1 << 20), ("G", 1 << 30)][unit];
            let text = format!("{n}{suffix}{}", ["", "/s", "ps"][per]);
            match n.checked_mul(mult) {
                Some(b) if b < 1 << 53 => prop_assert_eq!(rate(&text), Ok(b as f64), "{}", text),
                _ => {}
            }
        }

        #[test]
        fn negative_rates_are_named(n in 1u64..1 << 40) {
            let e = rate(&format!("-{n}MiB/s")).unwrap_err();
            prop_assert!(e.contains("cannot be negative"), "{}", e);
        }

        #[test]
        fn printed_rates_read_back_within_rounding(r in 0.0f64..1e15) {
            let back = rate(&human_rate(r)).map_err(TestCaseError::fail)?;
            prop_assert!((back - r).abs() <= r * 0.005 + 0.5, "{} -> {} -> {}", r, human_rate(r), back);
        }
    }
}

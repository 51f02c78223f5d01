//! Rates in bytes per second: `40MiB/s`, `512KiBps`, `5000000` in; `1.50 MiB/s` out.

use crate::UnitError;
use crate::size::parse_human_size;

/// Parses a rate a person typed: a size per second (`40MiB/s`, `512KiBps`, `1.5G/s`)
/// or a bare number of bytes per second (`5000000`). A size without `/s` is not a
/// rate (`40MiB` is refused), nor is a rate per second per second (`10MiB/s/s`).
pub fn parse_human_rate(text: &str) -> Result<u64, UnitError> {
    let t = text.trim();
    let bare = !t.is_empty() && t.chars().all(|c| c.is_ascii_digit() || c == '.');
    let size = match t.strip_suffix("/s").or_else(|| t.strip_suffix("ps")) {
        Some(size) => size,
        None if bare => t,
        None => return Err(UnitError::RateNeedsPerSecond(t.into())),
    };
    parse_human_size(size).map_err(|_| UnitError::NotARate(t.into()))
}

/// Formats a rate in bytes per second with binary units and three significant
/// figures (`1 B/s`, `512 KiB/s`, `1.50 MiB/s`), so a small rate is never shown as
/// `0.00 MiB/s`.
pub fn human_rate(bytes_s: f64) -> String {
    const UNITS: [&str; 7] = ["B/s", "KiB/s", "MiB/s", "GiB/s", "TiB/s", "PiB/s", "EiB/s"];
    let mut v = bytes_s;
    let mut u = 0;
    while v.abs() >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    if !v.is_finite() || v.fract() == 0.0 || v.abs() >= 100.0 {
        format!("{v:.0} {}", UNITS[u])
    } else if v.abs() < 10.0 {
        format!("{v:.2} {}", UNITS[u])
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_need_per_second_once() {
        assert_eq!(parse_human_rate("40MiB/s").unwrap(), 40 << 20);
        assert_eq!(parse_human_rate(" 512KiBps ").unwrap(), 512 << 10);
        assert_eq!(parse_human_rate("1.5G/s").unwrap(), 3 << 29);
        assert_eq!(parse_human_rate("5000000").unwrap(), 5_000_000);
        assert_eq!(parse_human_rate("0").unwrap(), 0);
        for bad in [
            "1.5GiB",
            "40M",
            "10MiB/s/s",
            "10/s/s",
            "",
            "/s",
            "fast",
            "-5MiB/s",
            "5 MiB/ s",
        ] {
            assert!(parse_human_rate(bad).is_err(), "{bad}");
        }
        assert_eq!(
            parse_human_rate("1.5GiB"),
            Err(UnitError::RateNeedsPerSecond("1.5GiB".into()))
        );
        assert!(
            parse_human_rate("1.5GiB")
                .unwrap_err()
                .to_string()
                .contains("a size needs /s")
        );
    }

    #[test]
    fn rates_keep_small_values_visible() {
        assert_eq!(human_rate(1.0), "1 B/s");
        assert_eq!(human_rate(0.5), "0.50 B/s");
        assert_eq!(human_rate(512.0 * 1024.0), "512 KiB/s");
        assert_eq!(human_rate(1.5 * 1048576.0), "1.50 MiB/s");
        assert_eq!(human_rate(50.0 * 1048576.0), "50 MiB/s");
        assert_eq!(human_rate(12.34 * 1048576.0), "12.3 MiB/s");
        assert_eq!(human_rate(0.0), "0 B/s");
    }
}

/// Property tests: any text gives a value or an error, never a panic; what
/// human_rate prints reads back within its rounding.
#[cfg(test)]
mod props {
    use super::*;
    use crate::proptest_config as config;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(config(512))]

        /// A rate printed by human_rate reads back (without its `/s`) within its
        /// rounding to three significant figures.
        #[test]
        fn human_rate_round_trips_within_its_rounding(r in 0.0f64..1e15) {
            let text = human_rate(r);
            let size = text.strip_suffix("/s").expect("a rate ends in /s");
            let back = parse_human_size(size).map_err(|e| TestCaseError::fail(format!("{text}: {e}")))?;
            prop_assert!((back as f64 - r).abs() <= r * 0.005 + 0.5, "{} -> {} -> {}", r, text, back);
        }

        #[test]
        fn human_rate_never_panics_and_reads_its_own_output(text in ".{0,40}", r in 0.0f64..1e15) {
            let _ = parse_human_rate(&text);
            let printed = human_rate(r);
            let back = parse_human_rate(&printed).map_err(|e| TestCaseError::fail(format!("{printed}: {e}")))?;
            prop_assert!((back as f64 - r).abs() <= r * 0.005 + 0.5, "{} -> {} -> {}", r, printed, back);
        }

        /// A size with a unit but no /s is a size, not a rate.
        #[test]
        fn a_size_with_a_unit_is_not_a_rate(n in 0u64..1 << 20, unit in 1usize..5) {
            let text = format!("{n}{}", ["", "K", "MiB", "G", "TB"][unit]);
            prop_assert!(parse_human_rate(&text).is_err(), "{}", text);
            prop_assert!(parse_human_rate(&format!("{text}/s/s")).is_err(), "{}/s/s", text);
            prop_assert_eq!(parse_human_rate(&format!("{text}/s")).ok(), parse_human_size(&text).ok());
        }
    }
}

//! Sizes as sysfs prints them (`48K`, `2048K`, `32M`) and as humans read them.

use crate::error::{SysError, SysResult};

/// Parses a sysfs size such as `48K` into bytes (K, M, G are powers of 1024).
pub fn parse_sysfs_size(text: &str) -> SysResult<u64> {
    let t = text.trim();
    let (digits, mult) = match t.chars().last() {
        Some('K' | 'k') => (&t[..t.len() - 1], 1u64 << 10),
        Some('M' | 'm') => (&t[..t.len() - 1], 1 << 20),
        Some('G' | 'g') => (&t[..t.len() - 1], 1 << 30),
        _ => (t, 1),
    };
    digits
        .trim()
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(mult))
        .ok_or_else(|| SysError::parse("size", format!("'{t}' is not a size")))
}

/// Parses a size a person typed: `4096`, `64K`, `256MiB`, `1.5G`, `2GB` (K, M, G and
/// T are powers of 1024 with or without `i`/`B`).
pub fn parse_human_size(text: &str) -> SysResult<u64> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let value: f64 = num
        .parse()
        .map_err(|_| SysError::parse("size", format!("'{t}' is not a size such as 256MiB")))?;
    let mult = match unit
        .trim()
        .to_ascii_lowercase()
        .trim_end_matches('b')
        .trim_end_matches('i')
    {
        "" => 1u64,
        "k" => 1 << 10,
        "m" => 1 << 20,
        "g" => 1 << 30,
        "t" => 1 << 40,
        _ => {
            return Err(SysError::parse(
                "size",
                format!("'{t}' has an unknown unit (use K, M, G or T)"),
            ));
        }
    };
    let bytes = (value * mult as f64).round();
    // `as` would saturate: a size beyond u64 is an error, not 16 EiB
    if bytes >= u64::MAX as f64 {
        return Err(SysError::parse("size", format!("'{t}' is too large")));
    }
    Ok(bytes as u64)
}

/// Parses a rate a person typed: a size per second (`40MiB/s`, `512KiBps`, `1.5G/s`)
/// or a bare number of bytes per second (`5000000`). A size without `/s` is not a
/// rate (`40MiB` is refused), nor is a rate per second per second (`10MiB/s/s`).
pub fn parse_human_rate(text: &str) -> SysResult<u64> {
    let t = text.trim();
    let bare = !t.is_empty() && t.chars().all(|c| c.is_ascii_digit() || c == '.');
    let size = match t.strip_suffix("/s").or_else(|| t.strip_suffix("ps")) {
        Some(size) => size,
        None if bare => t,
        None => {
            return Err(SysError::parse(
                "rate",
                format!("'{t}' is not a rate such as 40MiB/s (a size needs /s)"),
            ));
        }
    };
    parse_human_size(size)
        .map_err(|_| SysError::parse("rate", format!("'{t}' is not a rate such as 40MiB/s")))
}

/// Formats bytes with binary units: `48 KiB`, `2 MiB`, `1.5 GiB`.
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = bytes as f64;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 || v.fract() == 0.0 {
        format!("{} {}", v as u64, UNITS[u])
    } else if v < 10.0 {
        format!("{v:.2} {}", UNITS[u])
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

/// Formats a rate in bytes per second with binary units and three significant
/// figures (`1 B/s`, `512 KiB/s`, `1.50 MiB/s`), so a small rate is never shown as
/// `0.00 MiB/s`.
pub fn human_rate(bytes_s: f64) -> String {
    const UNITS: [&str; 5] = ["B/s", "KiB/s", "MiB/s", "GiB/s", "TiB/s"];
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
    fn parses_kernel_sizes() {
        assert_eq!(parse_sysfs_size("48K\n").unwrap(), 48 * 1024);
        assert_eq!(parse_sysfs_size("32M").unwrap(), 32 << 20);
        assert_eq!(parse_sysfs_size("512").unwrap(), 512);
        assert!(parse_sysfs_size("big").is_err());
    }

    #[test]
    fn parses_human_sizes() {
        assert_eq!(parse_human_size("4096").unwrap(), 4096);
        assert_eq!(parse_human_size("64K").unwrap(), 64 << 10);
        assert_eq!(parse_human_size("256MiB").unwrap(), 256 << 20);
        assert_eq!(parse_human_size("1.5G").unwrap(), 3 << 29);
        assert_eq!(parse_human_size("2GB").unwrap(), 2 << 30);
        assert!(parse_human_size("lots").is_err());
        assert!(parse_human_size("5 parsecs").is_err());
    }

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
        assert!(
            parse_human_rate("1.5GiB")
                .unwrap_err()
                .to_string()
                .contains("a size needs /s")
        );
    }

    #[test]
    fn formats_binary_units() {
        assert_eq!(human_bytes(48 * 1024), "48 KiB");
        assert_eq!(human_bytes(2 << 20), "2 MiB");
        assert_eq!(human_bytes(1536 << 20), "1.50 GiB");
        assert_eq!(human_bytes(100), "100 B");
        assert_eq!(human_bytes(491520 * 1024), "480 MiB");
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

/// Property tests: any text gives a value or an error, never a panic; formatting and
/// parsing agree. A fuzz-like run with many cases (PROPTEST_CASES wins over the small
/// default here; failures are printed, not saved to proptest-regressions/):
/// `PROPTEST_CASES=100000 cargo test -p oslab-sys --lib -- parse::size::props`
#[cfg(test)]
mod props {
    use super::*;
    use crate::testing::proptest_config as config;
    use proptest::prelude::*;

    /// Text shaped like a size: digits, maybe a fraction, maybe a space, a unit or junk.
    fn sizeish() -> impl Strategy<Value = String> {
        (
            "[0-9]{0,24}",
            proptest::option::of("\\.[0-9]{0,6}"),
            "[ \t]{0,2}",
            prop_oneof![
                Just(String::new()),
                proptest::sample::select(vec![
                    "K", "k", "M", "m", "G", "g", "T", "t", "KiB", "MiB", "GiB", "TiB", "KB", "MB",
                    "GB", "TB", "B", "b", "iB", "Ki", "/s", "P", "PiB", "é", "K\u{301}",
                ])
                .prop_map(String::from),
                ".{0,4}",
            ],
        )
            .prop_map(|(n, f, s, u)| format!("{n}{}{s}{u}", f.unwrap_or_default()))
    }

    proptest! {
        #![proptest_config(config(512))]

        #[test]
        fn sysfs_size_never_panics(text in ".{0,40}") {
            let _ = parse_sysfs_size(&text);
        }

        #[test]
        fn sysfs_size_of_a_number_and_suffix(n in any::<u64>(), unit in 0usize..4, pad in "[ \n]{0,2}") {
            let (suffix, mult) = [("", 1u64), ("K", 1 << 10), ("M", 1 << 20), ("G", 1 << 30)][unit];
            let got = parse_sysfs_size(&format!("{n}{suffix}{pad}"));
            match n.checked_mul(mult) {
                Some(b) => prop_assert_eq!(got.ok(), Some(b)),
                None => prop_assert!(got.is_err()),
            }
        }

        #[test]
        fn human_size_never_panics(text in ".{0,40}") {
            let _ = parse_human_size(&text);
        }

        #[test]
        fn human_size_of_size_shaped_text_never_panics(text in sizeish()) {
            let _ = parse_human_size(&text);
        }

        #[test]
        fn human_size_of_whole_units_is_exact(k in any::<u64>(), unit in 0u32..5) {
            let text = format!("{k}{}", ["", "K", "MiB", "G", "TB"][unit as usize]);
            let got = parse_human_size(&text);
            match k.checked_mul(1u64 << (10 * unit)) {
                // whole numbers below 2^53 are exact in the f64 the parser goes through
                Some(b) if k < 1 << 53 => prop_assert_eq!(got.ok(), Some(b), "{}", text),
                Some(_) => {}
                None => prop_assert!(got.is_err(), "{} overflows u64 but parsed", text),
            }
        }

        /// The round trip is exact where human_bytes prints the value exactly: whole
        /// units (`480 MiB`), and halves and quarters below ten units (`1.50 GiB`).
        #[test]
        fn human_bytes_round_trips_where_exact(k in 0u64..40960, unit in 0u32..5) {
            let b = k << (10 * unit);
            let quarters = if unit > 0 { (k % 4096) << (10 * unit - 2) } else { k };
            for b in [b, quarters] {
                let text = human_bytes(b);
                let v = b as f64 / (1u64 << (10 * human_unit(&text))) as f64;
                if v.fract() == 0.0 || (v < 10.0 && (v * 4.0).fract() == 0.0) {
                    prop_assert_eq!(parse_human_size(&text).ok(), Some(b), "{}", text);
                }
            }
        }

        /// Elsewhere human_bytes rounds to three significant figures: the parse is
        /// within half a percent.
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

        #[test]
        fn human_bytes_round_trips_within_its_rounding(b in 0u64..(1 << 63)) {
            let text = human_bytes(b);
            let back = parse_human_size(&text).map_err(|e| TestCaseError::fail(format!("{text}: {e}")))?;
            let err = (back as f64 - b as f64).abs();
            prop_assert!(err <= b as f64 * 0.005 + 0.5, "{} -> {} -> {}", b, text, back);
        }
    }

    /// Which power of 1024 human_bytes chose, from its unit.
    fn human_unit(text: &str) -> u32 {
        ["B", "KiB", "MiB", "GiB", "TiB"]
            .iter()
            .position(|u| text.ends_with(&format!(" {u}")))
            .expect("a unit") as u32
    }

    #[test]
    fn human_sizes_too_large_for_u64_are_errors() {
        assert!(parse_human_size("16777216TiB").is_err());
        assert!(parse_human_size("99999999999999999999999").is_err());
        assert_eq!(parse_human_size("16777215TiB").unwrap(), 16777215 << 40);
    }

    #[test]
    fn sysfs_sizes_too_large_for_u64_are_errors() {
        assert!(parse_sysfs_size("18446744073709551615K").is_err());
        assert!(parse_sysfs_size("17179869184G").is_err());
        assert_eq!(parse_sysfs_size("17179869183G").unwrap(), 17179869183 << 30);
    }
}

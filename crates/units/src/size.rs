//! Sizes: `4096`, `64K`, `256MiB`, `1.5G`, `2GB` in; `48 KiB`, `1.50 GiB` out.

use crate::UnitError;

/// Parses a size a person typed: `4096`, `64K`, `256MiB`, `1.5G`, `2GB` (K, M, G,
/// T, P and E are powers of 1024 with or without `i`/`B`).
pub fn parse_human_size(text: &str) -> Result<u64, UnitError> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let value: f64 = num.parse().map_err(|_| UnitError::NotASize(t.into()))?;
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
        "p" => 1 << 50,
        "e" => 1 << 60,
        _ => return Err(UnitError::UnknownSizeUnit(t.into())),
    };
    let bytes = (value * mult as f64).round();
    // `as` would saturate: a size beyond u64 is an error, not 16 EiB
    if bytes >= u64::MAX as f64 {
        return Err(UnitError::TooLarge(t.into()));
    }
    Ok(bytes as u64)
}

/// Formats bytes with binary units: `48 KiB`, `2 MiB`, `1.5 GiB`.
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 7] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_human_sizes() {
        assert_eq!(parse_human_size("4096").unwrap(), 4096);
        assert_eq!(parse_human_size("64K").unwrap(), 64 << 10);
        assert_eq!(parse_human_size("256MiB").unwrap(), 256 << 20);
        assert_eq!(parse_human_size("1.5G").unwrap(), 3 << 29);
        assert_eq!(parse_human_size("2GB").unwrap(), 2 << 30);
        assert_eq!(
            parse_human_size("lots"),
            Err(UnitError::NotASize("lots".into()))
        );
        assert_eq!(
            parse_human_size("5 parsecs"),
            Err(UnitError::UnknownSizeUnit("5 parsecs".into()))
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
    fn petabytes_and_exabytes_are_sizes_too() {
        assert_eq!(parse_human_size("1PiB").unwrap(), 1 << 50);
        assert_eq!(parse_human_size("2E").unwrap(), 2 << 60);
        assert_eq!(human_bytes(3 << 50), "3 PiB");
        assert_eq!(human_bytes(1 << 60), "1 EiB");
        assert_eq!(crate::parse_human_rate("1PiB/s").unwrap(), 1 << 50);
        assert!(matches!(
            parse_human_size("16E"),
            Err(UnitError::TooLarge(_))
        ));
    }

    #[test]
    fn human_sizes_too_large_for_u64_are_errors() {
        assert!(matches!(
            parse_human_size("16777216TiB"),
            Err(UnitError::TooLarge(_))
        ));
        assert!(parse_human_size("99999999999999999999999").is_err());
        assert_eq!(parse_human_size("16777215TiB").unwrap(), 16777215 << 40);
    }
}

/// Property tests: any text gives a value or an error, never a panic; formatting and
/// parsing agree. A fuzz-like run with many cases:
/// `PROPTEST_CASES=100000 cargo test -p oslab-units -- size::props`
#[cfg(test)]
mod props {
    use super::*;
    use crate::proptest_config as config;
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
                    "GB", "TB", "B", "b", "iB", "Ki", "/s", "P", "PiB", "E", "X", "é", "K\u{301}",
                ])
                .prop_map(String::from),
                ".{0,4}",
            ],
        )
            .prop_map(|(n, f, s, u)| format!("{n}{}{s}{u}", f.unwrap_or_default()))
    }

    /// Which power of 1024 human_bytes chose, from its unit.
    fn human_unit(text: &str) -> u32 {
        ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"]
            .iter()
            .position(|u| text.ends_with(&format!(" {u}")))
            .expect("a unit") as u32
    }

    proptest! {
        #![proptest_config(config(512))]

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
        #[test]
        fn human_bytes_round_trips_within_its_rounding(b in 0u64..(1 << 63)) {
            let text = human_bytes(b);
            let back = parse_human_size(&text).map_err(|e| TestCaseError::fail(format!("{text}: {e}")))?;
            let err = (back as f64 - b as f64).abs();
            prop_assert!(err <= b as f64 * 0.005 + 0.5, "{} -> {} -> {}", b, text, back);
        }
    }
}

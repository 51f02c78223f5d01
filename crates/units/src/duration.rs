//! Durations: a number and a unit (`10ms`, `1.5 s`, `250us`, `2000000ns`); a bare
//! number is in the unit the caller names (seconds for a setting of seconds,
//! milliseconds for a pause).

use crate::UnitError;

/// A unit of time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeUnit {
    Nanos,
    Micros,
    Millis,
    Seconds,
}

impl TimeUnit {
    /// Nanoseconds in one of it (exact in an f64).
    fn nanos(self) -> f64 {
        match self {
            TimeUnit::Nanos => 1.0,
            TimeUnit::Micros => 1e3,
            TimeUnit::Millis => 1e6,
            TimeUnit::Seconds => 1e9,
        }
    }

    fn from_suffix(suffix: &str) -> Option<TimeUnit> {
        match suffix {
            "ns" => Some(TimeUnit::Nanos),
            "us" => Some(TimeUnit::Micros),
            "ms" => Some(TimeUnit::Millis),
            "s" => Some(TimeUnit::Seconds),
            _ => None,
        }
    }
}

/// A duration as typed: the number and the unit it was given in, so reading it back
/// in the same unit is exact (`2.5ms` in milliseconds is 2.5, not 2.5000000000000004).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Span {
    pub value: f64,
    pub unit: TimeUnit,
}

impl Span {
    /// The duration in `unit`.
    pub fn in_unit(self, unit: TimeUnit) -> f64 {
        if unit == self.unit {
            self.value
        } else {
            self.value * self.unit.nanos() / unit.nanos()
        }
    }
}

/// Parses a duration: a finite number (sign, fraction and exponent allowed), then
/// `ns`, `us`, `ms`, `s` or nothing, which means `bare`. Spaces around the unit are
/// allowed. Ranges, negatives included, are the caller's to check.
pub fn parse_duration(text: &str, bare: TimeUnit) -> Result<Span, UnitError> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '+' | '-')))
        .unwrap_or(t.len());
    let (num, suffix) = t.split_at(split);
    let suffix = suffix.trim();
    if num.is_empty() {
        return Err(UnitError::NotADuration(t.into()));
    }
    let unit = if suffix.is_empty() {
        bare
    } else {
        TimeUnit::from_suffix(suffix).ok_or_else(|| UnitError::UnknownTimeUnit {
            text: t.into(),
            unit: suffix.into(),
        })?
    };
    match num.parse::<f64>() {
        Ok(value) if value.is_finite() => Ok(Span { value, unit }),
        _ => Err(UnitError::NotADuration(t.into())),
    }
}

/// A duration as a person types it on a command line: a number and its unit
/// (`10ms`, `5s`); a bare number is refused with the hint, 0 alone excepted (no
/// time in any unit). One grammar for every duration option and `--set` value,
/// so a bare `5` never means seconds to one flag and milliseconds to another.
pub fn parse_duration_with_unit(text: &str) -> Result<Span, UnitError> {
    let t = text.trim();
    let span = parse_duration(t, TimeUnit::Seconds)?;
    let unitless = t.ends_with(|c: char| c.is_ascii_digit() || c == '.');
    if unitless && span.value != 0.0 {
        return Err(UnitError::DurationNeedsUnit(t.into()));
    }
    Ok(span)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seconds(text: &str) -> Result<f64, UnitError> {
        parse_duration(text, TimeUnit::Seconds).map(|s| s.in_unit(TimeUnit::Seconds))
    }

    #[test]
    fn a_number_and_a_unit_or_the_bare_unit() {
        let ms = |t| parse_duration(t, TimeUnit::Millis).map(|s| s.in_unit(TimeUnit::Nanos));
        assert_eq!(ms("10ms"), Ok(10e6));
        assert_eq!(ms("1.5s"), Ok(1.5e9));
        assert_eq!(ms("250us"), Ok(250e3));
        assert_eq!(ms("2000000ns"), Ok(2e6));
        assert_eq!(ms("20"), Ok(20e6));
        assert_eq!(ms("-5ms"), Ok(-5e6), "the sign is the caller's to refuse");
        assert_eq!(seconds("1.5 s"), Ok(1.5));
        assert_eq!(seconds("2.5"), Ok(2.5));
        assert_eq!(seconds("1e-3"), Ok(0.001));
        assert_eq!(
            parse_duration("2.5ms", TimeUnit::Seconds).map(|s| s.in_unit(TimeUnit::Millis)),
            Ok(2.5),
            "read back in the unit it was given in, exactly"
        );
    }

    /// Regression: a bare number was ms to `--threshold`, seconds to `--for`.
    #[test]
    fn on_a_command_line_a_duration_takes_its_unit() {
        let typed = |t| parse_duration_with_unit(t).map(|s| s.in_unit(TimeUnit::Millis));
        assert_eq!(typed("10ms"), Ok(10.0));
        assert_eq!(typed("5s"), Ok(5000.0));
        assert_eq!(typed("0"), Ok(0.0), "no time needs no unit");
        assert_eq!(typed("5"), Err(UnitError::DurationNeedsUnit("5".into())));
        assert_eq!(
            typed("2.5"),
            Err(UnitError::DurationNeedsUnit("2.5".into()))
        );
        assert_eq!(
            UnitError::DurationNeedsUnit("5".into()).to_string(),
            "'5' needs a unit: 5ms or 5s"
        );
        assert!(matches!(typed("ms"), Err(UnitError::NotADuration(_))));
    }

    #[test]
    fn unknown_units_and_missing_numbers_are_told_apart() {
        assert_eq!(
            seconds("5 parsecs"),
            Err(UnitError::UnknownTimeUnit {
                text: "5 parsecs".into(),
                unit: "parsecs".into()
            })
        );
        for bad in ["ms", "", "inf", "NaN", "1e999", "1.2.3s", "--5"] {
            assert_eq!(
                seconds(bad),
                Err(UnitError::NotADuration(bad.into())),
                "{bad}"
            );
        }
    }
}

/// Property tests: any text gives a duration or an error, never a panic; a number
/// printed with its unit reads back exactly in that unit.
#[cfg(test)]
mod props {
    use super::*;
    use crate::proptest_config as config;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(config(512))]

        #[test]
        fn any_text_never_panics(text in "\\PC{0,40}") {
            let _ = parse_duration(&text, TimeUnit::Millis);
        }

        #[test]
        fn a_printed_number_reads_back_exactly(
            v in proptest::num::f64::NORMAL | proptest::num::f64::ZERO,
            unit in 0usize..4,
        ) {
            let (suffix, u) = [
                ("ns", TimeUnit::Nanos),
                ("us", TimeUnit::Micros),
                ("ms", TimeUnit::Millis),
                ("s", TimeUnit::Seconds),
            ][unit];
            for text in [format!("{v}{suffix}"), format!("{v} {suffix}")] {
                let back = parse_duration(&text, TimeUnit::Seconds).map(|s| s.in_unit(u));
                prop_assert_eq!(back, Ok(v), "{}", text);
            }
        }
    }
}

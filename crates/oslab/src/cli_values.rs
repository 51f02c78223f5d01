//! Value parsers for numeric options: a value outside its range, negative ones
//! included, is refused with one sentence that names the range.

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

/// A number of seconds (or milliseconds: `unit`) from `lo` to `hi`.
pub fn number(
    lo: f64,
    hi: f64,
    unit: &'static str,
) -> impl Fn(&str) -> Result<f64, String> + Clone + Send + Sync {
    move |text: &str| {
        let range = format!("give {lo} to {hi} {unit}");
        match text.trim().parse::<f64>() {
            Ok(v) if v.is_finite() && v >= lo && v <= hi => Ok(v),
            Ok(_) => Err(format!("out of range: {range}")),
            Err(_) => Err(format!("not a number: {range}")),
        }
    }
}

pub fn seconds(lo: f64, hi: f64) -> impl Fn(&str) -> Result<f64, String> + Clone + Send + Sync {
    number(lo, hi, "seconds")
}

/// A duration such as `10ms`, `1.5s`, `250us` or `2000000ns` (a bare number is
/// milliseconds), from `lo` to `hi` seconds; the value in nanoseconds.
pub fn duration(lo: f64, hi: f64) -> impl Fn(&str) -> Result<u64, String> + Clone + Send + Sync {
    move |text: &str| {
        let range = format!("give a duration from {} to {} s, e.g. 10ms or 1.5s", lo, hi);
        let t = text.trim();
        let split = t.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(t.len());
        let (num, unit) = t.split_at(split);
        let scale = match unit.trim() {
            "" | "ms" => 1e-3,
            "s" => 1.0,
            "us" => 1e-6,
            "ns" => 1e-9,
            other => return Err(format!("unknown unit '{other}': {range}")),
        };
        match num.trim().parse::<f64>() {
            Ok(v) if v.is_finite() && v * scale >= lo && v * scale <= hi => {
                Ok((v * scale * 1e9).round() as u64)
            }
            Ok(_) => Err(format!("out of range: {range}")),
            Err(_) => Err(format!("not a duration: {range}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_take_units_and_a_bare_number_is_milliseconds() {
        let d = duration(0.0001, 10.0);
        assert_eq!(d("10ms"), Ok(10_000_000));
        assert_eq!(d("1.5s"), Ok(1_500_000_000));
        assert_eq!(d("250us"), Ok(250_000));
        assert_eq!(d("20"), Ok(20_000_000));
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
        assert_eq!(s("2.5"), Ok(2.5));
        assert_eq!(
            s("-5").unwrap_err(),
            "out of range: give 0.5 to 600 seconds"
        );
        assert!(s("inf").is_err());
        assert!(s("NaN").is_err());
    }
}

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

/// A rate a person typed (`4MiB/s`, `40M`, `512KiBps`, `5000000`): bytes per second,
/// zero included; an error sentence for anything else, negative rates named as such.
pub fn rate(flag: &str, text: &str) -> Result<f64, String> {
    let t = text.trim();
    let size = t
        .strip_suffix("/s")
        .or_else(|| t.strip_suffix("ps"))
        .unwrap_or(t);
    oslab_sys::parse::size::parse_human_size(size)
        .map(|b| b as f64)
        .map_err(|_| {
            if t.starts_with('-') {
                format!("{flag} {text}: a rate cannot be negative (e.g. 4MiB/s)")
            } else {
                format!("{flag} {text}: not a rate such as 4MiB/s")
            }
        })
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn rates_in_the_forms_people_type() {
        assert_eq!(rate("--rate", "4MiB/s"), Ok(4.0 * 1048576.0));
        assert_eq!(rate("--rate", "40M"), Ok(40.0 * 1048576.0));
        assert_eq!(rate("--rate", "512KiBps"), Ok(512.0 * 1024.0));
        assert_eq!(rate("--rate", " 1 "), Ok(1.0));
        assert_eq!(rate("--rate", "0"), Ok(0.0));
        assert_eq!(
            rate("--rate", "-5").unwrap_err(),
            "--rate -5: a rate cannot be negative (e.g. 4MiB/s)"
        );
        assert_eq!(
            rate("--rate", "fast").unwrap_err(),
            "--rate fast: not a rate such as 4MiB/s"
        );
    }
}

//! Number formatting shared by every text output.

/// A number with about four significant digits, no exponent for common ranges;
/// "-" for a value that is none (NaN, infinite), whose reason the text beside says.
pub fn fmt(x: f64) -> String {
    if x.is_finite() && x != 0.0 && x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{x:.0}")
    } else {
        fmt_decimals(x)
    }
}

/// [`fmt`] without its whole-number shortcut: the decimals of the value's
/// magnitude (`2.000`, `216.0`), for a whole number beside fractional ones in a
/// column.
pub fn fmt_decimals(x: f64) -> String {
    if !x.is_finite() {
        return "-".into();
    }
    let a = x.abs();
    if a == 0.0 {
        "0".into()
    } else if a >= 10_000.0 {
        format!("{x:.0}")
    } else if a >= 100.0 {
        format!("{x:.1}")
    } else if a >= 10.0 {
        format!("{x:.2}")
    } else if a >= 0.01 {
        format!("{x:.3}")
    } else {
        format!("{x:.2e}")
    }
}

/// A percentage from a fraction: 0.034 -> "3.4 %".
pub fn pct(fraction: f64) -> String {
    format!("{:.1} %", fraction * 100.0)
}

/// What the machine did around a measurement, in one line: steal, how busy the
/// CPUs were, other programs' share and disk I/O where known, the load average,
/// and how often it was measured when once was not enough.
pub fn load_text(load: &oslab_model::LoadRecord, arrow: &str) -> String {
    let mut parts = vec![
        format!("steal {}", pct(load.steal_fraction)),
        format!("CPUs busy {}", pct(load.cpu_busy_fraction)),
    ];
    if let Some(o) = load.others_cpu_fraction {
        parts.push(format!("other programs {}", pct(o)));
    }
    if let Some(b) = load.others_io_bytes {
        parts.push(format!("their disk I/O {}", oslab_units::human_bytes(b)));
    }
    parts.push(format!(
        "load {:.2} {arrow} {:.2}",
        load.loadavg_before[0], load.loadavg_after[0]
    ));
    if let Some(n) = load.attempts.filter(|n| *n > 1) {
        parts.push(format!("measured {n} times"));
    }
    parts.join(" · ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn significant_digits() {
        assert_eq!(fmt(0.0), "0");
        assert_eq!(fmt(-0.0), "0");
        assert_eq!(fmt(3.0), "3");
        assert_eq!(fmt(61.234), "61.23");
        assert_eq!(fmt(123.456), "123.5");
        assert_eq!(fmt(0.3141), "0.314");
        assert_eq!(fmt(123456.7), "123457");
        assert_eq!(fmt(0.0001234), "1.23e-4");
        assert_eq!(pct(0.034), "3.4 %");
        assert_eq!(fmt(f64::NAN), "-");
        assert_eq!(fmt(f64::INFINITY), "-");
        assert_eq!(fmt_decimals(2.0), "2.000");
        assert_eq!(fmt_decimals(216.0), "216.0");
        assert_eq!(fmt_decimals(123456.0), "123456");
        assert_eq!(fmt_decimals(0.0), "0");
    }

    #[test]
    fn the_load_line_names_what_others_did_when_it_is_known() {
        let mut load = oslab_model::LoadRecord {
            loadavg_before: [1.0, 0.0, 0.0],
            loadavg_after: [1.5, 0.0, 0.0],
            cpu_busy_fraction: 0.97,
            steal_fraction: 0.0,
            ..Default::default()
        };
        assert_eq!(
            load_text(&load, "->"),
            "steal 0.0 % · CPUs busy 97.0 % · load 1.00 -> 1.50"
        );
        load.others_cpu_fraction = Some(0.45);
        load.others_io_bytes = Some(3 << 20);
        load.attempts = Some(2);
        assert_eq!(
            load_text(&load, "->"),
            "steal 0.0 % · CPUs busy 97.0 % · other programs 45.0 % · their disk I/O 3 MiB · load 1.00 -> 1.50 · measured 2 times"
        );
    }
}

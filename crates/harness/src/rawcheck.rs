//! What a raw file may not hold whatever its experiment: a negative time or size.
//!
//! Raw data are plain serde types, so a counter typed `u64` already refuses a
//! negative value; times and sizes kept as floating-point numbers do not. A field
//! is a time or a size by its name, the convention every `Raw` follows: a unit
//! suffix (`_ns`, `_us`, `_ms`, `_s`, `_bytes`, `_per_call`, `_per_page`,
//! `_per_op`) or a unit alone (`ns`, `bytes`, `pages`). A difference says so in its
//! name (`cache_delta_bytes`) and may be negative, as may the kernel's signed
//! figures (`pause_jiffies`, a nice value, a return code), which carry no such
//! suffix.

use serde_json::Value;

const UNIT_SUFFIXES: &[&str] = &[
    "_ns",
    "_us",
    "_ms",
    "_s",
    "_bytes",
    "_per_call",
    "_per_page",
    "_per_op",
];
const UNITS: &[&str] = &["ns", "bytes", "pages"];

/// Whether a field of this name holds a time or a size, which cannot be negative.
pub fn is_amount(field: &str) -> bool {
    !field.contains("delta")
        && (UNITS.contains(&field) || UNIT_SUFFIXES.iter().any(|s| field.ends_with(s)))
}

/// Refuses a negative time or size anywhere in `raw` (named `at`), naming the
/// first one found by its path.
pub fn no_negative_amounts(raw: &Value, at: &str) -> Result<(), String> {
    match first_negative(raw, None) {
        None => Ok(()),
        Some((mut path, n)) => {
            path.push(at.to_string());
            path.reverse();
            Err(format!(
                "holds {} = {n}, but a time or size cannot be negative",
                path.concat()
            ))
        }
    }
}

/// The first negative amount: its path from the leaf up, and the number. The
/// path is built only for the one found, so a large file costs no string per value.
fn first_negative<'a>(
    v: &'a Value,
    field: Option<&str>,
) -> Option<(Vec<String>, &'a serde_json::Number)> {
    match v {
        Value::Object(m) => m.iter().find_map(|(k, x)| {
            first_negative(x, Some(k)).map(|(mut p, n)| {
                p.push(format!(".{k}"));
                (p, n)
            })
        }),
        Value::Array(a) => a.iter().enumerate().find_map(|(i, x)| {
            first_negative(x, field).map(|(mut p, n)| {
                p.push(format!("[{i}]"));
                (p, n)
            })
        }),
        Value::Number(n) => match (field, n.as_f64()) {
            (Some(f), Some(x)) if x < 0.0 && is_amount(f) => Some((Vec::new(), n)),
            _ => None,
        },
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn times_and_sizes_are_named_by_their_units() {
        for f in [
            "ns",
            "ns_per_call",
            "first_ns_per_page",
            "t_s",
            "dur_ns",
            "size_bytes",
        ] {
            assert!(is_amount(f), "{f}");
        }
        for f in [
            "nice",
            "pause_jiffies",
            "ret",
            "cache_delta_bytes",
            "cpu",
            "pos_ratio",
        ] {
            assert!(!is_amount(f), "{f}");
        }
    }

    #[test]
    fn a_negative_sample_is_named_by_its_path() {
        let raw = json!({"probes": [{"name": "loop", "ns_per_call": [1.0, 2.0]},
                                    {"name": "gettid", "ns_per_call": [40.0, -3.5]}]});
        assert_eq!(
            no_negative_amounts(&raw, "raw").unwrap_err(),
            "holds raw.probes[1].ns_per_call[1] = -3.5, but a time or size cannot be negative"
        );
        let signed = json!({"pause_jiffies": [-4, 2], "cache_delta_bytes": -4096, "nice": -5});
        assert!(no_negative_amounts(&signed, "raw").is_ok());
        assert!(no_negative_amounts(&json!({"t_s": 0.0, "n": -1}), "raw").is_ok());
    }
}

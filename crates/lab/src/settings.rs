//! Experiment settings a user can change with `oslab run ID --set NAME=VALUE`.

use oslab_sys::parse::size::parse_human_size;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A size: `256MiB`, `1G`, `4096`.
    Bytes,
    /// `true`/`false`, `yes`/`no`, `1`/`0`.
    Bool,
    /// A whole number.
    Count,
    /// Seconds, fractional allowed.
    Seconds,
    /// A file to write (read back with `Context::path`).
    Path,
}

/// One setting an experiment accepts.
#[derive(Debug, Clone, Copy)]
pub struct Setting {
    pub name: &'static str,
    pub kind: Kind,
    pub help: &'static str,
}

/// A parsed setting value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value {
    Bytes(u64),
    Bool(bool),
    Count(u64),
    Seconds(f64),
    /// A valid path was given; its text is in the run's settings.
    Path,
}

/// Parses `text` as `kind`, or says in one sentence why not.
pub fn parse(name: &str, kind: Kind, text: &str) -> Result<Value, String> {
    let t = text.trim();
    match kind {
        Kind::Bytes => parse_human_size(t)
            .map(Value::Bytes)
            .map_err(|_| format!("{name}={t}: not a size (try 256MiB or 1G)")),
        Kind::Bool => match t.to_ascii_lowercase().as_str() {
            "true" | "yes" | "1" | "on" => Ok(Value::Bool(true)),
            "false" | "no" | "0" | "off" => Ok(Value::Bool(false)),
            _ => Err(format!("{name}={t}: not true or false")),
        },
        Kind::Count => t
            .parse()
            .map(Value::Count)
            .map_err(|_| format!("{name}={t}: not a whole number")),
        Kind::Seconds => match t.trim_end_matches('s').parse::<f64>() {
            Ok(v) if v.is_finite() && v >= 0.0 => Ok(Value::Seconds(v)),
            _ => Err(format!("{name}={t}: not a number of seconds")),
        },
        Kind::Path => {
            if t.is_empty() {
                Err(format!("{name}= needs a file name"))
            } else {
                Ok(Value::Path)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_each_kind() {
        assert_eq!(
            parse("size", Kind::Bytes, "64MiB"),
            Ok(Value::Bytes(64 << 20))
        );
        assert_eq!(parse("x", Kind::Bool, "yes"), Ok(Value::Bool(true)));
        assert_eq!(parse("n", Kind::Count, "12"), Ok(Value::Count(12)));
        assert_eq!(parse("t", Kind::Seconds, "1.5s"), Ok(Value::Seconds(1.5)));
        assert!(
            parse("size", Kind::Bytes, "big")
                .unwrap_err()
                .contains("size=big")
        );
        assert!(parse("x", Kind::Bool, "maybe").is_err());
        assert!(parse("t", Kind::Seconds, "-1").is_err());
    }
}

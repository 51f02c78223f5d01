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
    /// A comma-separated subset of these names (read back with `Context::choices`).
    Choices(&'static [&'static str]),
}

impl Kind {
    /// What `oslab list --settings` shows for the kind.
    pub fn label(self) -> String {
        match self {
            Kind::Bytes => "bytes".into(),
            Kind::Bool => "bool".into(),
            Kind::Count => "count".into(),
            Kind::Seconds => "seconds".into(),
            Kind::Path => "path".into(),
            Kind::Choices(names) => format!("some of {}", names.join(",")),
        }
    }
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
    /// Valid names were given; their text is in the run's settings.
    Choices,
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
        Kind::Choices(names) => {
            let given: Vec<&str> = t.split(',').map(str::trim).collect();
            match given.iter().find(|g| !names.contains(g)) {
                Some(bad) => Err(format!(
                    "{name}={t}: '{bad}' is not one of {}",
                    names.join(", ")
                )),
                None => Ok(Value::Choices),
            }
        }
    }
}

/// The names of a `Choices` setting, in the order of `names`.
pub fn chosen(text: &str, names: &'static [&'static str]) -> Vec<&'static str> {
    let given: Vec<&str> = text.split(',').map(str::trim).collect();
    names
        .iter()
        .copied()
        .filter(|n| given.contains(n))
        .collect()
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
        const NAMES: &[&str] = &["alone", "bulk", "rt"];
        assert_eq!(
            parse("s", Kind::Choices(NAMES), "rt, alone"),
            Ok(Value::Choices)
        );
        assert_eq!(
            parse("s", Kind::Choices(NAMES), "rt,solo").unwrap_err(),
            "s=rt,solo: 'solo' is not one of alone, bulk, rt"
        );
        assert!(parse("s", Kind::Choices(NAMES), "").is_err());
        assert_eq!(chosen("rt, alone", NAMES), vec!["alone", "rt"]);
    }
}

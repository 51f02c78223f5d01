//! `--set NAME=VALUE` values parsed against their keys' declarations
//! ([`crate::keys`]) and applied to a configuration, which is then checked whole.

use oslab_settings::{SetValue, split_assignment};

use crate::config::Config;
use crate::keys::{KEYS, Key};

/// A `--set` value parsed against its key's declaration, ready to apply.
#[derive(Clone)]
pub struct Assignment {
    pub key: &'static Key,
    pub value: SetValue,
}

impl std::fmt::Debug for Assignment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}={:?}", self.key.setting.name(), self.value)
    }
}

impl Assignment {
    /// Parses `value` for `key` once; an unknown key or a value of the wrong kind or
    /// out of range is one sentence naming the key.
    pub fn parse(key: &str, value: &str) -> Result<Assignment, String> {
        let k = KEYS
            .iter()
            .find(|k| k.setting.name() == key)
            .ok_or_else(|| {
                let known: Vec<&str> = KEYS.iter().map(|k| k.setting.name()).collect();
                format!(
                    "{key}: the simulator has no such setting (known: {})",
                    known.join(", ")
                )
            })?;
        Ok(Assignment {
            key: k,
            value: k.setting.parse_value(value)?,
        })
    }

    /// Sets the field (the whole configuration is checked by
    /// [`crate::scenario::validate`] afterwards).
    pub fn apply(&self, c: &mut Config) {
        (self.key.apply)(c, &self.value)
    }
}

/// `--set NAME=VALUE` arguments, each split as the experiments' are
/// ([`split_assignment`]) and parsed once against its key's declaration.
pub fn parse_sets(args: &[String]) -> Result<Vec<Assignment>, String> {
    args.iter()
        .map(|a| {
            let (name, value) = split_assignment(a)?;
            Assignment::parse(name, value)
        })
        .collect()
}

/// `base` with `sets` applied in order, then checked whole
/// ([`crate::scenario::validate`]), so a `--set` value meets the ranges a scenario
/// file does.
pub fn configure(base: &Config, sets: &[Assignment]) -> Result<Config, String> {
    let mut c = base.clone();
    for a in sets {
        a.apply(&mut c);
    }
    crate::validate::validate(&c).map_err(|e| e.to_string())?;
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::RuleSet;

    /// A key's default is what a scenario file gets when it leaves the field out,
    /// and `apply` writes the field the key names (with the kind it declares).
    #[test]
    fn a_default_is_what_a_file_without_the_field_gets() {
        let base = crate::scenario::find("paper-fig2").unwrap().config;
        for k in KEYS {
            let name = k.setting.name();
            let mut doc = toml::Value::try_from(&base).unwrap();
            let table = doc.as_table_mut().unwrap();
            let (path, last) = match k.field.rsplit_once('.') {
                Some((p, l)) => (Some(p), l),
                None => (None, k.field),
            };
            let holder = match path {
                Some(p) => table[p].as_table_mut().unwrap(),
                None => table,
            };
            assert!(
                holder.remove(last).is_some(),
                "{name}: no field {}",
                k.field
            );
            let text = toml::to_string(&doc).unwrap();
            let read: Result<Config, _> = toml::from_str(&text);
            if k.required {
                assert!(read.is_err(), "{name}: a file must give {}", k.field);
                continue;
            }
            let mut expected = base.clone();
            let default = k.setting.defaults().1.replace(' ', "");
            Assignment::parse(name, &default)
                .unwrap_or_else(|e| panic!("{name}: {e}"))
                .apply(&mut expected);
            assert_eq!(read.unwrap(), expected, "{name}");
        }
    }

    #[test]
    fn names_are_unique() {
        let mut names: Vec<&str> = KEYS.iter().map(|k| k.setting.name()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), KEYS.len());
    }

    #[test]
    fn values_are_parsed_typed_and_checked() {
        let mut c = crate::scenario::find("testbed-fig2").unwrap().config;
        Assignment::parse("bandwidth", "10MiB/s")
            .unwrap()
            .apply(&mut c);
        assert_eq!(c.device.bandwidth_bytes_s, 10.0 * (1 << 20) as f64);
        Assignment::parse("request_latency_ms", "2.5ms")
            .unwrap()
            .apply(&mut c);
        assert_eq!(c.device.request_latency_ns, 2_500_000);
        Assignment::parse("rules", "linux-2.6.26")
            .unwrap()
            .apply(&mut c);
        assert_eq!(c.rules, RuleSet::Linux2626);
        assert_eq!(
            Assignment::parse("dirty_ratio", "150").unwrap_err(),
            "dirty_ratio=150 is out of range: give 0 to 100"
        );
        assert_eq!(
            Assignment::parse("bandwidth", "fast").unwrap_err(),
            "bandwidth=fast: not a rate (try 40MiB/s)"
        );
        assert_eq!(
            Assignment::parse("rules", "linux-9").unwrap_err(),
            "rules=linux-9: 'linux-9' is not one of linux-6, linux-2.6.26"
        );
        assert!(
            Assignment::parse("nope", "1")
                .unwrap_err()
                .starts_with("nope: the simulator has no such setting (known: dirty_bytes, ")
        );
    }

    fn args(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn set_arguments_have_the_experiments_grammar() {
        let sets = parse_sets(&args(&[" bandwidth = 10MiB/s", "rules=linux-2.6.26"])).unwrap();
        let base = crate::scenario::find("testbed-fig2").unwrap().config;
        let c = configure(&base, &sets).unwrap();
        assert_eq!(c.device.bandwidth_bytes_s, 10.0 * (1 << 20) as f64);
        assert_eq!(c.rules, RuleSet::Linux2626);
        assert_eq!(
            parse_sets(&args(&["bandwidth"])).unwrap_err(),
            "bandwidth: expected NAME=VALUE"
        );
        assert_eq!(
            parse_sets(&args(&["dirty_ratio=150"])).unwrap_err(),
            "dirty_ratio=150 is out of range: give 0 to 100"
        );
    }
}

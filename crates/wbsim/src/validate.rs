//! What a scenario may hold: every bounded field against its declaration (the
//! `--set` keys' in [`crate::settings`], the others' in [`crate::bounds`]), so a
//! scenario file, a `--set` value and a built-in scenario meet the same ranges;
//! beyond them a scenario is refused with the field named.

use crate::bounds::{FIELDS, MAX_WRITERS, WRITER_FIELDS};
use crate::config::Config;
use crate::keys::KEYS;

/// Why a scenario cannot be simulated: the field (its path in a scenario file,
/// `writers[1].class.normal.nice`) and what is wrong with its value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalid {
    pub field: String,
    pub why: String,
}

impl std::fmt::Display for Invalid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.why)
    }
}

fn invalid(field: impl Into<String>, why: impl Into<String>) -> Invalid {
    Invalid {
        field: field.into(),
        why: why.into(),
    }
}

/// Checks a configuration for values that cannot be simulated.
pub fn validate(c: &Config) -> Result<(), Invalid> {
    if c.writers.is_empty() {
        return Err(invalid("writers", "a scenario needs at least one writer"));
    }
    if c.writers.len() > MAX_WRITERS {
        return Err(invalid(
            "writers",
            format!(
                "{} writers, more than the {MAX_WRITERS} a scenario may have",
                c.writers.len()
            ),
        ));
    }
    for k in KEYS {
        (k.check)(c).map_err(|why| invalid(k.field, why))?;
    }
    for f in FIELDS {
        (f.check)(c).map_err(|why| invalid(f.path, why))?;
    }
    for (i, w) in c.writers.iter().enumerate() {
        for f in WRITER_FIELDS {
            (f.check)(w).map_err(|why| invalid(format!("writers[{i}].{}", f.path), why))?;
        }
    }
    Ok(())
}

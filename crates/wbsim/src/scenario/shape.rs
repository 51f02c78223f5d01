//! The shape of a scenario file: which keys each table may hold, which it must,
//! and what kind of value each is. It is checked on the parsed document, which
//! keeps where each key and value stands, before serde reads the file, so an
//! unknown key, a missing one or a value of the wrong kind is named with its line
//! (serde would say `invalid type: string "fast", expected f64`, or `missing field
//! bytes` without the writer). The ranges are not here: they are the settings'
//! ([`super::validate`]).
//!
//! The shape follows [`crate::config`]'s serde layout; the tests in
//! `scenario/props.rs` hold the two together (every built-in scenario fits the
//! shape, and a field the shape says a file may leave out has a serde default).

use std::ops::Range;

use toml::Spanned;
use toml::de::{DeTable, DeValue};

use crate::policy::Policy;
use crate::settings::{DEVICE_KINDS, KERNEL_NAMES, RULE_NAMES, START_NAMES};

/// What a value must be.
#[derive(Clone, Copy)]
pub enum Shape {
    Text,
    /// One of these strings.
    OneOf(&'static [&'static str]),
    /// An integer or a float; not nan or inf.
    Number,
    /// An integer from 0 to `max`.
    Whole {
        max: u64,
    },
    /// An integer from `min` to `max`.
    Signed {
        min: i64,
        max: i64,
    },
    /// A list of numbers.
    Numbers,
    Table(&'static [Entry]),
    /// A list of tables ([[writers]]), each a table with a tag key naming its
    /// variant (`type = "bulk"`): the common keys and the variant's.
    TaggedTables {
        tag: &'static str,
        common: &'static [Entry],
        variants: &'static [(&'static str, &'static [Entry])],
    },
    /// A table of exactly one key, the variant's name (`{ rt = { priority = 55 } }`).
    OneTable(&'static [(&'static str, &'static [Entry])]),
}

/// A key a table may hold.
#[derive(Clone, Copy)]
pub struct Entry {
    pub key: &'static str,
    pub shape: Shape,
    /// Whether a file must give it (serde has no default for it).
    pub required: bool,
}

const fn must(key: &'static str, shape: Shape) -> Entry {
    Entry {
        key,
        shape,
        required: true,
    }
}

const fn may(key: &'static str, shape: Shape) -> Entry {
    Entry {
        key,
        shape,
        required: false,
    }
}

const U64: Shape = Shape::Whole { max: u64::MAX };
const U32: Shape = Shape::Whole {
    max: u32::MAX as u64,
};

const SYSCTLS: &[Entry] = &[
    may("dirty_ratio", U64),
    may("dirty_bytes", U64),
    may("dirty_background_ratio", U64),
    may("dirty_background_bytes", U64),
    may("dirty_writeback_centisecs", U64),
    may("dirty_expire_centisecs", U64),
];

const DEVICE: &[Entry] = &[
    may("kind", Shape::OneOf(DEVICE_KINDS)),
    may("bandwidth_bytes_s", Shape::Number),
    may("request_latency_ns", U64),
    may("max_request_bytes", U64),
    may("queue_bytes", U64),
];

const INITIAL: &[Entry] = &[
    may("write_bw_bytes_s", Shape::Number),
    may("avg_write_bw_bytes_s", Shape::Number),
    may("dirty_ratelimit_bytes_s", Shape::Number),
    may("dirty_limit_bytes", U64),
    may("wb_share", Shape::Number),
];

const GOVERNOR: &[Entry] = &[
    may("pass_ms", Shape::Number),
    may("active_ms", Shape::Number),
];

const CLASSES: &[(&str, &[Entry])] = &[
    (
        "normal",
        &[must(
            "nice",
            Shape::Signed {
                min: i32::MIN as i64,
                max: i32::MAX as i64,
            },
        )],
    ),
    ("rt", &[must("priority", U32)]),
];

const WRITER: &[Entry] = &[
    must("name", Shape::Text),
    must("class", Shape::OneTable(CLASSES)),
    may("group", Shape::Text),
    may("fsync_every", U64),
    may("start_ms", Shape::Number),
    may("stop_ms", Shape::Number),
];

const WRITE_KINDS: &[(&str, &[Entry])] = &[
    (
        "periodic",
        &[
            must("bytes", U64),
            must("period_ms", Shape::Number),
            must("count", U64),
        ],
    ),
    (
        "rate",
        &[must("bytes_per_s", Shape::Number), must("chunk", U64)],
    ),
    ("bulk", &[must("chunk", U64)]),
];

/// The whole file.
pub const FILE: &[Entry] = &[
    may("title", Shape::Text),
    may("description", Shape::Text),
    must("rules", Shape::OneOf(RULE_NAMES)),
    must("dirtyable_bytes", U64),
    may("sysctls", Shape::Table(SYSCTLS)),
    may("device", Shape::Table(DEVICE)),
    may("copy_bytes_s", Shape::Number),
    must(
        "writers",
        Shape::TaggedTables {
            tag: "type",
            common: WRITER,
            variants: WRITE_KINDS,
        },
    ),
    must("duration_s", Shape::Number),
    may("policy", Shape::OneOf(Policy::NAMES)),
    may("sample_ms", Shape::Number),
    may("wcall_block_ms", Shape::Number),
    must("cpus", U32),
    may("hz", U64),
    may("folio_bytes", U64),
    may("page_alloc_ns", Shape::Numbers),
    may("other_writeback_bytes_s", Shape::Number),
    may("start", Shape::OneOf(START_NAMES)),
    may("initial", Shape::Table(INITIAL)),
    may("governor", Shape::Table(GOVERNOR)),
    may("kernel", Shape::OneOf(KERNEL_NAMES)),
];

/// What does not fit, where: the field's path, the byte range it stands at, and
/// what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Misfit {
    pub field: String,
    pub at: Range<usize>,
    pub why: String,
}

/// Checks a parsed scenario file against [`FILE`]; `text` is its source, for the
/// values quoted in messages.
pub fn check(doc: &Spanned<DeTable>, text: &str) -> Result<(), Misfit> {
    table(doc.get_ref(), doc.span(), FILE, "", text)
}

fn path(at: &str, key: &str) -> String {
    if at.is_empty() {
        key.to_string()
    } else {
        format!("{at}.{key}")
    }
}

/// The source of a value, shortened, for "got ..." (a string with its quotes).
fn quoted(text: &str, span: Range<usize>) -> String {
    let s = text.get(span).unwrap_or("").trim();
    let short: String = s.chars().take(40).collect();
    if short.len() < s.len() {
        format!("{short}...")
    } else {
        short.replace('\n', " ")
    }
}

fn table(
    t: &DeTable,
    span: Range<usize>,
    entries: &[Entry],
    at: &str,
    text: &str,
) -> Result<(), Misfit> {
    for (k, v) in t.iter() {
        let field = path(at, k.get_ref());
        let Some(e) = entries.iter().find(|e| e.key == k.get_ref().as_ref()) else {
            let known: Vec<&str> = entries.iter().map(|e| e.key).collect();
            return Err(Misfit {
                field,
                at: k.span(),
                why: format!("unknown field (known here: {})", known.join(", ")),
            });
        };
        value(v, e.shape, &field, text)?;
    }
    match entries
        .iter()
        .find(|e| e.required && !t.contains_key(e.key))
    {
        Some(e) => Err(Misfit {
            field: if at.is_empty() {
                e.key.to_string()
            } else {
                at.to_string()
            },
            at: span,
            why: format!("missing field {}", e.key),
        }),
        None => Ok(()),
    }
}

fn expected(v: &Spanned<DeValue>, field: &str, what: &str, text: &str) -> Misfit {
    Misfit {
        field: field.to_string(),
        at: v.span(),
        why: format!("expected {what}, got {}", quoted(text, v.span())),
    }
}

fn value(v: &Spanned<DeValue>, shape: Shape, field: &str, text: &str) -> Result<(), Misfit> {
    let wrong = |what: &str| Err(expected(v, field, what, text));
    match (shape, v.get_ref()) {
        (Shape::Text, DeValue::String(_)) => Ok(()),
        (Shape::Text, _) => wrong("a string"),
        (Shape::OneOf(names), DeValue::String(s)) if names.contains(&s.as_ref()) => Ok(()),
        (Shape::OneOf(names), _) => wrong(&format!("one of {}", names.join(", "))),
        (Shape::Number, DeValue::Integer(_)) => Ok(()),
        (Shape::Number, DeValue::Float(f)) if !f.as_str().contains(['n', 'i']) => Ok(()),
        (Shape::Number, _) => wrong("a number"),
        (Shape::Whole { max }, DeValue::Integer(i)) => {
            match i128::from_str_radix(i.as_str(), i.radix()) {
                Ok(n) if (0..=max as i128).contains(&n) => Ok(()),
                Ok(n) if n < 0 => wrong("a whole number of 0 or more"),
                _ => wrong(&format!("a whole number up to {max}")),
            }
        }
        (Shape::Whole { .. }, _) => wrong("a whole number"),
        (Shape::Signed { min, max }, DeValue::Integer(i)) => {
            match i128::from_str_radix(i.as_str(), i.radix()) {
                Ok(n) if (min as i128..=max as i128).contains(&n) => Ok(()),
                _ => wrong(&format!("a whole number from {min} to {max}")),
            }
        }
        (Shape::Signed { .. }, _) => wrong("a whole number"),
        (Shape::Numbers, DeValue::Array(a)) => a
            .iter()
            .enumerate()
            .try_for_each(|(i, x)| value(x, Shape::Number, &format!("{field}[{i}]"), text)),
        (Shape::Numbers, _) => wrong("a list of numbers"),
        (Shape::Table(entries), DeValue::Table(t)) => table(t, v.span(), entries, field, text),
        (Shape::Table(_), _) => wrong("a table"),
        (Shape::OneTable(variants), DeValue::Table(t)) if t.len() == 1 => {
            let (k, inner) = t.iter().next().expect("one entry");
            let inner_field = path(field, k.get_ref());
            match variants
                .iter()
                .find(|(name, _)| *name == k.get_ref().as_ref())
            {
                Some((_, entries)) => value(inner, Shape::Table(entries), &inner_field, text),
                None => Err(Misfit {
                    field: inner_field,
                    at: k.span(),
                    why: format!("unknown kind (known: {})", names(variants)),
                }),
            }
        }
        (Shape::OneTable(variants), _) => wrong(&format!(
            "one of {} as {{ {} = {{ ... }} }}",
            names(variants),
            variants[0].0
        )),
        (
            Shape::TaggedTables {
                tag,
                common,
                variants,
            },
            DeValue::Array(a),
        ) => a.iter().enumerate().try_for_each(|(i, x)| {
            tagged(x, tag, common, variants, &format!("{field}[{i}]"), text)
        }),
        (Shape::TaggedTables { .. }, _) => wrong("a list of tables ([[...]])"),
    }
}

fn names(variants: &[(&str, &[Entry])]) -> String {
    variants
        .iter()
        .map(|(n, _)| *n)
        .collect::<Vec<_>>()
        .join(", ")
}

/// One table of a tagged list: its tag names its variant, whose keys it may hold
/// beside the common ones. The field is named with the writer's name when it has
/// one: `writers[1] (bulk)`.
fn tagged(
    v: &Spanned<DeValue>,
    tag: &'static str,
    common: &[Entry],
    variants: &[(&str, &[Entry])],
    field: &str,
    text: &str,
) -> Result<(), Misfit> {
    let Some(t) = v.get_ref().as_table() else {
        return Err(expected(v, field, "a table", text));
    };
    let named = match t.get("name").and_then(|n| n.get_ref().as_str()) {
        Some(n) => format!("{field} ({n})"),
        None => field.to_string(),
    };
    let kind = t.get(tag).ok_or_else(|| Misfit {
        field: named.clone(),
        at: v.span(),
        why: format!("missing field {tag} (one of {})", names(variants)),
    })?;
    let Some((_, own)) = kind
        .get_ref()
        .as_str()
        .and_then(|k| variants.iter().find(|(n, _)| *n == k))
    else {
        return Err(expected(
            kind,
            &path(&named, tag),
            &format!("one of {}", names(variants)),
            text,
        ));
    };
    let mut entries: Vec<Entry> = common.to_vec();
    entries.push(must(tag, Shape::Text));
    entries.extend_from_slice(own);
    table(t, v.span(), &entries, &named, text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Class, Config, Initial, Kind, WriterCfg};

    /// A configuration with every field a file can hold given (no option left
    /// out), as TOML.
    fn everything() -> toml::Table {
        let mut c: Config = super::super::find("testbed-bulk").unwrap().config;
        c.page_alloc_ns = vec![300.0];
        c.initial = Initial {
            write_bw_bytes_s: Some(1e6),
            avg_write_bw_bytes_s: Some(1e6),
            dirty_ratelimit_bytes_s: Some(1e6),
            dirty_limit_bytes: Some(1 << 30),
            wb_share: Some(0.5),
        };
        let w = |name: &str, kind: Kind, class: Class| WriterCfg {
            name: name.into(),
            kind,
            class,
            group: Some("g".into()),
            fsync_every: Some(4),
            start_ms: 1.0,
            stop_ms: Some(2.0),
        };
        c.writers = vec![
            w(
                "p",
                Kind::Periodic {
                    bytes: 4096,
                    period_ms: 20.0,
                    count: 5,
                },
                Class::Rt { priority: 55 },
            ),
            w(
                "r",
                Kind::Rate {
                    bytes_per_s: 1e6,
                    chunk: 4096,
                },
                Class::Normal { nice: 0 },
            ),
            w("b", Kind::Bulk { chunk: 4096 }, Class::Normal { nice: 0 }),
        ];
        let mut t = toml::Table::try_from(&c).unwrap();
        t.insert("title".into(), "t".into());
        t.insert("description".into(), "d".into());
        t
    }

    fn fits(t: &toml::Table) -> bool {
        let text = toml::to_string(t).unwrap();
        check(&DeTable::parse(&text).unwrap(), &text).is_ok()
    }

    fn serde_reads(t: &toml::Table) -> bool {
        toml::from_str::<Config>(&toml::to_string(t).unwrap()).is_ok()
    }

    /// The shape and serde agree: a file holding every field fits the shape, and
    /// a field the shape requires is exactly one serde has no default for.
    #[test]
    fn the_shape_follows_the_serde_layout() {
        let all = everything();
        assert!(fits(&all));
        let tables = [
            ("", FILE),
            ("sysctls", SYSCTLS),
            ("device", DEVICE),
            ("initial", INITIAL),
            ("governor", GOVERNOR),
        ];
        for (table, entries) in tables {
            for e in entries {
                let mut t = all.clone();
                let holder = if table.is_empty() {
                    &mut t
                } else {
                    t[table].as_table_mut().unwrap()
                };
                assert!(
                    holder.remove(e.key).is_some(),
                    "{table}.{}: not in the full file",
                    e.key
                );
                assert_eq!(serde_reads(&t), !e.required, "{table}.{}", e.key);
            }
        }
        for (i, (kind, own)) in WRITE_KINDS.iter().enumerate() {
            for e in WRITER.iter().chain(own.iter()) {
                let mut t = all.clone();
                let w = t["writers"].as_array_mut().unwrap()[i]
                    .as_table_mut()
                    .unwrap();
                assert_eq!(w["type"].as_str(), Some(*kind));
                assert!(w.remove(e.key).is_some(), "{kind} writer: no {}", e.key);
                assert_eq!(serde_reads(&t), !e.required, "{kind} writer: {}", e.key);
            }
        }
    }

    #[test]
    fn the_names_are_those_serde_takes() {
        for (key, names) in [
            ("policy", Policy::NAMES),
            ("rules", RULE_NAMES),
            ("kind", DEVICE_KINDS),
            ("start", START_NAMES),
            ("kernel", KERNEL_NAMES),
        ] {
            for n in names {
                let mut t = everything();
                let holder = if key == "kind" {
                    t["device"].as_table_mut().unwrap()
                } else {
                    &mut t
                };
                holder.insert(key.into(), (*n).into());
                assert!(serde_reads(&t), "{key} = {n}");
            }
        }
    }
}

//! A user's scenario file (TOML): anything wrong in it is one sentence naming the
//! file, the line and the field ("bad.toml line 12, device.bandwidth_bytes_s:
//! expected a number, got \"fast\""). Three checks, in order: the TOML syntax, the
//! file's shape (known keys, kinds of value: [`super::shape`]), then every value
//! against its declared range ([`super::validate`], as for `--set`).

use std::ops::Range;

use toml::Spanned;
use toml::de::{DeTable, DeValue};

use super::{Scenario, shape, validate};
use crate::config::Config;

/// A user's scenario from TOML text; `name` names it in errors.
pub fn from_toml(name: &str, text: &str) -> Result<Scenario, String> {
    let doc = DeTable::parse(text).map_err(|e| sentence(name, text, e.span(), "", e.message()))?;
    shape::check(&doc, text).map_err(|m| sentence(name, text, Some(m.at), &m.field, &m.why))?;
    // the shape fits, so serde reads it; should it not, its own words are kept
    let config: Config =
        toml::from_str(text).map_err(|e| sentence(name, text, e.span(), "", e.message()))?;
    validate(&config)
        .map_err(|e| sentence(name, text, span_of(&doc, &e.field), &e.field, &e.why))?;
    let text_of = |key: &str| {
        doc.get_ref()
            .get(key)
            .and_then(|v| v.get_ref().as_str())
            .map(str::to_string)
    };
    let absent = |key: &str| doc.get_ref().get(key).is_none();
    let device_bw_absent = doc
        .get_ref()
        .get("device")
        .and_then(|d| d.get_ref().as_table())
        .is_none_or(|d| d.get("bandwidth_bytes_s").is_none());
    Ok(Scenario {
        name: name.into(),
        title: text_of("title").unwrap_or_else(|| name.into()),
        description: text_of("description").unwrap_or_default(),
        config,
        open: crate::profile::OpenFields {
            copy: absent("copy_bytes_s"),
            page_alloc: absent("page_alloc_ns"),
            hz: absent("hz"),
            device_bandwidth: device_bw_absent,
            kernel: absent("kernel"),
        },
    })
}

/// "bad.toml line 12, device.bandwidth_bytes_s: expected a number, got \"fast\"",
/// without the line or the field where there is none.
fn sentence(name: &str, text: &str, at: Option<Range<usize>>, field: &str, why: &str) -> String {
    let mut s = name.to_string();
    if let Some(r) = at {
        let start = r.start.min(text.len());
        let line = text.as_bytes()[..start]
            .iter()
            .filter(|b| **b == b'\n')
            .count()
            + 1;
        s += &format!(" line {line}");
    }
    if !field.is_empty() {
        s += &format!(", {field}");
    }
    let why = why.trim().replace('\n', " ");
    format!("{s}: {why}")
}

/// Where a field (`writers[1].class.normal.nice`) stands in the file: its key, or
/// the nearest table above it that the file holds (a field left at its default).
fn span_of(doc: &Spanned<DeTable>, field: &str) -> Option<Range<usize>> {
    let mut here: &DeTable = doc.get_ref();
    let mut found = None;
    for part in field.split('.') {
        let (key, index) = match part.split_once('[') {
            Some((k, i)) => (k, i.trim_end_matches(']').parse::<usize>().ok()),
            None => (part, None),
        };
        // a writer's name in parentheses is not part of the path
        let key = key.split(" (").next().unwrap_or(key);
        let Some((k, v)) = here.get_key_value(key) else {
            break;
        };
        found = Some(k.span());
        let v: &Spanned<DeValue> = match (index, v.get_ref().as_array()) {
            (Some(i), Some(a)) => match a.get(i) {
                Some(x) => {
                    found = Some(x.span());
                    x
                }
                None => break,
            },
            _ => v,
        };
        match v.get_ref().as_table() {
            Some(t) => here = t,
            None => break,
        }
    }
    found
}

#[cfg(test)]
mod tests {

    #[test]
    fn what_a_file_leaves_out_is_left_to_the_machine_profile() {
        let base = "rules = \"linux-6\"\ndirtyable_bytes = 1073741824\nduration_s = 5.0\ncpus = 2\n[[writers]]\nname = \"w\"\ntype = \"bulk\"\nchunk = 4096\nclass = { normal = { nice = 0 } }\n";
        let open = from_toml("a.toml", base).unwrap().open;
        assert!(open.copy && open.page_alloc && open.hz && open.device_bandwidth);
        let given =
            format!("copy_bytes_s = 1e9\nhz = 1000\n{base}[device]\nbandwidth_bytes_s = 1e7\n");
        let open = from_toml("b.toml", &given).unwrap().open;
        assert!(!open.copy && open.page_alloc && !open.hz && !open.device_bandwidth);
    }

    use super::*;

    const GOOD: &str = r#"title = "mine"
rules = "linux-6"
dirtyable_bytes = 1073741824
duration_s = 5.0
cpus = 2
[device]
bandwidth_bytes_s = 10485760.0
[[writers]]
name = "w"
type = "periodic"
bytes = 524288
period_ms = 20.0
count = 100
class = { rt = { priority = 55 } }
[[writers]]
name = "bulk"
type = "bulk"
chunk = 524288
class = { normal = { nice = 0 } }
"#;

    fn refused(from: &str, to: &str) -> String {
        assert!(GOOD.contains(from), "{from}");
        from_toml("bad.toml", &GOOD.replacen(from, to, 1)).unwrap_err()
    }

    #[test]
    fn the_good_file_reads() {
        let s = from_toml("good.toml", GOOD).unwrap();
        assert_eq!(s.title, "mine");
        assert_eq!(s.config.writers.len(), 2);
    }

    #[test]
    fn a_value_of_the_wrong_kind_is_named_with_its_line() {
        assert_eq!(
            refused(
                "bandwidth_bytes_s = 10485760.0",
                "bandwidth_bytes_s = \"fast\""
            ),
            "bad.toml line 7, device.bandwidth_bytes_s: expected a number, got \"fast\""
        );
        assert_eq!(
            refused("cpus = 2", "cpus = -2"),
            "bad.toml line 5, cpus: expected a whole number of 0 or more, got -2"
        );
        assert_eq!(
            refused("rules = \"linux-6\"", "rules = \"linux-9\""),
            "bad.toml line 2, rules: expected one of linux-6, linux-2.6.26, got \"linux-9\""
        );
    }

    #[test]
    fn nan_is_not_a_number() {
        assert_eq!(
            refused("period_ms = 20.0", "period_ms = nan"),
            "bad.toml line 12, writers[0] (w).period_ms: expected a number, got nan"
        );
        assert!(refused("duration_s = 5.0", "duration_s = -inf").contains("got -inf"));
    }

    #[test]
    fn unknown_and_missing_keys_are_named() {
        assert_eq!(
            refused("cpus = 2\n", "cpus = 2\nfoo = 1\n"),
            format!(
                "bad.toml line 6, foo: unknown field (known here: {})",
                shape::FILE
                    .iter()
                    .map(|e| e.key)
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        );
        let e = refused("chunk = 524288\n", "");
        assert!(
            e.starts_with("bad.toml line 15, writers[1] (bulk): missing field chunk"),
            "{e}"
        );
        let e = refused("chunk = 524288\n", "chunk = 524288\nperiod_ms = 5.0\n");
        assert!(
            e.starts_with("bad.toml line 19, writers[1] (bulk).period_ms: unknown field"),
            "{e}"
        );
    }

    #[test]
    fn a_value_out_of_its_declared_range_is_named_with_its_line() {
        assert_eq!(
            refused("cpus = 2", "cpus = 2\nhz = 0"),
            "bad.toml line 6, hz: 0 is out of range: give 100 to 1000"
        );
        assert_eq!(
            refused("nice = 0", "nice = 100"),
            "bad.toml line 19, writers[1].class.normal.nice: 100 is out of range: give -20 to 19"
        );
    }

    /// Issue 27: each of these ran (exit 0) before; `hz = 0` quietly became one
    /// tick a second.
    #[test]
    fn the_values_a_file_slipped_past_the_ranges_are_refused() {
        for (add, field, why) in [
            ("hz = 0", "hz", "0 is out of range: give 100 to 1000"),
            (
                "folio_bytes = 0",
                "folio_bytes",
                "0 B is out of range: give 4 KiB to 2 MiB",
            ),
            ("cpus = 0", "cpus", "0 is out of range: give 1 to 4096"),
            (
                "[governor]\npass_ms = nan",
                "governor.pass_ms",
                "expected a number, got nan",
            ),
            (
                "[initial]\nwb_share = 5.0",
                "initial.wb_share",
                "5 is out of range: give 0 to 1",
            ),
            (
                "[sysctls]\ndirty_ratio = 101",
                "sysctls.dirty_ratio",
                "101 is out of range: give 0 to 100",
            ),
            ("foo = 1", "foo", "unknown field"),
        ] {
            // cpus = 0 in place of cpus = 2, anything else after it
            let text = GOOD.replacen("cpus = 2\n", &format!("cpus = 2\n{add}\n"), 1);
            let text = if field == "cpus" {
                text.replacen("cpus = 2\n", "", 1)
            } else {
                text
            };
            let e = from_toml("bad.toml", &text).unwrap_err();
            let line = text[..text.find(add.lines().last().unwrap()).unwrap()]
                .lines()
                .count()
                + 1;
            assert!(
                e.starts_with(&format!("bad.toml line {line}, {field}: {why}")),
                "{add}: {e}"
            );
        }
        assert_eq!(
            refused("bandwidth_bytes_s = 10485760.0", "max_request_bytes = 0"),
            "bad.toml line 7, device.max_request_bytes: 0 B is out of range: give 4 KiB to 64 TiB"
        );
    }

    #[test]
    fn a_syntax_error_has_its_line() {
        let e = from_toml("bad.toml", "rules = \"linux-6\"\ncpus = = 2\n").unwrap_err();
        assert!(e.starts_with("bad.toml line 2: "), "{e}");
    }
}

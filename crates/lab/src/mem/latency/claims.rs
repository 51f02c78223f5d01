//! The claim of a latency sweep: a step at each cache level, the small levels'
//! edges near their sysfs sizes.

use oslab_model::Claim;
use oslab_units::human_bytes;

use super::judging::{Judging, edge_words, shared_why};
use crate::mem::common::sweep::SysfsLevel;
use oslab_harness::check::{Check, Condition, Rule};

/// Levels up to this size are the small (private) ones the claim holds to sysfs.
pub const SMALL_LEVEL_MAX: u64 = 4 << 20;
/// The edge of a small level within this factor of its sysfs size.
pub const RATIO_LOW: f64 = 0.5;
pub const RATIO_HIGH: f64 = 2.0;
/// Plateaus needed: at least two caches and memory.
pub const MIN_PLATEAUS: f64 = 3.0;
pub const JUMPS: Check = Check {
    id: "latency-jumps-per-level",
    tolerates: &oslab_harness::interference::TIMES,
    text: "Access time jumps each time the working set outgrows a cache level",
    source: "S. Takeuchi, \"Linux no Shikumi\", ch. \"Memory hierarchy\" (the cache-size sweep)",
};

/// One condition of the claim and what to say when it fails.
struct Part {
    condition: Condition,
    failed: String,
}

fn parts(j: &Judging) -> Vec<Part> {
    let n = j.reading.plateaus.len();
    let mut v = vec![Part {
        condition: Condition::new(
            "plateaus found (caches and memory)",
            "",
            Rule::AtLeast(MIN_PLATEAUS),
            n as f64,
        ),
        failed: format!(
            "only {n} plateaus: a level rose gradually instead of in a step, or the sweep ended before memory"
        ),
    }];
    for (i, l) in j.sysfs.iter().enumerate() {
        if l.bytes <= SMALL_LEVEL_MAX {
            v.extend(level_parts(j, i, l));
        }
    }
    v
}

/// The conditions of one small level: its edge near its sysfs size.
fn level_parts(j: &Judging, i: usize, l: &SysfsLevel) -> Vec<Part> {
    let subject = format!("{} edge / sysfs size", l.name);
    let edge = j.reading.of_sysfs(i).and_then(|p| p.edge.as_ref());
    let range = Rule::Range(RATIO_LOW, RATIO_HIGH);
    if 2 * l.bytes > j.plan.max_size {
        return vec![Part {
            condition: Condition::missing(
                subject,
                "x",
                range,
                format!(
                    "the sweep ends at {}, before {} ({}) is outgrown twice over",
                    human_bytes(j.plan.max_size),
                    l.name,
                    human_bytes(l.bytes)
                ),
            ),
            failed: String::new(),
        }];
    }
    let Some(e) = edge else {
        return vec![Part {
            condition: Condition::new(
                format!("{} edges found near its sysfs size", l.name),
                "",
                Rule::AtLeast(1.0),
                0.0,
            ),
            failed: format!(
                "no edge near {}'s {}: it did not show as a step",
                l.name,
                human_bytes(l.bytes)
            ),
        }];
    };
    let (r, lo, hi) = e.ratio(l.bytes);
    let failed = format!(
        "{} ends {}, {} its sysfs {}",
        l.name,
        edge_words(e),
        if e.range {
            format!("{lo:.2}x to {hi:.2}x")
        } else {
            format!("{r:.2}x")
        },
        human_bytes(l.bytes)
    );
    if e.range {
        let sub = |end: &str| format!("{} edge range {end} / sysfs size", l.name);
        vec![
            Part {
                condition: Condition::new(sub("low"), "x", Rule::AtLeast(RATIO_LOW), lo),
                failed: failed.clone(),
            },
            Part {
                condition: Condition::new(sub("high"), "x", Rule::AtMost(RATIO_HIGH), hi),
                failed,
            },
        ]
    } else {
        vec![Part {
            condition: Condition::new(subject, "x", range, r),
            failed,
        }]
    }
}

pub(super) fn claim(j: &Judging) -> Claim {
    let parts = parts(j);
    let conditions: Vec<Condition> = parts.iter().map(|p| p.condition.clone()).collect();
    let plateaus = j
        .reading
        .plateaus
        .iter()
        .map(|p| match &p.edge {
            Some(e) => format!("{} {:.2} ns to {}", p.shown(), p.ns, edge_words(e)),
            None => format!("{} {:.1} ns", p.shown(), p.ns),
        })
        .collect::<Vec<_>>()
        .join(", ");
    let large: Vec<String> = j
        .sysfs
        .iter()
        .enumerate()
        .filter(|(_, l)| l.bytes > SMALL_LEVEL_MAX)
        .map(
            |(i, l)| match j.reading.of_sysfs(i).and_then(|p| p.edge.as_ref()) {
                Some(e) => format!(
                    "{} (shared, not held to sysfs) sysfs {}, edge {} ({:.2}x)",
                    l.name,
                    human_bytes(l.bytes),
                    edge_words(e),
                    e.ratio(l.bytes).0
                ),
                None => format!("{} sysfs {}, no edge matched", l.name, human_bytes(l.bytes)),
            },
        )
        .collect();
    let context = [plateaus]
        .into_iter()
        .chain(large)
        .collect::<Vec<_>>()
        .join("; ");
    JUMPS.judge(&conditions, &context, |o| {
        if o.holds() {
            let mut why =
                "each small level's plateau ends near its sysfs size, and the next one is slower"
                    .to_string();
            if let (Some(e), Some(last)) = (&j.reading.memory_entry, j.sysfs.last())
                && last.bytes > SMALL_LEVEL_MAX
                && e.bytes / (last.bytes as f64) < RATIO_LOW
            {
                why.push_str(&format!(
                    "; the caches end where the curve reaches memory, {}, {:.2}x of sysfs' {} {}: {}",
                    edge_words(e),
                    e.bytes / last.bytes as f64,
                    last.name,
                    human_bytes(last.bytes),
                    shared_why(j.hypervisor.as_deref())
                ));
            }
            why
        } else {
            let mut seen: Vec<&str> = Vec::new();
            for i in &o.failed {
                let f = parts[*i].failed.as_str();
                if !seen.contains(&f) {
                    seen.push(f);
                }
            }
            seen.join("; ")
        }
    })
}

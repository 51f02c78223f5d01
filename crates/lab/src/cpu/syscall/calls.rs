//! How many calls the probes made and how often the thread switched during them:
//! what the mode-switch claim and the findings count.

use super::Raw;

/// Counts of calls and switches the claims and findings use.
pub(super) struct Calls {
    pub(super) syscalls: u64,
    pub(super) all: u64,
    pub(super) switches_per_million: f64,
}

impl Calls {
    pub(super) fn of(raw: &Raw) -> Calls {
        let calls_of = |names: &[&str]| -> u64 {
            raw.probes
                .iter()
                .filter(|p| names.contains(&p.name.as_str()))
                .map(|p| p.batch * p.ns_per_call.len() as u64)
                .sum()
        };
        let all = calls_of(&["loop", "gettid", "getppid", "clock_gettime_vdso"]);
        Calls {
            syscalls: calls_of(&["gettid", "getppid"]),
            all,
            switches_per_million: raw.voluntary_switches as f64 * 1e6 / all.max(1) as f64,
        }
    }
}

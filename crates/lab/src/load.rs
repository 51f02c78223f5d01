//! Load and steal around a run, from /proc/loadavg and /proc/stat.

use oslab_model::LoadRecord;
use oslab_sys::fsread::Root;
use oslab_sys::parse::procstat::{CpuTimes, cpu_times};

/// Steal above this share of CPU time makes a run's figures suspect.
pub const STEAL_WARN: f64 = 0.05;

/// Starts at construction; [`LoadMonitor::finish`] gives the record.
pub struct LoadMonitor {
    root: Root,
    loadavg: [f64; 3],
    cpu: Option<CpuTimes>,
}

/// The three load averages from /proc/loadavg text.
pub fn parse_loadavg(text: &str) -> [f64; 3] {
    let mut it = text.split_whitespace().map(|x| x.parse().unwrap_or(0.0));
    [
        it.next().unwrap_or(0.0),
        it.next().unwrap_or(0.0),
        it.next().unwrap_or(0.0),
    ]
}

impl LoadMonitor {
    pub fn start(root: Root) -> LoadMonitor {
        LoadMonitor {
            loadavg: parse_loadavg(&root.read("/proc/loadavg").unwrap_or_default()),
            cpu: root.read("/proc/stat").ok().and_then(|s| cpu_times(&s)),
            root,
        }
    }

    /// The record from start to now. `own_cpus` is how many CPUs the measurement
    /// itself kept busy, so that only the rest counts as other load.
    pub fn finish(&self, cpus: usize, own_cpus: f64) -> LoadRecord {
        let after = parse_loadavg(&self.root.read("/proc/loadavg").unwrap_or_default());
        let now = self
            .root
            .read("/proc/stat")
            .ok()
            .and_then(|s| cpu_times(&s));
        let delta = match (&self.cpu, &now) {
            (Some(a), Some(b)) => b.since(a),
            _ => CpuTimes::default(),
        };
        let busy = delta.busy_fraction();
        let steal = delta.steal_fraction();
        let other = (busy - own_cpus / cpus.max(1) as f64).max(0.0);
        let mut warn = Vec::new();
        if steal > STEAL_WARN {
            warn.push(format!(
                "the hypervisor stole {:.1} % of CPU time during the run",
                steal * 100.0
            ));
        }
        if other > 0.25 {
            warn.push(format!(
                "other work kept about {:.0} % of the CPUs busy",
                other * 100.0
            ));
        }
        LoadRecord {
            loadavg_before: self.loadavg,
            loadavg_after: after,
            cpu_busy_fraction: busy,
            steal_fraction: steal,
            warning: (!warn.is_empty()).then(|| warn.join("; ")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loadavg_fields() {
        assert_eq!(
            parse_loadavg("0.52 0.58 0.59 2/389 12345\n"),
            [0.52, 0.58, 0.59]
        );
        assert_eq!(parse_loadavg(""), [0.0, 0.0, 0.0]);
    }
}

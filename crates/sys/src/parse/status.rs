//! `/proc/PID/status` and `/proc/PID/task/TID/status` fields oslab needs.

/// Voluntary and involuntary context switches of a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CtxSwitches {
    pub voluntary: u64,
    pub involuntary: u64,
}

impl CtxSwitches {
    pub fn since(self, earlier: CtxSwitches) -> CtxSwitches {
        CtxSwitches {
            voluntary: self.voluntary.saturating_sub(earlier.voluntary),
            involuntary: self.involuntary.saturating_sub(earlier.involuntary),
        }
    }

    pub fn total(self) -> u64 {
        self.voluntary + self.involuntary
    }
}

/// The switch counters from a status file's text; `None` if either is missing.
pub fn ctx_switches(status: &str) -> Option<CtxSwitches> {
    let field = |name: &str| -> Option<u64> {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|rest| rest.trim_start_matches(':').trim().parse().ok())
    };
    Some(CtxSwitches {
        voluntary: field("voluntary_ctxt_switches")?,
        involuntary: field("nonvoluntary_ctxt_switches")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_switch_counters() {
        let s = "Name:\toslab\nThreads:\t1\nvoluntary_ctxt_switches:\t12\nnonvoluntary_ctxt_switches:\t3\n";
        assert_eq!(
            ctx_switches(s),
            Some(CtxSwitches {
                voluntary: 12,
                involuntary: 3
            })
        );
        assert_eq!(ctx_switches("Name:\tx\n"), None);
    }
}

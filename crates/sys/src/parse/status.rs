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

    /// Both counters together (saturating on corrupt counters).
    pub fn total(self) -> u64 {
        self.voluntary.saturating_add(self.involuntary)
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

/// Property tests: any text gives the counters or nothing, never a panic; the
/// kernel's lines read back exactly. A fuzz-like run with many cases
/// (PROPTEST_CASES wins over the default here; failures are printed, not saved to
/// proptest-regressions/):
/// `PROPTEST_CASES=100000 cargo test -p oslab-sys --lib -- parse::status::props`
#[cfg(test)]
mod props {
    use super::*;
    use crate::testing::proptest_config as config;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(config(512))]

        #[test]
        fn any_text_never_panics(text in "(?s).{0,160}") {
            if let Some(c) = ctx_switches(&text) {
                let _ = (c.total(), c.since(CtxSwitches::default()));
            }
        }

        #[test]
        fn the_kernels_lines_read_back(
            v in any::<u64>(),
            n in any::<u64>(),
            junk in proptest::collection::vec("[A-Za-z_]{1,12}:\t[ -~]{0,20}", 0..6),
            earlier in any::<(u64, u64)>(),
        ) {
            let mut lines = junk.clone();
            lines.insert(lines.len() / 2, format!("voluntary_ctxt_switches:\t{v}"));
            lines.push(format!("nonvoluntary_ctxt_switches:\t{n}"));
            let text = lines.join("\n") + "\n";
            let c = ctx_switches(&text);
            prop_assert_eq!(c, Some(CtxSwitches { voluntary: v, involuntary: n }), "{}", text);
            let c = c.unwrap();
            let e = CtxSwitches { voluntary: earlier.0, involuntary: earlier.1 };
            let _ = (c.total(), c.since(e).total());
        }
    }

    /// Regression: counters near u64::MAX made `total()` overflow.
    #[test]
    fn a_total_of_huge_counters_saturates() {
        let c = CtxSwitches {
            voluntary: u64::MAX,
            involuntary: 1,
        };
        assert_eq!(c.total(), u64::MAX);
    }
}

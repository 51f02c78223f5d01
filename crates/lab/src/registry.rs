//! Every experiment by id: the one file above both the experiments and the
//! harness, so the harness never depends on an experiment.

use oslab_harness::AnyExperiment;

/// The catalogue of experiments, in the order `oslab list` shows them.
pub struct Registry {
    experiments: Vec<Box<dyn AnyExperiment>>,
}

/// An id that names no experiment, with the closest known id if one is close.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownId {
    pub id: String,
    pub suggestion: Option<String>,
}

impl std::fmt::Display for UnknownId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "unknown experiment '{}'", self.id)?;
        if let Some(s) = &self.suggestion {
            write!(f, "; did you mean '{s}'?")?;
        }
        write!(f, " ('oslab list' shows every experiment)")
    }
}

impl Default for Registry {
    fn default() -> Self {
        Registry {
            experiments: vec![
                Box::new(crate::cpu::syscall::Syscall),
                Box::new(crate::cpu::ctxsw::Ctxsw),
                Box::new(crate::cpu::ctxsw_ws::CtxswWs),
                Box::new(crate::mem::latency::MemLatency),
                Box::new(crate::mem::bandwidth::MemBandwidth),
                Box::new(crate::mem::tlb::MemTlb),
                Box::new(crate::mem::locality::MemLocality),
                Box::new(crate::sched::scaling::SchedScaling { multiload: true }),
                Box::new(crate::sched::slices::SchedSlices),
                Box::new(crate::sched::nice::SchedNice),
                Box::new(crate::sched::scaling::SchedScaling { multiload: false }),
                Box::new(crate::sched::smt::SchedSmt),
                Box::new(crate::io::read::IoRead),
                Box::new(crate::io::write::IoWrite),
                Box::new(crate::wb::background::Background),
                Box::new(crate::wb::periodic::Periodic),
                Box::new(crate::wb::cases::Cases),
                Box::new(crate::wb::throttle::Throttle),
                Box::new(crate::wb::wcall::WbWcall),
                Box::new(crate::wb::wcall_overhead::WcallOverhead),
                Box::new(crate::wb::database::Database),
                Box::new(crate::sim::validate::SimValidate),
                Box::new(crate::null::Null),
            ],
        }
    }
}

/// sim.sawtooth over the real experiments it simulates (run by `oslab sim
/// validate`, not listed): wired here, where every family is known.
pub const SIM_SAWTOOTH: crate::sim::sawtooth::SimSawtooth = crate::sim::sawtooth::SimSawtooth::over(
    &crate::wb::background::Background,
    &crate::wb::periodic::Periodic,
);

impl Registry {
    pub fn all(&self) -> impl Iterator<Item = &dyn AnyExperiment> {
        self.experiments.iter().map(|b| b.as_ref())
    }

    pub fn get(&self, id: &str) -> Option<&dyn AnyExperiment> {
        self.all().find(|e| e.meta().id == id)
    }

    /// Resolves command-line ids: `all` is every non-internal experiment, a family
    /// prefix such as `cpu` selects its members; duplicates are dropped.
    pub fn resolve(&self, ids: &[String]) -> Result<Vec<&dyn AnyExperiment>, UnknownId> {
        self.resolve_for(ids, false)
    }

    /// [`Registry::resolve`] for a run: a quick run of `all` or of a family leaves
    /// out the experiments that run only in the full lab (named, they run).
    pub fn resolve_for(
        &self,
        ids: &[String],
        quick: bool,
    ) -> Result<Vec<&dyn AnyExperiment>, UnknownId> {
        let in_group = |e: &&dyn AnyExperiment| !(quick && e.meta().full_lab_only);
        let mut out: Vec<&dyn AnyExperiment> = Vec::new();
        fn push<'a>(e: &'a dyn AnyExperiment, out: &mut Vec<&'a dyn AnyExperiment>) {
            if !out.iter().any(|o| o.meta().id == e.meta().id) {
                out.push(e);
            }
        }
        for id in ids {
            if id == "all" {
                self.all()
                    .filter(|e| !e.meta().internal)
                    .filter(in_group)
                    .for_each(|e| push(e, &mut out));
            } else if let Some(e) = self.get(id) {
                push(e, &mut out);
            } else {
                let family: Vec<_> = self
                    .all()
                    .filter(|e| e.meta().id.split('.').next() == Some(id.as_str()))
                    .collect();
                let family: Vec<_> = if family.iter().any(in_group) {
                    family.into_iter().filter(in_group).collect()
                } else {
                    family
                };
                if family.is_empty() {
                    return Err(UnknownId {
                        id: id.clone(),
                        suggestion: self.suggest(id),
                    });
                }
                family.into_iter().for_each(|e| push(e, &mut out));
            }
        }
        Ok(out)
    }

    fn suggest(&self, id: &str) -> Option<String> {
        self.all()
            .map(|e| e.meta().id)
            .chain(["all"])
            .map(|known| (levenshtein(id, known), known))
            .filter(|(d, known)| *d <= 3.max(known.len() / 3))
            .min()
            .map(|(_, k)| k.to_string())
    }
}

/// Edit distance between two strings (insertions, deletions, substitutions).
pub fn levenshtein(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != *cb))
                .min(prev[j + 1] + 1)
                .min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edit_distance() {
        assert_eq!(levenshtein("cpu.sycall", "cpu.syscall"), 1);
        assert_eq!(levenshtein("", "abc"), 3);
        assert_eq!(levenshtein("same", "same"), 0);
    }

    #[test]
    fn resolves_ids_families_and_all() {
        let r = Registry::default();
        let ids = |v: &[&str]| -> Vec<&str> {
            r.resolve(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>())
                .unwrap()
                .iter()
                .map(|e| e.meta().id)
                .collect()
        };
        assert_eq!(ids(&["cpu.syscall"]), vec!["cpu.syscall"]);
        assert_eq!(
            ids(&["cpu"]),
            vec!["cpu.syscall", "cpu.ctxsw", "cpu.ctxsw-ws"]
        );
        assert!(!ids(&["all"]).contains(&"null"));
        assert_eq!(ids(&["null", "null"]), vec!["null"]);
    }

    #[test]
    fn unknown_ids_get_a_suggestion() {
        let r = Registry::default();
        let e = r.resolve(&["cpu.sycall".into()]).err().unwrap();
        assert_eq!(e.suggestion.as_deref(), Some("cpu.syscall"));
        assert!(e.to_string().contains("did you mean 'cpu.syscall'"));
        let e = r.resolve(&["zzzzzzzzzzzz".into()]).err().unwrap();
        assert_eq!(e.suggestion, None);
    }
}

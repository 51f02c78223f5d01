//! Every cell simulated from the state it began in and blind, and grouped by
//! workload and policy on one setting: what the claims, findings, plots and
//! notes compare.

use oslab_wbsim::config::Kernel;
use oslab_wbsim::policy::Policy;
use oslab_wbsim::{Outcome, simulate};

use super::configs::config_for;
use super::figures::{self, Compared, Fig, Figures};
use super::{Raw, SettingRaw};
use oslab_services::cells::record::Scenario;
use oslab_services::cells::sim_config::{Seed, simulate_blind};
use oslab_services::cells::traced::{Traced, traced};

/// One cell simulated from the state the kernel carried into it, blind (from a
/// description of the workload alone), and from the live state read before it
/// where one was.
pub struct Simulated {
    pub real: Figures,
    pub predicted: Figures,
    pub blind: Figures,
    pub live: Option<Figures>,
    pub outcome: Outcome,
    pub traced: Option<Traced>,
}

/// Simulates cell `i` of setting `s`.
pub fn simulate_cell(s: &SettingRaw, i: usize, hz: u64, kernel: Kernel) -> Simulated {
    let c = &s.cells[i];
    let t = traced(&c.cell, &s.testbed_dev, s.dirty_bytes / 4096, kernel);
    let cfg = config_for(s, c, s.spec.writes, hz, kernel, Seed::Carried(t.as_ref()));
    let outcome = simulate(&cfg);
    let blind = simulate_blind(config_for(s, c, s.spec.writes, hz, kernel, Seed::Blind));
    let live = c.live.as_ref().map(|l| {
        let seed = Seed::Live(l.initial());
        let cfg = config_for(s, c, s.spec.writes, hz, kernel, seed);
        // the run `simulate` makes of a live start, without its settle search
        figures::simulated(&simulate(&oslab_wbsim::engine::given_from_live(&cfg)))
    });
    Simulated {
        real: figures::real(&c.cell, t.as_ref()),
        predicted: figures::simulated(&outcome),
        blind: figures::simulated(&blind),
        live,
        outcome,
        traced: t,
    }
}

/// A workload under a policy on one setting, over its runs.
pub struct Group<'a> {
    pub setting: &'a SettingRaw,
    pub scenario: Scenario,
    pub policy: Policy,
    pub cells: Vec<(usize, Simulated)>,
}

impl Group<'_> {
    /// The real runs against the simulations from the state each began in.
    pub fn compared(&self, fig: Fig) -> Compared {
        self.against(fig, |c| &c.predicted)
    }

    /// The real runs against the blind simulations.
    pub fn compared_blind(&self, fig: Fig) -> Compared {
        self.against(fig, |c| &c.blind)
    }

    /// The real runs against the simulations from the live state read before
    /// each (the runs that have one).
    pub fn compared_live(&self, fig: Fig) -> Compared {
        let real = self
            .cells
            .iter()
            .filter(|(_, c)| c.live.is_some())
            .filter_map(|(_, c)| c.real.get(fig))
            .collect();
        let predicted = self
            .cells
            .iter()
            .filter_map(|(_, c)| c.live.as_ref()?.get(fig))
            .collect();
        Compared {
            fig,
            real,
            predicted,
        }
    }

    fn against(&self, fig: Fig, side: impl Fn(&Simulated) -> &Figures) -> Compared {
        Compared {
            fig,
            real: self
                .cells
                .iter()
                .filter_map(|(_, c)| c.real.get(fig))
                .collect(),
            predicted: self
                .cells
                .iter()
                .filter_map(|(_, c)| side(c).get(fig))
                .collect(),
        }
    }

    /// The finding name's prefix: scenario.policy, after the sweep point if any.
    pub fn key(&self) -> String {
        let base = format!("{}.{}", self.scenario.name(), self.policy.name());
        if self.setting.spec.name == "main" {
            base
        } else {
            let slug: String = self
                .setting
                .spec
                .name
                .chars()
                .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
                .collect();
            format!("{slug}.{base}")
        }
    }
}

/// Every cell of every setting simulated, grouped by workload and policy.
pub fn groups(raw: &Raw, hz: u64, kernel: Kernel) -> Vec<Group<'_>> {
    let mut out: Vec<Group> = Vec::new();
    for s in &raw.settings {
        for (i, c) in s.cells.iter().enumerate() {
            let sim = simulate_cell(s, i, hz, kernel);
            let at = out.iter().position(|g| {
                std::ptr::eq(g.setting, s)
                    && g.scenario == c.cell.scenario
                    && g.policy == c.cell.policy
            });
            match at {
                Some(k) => out[k].cells.push((i, sim)),
                None => out.push(Group {
                    setting: s,
                    scenario: c.cell.scenario,
                    policy: c.cell.policy,
                    cells: vec![(i, sim)],
                }),
            }
        }
    }
    out
}

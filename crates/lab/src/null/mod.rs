//! The null experiment: known samples through the whole pipeline.
//!
//! Like fio's null engine, it measures nothing. It returns fixed samples (one of them
//! an outlier), a finding, one claim of each verdict and a plot with markers, so the
//! statistics, claims and every output format can be tested exactly.

mod claims;
mod judge;
mod measure;

use oslab_model::Environment;
use serde::{Deserialize, Serialize};

use oslab_harness::{Context, Experiment, LabError, Measured, Meta, Needs, Output, Planner};

pub struct Null;

/// The samples every null run returns, in ns.
pub const SAMPLES: [f64; 10] = [
    100.0, 102.0, 98.0, 101.0, 99.0, 100.0, 103.0, 97.0, 150.0, 100.0,
];

static META: Meta = Meta {
    id: "null",
    title: "Null experiment (pipeline self-test)",
    section: "-",
    summary: "returns known samples so statistics and outputs can be checked",
    needs: Needs {
        root: false,
        min_cpus: 1,
        free_disk_bytes: 0,
    },
    quick_s: 0.0,
    full_s: 0.0,
    internal: true,
    full_lab_only: false,
};

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Plan {
    pub samples: usize,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Raw {
    pub latency_ns: Vec<f64>,
}

impl Experiment for Null {
    type Plan = Plan;
    type Raw = Raw;

    fn meta(&self) -> &Meta {
        &META
    }

    fn plan(&self, _: &mut Planner) -> Plan {
        Plan {
            samples: SAMPLES.len(),
        }
    }

    fn measure(&self, _: &Plan, _: &mut Context) -> Result<Measured<Raw>, LabError> {
        Ok(Measured::Raw(measure::measure()))
    }

    fn judge(&self, _: &Plan, raw: &Raw, env: &Environment) -> Output {
        judge::judge(raw, env.seed)
    }
}

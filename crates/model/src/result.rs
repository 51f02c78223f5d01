use std::collections::BTreeMap;

use oslab_stats::Summary;
use serde::{Deserialize, Serialize};

use crate::claim::Claim;
use crate::machine::MachineInfo;
use crate::plot::Plot;
use crate::system::SarRecord;

/// Version of the JSON layout; bumped on any incompatible change.
pub const SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    Quick,
    Full,
}

/// Parameter values as run (after --quick and command-line overrides).
pub type Params = BTreeMap<String, serde_json::Value>;

/// System load around a measurement, and what else the machine did during it: a
/// busy or stolen CPU makes figures suspect.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct LoadRecord {
    pub loadavg_before: [f64; 3],
    pub loadavg_after: [f64; 3],
    /// Share of all CPUs' time that was busy during the run (ours included).
    pub cpu_busy_fraction: f64,
    /// Share of CPU time the hypervisor gave to other guests (/proc/stat steal).
    pub steal_fraction: f64,
    /// Set when load or steal was high enough to distrust the figures.
    pub warning: Option<String>,
    /// Share of all CPUs' time other programs took: busy time less oslab's own
    /// threads and children and the kernel's threads. Absent for a window too
    /// short to tell (under 0.2 s) and in records from before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub others_cpu_fraction: Option<f64>,
    /// Bytes the disks moved during the run beyond what oslab's own processes
    /// read and wrote (/proc/diskstats less /proc/PID/io; loop and RAM disks left
    /// out, their I/O lands on a disk). Absent where it could not be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub others_io_bytes: Option<u64>,
    /// How many times the experiment was measured: more than once when other
    /// programs' work disturbed a claim's figures and it was measured again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempts: Option<u32>,
}

/// Where and how a result was measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Environment {
    pub oslab_version: String,
    pub machine: MachineInfo,
    /// The clock used for timings.
    pub timer: String,
    pub load: LoadRecord,
    pub seed: u64,
}

/// One measured quantity: every raw sample plus its summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Measurement {
    /// Stable name within the experiment, e.g. `gettid`.
    pub name: String,
    pub description: String,
    /// Unit of every sample and of the summary figures, e.g. `ns/call`.
    pub unit: String,
    /// Every repetition, in order, never pre-averaged.
    #[serde(deserialize_with = "nulls_as_nan")]
    pub samples: Vec<f64>,
    pub summary: Option<Summary>,
    /// What was subtracted from each raw sample, if anything ("loop overhead 0.31 ns").
    pub correction: Option<String>,
}

/// JSON has no NaN: serde_json writes it as null. Reads null back as NaN, so a
/// result with an undetermined figure can be read again.
fn null_as_nan<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Option::<f64>::deserialize(d).map(|v| v.unwrap_or(f64::NAN))
}

fn nulls_as_nan<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<f64>, D::Error> {
    Vec::<Option<f64>>::deserialize(d)
        .map(|v| v.into_iter().map(|x| x.unwrap_or(f64::NAN)).collect())
}

/// A derived number (a detected cache size, a ratio, ...).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    pub name: String,
    /// NaN (null in JSON) when the experiment could not determine it; `detail` says why.
    #[serde(deserialize_with = "null_as_nan")]
    pub value: f64,
    pub unit: String,
    pub detail: String,
    /// Where the experiment knows the value only to within an interval (a cache
    /// edge lies between two sampled sizes): its low and high end. `compare`
    /// calls two runs alike when their intervals overlap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub range: Option<[f64; 2]>,
}

impl Finding {
    /// The finding with the interval its value is known to lie in.
    pub fn within(mut self, low: f64, high: f64) -> Finding {
        self.range = (low.is_finite() && high.is_finite() && low <= high).then_some([low, high]);
        self
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "state")]
pub enum Status {
    Completed,
    Skipped { reason: String },
    Failed { error: String },
}

/// Everything one experiment run produced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExperimentResult {
    pub schema_version: u32,
    pub experiment: String,
    pub title: String,
    /// The material section it reproduces, e.g. "5".
    pub section: String,
    pub mode: Mode,
    /// RFC 3339 UTC.
    pub started_at: String,
    pub duration_s: f64,
    pub params: Params,
    pub environment: Environment,
    pub status: Status,
    pub measurements: Vec<Measurement>,
    pub findings: Vec<Finding>,
    pub claims: Vec<crate::claim::Claim>,
    pub plots: Vec<Plot>,
    /// Method notes and caveats a reader should see.
    pub notes: Vec<String>,
    /// System statistics sampled during the run (sar fields), for I/O experiments.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub system: Vec<SarRecord>,
    /// A simulation's result: the machine description it ran on (a profile or
    /// the scenario's own). Its figures are the model's, deterministic: the
    /// host's load and the noise of its samples say nothing about them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub simulated: Option<String>,
}

impl ExperimentResult {
    pub fn measurement(&self, name: &str) -> Option<&Measurement> {
        self.measurements.iter().find(|m| m.name == name)
    }

    pub fn finding(&self, name: &str) -> Option<&Finding> {
        self.findings.iter().find(|f| f.name == name)
    }

    pub fn claim(&self, id: &str) -> Option<&Claim> {
        self.claims.iter().find(|c| c.id == id)
    }
}

/// What `--json` writes: every result of one invocation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResultSet {
    pub schema_version: u32,
    pub oslab_version: String,
    pub command: String,
    pub results: Vec<ExperimentResult>,
}

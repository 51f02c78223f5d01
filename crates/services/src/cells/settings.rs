//! The settings the writer cells' experiments share (wb.wcall and sim.validate):
//! the testbed's cap, the first writer's writes, the repetitions and the
//! policies.

use oslab_settings::{Choices, Count, Rate, Setting};

use super::record::POLICY_NAMES;

pub static BANDWIDTH: Setting<Rate> = crate::testbed::bandwidth_setting(40 << 20, 40 << 20);
pub static WRITES: Setting<Count> = Setting {
    name: "writes",
    help: "writes of the RT-55 writer per cell",
    quick: 150,
    full: 700,
    bounds: Some((20, 10_000)),
    names: &[],
};
pub static RUNS: Setting<Count> = Setting {
    name: "runs",
    help: "repetitions of the whole matrix",
    quick: 1,
    full: 3,
    bounds: Some((1, 10)),
    names: &[],
};
pub static POLICY_CHOICE: Setting<Choices> = Setting {
    name: "policies",
    help: "which policies to run",
    quick: Vec::new(),
    full: Vec::new(),
    bounds: None,
    names: POLICY_NAMES,
};

//! The simulator's configuration for one real cell of sim.validate: its writers
//! as they were started, on the setting's testbed, with the copy and page
//! allocation costs measured before the cells.

use oslab_wbsim::config::Kernel;
use oslab_wbsim::{Config, Kind, WriterCfg};

use super::workload::{WriterArgs, writers_for};
use super::{CellRaw, SettingRaw};
use oslab_services::cells::record::{CHUNK, PERIOD_MS};
use oslab_services::cells::sim_config::{Seed, TestbedSpec, class_of};
use oslab_services::page_costs::costs;

fn writer_cfg(w: &WriterArgs) -> WriterCfg {
    let class = class_of(w.fifo.map_or(0, |p| p.max(1) as u32), w.nice.unwrap_or(0));
    let (kind, stop_ms) = match w.count {
        Some(count) => (
            Kind::Periodic {
                bytes: CHUNK,
                period_ms: PERIOD_MS,
                count,
            },
            None,
        ),
        None => (Kind::Bulk { chunk: CHUNK }, Some(w.duration_s * 1e3)),
    };
    WriterCfg {
        name: w.name.clone(),
        kind,
        class,
        group: None,
        fsync_every: None,
        start_ms: 0.0,
        stop_ms,
    }
}

/// The testbed of setting `s` of a validation run, at `hz`.
pub fn testbed_of(s: &SettingRaw, hz: u64) -> TestbedSpec {
    let (copy_bytes_s, alloc_ns) = costs(&s.costs);
    TestbedSpec {
        dirty_bytes: s.dirty_bytes,
        dirty_background_bytes: s.dirty_background_bytes,
        cap_bytes_s: s.bandwidth as f64,
        measured_bytes_s: s.testbed_measured_bytes_s,
        copy_bytes_s,
        alloc_ns,
        hz,
    }
}

/// The simulator's configuration for `cell` of setting `s`, with `hz` ticks per
/// second and `kernel`'s rules, starting from `seed`.
pub fn config_for(
    s: &SettingRaw,
    c: &CellRaw,
    writes: u64,
    hz: u64,
    kernel: Kernel,
    seed: Seed,
) -> Config {
    let cell = &c.cell;
    let writers = writers_for(cell.scenario, writes)
        .iter()
        .map(writer_cfg)
        .collect();
    let mut cfg = testbed_of(s, hz).config(
        cell.policy,
        writers,
        cell.last_write_end_s() + 1.0,
        seed,
        c.io.others_bytes_s(),
    );
    cfg.kernel = kernel;
    cfg
}

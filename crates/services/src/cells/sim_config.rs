//! The simulator's configuration for a cell of writers on the testbed: the
//! testbed (blk-throttle at its cap, its dirty limits), the writers, the governor
//! as the cells run it, and what the machine was like when the cell began (the
//! kernel's estimates for the device, the other devices' write back), or only
//! what a user could describe beforehand.

use oslab_wbsim::config::{GovernorCfg, Initial, MIB, Start};
use oslab_wbsim::policy::Policy;
use oslab_wbsim::{Class, Config, DeviceCfg, DeviceKind, RuleSet, Sysctls, WriterCfg};

use super::traced::Traced;

/// The governor's pass interval in wb.wcall's cells, ms.
pub const PASS_MS: f64 = 10.0;

/// A writer's scheduling class: SCHED_FIFO `fifo` (0: not real-time) or `nice`.
pub fn class_of(fifo: u32, nice: i32) -> Class {
    match fifo {
        0 => Class::Normal { nice },
        p => Class::Rt { priority: p },
    }
}

/// The simulator's copy rate where none was measured, bytes per second.
pub const DEFAULT_COPY_BYTES_S: f64 = 2.0e9;

/// Where a simulation of a real cell starts from.
#[derive(Debug, Clone, Copy)]
pub enum Seed<'a> {
    /// The state the cell began in: the kernel's estimates as traced (where they
    /// were) and the other devices' write back over the cell.
    Carried(Option<&'a Traced>),
    /// Only what a user could describe beforehand (the writers, the device and
    /// its measured bandwidth, the limits, the machine's page costs) and no other
    /// disk's write back; [`simulate_blind`] starts from their steady state.
    Blind,
    /// What a user's `oslab sim run --live` starts from: the kernel's estimates
    /// read from the machine just before the cell (None: not shown, the steady
    /// state's), no other disk's write back, a clean cache.
    Live(Initial),
}

/// The kernel's estimates as the simulator starts from them.
pub fn initial(t: &Traced) -> Initial {
    Initial {
        write_bw_bytes_s: t.write_bw,
        avg_write_bw_bytes_s: t.avg_write_bw,
        dirty_ratelimit_bytes_s: t.dirty_ratelimit,
        dirty_limit_bytes: t.dirty_limit,
        wb_share: t.wb_share,
    }
}

/// The blind simulation: the writers of `cfg` (built with [`Seed::Blind`]) from
/// the steady state they reach on a device that has only had its bandwidth
/// probed (wbsim's steady-state start).
pub fn simulate_blind(mut cfg: Config) -> oslab_wbsim::Outcome {
    cfg.start = Start::Steady;
    oslab_wbsim::simulate(&cfg)
}

/// The testbed a cell ran on and what a write cost on the machine.
#[derive(Debug, Clone)]
pub struct TestbedSpec {
    pub dirty_bytes: u64,
    pub dirty_background_bytes: u64,
    /// The throttle's cap and what the testbed measured after it was built, bytes
    /// per second.
    pub cap_bytes_s: f64,
    pub measured_bytes_s: f64,
    /// The copy rate, bytes per second, and what each new page cost beyond it, ns.
    pub copy_bytes_s: f64,
    pub alloc_ns: Vec<f64>,
    /// The kernel's ticks per second.
    pub hz: u64,
}

impl TestbedSpec {
    /// A testbed of a run that did not probe the page costs: the simulator's
    /// default copy rate, no allocation cost. `limits` are dirty_bytes and
    /// dirty_background_bytes, `cap` and `measured` bytes per second.
    pub fn without_page_costs(limits: (u64, u64), cap: u64, measured: f64, hz: u64) -> Self {
        TestbedSpec {
            dirty_bytes: limits.0,
            dirty_background_bytes: limits.1,
            cap_bytes_s: cap as f64,
            measured_bytes_s: measured,
            copy_bytes_s: DEFAULT_COPY_BYTES_S,
            alloc_ns: Vec::new(),
            hz,
        }
    }

    /// The other devices' write back (bytes per second) and the kernel's
    /// estimates a simulation starts from; `io_others` is the write back the
    /// machine's counters saw over the cell, if they were read.
    pub fn starting_state(&self, seed: Seed, io_others: Option<f64>) -> (f64, Initial) {
        match seed {
            Seed::Carried(traced) => (
                io_others
                    .or_else(|| traced.and_then(|t| t.others_bytes_s))
                    .unwrap_or(0.0),
                traced.map_or(Initial::default(), initial),
            ),
            Seed::Blind => (
                0.0,
                Initial {
                    write_bw_bytes_s: Some(self.measured_bytes_s),
                    avg_write_bw_bytes_s: Some(self.measured_bytes_s),
                    ..Initial::default()
                },
            ),
            Seed::Live(initial) => (0.0, initial),
        }
    }

    /// The simulator's configuration of `writers` under `policy` on this testbed
    /// for `duration_s`, starting from `seed`.
    pub fn config(
        &self,
        policy: Policy,
        writers: Vec<WriterCfg>,
        duration_s: f64,
        seed: Seed,
        io_others: Option<f64>,
    ) -> Config {
        let (others, initial) = self.starting_state(seed, io_others);
        let start = match seed {
            Seed::Carried(_) => Start::Given,
            Seed::Blind => Start::Steady,
            Seed::Live(_) => Start::Live,
        };
        Config {
            sysctls: Sysctls {
                dirty_bytes: self.dirty_bytes,
                dirty_background_bytes: self.dirty_background_bytes,
                dirty_ratio: 0,
                dirty_background_ratio: 0,
                ..Sysctls::default()
            },
            device: DeviceCfg {
                kind: DeviceKind::Throttled,
                bandwidth_bytes_s: self.cap_bytes_s,
                request_latency_ns: 0,
                max_request_bytes: oslab_wbsim::config::TESTBED_REQUEST_BYTES,
                queue_bytes: 1 << 40,
            },
            copy_bytes_s: self.copy_bytes_s,
            page_alloc_ns: self.alloc_ns.clone(),
            policy,
            wcall_block_ms: oslab_wcall::coordinator::WCALL_BLOCK_NS as f64 / 1e6,
            hz: self.hz,
            folio_bytes: 2 * MIB,
            other_writeback_bytes_s: others,
            start,
            initial,
            governor: GovernorCfg {
                pass_ms: PASS_MS,
                active_ms: oslab_wcall::coordinator::ACTIVE_NS as f64 / 1e6,
            },
            ..Config::new(RuleSet::Linux6, 64 << 30, writers, duration_s, 2)
        }
    }
}

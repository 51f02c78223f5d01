//! What the commands call, and what experiments of several families share.
//! Services build on the harness and know no experiment: a command that needs
//! only a service does not pull the experiments in.
//!
//! - `testbed`: the slow device (a throttled loop device), for `oslab testbed`,
//!   `oslab dirty advise` and the write-back experiments;
//! - `cells`: a cell of writers on the testbed (wb.wcall and sim.validate): its
//!   record, the kernel's account of it and the simulator's configuration for it;
//! - `timed_writer`: a writer that times its writes and the 10 Hz poller beside it
//!   (`oslab wcall writer` and the write-back experiments);
//! - `daemon`: a governor daemon for a cell (wb.wcall, wb.database);
//! - `knobs`: sysctls set for the length of a run, through the journal;
//! - `write_latency`: the latency figures of one writer;
//! - `dirty_rules`: the kernel's write-back rules as predictions of Dirty (the
//!   write-back experiments and `oslab dirty advise`);
//! - `dirty_advice`, `dirty_explain`: `oslab dirty advise|explain`;
//! - `sim_advice`, `sim_sweep`: `oslab sim advise|sweep`;
//! - `sawtooth`: the Dirty sawtooth of one steady writer, measured and judged
//!   (wb.background, wb.periodic, wb.cases, sim.sawtooth, sim.validate);
//! - `disk_probe`: timing one operation with what the thread used and what the
//!   device did meanwhile (the I/O experiments and the write-back ones).
#![forbid(unsafe_code)]

pub mod cells;
pub mod daemon;
pub mod dirty_advice;
pub mod dirty_explain;
pub mod dirty_rules;
pub mod disk_probe;
pub mod knobs;
pub mod machine_profile;
pub mod page_costs;
pub mod sawtooth;
pub mod sim_advice;
pub mod sim_sweep;
pub mod testbed;
pub mod timed_writer;
pub mod write_latency;

//! The write-back simulator (crates/wbsim) as experiments: a scenario under
//! several policies (`sim.SCENARIO`, `oslab sim run`), and the simulator against
//! the real kernel (`sim.validate`, writers on the testbed; `sim.sawtooth`, one
//! steady writer's Dirty sawtooth).

pub mod live;
pub mod sawtooth;
pub mod scenario;
pub mod validate;

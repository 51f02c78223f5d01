//! Dirty pages and write back on the real kernel (material section 4).

pub mod advise;
pub mod background;
pub mod cases;
pub mod explain;
pub mod knobs;
pub mod periodic;
pub mod sawexp;
pub mod stall_causes;
pub mod testbed;
pub mod throttle;
pub mod trace;
pub mod wcall;
pub mod wcall_overhead;

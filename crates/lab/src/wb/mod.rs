//! Dirty pages and write back on the real kernel (material section 4).

pub mod background;
pub mod explain;
pub mod periodic;
pub mod sawexp;
pub mod knobs;
pub mod trace;
pub mod testbed;

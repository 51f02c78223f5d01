//! Dirty pages and write back on the real kernel (material section 4).

pub mod explain;
pub mod testbed;

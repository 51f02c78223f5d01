//! The memory hierarchy (material sections 1-2): cache levels and TLB reach found by
//! measurement, bandwidth, and locality.

pub mod bandwidth;
pub mod common;
pub mod latency;
pub mod locality;
pub mod tlb;

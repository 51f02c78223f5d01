//! The scheduler (material section 6): time slices and nice shares, measured from
//! CPU-bound workers that record when they were off the CPU; turnaround and
//! throughput of N processes with equal work; what an SMT sibling adds.

pub mod common;
pub mod nice;
pub mod scaling;
pub mod slices;
pub mod smt;

//! The scheduler (material section 6): time slices and nice shares, measured from
//! CPU-bound workers that record when they were off the CPU.

pub mod analysis;
pub mod nice;
pub mod scaling;
pub mod slices;
pub mod smt;

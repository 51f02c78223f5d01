//! What the CPU experiments share: timing a probe in calibrated batches.

pub mod timing;

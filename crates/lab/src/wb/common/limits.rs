//! The dirty limits wb.throttle and wb.wcall run under on the testbed: low enough
//! that a few writers reach the hard limit in seconds on a 40 MiB/s device.

/// vm.dirty_bytes.
pub const HARD: u64 = 64 << 20;
/// vm.dirty_background_bytes.
pub const BACKGROUND: u64 = 32 << 20;

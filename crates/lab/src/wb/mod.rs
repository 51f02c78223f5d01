//! Dirty pages and write back on the real kernel (material sections 4 and 7).

pub mod background;
pub mod cases;
pub mod common;
pub mod database;
pub mod periodic;
pub mod throttle;
pub mod wcall;
pub mod wcall_overhead;

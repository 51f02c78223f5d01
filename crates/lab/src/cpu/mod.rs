//! CPU-side costs: system calls and context switches.

pub mod common;
pub mod ctxsw;
pub mod ctxsw_ws;
pub mod syscall;

//! CPU-side costs: system calls (and, later, context switches).

pub mod ctxsw;
pub mod ctxsw_ws;
pub mod syscall;

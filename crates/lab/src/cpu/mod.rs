//! CPU-side costs: system calls (and, later, context switches).

pub mod syscall;

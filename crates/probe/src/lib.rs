//! Measurement engines: the code that makes the load an experiment times, with the
//! `unsafe` that needs (fork, shared mappings, raw system calls in a child).
//!
//! - [`pingpong`]: two tasks (threads or processes) waking each other through a
//!   futex or a pipe, with a working set touched between wakes;
//! - [`spinners`]: forked CPU-bound workers recording when they were off the CPU;
//! - [`memprobe`]: buffers and the pointer chases and sweeps timed over them.
//!
//! Apart from `sys`, which only parses what the kernel reports and wraps system
//! calls thinly: these run workloads and time them.

mod forked;
pub mod memprobe;
pub mod pingpong;
pub mod spinners;

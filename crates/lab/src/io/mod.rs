//! The page cache and the write paths (material section 3).

pub mod common;
pub mod read;
pub mod write;

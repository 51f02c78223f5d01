//! The page cache and the write paths (material section 3).

pub mod read;
pub mod write;

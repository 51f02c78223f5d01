//! What the I/O experiments share: timing one operation with what the thread
//! used and what the device did meanwhile.

pub mod probe;

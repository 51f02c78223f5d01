//! What the write-back experiments share: where the writers' time in write()
//! went by the kernel's account (wb.throttle, wb.wcall), and the dirty limits
//! those two run under. (The Dirty sawtooth of one steady writer, which the
//! simulator's experiments measure too, is `oslab_services::sawtooth`.)

pub mod limits;
pub mod stall_causes;

//! What the write-back experiments share: the Dirty sawtooth of one steady
//! writer (measured and judged for wb.background, wb.periodic and wb.cases), and
//! where the writers' time in write() went by the kernel's account (wb.throttle,
//! wb.wcall), and the dirty limits those two run under.

pub mod limits;
pub mod sawtooth;
pub mod stall_causes;

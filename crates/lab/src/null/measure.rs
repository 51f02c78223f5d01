//! The null experiment's "measurement": the fixed samples.

use super::{Raw, SAMPLES};

pub(super) fn measure() -> Raw {
    Raw {
        latency_ns: SAMPLES.to_vec(),
    }
}

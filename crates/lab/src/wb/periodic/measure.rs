//! wb.periodic's measurement: the steady writer's Dirty sawtooth under the expiry settings.

use std::time::Duration;

use super::{META, Plan};
use oslab_harness::Measured;
use oslab_harness::{Context, LabError};
use oslab_services::sawtooth::{SawRaw, run_sawtooth};

pub(super) fn measure(plan: &Plan, ctx: &mut Context) -> Result<Measured<SawRaw>, LabError> {
    let duration = Duration::from_secs_f64(plan.duration);
    run_sawtooth(ctx, META.id, &plan.knobs(), plan.rate, duration).map(Measured::Raw)
}

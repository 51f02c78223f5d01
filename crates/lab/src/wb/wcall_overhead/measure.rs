//! wb.wcall-overhead's measurement: pwrite() timed plain and under the interposer.

use oslab_wbsim::policy::Policy;
use oslab_wcall::launch;
use oslab_wcall::service::{Governor, Options};

use super::{META, Plan, Raw, WARMUP_CALLS, child};
use oslab_harness::Measured;
use oslab_harness::{Context, LabError};

pub(super) fn measure(plan: &Plan, ctx: &mut Context) -> Result<Measured<Raw>, LabError> {
    let lib = match launch::preload_path() {
        Ok(l) => l,
        Err(e) => return Ok(Measured::Skipped { reason: e }),
    };
    let scratch =
        oslab_harness::scratch::Scratch::create(&ctx.config.scratch_dir, META.id, 64 << 20)?;
    let file = scratch.file("overhead.dat");
    let gov = Governor::start(
        &format!("overhead-{}", std::process::id()),
        Options {
            policy: Policy::WcallFair,
            block_ns: oslab_wcall::coordinator::WCALL_BLOCK_NS,
            interval: std::time::Duration::from_millis(10),
            fifo_priority: None,
            // placement in memory cgroups is left out of the measurement
            cgroups: false,
            cgroup_limits: Default::default(),
            tuning: Default::default(),
            kernel_monitor: true,
            // its writers are its own user's programs
            access: oslab_wcall::service::Access::Owner,
            services: Vec::new(),
        },
    )
    .map_err(|e| LabError::Failed(format!("cannot start a governor: {e}")))?;
    gov.launch_as(oslab_wcall::shm::NORMAL)
        .map_err(|e| LabError::Failed(format!("cannot launch under a governor: {e}")))?;
    let governed_env = launch::env(&lib, gov.socket());
    let exe = ctx.config.oslab_exe.as_path();
    let (mut plain, mut governed) = (Vec::new(), Vec::new());
    let result = (|| -> Result<(), LabError> {
        for r in 0..plan.samples {
            ctx.progress.fraction(r as f64 / plan.samples as f64);
            plain.extend(child(exe, &[], None, &file, plan.batches, plan.per_batch)?);
            governed.extend(child(
                exe,
                &governed_env,
                Some(&gov),
                &file,
                plan.batches,
                plan.per_batch,
            )?);
        }
        Ok(())
    })();
    let snap = gov.finish();
    let _ = std::fs::remove_file(&file);
    result?;
    Ok(Measured::Raw(Raw {
        plain_ns: plain,
        governed_ns: governed,
        warmup_calls: WARMUP_CALLS,
        writes_counted: snap.groups.iter().map(|g| g.writes).sum(),
        file: file.display().to_string(),
    }))
}

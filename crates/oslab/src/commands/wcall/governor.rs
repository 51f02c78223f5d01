//! A governor of `wcall run`'s or `wcall daemon`'s own: its options from the
//! arguments (`oslab_wcall::cli::WcallPolicyArgs`) and starting it.

use std::time::Duration;

use oslab_wcall::cgroups::CgroupLimits;
use oslab_wcall::cli::{MemoryHigh, Recycle, WcallPolicyArgs};
use oslab_wcall::guard::GuardSetting;
use oslab_wcall::service::{self, Access, Governor, Options};

use crate::failure::Failure;

/// The options of a governor that `access` may join; clap has read each value.
pub fn options(p: &WcallPolicyArgs, access: Access) -> Options {
    let recycle = match p.recycle.unwrap_or_default() {
        Recycle::On => true,
        Recycle::Off => false,
        Recycle::Auto => service::page_reporting(),
    };
    let is_root = oslab_sys::process::is_root();
    Options {
        policy: p.policy.unwrap_or_default().policy(),
        block_ns: (p.block_ms.unwrap_or(100.0) * 1e6) as u64,
        interval: Duration::from_secs_f64(p.interval_ms.unwrap_or(10.0) / 1000.0),
        fifo_priority: is_root.then_some(oslab_wcall::service::COORDINATOR_FIFO),
        cgroups: !p.no_cgroups,
        cgroup_limits: cgroup_limits(&p.memory_high),
        tuning: oslab_wcall::coordinator::Tuning {
            headroom: p.headroom,
            recycle,
            sync_guard: p.sync_guard.unwrap_or_default(),
            guard_quiet: p
                .sync_guard_quiet
                .map_or(oslab_wcall::guard::QUIET, Duration::from_secs_f64),
        },
        kernel_monitor: true,
        access,
        services: Vec::new(),
    }
}

/// What a governor does beside its policy, in one line for the user.
pub fn described(g: &Governor, o: &Options) -> String {
    let recycle = if o.tuning.recycle {
        "written-back pages of governed files are dropped every 100 ms (--recycle off to keep them)"
    } else {
        "written-back pages stay in the page cache"
    };
    let guard = match o.tuning.sync_guard {
        GuardSetting::Fixed(b) => format!(
            "; sync guard: while an rt-high process is governed, the other groups are held within {} and written back by the governor as fast as the device has room, and rt-high's own pages chunk by chunk as they are dirtied",
            oslab_units::human_bytes(b)
        ),
        GuardSetting::Auto => format!(
            "; sync guard: on while an rt-high process whose group root gave commits data to the device (fsync, fdatasync, O_SYNC...) and {} s after, sized to what the device writes in 50 ms{}",
            o.tuning.guard_quiet.as_secs_f64(),
            if oslab_sys::fileio::has_cachestat() {
                ""
            } else {
                " (this kernel has no cachestat, 6.5+: the guard cannot see dirty pages and does nothing)"
            }
        ),
        GuardSetting::Off => "; sync guard off".into(),
    };
    let services = if o.services.is_empty() {
        String::new()
    } else {
        let rules: Vec<String> = o.services.iter().map(|r| r.to_string()).collect();
        format!(
            "; system services given their group by root, governed in their own cgroups: {}",
            rules.join(", ")
        )
    };
    format!(
        "{}; {}; {recycle}{guard}{services}",
        g.monitor(),
        g.cgroups().describe()
    )
}

/// The policy's io weights and the `--memory-high GROUP=SIZE` values.
pub fn cgroup_limits(memory_high: &[MemoryHigh]) -> CgroupLimits {
    let mut l = CgroupLimits::policy_io_weights();
    for m in memory_high {
        l.memory_high[m.group()] = Some(m.bytes());
    }
    l
}

pub fn start(name: &str, o: Options) -> Result<Governor, Failure> {
    let g = Governor::start(name, o)
        .map_err(|e| Failure::runtime(format!("cannot start the governor: {e}")))?;
    crate::guard::on_interrupt(g.releaser());
    // before the journal removes the group cgroups: what is left in them would
    // go to the governor's own cgroup, which systemd kills with the unit
    let returner = g.returner();
    crate::guard::on_interrupt(move || say_returned(&returner()));
    Ok(g)
}

/// The processes moved back out of the group cgroups, one line each.
pub fn say_returned(lines: &[String]) {
    for l in lines {
        eprintln!("oslab wcall: {l}");
    }
}

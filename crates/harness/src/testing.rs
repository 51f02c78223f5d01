//! What the experiments' unit tests judge synthetic raw data in: the captured
//! 2-CPU KVM guest of crates/sys/tests/fixtures, on a quiet machine. Built with
//! the `testing` feature (and in this crate's own tests).

use std::path::Path;

use oslab_model::{Environment, LoadRecord};
use oslab_sys::fsread::Root;
use oslab_sys::machine::{self, LiveProbes};

/// The captured guest, with the hypervisor named (`Some`) or bare metal, and
/// `scratch_dir` the folder its scratch files would be in (a mount of the
/// fixture's, or none).
pub fn captured_env_in(hypervisor: Option<&str>, scratch_dir: &str) -> Environment {
    let root =
        Root::at(Path::new(env!("CARGO_MANIFEST_DIR")).join("../sys/tests/fixtures/kvm-xeon-2cpu"));
    let mut machine = machine::collect(
        &root,
        &LiveProbes {
            scratch_dir: scratch_dir.into(),
            page_bytes: 4096,
            ..Default::default()
        },
    );
    machine.hypervisor.name = hypervisor.map(str::to_string);
    Environment {
        oslab_version: "test".into(),
        machine,
        timer: "test".into(),
        load: LoadRecord {
            loadavg_before: [0.0; 3],
            loadavg_after: [0.0; 3],
            cpu_busy_fraction: 0.0,
            steal_fraction: 0.0,
            warning: None,
            ..Default::default()
        },
        seed: 1,
    }
}

/// [`captured_env_in`] with no scratch folder.
pub fn captured_env(hypervisor: Option<&str>) -> Environment {
    captured_env_in(hypervisor, "")
}

/// The captured guest as the scheduler experiments see it: EEVDF, a tick of
/// `hz` (None: unknown), timed by CLOCK_MONOTONIC, scratch files in /tmp.
pub fn captured_eevdf_env(hz: Option<u32>, hypervisor: Option<&str>) -> Environment {
    use oslab_model::machine::{Hz, Probed, SchedulerKind};
    let mut env = captured_env_in(hypervisor, "/tmp");
    env.machine.kernel.scheduler = SchedulerKind::Eevdf;
    env.machine.kernel.hz = match hz {
        Some(hz) => Probed::Value(Hz {
            hz,
            source: "test".into(),
        }),
        None => Probed::Unavailable("test".into()),
    };
    env.timer = "CLOCK_MONOTONIC".into();
    env
}

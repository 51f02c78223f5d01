//! An environment for the memory experiments' unit tests.

/// An environment for judging synthetic raw data: the captured KVM guest of
/// crates/sys/tests/fixtures (L1d 48 KiB, L2 2 MiB, L3 480 MiB, TSC known at
/// 2600 MHz), with the caches resized to `caches` ((name, bytes); the others keep
/// theirs) and the hypervisor named or not.
pub fn test_env(hypervisor: Option<&str>, caches: &[(&str, u64)]) -> oslab_model::Environment {
    let root = oslab_sys::fsread::Root::at(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../sys/tests/fixtures/kvm-xeon-2cpu"),
    );
    let machine = oslab_sys::machine::collect(
        &root,
        &oslab_sys::machine::LiveProbes {
            page_bytes: 4096,
            ..Default::default()
        },
    );
    let mut env = oslab_model::Environment {
        oslab_version: "test".into(),
        machine,
        timer: "test".into(),
        load: oslab_model::LoadRecord {
            loadavg_before: [0.0; 3],
            loadavg_after: [0.0; 3],
            cpu_busy_fraction: 0.0,
            steal_fraction: 0.0,
            warning: None,
            ..Default::default()
        },
        seed: 1,
    };
    env.machine.hypervisor.name = hypervisor.map(str::to_string);
    for l in &mut env.machine.caches.levels {
        if let Some((_, b)) = caches.iter().find(|(n, _)| *n == l.name) {
            l.size_bytes = Some(*b);
        }
    }
    env
}

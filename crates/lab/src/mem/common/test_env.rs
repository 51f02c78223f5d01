//! An environment for the memory experiments' unit tests.

/// An environment for judging synthetic raw data: the captured KVM guest of
/// crates/sys/tests/fixtures (L1d 48 KiB, L2 2 MiB, L3 480 MiB, TSC known at
/// 2600 MHz), with the caches resized to `caches` ((name, bytes); the others keep
/// theirs) and the hypervisor named or not.
pub fn test_env(hypervisor: Option<&str>, caches: &[(&str, u64)]) -> oslab_model::Environment {
    let mut env = oslab_harness::testing::captured_env(hypervisor);
    for l in &mut env.machine.caches.levels {
        if let Some((_, b)) = caches.iter().find(|(n, _)| *n == l.name) {
            l.size_bytes = Some(*b);
        }
    }
    env
}

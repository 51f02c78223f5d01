//! Replay of the CPU experiments' raw fixtures (see replay.rs).

mod common;
use common::{finding, judged, verdict};
use oslab_model::Verdict;

#[test]
fn cpu_syscall() {
    let r = judged("cpu.syscall");
    assert_eq!(verdict(&r, "syscall-is-mode-switch"), Verdict::Holds);
    // this guest pays for Spectre mitigations: gettid above the material's band
    assert_eq!(verdict(&r, "syscall-cost-tens-of-ns"), Verdict::Differs);
    let g = finding(&r, "gettid_ns");
    assert!((160.0..180.0).contains(&g), "{g}");
    assert!(finding(&r, "gettid_uncorrected_ns") > g);
    assert!(
        r.claim("syscall-cost-tens-of-ns")
            .unwrap()
            .why
            .contains("mitigations")
    );
}

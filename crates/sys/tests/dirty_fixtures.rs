//! The dirty-limit arithmetic against the kernel's own figures, on captured samples.

use std::path::Path;

use oslab_sys::dirty::{compute, inputs_from};

fn check(name: &str) -> (u64, u64, u64, u64) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    let r = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap();
    let sys = r("sysctls");
    let v = |k: &str| -> u64 {
        sys.lines()
            .find_map(|l| l.strip_prefix(&format!("{k} "))?.trim().parse().ok())
            .unwrap()
    };
    let vmstat = r("vmstat");
    let kernel = |k: &str| -> u64 {
        vmstat
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{k} "))?.trim().parse().ok())
            .unwrap()
    };
    let i = inputs_from(
        &r("meminfo"),
        &vmstat,
        &r("zoneinfo"),
        [
            v("dirty_ratio"),
            v("dirty_bytes"),
            v("dirty_background_ratio"),
            v("dirty_background_bytes"),
        ],
        4096,
    )
    .unwrap();
    let l = compute(&i);
    (
        l.normal.thresh,
        kernel("nr_dirty_threshold"),
        l.normal.bg_thresh,
        kernel("nr_dirty_background_threshold"),
    )
}

#[test]
fn ratios_match_the_kernel_within_a_percent() {
    let (t, kt, b, kb) = check("dirty");
    assert!(
        (t as f64 - kt as f64).abs() / (kt as f64) < 0.01,
        "{t} vs {kt}"
    );
    assert!(
        (b as f64 - kb as f64).abs() / (kb as f64) < 0.01,
        "{b} vs {kb}"
    );
}

#[test]
fn bytes_match_the_kernel_exactly() {
    let (t, kt, b, kb) = check("dirty-bytes");
    assert_eq!((t, b), (kt, kb));
    assert_eq!((t, b), (16384, 8192));
}

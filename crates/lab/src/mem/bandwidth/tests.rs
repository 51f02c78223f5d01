use super::judge::judge;
use super::*;

fn size(bytes: u64, read_ns: u64, write_ns: u64) -> SizeRaw {
    let t = |ns: u64| Timed {
        passes: 10,
        ns: vec![ns, ns * 2, ns],
    };
    SizeRaw {
        bytes,
        read: t(read_ns),
        write: t(write_ns),
    }
}

#[test]
fn findings_read_the_small_and_the_largest_size() {
    let raw = Raw {
        sizes: vec![
            size(4096, 400, 800),
            size(16 << 10, 1638, 3277),
            size(1 << 20, 1 << 20, 1 << 21),
        ],
        read_load_bytes: 32,
    };
    let plan = Plan {
        samples: 3,
        max_size: 1 << 20,
        per_octave: 2,
    };
    let out = judge(
        &plan,
        &raw,
        &crate::mem::common::test_env::test_env(None, &[]),
    );
    let names: Vec<&str> = out.findings.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "read_gb_s.small",
            "read_gb_s.large",
            "write_gb_s.small",
            "write_gb_s.large"
        ]
    );
    let f = |n: &str| out.findings.iter().find(|f| f.name == n).unwrap().value;
    // 16 KiB x 10 passes in 1638 ns: 100 GB/s (the median of 1x, 2x, 1x the time)
    assert!((f("read_gb_s.small") - 100.0).abs() < 0.1);
    assert!((f("write_gb_s.small") - 50.0).abs() < 0.1);
    assert!((f("read_gb_s.large") - 10.0).abs() < 1e-9);
    assert_eq!(out.plots[0].series[0].points.len(), 3);
    assert!(out.claims.is_empty());
    assert!(
        out.notes[0].contains("reads with 32-byte loads"),
        "{:?}",
        out.notes
    );
}

#[test]
fn recordings_without_the_load_width_read_with_the_baseline_width() {
    let raw: Raw = serde_json::from_str(r#"{"sizes": []}"#).unwrap();
    assert_eq!(raw.read_load_bytes, 16);
}

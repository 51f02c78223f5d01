use super::testing::*;
use super::*;

#[test]
fn device_rates_and_windows() {
    let raw = saw_raw(sawtooth_polls(4.0, 8.0, 0.0, 10.0), 0);
    let rates = device_rates(&raw.polls);
    assert_eq!(rates.len(), raw.polls.len() - 1);
    // each drop writes about 8 MiB within one 0.1 s step
    let best = best_window(&rates, 1).unwrap();
    assert!((75.0..90.0).contains(&best), "{best}");
    assert!(best_window(&rates, 10).unwrap() < best);
    assert_eq!(other_dirty_mib(&raw.polls), Some(0.0));
    let raw = saw_raw(sawtooth_polls(4.0, 14.0, 6.0, 10.0), 6);
    assert_eq!(other_dirty_mib(&raw.polls), Some(6.0));
}

#[test]
fn a_changed_sysctl_is_named() {
    let mut raw = saw_raw(sawtooth_polls(4.0, 8.0, 0.0, 10.0), 0);
    assert!(raw.sysctls_changed().is_empty());
    raw.sysctls_in_force
        .insert("vm.dirty_background_bytes".into(), "0".into());
    assert_eq!(raw.sysctls_changed().len(), 1);
    let json = serde_json::to_value(&raw).unwrap();
    let back: SawRaw = serde_json::from_value(json).unwrap();
    assert_eq!(back.polls.len(), raw.polls.len());
    assert_eq!(
        back.polls[3].poll.dirty_bytes,
        raw.polls[3].poll.dirty_bytes
    );
}

//! Helpers shared by the integration tests.
#![allow(dead_code)]

/// Whether the tests run as root (effective uid 0), from /proc/self/status.
pub fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .map(|l| l.split_whitespace().nth(2) == Some("0"))
        })
        .unwrap_or(false)
}

/// Runs an oslab command that prints a result set as JSON on stdout, and returns it;
/// fails the test with oslab's stderr when the command fails.
pub fn json_output(cmd: &mut std::process::Command) -> serde_json::Value {
    let out = cmd.args(["--json", "-"]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("stdout is only JSON")
}

/// The entry called `name` in a JSON list of measurements, findings or claims.
pub fn named<'a>(list: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    list.as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == name || m["id"] == name)
        .unwrap_or_else(|| panic!("{name} missing"))
}

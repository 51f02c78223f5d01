//! Where a task was seen running, in words: the CPUs of a mask as a list.

/// "0,1" for a CPU mask, "?" when empty.
pub fn cpus_of(mask: u64) -> String {
    let v: Vec<String> = (0..64)
        .filter(|i| mask & (1 << i) != 0)
        .map(|i| i.to_string())
        .collect();
    if v.is_empty() {
        "?".into()
    } else {
        v.join(",")
    }
}

//! CPU lists as the kernel prints them: `0-3,8,10-11`.

use crate::error::{SysError, SysResult};

/// More CPU numbers than a list may hold: kernels allow at most 8192 CPUs
/// (CONFIG_NR_CPUS), so anything longer is garbage, not a machine to allocate for.
pub const MAX_CPUS: usize = 1 << 16;

/// Parses a CPU list into sorted, de-duplicated CPU numbers. An empty list is valid;
/// one naming more than [`MAX_CPUS`] CPUs is an error.
pub fn parse_cpulist(text: &str) -> SysResult<Vec<u32>> {
    let mut cpus = Vec::new();
    for part in text.trim().split(',').filter(|p| !p.trim().is_empty()) {
        let part = part.trim();
        let bad = || SysError::parse("cpu list", format!("bad element '{part}' in '{text}'"));
        let too_many = || {
            SysError::parse(
                "cpu list",
                format!("'{text}' names more than {MAX_CPUS} CPUs"),
            )
        };
        match part.split_once('-') {
            Some((a, b)) => {
                let a: u32 = a.parse().map_err(|_| bad())?;
                let b: u32 = b.parse().map_err(|_| bad())?;
                if b < a {
                    return Err(bad());
                }
                if cpus.len() as u64 + u64::from(b - a) >= MAX_CPUS as u64 {
                    return Err(too_many());
                }
                cpus.extend(a..=b);
            }
            None => cpus.push(part.parse().map_err(|_| bad())?),
        }
        if cpus.len() > MAX_CPUS {
            return Err(too_many());
        }
    }
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
}

/// Formats CPU numbers back into the kernel's compact list form.
pub fn format_cpulist(cpus: &[u32]) -> String {
    let mut sorted = cpus.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < sorted.len() {
        let start = sorted[i];
        let mut end = start;
        while i + 1 < sorted.len() && sorted[i + 1] == end + 1 {
            i += 1;
            end = sorted[i];
        }
        out.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
        i += 1;
    }
    out.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_and_singles() {
        assert_eq!(
            parse_cpulist("0-3,8,10-11\n").unwrap(),
            vec![0, 1, 2, 3, 8, 10, 11]
        );
        assert_eq!(parse_cpulist("5").unwrap(), vec![5]);
        assert_eq!(parse_cpulist("").unwrap(), Vec::<u32>::new());
    }

    #[test]
    fn rejects_garbage() {
        assert!(parse_cpulist("0-x").is_err());
        assert!(parse_cpulist("3-1").is_err());
    }

    #[test]
    fn round_trips() {
        for s in ["0-3,8,10-11", "0", "0,2,4", "0-1"] {
            assert_eq!(format_cpulist(&parse_cpulist(s).unwrap()), s);
        }
    }
}

/// Property tests: any text gives CPUs or an error, never a panic, and never more
/// CPUs than a kernel can have; format and parse are inverse. A fuzz-like run with
/// many cases (PROPTEST_CASES wins over the default here; failures are printed, not
/// saved to proptest-regressions/):
/// `PROPTEST_CASES=100000 cargo test -p oslab-sys --lib -- parse::cpulist::props`
#[cfg(test)]
mod props {
    use super::*;
    use crate::testing::proptest_config as config;
    use proptest::prelude::*;

    /// A CPU number: mostly small, sometimes anything.
    fn cpu() -> impl Strategy<Value = u32> {
        prop_oneof![4 => 0u32..300, 1 => any::<u32>()]
    }

    /// Text shaped like a CPU list: numbers, ranges (any two numbers), separators
    /// and the odd junk character.
    fn listish() -> impl Strategy<Value = String> {
        proptest::collection::vec(
            prop_oneof![
                cpu().prop_map(|a| a.to_string()),
                (cpu(), cpu()).prop_map(|(a, b)| format!("{a}-{b}")),
                proptest::sample::select(vec![",", "-", " ", "\n", ",,", "x", "", "é"])
                    .prop_map(String::from),
            ],
            0..8,
        )
        .prop_map(|parts| parts.join(","))
    }

    proptest! {
        #![proptest_config(config(512))]

        #[test]
        fn any_text_never_panics(text in ".{0,40}") {
            let _ = parse_cpulist(&text);
        }

        #[test]
        fn list_shaped_text_gives_a_bounded_sorted_set_or_an_error(text in listish()) {
            if let Ok(cpus) = parse_cpulist(&text) {
                prop_assert!(cpus.len() <= MAX_CPUS);
                prop_assert!(cpus.windows(2).all(|w| w[0] < w[1]), "sorted, no duplicates");
            }
        }

        #[test]
        fn format_then_parse_gives_the_set(cpus in proptest::collection::vec(cpu(), 0..64)) {
            let mut set = cpus.clone();
            set.sort_unstable();
            set.dedup();
            let text = format_cpulist(&cpus);
            prop_assert_eq!(parse_cpulist(&text).ok(), Some(set), "{}", text);
        }

        #[test]
        fn parse_then_format_is_canonical(text in listish()) {
            if let Ok(cpus) = parse_cpulist(&text) {
                let canonical = format_cpulist(&cpus);
                prop_assert_eq!(parse_cpulist(&canonical).ok(), Some(cpus));
                prop_assert_eq!(format_cpulist(&parse_cpulist(&canonical).unwrap()), canonical);
            }
        }
    }

    /// Regression: "0-4294967295" made a vector of four billion CPUs (16 GiB).
    #[test]
    fn a_range_of_more_cpus_than_any_kernel_has_is_an_error() {
        assert!(parse_cpulist("0-4294967295").is_err());
        assert!(parse_cpulist("4294967295").is_ok());
        assert_eq!(parse_cpulist("4294967294-4294967295").unwrap().len(), 2);
        assert_eq!(parse_cpulist("0-65535").unwrap().len(), MAX_CPUS);
        assert!(parse_cpulist("0-65535,70000").is_err());
    }
}

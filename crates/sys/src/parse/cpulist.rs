//! CPU lists as the kernel prints them: `0-3,8,10-11`.

use crate::error::{SysError, SysResult};

/// Parses a CPU list into sorted, de-duplicated CPU numbers. An empty list is valid.
pub fn parse_cpulist(text: &str) -> SysResult<Vec<u32>> {
    let mut cpus = Vec::new();
    for part in text.trim().split(',').filter(|p| !p.trim().is_empty()) {
        let part = part.trim();
        let bad = || SysError::parse("cpu list", format!("bad element '{part}' in '{text}'"));
        match part.split_once('-') {
            Some((a, b)) => {
                let a: u32 = a.parse().map_err(|_| bad())?;
                let b: u32 = b.parse().map_err(|_| bad())?;
                if b < a {
                    return Err(bad());
                }
                cpus.extend(a..=b);
            }
            None => cpus.push(part.parse().map_err(|_| bad())?),
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

//! Sizes as sysfs prints them (`48K`, `2048K`, `32M`). The sizes people type and
//! read are `oslab_units`'.

use crate::error::{SysError, SysResult};

/// Parses a sysfs size such as `48K` into bytes (K, M, G are powers of 1024).
pub fn parse_sysfs_size(text: &str) -> SysResult<u64> {
    let t = text.trim();
    let (digits, mult) = match t.chars().last() {
        Some('K' | 'k') => (&t[..t.len() - 1], 1u64 << 10),
        Some('M' | 'm') => (&t[..t.len() - 1], 1 << 20),
        Some('G' | 'g') => (&t[..t.len() - 1], 1 << 30),
        _ => (t, 1),
    };
    digits
        .trim()
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(mult))
        .ok_or_else(|| SysError::parse("size", format!("'{t}' is not a size")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_kernel_sizes() {
        assert_eq!(parse_sysfs_size("48K\n").unwrap(), 48 * 1024);
        assert_eq!(parse_sysfs_size("32M").unwrap(), 32 << 20);
        assert_eq!(parse_sysfs_size("512").unwrap(), 512);
        assert!(parse_sysfs_size("big").is_err());
    }

    #[test]
    fn sysfs_sizes_too_large_for_u64_are_errors() {
        assert!(parse_sysfs_size("18446744073709551615K").is_err());
        assert!(parse_sysfs_size("17179869184G").is_err());
        assert_eq!(parse_sysfs_size("17179869183G").unwrap(), 17179869183 << 30);
    }
}

/// Property tests: any text gives a size or an error, never a panic.
/// `PROPTEST_CASES=100000 cargo test -p oslab-sys --lib -- parse::size::props`
#[cfg(test)]
mod props {
    use super::*;
    use crate::testing::proptest_config as config;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(config(512))]

        #[test]
        fn sysfs_size_never_panics(text in ".{0,40}") {
            let _ = parse_sysfs_size(&text);
        }

        #[test]
        fn sysfs_size_of_a_number_and_suffix(n in any::<u64>(), unit in 0usize..4, pad in "[ \n]{0,2}") {
            let (suffix, mult) = [("", 1u64), ("K", 1 << 10), ("M", 1 << 20), ("G", 1 << 30)][unit];
            let got = parse_sysfs_size(&format!("{n}{suffix}{pad}"));
            match n.checked_mul(mult) {
                Some(b) => prop_assert_eq!(got.ok(), Some(b)),
                None => prop_assert!(got.is_err()),
            }
        }
    }
}

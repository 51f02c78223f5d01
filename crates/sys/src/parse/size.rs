//! Sizes as sysfs prints them (`48K`, `2048K`, `32M`) and as humans read them.

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
        .map(|n| n * mult)
        .map_err(|_| SysError::parse("size", format!("'{t}' is not a size")))
}

/// Parses a size a person typed: `4096`, `64K`, `256MiB`, `1.5G`, `2GB` (K, M, G and
/// T are powers of 1024 with or without `i`/`B`).
pub fn parse_human_size(text: &str) -> SysResult<u64> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let value: f64 = num
        .parse()
        .map_err(|_| SysError::parse("size", format!("'{t}' is not a size such as 256MiB")))?;
    let mult = match unit
        .trim()
        .to_ascii_lowercase()
        .trim_end_matches('b')
        .trim_end_matches('i')
    {
        "" => 1u64,
        "k" => 1 << 10,
        "m" => 1 << 20,
        "g" => 1 << 30,
        "t" => 1 << 40,
        _ => {
            return Err(SysError::parse(
                "size",
                format!("'{t}' has an unknown unit (use K, M, G or T)"),
            ));
        }
    };
    Ok((value * mult as f64).round() as u64)
}

/// Formats bytes with binary units: `48 KiB`, `2 MiB`, `1.5 GiB`.
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = bytes as f64;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 || v.fract() == 0.0 {
        format!("{} {}", v as u64, UNITS[u])
    } else if v < 10.0 {
        format!("{v:.2} {}", UNITS[u])
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
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
    fn parses_human_sizes() {
        assert_eq!(parse_human_size("4096").unwrap(), 4096);
        assert_eq!(parse_human_size("64K").unwrap(), 64 << 10);
        assert_eq!(parse_human_size("256MiB").unwrap(), 256 << 20);
        assert_eq!(parse_human_size("1.5G").unwrap(), 3 << 29);
        assert_eq!(parse_human_size("2GB").unwrap(), 2 << 30);
        assert!(parse_human_size("lots").is_err());
        assert!(parse_human_size("5 parsecs").is_err());
    }

    #[test]
    fn formats_binary_units() {
        assert_eq!(human_bytes(48 * 1024), "48 KiB");
        assert_eq!(human_bytes(2 << 20), "2 MiB");
        assert_eq!(human_bytes(1536 << 20), "1.50 GiB");
        assert_eq!(human_bytes(100), "100 B");
        assert_eq!(human_bytes(491520 * 1024), "480 MiB");
    }
}

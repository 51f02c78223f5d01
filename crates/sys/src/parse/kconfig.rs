//! Kernel build configuration (`/proc/config.gz` decompressed, or `/boot/config-*`).

/// The value of `CONFIG_NAME` (without the prefix), if set; `None` if absent or
/// "is not set".
pub fn config_value<'a>(config: &'a str, name: &str) -> Option<&'a str> {
    let key = format!("CONFIG_{name}=");
    config
        .lines()
        .find_map(|l| l.strip_prefix(key.as_str()))
        .map(|v| v.trim().trim_matches('"'))
}

/// The timer frequency HZ from a kernel config.
pub fn config_hz(config: &str) -> Option<u32> {
    config_value(config, "HZ")?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "# CONFIG_HZ_100 is not set\nCONFIG_HZ_250=y\n# CONFIG_HZ_1000 is not set\nCONFIG_HZ=250\nCONFIG_LOCALVERSION=\"-fc\"\n";

    #[test]
    fn finds_hz() {
        assert_eq!(config_hz(SAMPLE), Some(250));
        assert_eq!(config_value(SAMPLE, "LOCALVERSION"), Some("-fc"));
        assert_eq!(config_value(SAMPLE, "HZ_100"), None);
    }
}

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

/// Property tests: any text and any name give a value or nothing, never a panic;
/// a set value reads back. A fuzz-like run with many cases (PROPTEST_CASES wins over
/// the default here; failures are printed, not saved to proptest-regressions/):
/// `PROPTEST_CASES=100000 cargo test -p oslab-sys --lib -- parse::kconfig::props`
#[cfg(test)]
mod props {
    use super::*;
    use crate::testing::proptest_config as config;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(config(512))]

        #[test]
        fn any_text_never_panics(text in "(?s).{0,160}", name in ".{0,12}") {
            let _ = config_value(&text, &name);
            let _ = config_hz(&text);
        }

        #[test]
        fn a_set_value_reads_back(
            name in "[A-Z0-9_]{1,16}",
            value in "[A-Za-z0-9_./-]{0,16}",
            quoted in any::<bool>(),
            hz in any::<u32>(),
            others in proptest::collection::vec("(# )?CONFIG_[A-Z0-9_]{1,10}(=[a-z0-9]{0,4}| is not set)", 0..6),
        ) {
            prop_assume!(name != "HZ");
            let shown = if quoted { format!("\"{value}\"") } else { value.clone() };
            let key = format!("CONFIG_{name}=");
            // an earlier line setting the same name would win; none may
            let others: Vec<String> = others.into_iter().filter(|o| !o.starts_with(&key) && !o.starts_with("CONFIG_HZ=")).collect();
            let text = format!("{}\nCONFIG_{name}={shown}\nCONFIG_HZ={hz}\n", others.join("\n"));
            prop_assert_eq!(config_value(&text, &name), Some(value.as_str()));
            prop_assert_eq!(config_hz(&text), Some(hz));
        }
    }
}

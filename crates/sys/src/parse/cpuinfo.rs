//! /proc/cpuinfo: the feature flags of the first processor (x86's `flags` line).

use crate::fsread::Root;

/// The words of the first processor's `flags` line; `None` when there is none (an
/// architecture that names them otherwise, or no text).
pub fn first_flags(text: &str) -> Option<Vec<&str>> {
    let line = text
        .lines()
        .find(|l| l.split(':').next().is_some_and(|k| k.trim() == "flags"))?;
    Some(line.split_once(':')?.1.split_whitespace().collect())
}

/// Whether the first processor lists `flag`; `None` when no flags are listed.
pub fn has_flag(text: &str, flag: &str) -> Option<bool> {
    Some(first_flags(text)?.contains(&flag))
}

/// [`has_flag`] of /proc/cpuinfo under `root`.
pub fn read_has_flag(root: &Root, flag: &str) -> Option<bool> {
    has_flag(&root.read("/proc/cpuinfo").ok()?, flag)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture() -> Root {
        Root::at(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/kvm-xeon-2cpu"
        ))
    }

    #[test]
    fn flags_of_the_captured_guest() {
        let root = fixture();
        assert_eq!(read_has_flag(&root, "hypervisor"), Some(true));
        assert_eq!(read_has_flag(&root, "constant_tsc"), Some(true));
        assert_eq!(read_has_flag(&root, "no_such_flag"), Some(false));
        assert_eq!(read_has_flag(&Root::at("/nonexistent"), "pcid"), None);
    }

    #[test]
    fn only_the_flags_line_counts() {
        // an excerpt of this KVM guest's /proc/cpuinfo
        let text = "processor\t: 0\nmodel name\t: AMD EPYC\nflags\t\t: fpu vme pcid sse2\nbugs\t\t: sysret_ss_attrs pcid\n";
        assert_eq!(first_flags(text), Some(vec!["fpu", "vme", "pcid", "sse2"]));
        assert_eq!(has_flag(text, "bugs"), Some(false));
        assert_eq!(has_flag("processor : 0\nFeatures : fp asimd\n", "fp"), None);
        assert_eq!(has_flag("flagsx : pcid\n", "pcid"), None);
    }
}

/// Property tests: any text gives flags or `None`, never a panic; a flags line
/// built from any words reads back.
#[cfg(test)]
mod props {
    use super::*;
    use crate::testing::proptest_config as config;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(config(512))]

        #[test]
        fn any_text_never_panics(text in "(?s).{0,200}", flag in "\\PC{0,8}") {
            let _ = has_flag(&text, &flag);
        }

        #[test]
        fn a_flags_line_reads_back(words in proptest::collection::vec("[a-z0-9_]{1,12}", 0..20), before in "[a-z ]{0,20}") {
            let text = format!("processor\t: 0\nmodel name\t: {before}\nflags\t\t: {}\n", words.join(" "));
            let want: Vec<&str> = words.iter().map(String::as_str).collect();
            prop_assert_eq!(first_flags(&text), Some(want));
        }
    }
}

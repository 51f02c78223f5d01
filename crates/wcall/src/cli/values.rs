//! The typed values of a governor's options (`--policy`, `--recycle`,
//! `--memory-high`, `--headroom`) and of `wcall run --group`: each parses what a person types, and prints
//! as a word that parses back to the same value, so a command line built from a
//! value is that value again.

use std::fmt;
use std::str::FromStr;

use oslab_units::parse_human_size;
use oslab_wbsim::policy::Policy;

use crate::shm::{AUTO, GROUP_NAMES, GROUPS, NORMAL, RT_HIGH, RT_LOW, group_number};

/// A clap value parser for a type that reads itself (`FromStr`), its error one
/// sentence that clap puts after the option and the value it refused.
pub(super) fn parsed<T: FromStr<Err = String>>(text: &str) -> Result<T, String> {
    text.parse()
}

/// A size (`8MiB`, `65536`) in bytes. Printed as the number of bytes, it reads
/// back exactly below 2^53 bytes (the parser goes through an f64).
pub(super) fn bytes(text: &str) -> Result<u64, String> {
    parse_human_size(text).map_err(|e| e.to_string())
}

/// `--policy`: the allocation policies a governor runs. The simulator's third,
/// vanilla, is the kernel without a governor, so no governor takes it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum GovernorPolicy {
    Wcall,
    #[default]
    WcallFair,
}

impl GovernorPolicy {
    pub fn policy(self) -> Policy {
        match self {
            GovernorPolicy::Wcall => Policy::Wcall,
            GovernorPolicy::WcallFair => Policy::WcallFair,
        }
    }

    /// The governor's policy that is `policy`; None for vanilla, which no
    /// governor runs.
    pub fn of(policy: Policy) -> Option<GovernorPolicy> {
        match policy {
            Policy::Vanilla => None,
            Policy::Wcall => Some(GovernorPolicy::Wcall),
            Policy::WcallFair => Some(GovernorPolicy::WcallFair),
        }
    }
}

impl FromStr for GovernorPolicy {
    type Err = String;

    fn from_str(text: &str) -> Result<GovernorPolicy, String> {
        Policy::parse(text)
            .and_then(GovernorPolicy::of)
            .ok_or_else(|| "a governor's policy is wcall or wcall-fair".to_string())
    }
}

impl fmt::Display for GovernorPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.policy().name())
    }
}

/// `--recycle`: whether written-back pages of governed files are dropped.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Recycle {
    On,
    Off,
    /// On where the machine hands free memory back to its hypervisor.
    #[default]
    Auto,
}

impl FromStr for Recycle {
    type Err = String;

    fn from_str(text: &str) -> Result<Recycle, String> {
        match text {
            "on" => Ok(Recycle::On),
            "off" => Ok(Recycle::Off),
            "auto" => Ok(Recycle::Auto),
            _ => Err("use on, off or auto".into()),
        }
    }
}

impl fmt::Display for Recycle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Recycle::On => "on",
            Recycle::Off => "off",
            Recycle::Auto => "auto",
        })
    }
}

/// `wcall run --group`: the group of a command's processes, or auto: each
/// process's own by its scheduling class.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunGroup {
    RtHigh,
    RtLow,
    Normal,
    Auto,
}

impl RunGroup {
    /// The group's number as the governor and the interposer know it
    /// (`shm::AUTO` for auto).
    pub fn number(self) -> u32 {
        match self {
            RunGroup::RtHigh => RT_HIGH,
            RunGroup::RtLow => RT_LOW,
            RunGroup::Normal => NORMAL,
            RunGroup::Auto => AUTO,
        }
    }
}

impl FromStr for RunGroup {
    type Err = String;

    fn from_str(text: &str) -> Result<RunGroup, String> {
        match group_number(text) {
            Some(RT_HIGH) => Ok(RunGroup::RtHigh),
            Some(RT_LOW) => Ok(RunGroup::RtLow),
            Some(NORMAL) => Ok(RunGroup::Normal),
            Some(AUTO) => Ok(RunGroup::Auto),
            _ => Err("use rt-high (high), rt-low (low), normal (non-rt) or auto".into()),
        }
    }
}

impl fmt::Display for RunGroup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunGroup::Auto => f.write_str("auto"),
            g => f.write_str(GROUP_NAMES[g.number() as usize]),
        }
    }
}

/// `--memory-high GROUP=SIZE`: a cap on one group's memory, at least 1 MiB.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryHigh {
    /// Below GROUPS: only the parser makes one.
    group: usize,
    bytes: u64,
}

impl MemoryHigh {
    /// The smallest cap taken: below it the group could not run at all.
    pub const MIN_BYTES: u64 = 1 << 20;

    /// The group's number (0 rt-high, 1 rt-low, 2 normal).
    pub fn group(&self) -> usize {
        self.group
    }

    pub fn bytes(&self) -> u64 {
        self.bytes
    }
}

impl FromStr for MemoryHigh {
    type Err = String;

    fn from_str(text: &str) -> Result<MemoryHigh, String> {
        let bad = || {
            "expected GROUP=SIZE with GROUP rt-high, rt-low or normal and SIZE of at least 1MiB, like normal=2GiB"
                .to_string()
        };
        let (group, size) = text.split_once('=').ok_or_else(bad)?;
        let group = group_number(group.trim())
            .map(|g| g as usize)
            .filter(|g| *g < GROUPS)
            .ok_or_else(bad)?;
        let bytes = parse_human_size(size.trim())
            .ok()
            .filter(|b| *b >= MemoryHigh::MIN_BYTES)
            .ok_or_else(bad)?;
        Ok(MemoryHigh { group, bytes })
    }
}

impl fmt::Display for MemoryHigh {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}={}", GROUP_NAMES[self.group], self.bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reads_back<T: FromStr<Err = String> + fmt::Display + PartialEq + fmt::Debug>(v: T) {
        assert_eq!(v.to_string().parse::<T>(), Ok(v));
    }

    #[test]
    fn each_value_prints_as_a_word_that_reads_back() {
        reads_back(GovernorPolicy::Wcall);
        reads_back(GovernorPolicy::WcallFair);
        reads_back(Recycle::On);
        reads_back(Recycle::Off);
        reads_back(Recycle::Auto);
        for g in [
            RunGroup::RtHigh,
            RunGroup::RtLow,
            RunGroup::Normal,
            RunGroup::Auto,
        ] {
            reads_back(g);
        }
        for text in ["rt-high=1MiB", "low=3GiB", "NORMAL = 1048577"] {
            reads_back(text.parse::<MemoryHigh>().unwrap());
        }
    }

    #[test]
    fn the_spellings_people_type_are_taken() {
        assert_eq!("wcall".parse(), Ok(GovernorPolicy::Wcall));
        assert_eq!("wcall-fair".parse(), Ok(GovernorPolicy::WcallFair));
        assert_eq!(GovernorPolicy::default(), GovernorPolicy::WcallFair);
        assert_eq!(Recycle::default(), Recycle::Auto);
        let m: MemoryHigh = "high=2GiB".parse().unwrap();
        assert_eq!((m.group(), m.bytes()), (0, 2 << 30));
        assert_eq!(m.to_string(), "rt-high=2147483648");
        assert_eq!(bytes("8MiB"), Ok(8 << 20));
        assert_eq!(bytes("0"), Ok(0));
        for (text, group) in [
            ("high", RunGroup::RtHigh),
            ("RT-LOW", RunGroup::RtLow),
            ("non-rt", RunGroup::Normal),
            ("auto", RunGroup::Auto),
        ] {
            assert_eq!(text.parse(), Ok(group), "{text}");
        }
        assert_eq!(RunGroup::Normal.number(), NORMAL);
    }

    #[test]
    fn a_bad_value_is_refused_with_what_is_accepted() {
        for bad in ["vanilla", "greedy", "WCALL", ""] {
            assert_eq!(
                bad.parse::<GovernorPolicy>().unwrap_err(),
                "a governor's policy is wcall or wcall-fair"
            );
        }
        for bad in ["vip", "", "auto=1"] {
            assert_eq!(
                bad.parse::<RunGroup>().unwrap_err(),
                "use rt-high (high), rt-low (low), normal (non-rt) or auto"
            );
        }
        for bad in ["yes", "ON", ""] {
            assert_eq!(bad.parse::<Recycle>().unwrap_err(), "use on, off or auto");
        }
        // no group, a group no governor has, no size, a size too small for a group
        for bad in [
            "normal",
            "vip=1GiB",
            "auto=1GiB",
            "normal=lots",
            "rt-high=10",
        ] {
            let e = bad.parse::<MemoryHigh>().unwrap_err();
            assert!(e.starts_with("expected GROUP=SIZE"), "{bad}: {e}");
        }
        assert!(bytes("lots").unwrap_err().contains("not a size"));
        assert!(bytes("5 parsecs").unwrap_err().contains("unknown unit"));
    }
}

//! Parsers of /proc and /sys text (text in, typed values out), and the readers that
//! feed them from a [`crate::fsread::Root`] (`/` or a captured tree), so each reader
//! is tested on fixtures too. No other file system access here.

pub mod bdi;
pub mod cpuinfo;
pub mod cpulist;
pub mod interrupts;
pub mod kallsyms;
pub mod kconfig;
pub mod loadavg;
pub mod memcg;
pub mod meminfo;
pub mod pidsched;
pub mod pidstat;
pub mod procstat;
pub mod schedstat;
pub mod size;
pub mod smaps;
pub mod status;
pub mod vmstat;

pub use cpulist::parse_cpulist;
pub use size::parse_sysfs_size;

/// The active choice of a sysfs list such as `none [mq-deadline] kyber` or
/// `always [madvise] never`; the whole trimmed text when nothing is bracketed.
pub fn bracketed_choice(text: &str) -> Option<String> {
    let text = text.trim();
    if text.is_empty() {
        return None;
    }
    match (text.find('['), text.find(']')) {
        (Some(a), Some(b)) if b > a => Some(text[a + 1..b].to_string()),
        _ => Some(text.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bracketed_choice_picks_the_active_entry() {
        assert_eq!(
            bracketed_choice("none [mq-deadline] kyber bfq\n").as_deref(),
            Some("mq-deadline")
        );
        assert_eq!(
            bracketed_choice("always [madvise] never").as_deref(),
            Some("madvise")
        );
        assert_eq!(bracketed_choice("none").as_deref(), Some("none"));
        assert_eq!(bracketed_choice("  "), None);
    }
}

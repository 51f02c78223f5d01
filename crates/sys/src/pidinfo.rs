//! What a process is called and which cgroup it is in, read from /proc/PID under a
//! [`Root`], for naming the processes the kernel's records mention.

use crate::fsread::Root;
use crate::parse::memcg::{Version, own_path};

/// The process's command name (/proc/PID/comm), if it still exists.
pub fn comm(root: &Root, pid: u32) -> Option<String> {
    root.read_trim(&format!("/proc/{pid}/comm"))
}

/// The cgroup that holds the process's memory: the v1 `memory` hierarchy where
/// there is one, else the unified (v2) path.
pub fn cgroup(root: &Root, pid: u32) -> Option<String> {
    let text = root.read(&format!("/proc/{pid}/cgroup")).ok()?;
    cgroup_of(&text)
}

/// From the text of /proc/PID/cgroup.
pub fn cgroup_of(text: &str) -> Option<String> {
    own_path(text, Version::V1).or_else(|| own_path(text, Version::V2))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_memory_hierarchy_wins_on_a_hybrid_host() {
        let hybrid = "12:memory:/process_api/abc\n11:blkio:/\n0::/user.slice\n";
        assert_eq!(cgroup_of(hybrid).as_deref(), Some("/process_api/abc"));
        let unified = "0::/system.slice/ssh.service\n";
        assert_eq!(
            cgroup_of(unified).as_deref(),
            Some("/system.slice/ssh.service")
        );
        assert_eq!(cgroup_of(""), None);
    }

    #[test]
    fn a_live_process_has_a_name_and_a_cgroup() {
        let root = Root::live();
        let me = std::process::id();
        assert!(comm(&root, me).is_some_and(|c| !c.is_empty()));
        assert!(cgroup(&root, me).is_some());
        assert_eq!(comm(&root, u32::MAX), None);
    }
}

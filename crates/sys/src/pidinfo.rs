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

/// The path of the file process `pid` has open as `fd` (or, with a negative
/// `fd`, has mapped), if it is still the file with device `dev` (user-space
/// encoding) and inode `ino`. The file is never opened, and its attributes are
/// taken from the kernel's cache (statx with AT_STATX_DONT_SYNC), so a FUSE
/// daemon or a dead NFS server another user controls cannot hold oslab up.
pub fn file_path(root: &Root, pid: u32, fd: i32, dev: u64, ino: u64) -> Option<String> {
    if fd >= 0 {
        let link = root.path(&format!("/proc/{pid}/fd/{fd}"));
        if cached_identity(&link)? != (dev, ino) {
            return None;
        }
        return Some(
            std::fs::read_link(&link)
                .ok()?
                .to_string_lossy()
                .into_owned(),
        );
    }
    let maps = root.read(&format!("/proc/{pid}/maps")).ok()?;
    mapped_path(&maps, dev, ino)
}

/// (device, inode) of what `path` names, from cached attributes.
fn cached_identity(path: &std::path::Path) -> Option<(u64, u64)> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    // SAFETY: an all-zero statx is valid output storage.
    let mut st: libc::statx = unsafe { std::mem::zeroed() };
    // SAFETY: c is NUL-terminated and st is valid for the call.
    let rc = unsafe {
        libc::statx(
            libc::AT_FDCWD,
            c.as_ptr(),
            libc::AT_STATX_DONT_SYNC,
            libc::STATX_INO,
            &mut st,
        )
    };
    (rc == 0).then(|| {
        (
            libc::makedev(st.stx_dev_major, st.stx_dev_minor),
            st.stx_ino,
        )
    })
}

/// The path of the mapping of device `dev` (user-space encoding) and inode
/// `ino` in the text of /proc/PID/maps.
pub fn mapped_path(maps: &str, dev: u64, ino: u64) -> Option<String> {
    let want = format!("{:02x}:{:02x}", libc::major(dev), libc::minor(dev));
    maps.lines().find_map(|l| {
        let mut f = l.splitn(6, ' ');
        let (_, _, _, d, i) = (f.next()?, f.next()?, f.next()?, f.next()?, f.next()?);
        let path = f.next()?.trim_start();
        (d == want && i.parse::<u64>().ok()? == ino && path.starts_with('/'))
            .then(|| path.to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mapping_is_found_by_device_and_inode() {
        let maps = "55d0a0000000-55d0a0001000 r--p 00000000 fe:01 1054 /usr/bin/cat\n\
                    7f0000000000-7f0000100000 rw-s 00000000 07:00 12 /mnt/bed/data file\n\
                    7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0 [stack]\n";
        assert_eq!(
            mapped_path(maps, libc::makedev(7, 0), 12).as_deref(),
            Some("/mnt/bed/data file")
        );
        assert_eq!(
            mapped_path(maps, libc::makedev(0xfe, 1), 1054).as_deref(),
            Some("/usr/bin/cat")
        );
        assert_eq!(mapped_path(maps, libc::makedev(7, 0), 13), None);
    }

    #[test]
    fn an_open_file_is_named_only_while_it_is_the_same_file() {
        use std::os::unix::fs::MetadataExt;
        use std::os::unix::io::AsRawFd;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let f = std::fs::File::create(&path).unwrap();
        let m = f.metadata().unwrap();
        let root = Root::live();
        let me = std::process::id();
        let fd = f.as_raw_fd();
        assert_eq!(
            file_path(&root, me, fd, m.dev(), m.ino()).as_deref(),
            Some(path.to_str().unwrap())
        );
        assert_eq!(file_path(&root, me, fd, m.dev(), m.ino() + 1), None);
    }

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

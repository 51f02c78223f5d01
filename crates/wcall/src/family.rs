//! Processes the governor answers for that cannot hold themselves, and the files
//! they dirty.
//!
//! - A statically linked program never loads the interposer, so the `oslab wcall
//!   run` that starts it registers it in the table (`Table::register_launched`).
//!   Like every entry of the table that claim is untrusted: the coordinator takes
//!   the process as governed only when the kernel says it is a child of that
//!   launcher (/proc/PID/stat) and the launcher itself maps the table. It then
//!   learns and does nothing about it that the launcher could not itself.
//! - A file a governed process dirties without write() (stores through a shared
//!   mapping, glibc's stdio) was never registered by the interposer; the kernel's
//!   records (writeback_dirty_folio, `crate::monitor`) name it by (dev, ino), and
//!   it is opened here only through a descriptor or a shared writable mapping the
//!   process itself holds, with the checks of `crate::trust::open_claimed`.

use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};

use crate::trust::{
    Budget, FileClaim, Member, PROC_FILE_LIMIT, Refusal, open_claimed, pidfd_open, valid_pid,
};

/// The parent pid in a /proc/PID/stat text (the fourth field, after the
/// parenthesised command name, which may itself hold spaces and parentheses).
pub fn ppid_of_stat(stat: &str) -> Option<u32> {
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_ascii_whitespace().nth(1)?.parse().ok()
}

/// Checks that `pid` is a child of the governed `launcher`.
pub fn verify_launched(
    pid: u32,
    launcher: &Member,
    budget: &mut Budget,
) -> Result<Member, Refusal> {
    let pid = valid_pid(pid).ok_or(Refusal::No("not a pid"))?;
    let pidfd = pidfd_open(pid)?;
    let stat = budget.read(&format!("/proc/{pid}/stat"), 4096)?;
    if ppid_of_stat(&String::from_utf8_lossy(&stat)) != Some(launcher.pid) {
        return Err(Refusal::No(
            "the process is not a child of the launcher that registered it",
        ));
    }
    let m = Member::confirmed(pid, pidfd);
    if !m.alive() || !launcher.alive() {
        return Err(Refusal::Gone);
    }
    Ok(m)
}

/// Opens, read-only, the file (dev, ino) that `member` dirties: through one of its
/// descriptors open for writing, else through a shared writable mapping of it.
pub fn open_dirtied(
    member: &Member,
    dev: u64,
    ino: u64,
    budget: &mut Budget,
) -> Result<File, Refusal> {
    let pid = member.pid;
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).map_err(|_| Refusal::Gone)?;
    for entry in fds.flatten() {
        let Some(fd) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let claim = FileClaim { pid, fd, dev, ino };
        match open_claimed(&claim, member, budget) {
            Ok(f) => return Ok(f),
            Err(Refusal::Later) => return Err(Refusal::Later),
            Err(_) => continue,
        }
    }
    open_mapped(member, dev, ino, budget)
}

/// A line of /proc/PID/maps that maps (dev, ino) shared and writable: its range.
pub fn shared_writable_range(maps: &str, dev: u64, ino: u64) -> Option<String> {
    let (major, minor) = (libc::major(dev) as u64, libc::minor(dev) as u64);
    maps.lines().find_map(|line| {
        let mut f = line.split_ascii_whitespace();
        let (range, perms, _, d, i) = (f.next()?, f.next()?, f.next()?, f.next()?, f.next()?);
        let hex = |s: &str| u64::from_str_radix(s, 16).ok();
        let (a, b) = d.split_once(':')?;
        let hit = perms.as_bytes().get(1) == Some(&b'w')
            && perms.as_bytes().get(3) == Some(&b's')
            && hex(a) == Some(major)
            && hex(b) == Some(minor)
            && i.parse::<u64>().ok() == Some(ino);
        hit.then(|| range.to_string())
    })
}

/// Through /proc/PID/map_files (root only), for a process that mapped the file
/// and closed its descriptor.
fn open_mapped(member: &Member, dev: u64, ino: u64, budget: &mut Budget) -> Result<File, Refusal> {
    let pid = member.pid;
    let maps = budget.read(&format!("/proc/{pid}/maps"), PROC_FILE_LIMIT)?;
    let range = shared_writable_range(&String::from_utf8_lossy(&maps), dev, ino).ok_or(
        Refusal::No("the process holds the file neither open for writing nor mapped"),
    )?;
    let handle = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_PATH)
        .open(format!("/proc/{pid}/map_files/{range}"))
        .map_err(|_| Refusal::Gone)?;
    let is_it = |m: &std::fs::Metadata| m.file_type().is_file() && m.dev() == dev && m.ino() == ino;
    if !handle.metadata().is_ok_and(|m| is_it(&m)) {
        return Err(Refusal::No("the mapping is not the file named"));
    }
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(format!("/proc/self/fd/{}", handle.as_raw_fd()))
        .map_err(|_| Refusal::Gone)?;
    if !file.metadata().is_ok_and(|m| is_it(&m)) || !member.alive() {
        return Err(Refusal::Gone);
    }
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_parent_pid_survives_odd_command_names() {
        assert_eq!(ppid_of_stat("42 (sh) S 7 42 42 0"), Some(7));
        assert_eq!(ppid_of_stat("42 (a) b (c)) R 9 1 1"), Some(9));
        assert_eq!(ppid_of_stat("garbage"), None);
    }

    #[test]
    fn a_shared_writable_mapping_is_found_by_device_and_inode() {
        let dev = libc::makedev(254, 1);
        let maps = "7f00-7f10 r--s 00000000 fe:01 1234 /data/a\n\
                    7f10-7f20 rw-p 00000000 fe:01 1234 /data/a\n\
                    7f20-7f30 rw-s 00000000 fe:01 1234 /data/a\n";
        assert_eq!(
            shared_writable_range(maps, dev, 1234).as_deref(),
            Some("7f20-7f30")
        );
        assert_eq!(shared_writable_range(maps, dev, 99), None);
        assert_eq!(shared_writable_range(maps, libc::makedev(8, 1), 1234), None);
    }

    #[test]
    fn a_child_of_a_member_is_confirmed_and_a_stranger_is_not() {
        let me = crate::trust::Member::confirmed(
            std::process::id(),
            pidfd_open(std::process::id()).unwrap(),
        );
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        let mut budget = Budget::new(1 << 20);
        assert!(verify_launched(child.id(), &me, &mut budget).is_ok());
        // pid 1 is no child of ours
        assert!(matches!(
            verify_launched(1, &me, &mut budget),
            Err(Refusal::No(_))
        ));
        let _ = child.kill();
        let _ = child.wait();
    }

    #[test]
    fn a_dirtied_file_is_opened_through_the_processes_own_descriptor() {
        use std::io::Write;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("d");
        let mut f = File::create(&path).unwrap();
        f.write_all(b"x").unwrap();
        let m = f.metadata().unwrap();
        let me = crate::trust::Member::confirmed(
            std::process::id(),
            pidfd_open(std::process::id()).unwrap(),
        );
        let mut budget = Budget::new(4 << 20);
        let opened = open_dirtied(&me, m.dev(), m.ino(), &mut budget).unwrap();
        assert_eq!(opened.metadata().unwrap().ino(), m.ino());
        assert!(open_dirtied(&me, m.dev(), m.ino() + 1_000_000, &mut budget).is_err());
    }
}

//! Processes the governor answers for that cannot hold themselves, and the files
//! they dirty.
//!
//! - A statically linked program never loads the interposer, so the `oslab wcall
//!   run` that starts it asks the governor to take it (`Ask::Launched`). The
//!   coordinator takes it only when the kernel says it is a child of that very
//!   launcher, of the same user, with its user and group ids all alike (no
//!   set-user-ID or set-group-ID program), and neither pid 1 nor the coordinator.
//!   It then learns and does nothing about it that the launcher could not itself.
//! - A file a governed process dirties without write() (stores through a shared
//!   mapping, glibc's stdio) was never registered by the interposer; the kernel's
//!   records (writeback_dirty_folio, `crate::monitor`) name it by (dev, ino), and
//!   it is opened here only through a descriptor or a shared writable mapping the
//!   process itself holds, with the checks of `crate::trust::open_claimed`.

use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};

use crate::facts::{Ids, ids, ppid};
use crate::trust::{
    Budget, FileClaim, Member, PROC_FILE_LIMIT, Refusal, open_claimed, pidfd_open, valid_pid,
};

/// Checks that `pid` is a child of the launcher `launcher` (whose ids are
/// `launcher_ids`) that the coordinator may govern for it.
pub fn verify_launched(
    pid: u32,
    launcher: &Member,
    launcher_ids: &Ids,
    budget: &mut Budget,
) -> Result<Member, Refusal> {
    let pid = valid_pid(pid).ok_or(Refusal::No("not a pid"))?;
    if pid == 1 || pid == std::process::id() {
        return Err(Refusal::No("pid 1 and the coordinator are never governed"));
    }
    let pidfd = pidfd_open(pid)?;
    if ppid(pid, budget)? != launcher.pid {
        return Err(Refusal::No(
            "the process is not a child of the launcher that registered it",
        ));
    }
    let theirs = ids(pid, budget)?;
    if !theirs.consistent() {
        return Err(Refusal::No(
            "a set-user-ID or set-group-ID process is never governed",
        ));
    }
    if theirs.uid() != launcher_ids.uid() {
        return Err(Refusal::No(
            "the process runs as another user than its launcher",
        ));
    }
    let m = Member::confirmed(pid, pidfd);
    // what was read was this process's, and its launcher's child's
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
    let folder = format!("/proc/{pid}/fd");
    let fds: Vec<u32> = crate::slowproc::read_of(pid, crate::slowproc::DEADLINE, move || {
        std::fs::read_dir(folder).map(|d| {
            d.flatten()
                .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
                .collect()
        })
    })
    .ok_or(Refusal::No(
        "its /proc files do not answer (held by an exec)",
    ))?
    .map_err(|_| Refusal::Gone)?;
    for fd in fds {
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
        let my_ids = ids(std::process::id(), &mut budget).unwrap();
        assert!(verify_launched(child.id(), &me, &my_ids, &mut budget).is_ok());
        // pid 1 is no child of ours, and never governed
        assert!(matches!(
            verify_launched(1, &me, &my_ids, &mut budget),
            Err(Refusal::No(_))
        ));
        // a child of ours that runs as another user is not ours to govern
        let other = Ids {
            uids: [my_ids.uid() + 1; 4],
            gids: my_ids.gids,
        };
        assert!(matches!(
            verify_launched(child.id(), &me, &other, &mut budget),
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

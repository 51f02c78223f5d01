//! What the coordinator takes from a governed process, checked before it acts on it.
//!
//! A process is governed only as the kernel says who it is: the peer of a
//! connection to the governor's socket (SO_PEERCRED and SO_PEERPIDFD, see
//! `crate::admission`), held from then on by a pidfd, so a pid reused by another
//! process is never taken for it. What it writes in its own table (see
//! docs/wcall.md, "The trust boundary") is a claim about itself alone, and the
//! coordinator acts on a claim only as the kernel confirms it:
//!
//! - a file slot's (fd, dev, ino) is opened only when the descriptor names a
//!   regular file with that (dev, ino), not on a FUSE file system, and the process
//!   holds it open for writing: the coordinator then learns (cachestat) and does
//!   (sync_file_range) nothing the process could not itself. It is opened
//!   read-only, non-blocking, without becoming a controlling terminal, through an
//!   O_PATH handle of its own, so nothing the process does with its descriptor in
//!   between changes what is opened;
//! - reading /proc costs time in the coordinator's pass, so each pass reads at
//!   most [`PASS_PROC_BYTES`] of it; what does not fit waits for the next pass.

use std::fs::{File, OpenOptions};
use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};

/// The highest pid the kernel can hand out (PID_MAX_LIMIT on 64-bit: 4 Mi).
pub const PID_MAX_LIMIT: u32 = 1 << 22;
/// /proc text one pass may read to check new entries.
pub const PASS_PROC_BYTES: usize = 4 << 20;
/// The longest /proc/PID/maps or /proc/PID/mountinfo read for one check; a
/// process with more (some 40 000 mappings) is not taken as governed.
pub const PROC_FILE_LIMIT: usize = 4 << 20;

/// Why an entry of the table is not acted on (now).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// Not checked in this pass: the pass's /proc budget is spent.
    Later,
    /// The process or the descriptor is gone: nothing wrong, nothing to do.
    Gone,
    /// The entry claims what the kernel does not confirm.
    No(&'static str),
}

/// The /proc bytes a pass may still read.
#[derive(Debug)]
pub struct Budget {
    left: usize,
}

impl Budget {
    pub fn new(bytes: usize) -> Budget {
        Budget { left: bytes }
    }

    pub fn left(&self) -> usize {
        self.left
    }

    /// Reads a /proc file of at most `limit` bytes, charging what is read. A
    /// file of another process is read as `crate::slowproc` reads it: within a
    /// deadline, on a worker that process cannot hold up this thread through.
    pub fn read(&mut self, path: &str, limit: usize) -> Result<Vec<u8>, Refusal> {
        if self.left == 0 {
            return Err(Refusal::Later);
        }
        let cap = limit.min(self.left);
        let read = {
            let path = path.to_string();
            move || -> Result<Vec<u8>, Refusal> {
                let f = File::open(&path).map_err(|_| Refusal::Gone)?;
                let mut buf = Vec::new();
                f.take(cap as u64 + 1)
                    .read_to_end(&mut buf)
                    .map_err(|_| Refusal::Gone)?;
                Ok(buf)
            }
        };
        let buf = match other_process(path) {
            Some(pid) => crate::slowproc::read_of(pid, crate::slowproc::DEADLINE, read).ok_or(
                Refusal::No("its /proc files do not answer (held by an exec)"),
            )??,
            None => read()?,
        };
        let n = buf.len();
        self.left = self.left.saturating_sub(n);
        if n > cap {
            return Err(if cap < limit {
                Refusal::Later
            } else {
                Refusal::No("its /proc entry is too long to check")
            });
        }
        Ok(buf)
    }
}

/// The pid of another process whose /proc file `path` is (not this one's).
fn other_process(path: &str) -> Option<u32> {
    let pid: u32 = path
        .strip_prefix("/proc/")?
        .split('/')
        .next()?
        .parse()
        .ok()?;
    (pid != std::process::id()).then_some(pid)
}

/// A pid as read from the table, when it can be one.
pub fn valid_pid(pid: u32) -> Option<u32> {
    (1..=PID_MAX_LIMIT).contains(&pid).then_some(pid)
}

/// A descriptor number as read from the table, when it can be one.
pub fn valid_fd(fd: u32) -> Option<u32> {
    (fd <= i32::MAX as u32).then_some(fd)
}

/// Whether a process exists (signal 0 checks only existence and permission).
pub fn process_exists(pid: u32) -> bool {
    let Some(pid) = valid_pid(pid) else {
        return false;
    };
    // SAFETY: signal 0 sends nothing; pid is a positive pid, never a group or -1.
    let r = unsafe { libc::kill(pid as i32, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// A descriptor's state from /proc/PID/fdinfo/FD.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FdInfo {
    pub flags: u32,
    pub mnt_id: Option<u64>,
    /// Linux 5.14 and later.
    pub ino: Option<u64>,
}

impl FdInfo {
    pub fn parse(text: &str) -> Option<FdInfo> {
        let field = |k: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(k)?.strip_prefix(':').map(str::trim))
        };
        Some(FdInfo {
            flags: u32::from_str_radix(field("flags")?, 8).ok()?,
            mnt_id: field("mnt_id").and_then(|v| v.parse().ok()),
            ino: field("ino").and_then(|v| v.parse().ok()),
        })
    }

    /// Opened for writing (not an O_PATH handle, which grants no access).
    pub fn writable(&self) -> bool {
        let acc = self.flags & libc::O_ACCMODE as u32;
        self.flags & libc::O_PATH as u32 == 0
            && (acc == libc::O_WRONLY as u32 || acc == libc::O_RDWR as u32)
    }
}

/// The file-system type of mount `mnt_id` in a /proc/PID/mountinfo text.
pub fn mount_fstype(mountinfo: &str, mnt_id: u64) -> Option<&str> {
    mountinfo.lines().find_map(|l| {
        let mut f = l.split_ascii_whitespace();
        if f.next()?.parse::<u64>().ok()? != mnt_id {
            return None;
        }
        // optional fields end with a lone "-"; the type follows
        f.skip_while(|x| *x != "-").nth(1)
    })
}

/// File systems served by a process (FUSE): opening, or even stat() of, a file
/// there waits for that process, which may never answer.
pub fn served_by_a_process(fstype: &str) -> bool {
    fstype == "fuse" || fstype == "fuseblk" || fstype.starts_with("fuse.")
}

/// A governed process: the kernel's pid of a peer the coordinator admitted, held
/// by a pidfd (where the kernel has them, 5.3 and later) so that its pid cannot be
/// taken over.
#[derive(Debug)]
pub struct Member {
    pub pid: u32,
    pidfd: Option<OwnedFd>,
}

pub(crate) fn pidfd_open(pid: u32) -> Result<Option<OwnedFd>, Refusal> {
    // SAFETY: a system call with two integer arguments; the result is checked.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
    if fd >= 0 {
        // SAFETY: a fresh descriptor that nothing else owns.
        return Ok(Some(unsafe { OwnedFd::from_raw_fd(fd as i32) }));
    }
    match std::io::Error::last_os_error().raw_os_error() {
        Some(libc::ENOSYS) => Ok(None),
        _ => Err(Refusal::Gone),
    }
}

impl Member {
    /// A process the kernel confirmed: a peer of the socket, or a launcher's child.
    pub(crate) fn confirmed(pid: u32, pidfd: Option<OwnedFd>) -> Member {
        Member { pid, pidfd }
    }

    /// Whether it still runs (a zombie counts: its pid is not free yet).
    pub fn alive(&self) -> bool {
        match &self.pidfd {
            Some(fd) => {
                // SAFETY: signal 0 through our own pidfd; no siginfo.
                let r = unsafe {
                    libc::syscall(
                        libc::SYS_pidfd_send_signal,
                        fd.as_raw_fd(),
                        0,
                        std::ptr::null::<libc::siginfo_t>(),
                        0,
                    )
                };
                r == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
            }
            None => process_exists(self.pid),
        }
    }
}

/// What a file slot claims: process `pid` writes the file (dev, ino) through `fd`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileClaim {
    pub pid: u32,
    pub fd: u32,
    pub dev: u64,
    pub ino: u64,
}

fn fdinfo(path: &str, budget: &mut Budget) -> Result<FdInfo, Refusal> {
    let text = budget.read(path, 4096)?;
    FdInfo::parse(&String::from_utf8_lossy(&text)).ok_or(Refusal::Gone)
}

/// Opens, read-only, the file `member` writes as `claim` says, once the kernel
/// confirms the claim (see the module's notes). `member` must be the claim's pid.
pub fn open_claimed(
    claim: &FileClaim,
    member: &Member,
    budget: &mut Budget,
) -> Result<File, Refusal> {
    if member.pid != claim.pid {
        return Err(Refusal::No("the file's process is not a governed one"));
    }
    let fd = valid_fd(claim.fd).ok_or(Refusal::No("not a descriptor"))?;
    let pid = member.pid;
    // A handle on what the descriptor names, without opening that: O_PATH calls no
    // file system's open (no device is started, no FIFO waited on, no lease
    // broken), and the magic link is followed without a lookup.
    // (following the link may wait on the process's exec: crate::slowproc)
    let link = format!("/proc/{pid}/fd/{fd}");
    let handle = crate::slowproc::read_of(pid, crate::slowproc::DEADLINE, move || {
        OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_PATH)
            .open(link)
    })
    .ok_or(Refusal::No(
        "its /proc files do not answer (held by an exec)",
    ))?
    .map_err(|_| Refusal::Gone)?;
    // where it is, from the kernel's view of our own handle (no file-system call)
    let mine = fdinfo(&format!("/proc/self/fdinfo/{}", handle.as_raw_fd()), budget)?;
    let mnt_id = mine.mnt_id.ok_or(Refusal::No("no mount id"))?;
    let mountinfo = budget.read(&format!("/proc/{pid}/mountinfo"), PROC_FILE_LIMIT)?;
    let mountinfo = String::from_utf8_lossy(&mountinfo);
    let fstype = mount_fstype(&mountinfo, mnt_id).ok_or(Refusal::Gone)?;
    if served_by_a_process(fstype) {
        return Err(Refusal::No("the file is on a FUSE file system"));
    }
    let is_claimed = |m: &std::fs::Metadata| {
        m.file_type().is_file() && m.dev() == claim.dev && m.ino() == claim.ino
    };
    let m = handle.metadata().map_err(|_| Refusal::Gone)?;
    if !is_claimed(&m) {
        return Err(Refusal::No(
            "the descriptor is not the regular file claimed",
        ));
    }
    // the process holds this very file open for writing
    let theirs = fdinfo(&format!("/proc/{pid}/fdinfo/{fd}"), budget)?;
    if !theirs.writable()
        || theirs.mnt_id != Some(mnt_id)
        || theirs.ino.is_some_and(|i| i != m.ino())
    {
        return Err(Refusal::No(
            "the process does not hold the file open for writing",
        ));
    }
    // our own handle, reopened: exactly what was checked
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(format!("/proc/self/fd/{}", handle.as_raw_fd()))
        .map_err(|_| Refusal::Gone)?;
    if !file.metadata().is_ok_and(|m| is_claimed(&m)) {
        return Err(Refusal::No(
            "the descriptor is not the regular file claimed",
        ));
    }
    // the descriptor read above was this process's
    if !member.alive() {
        return Err(Refusal::Gone);
    }
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    #[test]
    fn pids_and_descriptors_out_of_range_are_not_used() {
        assert_eq!(valid_pid(0), None);
        assert_eq!(valid_pid(1), Some(1));
        assert_eq!(valid_pid(PID_MAX_LIMIT), Some(PID_MAX_LIMIT));
        assert_eq!(valid_pid(PID_MAX_LIMIT + 1), None);
        // as an i32 this would be -1: kill(-1, 0) asks about every process
        assert_eq!(valid_pid(u32::MAX), None);
        assert!(!process_exists(u32::MAX));
        assert!(!process_exists(0));
        assert!(process_exists(std::process::id()));
        assert_eq!(valid_fd(3), Some(3));
        assert_eq!(valid_fd(u32::MAX), None);
    }

    #[test]
    fn fdinfo_says_how_a_descriptor_was_opened() {
        let w = FdInfo::parse("pos:\t0\nflags:\t0100001\nmnt_id:\t24\nino:\t3\n").unwrap();
        assert_eq!(
            w,
            FdInfo {
                flags: 0o100001,
                mnt_id: Some(24),
                ino: Some(3)
            }
        );
        assert!(w.writable());
        assert!(FdInfo::parse("flags:\t02\n").unwrap().writable(), "O_RDWR");
        assert!(
            !FdInfo::parse("flags:\t0100000\n").unwrap().writable(),
            "read-only"
        );
        let path = FdInfo::parse("flags:\t012000001\nmnt_id:\t1\n").unwrap();
        assert!(!path.writable(), "O_PATH grants nothing");
        assert_eq!(path.ino, None, "kernels before 5.14");
        assert_eq!(FdInfo::parse("pos:\t0\n"), None);
    }

    #[test]
    fn mountinfo_gives_a_mounts_file_system_type() {
        let text = "22 1 259:2 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p2 rw\n\
36 22 0:45 / /home/u/mnt rw,nosuid,nodev,relatime shared:30 master:2 - fuse.sshfs host:/ rw,user_id=1000\n\
37 22 0:46 / /x rw - fuseblk /dev/sdb1 rw\n\
38 22 0:47 / /odd\\040name rw - tmpfs tmpfs rw\n";
        assert_eq!(mount_fstype(text, 22), Some("ext4"));
        assert_eq!(mount_fstype(text, 36), Some("fuse.sshfs"));
        assert_eq!(mount_fstype(text, 38), Some("tmpfs"));
        assert_eq!(mount_fstype(text, 99), None);
        assert!(served_by_a_process("fuse.sshfs"));
        assert!(served_by_a_process("fuseblk"));
        assert!(served_by_a_process("fuse"));
        assert!(!served_by_a_process("ext4"));
        assert!(
            !served_by_a_process("fusectl"),
            "the control file system is the kernel's"
        );
    }

    #[test]
    fn the_proc_budget_defers_and_refuses() {
        let mut b = Budget::new(10);
        assert_eq!(
            b.read("/proc/self/maps", 1 << 20),
            Err(Refusal::Later),
            "more than the pass has left"
        );
        assert_eq!(b.left(), 0);
        assert_eq!(b.read("/proc/self/status", 1 << 20), Err(Refusal::Later));
        let mut b = Budget::new(1 << 20);
        assert_eq!(
            b.read("/proc/self/maps", 10),
            Err(Refusal::No("its /proc entry is too long to check"))
        );
        assert!(b.read("/proc/self/stat", 4096).is_ok());
        assert_eq!(b.read("/proc/self/no-such-file", 4096), Err(Refusal::Gone));
    }

    fn child_sleeping() -> std::process::Child {
        std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap()
    }

    #[test]
    fn a_member_held_by_its_pidfd_dies_with_its_process() {
        let mut child = child_sleeping();
        // a member in name only, to see the pidfd follow the process
        let m = Member {
            pid: child.id(),
            pidfd: pidfd_open(child.id()).unwrap(),
        };
        assert!(m.alive());
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(!m.alive(), "reaped: gone, whoever gets the pid next");
    }

    #[test]
    fn a_claimed_file_is_opened_only_when_the_kernel_confirms_it() {
        let dir = tempfile::tempdir().unwrap();
        let mut b = Budget::new(PASS_PROC_BYTES);
        let me = Member::confirmed(std::process::id(), pidfd_open(std::process::id()).unwrap());
        let pid = std::process::id();
        let claim_of = |f: &File| {
            let m = f.metadata().unwrap();
            FileClaim {
                pid,
                fd: f.as_raw_fd() as u32,
                dev: m.dev(),
                ino: m.ino(),
            }
        };
        let path = dir.path().join("data");
        let written = File::create(&path).unwrap();
        let ok = claim_of(&written);
        let opened = open_claimed(&ok, &me, &mut b).unwrap();
        assert_eq!(opened.metadata().unwrap().ino(), ok.ino);

        // another file's identity
        let other = File::create(dir.path().join("other")).unwrap();
        let wrong = FileClaim {
            ino: other.metadata().unwrap().ino(),
            ..ok
        };
        assert_eq!(
            open_claimed(&wrong, &me, &mut b).unwrap_err(),
            Refusal::No("the descriptor is not the regular file claimed")
        );
        // a file the process may only read (or only name, O_PATH)
        let read_only = File::open(&path).unwrap();
        assert_eq!(
            open_claimed(&claim_of(&read_only), &me, &mut b).unwrap_err(),
            Refusal::No("the process does not hold the file open for writing")
        );
        let named = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_PATH)
            .open(&path)
            .unwrap();
        assert_eq!(
            open_claimed(&claim_of(&named), &me, &mut b).unwrap_err(),
            Refusal::No("the process does not hold the file open for writing")
        );
        // a FIFO with no writer: opening it for reading would wait for ever
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let reader = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&fifo)
            .unwrap();
        assert_eq!(
            open_claimed(&claim_of(&reader), &me, &mut b).unwrap_err(),
            Refusal::No("the descriptor is not the regular file claimed")
        );
        // a device, opened for writing
        let null = OpenOptions::new().write(true).open("/dev/null").unwrap();
        assert_eq!(
            open_claimed(&claim_of(&null), &me, &mut b).unwrap_err(),
            Refusal::No("the descriptor is not the regular file claimed")
        );
        // nonsense numbers, and a closed descriptor
        for bad in [
            FileClaim { fd: u32::MAX, ..ok },
            FileClaim { fd: 999_999, ..ok },
        ] {
            assert!(open_claimed(&bad, &me, &mut b).is_err(), "{bad:?}");
        }
        assert_eq!(
            open_claimed(&FileClaim { pid: 1, ..ok }, &me, &mut b).unwrap_err(),
            Refusal::No("the file's process is not a governed one")
        );
        // closed (other tests' threads may reuse the number at once: refused or gone)
        drop(written);
        assert!(open_claimed(&ok, &me, &mut b).is_err());
    }
}

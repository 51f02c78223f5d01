//! The calling process and thread: raw system calls, CPU placement, usage counters.

use crate::error::{SysError, SysResult};
use crate::fsread::Root;

/// gettid(2) through syscall(2), so no library cache can answer it.
#[inline]
pub fn raw_gettid() -> i64 {
    // SAFETY: gettid takes no arguments and cannot fail.
    unsafe { libc::syscall(libc::SYS_gettid) }
}

/// getppid(2) through syscall(2).
#[inline]
pub fn raw_getppid() -> i64 {
    // SAFETY: getppid takes no arguments and cannot fail.
    unsafe { libc::syscall(libc::SYS_getppid) }
}

/// The CPU the calling thread runs on right now.
pub fn current_cpu() -> Option<u32> {
    // SAFETY: sched_getcpu has no arguments.
    let c = unsafe { libc::sched_getcpu() };
    (c >= 0).then_some(c as u32)
}

/// Whether `e` says the process named has exited (ESRCH), e.g. from a write
/// of its pid to a cgroup.procs file.
pub fn has_exited(e: &std::io::Error) -> bool {
    e.raw_os_error() == Some(libc::ESRCH)
}

pub fn is_root() -> bool {
    // SAFETY: geteuid cannot fail.
    unsafe { libc::geteuid() == 0 }
}

pub fn uid() -> u32 {
    // SAFETY: getuid cannot fail.
    unsafe { libc::getuid() }
}

/// The effective uid: the owner of what this process makes.
pub fn euid() -> u32 {
    // SAFETY: geteuid cannot fail.
    unsafe { libc::geteuid() }
}

/// The CPUs the calling thread may run on.
pub fn affinity() -> SysResult<Vec<u32>> {
    // SAFETY: an all-zero cpu_set_t is a valid empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: set is valid for the size passed.
    let rc = unsafe { libc::sched_getaffinity(0, std::mem::size_of_val(&set), &mut set) };
    if rc != 0 {
        return Err(SysError::last_os("sched_getaffinity"));
    }
    Ok((0..libc::CPU_SETSIZE as u32)
        // SAFETY: i is below CPU_SETSIZE.
        .filter(|&i| unsafe { libc::CPU_ISSET(i as usize, &set) })
        .collect())
}

/// Restricts the calling thread to `cpus`.
pub fn set_affinity(cpus: &[u32]) -> SysResult<()> {
    // SAFETY: an all-zero cpu_set_t is a valid empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &c in cpus {
        // SAFETY: CPU_SET checks nothing; keep c in range ourselves.
        if (c as usize) < libc::CPU_SETSIZE as usize {
            unsafe { libc::CPU_SET(c as usize, &mut set) };
        }
    }
    // SAFETY: set is valid for the size passed.
    let rc = unsafe { libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set) };
    if rc != 0 {
        return Err(SysError::last_os("sched_setaffinity"));
    }
    Ok(())
}

/// Pins the calling thread to one CPU and restores its previous affinity when dropped.
pub struct PinGuard {
    previous: Vec<u32>,
}

impl PinGuard {
    pub fn pin(cpu: u32) -> SysResult<PinGuard> {
        let previous = affinity()?;
        set_affinity(&[cpu])?;
        Ok(PinGuard { previous })
    }
}

impl Drop for PinGuard {
    fn drop(&mut self) {
        let _ = set_affinity(&self.previous);
    }
}

/// Resource usage of the calling thread (getrusage RUSAGE_THREAD).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ThreadUsage {
    pub user_us: u64,
    pub system_us: u64,
    pub voluntary_switches: u64,
    pub involuntary_switches: u64,
    pub minor_faults: u64,
    pub major_faults: u64,
}

impl ThreadUsage {
    pub fn since(&self, e: &ThreadUsage) -> ThreadUsage {
        ThreadUsage {
            user_us: self.user_us.saturating_sub(e.user_us),
            system_us: self.system_us.saturating_sub(e.system_us),
            voluntary_switches: self.voluntary_switches.saturating_sub(e.voluntary_switches),
            involuntary_switches: self
                .involuntary_switches
                .saturating_sub(e.involuntary_switches),
            minor_faults: self.minor_faults.saturating_sub(e.minor_faults),
            major_faults: self.major_faults.saturating_sub(e.major_faults),
        }
    }
}

fn usage(who: libc::c_int) -> ThreadUsage {
    // SAFETY: an all-zero rusage is valid output storage.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: ru is valid; RUSAGE_THREAD and RUSAGE_SELF are valid selectors.
    unsafe { libc::getrusage(who, &mut ru) };
    let us = |tv: libc::timeval| tv.tv_sec as u64 * 1_000_000 + tv.tv_usec as u64;
    ThreadUsage {
        user_us: us(ru.ru_utime),
        system_us: us(ru.ru_stime),
        voluntary_switches: ru.ru_nvcsw as u64,
        involuntary_switches: ru.ru_nivcsw as u64,
        minor_faults: ru.ru_minflt as u64,
        major_faults: ru.ru_majflt as u64,
    }
}

/// Usage of the calling thread.
pub fn thread_usage() -> ThreadUsage {
    usage(libc::RUSAGE_THREAD)
}

/// Usage of the whole process.
pub fn process_usage() -> ThreadUsage {
    usage(libc::RUSAGE_SELF)
}

/// The start time of a process in clock ticks since boot (field 22 of /proc/PID/stat),
/// which together with the pid identifies a process across pid reuse.
pub fn start_time(root: &Root, pid: u32) -> Option<u64> {
    Some(crate::parse::pidstat::read(root, pid)?.start_time_ticks)
}

/// Whether the process `pid` started at `start` is still running. A zombie is
/// not: it has exited and will undo nothing (its parent has just not reaped it).
pub fn process_alive(root: &Root, pid: u32, start: u64) -> bool {
    crate::parse::pidstat::read(root, pid)
        .is_some_and(|s| s.start_time_ticks == start && !matches!(s.state, 'Z' | 'X'))
}

/// Makes the calling thread SCHED_FIFO at `priority` (1-99). Needs root or
/// CAP_SYS_NICE. Affects only this thread, which ends with the experiment.
pub fn set_fifo(priority: i32) -> SysResult<()> {
    let p = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: p is valid; 0 is the calling thread.
    if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &p) } != 0 {
        return Err(SysError::last_os("sched_setscheduler"));
    }
    Ok(())
}

/// Sets the nice value of the calling thread (Linux applies setpriority with
/// who = 0 to the calling thread only).
pub fn set_nice(nice: i32) -> SysResult<()> {
    // SAFETY: no pointers; PRIO_PROCESS with who 0 is the caller.
    if unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, nice) } != 0 {
        return Err(SysError::last_os("setpriority"));
    }
    Ok(())
}

/// sync(2): write back every dirty page of every file system.
pub fn sync_all() {
    // SAFETY: no arguments, cannot fail.
    unsafe { libc::sync() };
}

/// syncfs(2): writes back the file system holding `file` through its
/// device's flusher (a pass the writeback tracepoints see, unlike fsync's).
pub fn syncfs(file: &std::fs::File) -> SysResult<()> {
    use std::os::fd::AsRawFd;
    // SAFETY: a valid fd.
    if unsafe { libc::syncfs(file.as_raw_fd()) } != 0 {
        return Err(SysError::last_os("syncfs"));
    }
    Ok(())
}

/// In a child between fork and exec (or a forked worker): asks the kernel for
/// `signal` when the thread that forked it dies, then closes the race where that
/// happened before the request by checking that the parent is still `parent`
/// (exits at once if not). Raw system calls only: safe after fork in a threaded
/// process.
pub fn die_with_parent(parent: i32, signal: i32) {
    // SAFETY: prctl with integer arguments; getppid and _exit take none of ours.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, signal as libc::c_ulong, 0, 0, 0);
        if libc::getppid() != parent {
            libc::_exit(1);
        }
    }
}

/// Makes this process the reaper of its orphaned descendants
/// (PR_SET_CHILD_SUBREAPER): they become its children instead of init's, so a
/// test can see what a killed child left running.
pub fn become_subreaper() -> SysResult<()> {
    // SAFETY: prctl with integer arguments.
    if unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) } != 0 {
        return Err(SysError::last_os("prctl(PR_SET_CHILD_SUBREAPER)"));
    }
    Ok(())
}

/// While one is held, this process adopts what its descendants orphan
/// (PR_SET_CHILD_SUBREAPER), as a service manager does: a daemon an experiment
/// starts (a server whose pg_ctl exits once it is up) stays its descendant, so
/// its CPU and I/O are the experiment's, not "other programs'". Holders are
/// counted process-wide: the setting is on while any is held and back to what
/// it was when the last goes, in whatever order they go. oslab waits for the
/// children it spawns by their pids, so what it adopted is reaped apart
/// ([`reap_adopted`]).
pub struct AdoptsOrphans(());

/// How many [`AdoptsOrphans`] are held, and the setting before the first.
static ADOPTERS: std::sync::Mutex<(u32, bool)> = std::sync::Mutex::new((0, false));

impl AdoptsOrphans {
    pub fn new() -> SysResult<AdoptsOrphans> {
        let mut held = ADOPTERS.lock().unwrap_or_else(|e| e.into_inner());
        if held.0 == 0 {
            let mut was: libc::c_int = 0;
            // SAFETY: prctl reading the setting into a local int.
            if unsafe { libc::prctl(libc::PR_GET_CHILD_SUBREAPER, &mut was as *mut libc::c_int) }
                != 0
            {
                return Err(SysError::last_os("prctl(PR_GET_CHILD_SUBREAPER)"));
            }
            become_subreaper()?;
            held.1 = was != 0;
        }
        held.0 += 1;
        Ok(AdoptsOrphans(()))
    }
}

impl Drop for AdoptsOrphans {
    fn drop(&mut self) {
        let mut held = ADOPTERS.lock().unwrap_or_else(|e| e.into_inner());
        held.0 -= 1;
        if held.0 == 0 && !held.1 {
            // SAFETY: prctl with integer arguments.
            unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0) };
        }
    }
}

/// Waits up to `patience` for this process's children that run as `uid` (but
/// `spawned`, the ones it started itself and waits for by pid) to exit, and
/// reaps each as it does; how many it reaped. These are the processes it
/// adopted from what it started as that user (an [`AdoptsOrphans`] held): no
/// process of oslab's own runs as another user, and a zombie child stays this
/// process's until it is reaped, so nothing else's wait can lose it.
pub fn reap_adopted(
    root: &Root,
    uid: u32,
    spawned: &[u32],
    patience: std::time::Duration,
) -> usize {
    use std::os::unix::fs::MetadataExt;
    let me = std::process::id();
    let deadline = std::time::Instant::now() + patience;
    let mut reaped = 0;
    loop {
        let adopted: Vec<(u32, char)> = crate::parse::pidstat::read_all(root)
            .into_iter()
            .filter(|(pid, s)| s.ppid == me && !spawned.contains(pid))
            .filter(|(pid, _)| {
                std::fs::metadata(root.path(&format!("/proc/{pid}"))).is_ok_and(|m| m.uid() == uid)
            })
            .map(|(pid, s)| (pid, s.state))
            .collect();
        for (pid, state) in &adopted {
            if matches!(state, 'Z' | 'X') {
                let mut status = 0;
                // SAFETY: waitpid on one exited child without blocking.
                if unsafe { libc::waitpid(*pid as libc::pid_t, &mut status, libc::WNOHANG) } > 0 {
                    reaped += 1;
                }
            }
        }
        if adopted.is_empty() || std::time::Instant::now() >= deadline {
            return reaped;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Reaps any of this process's children that have exited (waitpid WNOHANG).
pub fn reap_exited_children() {
    // SAFETY: waitpid on any child without blocking; status into a local.
    unsafe {
        let mut status = 0;
        while libc::waitpid(-1, &mut status, libc::WNOHANG) > 0 {}
    }
}

/// Raises this process's soft limit of open files to its hard limit (at most
/// `want`): the governor holds a descriptor per governed process and file. The
/// limit it ends with.
pub fn raise_open_files_limit(want: u64) -> u64 {
    // SAFETY: getrlimit/setrlimit with a valid rlimit struct.
    unsafe {
        let mut r = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) != 0 {
            return 0;
        }
        let target = want.min(r.rlim_max);
        if r.rlim_cur < target {
            let new = libc::rlimit {
                rlim_cur: target,
                rlim_max: r.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &new) == 0 {
                return target;
            }
        }
        r.rlim_cur
    }
}

/// Sends `signal` to every process of the group `pgid`.
pub fn signal_group(pgid: u32, signal: i32) -> SysResult<()> {
    // SAFETY: kill with a negative pid addresses a process group; no pointers.
    if unsafe { libc::kill(-(pgid as i32), signal) } != 0 {
        return Err(SysError::last_os("kill"));
    }
    Ok(())
}

/// Sends `signal` to one process.
pub fn signal_process(pid: u32, signal: i32) -> SysResult<()> {
    // SAFETY: no pointers.
    if unsafe { libc::kill(pid as i32, signal) } != 0 {
        return Err(SysError::last_os("kill"));
    }
    Ok(())
}

/// CPU time (user + system, ns) of this process and of its children that have been
/// waited for (getrusage RUSAGE_SELF + RUSAGE_CHILDREN).
pub fn own_and_children_cpu_ns() -> u64 {
    let ns = |who| {
        let u = usage(who);
        (u.user_us + u.system_us) * 1000
    };
    ns(libc::RUSAGE_SELF) + ns(libc::RUSAGE_CHILDREN)
}

/// Waits until child `pid` has exited without reaping it (waitid with WEXITED |
/// WNOWAIT), so its /proc entry stays readable until an ordinary wait reaps it.
/// False when interrupted by a signal (call again); true once it exited, or when
/// there is nothing to wait for (no such child).
pub fn wait_exited_unreaped(pid: u32) -> bool {
    // SAFETY: a zeroed siginfo_t for waitid to fill.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    // SAFETY: waitid on one pid with a valid siginfo_t; WNOWAIT leaves it a zombie.
    let r = unsafe {
        libc::waitid(
            libc::P_PID,
            pid as libc::id_t,
            &mut info,
            libc::WEXITED | libc::WNOWAIT,
        )
    };
    r == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_calls_answer() {
        assert!(raw_gettid() > 0);
        assert_eq!(raw_getppid(), unsafe { libc::getppid() } as i64);
    }

    /// A shell, run as `uid` where given, that starts `sleep` in the
    /// background and exits at once; the sleep's pid.
    fn orphan_a_sleep(uid: Option<u32>) -> u32 {
        let mut cmd = std::process::Command::new("sh");
        cmd.args(["-c", "sleep 5 >/dev/null 2>&1 & echo $!"]);
        if let Some(u) = uid {
            std::os::unix::process::CommandExt::uid(&mut cmd, u);
        }
        let out = cmd.output().expect("sh runs");
        String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
    }

    fn subreaper_setting() -> libc::c_int {
        let mut was: libc::c_int = -1;
        // SAFETY: prctl reading the setting into a local int.
        unsafe { libc::prctl(libc::PR_GET_CHILD_SUBREAPER, &mut was as *mut libc::c_int) };
        was
    }

    #[test]
    fn a_daemon_started_while_orphans_are_adopted_stays_a_descendant_and_is_reaped() {
        let root = Root::live();
        let me = std::process::id();
        let is_mine = |pid: u32| {
            let all = crate::parse::pidstat::read_all(&root);
            crate::parse::pidstat::descendants(&all, me)
                .iter()
                .any(|(p, _)| *p == pid)
        };
        // another user's where root can start one (a server runs as its own)
        let user = is_root().then_some(65534);
        let first = AdoptsOrphans::new().unwrap();
        let second = AdoptsOrphans::new().unwrap();
        let adopted = orphan_a_sleep(user);
        assert!(is_mine(adopted), "the orphan is this process's child");
        // held in any order: the first gone, the second still adopts
        drop(first);
        assert_eq!(subreaper_setting(), 1, "still held by the second");
        signal_process(adopted, libc::SIGKILL).unwrap();
        if let Some(uid) = user {
            let none = reap_adopted(&root, uid, &[adopted], std::time::Duration::ZERO);
            assert_eq!(none, 0, "a pid it spawned itself is left to its own wait");
            let reaped = reap_adopted(&root, uid, &[], std::time::Duration::from_secs(5));
            assert_eq!(reaped, 1, "the killed orphan is reaped");
        } else {
            // not root: the other tests' children are this user's too, and
            // reaping them would take their exit from their own waits
            eprintln!("reap_adopted not tried: it needs another user's process (root)");
            let mut status = 0;
            // SAFETY: waitpid on the one child this test orphaned and killed.
            unsafe { libc::waitpid(adopted as libc::pid_t, &mut status, 0) };
        }
        assert_eq!(
            crate::parse::pidstat::read(&root, adopted).map(|s| s.state),
            None,
            "reaped: gone from /proc"
        );
        drop(second);
        assert_eq!(subreaper_setting(), 0, "the setting is back");
        let gone = orphan_a_sleep(None);
        assert!(
            !is_mine(gone),
            "an orphan after the last drop is not adopted"
        );
        let _ = signal_process(gone, libc::SIGKILL);
    }

    #[test]
    fn own_start_time_is_known() {
        let pid = std::process::id();
        let root = Root::live();
        let st = start_time(&root, pid).expect("own stat");
        assert!(process_alive(&root, pid, st));
        assert!(!process_alive(&root, pid, st + 1));
    }
}

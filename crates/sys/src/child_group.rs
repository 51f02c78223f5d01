//! Programs oslab runs that start processes of their own (`perf bench sched pipe`
//! forks its partner). PR_SET_PDEATHSIG reaches only the program oslab started,
//! not what that program forks, so a SIGKILLed oslab would leave the grandchildren
//! running. Such a program runs in a process group of its own, and a small
//! watcher (double-forked before the exec, so it is nobody's child but init's or
//! a subreaper's) waits on pidfds of oslab and of the program and kills the whole
//! group when either ends, however it ends (an exec that failed included); oslab
//! also kills the group once the program has ended.

use std::os::unix::process::CommandExt;
use std::process::{Command, Output};

/// Runs `cmd` (a child of oslab with the default signal mask, killed with its
/// whole process group when oslab dies) and returns its output (standard output
/// captured, standard error as `cmd` sets it, not returned); whatever it left running in its
/// group afterwards is killed too.
pub fn output(cmd: &mut Command) -> std::io::Result<Output> {
    let parent = std::process::id() as i32;
    // SAFETY: the closure makes raw system calls only (see watch_parent); the
    // child is single-threaded, and its fork runs no atfork handler of ours.
    unsafe {
        cmd.pre_exec(move || {
            crate::signals::unblock_in_child();
            crate::process::die_with_parent(parent, libc::SIGKILL);
            if libc::setpgid(0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            watch_parent(parent);
            Ok(())
        });
    }
    let mut child = cmd
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .spawn()?;
    let group = child.id();
    // read while it runs (a full pipe would stop it), and stop reading when the
    // group is gone: a process it left behind may hold the pipe open
    let mut stdout = child.stdout.take();
    let reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(s) = stdout.as_mut() {
            let _ = std::io::Read::read_to_end(s, &mut buf);
        }
        buf
    });
    let status = child.wait();
    let _ = crate::process::signal_group(group, libc::SIGKILL);
    let stdout = reader.join().unwrap_or_default();
    Ok(Output {
        status: status?,
        stdout,
        stderr: Vec::new(),
    })
}

/// In the child before exec (single-threaded, raw system calls only): starts the
/// watcher of `parent` and of this process. Without pidfds (before Linux 5.3)
/// there is none, and only the program itself dies with oslab.
fn watch_parent(parent: i32) {
    // SAFETY: raw system calls with integer arguments; the forked processes never
    // return into Rust code that could allocate or take locks.
    unsafe {
        let group = libc::getpid();
        let of_parent = libc::syscall(libc::SYS_pidfd_open, parent, 0) as i32;
        if of_parent < 0 {
            return;
        }
        if libc::getppid() != parent {
            // oslab died before the pidfd was taken: it may name another process
            libc::_exit(1);
        }
        let of_program = libc::syscall(libc::SYS_pidfd_open, group, 0) as i32;
        if of_program < 0 {
            libc::close(of_parent);
            return;
        }
        let middle = libc::fork();
        if middle == 0 {
            if libc::fork() == 0 {
                wait_and_kill([of_parent, of_program], group);
            }
            libc::_exit(0);
        }
        libc::close(of_parent);
        libc::close(of_program);
        if middle > 0 {
            let mut status = 0;
            libc::waitpid(middle, &mut status, 0);
        }
    }
}

/// Closes every descriptor but `keep`: close_range (Linux 5.9) where it works,
/// else one by one up to the open-files limit.
unsafe fn close_all_but(keep: [i32; 2]) {
    let (low, high) = (keep[0].min(keep[1]), keep[0].max(keep[1]));
    let range = |from: i32, to: u32| -> bool {
        // SAFETY: closes descriptors of this process only.
        from as u32 > to || unsafe { libc::syscall(libc::SYS_close_range, from as u32, to, 0) } == 0
    };
    let all_closed = (low == 0 || range(0, (low - 1) as u32))
        && range(low + 1, (high - 1) as u32)
        && range(high + 1, u32::MAX);
    if !all_closed {
        // SAFETY: as above.
        unsafe { close_one_by_one(keep) };
    }
}

unsafe fn close_one_by_one(keep: [i32; 2]) {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit fills the struct; close on this process's descriptors.
    unsafe {
        let top = if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 {
            limit.rlim_cur.min(1 << 20) as i32
        } else {
            1024
        };
        for fd in 0..top {
            if !keep.contains(&fd) {
                libc::close(fd);
            }
        }
    }
}

/// The watcher: holds nothing of the program's or oslab's (their pipes would
/// otherwise stay open: std's exec-error pipe, the output pipes), waits until
/// either process of `pidfds` ends, kills `group`, itself included.
unsafe fn wait_and_kill(pidfds: [i32; 2], group: i32) -> ! {
    // SAFETY: raw system calls on descriptors and pids this process owns.
    unsafe {
        close_all_but(pidfds);
        libc::chdir(c"/".as_ptr());
        let mut p = pidfds.map(|fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        });
        while libc::poll(p.as_mut_ptr(), 2, -1) < 0 {}
        libc::kill(-group, libc::SIGKILL);
        libc::_exit(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_output_comes_back_and_nothing_of_the_group_outlives_it() {
        let mut cmd = Command::new("sh");
        // the sleep holds no pipe of ours: only the group's kill ends it
        cmd.args(["-c", "sleep 30 >/dev/null 2>&1 & echo started $!"]);
        let out = output(&mut cmd).unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        let pid: i32 = text
            .trim()
            .strip_prefix("started ")
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("unexpected output {text:?}"));
        // the background sleep was in the group oslab killed
        assert!(gone(pid), "the forked sleep {pid} survived its group");
    }

    #[test]
    fn a_program_that_cannot_start_leaves_no_watcher() {
        let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let before = watchers();
        let mut cmd = Command::new("/nonexistent/oslab-test-program");
        assert!(output(&mut cmd).is_err());
        // the watcher saw the failed child end and killed its group, itself too
        let settled = (0..300).any(|_| {
            std::thread::sleep(std::time::Duration::from_millis(10));
            watchers() <= before
        });
        assert!(settled, "a watcher outlived a program that never ran");
    }

    /// Processes of this test binary (the watchers are forks of it) that are
    /// not zombies, besides the binary itself.
    fn watchers() -> usize {
        let me = std::fs::read_link("/proc/self/exe").unwrap();
        let own = std::process::id().to_string();
        std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter(|e| {
                e.file_name()
                    .to_string_lossy()
                    .chars()
                    .all(|c| c.is_ascii_digit())
            })
            .filter(|e| e.file_name().to_string_lossy() != own)
            .filter(|e| std::fs::read_link(e.path().join("exe")).is_ok_and(|x| x == me))
            .filter(|e| {
                std::fs::read_to_string(e.path().join("stat")).is_ok_and(|s| !s.contains(") Z "))
            })
            .count()
    }

    fn gone(pid: i32) -> bool {
        (0..300).any(|_| {
            std::thread::sleep(std::time::Duration::from_millis(10));
            // SAFETY: signal 0 only checks for existence.
            let absent = unsafe { libc::kill(pid, 0) != 0 };
            absent
                || std::fs::read_to_string(format!("/proc/{pid}/stat"))
                    .is_ok_and(|s| s.contains(") Z "))
        })
    }

    /// The tests that start processes of this binary run one at a time: one
    /// counts the others' processes.
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

    const AS_OSLAB: &str = "OSLAB_CHILD_GROUP_TEST_AS_OSLAB";

    /// Run as a process of its own by the test below: stands for oslab running a
    /// program that forks, and is SIGKILLed while it waits.
    #[test]
    fn stand_in_for_a_killed_oslab() {
        if std::env::var_os(AS_OSLAB).is_none() {
            return;
        }
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "sleep 60 & echo $! >&2; wait"]);
        cmd.stderr(std::process::Stdio::inherit());
        let _ = output(&mut cmd);
    }

    #[test]
    fn a_killed_oslab_takes_the_programs_children_with_it() {
        use std::io::BufRead;
        let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let mut stand_in = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "child_group::tests::stand_in_for_a_killed_oslab"])
            .args(["--nocapture", "--test-threads=1"])
            .env(AS_OSLAB, "1")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufReader::new(stand_in.stderr.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let pid: i32 = line.trim().parse().expect("the sleep's pid");
        stand_in.kill().unwrap();
        stand_in.wait().unwrap();
        assert!(gone(pid), "the sleep {pid} outlived the killed oslab");
    }
}

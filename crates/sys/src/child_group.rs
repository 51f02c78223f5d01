//! Programs oslab runs that start processes of their own (`perf bench sched pipe`
//! forks its partner). PR_SET_PDEATHSIG reaches only the program oslab started,
//! not what that program forks, so a SIGKILLed oslab would leave the grandchildren
//! running. Such a program runs in a process group of its own, and a small
//! watcher (double-forked before the exec, so it is nobody's child but init's or
//! a subreaper's) waits on a pidfd of oslab and kills the whole group when oslab
//! dies, however it dies. When the program ends normally, oslab kills the group
//! itself, the watcher with it.

use std::os::unix::process::CommandExt;
use std::process::{Command, Output};

/// Runs `cmd` (a child of oslab with the default signal mask, killed with its
/// whole process group when oslab dies) and returns its output (standard output
/// captured, standard error as `cmd` sets it, not returned); whatever it left running in its
/// group afterwards is killed too.
pub fn output(cmd: &mut Command) -> std::io::Result<Output> {
    let parent = std::process::id() as i32;
    // SAFETY: the closure makes only async-signal-safe calls (see watch_parent).
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
    let mut child = cmd.stdout(std::process::Stdio::piped()).spawn()?;
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
/// watcher of `parent`. Without pidfds (before Linux 5.3) there is none, and only
/// the program itself dies with oslab.
fn watch_parent(parent: i32) {
    // SAFETY: raw system calls with integer arguments; the forked processes never
    // return into Rust code that could allocate or take locks.
    unsafe {
        let pidfd = libc::syscall(libc::SYS_pidfd_open, parent, 0) as i32;
        if pidfd < 0 {
            return;
        }
        if libc::getppid() != parent {
            // oslab died before the pidfd was taken: it may name another process
            libc::_exit(1);
        }
        let group = libc::getpid();
        let middle = libc::fork();
        if middle == 0 {
            if libc::fork() == 0 {
                wait_and_kill(pidfd, group);
            }
            libc::_exit(0);
        }
        libc::close(pidfd);
        if middle > 0 {
            let mut status = 0;
            libc::waitpid(middle, &mut status, 0);
        }
    }
}

/// The watcher: holds nothing of the program's (its output pipes would otherwise
/// stay open), waits for `pidfd`'s process to end, kills `group`, itself included.
unsafe fn wait_and_kill(pidfd: i32, group: i32) -> ! {
    // SAFETY: raw system calls on descriptors and pids this process owns.
    unsafe {
        for fd in 0..pidfd {
            libc::close(fd);
        }
        libc::syscall(libc::SYS_close_range, pidfd + 1, u32::MAX, 0);
        let mut p = libc::pollfd {
            fd: pidfd,
            events: libc::POLLIN,
            revents: 0,
        };
        while libc::poll(&mut p, 1, -1) < 0 {}
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
        cmd.args(["-c", "sleep 30 & echo started $!"]);
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

//! A process the governor placed in its group's cgroup goes back to the cgroup
//! it came from when the groups go, and a process born inside the group to the
//! one its placed parent came from; once that has begun nothing more is placed.
//! Live on this host's memory cgroup (v1 here); on cgroup v2 the systemd guest
//! (crates/oslab/tests/systemd_guest.rs) plays it under a real systemd.

// The test tells one scenario, from placing to the groups' removal: longer than
// 80 lines.
#![allow(clippy::too_many_lines)]

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use oslab_sys::fsread::Root;
use oslab_sys::parse::memcg::{self, Version};
use oslab_wcall::cgroups::{CgroupLimits, GroupCgroups};
use oslab_wcall::shm::NORMAL;

fn cgroup_of(pid: u32, version: Version) -> Option<PathBuf> {
    memcg::cgroup_dirs(&Root::live(), &pid.to_string())
        .into_iter()
        .find_map(|(v, d)| (v == version).then_some(d))
}

/// Waits (a few seconds at most) until `pid` is in `dir`.
fn lands_in(pid: u32, version: Version, dir: &Path) -> bool {
    let end = Instant::now() + Duration::from_secs(5);
    while Instant::now() < end {
        if cgroup_of(pid, version).as_deref() == Some(dir) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    false
}

/// Ends the test's processes and removes its origin cgroup, whatever happened.
struct Cleanup {
    children: Vec<Child>,
    pids: Vec<u32>,
    origin: PathBuf,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        for pid in &self.pids {
            // SAFETY: a signal to a process this test started.
            unsafe { libc::kill(*pid as i32, libc::SIGKILL) };
        }
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
        for _ in 0..100 {
            if std::fs::remove_dir(&self.origin).is_ok() || !self.origin.exists() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

#[test]
fn a_placed_process_goes_back_where_it_came_from_when_the_governor_stops() {
    if !oslab_sys::process::is_root() {
        eprintln!("skipped: moving processes between cgroups needs root");
        return;
    }
    let Some((Version::V1, own)) = memcg::own_cgroup(&Root::live()) else {
        eprintln!(
            "skipped: no v1 memory cgroup here (on cgroup v2, tests/systemd_guest.rs plays this)"
        );
        return;
    };
    let mount = memcg::read_memory_mounts(&Root::live())
        .and_then(|(v1, _)| v1)
        .expect("the v1 memory mount");
    let journal = tempfile::tempdir().unwrap();
    // SAFETY: this test binary has this one test, so no other thread reads the
    // environment while it is set.
    unsafe { std::env::set_var("OSLAB_JOURNAL_DIR", journal.path()) };
    let me = std::process::id();
    // where the program runs before it is governed: not the governor's own
    // cgroup, where stragglers used to go
    let origin = own.join(format!("oslab-test-origin-{me}"));
    std::fs::create_dir(&origin).unwrap();
    let mut cleanup = Cleanup {
        children: Vec::new(),
        pids: Vec::new(),
        origin: origin.clone(),
    };
    // a shell that, once placed, starts a child (born in the group) on a line
    let mut sh = Command::new("sh")
        .args(["-c", "read go; sleep 60 & echo $!; wait"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let parent = sh.id();
    let mut to_sh = sh.stdin.take().unwrap();
    let mut from_sh = BufReader::new(sh.stdout.take().unwrap());
    cleanup.children.push(sh);
    std::fs::write(origin.join("cgroup.procs"), parent.to_string()).unwrap();
    assert!(lands_in(parent, Version::V1, &origin));

    let groups = GroupCgroups::create_at(
        Version::V1,
        &mount,
        &own,
        &own,
        me,
        &CgroupLimits::default(),
    )
    .unwrap();
    let normal = groups.dir(NORMAL as usize);
    groups.place(parent, NORMAL as usize);
    assert!(lands_in(parent, Version::V1, &normal), "placed");
    writeln!(to_sh, "go").unwrap();
    let mut line = String::new();
    from_sh.read_line(&mut line).unwrap();
    let child: u32 = line.trim().parse().unwrap();
    cleanup.pids.push(child);
    assert!(lands_in(child, Version::V1, &normal), "born in the group");

    let lines = (groups.returner())();
    for pid in [parent, child] {
        assert_eq!(
            cgroup_of(pid, Version::V1).as_deref(),
            Some(origin.as_path()),
            "{pid} went back where its line came from, not to the governor's cgroup: {lines:?}"
        );
        assert!(
            lines.contains(&format!("process {pid} moved back to {}", origin.display())),
            "{lines:?}"
        );
    }
    // once they went back, nothing is placed again: a move still queued (a
    // coordinator's pass racing the stop) cannot take them back in
    groups.place(parent, NORMAL as usize);
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(
        cgroup_of(parent, Version::V1).as_deref(),
        Some(origin.as_path())
    );
    let base = groups.base().to_path_buf();
    drop(groups);
    assert!(!base.exists(), "the groups are removed");
    assert!(
        common::no_journal_in(journal.path()),
        "no journal left behind"
    );
    drop(cleanup);
    assert!(!origin.exists(), "the test's own cgroup is gone");
}

//! The coordinator against a table written by a hostile governed process: pids that
//! are not governed processes, numbers out of range and file slots that name what
//! the writer does not hold open for writing are neither counted, nor placed in a
//! cgroup, nor opened. The cgroups are a directory tree laid out like cgroupfs (as
//! in `cgroup_controls.rs`), so what would have been moved where is plain to read.

use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;
use std::sync::atomic::Ordering;

use oslab_sys::clock::monotonic_ns;
use oslab_sys::memcg::Version;
use oslab_wbsim::policy::Policy;
use oslab_wcall::cgroups::{CgroupLimits, GroupCgroups};
use oslab_wcall::coordinator::{Coordinator, WCALL_BLOCK_NS};
use oslab_wcall::shm::{FILE_FREE, FILE_READY, Mapped, NORMAL, RT_HIGH, Table};

fn procs_in(dir: &Path) -> Vec<u32> {
    std::fs::read_to_string(dir.join("cgroup.procs"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

fn claim_proc(t: &Table, pid: u32, group: u32) {
    let i = t.claim_proc(pid, group).unwrap();
    t.procs[i].group.store(group, Ordering::Relaxed);
    t.procs[i]
        .last_write_ns
        .store(monotonic_ns(), Ordering::Relaxed);
}

/// Registers `file` as written by `pid` through descriptor `fd`; the slot index.
fn claim_file(t: &Table, pid: u32, fd: u32, file: &File) -> usize {
    let m = file.metadata().unwrap();
    assert!(t.register_file(m.dev(), m.ino(), NORMAL, pid, fd));
    t.files
        .iter()
        .position(|f| {
            f.state.load(Ordering::Relaxed) == FILE_READY
                && f.dev.load(Ordering::Relaxed) == m.dev()
                && f.ino.load(Ordering::Relaxed) == m.ino()
        })
        .unwrap()
}

#[test]
fn a_hostile_table_gets_nothing_counted_moved_or_opened() {
    let journal = tempfile::tempdir().unwrap();
    // SAFETY: this test binary has this one test, so no other thread reads the
    // environment while it is set.
    unsafe { std::env::set_var("OSLAB_JOURNAL_DIR", journal.path()) };
    let tree = tempfile::tempdir().unwrap();
    let me = std::process::id();
    let groups = GroupCgroups::create_at(
        Version::V1,
        tree.path(),
        tree.path(),
        me,
        &CgroupLimits::default(),
    )
    .unwrap();
    let (rt_high_dir, normal_dir) = (groups.dir(0), groups.dir(2));

    let (map, memfd) = Mapped::create_memfd("test").unwrap();
    // the hostile writer's view, opened as a governed program opens it
    let view = Mapped::open(Path::new(&format!("/proc/self/fd/{}", memfd.as_raw_fd()))).unwrap();
    let t = view.table();
    let mut c = Coordinator::new(map, Policy::WcallFair, WCALL_BLOCK_NS);
    c.use_cgroups(groups);

    // a process that is not governed: it never mapped the table
    let dir = tempfile::tempdir().unwrap();
    let victim_out = File::create(dir.path().join("victim-out")).unwrap();
    let mut victim = std::process::Command::new("sleep")
        .arg("30")
        .stdout(victim_out.try_clone().unwrap())
        .spawn()
        .unwrap();
    claim_proc(t, victim.id(), RT_HIGH);
    // pids that are none: kill(-1, 0) would answer for every process
    claim_proc(t, u32::MAX, RT_HIGH);
    claim_proc(t, 0x8000_0000, RT_HIGH);
    // this process maps the table, so it is governed; its group is out of range
    claim_proc(t, me, 77);
    // the victim's stdout, a regular file it writes, claimed with the victim's pid
    let victim_file = claim_file(t, victim.id(), 1, &victim_out);
    // a FIFO with no writer, which an open for reading would wait on for ever
    let fifo = dir.path().join("fifo");
    let cpath = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(cpath.as_ptr(), 0o600) }, 0);
    let reader = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(&fifo)
        .unwrap();
    let fifo_slot = claim_file(t, me, reader.as_raw_fd() as u32, &reader);
    // a file this process only names (O_PATH): no right to write it
    let secret = dir.path().join("secret");
    std::fs::write(&secret, b"s").unwrap();
    let named = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_PATH)
        .open(&secret)
        .unwrap();
    let named_slot = claim_file(t, me, named.as_raw_fd() as u32, &named);
    // the one honest file
    let mut data = File::create(dir.path().join("data")).unwrap();
    std::io::Write::write_all(&mut data, &[1u8; 65536]).unwrap();
    let data_slot = claim_file(t, me, data.as_raw_fd() as u32, &data);
    // counters near the top: sums must not wrap (or panic)
    t.groups[NORMAL as usize]
        .pending_bytes
        .store(u64::MAX, Ordering::Relaxed);

    let states = c.tick();
    let states2 = c.tick();

    assert_eq!(
        states[RT_HIGH as usize].tasks, 0,
        "no fake pid is an rt-high task"
    );
    assert_eq!(
        states[NORMAL as usize].tasks, 1,
        "this process, group 77 as normal"
    );
    assert_eq!(states2[RT_HIGH as usize].tasks, 0);
    // the coordinator hands cgroup moves to its placer thread (a move waits for an
    // RCU grace period): wait for the one honest move to land
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while procs_in(&normal_dir).is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert_eq!(procs_in(&rt_high_dir), Vec::<u32>::new(), "nothing moved");
    assert_eq!(
        procs_in(&normal_dir),
        vec![me],
        "only the governed process moved"
    );
    for (slot, what) in [
        (victim_file, "the victim's file"),
        (fifo_slot, "a FIFO"),
        (named_slot, "an O_PATH name"),
    ] {
        assert_eq!(
            t.files[slot].state.load(Ordering::Relaxed),
            FILE_FREE,
            "{what} was not refused"
        );
    }
    assert_eq!(t.files[data_slot].state.load(Ordering::Relaxed), FILE_READY);
    // the victim, the victim's file, the FIFO and the O_PATH name
    assert!(t.header.refused.load(Ordering::Relaxed) >= 4);
    assert_eq!(t.header.passes.load(Ordering::Relaxed), 2);

    victim.kill().unwrap();
    victim.wait().unwrap();
    // the fake tree's files are plain files: empty it so the cgroups can go
    for d in [&rt_high_dir, &normal_dir] {
        let _ = std::fs::remove_file(d.join("cgroup.procs"));
    }
    c.stop();
    drop(c);
    let _ = std::fs::remove_file(tree.path().join("cgroup.procs"));
}

//! The coordinator against a governed process of another user that writes lies
//! into its own table: file slots that name what it does not hold open for
//! writing, counters at the top of their range, and a claim of writing it never
//! did. None of it is opened, counted as a task or shown beyond what the kernel
//! counted, and the process, which joined on its own, is not moved out of its
//! cgroup; an honest process of the coordinator's own user is. The cgroups are a directory tree laid
//! out like cgroupfs (as in `cgroup_controls.rs`), so what would have been moved
//! where is plain to read.

// A test here tells one scenario from start to end: longer than 80 lines.
#![allow(clippy::too_many_lines)]

use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::os::unix::process::CommandExt;
use std::process::Stdio;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use oslab_sys::clock::monotonic_ns;
use oslab_sys::parse::memcg::Version;
use oslab_wbsim::policy::Policy;
use oslab_wcall::admission::{Granted, Peer, admit};
use oslab_wcall::cgroups::{CgroupLimits, GroupCgroups};
use oslab_wcall::coordinator::{Coordinator, WCALL_BLOCK_NS};
use oslab_wcall::placer::procs_of;
use oslab_wcall::registry::Registry;
use oslab_wcall::shm::own::{FILE_FREE, FILE_READY};
use oslab_wcall::shm::wire::{Ask, Request};
use oslab_wcall::shm::{BoardMap, NORMAL, Own, OwnMap, RT_HIGH};

/// Writes a file slot claiming that the process writes `file` through `fd`.
fn claim_file(own: &Own, slot: usize, fd: u32, file: &File) {
    let m = file.metadata().unwrap();
    let f = &own.files[slot];
    f.fd.store(fd, Ordering::Relaxed);
    f.dev.store(m.dev(), Ordering::Relaxed);
    f.ino.store(m.ino(), Ordering::Relaxed);
    f.state.store(FILE_READY, Ordering::Release);
}

#[test]
fn a_lying_process_table_gets_nothing_counted_moved_or_opened() {
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
        tree.path(),
        me,
        &CgroupLimits::default(),
    )
    .unwrap();
    let (rt_high_dir, normal_dir) = (groups.dir(0), groups.dir(2));
    let board = Arc::new(BoardMap::create("test", 2).unwrap());
    let registry = Arc::new(Mutex::new(Registry::new(oslab_sys::process::uid())));
    let mut c = Coordinator::new(
        board.clone(),
        registry.clone(),
        Policy::WcallFair,
        WCALL_BLOCK_NS,
    );
    c.use_cgroups(groups);

    let dir = tempfile::tempdir().unwrap();
    // a bystander that never joined, writing its own file
    let victim_out = File::create(dir.path().join("victim-out")).unwrap();
    let mut victim = std::process::Command::new("sleep")
        .arg("30")
        .stdout(victim_out.try_clone().unwrap())
        .spawn()
        .unwrap();
    // the governed process: stdin a FIFO it only reads (an open for reading would
    // wait for ever without a writer), stdout the one file it writes, stderr a
    // name it may not even read (O_PATH)
    let fifo = dir.path().join("fifo");
    let cpath = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(cpath.as_ptr(), 0o600) }, 0);
    let reader = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(&fifo)
        .unwrap();
    let secret = dir.path().join("secret");
    std::fs::write(&secret, b"s").unwrap();
    let named = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_PATH)
        .open(&secret)
        .unwrap();
    let mut data = File::create(dir.path().join("data")).unwrap();
    std::io::Write::write_all(&mut data, &[1u8; 65536]).unwrap();
    // as root, the liar runs as nobody (65534), like a server that dropped root
    let root = oslab_sys::process::is_root();
    let liar_uid = if root {
        65534
    } else {
        oslab_sys::process::uid()
    };
    if !root {
        eprintln!(
            "not root: the liar runs as this user, so its figures are taken at its word and not checked here"
        );
    }
    let mut liar_cmd = std::process::Command::new("sleep");
    liar_cmd
        .arg("30")
        .stdin(Stdio::from(reader.try_clone().unwrap()))
        .stdout(data.try_clone().unwrap())
        .stderr(Stdio::from(named.try_clone().unwrap()));
    if root {
        liar_cmd.uid(liar_uid).gid(65534);
    }
    let mut member = liar_cmd.spawn().unwrap();
    let mut honest = std::process::Command::new("sleep")
        .arg("30")
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let honest_peer = Peer {
        pid: honest.id(),
        uid: oslab_sys::process::uid(),
        pidfd: None,
    };
    // it asks for no group (a process of root's asking for rt-high gets it since
    // joiners' requests count: `Lineage::of_joiner`), so its scheduling decides
    let req_honest = Request {
        ask: Ask::Member,
        group: oslab_wcall::shm::AUTO,
        pid: 0,
    };
    assert!(matches!(
        admit(honest_peer, &req_honest, &board, &registry),
        Ok(Granted::Member { .. })
    ));
    let peer = Peer {
        pid: member.id(),
        uid: liar_uid,
        pidfd: None,
    };
    let req = Request {
        ask: Ask::Member,
        // asking for rt-high changes nothing: a member's group is not its to ask
        group: RT_HIGH,
        pid: victim.id(),
    };
    let Granted::Member { index, group, own } = admit(peer, &req, &board, &registry).unwrap()
    else {
        panic!("not admitted")
    };
    assert_eq!(group, NORMAL, "`sleep` runs SCHED_OTHER");
    let own = OwnMap::open(own.as_raw_fd()).unwrap();
    let o = own.own();
    claim_file(o, 0, 1, &victim_out); // its stdout, but the victim's file
    claim_file(o, 1, 0, &reader); // a FIFO
    claim_file(o, 2, 2, &named); // an O_PATH name
    claim_file(o, 3, u32::MAX, &data); // no such descriptor
    claim_file(o, 4, 1, &data); // the one honest claim
    // counters at the top, and a claim of writing now that the kernel never saw
    for x in [&o.header.writes, &o.header.bytes, &o.header.delayed_writes] {
        x.store(u64::MAX, Ordering::Relaxed);
    }
    o.header.held_ns.store(u64::MAX, Ordering::Relaxed);
    o.header
        .last_write_ns
        .store(monotonic_ns(), Ordering::Relaxed);

    let states = c.tick();
    let states2 = c.tick();
    assert_eq!(states[RT_HIGH as usize].tasks, 0);
    assert_eq!(
        states[NORMAL as usize].tasks + states2[NORMAL as usize].tasks,
        0,
        "the kernel saw no write of it: no task"
    );
    // the coordinator hands cgroup moves to its placer thread (a move waits for an
    // RCU grace period): wait for the honest move to land
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while procs_of(&normal_dir).is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert_eq!(
        procs_of(&rt_high_dir),
        Vec::<u32>::new(),
        "nothing moved there"
    );
    let moved = procs_of(&normal_dir);
    assert!(moved.contains(&honest.id()), "{moved:?}");
    assert!(
        !moved.contains(&victim.id()) && !moved.contains(&me),
        "{moved:?}"
    );
    if root {
        assert!(
            !moved.contains(&member.id()),
            "another user's process that joined on its own stays in its cgroup"
        );
    }
    for (slot, what) in [
        (0, "the victim's file"),
        (1, "a FIFO"),
        (2, "an O_PATH name"),
        (3, "a descriptor number out of range"),
    ] {
        assert_eq!(
            o.files[slot].state.load(Ordering::Relaxed),
            FILE_FREE,
            "{what} was not refused"
        );
    }
    assert_eq!(o.files[4].state.load(Ordering::Relaxed), FILE_READY);
    assert!(board.board().header.refused.load(Ordering::Relaxed) >= 4);
    let shown = &board.board().members[index as usize];
    assert_eq!(shown.pid.load(Ordering::Relaxed), member.id());
    assert_eq!(shown.uid.load(Ordering::Relaxed), liar_uid);
    assert!(shown.held_ns.load(Ordering::Relaxed) < 60_000_000_000);
    let snap = oslab_wcall::view::snapshot_of(board.board(), monotonic_ns(), me);
    assert_eq!(snap.processes.len(), 2);
    if root {
        assert_eq!(
            shown.writes.load(Ordering::Relaxed),
            0,
            "no more than the kernel counted"
        );
        assert_eq!(shown.bytes.load(Ordering::Relaxed), 0);
        assert_eq!(shown.delayed_writes.load(Ordering::Relaxed), 0);
        assert!(snap.groups.iter().all(|g| g.writes == 0));
    }

    for p in [&mut victim, &mut member, &mut honest] {
        p.kill().unwrap();
        p.wait().unwrap();
    }
    c.tick();
    assert!(
        oslab_wcall::view::snapshot_of(board.board(), monotonic_ns(), me)
            .processes
            .is_empty()
    );
    // the fake tree's files are plain files: empty it so the cgroups can go
    for d in [&rt_high_dir, &normal_dir] {
        let _ = std::fs::remove_file(d.join("cgroup.procs"));
    }
    c.stop();
    drop(c);
    let _ = std::fs::remove_file(tree.path().join("cgroup.procs"));
}

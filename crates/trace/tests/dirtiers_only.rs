//! The governor's monitor (`dirtiers_only`) puts two programs on the kernel's
//! path, on writeback_dirty_folio and block_bio_queue (its durable writes), and
//! still names who dirtied which file; the
//! full write-back tracer puts programs on every system call and context switch
//! of the machine. Root only; one test in its own binary, so no other tracer of
//! this process is counted.

use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::time::{Duration, Instant};

use oslab_trace::records::Event;
use oslab_trace::{Tracer, Watch, WritebackOptions};

/// This process's descriptors of loaded BPF programs and of their attachments.
fn bpf_objects() -> (usize, usize) {
    let (mut progs, mut links) = (0, 0);
    for e in std::fs::read_dir("/proc/self/fd").unwrap().flatten() {
        match std::fs::read_link(e.path()).map(|p| p.to_string_lossy().into_owned()) {
            Ok(l) if l == "anon_inode:bpf-prog" => progs += 1,
            Ok(l) if l == "anon_inode:bpf_link" => links += 1,
            _ => {}
        }
    }
    (progs, links)
}

#[test]
fn the_monitor_traces_dirtied_files_with_one_program_and_nothing_on_system_calls() {
    if let Err(why) = oslab_trace::available() {
        eprintln!("skipped: kernel tracing is not available ({why})");
        return;
    }
    assert_eq!(bpf_objects(), (0, 0), "no tracer runs before the test's");
    let full = Tracer::writeback(&WritebackOptions::default()).expect("the full tracer loads");
    let (full_progs, full_links) = bpf_objects();
    drop(full.stop());
    assert!(
        full_links > 1 && full_progs > 1,
        "the full tracer follows system calls and switches: {full_progs} programs, {full_links} links"
    );

    let monitor = Tracer::writeback(&WritebackOptions {
        watch: Watch::Pids(Vec::new()),
        per_file: true,
        dirtiers_only: true,
        ..WritebackOptions::default()
    })
    .expect("the monitor's program loads");
    assert_eq!(
        bpf_objects(),
        (2, 2),
        "two programs, on writeback_dirty_folio and block_bio_queue"
    );

    // not the temporary folder: on tmpfs pages are dirtied without write-back
    // accounting, so writeback_dirty_folio never fires there
    let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("oslab-dirtiers-only-{}", std::process::id()));
    let mut f = std::fs::File::create(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    f.write_all(&vec![7u8; 64 * 1024]).unwrap();
    let ino = f.metadata().unwrap().ino();
    let me = std::process::id();
    let start = Instant::now();
    let mut seen = false;
    while !seen && start.elapsed() < Duration::from_secs(10) {
        seen = monitor
            .drain()
            .iter()
            .any(|e| matches!(e, Event::File(d) if d.tgid == me && d.ino == ino));
        std::thread::sleep(Duration::from_millis(20));
    }
    let (_, snapshot) = monitor.stop();
    assert!(seen, "the monitor named this process dirtying its file");
    let pages = snapshot
        .dirtiers
        .iter()
        .find(|d| d.tgid == me)
        .map_or(0, |d| d.pages);
    assert!(
        pages >= 16,
        "64 KiB dirtied is 16 pages or more, counted {pages}"
    );
    assert_eq!(bpf_objects(), (0, 0), "stopping detaches everything");
}

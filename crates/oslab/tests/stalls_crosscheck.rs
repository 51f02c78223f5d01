//! `oslab stalls`'s count of balance_dirty_pages decisions against a second,
//! independent reading of the same tracepoint: a perf counter the test opens
//! itself (perf_event_open, PERF_TYPE_TRACEPOINT, on every CPU), counting while
//! two writers are throttled on the testbed. The tracepoint's id is read from a
//! tracefs mounted for a moment in a scratch folder. Root only; skips itself
//! otherwise, or without kernel tracing.

// A test here tells one scenario from start to end: longer than 80 lines.
#![allow(clippy::too_many_lines)]

mod common;

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::Path;
use std::process::{Command, Stdio};

use common::{Testbed, oslab_journaled as oslab};
use serde_json::Value;

/// The tracepoint's id from a tracefs mounted in `dir` (unmounted before
/// returning).
fn tracepoint_id(dir: &Path) -> Result<u64, String> {
    let ok = Command::new("mount")
        .args(["-t", "tracefs", "nodev"])
        .arg(dir)
        .status()
        .map_err(|e| e.to_string())?;
    if !ok.success() {
        return Err("tracefs cannot be mounted".into());
    }
    let id = std::fs::read_to_string(dir.join("events/writeback/balance_dirty_pages/id"));
    let _ = Command::new("umount").arg(dir).status();
    id.map_err(|e| e.to_string())?
        .trim()
        .parse()
        .map_err(|e| format!("{e}"))
}

/// A disabled counter of tracepoint `id` on `cpu`, every task.
fn counter(id: u64, cpu: i32) -> OwnedFd {
    // struct perf_event_attr, PERF_ATTR_SIZE_VER0 (64 bytes): type, size,
    // config, then the flags word at byte 40 (bit 0: disabled).
    let mut attr = [0u8; 64];
    attr[0..4].copy_from_slice(&2u32.to_ne_bytes()); // PERF_TYPE_TRACEPOINT
    attr[4..8].copy_from_slice(&64u32.to_ne_bytes());
    attr[8..16].copy_from_slice(&id.to_ne_bytes());
    attr[40..48].copy_from_slice(&1u64.to_ne_bytes());
    // SAFETY: attr is a valid perf_event_attr of the size it states.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            attr.as_ptr(),
            -1i32,
            cpu,
            -1i32,
            0u64,
        )
    };
    assert!(
        fd >= 0,
        "perf_event_open on cpu {cpu}: {}",
        std::io::Error::last_os_error()
    );
    // SAFETY: a new descriptor this test owns.
    unsafe { OwnedFd::from_raw_fd(fd as i32) }
}

/// The CPUs of a list like "0-3,8".
fn cpu_list(text: &str) -> Vec<i32> {
    text.trim()
        .split(',')
        .filter(|p| !p.is_empty())
        .flat_map(|p| {
            let (a, b) = p.split_once('-').unwrap_or((p, p));
            a.parse::<i32>().unwrap()..=b.parse::<i32>().unwrap()
        })
        .collect()
}

fn switch(fds: &[OwnedFd], on: bool) {
    // PERF_EVENT_IOC_ENABLE / _DISABLE
    let request = if on { 0x2400 } else { 0x2401 };
    for fd in fds {
        // SAFETY: fd is an open perf event.
        assert_eq!(unsafe { libc::ioctl(fd.as_raw_fd(), request, 0) }, 0);
    }
}

fn count(fds: &[OwnedFd]) -> u64 {
    fds.iter()
        .map(|fd| {
            let mut v = 0u64;
            // SAFETY: reads 8 bytes into v.
            let n = unsafe { libc::read(fd.as_raw_fd(), (&mut v as *mut u64).cast(), 8) };
            assert_eq!(n, 8);
            v
        })
        .sum()
}

#[test]
fn throttling_decisions_agree_with_a_perf_counter_of_the_tracepoint() {
    let journal = common::journal_dir("stalls-crosscheck");
    if let Err(why) = common::stalls_tracing_here(&journal) {
        eprintln!("skipped: kernel tracing is not available ({why})");
        return;
    }
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let mnt = dir.path().join("tracefs");
    std::fs::create_dir(&mnt).unwrap();
    let id = match tracepoint_id(&mnt) {
        Ok(id) => id,
        Err(why) => {
            eprintln!("skipped: the tracepoint's id cannot be read ({why})");
            return;
        }
    };
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
    let fds: Vec<OwnedFd> = cpu_list(&online)
        .into_iter()
        .map(|c| counter(id, c))
        .collect();
    assert!(!fds.is_empty(), "no CPU online in {online:?}");

    let bed = Testbed::up(&journal, dir.path(), "20MiB/s");
    let out = dir.path().join("stalls.jsonl");
    let err = dir.path().join("stalls.err");
    let tracer = oslab(&journal)
        .args([
            "tweak",
            "vm.dirty_bytes=33554432",
            "vm.dirty_background_bytes=16777216",
            "--",
        ])
        .arg(assert_cmd::cargo::cargo_bin("oslab"))
        .args(["stalls", "--interval", "500ms", "--json"])
        .arg(&out)
        .env("OSLAB_JOURNAL_DIR", &journal)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .unwrap();
    // Counting starts once oslab says it traces (its programs are attached).
    while !std::fs::read_to_string(&err)
        .unwrap_or_default()
        .contains("oslab: tracing")
    {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    switch(&fds, true);
    let m = bed.mount.display();
    let writers = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "dd if=/dev/zero of={m}/a bs=1M count=120 2>/dev/null & \
             dd if=/dev/zero of={m}/b bs=1M count=120 2>/dev/null; wait"
        ))
        .status()
        .unwrap();
    switch(&fds, false);
    assert!(writers.success());
    let counted = count(&fds);
    // Its last interval drains the ring buffer first, so finishing now loses
    // nothing the counter saw.
    // SAFETY: signals the tweak wrapper, which passes it on to stalls.
    unsafe { libc::kill(tracer.id() as i32, libc::SIGTERM) };
    let ended = tracer.wait_with_output().unwrap();
    // 128 + SIGTERM, after its last interval, as watch ends on a signal
    assert_eq!(
        ended.status.code(),
        Some(143),
        "stalls ended with {}: {}",
        ended.status,
        std::fs::read_to_string(&err).unwrap_or_default()
    );

    let lines: Vec<Value> = std::fs::read_to_string(&out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let intervals: Vec<&Value> = lines.iter().filter(|l| l["type"] == "interval").collect();
    for i in &intervals {
        assert_eq!(i["lost"], 0, "no record lost");
    }
    let seen: u64 = intervals
        .iter()
        .filter_map(|i| i["throttling"]["decisions"].as_u64())
        .sum();
    eprintln!("balance_dirty_pages decisions: oslab {seen}, perf counter {counted}");
    assert!(
        counted > 100,
        "the writers were throttled: {counted} decisions counted"
    );
    // The tracer runs before, during and after the counted window: it must
    // see every decision the counter saw, and only a few more (other writers
    // throttled while Dirty drains after the window, up to 8 in 5 runs here).
    assert!(
        seen >= counted && seen as f64 <= counted as f64 * 1.1 + 10.0,
        "oslab saw {seen} decisions, the perf counter {counted}"
    );
}

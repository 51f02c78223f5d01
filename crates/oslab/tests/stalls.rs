//! `oslab stalls` on the real kernel (root, eBPF): a probe writer among bulk
//! writers on a throttled testbed has its slow writes put down to dirty
//! throttling, and the bulk writers are named as the dirtiers; a sleeping program
//! shows no stall; stores through a shared mapping are counted for the storer;
//! one program's file calls are seen alike by the command, `--pid` and
//! system-wide modes tracing it at once, its mapping stores show as page-fault
//! stalls, and its folded stacks render with inferno; a cold read on the root
//! disk that waits behind another process's write back names that writer.
//! Without root the command
//! refuses with exit 3. Skips itself without root or without kernel tracing.

// A test here tells one scenario from start to end: longer than 80 lines.
#![allow(clippy::too_many_lines)]

mod common;

use std::path::Path;

use common::{Testbed, oslab_journaled as oslab, succeed};
use std::process::Command;

use serde_json::Value;

static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

fn json_lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).expect("every line is JSON"))
        .collect()
}

fn of_type<'a>(lines: &'a [Value], t: &str) -> Vec<&'a Value> {
    lines.iter().filter(|l| l["type"] == t).collect()
}

#[test]
fn a_throttled_probe_writers_stalls_are_put_down_to_dirty_throttling() {
    let _s = serial();
    let journal = common::journal_dir("stalls-throttled");
    if let Err(why) = common::stalls_tracing_here(&journal) {
        eprintln!("skipped: kernel tracing is not available ({why})");
        return;
    }
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let probe = dir.path().join("paced_writer");
    assert!(
        common::compile_c("paced_writer.c", &probe, &[]),
        "cc builds the probe"
    );
    let bed = Testbed::up(&journal, dir.path(), "20MiB/s");
    let m = bed.mount.display();
    let pids = dir.path().join("bulk.pids");
    // Two bulk writers fill the dirty allowance; the probe writes 512 KiB every
    // 20 ms beside them.
    let script = format!(
        "dd if=/dev/zero of={m}/bulk1 bs=1M count=400 2>/dev/null & B1=$!; \
         dd if=/dev/zero of={m}/bulk2 bs=1M count=400 2>/dev/null & B2=$!; \
         echo $B1 $B2 > {p}; sleep 1; {probe} {m}/probe 524288 20000 100 0 -; \
         kill $B1 $B2; wait; true",
        p = pids.display(),
        probe = probe.display()
    );
    let out_file = dir.path().join("stalls.jsonl");
    succeed(
        oslab(&journal)
            .args([
                "tweak",
                "vm.dirty_bytes=33554432",
                "vm.dirty_background_bytes=16777216",
                "--",
            ])
            .arg(assert_cmd::cargo::cargo_bin("oslab"))
            .args([
                "stalls",
                "--threshold",
                "20ms",
                "--interval",
                "1s",
                "--json",
            ])
            .arg(&out_file)
            .args(["--", "sh", "-c", &script])
            .env("OSLAB_JOURNAL_DIR", &journal),
    );
    let lines = json_lines(&out_file);

    let probe_stalls: Vec<&Value> = of_type(&lines, "stall")
        .into_iter()
        .filter(|l| l["comm"] == "paced_writer")
        .collect();
    assert!(
        probe_stalls.len() >= 5,
        "the probe should stall beside two bulk writers; got {} stalls",
        probe_stalls.len()
    );
    let total: u64 = probe_stalls
        .iter()
        .map(|l| l["dur_ns"].as_u64().unwrap())
        .sum();
    let throttled: u64 = probe_stalls
        .iter()
        .map(|l| l["throttle_ns"].as_u64().unwrap())
        .sum();
    let share = throttled as f64 / total as f64;
    assert!(
        share >= 0.9,
        "dirty-throttle pauses explain {:.1} % of the probe's time in writes over 20 ms",
        share * 100.0
    );

    let bulk: Vec<u64> = std::fs::read_to_string(&pids)
        .unwrap()
        .split_whitespace()
        .map(|p| p.parse().unwrap())
        .collect();
    assert_eq!(bulk.len(), 2);
    let named: Vec<u64> = of_type(&lines, "interval")
        .iter()
        .flat_map(|i| i["dirtiers"].as_array().unwrap().iter())
        .filter_map(|d| d["tgid"].as_u64())
        .collect();
    for pid in bulk {
        assert!(
            named.contains(&pid),
            "bulk writer {pid} among the top dirtiers: {named:?}"
        );
    }
    for i in of_type(&lines, "interval") {
        assert_eq!(i["lost"], 0, "no record lost");
    }
}

#[test]
fn a_sleeper_shows_no_stall_and_a_mapping_writer_is_a_dirtier() {
    let _s = serial();
    let journal = common::journal_dir("stalls-quiet");
    if let Err(why) = common::stalls_tracing_here(&journal) {
        eprintln!("skipped: kernel tracing is not available ({why})");
        return;
    }
    let mut sleeper = Command::new("sleep").arg("3").spawn().unwrap();
    let out = succeed(
        oslab(&journal)
            .args([
                "stalls",
                "--count",
                "2",
                "--interval",
                "500ms",
                "--threshold",
                "1ms",
            ])
            .args(["--pid", &sleeper.id().to_string(), "--json", "-"]),
    );
    let _ = sleeper.kill();
    let _ = sleeper.wait();
    let lines: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(of_type(&lines, "interval").len(), 2);
    assert!(
        of_type(&lines, "stall").is_empty(),
        "a sleeper never stalls in a write"
    );

    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let writer = dir.path().join("mapwriter");
    assert!(
        common::compile_c("wcall_writer.c", &writer, &[]),
        "cc builds the writer"
    );
    let out_file = dir.path().join("map.jsonl");
    let data = dir.path().join("mapped.dat");
    succeed(
        oslab(&journal)
            .args(["stalls", "--interval", "500ms", "--json"])
            .arg(&out_file)
            .arg("--")
            .arg(&writer)
            .arg(&data)
            .args(["5000", "0", "mmap"]),
    );
    let lines = json_lines(&out_file);
    let dirtied: u64 = of_type(&lines, "interval")
        .iter()
        .flat_map(|i| i["dirtiers"].as_array().unwrap().iter())
        .filter(|d| d["comm"] == "mapwriter")
        .map(|d| d["bytes"].as_u64().unwrap())
        .sum();
    // 5000 records of 4 KiB stored through the mapping, no write() call.
    assert!(
        dirtied >= 5000 * 4096,
        "the mapping writer dirtied {dirtied} bytes by the kernel's count"
    );

    // A sleep after a store's fault, in a call oslab does not watch
    // (nanosleep, a pipe read), is not the fault's: the fault is closed when
    // its task leaves the CPU outside it.
    let sleeper = dir.path().join("fault_then_sleep");
    assert!(
        common::compile_c("fault_then_sleep.c", &sleeper, &[]),
        "cc builds it"
    );
    let out_file = dir.path().join("sleep.jsonl");
    let out = succeed(
        oslab(&journal)
            .args([
                "stalls",
                "--interval",
                "500ms",
                "--threshold",
                "1ms",
                "--json",
            ])
            .arg(&out_file)
            .arg("--")
            .arg(&sleeper)
            .arg(dir.path().join("slept.dat")),
    );
    let lines = json_lines(&out_file);
    let long_faults: Vec<&Value> = of_type(&lines, "stall")
        .into_iter()
        .filter(|l| l["call"] == "page fault" && l["dur_ns"].as_u64().unwrap() >= 300_000_000)
        .collect();
    assert!(
        long_faults.is_empty(),
        "the 400 ms sleeps after the faults are not theirs: {long_faults:?}"
    );
    // and faults were traced at all (x86: page_fault_user), so the check meant
    // something
    let said = String::from_utf8_lossy(&out.stderr);
    if cfg!(target_arch = "x86_64") {
        assert!(!said.contains("page faults are not traced"), "{said}");
    }
}

/// A slow call as the three modes must agree on it.
#[derive(Debug, Clone)]
struct Slow {
    pid: u64,
    call: String,
    start_ns: u64,
    dur_ns: u64,
}

fn slow_calls(lines: &[Value], tgid: u64) -> Vec<Slow> {
    of_type(lines, "stall")
        .into_iter()
        .filter(|l| l["tgid"] == tgid)
        .map(|l| Slow {
            pid: l["pid"].as_u64().unwrap(),
            call: l["call"].as_str().unwrap().to_string(),
            start_ns: l["start_ns"].as_u64().unwrap(),
            dur_ns: l["dur_ns"].as_u64().unwrap(),
        })
        .collect()
}

/// Calls clearly over the threshold in `a` that `b` lacks (each tracer reads
/// the clock itself, so the same call's start differs by microseconds).
fn missing(a: &[Slow], b: &[Slow], clearly_ns: u64) -> Vec<Slow> {
    a.iter()
        .filter(|x| x.dur_ns >= clearly_ns)
        .filter(|x| {
            !b.iter().any(|y| {
                y.pid == x.pid && y.call == x.call && y.start_ns.abs_diff(x.start_ns) < 1_000_000
            })
        })
        .cloned()
        .collect()
}

#[test]
fn three_modes_see_the_same_slow_calls_and_faults_show_their_throttling() {
    let _s = serial();
    let journal = common::journal_dir("stalls-modes");
    if let Err(why) = common::stalls_tracing_here(&journal) {
        eprintln!("skipped: kernel tracing is not available ({why})");
        return;
    }
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let d = dir.path();
    let workload = d.join("file_calls");
    assert!(
        common::compile_c("file_calls.c", &workload, &[]),
        "cc builds the workload"
    );
    let bed = Testbed::up(&journal, d, "20MiB/s");
    let m = bed.mount.display();
    let oslab_bin = assert_cmd::cargo::cargo_bin("oslab");
    let o = oslab_bin.display();
    let w = workload.display();
    let dd = d.display();
    // System-wide first, then the command, then --pid on the command's pid
    // once it has written it; each is waited for until it says it traces (its
    // programs are attached by then), and the workload starts when all three
    // trace it. A bulk writer keeps Dirty at the limit. SIGTERM (a background
    // job of a script ignores SIGINT) asks the other two to finish: their last
    // interval drains the ring buffer first, so nothing of the workload is cut, and
    // they exit 143 (128 + SIGTERM), as watch does.
    let script = format!(
        "S='stalls --threshold 5ms --interval 500ms'; \
         ready() {{ until grep -q 'oslab: tracing' $1; do sleep 0.05; done; }}; \
         {o} $S --json {dd}/all.jsonl 2>{dd}/all.err & A=$!; ready {dd}/all.err; \
         dd if=/dev/zero of={m}/bulk bs=1M count=600 2>/dev/null & B=$!; \
         {o} $S --json {dd}/cmd.jsonl --folded {dd}/cmd.folded --each -- {w} {m} {dd}/go {dd}/pid \
            >{dd}/cmd.each 2>{dd}/cmd.err & C=$!; \
         while [ ! -s {dd}/pid ]; do sleep 0.05; done; \
         {o} $S --pid $(cat {dd}/pid) --json {dd}/pid.jsonl 2>{dd}/pid.err & P=$!; \
         ready {dd}/cmd.err; ready {dd}/pid.err; touch {dd}/go; wait $C; RC=$?; \
         kill -TERM $A $P; kill $B; wait $A; RA=$?; wait $P; RP=$?; wait; \
         echo \"cmd $RC all $RA pid $RP\"; test $RC -eq 0 -a $RA -eq 143 -a $RP -eq 143"
    );
    let out = oslab(&journal)
        .args([
            "tweak",
            "vm.dirty_bytes=16777216",
            "vm.dirty_background_bytes=8388608",
            "--",
            "sh",
            "-c",
            &script,
        ])
        .output()
        .unwrap();
    let err = |name: &str| std::fs::read_to_string(d.join(name)).unwrap_or_default();
    assert!(
        out.status.success(),
        "{}\n{}\ncmd: {}\nall: {}\npid: {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
        err("cmd.err"),
        err("all.err"),
        err("pid.err")
    );
    let tgid: u64 = err("pid").trim().parse().unwrap();
    let modes: Vec<(&str, Vec<Slow>)> = ["cmd", "pid", "all"]
        .iter()
        .map(|name| {
            let lines = json_lines(&d.join(format!("{name}.jsonl")));
            for l in &lines {
                assert_eq!(l["format"], 2, "every line carries the format");
                if l["type"] == "interval" {
                    assert_eq!(l["lost"], 0, "{name}: no record lost");
                }
            }
            (*name, slow_calls(&lines, tgid))
        })
        .collect();
    let calls = |v: &[Slow]| -> std::collections::BTreeSet<String> {
        v.iter().map(|s| s.call.clone()).collect()
    };
    let wanted = [
        "fsync",
        "fdatasync",
        "sync_file_range",
        "msync",
        "page fault",
    ];
    for (name, v) in &modes {
        for c in wanted {
            assert!(
                calls(v).contains(c),
                "{name}: a slow {c} among {:?}",
                calls(v)
            );
        }
    }
    for (a, va) in &modes {
        for (b, vb) in &modes {
            let lost = missing(va, vb, 7_500_000);
            assert!(lost.is_empty(), "{a} saw calls {b} did not: {lost:?}");
        }
    }

    // The stores' faults waited for dirty throttling.
    let lines = json_lines(&d.join("cmd.jsonl"));
    let faults: Vec<&Value> = of_type(&lines, "stall")
        .into_iter()
        .filter(|l| l["call"] == "page fault")
        .collect();
    let throttled: u64 = faults
        .iter()
        .map(|l| l["throttle_ns"].as_u64().unwrap())
        .sum();
    let total: u64 = faults.iter().map(|l| l["dur_ns"].as_u64().unwrap()).sum();
    assert!(
        throttled * 2 >= total,
        "page faults: {throttled} of {total} ns in dirty throttling"
    );
    assert!(
        faults.iter().any(|l| l["main_cause"] == "dirty_throttle"
            && l["file"].as_str().unwrap().ends_with("calls.m")),
        "a fault on the mapped file put down to dirty throttling: {faults:?}"
    );
    let fsync = of_type(&lines, "stall")
        .into_iter()
        .find(|l| l["call"] == "fsync")
        .unwrap();
    assert!(
        fsync["file"].as_str().unwrap().ends_with("calls.w"),
        "{fsync}"
    );
    // The workload is gone by now: its cgroup (this test's) came from the id
    // the kernel recorded.
    let mine = std::fs::read_to_string("/proc/self/cgroup").unwrap();
    let cgroup = fsync["cgroup"].as_str().unwrap();
    assert!(
        mine.lines().any(|l| l.ends_with(&format!(":{cgroup}"))),
        "{cgroup} is this test's cgroup:\n{mine}"
    );

    // --each printed the calls, one a line.
    let each = err("cmd.each");
    assert!(each.lines().next().unwrap().starts_with("TIME"), "{each}");
    for c in ["fsync", "msync", "page fault"] {
        assert!(
            each.lines().any(|l| l.contains(c)),
            "--each shows {c}: {each}"
        );
    }

    // Folded stacks render as a flame graph, the workload's calls in it.
    let folded = std::fs::read_to_string(d.join("cmd.folded")).unwrap();
    for l in folded.lines() {
        let (stack, ns) = l.rsplit_once(' ').expect("STACK NS");
        assert!(ns.parse::<u64>().is_ok_and(|n| n > 0), "{l}");
        assert!(stack.starts_with("file_calls;"), "{l}");
    }
    let mut svg = Vec::new();
    let mut opts = inferno::flamegraph::Options::default();
    inferno::flamegraph::from_lines(&mut opts, folded.lines(), &mut svg)
        .expect("inferno renders it");
    let svg = String::from_utf8(svg).unwrap();
    assert!(svg.starts_with("<?xml"), "an SVG");
    for frame in ["fsync", "page fault", "[dirty throttle]"] {
        assert!(svg.contains(frame), "the flame graph shows {frame}");
    }
}

/// Why reads of files under `dir` cannot be matched with their disk's queue,
/// if they cannot: the file system is on device-mapper, md or no block device.
fn not_on_a_disk(dir: &Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let dev = std::fs::metadata(dir).unwrap().dev();
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    let sys = format!("/sys/dev/block/{major}:{minor}");
    if major == 0 || !Path::new(&sys).exists() {
        return Some(format!(
            "{} is on no block device ({major}:{minor})",
            dir.display()
        ));
    }
    ["dm", "md"]
        .iter()
        .find(|k| Path::new(&format!("{sys}/{k}")).exists())
        .map(|k| {
            format!(
                "{} is on a {k} device ({major}:{minor}), not a disk",
                dir.display()
            )
        })
}

#[test]
fn a_cold_read_behind_write_back_names_the_writer() {
    let _s = serial();
    let journal = common::journal_dir("stalls-read");
    if let Err(why) = common::stalls_tracing_here(&journal) {
        eprintln!("skipped: kernel tracing is not available ({why})");
        return;
    }
    // On the root disk (the testbed caps writes before they reach its device,
    // so its reads queue behind nothing): a 256 MiB file, fsynced and dropped
    // from the page cache by dd itself (iflag=nocache), is read back by a
    // second dd while a third writes 4 GB, its write back steady under a
    // 64 MiB background limit.
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    if let Some(why) = not_on_a_disk(dir.path()) {
        eprintln!("skipped: {why}");
        return;
    }
    let d = dir.path().display();
    let o = assert_cmd::cargo::cargo_bin("oslab");
    // and a second cold file read through a mapping: its page faults wait
    let mapper = dir.path().join("map_read");
    assert!(
        common::compile_c("map_read.c", &mapper, &[]),
        "cc builds it"
    );
    let script = format!(
        "for f in cold mapped; do dd if=/dev/urandom of={d}/$f bs=1M count=256 conv=fsync 2>/dev/null && \
         dd if={d}/$f iflag=nocache count=0 2>/dev/null || exit 1; done; \
         {{ dd if=/dev/zero of={d}/bulk bs=1M count=4000 2>/dev/null & B=$!; \
         echo $B > {d}/bulk.pid; sleep 2; \
         {o} stalls --threshold 2ms --json {d}/read.jsonl -- dd if={d}/cold of=/dev/null bs=1M; \
         RC=$?; {o} stalls --threshold 2ms --json {d}/map.jsonl -- {m} {d}/mapped >/dev/null; \
         RM=$?; kill $B; wait; [ $RC -eq 0 ] && exit $RM; exit $RC; }}",
        o = o.display(),
        m = mapper.display()
    );
    succeed(oslab(&journal).args([
        "tweak",
        "vm.dirty_background_bytes=67108864",
        "vm.dirty_bytes=536870912",
        "--",
        "sh",
        "-c",
        &script,
    ]));
    let bulk = std::fs::read_to_string(dir.path().join("bulk.pid")).unwrap();
    let lines = json_lines(&dir.path().join("read.jsonl"));
    let reads: Vec<&Value> = of_type(&lines, "stall")
        .into_iter()
        .filter(|l| l["call"] == "read" && l["comm"] == "dd")
        .collect();
    assert!(!reads.is_empty(), "cold reads of 1 MiB take over 2 ms");
    for r in &reads {
        assert!(r["file"].as_str().unwrap().contains("cold"), "{r}");
    }
    assert!(
        reads.iter().any(|r| r["read_wait"] == "page-cache miss"),
        "a cold read waited for its pages from the device: {reads:?}"
    );
    let behind: Vec<&&Value> = reads
        .iter()
        .filter(|r| r["queued_write_bytes"].as_u64().unwrap() > 0)
        .collect();
    assert!(
        !behind.is_empty(),
        "some of {} slow reads blocked with writes queued at the disk",
        reads.len()
    );
    let named = format!("dd ({})", bulk.trim());
    assert!(
        behind.iter().all(|r| r["writers_there"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w == named.as_str())),
        "the bulk writer {named} is named: {behind:?}"
    );

    // The mapped reads are page faults on that file, waiting for the device.
    if !kernel_names_read_faults() {
        eprintln!(
            "mapped reads not checked: this kernel has no mm_filemap_fault tracepoint (6.10+)"
        );
        return;
    }
    let lines = json_lines(&dir.path().join("map.jsonl"));
    let faults: Vec<&Value> = of_type(&lines, "stall")
        .into_iter()
        .filter(|l| l["call"] == "page fault" && l["comm"] == "map_read")
        .collect();
    // a fault knows its file by device and inode (it has no path at hand)
    let ino = {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(dir.path().join("mapped")).unwrap().ino()
    };
    assert!(
        faults.iter().any(|f| f["file"]
            .as_str()
            .unwrap()
            .ends_with(&format!("inode {ino}"))
            && f["read_wait"] == "page-cache miss"),
        "a fault read a page of the mapped file (inode {ino}) in from the device: {faults:?}"
    );
}

/// Whether the running kernel has the tracepoint that names a read fault's file.
fn kernel_names_read_faults() -> bool {
    std::fs::read("/sys/kernel/btf/vmlinux")
        .is_ok_and(|b| b.windows(26).any(|w| w == b"btf_trace_mm_filemap_fault"))
}

#[test]
fn without_root_stalls_refuses_with_exit_3() {
    let (mut c, why) = if common::is_root() {
        if Command::new("setpriv").arg("--version").output().is_err() {
            eprintln!("skipped: setpriv (util-linux) is not installed");
            return;
        }
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
            .arg(assert_cmd::cargo::cargo_bin("oslab"));
        (c, "as nobody")
    } else {
        (
            Command::new(assert_cmd::cargo::cargo_bin("oslab")),
            "as this user",
        )
    };
    let out = c
        .args(["stalls", "--count", "1"])
        .env("HOME", env!("CARGO_TARGET_TMPDIR"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{why}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim().lines().count(), 1, "one sentence: {err}");
    assert!(err.contains("needs root"), "{err}");
}

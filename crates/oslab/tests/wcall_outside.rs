//! The governor with programs oslab did not write, as a user runs them: a daemon,
//! and each program started with `oslab wcall run`. On a throttled testbed a paced
//! SCHED_FIFO 55 writer (a C program that times its own writes) starts after two
//! `dd` bulk writers: under wcall-fair none of its writes reaches 200 ms, every
//! byte of every file arrives, and `status` lists all three processes in their
//! groups. A program that changes a file only through a shared mapping and a
//! statically linked writer show up in `status` with the bytes the kernel counted
//! them dirtying, marked as not holdable. Root only; no timing is asserted but
//! the 200 ms the kernel's MAX_PAUSE gives a stalled write.

// A test here tells one scenario from start to end: longer than 80 lines.
#![allow(clippy::too_many_lines)]

mod common;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{Testbed, compile_c, oslab_journaled, preload_lib, succeed};
use serde_json::Value;

static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn oslab(journal: &Path) -> Command {
    let mut c = oslab_journaled(journal);
    c.env("OSLAB_WCALL_LIB", preload_lib());
    c
}

/// An oslab process that gets SIGTERM (it then undoes what it changed) when
/// the test ends, also when it fails.
struct Stopped(Child);

impl Drop for Stopped {
    fn drop(&mut self) {
        // SAFETY: a signal to our own child.
        unsafe { libc::kill(self.0.id() as i32, libc::SIGTERM) };
        let _ = self.0.wait();
    }
}

/// A daemon named `name`; what it says goes to `journal`/NAME.err.
fn daemon(journal: &Path, name: &str) -> Stopped {
    std::fs::create_dir_all(journal).unwrap();
    let err = std::fs::File::create(journal.join(format!("{name}.err"))).unwrap();
    let child = Stopped(
        oslab(journal)
            .args(["wcall", "daemon", "--every", "0", "--name", name])
            .stderr(err)
            .spawn()
            .unwrap(),
    );
    for _ in 0..100 {
        if !status(journal, name).is_null() {
            return child;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("governor {name} did not show up");
}

/// The governor's status, or null while it is not running.
fn status(journal: &Path, name: &str) -> Value {
    let o = oslab(journal)
        .args(["wcall", "status", "--json", "-", "--name", name])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&o.stdout).unwrap_or(Value::Null);
    v.get(0).map(|g| g["status"].clone()).unwrap_or(Value::Null)
}

fn governed(journal: &Path, name: &str, program: &[&str]) -> Command {
    let mut c = oslab(journal);
    c.args(["wcall", "run", "--name", name, "--"]).args(program);
    c
}

/// Stops the daemon; what it left (its cgroups, were it killed) `restore`
/// undoes. The testbed, in the same journal, goes down with its own guard.
fn stop(daemon: Stopped) {
    drop(daemon);
}

/// Block i of the paced writer's file is all (i % 251).
fn check_paced_file(path: &Path, bytes: usize, count: usize) {
    let data = std::fs::read(path).unwrap();
    assert_eq!(data.len(), bytes * count, "{}", path.display());
    for (i, block) in data.chunks(bytes).enumerate() {
        assert!(
            block.iter().all(|&b| b == (i % 251) as u8),
            "block {i} of {} is wrong",
            path.display()
        );
    }
}

#[test]
fn a_late_high_writer_beside_dd_keeps_clear_of_stalls_and_every_byte_arrives() {
    let _s = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    if !common::is_root() {
        eprintln!("skipped: the testbed and SCHED_FIFO writers need root");
        return;
    }
    let journal = common::journal_dir("wcall-outside-testbed");
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let probe = dir.path().join("paced_writer");
    assert!(
        compile_c("paced_writer.c", &probe, &[]),
        "cc builds the writer"
    );
    let bed = Testbed::up(&journal, dir.path(), "40MiB/s");
    let m = &bed.mount;
    let name = format!("outside-{}", std::process::id());
    // the kernel's limits of the paper's testbed, for as long as the daemon runs
    let knobs = Stopped(
        oslab(&journal)
            .args([
                "tweak",
                "vm.dirty_bytes=67108864",
                "vm.dirty_background_bytes=33554432",
                "--for",
                "120s",
            ])
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    std::thread::sleep(Duration::from_millis(300));
    let d = daemon(&journal, &name);
    let dd = |i: u32| {
        governed(
            &journal,
            &name,
            &[
                "dd",
                "if=/dev/zero",
                &format!("of={}/bulk{i}", m.display()),
                "bs=1M",
                "count=200",
            ],
        )
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
    };
    let bulk = [dd(1), dd(2)];
    // the competitors fill the cache first: the high writer arrives late
    std::thread::sleep(Duration::from_secs(2));
    let lat = dir.path().join("latency.txt");
    let high_file = m.join("high");
    let high = governed(
        &journal,
        &name,
        &[
            probe.to_str().unwrap(),
            high_file.to_str().unwrap(),
            "524288",
            "20000",
            "150",
            "55",
            lat.to_str().unwrap(),
        ],
    )
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let seen = status(&journal, &name);
    let out = high.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for mut b in bulk {
        assert!(b.wait().unwrap().success(), "dd finished");
    }
    stop(d);
    drop(knobs);

    let procs = seen["processes"].as_array().unwrap();
    let groups: Vec<&str> = procs.iter().map(|p| p["group"].as_str().unwrap()).collect();
    assert_eq!(
        groups.iter().filter(|g| **g == "rt-high").count(),
        1,
        "{procs:?}"
    );
    assert_eq!(
        groups.iter().filter(|g| **g == "normal").count(),
        2,
        "{procs:?}"
    );
    let worst_ms = std::fs::read_to_string(&lat)
        .unwrap()
        .lines()
        .map(|l| l.split_whitespace().nth(1).unwrap().parse::<f64>().unwrap() / 1e6)
        .fold(0.0, f64::max);
    assert!(
        worst_ms < 200.0,
        "a write of the RT-55 writer took {worst_ms:.1} ms (MAX_PAUSE is 200 ms)"
    );
    check_paced_file(&high_file, 524288, 150);
    for i in [1, 2] {
        let len = std::fs::metadata(m.join(format!("bulk{i}"))).unwrap().len();
        assert_eq!(len, 200 << 20, "bulk{i}");
    }
    drop(bed);
}

#[test]
fn mapping_and_static_writers_are_counted_by_the_kernel_and_not_holdable() {
    let _s = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    if let Err(why) = oslab_trace::available() {
        eprintln!("skipped: the kernel monitor needs kernel tracing ({why})");
        return;
    }
    let journal = common::journal_dir("wcall-outside-kernel");
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let mapper = dir.path().join("map_and_hold");
    assert!(compile_c("map_and_hold.c", &mapper, &[]), "cc builds it");
    let stat = dir.path().join("static_writer");
    if !compile_c("paced_writer.c", &stat, &["-static"]) {
        eprintln!("skipped: no static libc (libc6-dev) to link a static program");
        return;
    }
    let name = format!("kernel-{}", std::process::id());
    let d = daemon(&journal, &name);
    assert_eq!(
        status(&journal, &name)["monitor"],
        "kernel",
        "{}",
        std::fs::read_to_string(journal.join(format!("{name}.err"))).unwrap_or_default()
    );
    let map_file = dir.path().join("mapped");
    let m = governed(
        &journal,
        &name,
        &[
            mapper.to_str().unwrap(),
            map_file.to_str().unwrap(),
            "16",
            "10000",
        ],
    )
    .stderr(Stdio::null())
    .spawn()
    .unwrap();
    let static_file = dir.path().join("static");
    // 200 writes of 256 KiB, 50 ms apart: 10 s
    let s = governed(
        &journal,
        &name,
        &[
            stat.to_str().unwrap(),
            static_file.to_str().unwrap(),
            "262144",
            "50000",
            "200",
            "0",
            "-",
        ],
    )
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    // the programs are children of the `oslab wcall run` that started them:
    // found by what they run
    let find = |v: &Value, exe: &Path| -> Option<Value> {
        v["processes"]
            .as_array()?
            .iter()
            .find(|p| p["exe"].as_str() == exe.to_str())
            .cloned()
    };
    let t0 = Instant::now();
    let (mapped, statik) = loop {
        let v = status(&journal, &name);
        let (a, b) = (find(&v, &mapper), find(&v, &stat));
        let counted = |p: &Option<Value>| {
            p.as_ref()
                .is_some_and(|p| p["kernel_dirtied_bytes"].as_u64().unwrap_or(0) >= 1 << 20)
        };
        if counted(&a) && counted(&b) {
            break (a.unwrap(), b.unwrap());
        }
        assert!(
            t0.elapsed() < Duration::from_secs(8),
            "both writers should be counted while they run: {v}"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    let text = succeed(oslab(&journal).args(["wcall", "status", "--name", &name]));
    let text = String::from_utf8_lossy(&text.stdout).into_owned();
    for mut c in [m, s] {
        let _ = c.wait();
    }
    stop(d);

    assert_eq!(statik["holdable"], false, "{statik}");
    assert_eq!(mapped["holdable"], true, "{mapped}");
    assert!(mapped["unheld_files"].as_u64().unwrap() >= 1, "{mapped}");
    let spid = statik["pid"].as_u64().unwrap();
    assert!(
        text.contains(&format!("pid {spid} {}", stat.display()))
            && text.contains("not holdable (static)"),
        "{text}"
    );
    assert!(text.contains("dirtied outside write()"), "{text}");
}

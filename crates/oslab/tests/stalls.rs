//! `oslab stalls` on the real kernel (root, eBPF): a probe writer among bulk
//! writers on a throttled testbed has its slow writes put down to dirty
//! throttling, and the bulk writers are named as the dirtiers; a sleeping program
//! shows no stall; stores through a shared mapping are counted for the storer.
//! Without root the command refuses with exit 3. Skips itself without root or
//! without kernel tracing.

mod common;

use std::path::Path;

use common::{Testbed, oslab_journaled as oslab, succeed};
use std::process::Command;

use serde_json::Value;

static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

/// Whether kernel tracing works here; the reason when it does not.
fn tracing_here(journal: &Path) -> Result<(), String> {
    if !common::is_root() {
        return Err("needs root".into());
    }
    let out = oslab(journal)
        .args(["stalls", "--count", "1", "--interval", "0.1", "--json", "-"])
        .output()
        .unwrap();
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).trim().to_string())
    }
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
    if let Err(why) = tracing_here(&journal) {
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
            .args(["stalls", "--threshold", "20ms", "--interval", "1", "--json"])
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
    if let Err(why) = tracing_here(&journal) {
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
                "0.5",
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
            .args(["stalls", "--interval", "0.5", "--json"])
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

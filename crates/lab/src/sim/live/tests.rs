use std::path::Path;

use oslab_model::trace::Bandwidth;
use oslab_model::trace::FlushReason;
use oslab_sys::fsread::Root;
use oslab_trace::analysis::Captured;
use oslab_trace::records::FlushPass;

use super::probe::estimates_of;
use super::{FileState, LiveState, Source, Traced, read_files};

const MIB: f64 = (1u64 << 20) as f64;

/// The captured KVM guest's /proc, with a bdi 253:0 and, when `debugfs`, its
/// debugfs stats showing 20480 KiB/s.
fn machine(debugfs: bool) -> tempfile::TempDir {
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../sys/tests/fixtures/kvm-xeon-2cpu/proc");
    let dir = tempfile::tempdir().unwrap();
    let proc = dir.path().join("proc");
    std::fs::create_dir_all(proc.join("sys/vm")).unwrap();
    for f in ["meminfo", "vmstat"] {
        std::fs::copy(fixture.join(f), proc.join(f)).unwrap();
    }
    for e in std::fs::read_dir(fixture.join("sys/vm")).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), proc.join("sys/vm").join(e.file_name())).unwrap();
    }
    let bdi = dir.path().join("sys/class/bdi/253:0");
    std::fs::create_dir_all(&bdi).unwrap();
    for (f, v) in [
        ("min_ratio", "0\n"),
        ("max_ratio", "100\n"),
        ("strict_limit", "0\n"),
    ] {
        std::fs::write(bdi.join(f), v).unwrap();
    }
    if debugfs {
        let stats = dir.path().join("sys/kernel/debug/bdi/253:0");
        std::fs::create_dir_all(&stats).unwrap();
        std::fs::write(
            stats.join("stats"),
            "BdiWriteback:            0 kB\nBdiWriteBandwidth:   20480 kBps\n",
        )
        .unwrap();
    }
    dir
}

#[test]
fn the_files_give_the_cache_the_limits_the_sysctls_and_the_bdi_s_settings() {
    let dir = machine(true);
    let page = oslab_sys::machine::page_size();
    let f = read_files(&Root::at(dir.path()), "253:0");
    // the fixture's Dirty 232712 kB, Writeback 0, thresholds in pages
    assert_eq!(f.dirty_bytes, 232712 * 1024);
    assert_eq!(f.writeback_bytes, 0);
    assert_eq!(f.dirty_threshold_bytes, Some(1216274 * page));
    assert_eq!(f.background_threshold_bytes, Some(607394 * page));
    assert_eq!(f.sysctls.len(), 6, "{:?}", f.sysctls);
    assert_eq!(f.bdi_settings["max_ratio"], "100");
    // BdiWriteBandwidth is KiB per second
    assert_eq!(f.debugfs_write_bw, Some(20.0 * MIB));
    // another device's bdi has no settings here and debugfs says nothing of it
    let other = read_files(&Root::at(dir.path()), "7:0");
    assert!(other.bdi_settings.is_empty() && other.debugfs_write_bw.is_none());
}

fn pass(bdi: &str, write_bw: u64, avg_write_bw: u64) -> FlushPass {
    FlushPass {
        start_ns: 0,
        end_ns: 1,
        bdi_id: 1,
        bdi: bdi.into(),
        reason: FlushReason::Sync,
        pages: 1,
        avg_write_bw,
        write_bw,
        dirty_ratelimit: 0,
    }
}

#[test]
fn the_probe_takes_the_device_s_first_pass_as_it_began() {
    // another device's pass first, then ours twice: the first of ours is the
    // state before the probe's page moved it (pages per second)
    let c = Captured {
        flushes: vec![
            pass("7:0", 100, 100),
            pass("253:0", 5120, 3072),
            pass("253:0", 4864, 3000),
        ],
        ..Captured::default()
    };
    let t = estimates_of(&c, "253:0").unwrap();
    let page = c.page_size as f64;
    assert_eq!(t.write_bw, Some(5120.0 * page));
    assert_eq!(t.avg_write_bw, Some(3072.0 * page));
    // a pass recorded without its dirty_ratelimit and no throttled writer
    // during the probe: none
    assert_eq!(t.dirty_ratelimit, None);
    assert!(estimates_of(&c, "8:0").is_none());
}

fn throttled(bdi: &str, dirty_ratelimit: u64) -> Bandwidth {
    Bandwidth {
        ts_ns: 5,
        bdi_id: 2,
        bdi: bdi.into(),
        write_bw: 0,
        avg_write_bw: 0,
        dirty_rate: 0,
        dirty_ratelimit,
        task_ratelimit: 0,
        balanced_dirty_ratelimit: 0,
    }
}

#[test]
fn an_idle_device_shows_its_dirty_ratelimit_at_the_pass_and_a_throttled_writer_a_newer_one() {
    let mut ours = pass("253:0", 5120, 3072);
    ours.dirty_ratelimit = 2048;
    let mut c = Captured {
        flushes: vec![ours],
        ..Captured::default()
    };
    let page = c.page_size as f64;
    let t = estimates_of(&c, "253:0").unwrap();
    assert_eq!(t.dirty_ratelimit, Some(2048.0 * page));
    // a throttled writer on the device during the probe says more recently
    c.bandwidth.push(throttled("253:0", 1500));
    // another device's record says nothing of ours
    c.bandwidth.push(throttled("7:0", 9));
    let t = estimates_of(&c, "253:0").unwrap();
    assert_eq!(t.dirty_ratelimit, Some(1500.0 * page));
}

#[test]
fn each_estimate_comes_from_the_trace_then_debugfs_else_the_steady_state() {
    let files = FileState {
        debugfs_write_bw: Some(20.0 * MIB),
        ..FileState::default()
    };
    let traced = Traced {
        write_bw: Some(30.0 * MIB),
        avg_write_bw: Some(12.0 * MIB),
        dirty_ratelimit: None,
    };
    let s = LiveState::new("vda".into(), "253:0".into(), files.clone(), Ok(traced));
    assert_eq!(s.write_bw.source, Source::Traced);
    assert_eq!(s.avg_write_bw.source, Source::Traced);
    assert_eq!(s.dirty_ratelimit.source, Source::Steady);
    let i = s.initial();
    assert_eq!(i.write_bw_bytes_s, Some(30.0 * MIB));
    assert_eq!(i.avg_write_bw_bytes_s, Some(12.0 * MIB));
    assert_eq!(i.dirty_ratelimit_bytes_s, None);
    assert!(
        s.describe()
            .contains("avg_write_bandwidth 12.0 MiB/s (traced")
    );
    // no trace: debugfs gives write_bandwidth, the rest is the steady state's
    let s = LiveState::new("vda".into(), "253:0".into(), files, Err("no BTF".into()));
    assert_eq!(s.write_bw.source, Source::Debugfs);
    assert_eq!(s.initial().write_bw_bytes_s, Some(20.0 * MIB));
    assert_eq!(s.avg_write_bw.source, Source::Steady);
    assert_eq!(s.initial().avg_write_bw_bytes_s, None);
    assert!(
        s.describe().contains("not traced: no BTF"),
        "{}",
        s.describe()
    );
}

/// On this machine, as root: a probe on the disk under the temporary folder
/// shows the kernel's estimates for it (the flusher made the pass the probe
/// asked for), and leaves nothing behind.
#[test]
fn a_probe_on_a_real_disk_reads_the_kernel_s_estimates() {
    if !oslab_sys::process::is_root() {
        eprintln!("skipped: reading the live state needs root");
        return;
    }
    let base = Path::new("/var/tmp");
    if super::read::device_of(base).is_err() {
        eprintln!("skipped: /var/tmp is on no block device here");
        return;
    }
    let probes = || {
        std::fs::read_dir(base)
            .unwrap()
            .filter(|e| {
                let name = e.as_ref().unwrap().file_name();
                name.to_string_lossy().starts_with("oslab-sim-live-")
            })
            .count()
    };
    let before = probes();
    let s = super::read(base).unwrap();
    assert!(s.not_traced.is_none(), "{:?}", s.not_traced);
    assert_eq!(s.write_bw.source, Source::Traced);
    assert_eq!(s.avg_write_bw.source, Source::Traced);
    assert!(s.traced.write_bw.unwrap() > 0.0 && s.traced.avg_write_bw.unwrap() > 0.0);
    // the pass shows dirty_ratelimit too, idle device or not (at least a page a
    // second, as the kernel keeps it)
    assert_eq!(s.dirty_ratelimit.source, Source::Traced);
    assert!(s.dirty_ratelimit.bytes_s.unwrap() >= 4096.0, "{s:?}");
    assert_eq!(probes(), before, "the probe's scratch folder is gone");
}

/// `--live DIR` is a path a user gives root: the probe writes only in a
/// scratch folder that Scratch makes under a base nobody else can change. A
/// world-writable folder without the sticky bit (where another user could swap
/// the probe's folder for a link) is refused: nothing is written there and the
/// state says why nothing was traced.
#[test]
fn the_probe_writes_nothing_under_a_folder_another_user_could_change() {
    if !oslab_sys::process::is_root() {
        eprintln!("skipped: reading the live state needs root");
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let Ok(base) = tempfile::tempdir_in("/var/tmp") else {
        eprintln!("skipped: /var/tmp is not writable");
        return;
    };
    if super::read::device_of(base.path()).is_err() {
        eprintln!("skipped: /var/tmp is on no block device here");
        return;
    }
    let open = base.path().join("open");
    std::fs::create_dir(&open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
    let s = super::read(&open).unwrap();
    let why = s.not_traced.clone().unwrap_or_default();
    assert!(!why.is_empty(), "{s:?}");
    assert_eq!(s.avg_write_bw.source, Source::Steady);
    assert_eq!(std::fs::read_dir(&open).unwrap().count(), 0);
}

//! sar arithmetic on captured /proc samples and on hand-made sequences.

use std::path::Path;

use oslab_sys::sar::{SnapshotTexts, derive, snapshot_from};

fn captured(name: &str) -> oslab_sys::sar::Snapshot {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/sar")
        .join(name);
    let r = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap();
    let texts = SnapshotTexts {
        vmstat: r("vmstat"),
        meminfo: r("meminfo"),
        diskstats: r("diskstats"),
        stat: r("stat"),
        loadavg: r("loadavg"),
    };
    snapshot_from(&texts, r("t_ns").trim().parse().unwrap())
}

#[test]
fn a_captured_200_mib_direct_write_and_read() {
    // Between t0 and t1: dd of 200 MiB with O_DIRECT to vda, then a cold read of it.
    let (a, b) = (captured("t0"), captured("t1"));
    let r = derive(&a, &b, a.t_ns).unwrap();
    let vda = &r.devices["vda"];
    let written_kib = vda.wkb_s * r.interval_s;
    let read_kib = vda.rkb_s * r.interval_s;
    assert!((written_kib - 204_800.0).abs() < 1.0, "{written_kib}");
    assert!((read_kib - 207_536.0).abs() < 1.0, "{read_kib}");
    // 402 reads + 400 writes + 6 discards (of 24 KiB, ext4's own); areq-sz is all
    // the KiB moved over the requests
    let ios = vda.tps * r.interval_s;
    assert!((ios - 808.0).abs() < 0.5, "{ios}");
    assert!((vda.dkb_s * r.interval_s - 24.0).abs() < 0.01);
    assert!((vda.areq_kb - (204_800.0 + 207_536.0 + 24.0) / 808.0).abs() < 0.01);
    assert!(vda.util_pct > 0.0 && vda.util_pct <= 100.0);
    assert!(r.paging.pgpgin_kb_s > 0.0);
    assert!(r.memory.kbmemfree > 0 && r.memory.kbcached > 0);
    assert!(r.cswch_s > 0.0);
    let cpu = r.cpu.user + r.cpu.nice + r.cpu.system + r.cpu.iowait + r.cpu.steal + r.cpu.idle;
    assert!((cpu - 100.0).abs() < 1e-6, "{cpu}");
}

fn synthetic(t_ns: u64, disks: &str, pgscan: u64, pgsteal: u64) -> oslab_sys::sar::Snapshot {
    let texts = SnapshotTexts {
        vmstat: format!(
            "pgpgin 1000\npgpgout 2000\npgfault 10\npgmajfault 1\npgfree 5\npgscan_kswapd {pgscan}\npgscan_direct 0\npgsteal_kswapd {pgsteal}\npgsteal_direct 0\n"
        ),
        meminfo: String::new(),
        diskstats: disks.to_string(),
        stat: format!(
            "cpu  100 0 100 800 0 0 0 0 0 0\nintr {} 3 4\nctxt 5000\nprocesses {}\nprocs_running 3\nprocs_blocked 1\n",
            7000 + t_ns / 1_000_000,
            100 + t_ns / 100_000_000
        ),
        loadavg: "0.50 0.40 0.30 3/200 999\n".into(),
    };
    snapshot_from(&texts, t_ns)
}

#[test]
fn devices_appearing_or_vanishing_get_no_rates() {
    let a = synthetic(
        0,
        "8 0 sda 10 0 80 5 10 0 80 5 0 10 10\n 7 0 loop0 1 0 8 1 0 0 0 0 0 1 1\n",
        0,
        0,
    );
    let b = synthetic(
        1_000_000_000,
        "8 0 sda 20 0 160 10 30 0 240 15 0 510 20\n 8 16 sdb 5 0 40 1 0 0 0 0 0 5 5\n",
        0,
        0,
    );
    let r = derive(&a, &b, 0).unwrap();
    assert_eq!(r.devices.keys().collect::<Vec<_>>(), vec!["sda"]);
    let sda = &r.devices["sda"];
    assert_eq!(sda.tps, 30.0); // 10 reads + 20 writes in 1 s
    assert_eq!(sda.rkb_s, 40.0); // 80 sectors
    assert_eq!(sda.wkb_s, 80.0); // 160 sectors
    assert_eq!(sda.areq_kb, 4.0);
    assert_eq!(sda.await_ms, 15.0 / 30.0); // (5 + 10) ms over 30 requests
    assert_eq!(sda.util_pct, 50.0); // 500 ms busy of 1000
    assert_eq!(sda.aqu_sz, 0.01); // 10 ms weighted over 1000 ms
    // procs_running 3 counts the reader itself, as sar's runq-sz does not
    assert_eq!(r.runq_sz, 2);
    assert_eq!(r.plist_sz, 200);
    assert_eq!((r.ldavg_1, r.ldavg_5, r.ldavg_15), (0.5, 0.4, 0.3));
    // intr's first figure is the total; processes counts forks
    assert_eq!(r.intr_s, 1000.0);
    assert_eq!(r.proc_s, 10.0);
}

#[test]
fn a_32_bit_counter_that_wrapped() {
    let max = u64::from(u32::MAX);
    let a = synthetic(
        0,
        &format!("8 0 sda 0 0 {} 0 0 0 0 0 0 0 0\n", max - 7),
        0,
        0,
    );
    let b = synthetic(2_000_000_000, "8 0 sda 0 0 8 0 0 0 0 0 0 0 0\n", 0, 0);
    let r = derive(&a, &b, 0).unwrap();
    // 16 sectors = 8 KiB in 2 s
    assert_eq!(r.devices["sda"].rkb_s, 4.0);
}

#[test]
fn vmeff_is_steal_over_scan() {
    let a = synthetic(0, "", 100, 50);
    let b = synthetic(1_000_000_000, "", 300, 200);
    let r = derive(&a, &b, 0).unwrap();
    assert_eq!(r.paging.pgscank_s, 200.0);
    assert_eq!(r.paging.pgsteal_s, 150.0);
    assert_eq!(r.paging.vmeff_pct, 75.0);
    let same = derive(&b, &b, 0);
    assert!(same.is_none(), "no time passed, no record");
}

use oslab_stats::sawtooth::Sawtooth;
use oslab_wbsim::DeviceKind;

use super::judge::{Restore, blind_config, compare};
use super::*;
use crate::sim::validate::figures::Fig;
use oslab_services::sawtooth::model;

fn cell(device: SawDevice, rate_mib: u64, bg_mib: u64, periodic: bool) -> SawCell {
    SawCell {
        device,
        rate: rate_mib * MIB,
        background: bg_mib * MIB,
        periodic,
    }
}

fn device(cap: Option<u64>, measured: f64) -> SawDeviceRaw {
    SawDeviceRaw {
        device: if cap.is_some() {
            SawDevice::Testbed
        } else {
            SawDevice::Root
        },
        measured_bytes_s: measured,
        cap_bytes_s: cap,
        runs: Vec::new(),
        teardown_errors: Vec::new(),
        error: None,
    }
}

fn saw(peak: f64, trough: f64, period: Option<f64>) -> Sawtooth {
    Sawtooth {
        peak_median: Some(peak),
        trough_median: Some(trough),
        period,
        ..Sawtooth::default()
    }
}

#[test]
fn the_matrix_is_the_issues_twelve_cells() {
    let all = SawCell::matrix(&[SawDevice::Root, SawDevice::Testbed], &WRITERS);
    assert_eq!(all.len(), 12);
    let mut keys: Vec<String> = all.iter().map(SawCell::key).collect();
    keys.sort();
    keys.dedup();
    assert_eq!(keys.len(), 12, "every cell has a key of its own");
    assert_eq!(all[0].key(), "root.2mib_s.bg16mib.periodic_off");
    assert_eq!(all[11].key(), "testbed.10mib_s.bg64mib.periodic_on");
}

#[test]
fn knobs_set_the_limits_and_periodic_write_back() {
    let off = cell(SawDevice::Root, 5, 32, false).knobs();
    assert!(off.contains(&("vm.dirty_background_bytes", (32 * MIB).to_string())));
    assert!(off.contains(&("vm.dirty_bytes", HARD_LIMIT.to_string())));
    assert!(off.contains(&("vm.dirty_writeback_centisecs", "0".into())));
    let on = cell(SawDevice::Root, 5, 32, true).knobs();
    assert!(on.contains(&("vm.dirty_writeback_centisecs", "500".into())));
    assert!(on.contains(&("vm.dirty_expire_centisecs", "1000".into())));
}

#[test]
fn a_cell_lasts_the_first_fill_and_five_long_periods() {
    // 32 MiB at 5 MiB/s: 6.4 s to fill; the longest period (32 + 4) / 5 = 7.2 s
    assert_eq!(cell(SawDevice::Root, 5, 32, false).duration_s(), 44.0);
    // 16 / 2 = 8 s; (16 + 4) / 2 = 10 s: 8 + 52
    assert_eq!(cell(SawDevice::Root, 2, 16, true).duration_s(), 60.0);
}

#[test]
fn figures_are_held_to_ten_percent_or_the_floor_against_the_runs() {
    let c = cell(SawDevice::Root, 5, 32, false);
    let real = [
        saw(33.9, 0.2, Some(6.38)),
        saw(34.5, 0.1, Some(6.5)),
        saw(35.0, 0.3, Some(6.4)),
    ];
    let j = compare(c, &real, &[saw(35.9, 0.9, Some(7.2))]);
    assert_eq!(j.len(), 3);
    let by = |f: Fig| j.iter().find(|x| x.fig == f).unwrap();
    // 35.9 is 1.4 above the median 34.5: inside 3.45
    assert!(by(Fig::SawPeak).holds());
    // 0.9 against 0.2: within the 1 MiB floor
    assert!(by(Fig::SawTrough).holds());
    // 7.2 against 6.4: 0.8 off, allowance 0.64, outside 6.38-6.5
    assert!(!by(Fig::SawPeriod).holds());
    assert_eq!(
        by(Fig::SawPeriod).key(),
        "saw.root.5mib_s.bg32mib.periodic_off.period_s"
    );
}

#[test]
fn a_figure_the_simulation_lacks_is_a_miss_and_one_the_runs_lack_is_not_judged() {
    let c = cell(SawDevice::Testbed, 2, 16, false);
    let j = compare(c, &[saw(18.0, 0.1, None)], &[saw(18.0, 0.1, None)]);
    assert_eq!(j.len(), 2, "no real period: not judged");
    let j = compare(c, &[saw(18.0, 0.1, Some(9.0))], &[saw(18.0, 0.1, None)]);
    let period = j.iter().find(|x| x.fig == Fig::SawPeriod).unwrap();
    assert!(!period.holds());
    let text = period.miss_text("blind.");
    assert!(text.starts_with("blind.saw.testbed.2mib_s"), "{text}");
    assert!(text.contains("no sawtooth"), "{text}");
}

#[test]
fn only_the_issues_cells_are_known_and_a_hostile_cell_cannot_overflow() {
    assert!(cell(SawDevice::Root, 5, 32, false).is_known());
    assert!(!cell(SawDevice::Root, 5, 16, false).is_known());
    let hostile = SawCell {
        device: SawDevice::Root,
        rate: 0,
        background: u64::MAX,
        periodic: false,
    };
    assert!(!hostile.is_known());
    // no overflow (a panic in a debug build), a plain figure
    assert!(hostile.duration_s() > 1e12);
    // the fast-disk cells are known on the root disk with periodic write back
    // off only, as sim.validate runs them
    for (rate, bg) in [(4, 24), (6, 48), (8, 96)] {
        assert!(cell(SawDevice::Root, rate, bg, false).is_known());
        assert!(!cell(SawDevice::Root, rate, bg, true).is_known());
        assert!(!cell(SawDevice::Testbed, rate, bg, false).is_known());
    }
    let fast = SawCell::fast(&FAST_WRITERS);
    assert_eq!(fast.len(), 3);
    assert!(
        fast.iter()
            .all(|c| c.is_known() && c.device == SawDevice::Root)
    );
}

/// The issue's fast-disk case by hand: the 1874 MiB/s root disk, one 6 MiB/s
/// writer under background 48 MiB, the kernel's avg_write_bandwidth read at
/// 12 MiB/s just before the run. The first background pass writes one chunk of
/// round_down(12 / 2 + 4, 4) = 8 MiB and stops near 48.6 - 8 = 40.6 MiB, where a
/// start from the writer's steady state (an estimate near the device's speed)
/// empties the cache. The live column simulates each run from the state read
/// before it, so a run that went as the model says from there holds all three
/// figures, and a run with no live state read gives that column nothing.
#[test]
fn the_live_column_starts_each_run_from_the_state_read_before_it() {
    use oslab_services::sawtooth::KernelPoll;
    use oslab_services::timed_writer::Poll;
    use oslab_wbsim::config::Start;
    let mibf = MIB as f64;
    let c = cell(SawDevice::Root, 6, 48, false);
    let mut dev = device(None, 1874.0 * mibf);
    let live = crate::sim::live::traced_for_tests("253:0", (12.0 * mibf, 12.0 * mibf, None));
    let cfg = super::judge::live_config(&dev, &c, 250, &live);
    assert_eq!(cfg.start, Start::Given);
    let sim = model::simulated_run(&cfg);
    let drop = sim.y.windows(2).position(|w| w[1] < w[0] - 1.0).unwrap();
    let first_trough = sim.y[drop..]
        .windows(2)
        .find(|w| w[1] > w[0])
        .map(|w| w[0])
        .unwrap();
    assert!((39.0..=42.0).contains(&first_trough), "{first_trough}");
    let mut steady = cfg.clone();
    steady.start = Start::Steady;
    let empties = model::simulated_run(&steady).saw.trough_median.unwrap();
    assert!(empties < 5.0, "{empties}");

    let polls: Vec<KernelPoll> = sim
        .t
        .iter()
        .zip(&sim.y)
        .map(|(&t_s, &y)| KernelPoll {
            poll: Poll {
                t_s,
                dirty_bytes: (y * mibf) as u64,
                writeback_bytes: 0,
                files_dirty_bytes: 0,
                files_writeback_bytes: 0,
            },
            device_written_bytes: None,
            bdi_write_bandwidth_kbps: None,
        })
        .collect();
    let mut read_before = run_of(c, 0);
    read_before.saw.polls = polls.clone();
    read_before.live = Some(live);
    let mut not_read = run_of(c, 1);
    not_read.saw.polls = polls;
    not_read.live_not_read = Some("reading the kernel's estimates needs root".into());
    dev.runs = vec![read_before, not_read];
    let v = super::judge::judge(&[dev], 250, 0, Restore::NOTHING);
    assert_eq!(v.live.len(), 3, "{:?}", v.live);
    assert!(v.live.iter().all(|j| j.holds()), "{:?}", v.live);
    // judged against the run whose state was read only
    assert!(v.live.iter().all(|j| j.real.len() == 1));
    assert!(v.blind.iter().all(|j| j.real.len() == 2));
}

#[test]
fn the_blind_configuration_takes_the_probe_or_the_cap_and_the_cells_settings() {
    let root = blind_config(
        &device(None, 1.5e9),
        &cell(SawDevice::Root, 5, 32, true),
        250,
    );
    assert_eq!(root.device.bandwidth_bytes_s, 1.5e9);
    assert_eq!(root.sysctls.dirty_background_bytes, 32 * MIB);
    assert_eq!(root.sysctls.dirty_bytes, HARD_LIMIT);
    assert_eq!(root.sysctls.dirty_writeback_centisecs, 500);
    assert_eq!(root.sysctls.dirty_expire_centisecs, 1000);
    let tb = blind_config(
        &device(Some(40 * MIB), 39.0 * MIB as f64),
        &cell(SawDevice::Testbed, 10, 64, false),
        250,
    );
    assert_eq!(tb.device.kind, DeviceKind::Throttled);
    assert_eq!(tb.device.bandwidth_bytes_s, (40 * MIB) as f64);
    assert_eq!(tb.initial.write_bw_bytes_s, Some(39.0 * MIB as f64));
    assert_eq!(tb.sysctls.dirty_writeback_centisecs, 0);
}

#[test]
fn a_steady_writer_holds_the_estimate_at_its_own_rate_by_hand() {
    // 10 MiB/s under background 64 MiB on a 40 MiB/s device. Suppose the write
    // bandwidth estimate sits at the writer's 10 MiB/s: the chunk is
    // round_down(min(10 / 2, 4 GiB / 8) + 4, 4) = 8 MiB, one chunk brings Dirty
    // under the limit and the pass stops, so a pass comes every 8 / 10 = 0.8 s
    // and lasts 8 / 40 = 0.2 s. The 0.6 s between passes is under a second, so
    // the estimator counts it (it restarts only after an idle second) and
    // measures 8 MiB per 0.8 s: 10 MiB/s again, a fixed point. Dirty saws 8 MiB
    // deep (7 MiB at 10 Hz, the writer adding 1 MiB a sample) every 0.8 s.
    let c = cell(SawDevice::Testbed, 10, 64, false);
    let cfg = blind_config(&device(Some(40 * MIB), (40 * MIB) as f64), &c, 250);
    let out = oslab_wbsim::simulate(&cfg);
    let est = out.end_estimates.write_bw_bytes_s.unwrap() / MIB as f64;
    assert!((est - 10.0).abs() < 1.5, "estimate {est} MiB/s");
    let s = model::simulated(&cfg);
    let (peak, trough, period) = (
        s.peak_median.unwrap(),
        s.trough_median.unwrap(),
        s.period.unwrap(),
    );
    assert!((6.5..=8.5).contains(&(peak - trough)), "{peak} - {trough}");
    assert!((period - 0.8).abs() < 0.06, "{period}");
    assert!((64.0..66.5).contains(&peak), "{peak}");
}

fn run_of(c: SawCell, run: usize) -> SawRunRaw {
    SawRunRaw {
        cell: c,
        run,
        saw: oslab_services::sawtooth::SawRaw {
            sysctls_set: Vec::new(),
            sysctls_in_force: Default::default(),
            thresholds: Default::default(),
            page_bytes: 4096,
            disk: None,
            polls: Vec::new(),
            writer: Default::default(),
            bdi: None,
            kernel: Default::default(),
        },
        live: None,
        live_not_read: None,
    }
}

#[test]
fn a_run_stops_after_six_drops_as_the_real_runs_do_by_hand() {
    // the narrow band (above): the first drop when Dirty first reaches 64 MiB at
    // 10 MiB/s, about 6.4 s, then one every 0.8 s; the sixth trough is confirmed
    // once Dirty climbs 2.5 MiB (half of the 5 MiB drop that counts) above it,
    // 0.3 s after it: 6.4 + 5 x 0.8 + about 0.4 = about 10.8 s, against the
    // cell's bound of 6.4 + 5.2 x 6.8 = 42 s
    let c = cell(SawDevice::Testbed, 10, 64, false);
    let dev = device(Some(40 * MIB), (40 * MIB) as f64);
    let cfg = blind_config(&dev, &c, 250);
    let saw = judge::run_as_measured(&cfg, &c, CYCLES, Restore::NOTHING)
        .0
        .saw;
    assert_eq!(saw.peaks.len(), CYCLES, "{saw:?}");
    let t_end = saw.troughs.last().unwrap()[0];
    assert!(
        (10.0..=11.6).contains(&t_end),
        "the last trough at {t_end} s: {saw:?}"
    );
    assert!((saw.period.unwrap() - 0.8).abs() < 0.06, "{saw:?}");
    // 0 cycles: the whole bound, as the runs before the rule went
    let whole = judge::run_as_measured(&cfg, &c, 0, Restore::NOTHING).0.saw;
    assert!(whole.peaks.len() > 30, "{}", whole.peaks.len());
}

#[test]
fn the_blind_chain_starts_each_run_where_the_simulation_of_the_last_handed_on() {
    // 10 MiB/s under 64 MiB, then 5 MiB/s under 32 MiB on the 40 MiB/s testbed,
    // one after the other as sim.validate runs them (whole bounds, no stop rule):
    // the second run's simulation starts from the estimates the first one
    // handed on (after its end flush: periodic was off), not from the probe's
    // 40 MiB/s
    let fast = cell(SawDevice::Testbed, 10, 64, false);
    let slow = cell(SawDevice::Testbed, 5, 32, false);
    let mut dev = device(Some(40 * MIB), (40 * MIB) as f64);
    dev.runs = vec![run_of(fast, 0), run_of(slow, 0)];
    let chain = judge::blind_chain(&dev, 250, 0, Restore::of_machine(Some(500)));
    let given = |c: &SawCell, at: oslab_wbsim::config::Initial| {
        let mut cfg = blind_config(&dev, c, 250);
        cfg.start = oslab_wbsim::config::Start::Given;
        cfg.initial = at;
        judge::run_as_measured(&cfg, c, 0, Restore::of_machine(Some(500)))
    };
    let probe = oslab_wbsim::config::Initial {
        write_bw_bytes_s: Some((40 * MIB) as f64),
        avg_write_bw_bytes_s: Some((40 * MIB) as f64),
        ..Default::default()
    };
    let (first, after_first) = given(&fast, probe);
    let est = after_first.avg_write_bw_bytes_s.unwrap() / MIB as f64;
    // 24 MiB passes every 2.4 s sample 24 / (0.6 + 0.2) = 30 MiB/s: the
    // estimate comes down from the probe's 40
    assert!(
        (25.0..38.0).contains(&est),
        "the first run ended at {est} MiB/s"
    );
    let (second, _) = given(&slow, after_first);
    assert_eq!(chain, vec![Some(first), Some(second.clone())]);
    // from ~31 MiB/s the second run's chunks are round_down(15.5 + 4, 4) = 16
    // MiB: 32 -> 16.5 MiB at 10 Hz; from the probe's 40 they are 24 MiB, then
    // 20 MiB (troughs 8.5, then 12.5 MiB)
    let (fresh, _) = given(&slow, probe);
    assert_ne!(second, fresh);
    // a cell sim.validate does not run is not simulated
    let mut odd = dev.clone();
    odd.runs
        .push(run_of(cell(SawDevice::Testbed, 3, 32, false), 0));
    assert_eq!(
        judge::blind_chain(&odd, 250, 0, Restore::of_machine(Some(500)))[2],
        None
    );
}

#[test]
fn the_chain_starts_the_testbed_at_its_probe_and_the_root_disk_idle() {
    // the testbed was just written by mkfs at its own speed; the root disk got
    // nothing the estimator sees (direct-I/O probe, contested cells elsewhere)
    let tb = device(Some(40 * MIB), 38.0 * MIB as f64);
    assert_eq!(judge::first_estimate(&tb), 38.0 * MIB as f64);
    let root = device(None, 1400.0 * MIB as f64);
    assert_eq!(judge::first_estimate(&root), 4096.0);
    // from next to nothing the first pass on the root disk is the chunk rule's
    // floor, 4 MiB: 2 MiB/s under 16 MiB troughs at about 12 MiB, not 0
    let mut dev = root.clone();
    let c = cell(SawDevice::Root, 2, 16, false);
    dev.runs = vec![run_of(c, 0)];
    let first = judge::blind_chain(&dev, 250, CYCLES, Restore::of_machine(Some(500)))[0]
        .clone()
        .unwrap();
    assert!(
        (11.0..13.5).contains(&first.saw.troughs[0][1]),
        "{:?}",
        first.saw.troughs
    );
}

#[test]
fn a_hostile_raw_file_cannot_make_the_chain_run_away() {
    // more runs than sim.validate records, or a bandwidth no device has: the
    // device is not judged, and says why
    let c = cell(SawDevice::Testbed, 10, 64, false);
    let mut many = device(Some(40 * MIB), (40 * MIB) as f64);
    many.runs = (0..=judge::MAX_RUNS).map(|i| run_of(c, i)).collect();
    let v = judge::judge(&[many], 250, CYCLES, Restore::of_machine(Some(500)));
    assert!(v.blind.is_empty() && v.seeded.is_empty());
    assert!(v.empty[0].contains("more than sim.validate makes"), "{v:?}");
    // (a bandwidth next to nothing would make the end flush's drain endless)
    for b in [1e300, 1e-6, f64::NAN] {
        let mut odd = device(Some(40 * MIB), b);
        odd.runs = vec![run_of(c, 0)];
        let v = judge::judge(&[odd], 250, CYCLES, Restore::of_machine(Some(500)));
        assert!(v.blind.is_empty());
        assert!(v.empty[0].contains("no usable device bandwidth"), "{v:?}");
    }
}

#[test]
fn a_run_with_periodic_write_back_off_hands_on_the_estimate_after_its_end_flush() {
    // 10 MiB/s under 64 MiB on the 40 MiB/s testbed, periodic off, from the
    // probe's 40 MiB/s as the session starts: when the run ends, putting the
    // machine's interval (500) back wakes the flushers 10 ms later, which write
    // back all that is left dirty in one periodic pass; the estimate handed on
    // is the one after that flush. With periodic on (the cell sets 500 too), or
    // on a machine whose interval is 0, nothing happens.
    let machine = Restore::of_machine(Some(500));
    let off = cell(SawDevice::Testbed, 10, 64, false);
    let dev = device(Some(40 * MIB), (40 * MIB) as f64);
    let mut cfg = blind_config(&dev, &off, 250);
    cfg.start = oslab_wbsim::config::Start::Given;
    cfg.initial.write_bw_bytes_s = Some((40 * MIB) as f64);
    cfg.initial.avg_write_bw_bytes_s = Some((40 * MIB) as f64);
    let (plain, plain_end) = judge::run_as_measured(&cfg, &off, CYCLES, Restore::NOTHING);
    let (flushed, flushed_end) = judge::run_as_measured(&cfg, &off, CYCLES, machine);
    // the run itself is the same
    assert_eq!(plain, flushed);
    // the run again, to its stop, then the flush
    let whole = model::simulated_run(&cfg);
    let stop =
        oslab_stats::sawtooth::cycle_confirmed_at(&whole.t, &whole.y, off.min_drop_mib(), CYCLES)
            .expect("six drops within the bound");
    let mut short = cfg.clone();
    short.duration_s = stop;
    let run = model::simulated_run(&short).outcome;
    let tail = judge::after_restore(&cfg, stop, &run);
    let last = *tail.flushes.last().unwrap();
    assert_eq!(last.kind, oslab_wbsim::outcome::FlushKind::Periodic);
    assert!(
        (last.t_s - (stop + 0.01)).abs() < 1e-6,
        "{} vs {stop}",
        last.t_s
    );
    assert_eq!(last.pages * 4096, run.end_dirty);
    assert!(run.end_dirty > 40 * MIB, "{}", run.end_dirty);
    assert_eq!((tail.end_dirty, tail.end_writeback), (0, 0));
    assert_eq!(flushed_end, tail.end_estimates);
    assert_ne!(flushed_end, plain_end);
    let on = cell(SawDevice::Testbed, 10, 64, true);
    let mut cfg_on = blind_config(&dev, &on, 250);
    cfg_on.start = oslab_wbsim::config::Start::Given;
    assert_eq!(
        judge::run_as_measured(&cfg_on, &on, CYCLES, Restore::NOTHING).1,
        judge::run_as_measured(&cfg_on, &on, CYCLES, machine).1
    );
    assert!(!Restore::of_machine(Some(0)).wakes_after(&off));
    assert!(machine.wakes_after(&off) && !machine.wakes_after(&on));
    // a machine at another interval is woken after either kind of cell
    assert!(Restore::of_machine(Some(1500)).wakes_after(&on));
    assert_eq!(Restore::of_machine(None), machine);
}

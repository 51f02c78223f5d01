//! The steady-state start: the kernel's estimates for a device (write bandwidth,
//! dirty_ratelimit, the domain's smoothed limit) move slowly from where they
//! start (INIT_BW for a device the kernel has just met) toward a fixed point set
//! by the writers and the device. A user's question is about that fixed point, not
//! about the first minute after boot, so by default the writers first run a
//! simulated warm-up, window after window, each starting from the estimates the
//! last one ended with, until two windows in a row end within [`SETTLED`] of each
//! other; the run then starts from those estimates with nothing dirty.

use crate::config::{Config, Initial, Kind, Start};
use crate::outcome::{Outcome, StartRecord};

/// One warm-up window, simulated seconds: dirty_ratelimit moves by at most an
/// eighth of its gap per 200 ms refresh, the write bandwidth over a 3 s average.
pub const WINDOW_S: f64 = 20.0;
/// The most windows before the run starts anyway (its record says so).
pub const MAX_WINDOWS: u32 = 10;
/// Relative change of every estimate between windows that counts as settled.
pub const SETTLED: f64 = 0.02;

/// `cfg`'s writers as they run in a warm-up window: all of them from the start to
/// the end (a periodic writer as many times as the window holds), from `initial`.
pub fn warm_up_window(cfg: &Config, initial: Initial) -> Config {
    let mut warm = cfg.clone();
    for w in &mut warm.writers {
        w.start_ms = 0.0;
        w.stop_ms = None;
        if let Kind::Periodic {
            period_ms, count, ..
        } = &mut w.kind
        {
            *count = (WINDOW_S * 1e3 / period_ms.max(1e-3)).ceil() as u64;
        }
    }
    warm.duration_s = WINDOW_S;
    warm.start = Start::Given;
    warm.initial = initial;
    warm
}

/// Whether two windows' closing estimates agree within [`SETTLED`].
fn settled(a: &Initial, b: &Initial) -> bool {
    let close = |x: Option<f64>, y: Option<f64>| match (x, y) {
        (Some(x), Some(y)) => (x - y).abs() <= SETTLED * x.abs().max(y.abs()),
        _ => false,
    };
    close(a.write_bw_bytes_s, b.write_bw_bytes_s)
        && close(a.avg_write_bw_bytes_s, b.avg_write_bw_bytes_s)
        && close(a.dirty_ratelimit_bytes_s, b.dirty_ratelimit_bytes_s)
}

/// How a warm-up went: the estimates it ended at, simulated seconds, whether
/// they settled, events simulated.
pub struct WarmUp {
    pub estimates: Initial,
    pub seconds: f64,
    pub settled: bool,
    pub events: u64,
}

/// The estimates the writers of `cfg` settle at.
pub fn steady_state(cfg: &Config) -> WarmUp {
    let mut warm = WarmUp {
        estimates: cfg.initial,
        seconds: 0.0,
        settled: false,
        events: 0,
    };
    while !warm.settled && warm.seconds < f64::from(MAX_WINDOWS) * WINDOW_S {
        let window = crate::engine::run_from_given(&warm_up_window(cfg, warm.estimates));
        let end = window.end_estimates;
        warm.events += window.events;
        warm.seconds += WINDOW_S;
        warm.settled = settled(&warm.estimates, &end);
        // the share of completions is the run's own, as in `initial`
        warm.estimates = Initial {
            wb_share: cfg.initial.wb_share,
            ..end
        };
    }
    warm
}

/// The run of `cfg` from the steady state of its writers.
pub fn run_from_steady_state(cfg: &Config) -> Outcome {
    let warm = steady_state(cfg);
    let mut run = cfg.clone();
    run.start = Start::Given;
    run.initial = warm.estimates;
    let mut out = crate::engine::run_from_given(&run);
    out.start = StartRecord {
        start: Start::Steady,
        warm_up_s: warm.seconds,
        settled: warm.settled,
        warm_up_events: warm.events,
        ..out.start
    };
    out
}

/// `live`'s estimates where it has them, the steady state's elsewhere (the
/// steady state is simulated only when one is missing).
pub fn completed(cfg: &Config, live: Initial) -> Initial {
    let missing = live.write_bw_bytes_s.is_none()
        || live.avg_write_bw_bytes_s.is_none()
        || live.dirty_ratelimit_bytes_s.is_none();
    if !missing {
        return live;
    }
    let steady = steady_state(cfg).estimates;
    Initial {
        write_bw_bytes_s: live.write_bw_bytes_s.or(steady.write_bw_bytes_s),
        avg_write_bw_bytes_s: live.avg_write_bw_bytes_s.or(steady.avg_write_bw_bytes_s),
        dirty_ratelimit_bytes_s: live
            .dirty_ratelimit_bytes_s
            .or(steady.dirty_ratelimit_bytes_s),
        dirty_limit_bytes: live.dirty_limit_bytes,
        wb_share: live.wb_share,
    }
}

/// `cfg` (a live start) as the run it simulates: from `cfg.initial` completed
/// from the steady state, a given start. A caller that needs the run's figures
/// and not the record of when the writers would settle (a judge) simulates this
/// and saves that second search.
pub fn given_from_live(cfg: &Config) -> Config {
    let mut run = cfg.clone();
    run.start = Start::Given;
    run.initial = completed(cfg, cfg.initial);
    run
}

/// The run of `cfg` from the kernel's estimates read just before it
/// (`cfg.initial`, completed from the steady state), with nothing dirty; its
/// record says how long the writers would take to settle from there.
pub fn run_from_live_state(cfg: &Config) -> Outcome {
    let run = given_from_live(cfg);
    let mut out = crate::engine::run_from_given(&run);
    let onward = steady_state(&run);
    out.start = StartRecord {
        start: Start::Live,
        warm_up_events: onward.events,
        steady_after_s: onward.settled.then_some(onward.seconds),
        ..out.start
    };
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Class, MIB, WriterCfg};

    fn writer(name: &str, kind: Kind) -> WriterCfg {
        WriterCfg {
            name: name.into(),
            kind,
            class: Class::Normal { nice: 0 },
            group: None,
            fsync_every: None,
            start_ms: 500.0,
            stop_ms: Some(3000.0),
        }
    }

    /// Two bulk writers on the testbed scenario's 40 MiB/s throttled device,
    /// 64/32 MiB limits, from INIT_BW, the limits checked after every page (with
    /// 2 MiB folios the writers overshoot between checks and the rate settles
    /// higher, at 23 MiB/s: the step rule has a dead band).
    fn two_bulk_writers() -> Config {
        let bulk = Kind::Bulk { chunk: 512 << 10 };
        let mut c = crate::scenario::find("testbed-bulk").unwrap().config;
        c.writers = vec![writer("a", bulk), writer("b", bulk)];
        c.folio_bytes = 4096;
        c.initial = Initial::default();
        c.duration_s = 10.0;
        c
    }

    #[test]
    fn a_warm_up_window_runs_every_writer_for_the_whole_window() {
        let mut c = two_bulk_writers();
        c.writers[1].kind = Kind::Periodic {
            bytes: 512 << 10,
            period_ms: 20.0,
            count: 5,
        };
        let w = warm_up_window(&c, Initial::default());
        assert_eq!((w.duration_s, w.start), (WINDOW_S, Start::Given));
        assert!(
            w.writers
                .iter()
                .all(|x| x.start_ms == 0.0 && x.stop_ms.is_none())
        );
        // 20 s of one write every 20 ms
        assert!(matches!(
            w.writers[1].kind,
            Kind::Periodic { count: 1000, .. }
        ));
    }

    #[test]
    fn two_throttled_writers_settle_at_half_the_device_each() {
        // the balanced rate is task_ratelimit x write_bw / dirty_rate: the rate at
        // which N throttled writers together dirty what the device writes, so at
        // the fixed point dirty_ratelimit = 40 / 2 = 20 MiB/s and the bandwidth
        // estimate is the device's 40 MiB/s (from INIT_BW's 100 MiB/s for both)
        let warm = steady_state(&two_bulk_writers());
        let at = warm.estimates;
        let mib = |x: Option<f64>| x.unwrap() / MIB as f64;
        assert!(
            warm.settled,
            "still moving after {} s: {at:?}",
            warm.seconds
        );
        assert!(warm.events > 0);
        assert!((mib(at.avg_write_bw_bytes_s) - 40.0).abs() < 2.0, "{at:?}");
        assert!(
            (mib(at.dirty_ratelimit_bytes_s) - 20.0).abs() < 2.0,
            "{at:?}"
        );
    }

    #[test]
    fn the_run_starts_from_the_steady_state_or_as_given() {
        let mut c = two_bulk_writers();
        let steady = crate::engine::simulate(&c);
        assert_eq!(steady.start.start, Start::Steady);
        assert!(steady.start.warm_up_s >= WINDOW_S);
        assert!((steady.start.dirty_ratelimit / MIB as f64 - 20.0).abs() < 2.0);
        c.start = Start::Given;
        let given = crate::engine::simulate(&c);
        assert_eq!(given.start.start, Start::Given);
        assert_eq!(given.start.warm_up_s, 0.0);
        // INIT_BW: 100 MiB/s
        assert_eq!(given.start.dirty_ratelimit, (100 << 20) as f64);
    }

    /// The fast disk: a 6 MiB/s writer under a 48 MiB background limit,
    /// dirty_bytes 512 MiB, periodic write back off, on a 1874 MiB/s disk.
    fn fast_disk(initial: Initial, start: Start) -> Config {
        let mut c = crate::scenario::find("testbed-fig2").unwrap().config;
        c.device = crate::config::DeviceCfg {
            kind: crate::config::DeviceKind::Disk,
            bandwidth_bytes_s: 1874.0 * MIB as f64,
            request_latency_ns: 0,
            max_request_bytes: 512 << 10,
            queue_bytes: 64 * MIB,
        };
        c.sysctls = crate::config::Sysctls {
            dirty_bytes: 512 * MIB,
            dirty_background_bytes: 48 * MIB,
            dirty_ratio: 0,
            dirty_background_ratio: 0,
            dirty_writeback_centisecs: 0,
            dirty_expire_centisecs: 3000,
        };
        let mut w = writer(
            "w",
            Kind::Rate {
                bytes_per_s: 6.0 * MIB as f64,
                chunk: 6 * MIB / 10,
            },
        );
        w.start_ms = 0.0;
        w.stop_ms = None;
        c.writers = vec![w];
        c.duration_s = 12.0;
        c.initial = initial;
        c.start = start;
        c
    }

    /// Dirty + Writeback at its lowest in the second after the first peak, MiB.
    fn first_trough(o: &Outcome) -> f64 {
        let mib = |s: &crate::outcome::Sample| (s.dirty + s.writeback) as f64 / MIB as f64;
        let peak = o
            .samples
            .iter()
            .max_by(|a, b| mib(a).total_cmp(&mib(b)))
            .unwrap();
        o.samples
            .iter()
            .filter(|s| s.t_s > peak.t_s && s.t_s < peak.t_s + 1.0)
            .map(mib)
            .fold(f64::MAX, f64::min)
    }

    /// Started by hand from avg_write_bandwidth 12 MiB/s (the kernel's state in
    /// the run 1), the first background pass writes one chunk of
    /// round_down(6 + 4, 4) = 8 MiB and stops under the limit: the trough is the
    /// peak (48 MiB and a few pages) less 8. From the steady state (an estimate
    /// the kernel reaches only after minutes) the pass empties the cache.
    #[test]
    fn a_live_start_begins_at_the_estimates_read_and_the_first_pass_is_their_chunk() {
        let rate = |m: f64| Some(m * MIB as f64);
        let read = Initial {
            write_bw_bytes_s: rate(12.0),
            avg_write_bw_bytes_s: rate(12.0),
            dirty_ratelimit_bytes_s: rate(100.0),
            ..Initial::default()
        };
        let live = crate::simulate(&fast_disk(read, Start::Live));
        assert_eq!(live.start.start, Start::Live);
        assert_eq!(live.start.avg_write_bw, 12.0 * MIB as f64);
        assert_eq!(live.start.write_bw, 12.0 * MIB as f64);
        let trough = first_trough(&live);
        assert!((39.5..42.0).contains(&trough), "{trough}");
        let steady = crate::simulate(&fast_disk(Initial::default(), Start::Steady));
        assert!(first_trough(&steady) < 5.0, "{}", first_trough(&steady));
    }

    /// What the kernel did not show comes from the steady state; what it showed
    /// is kept as read.
    #[test]
    fn a_live_start_takes_what_was_not_read_from_the_steady_state() {
        let read = Initial {
            avg_write_bw_bytes_s: Some(12.0 * MIB as f64),
            ..Initial::default()
        };
        let c = fast_disk(read, Start::Live);
        let steady = steady_state(&c).estimates;
        let done = completed(&c, read);
        assert_eq!(done.avg_write_bw_bytes_s, Some(12.0 * MIB as f64));
        assert_eq!(done.write_bw_bytes_s, steady.write_bw_bytes_s);
        assert_eq!(done.dirty_ratelimit_bytes_s, steady.dirty_ratelimit_bytes_s);
    }
}

//! `oslab dirty advise`: the material's "flush in units the device can absorb" made
//! quantitative.
//!
//! Given the device's sustained write bandwidth B, the workload's dirtying rate R and
//! a target for the longest a writer should be held back, T:
//! - background limit = about 1 s of device bandwidth (B x 1 s, at least 4 MiB): one
//!   background flush is a second of device work;
//! - hard limit = background + 2 x B x T: the free-run ceiling (the midpoint) then sits
//!   B x T above the background limit, so a writer that reaches the hard limit waits
//!   about T for the device to bring Dirty back to the ceiling;
//! - expire = background / R (1 s to 30 s): the periodic pass never finds more than
//!   one background flush worth of old data; writeback interval = expire / 2 (1-5 s).
//!
//! The predicted Dirty curve comes from the same rules the wb experiments check.

use oslab_units::{human_bytes, human_rate};
use serde::Serialize;

use super::dirty_rules;

#[derive(Debug, Clone, Copy, Serialize)]
pub struct AdviceInputs {
    pub device_bytes_s: f64,
    pub dirty_rate_bytes_s: f64,
    pub target_latency_s: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Advice {
    pub inputs: AdviceInputs,
    pub dirty_background_bytes: u64,
    pub dirty_bytes: u64,
    pub dirty_expire_centisecs: u64,
    pub dirty_writeback_centisecs: u64,
    /// Plain-words reasoning, one line per setting.
    pub reasons: Vec<String>,
    /// What Dirty should do under these settings.
    pub prediction: String,
    pub warnings: Vec<String>,
}

const MIB: f64 = (1u64 << 20) as f64;

/// The least background limit advised: below it each flush is too small to be
/// efficient on any device.
const MIN_BACKGROUND: u64 = 4 << 20;
const MIN_EXPIRE_S: f64 = 1.0;
const MAX_EXPIRE_S: f64 = 30.0;
const MIN_WRITEBACK_S: f64 = 1.0;
/// The kernel's default dirty_writeback_centisecs (500).
const MAX_WRITEBACK_S: f64 = 5.0;

fn mib_text(mib: f64) -> String {
    human_bytes((mib * MIB).max(0.0).round() as u64)
}

fn round_mib(b: f64) -> u64 {
    ((b / MIB).round().max(1.0) as u64) << 20
}

/// The least device bandwidth `oslab dirty advise` takes from a user: the advice
/// comes in whole MiB with a 4 MiB floor, so below 1 MiB/s no setting it can give
/// holds a writer at the hard limit for less than seconds, whatever the target.
/// The same minimum as the testbed's `--bandwidth`.
pub const MIN_DEVICE_BYTES_S: f64 = MIB;

/// The figures the advice reasons with, all as used.
struct Figures {
    b: f64,
    r: f64,
    t: f64,
    bg: u64,
    hard: u64,
    one_second: u64,
    expire_wanted: f64,
    expire_s: f64,
    writeback_s: f64,
}

/// One plain-words line per setting, naming the figures used.
fn reasons(f: &Figures) -> Vec<String> {
    let background = if f.one_second >= MIN_BACKGROUND {
        format!(
            "dirty_background_bytes {} MiB: about one second of the device's {}, so each background flush is a second of device work",
            f.bg >> 20,
            human_rate(f.b)
        )
    } else {
        format!(
            "dirty_background_bytes {} MiB: the floor; one second of the device's {} would be less, and smaller flushes cost more per byte",
            f.bg >> 20,
            human_rate(f.b)
        )
    };
    let ceiling = (f.bg + f.hard) / 2;
    let wait_s = (ceiling - f.bg) as f64 / f.b;
    let hard_reason = if f.hard == f.bg * 2 && round_mib(f.bg as f64 + 2.0 * f.b * f.t) < f.bg * 2 {
        format!(
            "dirty_bytes {} MiB: twice the background limit (the least that leaves room above it); the free-run ceiling ({} MiB) sits {wait_s:.2} s of device work above the background limit, so a writer at the hard limit waits about {wait_s:.2} s",
            f.hard >> 20,
            ceiling >> 20
        )
    } else {
        format!(
            "dirty_bytes {} MiB: the free-run ceiling ({} MiB) sits {wait_s:.2} s of device work above the background limit, so a writer at the hard limit waits about {wait_s:.2} s (target {} s)",
            f.hard >> 20,
            ceiling >> 20,
            f.t
        )
    };
    let expire_reason = if f.r <= 0.0 {
        format!(
            "dirty_expire_centisecs {}: at a dirtying rate of 0 no data grows old waiting for a background flush, so the longest the kernel allows",
            (f.expire_s * 100.0).round()
        )
    } else if f.expire_wanted > MAX_EXPIRE_S {
        format!(
            "dirty_expire_centisecs {}: at {} one background flush worth of data takes longer than {MAX_EXPIRE_S:.0} s to dirty, so data is not left older than that",
            (f.expire_s * 100.0).round(),
            human_rate(f.r)
        )
    } else if f.expire_wanted < MIN_EXPIRE_S {
        format!(
            "dirty_expire_centisecs {}: the shortest worth setting; at {} the periodic pass will find more than one background flush worth of old data",
            (f.expire_s * 100.0).round(),
            human_rate(f.r)
        )
    } else {
        format!(
            "dirty_expire_centisecs {}: at {} the periodic pass then finds at most one background flush worth of old data",
            (f.expire_s * 100.0).round(),
            human_rate(f.r)
        )
    };
    let writeback_reason = if (f.writeback_s - f.expire_s / 2.0).abs() < 1e-9 {
        format!(
            "dirty_writeback_centisecs {}: half the expire time, so old data waits at most {:.1} s",
            (f.writeback_s * 100.0).round(),
            f.expire_s + f.writeback_s
        )
    } else if f.writeback_s >= MAX_WRITEBACK_S {
        format!(
            "dirty_writeback_centisecs {}: the kernel's default interval (half the expire time would wake the flusher less often than that for little gain), so old data waits at most {:.1} s",
            (f.writeback_s * 100.0).round(),
            f.expire_s + f.writeback_s
        )
    } else {
        format!(
            "dirty_writeback_centisecs {}: the shortest interval worth waking the flusher for, so old data waits at most {:.1} s",
            (f.writeback_s * 100.0).round(),
            f.expire_s + f.writeback_s
        )
    };
    vec![background, hard_reason, expire_reason, writeback_reason]
}

/// The advice for `i`. Every figure in the reasoning is the one used, in a unit that
/// shows it: the device bandwidth must be positive (the CLI refuses a given one
/// below [`MIN_DEVICE_BYTES_S`]; a measured one is taken as it is), the target is
/// taken as given.
pub fn advise(i: AdviceInputs) -> Advice {
    let b = i.device_bytes_s.max(1.0);
    let r = i.dirty_rate_bytes_s.max(0.0);
    let t = i.target_latency_s;
    let one_second = round_mib(b);
    let bg = one_second.max(MIN_BACKGROUND);
    let hard = round_mib(bg as f64 + 2.0 * b * t).max(bg * 2);
    let expire_wanted = if r > 0.0 {
        bg as f64 / r
    } else {
        f64::INFINITY
    };
    let expire_s = expire_wanted.clamp(MIN_EXPIRE_S, MAX_EXPIRE_S);
    let writeback_s = (expire_s / 2.0).clamp(MIN_WRITEBACK_S, MAX_WRITEBACK_S);
    let mut warnings = Vec::new();
    if r > b {
        warnings.push(format!(
            "the workload dirties {} but the device writes {}: writers will be throttled whatever the settings",
            human_rate(r),
            human_rate(b)
        ));
    }
    let f = Figures {
        b,
        r,
        t,
        bg,
        hard,
        one_second,
        expire_wanted,
        expire_s,
        writeback_s,
    };
    let reasons = reasons(&f);
    let prediction = if r <= 0.0 {
        "at a dirtying rate of 0, Dirty stays near 0".to_string()
    } else if r > b {
        // the flusher cannot keep up: Dirty rises at r to the background limit,
        // then at r - b to the free-run ceiling, where writers are paced to b
        let ceiling = (bg + hard) as f64 / 2.0;
        let reach_s = bg as f64 / r + (ceiling - bg as f64) / (r - b);
        format!(
            "no sawtooth: the flusher cannot keep up, so Dirty climbs to about {} (halfway between the limits) within {reach_s:.1} s and stays there, writers paced to the device's {}",
            mib_text(ceiling / MIB),
            human_rate(b)
        )
    } else {
        let per = dirty_rules::periodic(r as u64, expire_s, writeback_s);
        if per.peak_mib * MIB < bg as f64 {
            format!(
                "the periodic pass flushes first: Dirty climbs to about {} and drops to ~0 every {:.1} s",
                mib_text(per.peak_mib),
                per.period_s
            )
        } else {
            let p = dirty_rules::background(r as u64, bg, hard);
            format!(
                "the background flusher holds Dirty between about {} and {}, flushing every {:.1} s (first after {:.1} s)",
                mib_text(p.trough_mib),
                mib_text(p.peak_mib),
                p.period_s,
                p.first_peak_s
            )
        }
    };
    Advice {
        inputs: i,
        dirty_background_bytes: bg,
        dirty_bytes: hard,
        dirty_expire_centisecs: (expire_s * 100.0).round() as u64,
        dirty_writeback_centisecs: (writeback_s * 100.0).round() as u64,
        reasons,
        prediction,
        warnings,
    }
}

impl Advice {
    /// `sysctl -w` lines that apply the advice (ratios first: the pairs are exclusive).
    pub fn sysctl_lines(&self) -> Vec<(String, String)> {
        vec![
            (
                "vm.dirty_background_bytes".into(),
                self.dirty_background_bytes.to_string(),
            ),
            ("vm.dirty_bytes".into(), self.dirty_bytes.to_string()),
            (
                "vm.dirty_expire_centisecs".into(),
                self.dirty_expire_centisecs.to_string(),
            ),
            (
                "vm.dirty_writeback_centisecs".into(),
                self.dirty_writeback_centisecs.to_string(),
            ),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_writer_faster_than_the_device_gets_no_sawtooth() {
        let a = advise(AdviceInputs {
            device_bytes_s: 50.0 * MIB,
            dirty_rate_bytes_s: 500.0 * MIB,
            target_latency_s: 1.0,
        });
        assert!(a.warnings[0].contains("writers will be throttled"));
        assert!(a.prediction.starts_with("no sawtooth"), "{}", a.prediction);
        // background 50 MiB, hard 150 MiB: the ceiling is 100 MiB, reached after
        // 0.1 s at 500 MiB/s and 50 MiB more at 450 MiB/s
        assert!(a.prediction.contains("about 100 MiB"), "{}", a.prediction);
        assert!(a.prediction.contains("within 0.2 s"), "{}", a.prediction);
    }

    #[test]
    fn ten_mib_device_gets_ten_mib_flushes() {
        let a = advise(AdviceInputs {
            device_bytes_s: 10.0 * MIB,
            dirty_rate_bytes_s: 2.0 * MIB,
            target_latency_s: 1.0,
        });
        assert_eq!(a.dirty_background_bytes, 10 << 20);
        assert_eq!(a.dirty_bytes, 30 << 20);
        assert_eq!(a.dirty_expire_centisecs, 500);
        assert_eq!(a.dirty_writeback_centisecs, 250);
        assert!(a.warnings.is_empty());
        assert_eq!(a.sysctl_lines().len(), 4);
    }

    #[test]
    fn a_faster_device_flushes_in_bigger_units_and_less_often() {
        let slow = advise(AdviceInputs {
            device_bytes_s: 10.0 * MIB,
            dirty_rate_bytes_s: 4.0 * MIB,
            target_latency_s: 1.0,
        });
        let fast = advise(AdviceInputs {
            device_bytes_s: 100.0 * MIB,
            dirty_rate_bytes_s: 4.0 * MIB,
            target_latency_s: 1.0,
        });
        assert!(fast.dirty_background_bytes > slow.dirty_background_bytes);
        assert!(fast.dirty_expire_centisecs > slow.dirty_expire_centisecs);
    }

    #[test]
    fn outrunning_the_device_is_a_warning() {
        let a = advise(AdviceInputs {
            device_bytes_s: 10.0 * MIB,
            dirty_rate_bytes_s: 20.0 * MIB,
            target_latency_s: 1.0,
        });
        assert_eq!(a.warnings.len(), 1);
    }

    /// Regression: the writeback line said "half the expire time" while the advice
    /// kept 500 with expire 3000.
    #[test]
    fn the_reasoning_matches_the_numbers() {
        let slow_writer = advise(AdviceInputs {
            device_bytes_s: 40.0 * MIB,
            dirty_rate_bytes_s: 0.5 * MIB,
            target_latency_s: 1.0,
        });
        assert_eq!(slow_writer.dirty_expire_centisecs, 3000);
        assert_eq!(slow_writer.dirty_writeback_centisecs, 500);
        let wb = &slow_writer.reasons[3];
        assert!(!wb.contains("half the expire time,"), "{wb}");
        assert!(wb.contains("default"), "{wb}");
        assert!(slow_writer.reasons[2].contains("longer than 30 s"));

        let even = advise(AdviceInputs {
            device_bytes_s: 10.0 * MIB,
            dirty_rate_bytes_s: 2.0 * MIB,
            target_latency_s: 1.0,
        });
        assert!(even.reasons[3].contains("half the expire time"));
        // the wait named is the one the limits give
        assert!(
            even.reasons[1].contains("waits about 1.00 s"),
            "{}",
            even.reasons[1]
        );
    }

    /// Regression: a 1 byte/s device was reasoned about as 1 MiB/s while the header
    /// echoed 1 byte/s, then echoed as "0.00 MiB/s".
    #[test]
    fn a_tiny_device_is_reasoned_about_as_given() {
        let a = advise(AdviceInputs {
            device_bytes_s: 1.0,
            dirty_rate_bytes_s: 0.0,
            target_latency_s: 1.0,
        });
        assert_eq!(a.dirty_background_bytes, 4 << 20);
        assert!(a.reasons[0].contains("the floor"), "{}", a.reasons[0]);
        assert!(a.reasons[0].contains("device's 1 B/s"), "{}", a.reasons[0]);
        assert!(a.reasons[1].contains("twice the background limit"));
        assert!(
            a.reasons[2].contains("a dirtying rate of 0"),
            "{}",
            a.reasons[2]
        );
    }

    /// Regression: a slow dirtying rate and the Dirty levels it gives were printed
    /// as "0.00 MiB/s" and "0.0 MiB".
    #[test]
    fn a_slow_writer_is_shown_in_units_that_show_it() {
        let a = advise(AdviceInputs {
            device_bytes_s: 50.0 * MIB,
            dirty_rate_bytes_s: 2048.0,
            target_latency_s: 1.0,
        });
        assert!(a.reasons[2].contains("at 2 KiB/s "), "{}", a.reasons[2]);
        assert!(!a.prediction.contains(" 0.0 MiB"), "{}", a.prediction);
        assert!(a.prediction.contains("KiB"), "{}", a.prediction);
    }
}

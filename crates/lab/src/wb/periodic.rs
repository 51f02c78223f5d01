//! `wb.periodic`: see [`super::sawexp`] for method and rules.

use std::time::Duration;

use oslab_sys::parse::size::human_bytes;

use super::sawexp::{self, Prediction, compare, output, run_sawtooth};
use crate::experiment::{Context, Experiment, LabError, Meta, Needs, Outcome};
use crate::settings::{AnySetting, Declared, Seconds, Setting};

pub struct Periodic;

static META: Meta = Meta {
    id: "wb.periodic",
    title: "Periodic write back: Dirty drops to ~0 every expire + (up to) one interval",
    section: "4",
    summary: "limits far away, expire and writeback intervals set, a steady writer: peaks and period vs prediction",
    needs: Needs {
        root: true,
        min_cpus: 1,
        free_disk_bytes: 0,
    },
    quick_s: 25.0,
    full_s: 60.0,
    internal: false,
};

static EXPIRE: Setting<Seconds> = Setting {
    name: "expire",
    help: "vm.dirty_expire_centisecs in seconds",
    quick: 10.0,
    full: 10.0,
    bounds: Some((1.0, 600.0)),
    names: &[],
};
static INTERVAL: Setting<Seconds> = Setting {
    name: "interval",
    help: "vm.dirty_writeback_centisecs in seconds",
    quick: 5.0,
    full: 5.0,
    bounds: Some((1.0, 600.0)),
    names: &[],
};
static SETTINGS: [&dyn AnySetting; 4] = [&sawexp::RATE, &EXPIRE, &INTERVAL, &sawexp::DURATION];

pub fn predict(rate: u64, expire_s: f64, interval_s: f64) -> Prediction {
    let period = interval_s * (expire_s / interval_s).ceil();
    let peak = rate as f64 * period / (1 << 20) as f64;
    Prediction {
        first_peak_s: period,
        peak_mib: peak,
        trough_mib: 0.0,
        period_s: period,
    }
}

impl Experiment for Periodic {
    fn meta(&self) -> &Meta {
        &META
    }

    fn settings(&self) -> Declared {
        &SETTINGS
    }

    fn run(&self, ctx: &mut Context) -> Result<Outcome, LabError> {
        let rate = ctx.get(&sawexp::RATE);
        let expire = ctx.get(&EXPIRE);
        let interval = ctx.get(&INTERVAL);
        let secs = ctx.get(&sawexp::DURATION);
        let p = predict(rate, expire, interval);
        // Limits far above what the writer can reach, so only the periodic pass flushes.
        let far = (rate as f64 * secs * 2.0) as u64 + (256 << 20);
        let knobs = [
            ("vm.dirty_background_bytes", far.to_string()),
            ("vm.dirty_bytes", (far * 2).to_string()),
            (
                "vm.dirty_expire_centisecs",
                ((expire * 100.0).round() as u64).to_string(),
            ),
            (
                "vm.dirty_writeback_centisecs",
                ((interval * 100.0).round() as u64).to_string(),
            ),
        ];
        let (polls, saw, lat) =
            run_sawtooth(ctx, META.id, &knobs, rate, Duration::from_secs_f64(secs))?;
        let (findings, claim) = compare(
            &saw,
            &p,
            "periodic-expiry",
            "The flusher wakes every dirty_writeback_centisecs and writes pages older than dirty_expire_centisecs, so Dirty drops to ~0 periodically",
            "material 4 (seed 001, experiment B: ~9.5 MB peaks with expire 10 s)",
        );
        let notes = vec![format!(
            "writer {}/s; expire {expire} s, writeback interval {interval} s; background and hard limits set to {} and {} so they never trigger (journaled, restored)",
            human_bytes(rate),
            human_bytes(far),
            human_bytes(far * 2)
        )];
        Ok(output(
            &polls,
            &p,
            vec![claim],
            findings,
            "Dirty under periodic write back",
            notes,
            &lat,
            ctx.config.seed,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expire_ten_writeback_five_gives_ten_seconds() {
        let p = predict(4 << 20, 10.0, 5.0);
        assert_eq!(p.period_s, 10.0);
        assert_eq!(p.peak_mib, 40.0);
        // expire 12 s with 5 s wake-ups: the third wake-up (15 s) writes
        assert_eq!(predict(1 << 20, 12.0, 5.0).period_s, 15.0);
    }
}

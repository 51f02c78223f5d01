//! `wb.background`: see [`super::sawexp`] for method and rules.

use std::time::Duration;

use oslab_sys::parse::size::human_bytes;

use super::sawexp::{self, Prediction, compare, output, run_sawtooth};
use crate::experiment::{Context, Experiment, LabError, Meta, Needs, Outcome};
use crate::settings::{AnySetting, Bytes, Declared, Setting};

pub struct Background;

static META: Meta = Meta {
    id: "wb.background",
    title: "Background write back: Dirty saws under the background limit",
    section: "4",
    summary: "periodic flush off, background limit in bytes, a steady writer: peaks, troughs, period vs prediction",
    needs: Needs {
        root: true,
        min_cpus: 1,
        free_disk_bytes: 0,
    },
    quick_s: 25.0,
    full_s: 60.0,
    internal: false,
};

static BACKGROUND: Setting<Bytes> = Setting {
    name: "background",
    help: "vm.dirty_background_bytes; the hard limit is twice it",
    quick: 32 << 20,
    full: 32 << 20,
    bounds: Some((8 << 20, 4 << 30)),
    names: &[],
};
static SETTINGS: [&dyn AnySetting; 3] = [&sawexp::RATE, &BACKGROUND, &sawexp::DURATION];

/// MIN_WRITEBACK_PAGES in fs/fs-writeback.c: 4 MiB.
const MIN_CHUNK: u64 = 4 << 20;

/// The chunk the background flusher writes before checking again, assuming the
/// device is fast enough that hard limit / 8 is the smaller term.
pub fn chunk_bytes(hard: u64) -> u64 {
    (hard / 8 + MIN_CHUNK) / MIN_CHUNK * MIN_CHUNK
}

pub fn predict(rate: u64, bg: u64, hard: u64) -> Prediction {
    let chunk = chunk_bytes(hard);
    let mib = |b: u64| b as f64 / (1 << 20) as f64;
    Prediction {
        first_peak_s: bg as f64 / rate as f64,
        peak_mib: mib(bg),
        trough_mib: mib(bg.saturating_sub(chunk)),
        period_s: chunk as f64 / rate as f64,
    }
}

impl Experiment for Background {
    fn meta(&self) -> &Meta {
        &META
    }

    fn settings(&self) -> Declared {
        &SETTINGS
    }

    fn run(&self, ctx: &mut Context) -> Result<Outcome, LabError> {
        let rate = ctx.get(&sawexp::RATE);
        let bg = ctx.get(&BACKGROUND);
        let secs = ctx.get(&sawexp::DURATION);
        let hard = bg * 2;
        let p = predict(rate, bg, hard);
        let knobs = [
            ("vm.dirty_writeback_centisecs", "0".to_string()),
            ("vm.dirty_background_bytes", bg.to_string()),
            ("vm.dirty_bytes", hard.to_string()),
        ];
        let (polls, saw, lat) =
            run_sawtooth(ctx, META.id, &knobs, rate, Duration::from_secs_f64(secs))?;
        let (findings, claim) = compare(
            &saw,
            &p,
            "background-sawtooth",
            "With periodic write back off, Dirty climbs to the background limit and the background flusher then holds it there",
            "material 4 (seed 001, experiment A)",
        );
        let to_zero = saw.trough_median.is_some_and(|t| t < p.peak_mib * 0.1);
        let author = oslab_model::Claim {
            id: "background-falls-to-zero".into(),
            text: "After the background flush Dirty falls to about 0 and climbs again".into(),
            source: "material 4 (seed 001, experiment A: 83-85 MB, then ~0)".into(),
            expectation: "troughs below 10 % of the peak".into(),
            observed: format!(
                "troughs {:.1} MiB, peaks {:.1} MiB",
                saw.trough_median.unwrap_or(f64::NAN),
                saw.peak_median.unwrap_or(f64::NAN)
            ),
            verdict: if saw.peaks.is_empty() {
                oslab_model::Verdict::NotTestable
            } else if to_zero {
                oslab_model::Verdict::Holds
            } else {
                oslab_model::Verdict::Differs
            },
            why: if to_zero {
                "the flusher wrote everything".into()
            } else {
                format!(
                    "today's background flusher stops as soon as Dirty is under the limit, after chunks of {} (min(bandwidth/2, hard limit/8) + 4 MiB, rounded down to 4 MiB)",
                    human_bytes(chunk_bytes(hard))
                )
            },
        };
        let notes = vec![format!(
            "writer {}/s in 10 writes a second; dirty_writeback_centisecs=0, dirty_background_bytes={}, dirty_bytes={} (journaled, restored)",
            human_bytes(rate),
            human_bytes(bg),
            human_bytes(hard)
        )];
        Ok(output(
            &polls,
            &p,
            vec![claim, author],
            findings,
            "Dirty with periodic write back off",
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
    fn prediction_matches_the_figures_seen_here() {
        // writeback-kernel.md: 32 MiB background, 4 MiB/s: peaks 32.2 MiB, troughs
        // 20.4 MiB, 3.0 s period, first peak at 8 s (hard limit 64 MiB)
        let p = predict(4 << 20, 32 << 20, 64 << 20);
        assert_eq!(chunk_bytes(64 << 20), 12 << 20);
        assert_eq!(p.peak_mib, 32.0);
        assert_eq!(p.trough_mib, 20.0);
        assert_eq!(p.period_s, 3.0);
        assert_eq!(p.first_peak_s, 8.0);
    }
}

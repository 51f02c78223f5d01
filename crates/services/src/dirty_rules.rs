//! The kernel's write-back rules as predictions of Dirty: the background
//! flusher's chunk (fs/fs-writeback.c, writeback_chunk_size) and the sawtooth it
//! makes, and the periodic flusher's expiry. The write-back experiments hold the
//! kernel against them; `oslab dirty advise` plans with them.

const MIB: f64 = (1u64 << 20) as f64;

/// The sawtooth the kernel's rules predict.
#[derive(Debug, Clone, Copy)]
pub struct Prediction {
    pub first_peak_s: f64,
    pub peak_mib: f64,
    pub trough_mib: f64,
    pub period_s: f64,
}

/// MIN_WRITEBACK_PAGES in fs/fs-writeback.c: 4 MiB.
pub const MIN_CHUNK: u64 = 4 << 20;

/// The background flusher's chunk for an estimate of `avg_write_bw` bytes/s and a
/// hard limit of `limit` bytes.
pub fn chunk_for(avg_write_bw: u64, limit: u64) -> u64 {
    ((avg_write_bw / 2).min(limit / 8) + MIN_CHUNK) / MIN_CHUNK * MIN_CHUNK
}

/// The chunk the background flusher writes before checking again, assuming the
/// device is fast enough that hard limit / 8 is the smaller term.
pub fn background_chunk(hard: u64) -> u64 {
    chunk_for(u64::MAX, hard)
}

/// The Dirty sawtooth of background write back: Dirty climbs to `bg`, then the
/// flusher writes chunks for a hard limit of `hard` bytes.
pub fn background(rate: u64, bg: u64, hard: u64) -> Prediction {
    background_with_chunk(rate, bg, background_chunk(hard))
}

/// The sawtooth for flushes of `chunk` bytes.
pub fn background_with_chunk(rate: u64, bg: u64, chunk: u64) -> Prediction {
    let mib = |b: u64| b as f64 / MIB;
    Prediction {
        first_peak_s: bg as f64 / rate as f64,
        peak_mib: mib(bg),
        trough_mib: mib(bg.saturating_sub(chunk)),
        period_s: chunk as f64 / rate as f64,
    }
}

/// The Dirty sawtooth of periodic write back: the flusher wakes every
/// `interval_s` and writes what is older than `expire_s`.
pub fn periodic(rate: u64, expire_s: f64, interval_s: f64) -> Prediction {
    let period = interval_s * (expire_s / interval_s).ceil();
    let peak = rate as f64 * period / MIB;
    Prediction {
        first_peak_s: period,
        peak_mib: peak,
        trough_mib: 0.0,
        period_s: period,
    }
}

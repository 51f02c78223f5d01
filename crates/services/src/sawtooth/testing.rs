//! Synthetic sawtooth runs for the tests of wb.background, wb.periodic and
//! wb.cases (and this module's own).

use super::*;
use crate::timed_writer::Poll;

const MIB: f64 = (1u64 << 20) as f64;

/// 10 Hz polls of `other` MiB of foreign dirty pages plus a test file dirtied at
/// `rate` MiB/s: global Dirty climbs until it would pass `top`, then drops to
/// `bottom`; the device writes what each drop removes.
pub fn sawtooth_polls(rate: f64, top: f64, bottom: f64, until: f64) -> Vec<(f64, f64, u64)> {
    let (mut out, mut file, mut written, mut t) = (Vec::new(), 0.0, 0u64, 0.0);
    while t <= until + 1e-9 {
        out.push((t, file, written));
        file += rate * 0.1;
        t += 0.1;
        // `top` and `bottom` are for global Dirty; the caller adds the others
        if file > top {
            written += ((file - bottom) * MIB) as u64;
            file = bottom;
        }
    }
    out
}

/// A run of the polls above with `other` MiB of other programs' dirty pages, the
/// sysctls in force as set, limits of 32 and 64 MiB.
pub fn saw_raw(polls: Vec<(f64, f64, u64)>, other: u64) -> SawRaw {
    let other_b = other << 20;
    let polls = polls
        .into_iter()
        .map(|(t, file, written)| {
            // top and bottom were meant for global Dirty: the file holds the rest
            let file_b = ((file * MIB) as u64).saturating_sub(other_b);
            KernelPoll {
                poll: Poll {
                    t_s: t,
                    dirty_bytes: file_b + other_b,
                    writeback_bytes: 0,
                    files_dirty_bytes: file_b,
                    files_writeback_bytes: 0,
                },
                device_written_bytes: Some(written),
                bdi_write_bandwidth_kbps: None,
            }
        })
        .collect::<Vec<_>>();
    let set = vec![(
        "vm.dirty_background_bytes".to_string(),
        (32u64 << 20).to_string(),
    )];
    SawRaw {
        sysctls_in_force: set.iter().cloned().collect(),
        sysctls_set: set,
        thresholds: Thresholds {
            dirty_pages: Some(16384),
            background_pages: Some(8192),
        },
        page_bytes: 4096,
        disk: Some(DiskFacts {
            device: "vda".into(),
            disk: "vda".into(),
            write_cache: None,
            rotational: None,
        }),
        writer: WriterTrace {
            start_s: (0..polls.len()).map(|i| i as f64 * 0.1).collect(),
            latency_ms: vec![0.05; polls.len()],
            bytes: 0,
            error: None,
            tid: 0,
            tgid: 0,
        },
        polls,
        bdi: Some("254:0".into()),
        kernel: Default::default(),
    }
}

//! The sync guard as the governor chose it over a cell: when it began and
//! stopped acting, at what size, and from what bandwidth it sized it, read from
//! the governor's own board every 100 ms while pgbench runs.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use oslab_wcall::shm::Board;
use serde::{Deserialize, Serialize};

/// The guard from `at_s` seconds into the cell: acting at `bytes` (None: not
/// acting), sized from `bandwidth_bytes_s`, the bandwidth the governor measured
/// (None: none measured yet, so its first size).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GuardChange {
    pub at_s: f64,
    pub bytes: Option<u64>,
    pub bandwidth_bytes_s: Option<u64>,
}

const EVERY: Duration = Duration::from_millis(100);
/// A size that moved by less than this share of the last one kept is not a
/// change worth keeping (the size follows a moving average of the bandwidth).
const MOVED: f64 = 0.1;

/// What the governor's board showed while `f` ran.
#[derive(Debug, Default)]
pub struct Watched {
    /// The guard's changes.
    pub changes: Vec<GuardChange>,
    /// Whether any process was governed in rt-high at some pass.
    pub rt_high_governed: bool,
}

/// Runs `f`, reading the guard from `board` every 100 ms meanwhile; the changes
/// from `start_ns` (the monotonic clock) on. No board: nothing watched.
pub fn while_running<T>(
    board: Option<&Board>,
    start_ns: u64,
    f: impl FnOnce() -> T,
) -> (T, Watched) {
    let Some(board) = board else {
        return (f(), Watched::default());
    };
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        let watcher = s.spawn(|| {
            let mut changes = Vec::new();
            let mut rt_high_governed = false;
            let rt_high = &board.groups[oslab_wcall::shm::RT_HIGH as usize];
            loop {
                rt_high_governed |= rt_high.members.load(Ordering::Relaxed) > 0;
                let now = oslab_sys::clock::monotonic_ns();
                let g = oslab_wcall::view::guard_view(&board.header, now);
                keep(
                    &mut changes,
                    GuardChange {
                        at_s: now.saturating_sub(start_ns) as f64 / 1e9,
                        bytes: g.acting_bytes,
                        bandwidth_bytes_s: g.bandwidth_bytes_s,
                    },
                );
                if done.load(Ordering::Relaxed) {
                    return Watched {
                        changes,
                        rt_high_governed,
                    };
                }
                std::thread::sleep(EVERY);
            }
        });
        let out = f();
        done.store(true, Ordering::Relaxed);
        (out, watcher.join().unwrap_or_default())
    })
}

/// Keeps `now` when the guard began or stopped acting, or its size moved.
fn keep(changes: &mut Vec<GuardChange>, now: GuardChange) {
    let moved = match changes.last().map(|c| c.bytes) {
        None => true,
        Some(last) => match (last, now.bytes) {
            (Some(a), Some(b)) => (b as f64 - a as f64).abs() > a as f64 * MOVED,
            (a, b) => a.is_some() != b.is_some(),
        },
    };
    if moved {
        changes.push(now);
    }
}

/// "on at 0.0 s, off at 58.2 s; 1.0-2.5 MiB (median 1.2), sized from 9.8-51.0
/// MiB/s measured", or that it never acted. The size follows the bandwidth the
/// governor measures chunk by chunk, so it is given as a range, not move by move.
pub fn describe(changes: &[GuardChange]) -> String {
    let mut turns = Vec::new();
    let mut acting = false;
    for c in changes {
        if c.bytes.is_some() != acting {
            acting = !acting;
            turns.push(format!(
                "{} at {:.1} s",
                if acting { "on" } else { "off" },
                c.at_s
            ));
        }
    }
    let mut sizes: Vec<f64> = changes
        .iter()
        .filter_map(|c| c.bytes)
        .map(|b| b as f64 / MIB)
        .collect();
    if sizes.is_empty() {
        return "never acted".into();
    }
    sizes.sort_by(f64::total_cmp);
    let median = sizes[sizes.len() / 2];
    let mut text = format!(
        "{}; {} (median {median:.1})",
        turns.join(", "),
        range(&sizes, "MiB")
    );
    let mut measured: Vec<f64> = changes
        .iter()
        .filter(|c| c.bytes.is_some())
        .filter_map(|c| c.bandwidth_bytes_s)
        .map(|b| b as f64 / MIB)
        .collect();
    measured.sort_by(f64::total_cmp);
    if measured.is_empty() {
        text.push_str(", its first size: no bandwidth measured");
    } else {
        text.push_str(&format!(
            ", sized from {} measured",
            range(&measured, "MiB/s")
        ));
    }
    text
}

/// "1.0-2.5 MiB" of sorted values, or "2.0 MiB" when they are one.
fn range(sorted: &[f64], unit: &str) -> String {
    let (lo, hi) = (sorted[0], sorted[sorted.len() - 1]);
    if (hi - lo).abs() < 0.05 {
        format!("{lo:.1} {unit}")
    } else {
        format!("{lo:.1}-{hi:.1} {unit}")
    }
}

const MIB: f64 = (1u64 << 20) as f64;

#[cfg(test)]
mod tests {
    use super::*;

    fn at(at_s: f64, bytes: Option<u64>, bw: Option<u64>) -> GuardChange {
        GuardChange {
            at_s,
            bytes,
            bandwidth_bytes_s: bw,
        }
    }

    #[test]
    fn only_turns_and_real_moves_of_the_size_are_kept() {
        let mut kept = Vec::new();
        for c in [
            at(0.0, None, None),
            at(0.1, None, None),
            at(0.2, Some(2 << 20), None),
            // 2 % larger: the average moving, not a new choice
            at(0.3, Some((2 << 20) + 40_000), Some(40 << 20)),
            at(3.0, Some(3 << 20), Some(60 << 20)),
            at(40.0, None, Some(60 << 20)),
        ] {
            keep(&mut kept, c);
        }
        let times: Vec<f64> = kept.iter().map(|c| c.at_s).collect();
        assert_eq!(times, [0.0, 0.2, 3.0, 40.0]);
    }

    #[test]
    fn the_description_says_when_it_acted_and_how_large() {
        let log = [
            at(0.0, None, None),
            at(0.4, Some(2 << 20), None),
            at(3.1, Some(3 << 20), Some(60 << 20)),
            at(58.2, None, Some(60 << 20)),
        ];
        assert_eq!(
            describe(&log),
            "on at 0.4 s, off at 58.2 s; 2.0-3.0 MiB (median 3.0), sized from 60.0 MiB/s measured"
        );
        assert_eq!(
            describe(&log[..2]),
            "on at 0.4 s; 2.0 MiB (median 2.0), its first size: no bandwidth measured"
        );
        assert_eq!(describe(&log[..1]), "never acted");
    }
}

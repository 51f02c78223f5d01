//! Synthetic workers and an environment for the scheduler experiments' unit tests.

use oslab_model::Environment;

use super::analysis::Worker;

pub const MS: u64 = 1_000_000;

/// The captured 2-CPU KVM guest of the sys fixtures (EEVDF), with HZ set to `hz`
/// (None: unknown) and the hypervisor named `hv` (None: bare metal).
pub fn env(hz: Option<u32>, hv: Option<&str>) -> Environment {
    oslab_harness::testing::captured_eevdf_env(hz, hv)
}

/// A worker that ran during `runs` (ms) and was off the CPU between them, from the
/// first run's start to the last one's end.
pub fn worker(runs: &[(f64, f64)]) -> Worker {
    let ns = |ms: f64| (ms * 1e6) as u64 + 1_000 * MS;
    let gaps = runs
        .windows(2)
        .map(|w| (ns(w[0].1), ns(w[1].0)))
        .filter(|(a, b)| b > a)
        .collect();
    Worker {
        pid: 1,
        start_ns: ns(runs.first().map_or(0.0, |r| r.0)),
        end_ns: ns(runs.last().map_or(0.0, |r| r.1)),
        gaps,
        readings: 1000,
        ..Default::default()
    }
}

/// `n` workers taking turns of `turn` ms on one CPU for `total` ms; each turn of a
/// worker in `cut` is split in the middle by a gap of 0.2 ms in which nobody ran.
pub fn round_robin(n: usize, turn: &[f64], total: f64, cut: &[usize]) -> Vec<Worker> {
    let mut runs: Vec<Vec<(f64, f64)>> = vec![Vec::new(); n];
    let mut t = 0.0;
    'outer: loop {
        for i in 0..n {
            let len = turn[i % turn.len()];
            if t + len > total {
                break 'outer;
            }
            if cut.contains(&i) {
                let mid = t + len / 2.0;
                runs[i].push((t, mid - 0.1));
                runs[i].push((mid + 0.1, t + len));
            } else {
                runs[i].push((t, t + len));
            }
            t += len;
        }
    }
    runs.iter().map(|r| worker(r)).collect()
}

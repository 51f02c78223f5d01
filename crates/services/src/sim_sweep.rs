//! A scenario run for many values of one setting, on all CPUs.

use oslab_wbsim::config::MIB;
use oslab_wbsim::sets::{Assignment, configure};
use oslab_wbsim::{Config, simulate};

use super::write_latency::latency_stats;

/// One point of a sweep.
#[derive(Debug, Clone, serde::Serialize)]
pub struct SweepPoint {
    pub value: String,
    pub p99_ms: f64,
    pub max_ms: f64,
    pub over_200: usize,
    pub peak_dirty_mib: f64,
}

/// Runs `c` for every value of `key` on all CPUs; results in the order of `values`.
pub fn sweep(c: &Config, key: &str, values: &[String]) -> Result<Vec<SweepPoint>, String> {
    let configs: Vec<Config> = values
        .iter()
        .map(|v| {
            let set = Assignment::parse(key, v)?;
            configure(c, &[set])
        })
        .collect::<Result<_, _>>()?;
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let chunk = configs.len().div_ceil(threads).max(1);
    let mut out: Vec<Option<SweepPoint>> = vec![None; configs.len()];
    std::thread::scope(|s| {
        let handles: Vec<_> = configs
            .chunks(chunk)
            .zip(values.chunks(chunk))
            .enumerate()
            .map(|(ci, (cs, vs))| {
                s.spawn(move || {
                    cs.iter()
                        .zip(vs)
                        .map(|(c, v)| {
                            let o = simulate(c);
                            let st = latency_stats(&o.writers[0].latency_ms);
                            SweepPoint {
                                value: v.clone(),
                                p99_ms: st.p99,
                                max_ms: st.max,
                                over_200: st.over_200,
                                peak_dirty_mib: o
                                    .samples
                                    .iter()
                                    .map(|s| s.dirty + s.writeback)
                                    .max()
                                    .unwrap_or(0)
                                    as f64
                                    / MIB as f64,
                            }
                        })
                        .enumerate()
                        .map(|(i, p)| (ci * chunk + i, p))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        for h in handles {
            for (i, p) in h.join().expect("a sweep thread") {
                out[i] = Some(p);
            }
        }
    });
    Ok(out
        .into_iter()
        .map(|p| p.expect("every point simulated"))
        .collect())
}

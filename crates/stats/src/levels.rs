//! Levels of a staircase curve: the plateaus of latency vs working-set size, found
//! by segmenting log latency into pieces of constant level (dynamic programming with
//! a penalty per segment and a minimum segment length), keeping the flat pieces
//! (a piece that is not flat is tried again without its first or its last point,
//! which may belong to the step beside it), merging neighbours closer than a
//! ratio, and locating where each one ends.

use serde::{Deserialize, Serialize};

/// One detected level (a plateau of the curve).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Level {
    /// Median of the plateau's values.
    pub value: f64,
    /// Smallest and largest x on the plateau.
    pub from_x: f64,
    pub to_x: f64,
    /// Where the curve leaves the plateau: where it crosses the geometric middle
    /// between this plateau and the next (by default), interpolated between the two
    /// points around the crossing; None for the last plateau.
    pub edge_x: Option<f64>,
    /// Value of the next plateau over this one (how big the step is).
    pub step: Option<f64>,
    /// Octaves (log2 x) from the last point on the plateau to the first point of
    /// the next: small is a sharp edge, large a gradual one.
    pub edge_width_octaves: Option<f64>,
}

/// The tuning of [`detect`].
#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// Narrowest a segment may be, in octaves of x (log2), whatever the density of
    /// points there.
    pub min_octaves: f64,
    /// A segment whose values span more than this ratio is a ramp, not a plateau.
    pub flat_ratio: f64,
    /// Neighbouring plateaus closer than this ratio are one level.
    pub merge_ratio: f64,
    /// Where between this plateau and the next (in log, 0..1) the edge is put.
    pub edge_fraction: f64,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            min_octaves: 0.75,
            flat_ratio: 1.35,
            merge_ratio: 1.5,
            edge_fraction: 0.5,
        }
    }
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Splits z into segments minimising squared error around each segment's mean plus
/// `penalty` per segment, each at least `min_span` wide in `lx` (log2 x); returns
/// (first, last) index pairs.
pub fn segment(lx: &[f64], z: &[f64], min_span: f64, penalty: f64) -> Vec<(usize, usize)> {
    let n = z.len().min(lx.len());
    if n == 0 {
        return vec![];
    }
    let mut s1 = vec![0.0; n + 1];
    let mut s2 = vec![0.0; n + 1];
    for i in 0..n {
        s1[i + 1] = s1[i] + z[i];
        s2[i + 1] = s2[i] + z[i] * z[i];
    }
    // cost of z[i..j] (j exclusive)
    let cost = |i: usize, j: usize| {
        let k = (j - i) as f64;
        let s = s1[j] - s1[i];
        (s2[j] - s2[i]) - s * s / k
    };
    let mut best = vec![f64::INFINITY; n + 1];
    let mut from = vec![0usize; n + 1];
    best[0] = 0.0;
    for j in 1..=n {
        for i in 0..j {
            // every segment spans at least min_span, except one that is the whole curve
            if lx[j - 1] - lx[i] < min_span && !(i == 0 && j == n) {
                continue;
            }
            if !best[i].is_finite() {
                continue;
            }
            let c = best[i] + cost(i, j) + penalty;
            if c < best[j] {
                best[j] = c;
                from[j] = i;
            }
        }
    }
    let mut out = Vec::new();
    let mut j = n;
    while j > 0 {
        let i = from[j];
        out.push((i, j - 1));
        j = i;
    }
    out.reverse();
    out
}

/// The noise of a curve in log space, from second differences (blind to a steady
/// slope and to the few points of a step; robust through the median).
fn noise(z: &[f64]) -> f64 {
    let mut d: Vec<f64> = z
        .windows(3)
        .map(|w| (w[2] - 2.0 * w[1] + w[0]).abs())
        .collect();
    if d.is_empty() {
        return 0.0;
    }
    1.4826 * median(&mut d) / 6f64.sqrt()
}

/// The most points [`detect`] segments. Segmenting is quadratic in the points; a
/// sweep of sizes measures tens of them, so a curve of more (read from a damaged
/// or hostile raw file) has no levels rather than hours of work.
pub const MAX_POINTS: usize = 4096;

/// The plateaus of the smoothed log curve `z` over `lx` (log2 x): flat segments,
/// neighbours with close levels merged; (first, last) index pairs.
fn plateaus(lx: &[f64], z: &[f64], o: Options) -> Vec<(usize, usize)> {
    let sigma = noise(z);
    let penalty = (8.0 * sigma * sigma).max(0.02);
    let flat = o.flat_ratio.ln();
    let is_flat = |a: usize, b: usize| {
        let mut v: Vec<f64> = z[a..=b].to_vec();
        v.sort_by(|p, q| p.total_cmp(q));
        // the spread of the middle: one outlier does not make a ramp
        let lo = v[v.len() / 10];
        let hi = v[v.len() - 1 - v.len() / 10];
        hi - lo <= flat + 2.0 * sigma
    };
    // a segment that is not flat gets a second chance without its first or its
    // last point (a point of the step before or after it, which the segmentation
    // may attach to either side) if what is left still spans min_octaves
    let mut plateaus: Vec<(usize, usize)> = segment(lx, z, o.min_octaves, penalty)
        .into_iter()
        .filter_map(|(a, b)| {
            if is_flat(a, b) {
                return Some((a, b));
            }
            [(a + 1, b), (a, b.saturating_sub(1))]
                .into_iter()
                .filter(|&(c, d)| c < d && lx[d] - lx[c] >= 0.9 * o.min_octaves)
                .find(|&(c, d)| is_flat(c, d))
        })
        .collect();
    let level = |a: usize, b: usize| median(&mut z[a..=b].to_vec());
    // merge neighbours whose levels are close
    let merge = o.merge_ratio.ln();
    let mut k = 0;
    while k + 1 < plateaus.len() {
        let (a, b) = plateaus[k];
        let (c, d) = plateaus[k + 1];
        if (level(c, d) - level(a, b)).abs() < merge {
            plateaus[k] = (a, d.max(b));
            plateaus.remove(k + 1);
        } else {
            k += 1;
        }
    }
    plateaus
}

/// The plateaus of y(x) (x ascending, y > 0), as levels from the lowest x up;
/// none for a curve of more than [`MAX_POINTS`] points.
pub fn detect(x: &[f64], y: &[f64], o: Options) -> Vec<Level> {
    let n = x.len().min(y.len());
    if n == 0 || n > MAX_POINTS {
        return vec![];
    }
    let raw: Vec<f64> = y[..n].iter().map(|v| v.max(1e-12).ln()).collect();
    // a running median of three removes single-point spikes (a point measured while
    // something else ran); a real step, which spans several points, survives it
    let z: Vec<f64> = (0..n)
        .map(|i| {
            if i == 0 || i + 1 == n {
                raw[i]
            } else {
                median(&mut [raw[i - 1], raw[i], raw[i + 1]])
            }
        })
        .collect();
    let lx: Vec<f64> = x[..n].iter().map(|v| v.max(1e-300).log2()).collect();
    let plateaus = plateaus(&lx, &z, o);
    let level = |a: usize, b: usize| median(&mut z[a..=b].to_vec());
    let mut out = Vec::new();
    for (k, &(a, b)) in plateaus.iter().enumerate() {
        let zl = level(a, b);
        let next = plateaus.get(k + 1);
        let (edge_x, step, width) = match next {
            None => (None, None, None),
            Some(&(c, d)) => {
                let zn = level(c, d);
                let mark = zl + o.edge_fraction.clamp(0.0, 1.0) * (zn - zl);
                // first point past the plateau beyond the mark
                let up = zn > zl;
                let cross = (a..n).find(|&i| {
                    i > b.saturating_sub(1) && if up { z[i] > mark } else { z[i] < mark }
                });
                let edge = cross.map(|i| {
                    if i == 0 {
                        return x[0];
                    }
                    let (x0, x1, z0, z1) = (x[i - 1].ln(), x[i].ln(), z[i - 1], z[i]);
                    let t = if z1 != z0 {
                        ((mark - z0) / (z1 - z0)).clamp(0.0, 1.0)
                    } else {
                        1.0
                    };
                    (x0 + t * (x1 - x0)).exp()
                });
                (edge, Some((zn - zl).exp()), Some((x[c] / x[b]).log2()))
            }
        };
        out.push(Level {
            value: zl.exp(),
            from_x: x[a],
            to_x: x[b],
            edge_x,
            step,
            edge_width_octaves: width,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sizes from 1 KiB, 4 per octave, `octaves` octaves.
    fn sizes(octaves: usize) -> Vec<f64> {
        (0..=octaves * 4)
            .map(|i| 1024.0 * 2f64.powf(i as f64 / 4.0))
            .collect()
    }

    /// A staircase: value `v[k]` up to size `edges[k]`, then the next.
    fn stairs(x: &[f64], edges: &[f64], v: &[f64]) -> Vec<f64> {
        x.iter()
            .map(|s| {
                let k = edges.iter().position(|e| s <= e).unwrap_or(edges.len());
                v[k]
            })
            .collect()
    }

    fn noisy(y: &[f64], amount: f64, seed: u64) -> Vec<f64> {
        let mut s = seed | 1;
        y.iter()
            .map(|v| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                let u = (s % 10_000) as f64 / 10_000.0 - 0.5;
                v * (1.0 + amount * 2.0 * u)
            })
            .collect()
    }

    /// A curve of more points than a sweep measures is not segmented (the
    /// dynamic program is quadratic in them); one of as many as that still is.
    #[test]
    fn a_curve_of_too_many_points_has_no_levels() {
        let n = MAX_POINTS + 1;
        let x: Vec<f64> = (0..n).map(|i| 1024.0 * (1.0 + i as f64 / 64.0)).collect();
        let y: Vec<f64> = x
            .iter()
            .map(|v| if *v < 8192.0 { 1.0 } else { 10.0 })
            .collect();
        assert!(detect(&x, &y, Options::default()).is_empty());
        let small = detect(&x[..256], &y[..256], Options::default());
        assert!(!small.is_empty());
    }

    #[test]
    fn clean_steps_give_every_level_and_its_edge() {
        let x = sizes(20); // 1 KiB .. 1 GiB
        let edges = [48.0 * 1024.0, 2.0 * 1048576.0, 32.0 * 1048576.0];
        let y = stairs(&x, &edges, &[1.2, 4.0, 15.0, 90.0]);
        let l = detect(&x, &y, Options::default());
        assert_eq!(l.len(), 4, "{l:?}");
        for (lvl, e) in l.iter().zip(edges) {
            let found = lvl.edge_x.unwrap();
            assert!(found > e / 2.0 && found < e * 2.0, "edge {found} vs {e}");
        }
        assert!(l[3].edge_x.is_none());
        assert!((l[1].value - 4.0).abs() < 1e-9);
    }

    #[test]
    fn noisy_steps_still_give_the_levels() {
        let x = sizes(20);
        let edges = [32.0 * 1024.0, 1048576.0, 32.0 * 1048576.0];
        for seed in 1..6 {
            let y = noisy(&stairs(&x, &edges, &[1.0, 3.5, 12.0, 80.0]), 0.08, seed);
            let l = detect(&x, &y, Options::default());
            assert_eq!(l.len(), 4, "seed {seed}: {l:?}");
        }
    }

    #[test]
    fn single_spikes_do_not_make_levels() {
        let x = sizes(20);
        let edges = [32.0 * 1024.0, 1048576.0, 32.0 * 1048576.0];
        let mut y = stairs(&x, &edges, &[1.0, 3.5, 12.0, 80.0]);
        y[30] *= 5.0;
        y[50] *= 3.0;
        assert_eq!(detect(&x, &y, Options::default()).len(), 4);
    }

    #[test]
    fn a_missing_level_is_not_invented() {
        let x = sizes(16);
        let y = stairs(&x, &[64.0 * 1024.0], &[1.0, 60.0]);
        assert_eq!(detect(&x, &y, Options::default()).len(), 2);
    }

    #[test]
    fn a_smooth_ramp_has_no_levels() {
        let x = sizes(16);
        // doubling every octave: no flat stretch anywhere
        let y: Vec<f64> = x.iter().map(|s| s / 1024.0).collect();
        assert!(detect(&x, &y, Options::default()).is_empty());
    }

    #[test]
    fn close_plateaus_merge() {
        let x = sizes(12);
        let y = stairs(&x, &[128.0 * 1024.0], &[1.0, 1.2]);
        assert_eq!(detect(&x, &y, Options::default()).len(), 1);
    }

    #[test]
    fn segmentation_by_hand() {
        let z = [0.0, 0.0, 0.0, 0.0, 5.0, 5.0, 5.0, 5.0];
        let lx: Vec<f64> = (0..8).map(|i| i as f64).collect();
        assert_eq!(segment(&lx, &z, 1.0, 0.1), vec![(0, 3), (4, 7)]);
        assert_eq!(segment(&[0.0], &[1.0], 1.0, 0.1), vec![(0, 0)]);
        // dense points do not make narrow segments: 0.1 octave apart, 1 octave minimum
        let lx: Vec<f64> = (0..40).map(|i| i as f64 * 0.1).collect();
        let z: Vec<f64> = (0..40)
            .map(|i| if i < 20 { 0.0 } else { (i - 19) as f64 * 0.3 })
            .collect();
        assert!(
            segment(&lx, &z, 1.0, 0.05)
                .iter()
                .all(|(a, b)| lx[*b] - lx[*a] >= 0.9 || (*a, *b) == (0, 39))
        );
    }

    /// A curve measured here whose L3 plateau climbs gently (11 to 18 ns from
    /// 0.6 to 2.4 MiB): the segmentation put a point of the steps before and
    /// after it into the plateau's two segments, which made both look like
    /// ramps, and the level was lost in one run of two. Without those points
    /// the two segments are flat and merge into one level.
    #[test]
    fn a_gently_climbing_plateau_is_still_a_level() {
        let text = include_str!("../tests/fixtures/latency-gentle-l3.txt");
        let (x, y): (Vec<f64>, Vec<f64>) = text
            .lines()
            .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
            .map(|l| {
                let mut v = l.split_whitespace().map(|t| t.parse::<f64>().unwrap());
                (v.next().unwrap(), v.next().unwrap())
            })
            .unzip();
        let levels = detect(&x, &y, Options::default());
        let mib = 1048576.0;
        let l3 = levels
            .iter()
            .find(|l| (10.0..20.0).contains(&l.value))
            .unwrap_or_else(|| panic!("no level at 10-20 ns: {levels:?}"));
        assert!(l3.from_x < 1.0 * mib && l3.to_x >= 2.0 * mib, "{l3:?}");
        let edge = l3.edge_x.unwrap();
        assert!((2.0 * mib..4.0 * mib).contains(&edge), "{edge}");
        // the steps on either side stay out of it: L2 before, memory after
        assert!(levels.iter().any(|l| (4.0..6.0).contains(&l.value)));
        assert!(levels.last().unwrap().value > 100.0);
    }
}

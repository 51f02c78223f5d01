//! From the latency curve to named levels: the plateaus `oslab_stats::levels` finds,
//! where each one ends (a size, or a range when the curve leaves it gradually), and
//! which sysfs cache each edge belongs to.

use oslab_stats::levels::{self, Level};

use crate::mem::common::sweep::SysfsLevel;

/// An edge found at most this many times its sysfs size can be that level's.
pub const MATCH_ABOVE: f64 = 4.0;
/// Between the last size on a plateau and the first on the next, a gap wider
/// than this (octaves) makes the edge a range: the interpolated crossing would
/// hide where the curve really leaves the plateau. The range runs from the last
/// sampled size before the curve first reaches [`LEFT_RATIO`] times the plateau
/// to the first from which it stays at [`GONE_RATIO`] times it (or past the
/// step's middle).
pub const RANGE_ABOVE_OCTAVES: f64 = 1.0;
/// A latency this many times the plateau's has left it (the ratio below which
/// two plateaus are one level in `oslab_stats::levels`).
pub const LEFT_RATIO: f64 = 1.5;
/// A latency from which on the curve stays at this many times the plateau's (or
/// past the step's geometric middle, if lower) has left it for good: the high end
/// of a gradual edge's range.
pub const GONE_RATIO: f64 = 2.0;

/// One sampled size of the curve and its median latency.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    pub bytes: f64,
    pub ns: f64,
}

/// Where a plateau ends.
#[derive(Debug, Clone, PartialEq)]
pub struct Edge {
    /// The sampled sizes that bracket it, with the latency measured at each: around
    /// the interpolated crossing (sharp), or (a range) the last size before the
    /// curve first reaches 1.5x the plateau's latency and the first from which it
    /// stays at 2x (or past the step's middle).
    pub below: Point,
    pub above: Point,
    /// A range: the curve leaves the plateau gradually (the gap between the
    /// plateaus is wider than an octave), so only the bracket is known.
    pub range: bool,
    /// The size the figures use: the interpolated crossing of a sharp edge, the
    /// geometric middle of a range.
    pub bytes: f64,
    /// Octaves from the last size on this plateau to the first on the next.
    pub gap_octaves: f64,
    /// The next plateau's latency over this one's.
    pub step: f64,
}

impl Edge {
    /// The edge over `size`: (the figure, the bracket's low end, its high end).
    pub fn ratio(&self, size: u64) -> (f64, f64, f64) {
        let s = size as f64;
        if self.range {
            (self.bytes / s, self.below.bytes / s, self.above.bytes / s)
        } else {
            (self.bytes / s, self.bytes / s, self.bytes / s)
        }
    }
}

/// One plateau of the curve, named by what it is.
#[derive(Debug, Clone, PartialEq)]
pub struct Plateau {
    /// "L1d", "L2", "L3" (the sysfs level its edge matched), "memory" (the last,
    /// beyond every cache), or where it lies ("beyond_L2") when nothing matched.
    pub name: String,
    /// The index into the sysfs levels its edge matched.
    pub sysfs: Option<usize>,
    /// Median latency of the plateau, ns.
    pub ns: f64,
    pub from_bytes: f64,
    pub to_bytes: f64,
    pub edge: Option<Edge>,
}

impl Plateau {
    /// The name as a reader sees it: "level after L2" for the identifier
    /// "beyond_L2" (which findings keep as a key), "level 3" for "level3".
    pub fn shown(&self) -> String {
        let (base, nth) = match self.name.rsplit_once('.') {
            Some((b, n)) if n.parse::<u32>().is_ok() => (b, format!(" ({n})")),
            _ => (self.name.as_str(), String::new()),
        };
        let words = if let Some(level) = base.strip_prefix("beyond_") {
            format!("level after {level}")
        } else if let Some(level) = base.strip_prefix("below_") {
            format!("level before {level}")
        } else if let Some(n) = base
            .strip_prefix("level")
            .filter(|n| n.parse::<u32>().is_ok())
        {
            format!("level {n}")
        } else {
            base.to_string()
        };
        words + &nth
    }
}

/// The curve read: its plateaus, named, from the smallest size up.
#[derive(Debug, Clone, PartialEq)]
pub struct Reading {
    pub plateaus: Vec<Plateau>,
    /// Where the curve reaches memory's latency: the end of the last cache this
    /// program could use, whichever plateaus were found before it (None when the
    /// last plateau is not memory).
    pub memory_entry: Option<Edge>,
}

impl Reading {
    /// The plateau whose edge matched sysfs level `i`.
    pub fn of_sysfs(&self, i: usize) -> Option<&Plateau> {
        self.plateaus.iter().find(|p| p.sysfs == Some(i))
    }

    /// The last plateau when it is memory.
    pub fn memory(&self) -> Option<&Plateau> {
        self.plateaus.last().filter(|p| p.name == "memory")
    }
}

/// Reads the curve (`x` ascending sizes, `y` median ns): finds the plateaus, their
/// edges, and names them against `sysfs` (smallest first). `max_bytes` is the
/// largest size swept.
pub fn read(x: &[f64], y: &[f64], sysfs: &[SysfsLevel], max_bytes: f64) -> Reading {
    let found = levels::detect(x, y, levels::Options::default());
    let edges: Vec<Option<Edge>> = found
        .iter()
        .enumerate()
        .map(|(k, l)| edge(x, y, l, found.get(k + 1)))
        .collect();
    let figures: Vec<(usize, (f64, f64))> = edges
        .iter()
        .enumerate()
        .filter_map(|(k, e)| e.as_ref().map(|e| (k, (e.bytes, e.step))))
        .collect();
    let sizes: Vec<u64> = sysfs.iter().map(|l| l.bytes).collect();
    let assigned = assign(&figures.iter().map(|(_, e)| *e).collect::<Vec<_>>(), &sizes);
    let mut matched: Vec<Option<usize>> = vec![None; found.len()];
    for ((k, _), a) in figures.iter().zip(assigned) {
        matched[*k] = a;
    }
    let all_matched = !sysfs.is_empty() && (0..sysfs.len()).all(|i| matched.contains(&Some(i)));
    let beyond_caches = sysfs.last().is_some_and(|l| max_bytes > l.bytes as f64);
    let mut plateaus: Vec<Plateau> = found
        .iter()
        .zip(edges)
        .zip(&matched)
        .map(|((l, e), m)| Plateau {
            name: String::new(),
            sysfs: *m,
            ns: l.value,
            from_bytes: l.from_x,
            to_bytes: l.to_x,
            edge: e,
        })
        .collect();
    name(&mut plateaus, sysfs, all_matched || beyond_caches);
    let memory_entry = match plateaus.as_slice() {
        [.., before, last] if last.name == "memory" => memory_entry(x, y, before, last),
        _ => None,
    };
    Reading {
        plateaus,
        memory_entry,
    }
}

/// Names every plateau: a matched one after its sysfs level, the last one
/// "memory" when the sweep went beyond the caches, the others after the nearest
/// matched level ("beyond_L2", "below_L1d") or by position ("level3").
fn name(plateaus: &mut [Plateau], sysfs: &[SysfsLevel], last_is_memory: bool) {
    let n = plateaus.len();
    let mut used: Vec<String> = Vec::new();
    for k in 0..n {
        let base = if let Some(i) = plateaus[k].sysfs {
            sysfs[i].name.clone()
        } else if k + 1 == n && last_is_memory {
            "memory".into()
        } else if let Some(i) = plateaus[..k].iter().rev().find_map(|p| p.sysfs) {
            format!("beyond_{}", sysfs[i].name)
        } else if let Some(i) = plateaus[k + 1..].iter().find_map(|p| p.sysfs) {
            format!("below_{}", sysfs[i].name)
        } else {
            format!("level{}", k + 1)
        };
        let mut unique = base.clone();
        let mut i = 2;
        while used.contains(&unique) {
            unique = format!("{base}.{i}");
            i += 1;
        }
        used.push(unique.clone());
        plateaus[k].name = unique;
    }
}

/// Where the curve reaches `memory`'s latency after the plateau `before`: the two
/// sampled sizes between which it first reaches 1/[`LEFT_RATIO`] of memory's
/// latency and stays there.
fn memory_entry(x: &[f64], y: &[f64], before: &Plateau, memory: &Plateau) -> Option<Edge> {
    let start = x.iter().position(|v| *v == before.from_bytes)?;
    let end = x.iter().position(|v| *v == memory.from_bytes)?;
    let near = |i: usize| y[i] >= memory.ns / LEFT_RATIO;
    let j = (start..=end).find(|&i| near(i) && (i == end || near(i + 1)))?;
    let k = (start..j).rev().find(|&i| !near(i))?;
    let at = |i: usize| Point {
        bytes: x[i],
        ns: y[i],
    };
    Some(Edge {
        below: at(k),
        above: at(j),
        range: true,
        bytes: (x[k] * x[j]).sqrt(),
        gap_octaves: (x[j] / x[k]).log2(),
        step: memory.ns / before.ns,
    })
}

/// Where plateau `l` ends, given the next plateau; None for the last.
fn edge(x: &[f64], y: &[f64], l: &Level, next: Option<&Level>) -> Option<Edge> {
    let next = next?;
    let b = x.iter().position(|v| *v == l.to_x)?;
    let c = x.iter().position(|v| *v == next.from_x)?;
    let gap_octaves = (x[c] / x[b]).log2();
    let at = |i: usize| Point {
        bytes: x[i],
        ns: y[i],
    };
    let step = next.value / l.value;
    if gap_octaves > RANGE_ABOVE_OCTAVES {
        // from the last size before the curve first leaves the plateau (1.5x its
        // latency) to the first from which it stays at twice it or more (or past
        // the middle of a smaller step): where a shared cache's edge wanders from
        // run to run and the samples there are bimodal, the whole transition is
        // the range
        let off = |i: usize| y[i] >= LEFT_RATIO * l.value;
        let gone_at = (GONE_RATIO * l.value).min((l.value * next.value).sqrt());
        let gone = |i: usize| y[i] >= gone_at;
        let first_off = (b + 1..=c).find(|&i| off(i)).unwrap_or(c);
        let k = first_off.saturating_sub(1).max(b);
        let j = (first_off..=c)
            .find(|&i| (i..=c).all(gone))
            .unwrap_or(c)
            .max(k + 1);
        let (below, above) = (at(k), at(j));
        return Some(Edge {
            below,
            above,
            range: true,
            bytes: (below.bytes * above.bytes).sqrt(),
            gap_octaves,
            step,
        });
    }
    let crossing = l.edge_x?;
    // the sampled sizes on either side of the interpolated crossing
    let hi = x.iter().position(|v| *v >= crossing)?.max(1);
    Some(Edge {
        below: at(hi - 1),
        above: at(hi),
        range: false,
        bytes: crossing,
        gap_octaves,
        step,
    })
}

/// Matches edges (ascending, as (bytes, step): where each plateau ends and how
/// much slower the next one is) to cache sizes (ascending), keeping both orders.
/// An edge can be level j's when it lies above level j-1's size and at most
/// [`MATCH_ABOVE`] times level j's: no nearer, since a shared last level can end
/// far below its sysfs size. Among the edges that fit, the largest latency jumps
/// win (the most total log step), then the nearest to the sizes: the jump out of
/// a cache is large, while a spurious step (the TLB's reach on 4 KiB pages, a
/// page walk missing the caches once in memory) is small. Returns, per edge, the
/// index of its level.
pub fn assign(edges: &[(f64, f64)], sizes: &[u64]) -> Vec<Option<usize>> {
    let (n, m) = (edges.len(), sizes.len());
    let fits = |i: usize, j: usize| {
        let below = if j == 0 { 0.0 } else { sizes[j - 1] as f64 };
        edges[i].0 > below && edges[i].0 <= MATCH_ABOVE * sizes[j] as f64
    };
    // (total log step, -total distance in octaves): larger is better
    let gain = |i: usize, j: usize| {
        (
            edges[i].1.max(1.0).ln(),
            -(edges[i].0 / sizes[j] as f64).log2().abs(),
        )
    };
    let better = |a: (f64, f64), b: (f64, f64)| {
        a.0 > b.0 + 1e-12 || ((a.0 - b.0).abs() <= 1e-12 && a.1 > b.1)
    };
    // best[i][j]: using edges i.. and levels j..
    let mut best = vec![vec![(0.0f64, 0.0f64); m + 1]; n + 1];
    let mut pick = vec![vec![0u8; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            let mut b = best[i + 1][j];
            let mut p = 0;
            if better(best[i][j + 1], b) {
                b = best[i][j + 1];
                p = 1;
            }
            if fits(i, j) {
                let (s, d) = best[i + 1][j + 1];
                let (gs, gd) = gain(i, j);
                let take = (s + gs, d + gd);
                if better(take, b) {
                    b = take;
                    p = 2;
                }
            }
            best[i][j] = b;
            pick[i][j] = p;
        }
    }
    let mut out = vec![None; n];
    let (mut i, mut j) = (0, 0);
    while i < n && j < m {
        match pick[i][j] {
            2 => {
                out[i] = Some(j);
                i += 1;
                j += 1;
            }
            1 => j += 1,
            _ => i += 1,
        }
    }
    out
}

/// The largest max/min ratio of the samples at one size, over the sizes within half
/// an octave of `edge`: a wide spread at an edge means the same size sometimes fit
/// and sometimes did not (a cache shared with others, or partitioned).
pub fn edge_spread(sizes: &[u64], samples: &[Vec<f64>], edge: f64) -> f64 {
    sizes
        .iter()
        .zip(samples)
        .filter(|(s, _)| (**s as f64 / edge).log2().abs() <= 0.5)
        .filter_map(|(_, v)| {
            let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = v.iter().copied().fold(0.0, f64::max);
            (lo > 0.0 && lo.is_finite()).then_some(hi / lo)
        })
        .fold(1.0, f64::max)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sysfs() -> Vec<SysfsLevel> {
        [("L1d", 32u64 << 10), ("L2", 1 << 20), ("L3", 32 << 20)]
            .iter()
            .map(|(n, b)| SysfsLevel {
                name: n.to_string(),
                bytes: *b,
            })
            .collect()
    }

    /// 1 KiB up, 4 sizes per octave, `octaves` octaves.
    fn sizes(octaves: usize) -> Vec<f64> {
        (0..=octaves * 4)
            .map(|i| 1024.0 * 2f64.powf(i as f64 / 4.0))
            .collect()
    }

    #[test]
    fn edges_go_to_levels_in_order() {
        let s = [32 << 10, 1 << 20, 32 << 20];
        // this guest: the L3 edge far below sysfs' 32 MiB is still the L3's
        assert_eq!(
            assign(&[(35e3, 3.5), (0.99e6, 4.9), (5.5e6, 8.5)], &s),
            [Some(0), Some(1), Some(2)]
        );
        // the L3 shoulder missed: two edges for the two small levels
        assert_eq!(
            assign(&[(35e3, 3.5), (1.2e6, 40.0)], &s),
            [Some(0), Some(1)]
        );
        // a small step between L1d and L2 (the TLB's reach) is left unmatched
        assert_eq!(
            assign(&[(35e3, 3.5), (256e3, 1.6), (0.99e6, 4.9)], &s),
            [Some(0), None, Some(1)]
        );
        // a step inside memory (page walks) does not take the L3's place
        assert_eq!(
            assign(&[(35e3, 3.5), (0.6e6, 3.6), (3.2e6, 16.0), (26e6, 2.4)], &s),
            [Some(0), Some(1), Some(2), None]
        );
        // beyond 4x the last level: no cache's edge
        assert_eq!(assign(&[(200e6, 3.0)], &s), [None]);
        assert_eq!(assign(&[], &s), Vec::<Option<usize>>::new());
        assert_eq!(assign(&[(1e3, 2.0)], &[]), [None]);
    }

    #[test]
    fn a_staircase_is_named_by_the_caches() {
        let x = sizes(18); // 1 KiB .. 256 MiB
        let y: Vec<f64> = x
            .iter()
            .map(|s| match *s {
                s if s <= 32768.0 => 1.0,
                s if s <= 1048576.0 => 4.0,
                s if s <= 5.0 * 1048576.0 => 18.0,
                _ => 160.0,
            })
            .collect();
        let r = read(&x, &y, &sysfs(), 256.0 * 1048576.0);
        let names: Vec<&str> = r.plateaus.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["L1d", "L2", "L3", "memory"]);
        assert!(
            r.plateaus
                .iter()
                .take(3)
                .all(|p| !p.edge.as_ref().unwrap().range)
        );
        assert!((r.memory().unwrap().ns - 160.0).abs() < 1e-9);
        // the L3 shoulder missing: L1d, L2 and memory, never "level3"
        let y2: Vec<f64> = x
            .iter()
            .map(|s| {
                if *s <= 32768.0 {
                    1.0
                } else if *s <= 1048576.0 {
                    4.0
                } else {
                    160.0
                }
            })
            .collect();
        let r2 = read(&x, &y2, &sysfs(), 256.0 * 1048576.0);
        let names: Vec<&str> = r2.plateaus.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["L1d", "L2", "memory"]);
        // a sweep that stops inside L2: the last plateau is not memory
        let short: Vec<f64> = x.iter().copied().filter(|s| *s <= 262144.0).collect();
        let r3 = read(&short, &y[..short.len()], &sysfs(), 262144.0);
        let names: Vec<&str> = r3.plateaus.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["L1d", "beyond_L1d"]);
        let shown: Vec<String> = r3.plateaus.iter().map(Plateau::shown).collect();
        assert_eq!(shown, ["L1d", "level after L1d"]);
        let named = |name: &str| Plateau {
            name: name.into(),
            ..r3.plateaus[0].clone()
        };
        assert_eq!(named("beyond_L2.2").shown(), "level after L2 (2)");
        assert_eq!(named("below_L1d").shown(), "level before L1d");
        assert_eq!(named("level3").shown(), "level 3");
        assert_eq!(named("memory").shown(), "memory");
    }

    #[test]
    fn a_gradual_edge_is_a_range_with_its_bracket() {
        let x = sizes(18);
        // L2 at 4.5 ns to 1 MiB, then a ramp (no shoulder flat enough) up to memory
        let y: Vec<f64> = x
            .iter()
            .map(|s| match *s {
                s if s <= 32768.0 => 1.0,
                s if s <= 1048576.0 => 4.5,
                s if s < 8.0 * 1048576.0 => 4.5 * (s / 1048576.0).powf(1.75),
                _ => 160.0,
            })
            .collect();
        let r = read(&x, &y, &sysfs(), 256.0 * 1048576.0);
        let l2 = r.plateaus.iter().find(|p| p.name == "L2").unwrap();
        let e = l2.edge.as_ref().unwrap();
        assert!(e.range, "{e:?}");
        // the last size on the plateau: 1 MiB, or the next, still within its flatness
        assert!(
            (1048576.0..1.25 * 1048576.0).contains(&e.below.bytes),
            "{e:?}"
        );
        assert!(
            e.above.ns >= LEFT_RATIO * l2.ns && e.above.bytes <= 2.0 * 1048576.0,
            "{e:?}"
        );
        let (mid, lo, hi) = e.ratio(1 << 20);
        assert!((1.0..1.25).contains(&lo) && hi > lo && (lo..=hi).contains(&mid));
    }

    #[test]
    fn spread_at_an_edge() {
        let sizes = [1 << 20, 2 << 20, 8 << 20];
        let samples = vec![vec![1.0, 1.1], vec![1.0, 3.0], vec![10.0, 50.0]];
        assert_eq!(
            edge_spread(&sizes, &samples, (2 << 20) as f64),
            3.0,
            "8 MiB is two octaves away"
        );
        assert_eq!(edge_spread(&sizes, &samples, 1e12), 1.0, "nothing near");
    }
}

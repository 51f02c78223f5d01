//! `mem.tlb`: TLB reach. One line per page is touched (at a pseudo-random offset
//! within the page, so the lines spread over the cache sets) over P pages in one random
//! cycle, on 4 KiB pages and on huge pages at the same footprint. The knees of the
//! 4 KiB curve are the TLB levels; the difference between the two curves at equal P
//! is the page-walk cost. CPUID's TLB sizes are shown beside.

use oslab_model::{Axis, Claim, Marker, Plot, Scale, Series, SeriesStyle, Verdict};
use oslab_stats::levels;

use super::sweep::{chase_size, log_sizes, shuffled};
use crate::experiment::{Context, Experiment, LabError, Meta, Needs, Outcome, Output, finding};

pub struct MemTlb;

static META: Meta = Meta {
    id: "mem.tlb",
    title: "TLB reach: one line per page, 4 KiB vs huge pages",
    section: "2",
    summary: "ns per access vs pages touched; detected TLB knees vs CPUID; page-walk cost",
    needs: Needs {
        root: false,
        min_cpus: 1,
        free_disk_bytes: 0,
    },
    quick_s: 6.0,
    full_s: 40.0,
    internal: false,
};

const PAGE: usize = 4096;

impl Experiment for MemTlb {
    fn meta(&self) -> &Meta {
        &META
    }

    fn run(&self, ctx: &mut Context) -> Result<Outcome, LabError> {
        let quick = ctx.config.quick();
        let samples = ctx.samples(3, 5);
        // page counts (as "sizes" of 1 byte per page for the sweep helper)
        let pages: Vec<u64> = log_sizes(
            16 * 64,
            if quick { 16384 } else { 65536 } * 64,
            if quick { 2 } else { 4 },
        )
        .into_iter()
        .map(|p| p / 64)
        .collect();
        // a pseudo-random line within each page: a rotation tied to the page number
        // would put every line in a few cache sets once the pages are physically
        // contiguous (huge pages), and measure set conflicts instead of the TLB
        let rotate =
            |page: usize| (((page as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 58) as usize) * 64;
        let mut curves = Vec::new();
        let mut granted = Vec::new();
        let total = pages.len() * 2;
        let mut done = 0;
        for huge in [false, true] {
            ctx.progress
                .stage(if huge { "huge pages" } else { "4 KiB pages" });
            let mut y = vec![0.0; pages.len()];
            for i in shuffled(pages.len(), ctx.config.seed + huge as u64) {
                let (v, h) = chase_size(
                    pages[i] * PAGE as u64,
                    PAGE,
                    rotate,
                    huge,
                    samples,
                    ctx.config.seed,
                )?;
                y[i] = oslab_stats::median(&v).unwrap_or(f64::NAN);
                if huge && pages[i] >= 1024 {
                    granted.push(h);
                }
                done += 1;
                ctx.progress.fraction(done as f64 / total as f64);
            }
            curves.push(y);
        }
        let x: Vec<f64> = pages.iter().map(|p| *p as f64).collect();
        let found = levels::detect(&x, &curves[0], levels::Options::default());
        let found_huge = levels::detect(&x, &curves[1], levels::Options::default());
        let granted = oslab_stats::median(&granted).unwrap_or(0.0);
        let cpuid = oslab_sys::cpuid::tlbs();
        let tlb4k: Vec<&oslab_sys::cpuid::Tlb> = cpuid
            .iter()
            .filter(|t| t.pages.iter().any(|p| p == "4K") && t.kind != "instruction")
            .collect();

        let mut findings = Vec::new();
        for (k, l) in found.iter().enumerate() {
            if let Some(e) = l.edge_x {
                findings.push(finding(
                    &format!("knee{}.pages", k + 1),
                    e,
                    "pages",
                    format!("4 KiB pages: {:.2} ns per access up to about {e:.0} pages, then {:.1}x (a knee of the curve; cache or TLB, see the ratio)", l.value, l.step.unwrap_or(f64::NAN)),
                ));
            }
        }
        let last = pages.len() - 1;
        let walk = curves[0][last] - curves[1][last];
        findings.push(finding(
            "page_walk_ns",
            walk,
            "ns",
            format!("at {} pages: 4 KiB {:.2} ns - huge {:.2} ns (the extra cost of translating with 4 KiB pages)", pages[last], curves[0][last], curves[1][last]),
        ));
        findings.push(finding(
            "thp_granted",
            granted,
            "fraction",
            "share of the huge-page buffers the kernel backed with huge pages",
        ));
        for t in &tlb4k {
            findings.push(finding(
                &format!("cpuid.l{}.{}", t.level, t.kind),
                t.entries as f64,
                "entries",
                format!(
                    "CPUID: level {} {} TLB, {} entries ({}), pages {}",
                    t.level,
                    t.kind,
                    t.entries,
                    if t.ways == 0 {
                        "fully associative".into()
                    } else {
                        format!("{}-way", t.ways)
                    },
                    t.pages.join("/")
                ),
            ));
        }
        let mut notes = Vec::new();
        if cpuid.is_empty() {
            notes.push("CPUID reports no TLB sizes here (leaf 0x18 / 0x80000005-6 absent or empty; a hypervisor may hide them)".into());
        }
        let knees: Vec<f64> = found.iter().filter_map(|l| l.edge_x).collect();
        let knees_huge: Vec<f64> = found_huge.iter().filter_map(|l| l.edge_x).collect();
        // The knees of each curve are mostly the caches (one line per page still
        // fills L1 and L2), and they show with both page sizes. The TLB is in the
        // ratio of the two: flat while 4 KiB translations hit, rising at each
        // TLB level's reach.
        let ratio: Vec<f64> = curves[0]
            .iter()
            .zip(&curves[1])
            .map(|(a, b)| a / b.max(1e-9))
            .collect();
        let tlb_knees: Vec<f64> = levels::detect(
            &x,
            &ratio,
            levels::Options {
                merge_ratio: 1.2,
                ..Default::default()
            },
        )
        .iter()
        .filter_map(|l| l.edge_x)
        .collect();
        for (i, k) in tlb_knees.iter().enumerate() {
            findings.push(finding(
                &format!("tlb_reach{}.pages", i + 1),
                *k,
                "pages",
                format!("the 4 KiB / huge-page cost ratio rises past about {k:.0} pages ({:.0} KiB of 4 KiB pages): a TLB level's reach", k * 4.0),
            ));
        }
        let effective = granted >= 0.5 && curves[1][last] < 0.75 * curves[0][last];
        if !effective {
            notes.push(format!(
                "huge pages not effective here ({:.0} % granted; at {} pages 4 KiB {:.2} ns vs huge {:.2} ns): possibly backed by small pages on the host, so no huge-page reach is claimed",
                granted * 100.0,
                pages[last],
                curves[0][last],
                curves[1][last]
            ));
        }
        if tlb_knees.is_empty() {
            notes.push("the 4 KiB / huge-page ratio shows no knee: the TLB levels did not show as steps (a gradual rise, or beyond the sweep)".into());
        }
        let claim = Claim {
            id: "huge-pages-extend-reach".into(),
            text: "Huge pages extend the TLB's reach".into(),
            source: "material 2 (TLB, seed 000)".into(),
            expectation: "with many pages touched, huge pages make each access at least 25 % cheaper; the 4 KiB / huge cost ratio rises at the TLB reach".into(),
            observed: format!(
                "knees of both curves (caches) at {:?} / {:?} pages; TLB knees (the ratio's) at {:?}; at {} pages {:.2} vs {:.2} ns; {:.0} % huge pages granted",
                knees.iter().map(|k| k.round()).collect::<Vec<_>>(),
                knees_huge.iter().map(|k| k.round()).collect::<Vec<_>>(),
                tlb_knees.iter().map(|k| k.round()).collect::<Vec<_>>(),
                pages[last],
                curves[0][last],
                curves[1][last],
                granted * 100.0
            ),
            verdict: if granted < 0.5 { Verdict::NotTestable } else if effective { Verdict::Holds } else { Verdict::Differs },
            why: if granted < 0.5 {
                "the kernel did not grant huge pages".into()
            } else if effective {
                "one 2 MiB entry covers 512 pages, so the same pages need far fewer TLB entries and page walks".into()
            } else {
                "accesses cost about the same with huge pages".into()
            },
        };
        let markers = tlb4k
            .iter()
            .map(|t| Marker {
                x: t.entries as f64,
                label: format!("CPUID L{} {} {}", t.level, t.kind, t.entries),
            })
            .chain(knees.iter().map(|k| Marker {
                x: *k,
                label: format!("knee {k:.0}"),
            }))
            .collect();
        let series = |name: &str, y: &[f64]| Series {
            name: name.into(),
            style: SeriesStyle::LinePoints,
            points: x.iter().zip(y).map(|(a, b)| [*a, *b]).collect(),
        };
        Ok(Outcome::Completed(Output {
            findings,
            claims: vec![claim],
            plots: vec![Plot {
                id: "tlb".into(),
                title: "one line per page: ns per access vs pages".into(),
                x: Axis::new("pages touched", "pages", Scale::Log2),
                y: Axis::new("latency", "ns", Scale::Log10),
                series: vec![
                    series("4 KiB pages", &curves[0]),
                    series("huge pages", &curves[1]),
                ],
                markers,
                x_labels: vec![],
            }],
            notes,
            ..Default::default()
        }))
    }
}

//! Judging the TLB sweep: knees, the TLB's reach from the ratio of the two curves,
//! the page-walk cost, CPUID beside, and the huge-page claim.

use oslab_model::{Axis, Claim, Environment, Finding, Marker, Plot, Scale, Series, SeriesStyle};
use oslab_stats::levels;

use super::{CpuidTlb, PAGE, Plan, Raw};
use crate::mem::common::sweep::points;
use oslab_harness::check::{Check, Condition, Rule, figure};
use oslab_harness::{Output, finding};

/// Huge pages must make each access at least 25 % cheaper with many pages touched.
pub const HUGE_OVER_SMALL_BELOW: f64 = 0.75;
/// Below this share of huge-page backing the comparison says nothing.
pub const GRANTED_AT_LEAST: f64 = 0.5;
/// Huge-page buffers from this many pages (4 MiB) up show what was granted.
const GRANTED_FROM_PAGES: u64 = 1024;

pub const REACH: Check = Check {
    id: "huge-pages-extend-reach",
    tolerates: &oslab_harness::interference::TIMES,
    text: "Huge pages extend the TLB's reach",
    source: "S. Takeuchi, \"Linux no Shikumi\", ch. \"Memory hierarchy\" (TLB)",
};

/// The curves and what was found in them.
pub struct Curves {
    pub pages: Vec<f64>,
    pub small: Vec<f64>,
    pub huge: Vec<f64>,
    /// Knees of each curve (mostly the caches), in pages.
    pub knees: Vec<levels::Level>,
    pub knees_huge: Vec<f64>,
    /// Knees of the 4 KiB / huge cost ratio: the TLB levels' reach, in pages.
    pub tlb_knees: Vec<f64>,
    /// Share of the large huge-page buffers backed by huge pages.
    pub granted: f64,
}

pub fn curves(raw: &Raw) -> Curves {
    let n = raw.small.len().min(raw.huge.len());
    let med = |c: &crate::mem::common::sweep::Chased| c.median().unwrap_or(f64::NAN);
    let pages: Vec<f64> = raw.small[..n]
        .iter()
        .map(|c| (c.bytes / PAGE as u64) as f64)
        .collect();
    let small: Vec<f64> = raw.small[..n].iter().map(med).collect();
    let huge: Vec<f64> = raw.huge[..n].iter().map(med).collect();
    let knees = levels::detect(&pages, &small, levels::Options::default());
    let knees_huge = levels::detect(&pages, &huge, levels::Options::default())
        .iter()
        .filter_map(|l| l.edge_x)
        .collect();
    let ratio: Vec<f64> = small
        .iter()
        .zip(&huge)
        .map(|(a, b)| a / b.max(1e-9))
        .collect();
    let tlb_knees = levels::detect(
        &pages,
        &ratio,
        levels::Options {
            merge_ratio: 1.2,
            ..Default::default()
        },
    )
    .iter()
    .filter_map(|l| l.edge_x)
    .collect();
    let granted: Vec<f64> = raw
        .huge
        .iter()
        .filter(|c| c.bytes / PAGE as u64 >= GRANTED_FROM_PAGES)
        .map(|c| c.huge_fraction())
        .collect();
    Curves {
        pages,
        small,
        huge,
        knees,
        knees_huge,
        tlb_knees,
        granted: oslab_stats::median(&granted).unwrap_or(0.0),
    }
}

pub fn judge(plan: &Plan, raw: &Raw, env: &Environment) -> Output {
    let c = curves(raw);
    let hypervisor = env.machine.hypervisor.name.as_deref();
    Output {
        findings: findings(&c, &raw.cpuid),
        claims: vec![claim(
            &c,
            hypervisor,
            env.machine.memory.thp_enabled.as_deref(),
        )],
        notes: notes(&c, plan, raw, hypervisor),
        plots: vec![plot(&c, &raw.cpuid)],
        ..Default::default()
    }
}

fn findings(c: &Curves, cpuid: &[CpuidTlb]) -> Vec<Finding> {
    let mut out = Vec::new();
    for (k, l) in c.knees.iter().enumerate() {
        if let Some(e) = l.edge_x {
            out.push(finding(
                &format!("knee{}.pages", k + 1),
                e,
                "pages",
                format!(
                    "4 KiB pages: {:.2} ns per access up to about {e:.0} pages, then {:.1}x (a knee of the curve; cache or TLB, see the ratio)",
                    l.value,
                    l.step.unwrap_or(f64::NAN)
                ),
            ));
        }
    }
    if let Some(last) = c.pages.len().checked_sub(1) {
        out.push(finding(
            "page_walk_ns",
            c.small[last] - c.huge[last],
            "ns",
            format!(
                "at {} pages: 4 KiB {:.2} ns - huge {:.2} ns (the extra cost of translating with 4 KiB pages)",
                c.pages[last], c.small[last], c.huge[last]
            ),
        ));
    }
    out.push(finding(
        "thp_granted",
        c.granted,
        "fraction",
        "share of the huge-page buffers the kernel backed with huge pages",
    ));
    for t in data_4k(cpuid) {
        out.push(finding(
            &format!("cpuid.l{}.{}", t.level, t.kind),
            t.entries as f64,
            "entries",
            format!(
                "CPUID: level {} {} TLB, {} entries ({}), pages {}",
                t.level,
                t.kind,
                t.entries,
                // as many ways as entries (or more, as some hypervisors report): one
                // set, which is what fully associative means
                if t.ways == 0 || t.ways >= t.entries {
                    "fully associative".into()
                } else {
                    format!("{}-way", t.ways)
                },
                t.pages.join("/")
            ),
        ));
    }
    for (i, k) in c.tlb_knees.iter().enumerate() {
        out.push(finding(
            &format!("tlb_reach{}.pages", i + 1),
            *k,
            "pages",
            format!(
                "the 4 KiB / huge-page cost ratio rises past about {k:.0} pages ({:.0} KiB of 4 KiB pages): a TLB level's reach",
                k * 4.0
            ),
        ));
    }
    out
}

/// CPUID's TLBs for 4 KiB pages that serve data.
fn data_4k(cpuid: &[CpuidTlb]) -> impl Iterator<Item = &CpuidTlb> {
    cpuid
        .iter()
        .filter(|t| t.pages.iter().any(|p| p == "4K") && t.kind != "instruction")
}

fn rounded(v: &[f64]) -> String {
    let r: Vec<String> = v.iter().map(|k| format!("{k:.0}")).collect();
    format!("[{}]", r.join(", "))
}

fn claim(c: &Curves, hypervisor: Option<&str>, thp: Option<&str>) -> Claim {
    let Some(last) = c.pages.len().checked_sub(1) else {
        return REACH.not_judged("a sweep of page counts", "no page count was measured");
    };
    let subject = format!("huge / 4 KiB cost per access at {:.0} pages", c.pages[last]);
    let rule = Rule::Below(HUGE_OVER_SMALL_BELOW);
    if c.granted < GRANTED_AT_LEAST {
        return REACH.not_testable(
            &rule.describe(&subject, "x"),
            format!(
                "the kernel backed only {:.0} % of the huge-page buffers with huge pages (transparent huge pages: {}), so there is nothing to compare",
                c.granted * 100.0,
                thp.unwrap_or("unknown")
            ),
        );
    }
    let ratio = c.huge[last] / c.small[last];
    let knees: Vec<f64> = c.knees.iter().filter_map(|l| l.edge_x).collect();
    let context = format!(
        "4 KiB {} vs huge {}; knees of both curves (caches) at {} / {} pages; TLB knees (the ratio's) at {}; {:.0} % huge pages granted",
        figure(c.small[last], "ns"),
        figure(c.huge[last], "ns"),
        rounded(&knees),
        rounded(&c.knees_huge),
        rounded(&c.tlb_knees),
        c.granted * 100.0
    );
    REACH.judge(&[Condition::new(subject, "x", rule, ratio)], &context, |o| {
        if o.holds() {
            "one 2 MiB entry covers 512 pages, so the same pages need far fewer TLB entries and page walks".into()
        } else {
            match hypervisor {
                Some(h) => format!(
                    "accesses cost about the same with huge pages although the guest got them: under {h} a guest's huge page may sit on the host's small pages, so each miss still walks the host's tables"
                ),
                None => "accesses cost about the same with huge pages although the kernel granted them: the 4 KiB translations here hit the TLB or its page-walk caches well enough".into(),
            }
        }
    })
}

fn notes(c: &Curves, plan: &Plan, raw: &Raw, hypervisor: Option<&str>) -> Vec<String> {
    let mut notes = Vec::new();
    if raw.cpuid.is_empty() {
        notes.push(format!(
            "CPUID reports no TLB sizes here (leaf 0x18 / 0x80000005-6 absent or empty{})",
            match hypervisor {
                Some(h) => format!("; {h} may hide them"),
                None => String::new(),
            }
        ));
    }
    if let Some(last) = c.pages.len().checked_sub(1) {
        let effective =
            c.granted >= GRANTED_AT_LEAST && c.huge[last] < HUGE_OVER_SMALL_BELOW * c.small[last];
        if !effective {
            notes.push(format!(
                "huge pages not effective here ({:.0} % granted; at {} pages 4 KiB {:.2} ns vs huge {:.2} ns){}, so no huge-page reach is claimed",
                c.granted * 100.0,
                c.pages[last],
                c.small[last],
                c.huge[last],
                if hypervisor.is_some() {
                    ": possibly backed by small pages on the host"
                } else {
                    ""
                }
            ));
        }
    }
    if c.tlb_knees.is_empty() {
        notes.push("the 4 KiB / huge-page ratio shows no knee: the TLB levels did not show as steps (a gradual rise, or beyond the sweep)".into());
    }
    notes.push(format!(
        "{} page counts on each page size, {} samples each, visited in a shuffled order",
        c.pages.len(),
        plan.samples
    ));
    notes
}

fn plot(c: &Curves, cpuid: &[CpuidTlb]) -> Plot {
    let markers = data_4k(cpuid)
        .map(|t| Marker {
            x: t.entries as f64,
            label: format!("CPUID L{} {} {}", t.level, t.kind, t.entries),
        })
        .chain(c.knees.iter().filter_map(|l| l.edge_x).map(|k| Marker {
            x: k,
            label: format!("knee {k:.0}"),
        }))
        .collect();
    let series = |name: &str, y: &[f64]| Series {
        name: name.into(),
        style: SeriesStyle::LinePoints,
        points: points(&c.pages, y),
    };
    Plot {
        id: "tlb".into(),
        title: "one line per page: ns per access vs pages".into(),
        x: Axis::new("pages touched", "pages", Scale::Log2),
        y: Axis::new("latency", "ns", Scale::Log10),
        series: vec![
            series("4 KiB pages", &c.small),
            series("huge pages", &c.huge),
        ],
        markers,
        x_labels: vec![],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mem::common::sweep::Chased;
    use oslab_model::Verdict;

    fn plan() -> Plan {
        Plan {
            samples: 3,
            max_pages: 16384,
            per_octave: 2,
        }
    }

    /// 4 KiB pages cost `small(p)` per access, huge pages `huge(p)`; `granted` of
    /// each huge buffer is backed by huge pages.
    fn raw(small: impl Fn(f64) -> f64, huge: impl Fn(f64) -> f64, granted: f64) -> Raw {
        let chased = |pages: u64, ns: f64, share: f64| Chased {
            bytes: pages * PAGE as u64,
            ns: vec![ns; 3],
            buffer_bytes: (pages * PAGE as u64).max(2 << 20),
            anon_huge_bytes: Some(((pages * PAGE as u64).max(2 << 20) as f64 * share) as u64),
        };
        let pages = plan().pages();
        Raw {
            small: pages
                .iter()
                .map(|&p| chased(p, small(p as f64), 0.0))
                .collect(),
            huge: pages
                .iter()
                .map(|&p| chased(p, huge(p as f64), granted))
                .collect(),
            cpuid: vec![CpuidTlb {
                kind: "data".into(),
                level: 1,
                pages: vec!["4K".into()],
                entries: 64,
                ways: 4,
            }],
        }
    }

    /// Caches at 64 and 512 pages; 4 KiB pages miss the TLB from 2048 pages on.
    fn caches(p: f64) -> f64 {
        match p {
            p if p <= 64.0 => 1.0,
            p if p <= 512.0 => 3.0,
            _ => 6.0,
        }
    }

    fn walks(p: f64) -> f64 {
        caches(p) * if p > 2048.0 { 4.0 } else { 1.0 }
    }

    fn judged(r: &Raw, hypervisor: Option<&str>) -> Output {
        judge(
            &plan(),
            r,
            &crate::mem::common::test_env::test_env(hypervisor, &[]),
        )
    }

    #[test]
    fn huge_pages_that_shorten_the_walk_hold() {
        let out = judged(&raw(walks, caches, 1.0), None);
        let c = &out.claims[0];
        assert_eq!(c.verdict, Verdict::Holds, "{c:?}");
        assert_eq!(
            c.expectation,
            Rule::Below(0.75).describe("huge / 4 KiB cost per access at 16384 pages", "x")
        );
        let f = |n: &str| out.findings.iter().find(|f| f.name == n).unwrap().value;
        assert_eq!(f("page_walk_ns"), 18.0);
        assert_eq!(f("thp_granted"), 1.0);
        assert_eq!(f("cpuid.l1.data"), 64.0);
        let reach = f("tlb_reach1.pages");
        assert!((2048.0..4096.0).contains(&reach), "{reach}");
        assert!(out.findings.iter().any(|f| f.name == "knee1.pages"));
    }

    #[test]
    fn huge_pages_granted_but_no_cheaper_differ_with_the_machine_s_reason() {
        let out = judged(&raw(walks, walks, 1.0), Some("KVM"));
        assert_eq!(out.claims[0].verdict, Verdict::Differs);
        assert!(
            out.claims[0].why.contains("under KVM"),
            "{}",
            out.claims[0].why
        );
        let bare = judged(&raw(walks, walks, 1.0), None);
        assert!(
            !bare.claims[0].why.contains("host"),
            "{}",
            bare.claims[0].why
        );
        assert!(bare.notes.iter().any(|n| n.contains("not effective")));
    }

    #[test]
    fn no_huge_pages_granted_is_not_testable() {
        let out = judged(&raw(walks, walks, 0.0), None);
        let c = &out.claims[0];
        assert_eq!(c.verdict, Verdict::NotTestable);
        assert!(c.why.contains("only 0 %"), "{}", c.why);
        let empty = Raw {
            small: vec![],
            huge: vec![],
            cpuid: vec![],
        };
        let out = judged(&empty, None);
        assert_eq!(out.claims[0].verdict, Verdict::NotJudged);
        assert!(out.notes.iter().any(|n| n.contains("CPUID reports no TLB")));
    }
}

//! The claims of `cpu.ctxsw`: pinning, threads vs processes, the hypervisor.

use oslab_model::{Claim, Environment};

use super::cpu_mask::cpus_of;
use super::modes::{Modes, Spread};
use super::{CellRaw, Raw};
use oslab_harness::check::{Check, Condition, Outcome, Rule};
use oslab_stats::median;

const PINNING: Check = Check {
    id: "pinning-cheaper",
    tolerates: &oslab_harness::interference::TIMES,
    text: "Pinning both tasks to one CPU makes switches 45-70 % cheaper",
    source: "B. Sigoure, \"How long does it take to make a context switch?\" (2010, updated 2013: 45-70 % on 2006-2013 Xeons)",
};

const THREADS: Check = Check {
    id: "threads-cheaper",
    tolerates: &oslab_harness::interference::TIMES,
    text: "A thread switch is 5-20 % cheaper than a process switch",
    source: "B. Sigoure, \"How long does it take to make a context switch?\" (2010)",
};

const VM: Check = Check {
    id: "vm-dearer",
    tolerates: &oslab_harness::interference::TIMES,
    text: "Under a hypervisor context switches cost 2.5-3x more",
    source: "B. Sigoure, \"How long does it take to make a context switch?\" (2010, VMware ESX)",
};

/// The material's band, in per cent saved.
const PINNING_BAND: (f64, f64) = (45.0, 70.0);
const THREADS_BAND: (f64, f64) = (5.0, 20.0);

pub(super) fn claims(raw: &Raw, env: &Environment) -> Vec<Claim> {
    vec![pinning(raw, env), threads(raw), vm(raw, env)]
}

fn cell_median(raw: &Raw, key: &str) -> Option<f64> {
    raw.cell(key).and_then(|c| median(&c.samples()))
}

/// Where the launches behind some of a cell's samples were seen: (own, peer) CPU
/// masks, and whether those launches gave no sample outside `idx`.
fn seen(cell: &CellRaw, idx: &[usize]) -> (u64, u64, bool) {
    let launch_of = cell.sample_launch();
    let mut launches: Vec<usize> = idx
        .iter()
        .filter_map(|&i| launch_of.get(i).copied())
        .collect();
    launches.dedup();
    let pure = launch_of
        .iter()
        .enumerate()
        .all(|(i, l)| !launches.contains(l) || idx.contains(&i));
    let (mut own, mut peer) = (0, 0);
    for &l in &launches {
        own |= cell.launches[l].own_cpus;
        peer |= cell.launches[l].peer_cpus;
    }
    (own, peer, pure)
}

/// The one CPU both sides were seen on, when they were seen on one only (then every
/// batch of those launches ran there, whichever mode it fell in).
fn one_cpu((own, peer, _): (u64, u64, bool)) -> Option<u32> {
    (own == peer && own.count_ones() == 1).then(|| own.trailing_zeros())
}

/// Why handoffs between tasks on two CPUs cost what they cost: from the hypervisor
/// (or its absence) and the load during the run.
fn cross_cpu_why(env: &Environment) -> String {
    let mut s = match &env.machine.hypervisor.name {
        Some(h) => format!(
            "under {h} waking a halted vCPU is a VM exit, a host-side wake-up and a VM entry"
        ),
        None => {
            "on bare metal that is an inter-processor interrupt and the other CPU's exit from idle"
                .into()
        }
    };
    let busy = env.load.cpu_busy_fraction * 100.0;
    if busy <= 75.0 {
        s.push_str(&format!(
            "; the CPUs were idle {:.0} % of the run, so a wake-up often found the other CPU idle",
            100.0 - busy
        ));
    } else {
        s.push_str(&format!("; the CPUs were {busy:.0} % busy during the run"));
    }
    if let Some(w) = &env.load.warning {
        s.push_str(&format!(" ({w})"));
    }
    s
}

/// Why unpinned handoffs cost less than pinned ones: from the load during the run.
fn cheaper_unpinned(env: &Environment, pinned: Option<&CellRaw>) -> String {
    let cpu = pinned.map_or_else(|| "?".into(), |c| cpus_of(c.switch_counts().own_cpus));
    match &env.load.warning {
        Some(w) => format!(
            "unpinned handoffs cost less than pinned ones while {w}: the pair pinned to cpu {cpu} shared it with that work, while unpinned tasks could run where a CPU was free"
        ),
        None => format!(
            "unpinned handoffs cost less than pinned ones with no other load recorded (the CPUs {:.0} % busy, oslab included); see the spread of both cells",
            env.load.cpu_busy_fraction * 100.0
        ),
    }
}

/// A cell's figure for a claim: the median of its samples, or the lower mode's when
/// they fall into two modes (the batches with the least interference, or the
/// cheapest placement the scheduler found).
struct Fig {
    value: f64,
    spread: Spread,
    n: usize,
}

impl Fig {
    fn of(samples: &[f64]) -> Option<Fig> {
        let spread = Spread::of(samples);
        let value = match &spread {
            Spread::Bimodal(m) => m.lower_median,
            _ => median(samples)?,
        };
        Some(Fig {
            value,
            spread,
            n: samples.len(),
        })
    }

    fn modes(&self) -> Option<&Modes> {
        match &self.spread {
            Spread::Bimodal(m) => Some(m),
            _ => None,
        }
    }

    fn steady(&self) -> bool {
        self.spread.steady()
    }

    /// "7811 ns (one mode, CV 5 %)".
    fn text(&self) -> String {
        format!("{:.0} ns ({})", self.value, self.spread.describe(self.n))
    }
}

/// `what`, or "`what` (lower mode)" when its figure is a lower mode.
fn named(what: &str, f: Option<&Fig>) -> String {
    match f.and_then(Fig::modes) {
        Some(_) => format!("{what} (lower mode)"),
        None => what.into(),
    }
}

fn cell_fig(raw: &Raw, key: &str) -> Option<Fig> {
    raw.cell(key).and_then(|c| Fig::of(&c.samples()))
}

fn pinning(raw: &Raw, env: &Environment) -> Claim {
    let pinned_cell = raw.cell("processes.futex.same-cpu");
    let free_cell = raw.cell("processes.futex.unpinned");
    let pinned = cell_fig(raw, "processes.futex.same-cpu");
    let free_samples = free_cell.map(|c| c.samples()).unwrap_or_default();
    let free = Fig::of(&free_samples);
    let modes = free.as_ref().and_then(Fig::modes);
    let subject = format!(
        "saving of {} vs {}",
        named("pinned", pinned.as_ref()),
        named("unpinned", free.as_ref())
    );
    let cut = pinned
        .as_ref()
        .zip(free.as_ref())
        .map(|(p, f)| (1.0 - p.value / f.value) * 100.0);
    let why_none = match pinned {
        None => "the pinned futex cell (processes.futex.same-cpu) has no samples",
        Some(_) => "the unpinned futex cell (processes.futex.unpinned) has no samples",
    };
    let cond = Condition::from_option(
        subject,
        "%",
        Rule::Range(PINNING_BAND.0, PINNING_BAND.1),
        cut,
        why_none,
    );
    let free = free_samples;
    let all: Vec<usize> = (0..free.len()).collect();
    let lower_seen = free_cell.map(|c| seen(c, modes.map_or(&all, |m| &m.lower)));
    let upper_seen = free_cell.zip(modes).map(|(c, m)| seen(c, &m.upper));
    let mut context = format!(
        "pinned {}; unpinned {}",
        pinned.as_ref().map_or_else(|| "-".into(), Fig::text),
        Fig::of(&free).map_or_else(|| "-".into(), |f| f.text())
    );
    if let (Some(m), Some(p), Some(lo), Some(up)) = (
        modes,
        pinned.as_ref().map(|p| p.value),
        lower_seen,
        upper_seen,
    ) {
        context.push_str(&format!(
            "; lower mode seen on cpus {} / {}, upper on {} / {}; pinned vs the upper mode {:.0} % cheaper",
            cpus_of(lo.0),
            cpus_of(lo.1),
            cpus_of(up.0),
            cpus_of(up.1),
            (1.0 - p / m.upper_median) * 100.0
        ));
    }
    let facts = Unpinned {
        modes,
        lower: lower_seen.unwrap_or((0, 0, false)),
        upper: upper_seen,
        pinned_cell,
    };
    PINNING.judge(&[cond], &context, |o| {
        pinning_why(o, cut.unwrap_or(f64::NAN), &facts, env)
    })
}

/// What the unpinned cell showed, for the pinning claim's why.
struct Unpinned<'a> {
    modes: Option<&'a Modes>,
    /// Where the launches behind the figure judged (the lower mode, or all) ran.
    lower: (u64, u64, bool),
    upper: Option<(u64, u64, bool)>,
    pinned_cell: Option<&'a CellRaw>,
}

fn pinning_why(o: &Outcome, cut: f64, u: &Unpinned, env: &Environment) -> String {
    let lo = u.lower;
    let cpus = format!("{} / {}", cpus_of(lo.0), cpus_of(lo.1));
    let two_cpus = (lo.0 | lo.1).count_ones() >= 2;
    if o.holds() {
        return match u.modes {
            Some(_) => "pinned is 45-70 % cheaper even than the cheaper of the two unpinned modes, as the author saw".into(),
            None => "as the author saw on 2010-2013 Xeons".into(),
        };
    }
    if cut < 0.0 {
        return cheaper_unpinned(env, u.pinned_cell);
    }
    if cut > PINNING_BAND.1 {
        return if two_cpus {
            format!(
                "the unpinned tasks ran on two CPUs (seen on cpus {cpus}), so each handoff is a cross-CPU wake-up, not a switch on one CPU: {}",
                cross_cpu_why(env)
            )
        } else {
            format!(
                "the unpinned tasks were seen only on cpus {cpus}, yet cost far more than pinned ones: a migration between the per-batch CPU samples, or other work on that CPU"
            )
        };
    }
    let mix = match (u.modes, u.upper) {
        (Some(m), Some(up)) => {
            let head = format!(
                "; the dearer mode ({} batch{}, {:.0} ns)",
                m.upper.len(),
                if m.upper.len() == 1 { "" } else { "es" },
                m.upper_median
            );
            match (one_cpu(lo), one_cpu(up)) {
                (Some(a), Some(b)) if a == b => format!(
                    "{head} ran on cpu{a} too: the same placement, disturbed by other work{}",
                    env.load
                        .warning
                        .as_ref()
                        .map_or_else(String::new, |w| format!(" ({w})"))
                ),
                _ => format!(
                    "{head} was seen on cpus {} / {}: the unpinned cost is a mix of placements, not one figure",
                    cpus_of(up.0),
                    cpus_of(up.1)
                ),
            }
        }
        _ => String::new(),
    };
    let which = if u.modes.is_some() {
        "in the cheaper unpinned mode"
    } else {
        "in every unpinned launch"
    };
    match one_cpu(lo) {
        Some(cpu) => format!(
            "{which} the scheduler kept both tasks on cpu{cpu}, where pinning has nothing to save{mix}"
        ),
        None if u.modes.is_some() && !lo.2 => format!(
            "the cheaper unpinned mode costs little more than a pinned handoff; its launches were seen on cpus {cpus} and gave batches to the other mode too, so the CPU record cannot tell where its batches ran{mix}"
        ),
        None => format!(
            "the unpinned tasks were seen on cpus {cpus}, yet a handoff cost little more than on one CPU: they shared a CPU most of the time, or waking another CPU is cheap here{mix}"
        ),
    }
}

fn threads(raw: &Raw) -> Claim {
    let p = cell_fig(raw, "processes.futex.same-cpu");
    let t = cell_fig(raw, "threads.futex.same-cpu");
    let cut = p
        .as_ref()
        .zip(t.as_ref())
        .map(|(p, t)| (1.0 - t.value / p.value) * 100.0);
    let cond = Condition::from_option(
        format!(
            "saving of {} vs {} on one CPU",
            named("threads", t.as_ref()),
            named("processes", p.as_ref())
        ),
        "%",
        Rule::Range(THREADS_BAND.0, THREADS_BAND.1),
        cut,
        "the same-CPU futex cells (processes and threads) were not both measured",
    );
    let noisy: Vec<String> = [("processes", &p), ("threads", &t)]
        .into_iter()
        .filter_map(|(n, f)| {
            f.as_ref()
                .filter(|f| !f.steady())
                .map(|f| format!("{n} {}", f.spread.describe(f.n)))
        })
        .collect();
    let context = match (&p, &t) {
        (Some(p), Some(t)) => format!("processes {}, threads {}", p.text(), t.text()),
        _ => String::new(),
    };
    THREADS.judge(&[cond], &context, |o| {
        let cut = cut.unwrap_or(f64::NAN);
        let mut why = if o.holds() {
            "no page-table (CR3) change between threads of one process".to_string()
        } else if cut < THREADS_BAND.0 {
            match raw.pcid {
                Some(true) => "this CPU has PCID: a process switch changes CR3 without flushing the TLB, so it costs about what a thread switch does".into(),
                Some(false) => "no PCID here, yet a process switch cost about what a thread switch does: with no working set there is little TLB state to lose".into(),
                None => "a process switch cost about what a thread switch does (/proc/cpuinfo lists no flags to tell whether PCID spares the TLB)".into(),
            }
        } else {
            let mut s = "the address-space change costs more here than on the author's CPUs".to_string();
            if raw.pcid == Some(false) {
                s.push_str(" (no PCID: each process switch flushes the TLB)");
            }
            s
        };
        if !noisy.is_empty() {
            why.push_str(&format!(
                "; the figures are not steady ({}), so the saving is no surer than that spread",
                noisy.join("; ")
            ));
        }
        why
    })
}

fn vm(raw: &Raw, env: &Environment) -> Claim {
    let hv = env.machine.hypervisor.name.as_deref();
    let same = cell_median(raw, "processes.futex.same-cpu");
    let cross = raw
        .cells
        .iter()
        .find(|c| {
            c.tasks == "processes" && c.mechanism == "futex" && c.placement.starts_with("cross-cpu")
        })
        .and_then(|c| median(&c.samples()).map(|m| (c.placement.clone(), m)));
    let mut claim = VM.not_testable(
        "the same machine measured with and without a hypervisor",
        match hv {
            Some(h) => format!(
                "running under {h}: one machine cannot be measured both with and without its hypervisor; the figures are shown as context"
            ),
            None => "bare metal: there is no hypervisor here to compare with".into(),
        },
    );
    let mut observed = match (hv, same) {
        (Some(h), Some(s)) => format!("running under {h}: {s:.0} ns per same-CPU switch"),
        (None, Some(s)) => format!("bare metal: {s:.0} ns per same-CPU switch"),
        _ => "no same-CPU figure".into(),
    };
    if let Some((place, ns)) = cross {
        observed.push_str(&format!("; {ns:.0} ns per cross-CPU wake-up ({place})"));
    }
    claim.observed = observed;
    claim
}

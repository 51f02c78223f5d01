//! The live table of `oslab watch`: sar's columns in four groups (CPU, tasks,
//! memory, paging), one line per interval when the terminal is wide enough, else
//! one line per group of columns that fits; devices below in sar -d's columns.

use std::collections::BTreeMap;
use std::fmt::Write;

use oslab_model::system::{CpuPct, SarRecord};
use oslab_term_text::one_line;

use crate::table::Width;

struct Col {
    name: &'static str,
    /// The unit row of the header.
    unit: &'static str,
    width: usize,
    decimals: usize,
    get: fn(&SarRecord) -> f64,
}

const fn col(
    name: &'static str,
    unit: &'static str,
    width: usize,
    decimals: usize,
    get: fn(&SarRecord) -> f64,
) -> Col {
    Col {
        name,
        unit,
        width,
        decimals,
        get,
    }
}

fn mib(kb: u64) -> f64 {
    kb as f64 / 1024.0
}

const CPU: [Col; 6] = [
    col("%usr", "%", 5, 1, |r| r.cpu.user),
    col("%nice", "%", 5, 1, |r| r.cpu.nice),
    col("%sys", "%", 5, 1, |r| r.cpu.system),
    col("%iowait", "%", 7, 1, |r| r.cpu.iowait),
    col("%steal", "%", 6, 1, |r| r.cpu.steal),
    col("%idle", "%", 5, 1, |r| r.cpu.idle),
];

const TASKS: [Col; 8] = [
    col("proc/s", "/s", 6, 0, |r| r.proc_s),
    col("cswch/s", "/s", 8, 0, |r| r.cswch_s),
    col("intr/s", "/s", 7, 0, |r| r.intr_s),
    col("runq-sz", "", 7, 0, |r| r.runq_sz as f64),
    col("blocked", "", 7, 0, |r| r.blocked as f64),
    col("ldavg-1", "", 7, 2, |r| r.ldavg_1),
    col("ldavg-5", "", 7, 2, |r| r.ldavg_5),
    col("ldavg-15", "", 8, 2, |r| r.ldavg_15),
];

const MEMORY: [Col; 8] = [
    col("memfree", "MiB", 8, 0, |r| mib(r.memory.kbmemfree)),
    col("avail", "MiB", 8, 0, |r| mib(r.memory.kbavail)),
    col("buffers", "MiB", 7, 0, |r| mib(r.memory.kbbuffers)),
    col("cached", "MiB", 8, 0, |r| mib(r.memory.kbcached)),
    col("commit", "MiB", 8, 0, |r| mib(r.memory.kbcommit)),
    col("dirty", "MiB", 7, 1, |r| mib(r.memory.kbdirty)),
    col("wback", "MiB", 7, 1, |r| mib(r.memory.kbwriteback)),
    col("swpused", "MiB", 7, 0, |r| mib(r.memory.kbswpused)),
];

const PAGING: [Col; 11] = [
    col("pgpgin", "KiB/s", 8, 0, |r| r.paging.pgpgin_kb_s),
    col("pgpgout", "KiB/s", 8, 0, |r| r.paging.pgpgout_kb_s),
    col("fault", "/s", 8, 0, |r| r.paging.fault_s),
    col("majflt", "/s", 7, 0, |r| r.paging.majflt_s),
    col("pgfree", "/s", 8, 0, |r| r.paging.pgfree_s),
    col("pgscank", "/s", 8, 0, |r| r.paging.pgscank_s),
    col("pgscand", "/s", 8, 0, |r| r.paging.pgscand_s),
    col("pgsteal", "/s", 8, 0, |r| r.paging.pgsteal_s),
    col("%vmeff", "%", 6, 1, |r| r.paging.vmeff_pct),
    col("pswpin", "/s", 6, 0, |r| r.paging.pswpin_s),
    col("pswpout", "/s", 7, 0, |r| r.paging.pswpout_s),
];

const GROUPS: [&[Col]; 4] = [&CPU, &TASKS, &MEMORY, &PAGING];
const TIME: usize = 8;

fn group_width(g: &[Col]) -> usize {
    g.iter().map(|c| c.width + 1).sum::<usize>() + 2
}

/// Which groups go on which line: all on one within `width` (or with no limit),
/// else as many as fit on each.
pub fn bands(width: Width) -> Vec<Vec<usize>> {
    let Some(width) = width else {
        return vec![(0..GROUPS.len()).collect()];
    };
    let mut out: Vec<Vec<usize>> = Vec::new();
    let mut used = TIME;
    for (i, g) in GROUPS.iter().enumerate() {
        let w = group_width(g);
        match out.last_mut() {
            Some(band) if used + w <= width => band.push(i),
            _ => {
                out.push(vec![i]);
                used = TIME;
            }
        }
        used += w;
    }
    out
}

fn row(first: &str, band: &[usize], cell: impl Fn(&Col) -> String) -> String {
    let mut s = format!("{first:<TIME$}");
    for g in band {
        s.push_str(" |");
        for c in GROUPS[*g] {
            let _ = write!(s, " {:>w$}", cell(c), w = c.width);
        }
    }
    let mut s = s.trim_end().to_string();
    s.push('\n');
    s
}

/// The header: the columns' names and units for each band, and sar -d's columns.
pub fn header(bands: &[Vec<usize>]) -> String {
    let mut s = String::new();
    for (i, b) in bands.iter().enumerate() {
        s.push_str(&row(if i == 0 { "time" } else { "" }, b, |c| c.name.into()));
        s.push_str(&row("", b, |c| c.unit.into()));
    }
    let _ = writeln!(
        s,
        "{:<TIME$} {:<10} {:>8} {:>9} {:>9} {:>9} {:>8} {:>7} {:>8} {:>6}",
        "", "DEV", "tps", "rkB/s", "wkB/s", "dkB/s", "areq-sz", "aqu-sz", "await", "%util"
    );
    s
}

/// One interval: a line per band, then a line per shown device.
pub fn line(clock: &str, r: &SarRecord, devices: &[&str], bands: &[Vec<usize>]) -> String {
    let mut s = String::new();
    for (i, b) in bands.iter().enumerate() {
        s.push_str(&row(if i == 0 { clock } else { "" }, b, |c| {
            format!("{:.*}", c.decimals, (c.get)(r))
        }));
    }
    for name in devices {
        if let Some(d) = r.devices.get(*name) {
            let _ = writeln!(
                s,
                "{:<TIME$} {:<10} {:>8.1} {:>9.0} {:>9.0} {:>9.0} {:>8.1} {:>7.2} {:>8.2} {:>6.1}",
                "",
                one_line(name),
                d.tps,
                d.rkb_s,
                d.wkb_s,
                d.dkb_s,
                d.areq_kb,
                d.aqu_sz,
                d.await_ms,
                d.util_pct
            );
        }
    }
    s
}

/// One line per CPU under an interval's line, as `sar -P ALL` gives them: the CPU
/// in the time column and its shares under the all-CPU columns above.
pub fn per_cpu_lines(shares: &BTreeMap<u32, CpuPct>) -> String {
    shares
        .iter()
        .map(|(n, pct)| {
            let r = SarRecord {
                cpu: *pct,
                ..SarRecord::default()
            };
            row(&format!("  cpu{n}"), &[0], |c| {
                format!("{:.*}", c.decimals, (c.get)(&r))
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_share_a_line_only_when_they_fit() {
        assert_eq!(bands(None), vec![vec![0, 1, 2, 3]]);
        let narrow = bands(Some(80));
        assert!(narrow.len() > 1, "{narrow:?}");
        let r = SarRecord::default();
        for b in [bands(Some(80)), bands(Some(120)), bands(None)] {
            let text = header(&b) + &line("12:00:00", &r, &[], &b);
            let widest = text.lines().map(|l| l.chars().count()).max().unwrap();
            if b.len() > 1 {
                assert!(widest <= 120, "{widest}: {text}");
            }
            for name in ["%idle", "%nice", "proc/s", "intr/s", "blocked", "ldavg-15"] {
                assert!(text.contains(name), "{name}");
            }
            for name in [
                "swpused", "buffers", "pgfree", "commit", "pgscank", "pgscand",
            ] {
                assert!(text.contains(name), "{name}");
            }
        }
    }

    #[test]
    fn each_cpu_s_shares_stand_under_the_all_cpu_columns() {
        let b = bands(None);
        let mut shares = BTreeMap::new();
        for (n, user) in [(0u32, 12.5), (1, 87.5)] {
            shares.insert(
                n,
                CpuPct {
                    user,
                    idle: 100.0 - user,
                    ..CpuPct::default()
                },
            );
        }
        let text = per_cpu_lines(&shares);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2);
        assert!(lines[0].starts_with("  cpu0 ") && lines[1].starts_with("  cpu1 "));
        let names = header(&b);
        let names = names.lines().next().unwrap();
        let end = |name: &str| names.find(name).unwrap() + name.len();
        assert_eq!(&lines[0][end("%usr") - 4..end("%usr")], "12.5");
        assert_eq!(&lines[1][end("%idle") - 4..end("%idle")], "12.5");
        assert!(per_cpu_lines(&BTreeMap::new()).is_empty());
    }

    #[test]
    fn a_line_carries_the_values_under_their_names() {
        let mut r = SarRecord::default();
        r.cpu.idle = 97.5;
        r.runq_sz = 2;
        r.memory.kbswpused = 2048;
        let b = bands(None);
        let (h, l) = (header(&b), line("12:00:00", &r, &[], &b));
        let names = h.lines().next().unwrap();
        let values = l.lines().next().unwrap();
        let end = |name: &str| names.find(name).unwrap() + name.len();
        assert_eq!(&values[end("%idle") - 4..end("%idle")], "97.5");
        assert_eq!(&values[end("runq-sz") - 1..end("runq-sz")], "2");
        assert_eq!(&values[end("swpused") - 1..end("swpused")], "2");
    }
}

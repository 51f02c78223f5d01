//! /proc/interrupts: per-CPU interrupt counts (proc(5), "interrupts").
//!
//! The header names one column per online CPU (`CPU0 CPU1 ...`; an offline CPU has
//! no column, so `CPU0 CPU2` is possible). Each row is a name with a colon, then
//! one count per column, then a description. Rows such as `ERR:` and `MIS:` carry a
//! single system-wide count.

/// The per-CPU counts of the row named `name` (without the colon: `LOC`), each
/// with the CPU its column belongs to; `None` when there is no header, no such row,
/// or a count cannot be read.
pub fn row_counts(text: &str, name: &str) -> Option<Vec<(u32, u64)>> {
    let mut lines = text.lines();
    let cpus: Vec<u32> = lines
        .next()?
        .split_whitespace()
        .map(|c| c.strip_prefix("CPU")?.parse().ok())
        .collect::<Option<_>>()?;
    if cpus.is_empty() {
        return None;
    }
    let row = lines.find_map(|l| {
        let (label, rest) = l.split_once(':')?;
        (label.trim() == name).then_some(rest)
    })?;
    let counts: Vec<u64> = row
        .split_whitespace()
        .take(cpus.len())
        .map(|v| v.parse().ok())
        .collect::<Option<_>>()?;
    (counts.len() == cpus.len()).then(|| cpus.into_iter().zip(counts).collect())
}

/// Local timer interrupts of `cpu` so far (the `LOC` row: the tick, and the
/// hrtimers that share the local APIC timer).
pub fn local_timer_count(text: &str, cpu: u32) -> Option<u64> {
    row_counts(text, "LOC")?
        .into_iter()
        .find_map(|(c, n)| (c == cpu).then_some(n))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Captured on a 2-vCPU KVM guest (6.18), some device rows left out.
    const CAPTURED: &str = "           CPU0       CPU1       
 24:          1          0  IO-APIC   5-edge      ACPI:Ged
 36:          0     818049 PCI-MSIX-0000:00:02.0   1-edge      virtio1-req.0
NMI:          0          0   Non-maskable interrupts
LOC:     806067     805081   Local timer interrupts
SPU:          0          0   Spurious interrupts
RES:     226420     181628   Rescheduling interrupts
HYP:         25         95   Hypervisor callback interrupts
ERR:          0
MIS:          0
";

    #[test]
    fn the_local_timer_row_of_a_captured_file() {
        assert_eq!(local_timer_count(CAPTURED, 0), Some(806067));
        assert_eq!(local_timer_count(CAPTURED, 1), Some(805081));
        assert_eq!(local_timer_count(CAPTURED, 2), None);
        assert_eq!(
            row_counts(CAPTURED, "RES"),
            Some(vec![(0, 226420), (1, 181628)])
        );
        assert_eq!(row_counts(CAPTURED, "36"), Some(vec![(0, 0), (1, 818049)]));
        // a system-wide count has no per-CPU columns
        assert_eq!(row_counts(CAPTURED, "ERR"), None);
        assert_eq!(row_counts(CAPTURED, "XYZ"), None);
    }

    #[test]
    fn an_offline_cpu_has_no_column() {
        let text = "     CPU0   CPU2\nLOC:   10   30   Local timer interrupts\n";
        assert_eq!(local_timer_count(text, 0), Some(10));
        assert_eq!(local_timer_count(text, 1), None);
        assert_eq!(local_timer_count(text, 2), Some(30));
        assert_eq!(local_timer_count("LOC: 1 2\n", 0), None, "no header");
    }
}

/// Property tests (moved from lab's scheduler analysis): any text gives counts or
/// nothing, never a panic; the kernel's rows read back. A fuzz-like run with many
/// cases: `PROPTEST_CASES=100000 cargo test -p oslab-sys --lib -- parse::interrupts`
#[cfg(test)]
mod props {
    use super::*;
    use crate::testing::proptest_config as config;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(config(512))]

        #[test]
        fn any_text_never_panics(text in "(?s).{0,160}", cpu in any::<u32>()) {
            let _ = local_timer_count(&text, cpu);
            let _ = local_timer_count(&text, cpu % 8);
            let _ = row_counts(&text, "LOC");
        }

        #[test]
        fn local_timer_count_reads_the_loc_row(
            counts in proptest::collection::vec(any::<u64>(), 1..9),
            cpu in any::<proptest::sample::Index>(),
        ) {
            let header: String = (0..counts.len()).map(|c| format!("       CPU{c}")).collect();
            let row: String = counts.iter().map(|c| format!(" {c:>10}")).collect();
            let zeros: String = counts.iter().map(|_| "          0").collect();
            let text = format!(
                "    {header}\n  0:{zeros}   IO-APIC    2-edge      timer\nLOC:{row}   Local timer interrupts\nSPU:{zeros}   Spurious interrupts\n"
            );
            let i = cpu.index(counts.len());
            prop_assert_eq!(local_timer_count(&text, i as u32), Some(counts[i]));
            prop_assert_eq!(local_timer_count(&text, counts.len() as u32), None);
        }
    }
}

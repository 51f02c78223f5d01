//! CPUID leaves oslab reads directly (x86 only; `None` elsewhere).

/// Raw registers of one CPUID leaf.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Regs {
    pub eax: u32,
    pub ebx: u32,
    pub ecx: u32,
    pub edx: u32,
}

/// Executes CPUID for `leaf`/`subleaf`.
#[cfg(target_arch = "x86_64")]
pub fn cpuid(leaf: u32, subleaf: u32) -> Option<Regs> {
    // CPUID is available on every x86_64 CPU and has no side effects.
    let r = core::arch::x86_64::__cpuid_count(leaf, subleaf);
    Some(Regs {
        eax: r.eax,
        ebx: r.ebx,
        ecx: r.ecx,
        edx: r.edx,
    })
}

#[cfg(not(target_arch = "x86_64"))]
pub fn cpuid(_leaf: u32, _subleaf: u32) -> Option<Regs> {
    None
}

/// Twelve ASCII bytes from three registers, as vendor strings are stored.
pub fn vendor_string(a: u32, b: u32, c: u32) -> String {
    let bytes: Vec<u8> = [a, b, c].iter().flat_map(|r| r.to_le_bytes()).collect();
    String::from_utf8_lossy(&bytes)
        .trim_matches(char::from(0))
        .trim()
        .to_string()
}

/// The hypervisor's vendor signature from leaf 0x40000000 ("KVMKVMKVM",
/// "Microsoft Hv", "VMwareVMware", ...), when leaf 1 says a hypervisor is present.
pub fn hypervisor_vendor() -> Option<String> {
    let l1 = cpuid(1, 0)?;
    if l1.ecx & (1 << 31) == 0 {
        return None;
    }
    let h = cpuid(0x4000_0000, 0)?;
    let v = vendor_string(h.ebx, h.ecx, h.edx);
    (!v.is_empty()).then_some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_vendor_registers() {
        // "KVMKVMKVM\0\0\0" as KVM stores it in ebx, ecx, edx
        let s = vendor_string(0x4b4d_564b, 0x564b_4d56, 0x0000_004d);
        assert_eq!(s, "KVMKVMKVM");
    }
}

/// One TLB as CPUID describes it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Tlb {
    /// "data", "instruction", "unified", "load", "store".
    pub kind: String,
    pub level: u32,
    /// Page sizes it holds: "4K", "2M", "4M", "1G".
    pub pages: Vec<String>,
    pub entries: u32,
    /// 0 for fully associative.
    pub ways: u32,
}

/// Intel's deterministic address translation leaf 0x18, one subleaf's registers.
pub fn intel_tlb_0x18(r: Regs) -> Option<Tlb> {
    let kind = match r.edx & 0x1f {
        1 => "data",
        2 => "instruction",
        3 => "unified",
        4 => "load",
        5 => "store",
        _ => return None,
    };
    let pages: Vec<String> = [(0, "4K"), (1, "2M"), (2, "4M"), (3, "1G")]
        .iter()
        .filter(|(bit, _)| r.ebx & (1 << bit) != 0)
        .map(|(_, n)| n.to_string())
        .collect();
    let full = r.edx & (1 << 8) != 0;
    let entries = (r.ebx >> 16) * r.ecx.max(1);
    let ways = if full { 0 } else { r.ebx >> 16 };
    Some(Tlb {
        kind: kind.into(),
        level: (r.edx >> 5) & 7,
        pages,
        entries,
        ways,
    })
}

/// AMD's L1 (0x80000005) and L2 (0x80000006) TLB leaves: entries of the data
/// TLBs for 4 KiB and 2 MiB pages.
pub fn amd_tlbs(l1: Regs, l2: Regs) -> Vec<Tlb> {
    let mut out = Vec::new();
    let mut push = |level: u32, page: &str, entries: u32, ways: u32| {
        if entries > 0 {
            out.push(Tlb {
                kind: "data".into(),
                level,
                pages: vec![page.into()],
                entries,
                ways,
            });
        }
    };
    push(1, "2M", (l1.eax >> 16) & 0xff, l1.eax >> 24);
    push(1, "4K", (l1.ebx >> 16) & 0xff, l1.ebx >> 24);
    push(2, "2M", (l2.eax >> 16) & 0xfff, l2.eax >> 28);
    push(2, "4K", (l2.ebx >> 16) & 0xfff, l2.ebx >> 28);
    out
}

/// The TLBs this CPU reports: Intel leaf 0x18 or AMD 0x80000005/6. Empty when the
/// CPU (or the hypervisor) reports none.
pub fn tlbs() -> Vec<Tlb> {
    let Some(v) = cpuid(0, 0) else { return vec![] };
    let vendor = vendor_string(v.ebx, v.edx, v.ecx);
    if vendor == "GenuineIntel" && v.eax >= 0x18 {
        let max = cpuid(0x18, 0).map(|r| r.eax).unwrap_or(0).min(64);
        return (0..=max)
            .filter_map(|s| cpuid(0x18, s).and_then(intel_tlb_0x18))
            .collect();
    }
    if vendor == "AuthenticAMD" || vendor == "HygonGenuine" {
        let ext = cpuid(0x8000_0000, 0).map(|r| r.eax).unwrap_or(0);
        if ext >= 0x8000_0006
            && let (Some(a), Some(b)) = (cpuid(0x8000_0005, 0), cpuid(0x8000_0006, 0))
        {
            return amd_tlbs(a, b);
        }
    }
    vec![]
}

#[cfg(test)]
mod tlb_tests {
    use super::*;

    #[test]
    fn intel_leaf_0x18_by_hand() {
        // a 4-way, 16-set load TLB for 4K pages at level 1
        let r = Regs {
            eax: 0,
            ebx: (4 << 16) | 1,
            ecx: 16,
            edx: (1 << 5) | 4,
        };
        let t = intel_tlb_0x18(r).unwrap();
        assert_eq!(
            (t.kind.as_str(), t.level, t.entries, t.ways),
            ("load", 1, 64, 4)
        );
        assert_eq!(t.pages, vec!["4K"]);
        // a fully associative 2M/4M store TLB of 32 entries
        let r = Regs {
            eax: 0,
            ebx: (32 << 16) | 0b110,
            ecx: 1,
            edx: (1 << 8) | (1 << 5) | 5,
        };
        let t = intel_tlb_0x18(r).unwrap();
        assert_eq!((t.entries, t.ways), (32, 0));
        assert_eq!(t.pages, vec!["2M", "4M"]);
        assert!(
            intel_tlb_0x18(Regs {
                eax: 0,
                ebx: 0,
                ecx: 0,
                edx: 0
            })
            .is_none(),
            "null subleaf"
        );
    }

    #[test]
    fn amd_leaves_by_hand() {
        let l1 = Regs {
            eax: (0xff << 24) | (64 << 16),
            ebx: (0xff << 24) | (64 << 16),
            ecx: 0,
            edx: 0,
        };
        let l2 = Regs {
            eax: (6 << 28) | (2048 << 16),
            ebx: (6 << 28) | (2048 << 16),
            ecx: 0,
            edx: 0,
        };
        let t = amd_tlbs(l1, l2);
        assert_eq!(t.len(), 4);
        assert_eq!(
            (t[3].level, t[3].entries, t[3].pages[0].as_str()),
            (2, 2048, "4K")
        );
    }
}

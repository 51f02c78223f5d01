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

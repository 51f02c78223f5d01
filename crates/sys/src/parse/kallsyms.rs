//! /proc/kallsyms: the kernel's symbols with their addresses, to name the frames of
//! a kernel stack. Lines read `ffffffff81234560 T vfs_write` or, for a module,
//! `ffffffffc0123450 t ext4_writepages [ext4]`. Without privilege every address
//! reads as zero (kernel.kptr_restrict); such a table resolves nothing.

/// Text and weak symbols sorted by address.
#[derive(Debug, Default, Clone)]
pub struct Kallsyms {
    symbols: Vec<(u64, String)>,
}

impl Kallsyms {
    pub fn parse(text: &str) -> Kallsyms {
        let mut symbols: Vec<(u64, String)> = text
            .lines()
            .filter_map(|line| {
                let mut fields = line.split_whitespace();
                let addr = u64::from_str_radix(fields.next()?, 16).ok()?;
                let kind = fields.next()?;
                let name = fields.next()?;
                let is_code = matches!(kind, "T" | "t" | "W" | "w");
                (addr != 0 && is_code).then(|| (addr, name.to_string()))
            })
            .collect();
        symbols.sort_by_key(|(addr, _)| *addr);
        Kallsyms { symbols }
    }

    pub fn is_empty(&self) -> bool {
        self.symbols.is_empty()
    }

    /// The function an address lies in, as `name+0xoff`.
    pub fn resolve(&self, addr: u64) -> Option<String> {
        let i = self.symbols.partition_point(|(a, _)| *a <= addr);
        let (start, name) = self.symbols.get(i.checked_sub(1)?)?;
        Some(format!("{name}+{:#x}", addr - start))
    }

    /// The function's name alone.
    pub fn function(&self, addr: u64) -> Option<&str> {
        let i = self.symbols.partition_point(|(a, _)| *a <= addr);
        self.symbols.get(i.checked_sub(1)?).map(|(_, n)| n.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const SAMPLE: &str = "ffffffff81000000 T _stext\n\
        ffffffff81234560 T vfs_write\n\
        ffffffff81234900 t do_iter_write\n\
        ffffffff81300000 D some_data\n\
        ffffffffc0123450 t ext4_writepages\t[ext4]\n";

    #[test]
    fn an_address_resolves_to_the_function_it_lies_in() {
        let k = Kallsyms::parse(SAMPLE);
        assert_eq!(
            k.resolve(0xffffffff81234560).as_deref(),
            Some("vfs_write+0x0")
        );
        assert_eq!(
            k.resolve(0xffffffff81234571).as_deref(),
            Some("vfs_write+0x11")
        );
        assert_eq!(k.function(0xffffffff81234901), Some("do_iter_write"));
        assert_eq!(k.function(0xffffffffc0123460), Some("ext4_writepages"));
        assert_eq!(k.resolve(0x1000), None);
    }

    #[test]
    fn data_symbols_and_hidden_addresses_are_left_out() {
        let k = Kallsyms::parse(SAMPLE);
        assert_eq!(k.function(0xffffffff81300010), Some("do_iter_write"));
        let hidden = Kallsyms::parse("0000000000000000 T vfs_write\n0000000000000000 T _stext\n");
        assert!(hidden.is_empty());
        assert_eq!(hidden.resolve(0xffffffff81234560), None);
    }

    proptest! {
        #[test]
        fn any_text_parses_without_panic(text in ".{0,400}", addr in any::<u64>()) {
            let k = Kallsyms::parse(&text);
            let _ = k.resolve(addr);
        }
    }
}

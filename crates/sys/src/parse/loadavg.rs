//! /proc/loadavg: the 1, 5 and 15 minute load averages (proc(5)).

use crate::fsread::Root;

/// The three load averages of the text; one missing or not a finite number is 0.
pub fn parse_loadavg(text: &str) -> [f64; 3] {
    let mut it = text.split_whitespace().map(|x| {
        x.parse::<f64>()
            .ok()
            .filter(|v| v.is_finite())
            .unwrap_or(0.0)
    });
    [
        it.next().unwrap_or(0.0),
        it.next().unwrap_or(0.0),
        it.next().unwrap_or(0.0),
    ]
}

/// The load averages under `root` now; zeros when /proc/loadavg cannot be read.
pub fn read(root: &Root) -> [f64; 3] {
    parse_loadavg(&root.read("/proc/loadavg").unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_captured_line() {
        // this KVM guest, `cat /proc/loadavg`
        assert_eq!(
            parse_loadavg("2.33 1.91 1.53 2/93 2085\n"),
            [2.33, 1.91, 1.53]
        );
        assert_eq!(parse_loadavg(""), [0.0, 0.0, 0.0]);
        assert_eq!(parse_loadavg("NaN inf 0.5"), [0.0, 0.0, 0.5]);
    }

    #[test]
    fn the_reader_takes_a_root() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("proc")).unwrap();
        std::fs::write(
            dir.path().join("proc/loadavg"),
            "0.52 0.58 0.59 2/389 12345\n",
        )
        .unwrap();
        assert_eq!(read(&Root::at(dir.path())), [0.52, 0.58, 0.59]);
        assert_eq!(read(&Root::at(dir.path().join("none"))), [0.0; 3]);
    }
}

/// Property tests: any text gives three finite figures, never a panic; three figures
/// as the kernel prints them (two decimals) read back.
#[cfg(test)]
mod props {
    use super::*;
    use crate::testing::proptest_config as config;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(config(512))]

        #[test]
        fn any_text_gives_finite_figures(text in "(?s).{0,80}") {
            prop_assert!(parse_loadavg(&text).iter().all(|v| v.is_finite()));
        }

        #[test]
        fn printed_figures_read_back(a in 0u32..100_000, b in 0u32..100_000, c in 0u32..100_000) {
            let f = |x: u32| x as f64 / 100.0;
            let text = format!("{:.2} {:.2} {:.2} 1/100 4242\n", f(a), f(b), f(c));
            prop_assert_eq!(parse_loadavg(&text), [f(a), f(b), f(c)]);
        }
    }
}

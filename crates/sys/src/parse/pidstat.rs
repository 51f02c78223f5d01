//! /proc/PID/stat: the fields oslab reads of one process (proc(5)), the readers of
//! one process or all of them under a [`Root`], and the descendants of a process
//! found by their parent pids.

use crate::fsread::Root;

/// The kernel marks its own threads with PF_KTHREAD in the flags field.
pub const PF_KTHREAD: u64 = 0x0020_0000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PidStat {
    /// Field 3.
    pub state: char,
    /// Field 4.
    pub ppid: u32,
    /// Field 9.
    pub flags: u64,
    /// Fields 14 and 15: CPU time in user and kernel mode, clock ticks (USER_HZ).
    pub utime_ticks: u64,
    pub stime_ticks: u64,
    /// Fields 16 and 17: the same of its children it has waited for (and theirs).
    pub children_utime_ticks: u64,
    pub children_stime_ticks: u64,
    /// Field 22: when the process started, clock ticks since boot.
    pub start_time_ticks: u64,
}

impl PidStat {
    pub fn is_kernel_thread(&self) -> bool {
        self.flags & PF_KTHREAD != 0
    }

    pub fn cpu_ticks(&self) -> u64 {
        self.utime_ticks.saturating_add(self.stime_ticks)
    }

    /// Its own CPU time and that of the children it has waited for (fields 14-17).
    pub fn with_children_ticks(&self) -> u64 {
        self.cpu_ticks()
            .saturating_add(self.children_utime_ticks)
            .saturating_add(self.children_stime_ticks)
    }
}

/// Parses one /proc/PID/stat line. The command name (field 2) may hold spaces and
/// parentheses, so the fields after it are found from its last ')'.
pub fn parse_pid_stat(text: &str) -> Option<PidStat> {
    let rest = text.get(text.rfind(')')? + 1..)?;
    let f: Vec<&str> = rest.split_whitespace().collect();
    // f[0] is field 3
    let field = |n: usize| f.get(n - 3).copied();
    let num = |n: usize| field(n)?.parse::<u64>().ok();
    // cutime and cstime are signed in the kernel's format, never negative in practice
    let signed = |n: usize| field(n)?.parse::<i64>().ok().map(|v| v.max(0) as u64);
    Some(PidStat {
        state: field(3)?.chars().next()?,
        ppid: field(4)?.parse().ok()?,
        flags: num(9)?,
        utime_ticks: num(14)?,
        stime_ticks: num(15)?,
        children_utime_ticks: signed(16)?,
        children_stime_ticks: signed(17)?,
        start_time_ticks: num(22)?,
    })
}

/// /proc/PID/stat of one process under `root`, if it exists and parses.
pub fn read(root: &Root, pid: u32) -> Option<PidStat> {
    parse_pid_stat(&root.read(&format!("/proc/{pid}/stat")).ok()?)
}

/// Every process's /proc/PID/stat under `root`, with its pid (those that vanish
/// while read are left out).
pub fn read_all(root: &Root) -> Vec<(u32, PidStat)> {
    root.list("/proc")
        .iter()
        .filter_map(|name| {
            let pid: u32 = name.parse().ok()?;
            Some((pid, read(root, pid)?))
        })
        .collect()
}

/// The descendants of `ancestor` in a snapshot: its children, theirs, and so on,
/// by the parent pid of each (`ancestor` itself is not one).
pub fn descendants(all: &[(u32, PidStat)], ancestor: u32) -> Vec<(u32, PidStat)> {
    let mut found = std::collections::BTreeSet::from([ancestor]);
    // a pid's parent may come after it in the listing (pids wrap): repeat until stable
    loop {
        let before = found.len();
        for (pid, s) in all {
            if *pid != ancestor && found.contains(&s.ppid) {
                found.insert(*pid);
            }
        }
        if found.len() == before {
            break;
        }
    }
    all.iter()
        .filter(|(pid, _)| *pid != ancestor && found.contains(pid))
        .copied()
        .collect()
}

/// CPU ticks of the live descendants of `ancestor` in a snapshot: each one's own
/// and its waited-for children's, so a grandchild reaped by a child that still runs
/// is still counted.
pub fn descendant_ticks(all: &[(u32, PidStat)], ancestor: u32) -> u64 {
    descendants(all, ancestor)
        .iter()
        .map(|(_, s)| s.with_children_ticks())
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_captured_line_with_a_tricky_name() {
        // captured from this KVM guest, the name edited to hold ") (" and spaces
        let line = "1234 (a) (b c) S 1 1234 1234 0 -1 4194560 120 0 0 0 7 3 0 0 20 0 1 0 5821 10452992 882 18446744073709551615 1 1 0 0 0 0 0 4096 0 0 0 0 17 1 0 0 0 0 0\n";
        let s = parse_pid_stat(line).unwrap();
        assert_eq!(s.state, 'S');
        assert_eq!(s.ppid, 1);
        assert_eq!(s.cpu_ticks(), 10);
        assert_eq!(s.start_time_ticks, 5821);
        assert!(!s.is_kernel_thread());
        let kworker = "47 (kworker/0:1-events) I 2 0 0 0 -1 69238880 0 0 0 0 0 12 0 0 20 0 1 0 95 0 0 18446744073709551615 0 0 0 0 0 0 0 2147483647 0 0 0 0 17 0 0 0 0 0 0\n";
        let k = parse_pid_stat(kworker).unwrap();
        assert!(k.is_kernel_thread());
        assert_eq!(k.cpu_ticks(), 12);
        assert_eq!(parse_pid_stat("1 (x) S"), None);
        assert_eq!(parse_pid_stat(""), None);
    }

    #[test]
    fn children_times_are_fields_16_and_17() {
        let line = "9 (sh) S 1 9 9 0 -1 0 0 0 0 0 3 2 40 5 20 0 1 0 77 0 0 0\n";
        let s = parse_pid_stat(line).unwrap();
        assert_eq!((s.children_utime_ticks, s.children_stime_ticks), (40, 5));
        assert_eq!(s.with_children_ticks(), 50);
    }

    fn child_of(ppid: u32) -> PidStat {
        parse_pid_stat(&format!(
            "1 (x) S {ppid} 0 0 0 0 0 0 0 0 0 1 1 0 0 0 0 0 0 0 0 0"
        ))
        .unwrap()
    }

    #[test]
    fn descendants_follow_parent_pids_in_any_order() {
        // 30 is a grandchild listed before its parent 400 (pids wrapped)
        let all = [
            (1, child_of(0)),
            (30, child_of(400)),
            (100, child_of(1)),
            (200, child_of(100)),
            (300, child_of(1)),
            (400, child_of(200)),
        ];
        let pids: Vec<u32> = descendants(&all, 100).iter().map(|(p, _)| *p).collect();
        assert_eq!(pids, vec![30, 200, 400]);
        assert_eq!(descendant_ticks(&all, 100), 6);
        assert!(descendants(&all, 300).is_empty());
    }

    #[test]
    fn readers_take_a_root() {
        let dir = tempfile::tempdir().unwrap();
        for (pid, text) in [
            (
                "1",
                "1 (init) S 0 1 1 0 -1 0 0 0 0 0 1 1 0 0 20 0 1 0 10 0 0 0",
            ),
            (
                "42",
                "42 (a b) (c) R 1 1 1 0 -1 0 0 0 0 0 5 6 7 8 20 0 1 0 99 0 0 0",
            ),
            ("self", "not a pid"),
            ("43", "torn"),
        ] {
            std::fs::create_dir_all(dir.path().join("proc").join(pid)).unwrap();
            std::fs::write(dir.path().join("proc").join(pid).join("stat"), text).unwrap();
        }
        let root = Root::at(dir.path());
        assert_eq!(read(&root, 42).unwrap().start_time_ticks, 99);
        let all = read_all(&root);
        assert_eq!(all.iter().map(|(p, _)| *p).collect::<Vec<_>>(), vec![1, 42]);
        assert_eq!(descendant_ticks(&all, 1), 26);
    }
}

/// Property tests: any text gives a value or None, never a panic, and a line built
/// from any fields and any command name (spaces, parentheses, `) S 1` inside it)
/// reads back exactly. A fuzz-like run with many cases:
/// `PROPTEST_CASES=100000 cargo test -p oslab-sys --lib -- parse::pidstat::props`
#[cfg(test)]
mod props {
    use super::*;
    use crate::testing::proptest_config as config;
    use proptest::prelude::*;

    /// A command name as the kernel may print it: up to 15 bytes of anything but
    /// NUL and newline, parentheses and field-like text included.
    fn comm() -> impl Strategy<Value = String> {
        prop_oneof![
            "[^\n\0]{0,15}",
            "[() a-zS0-9]{0,15}",
            Just(") S 1 2 3 (".to_string()),
            Just("(".to_string()),
            Just(")".to_string()),
        ]
    }

    fn stat() -> impl Strategy<Value = PidStat> {
        (
            proptest::sample::select(vec!['R', 'S', 'D', 'Z', 'T', 't', 'X', 'I']),
            any::<u32>(),
            any::<u64>(),
            (any::<u64>(), any::<u64>()),
            (0..i64::MAX as u64, 0..i64::MAX as u64),
            any::<u64>(),
        )
            .prop_map(|(state, ppid, flags, (u, s), (cu, cs), start)| PidStat {
                state,
                ppid,
                flags,
                utime_ticks: u,
                stime_ticks: s,
                children_utime_ticks: cu,
                children_stime_ticks: cs,
                start_time_ticks: start,
            })
    }

    fn line(pid: u32, comm: &str, s: &PidStat) -> String {
        format!(
            "{pid} ({comm}) {} {} 1 1 0 -1 {} 10 0 0 0 {} {} {} {} 20 0 1 0 {} 10452992 882 18446744073709551615 1 1 0 0 0 0 0 4096 0 0 0 0 17 1 0 0 0 0 0\n",
            s.state,
            s.ppid,
            s.flags,
            s.utime_ticks,
            s.stime_ticks,
            s.children_utime_ticks,
            s.children_stime_ticks,
            s.start_time_ticks
        )
    }

    proptest! {
        #![proptest_config(config(512))]

        #[test]
        fn any_text_never_panics(text in "(?s).{0,300}") {
            let _ = parse_pid_stat(&text);
        }

        #[test]
        fn a_line_cut_anywhere_never_panics(pid in any::<u32>(), comm in comm(), s in stat(), cut in 0usize..400) {
            let l = line(pid, &comm, &s);
            let mut at = cut.min(l.len());
            while !l.is_char_boundary(at) {
                at -= 1;
            }
            let _ = parse_pid_stat(&l[..at]);
        }

        #[test]
        fn fields_read_back_whatever_the_name(pid in any::<u32>(), comm in comm(), s in stat()) {
            prop_assert_eq!(parse_pid_stat(&line(pid, &comm, &s)), Some(s));
        }

        #[test]
        fn descendants_never_include_the_ancestor_or_strangers(
            parents in proptest::collection::btree_map(1u32..40, 0u32..40, 0..40),
            ancestor in 0u32..40,
        ) {
            let all: Vec<(u32, PidStat)> = parents
                .iter()
                .map(|(&pid, &ppid)| {
                    (pid, PidStat { state: 'S', ppid, flags: 0, utime_ticks: 1, stime_ticks: 0,
                        children_utime_ticks: 0, children_stime_ticks: 0, start_time_ticks: 0 })
                })
                .collect();
            let d = descendants(&all, ancestor);
            let pids: std::collections::BTreeSet<u32> = d.iter().map(|(p, _)| *p).collect();
            prop_assert!(!pids.contains(&ancestor));
            for (_, s) in &d {
                prop_assert!(s.ppid == ancestor || pids.contains(&s.ppid));
            }
        }
    }
}

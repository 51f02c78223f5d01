//! /proc/PID/stat: the fields oslab reads of one process (proc(5)).

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
}

/// Parses one /proc/PID/stat line. The command name (field 2) may hold spaces and
/// parentheses, so the fields after it are found from its last ')'.
pub fn parse_pid_stat(text: &str) -> Option<PidStat> {
    let rest = text.get(text.rfind(')')? + 1..)?;
    let f: Vec<&str> = rest.split_whitespace().collect();
    // f[0] is field 3
    let field = |n: usize| f.get(n - 3).copied();
    let num = |n: usize| field(n)?.parse::<u64>().ok();
    Some(PidStat {
        state: field(3)?.chars().next()?,
        ppid: field(4)?.parse().ok()?,
        flags: num(9)?,
        utime_ticks: num(14)?,
        stime_ticks: num(15)?,
        start_time_ticks: num(22)?,
    })
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
}

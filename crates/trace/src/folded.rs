//! Slow calls' off-CPU time as folded stacks, the text format flamegraph.pl,
//! inferno and speedscope read: one line per stack, frames outermost first and
//! separated by `;`, then a space and the time in nanoseconds.
//!
//! A stack is `process;call;` and then where the time went: a blocked stretch's
//! kernel stack (kept for stretches over the stack threshold), or one frame in
//! brackets for time without a stack: `[dirty throttle]`, `[write-back wait]`,
//! `[run queue]`, `[blocked, stack not kept]` (stretches under the stack
//! threshold), `[blocked, stack not read]` (the kernel gave no frames).

use std::collections::BTreeMap;

use oslab_model::trace::StallLine;

use crate::records::OffCpu;

/// Off-CPU nanoseconds per folded stack, summed over a run.
#[derive(Debug, Default)]
pub struct Folded {
    stacks: BTreeMap<String, u64>,
}

impl Folded {
    /// Adds an interval's slow calls and the blocked stretches recorded in it.
    pub fn add(&mut self, lines: &[StallLine], offcpu: &[OffCpu]) {
        for l in lines {
            let base = format!("{};{}", frame(&l.comm), frame(&l.call));
            let mut stacked = 0u64;
            for o in offcpu.iter().filter(|o| {
                o.pid == l.pid && o.start_ns >= l.start_ns && o.start_ns < l.start_ns + l.dur_ns
            }) {
                let frames: Vec<String> = o.stack.iter().rev().map(|f| frame(f)).collect();
                let key = if frames.is_empty() {
                    format!("{base};[blocked, stack not read]")
                } else {
                    format!("{base};{}", frames.join(";"))
                };
                self.put(key, o.dur_ns);
                stacked += o.dur_ns;
            }
            self.put(format!("{base};[dirty throttle]"), l.throttle_ns);
            self.put(format!("{base};[write-back wait]"), l.wbwait_ns);
            self.put(format!("{base};[run queue]"), l.runq_ns);
            self.put(
                format!("{base};[blocked, stack not kept]"),
                l.blocked_ns.saturating_sub(stacked),
            );
        }
    }

    fn put(&mut self, key: String, ns: u64) {
        if ns > 0 {
            *self.stacks.entry(key).or_default() += ns;
        }
    }

    pub fn is_empty(&self) -> bool {
        self.stacks.is_empty()
    }

    /// The folded text, one stack a line, sorted by stack.
    pub fn text(&self) -> String {
        self.stacks
            .iter()
            .map(|(k, v)| format!("{k} {v}\n"))
            .collect()
    }
}

/// A name made safe as one frame: no separator, no line break, no control
/// character (names come from other users' processes).
fn frame(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| if c == ';' || c.is_control() { '_' } else { c })
        .collect();
    if s.is_empty() { "?".to_string() } else { s }
}

#[cfg(test)]
mod tests {
    use super::*;
    use oslab_model::trace::Cause;

    fn line(pid: u32, call: &str, start: u64, dur: u64) -> StallLine {
        StallLine {
            tgid: pid,
            pid,
            comm: "d;d\n".into(),
            cgroup: "/".into(),
            call: call.into(),
            fd: 3,
            file: "/f".into(),
            bytes: 0,
            start_ns: start,
            dur_ns: dur,
            main_cause: Cause::Blocked,
            throttle_ns: 10,
            wbwait_ns: 0,
            blocked_ns: 500,
            runq_ns: 7,
            on_cpu_ns: 0,
            pauses: 0,
            blocked_in: Vec::new(),
            queued_write_bytes: 0,
            queued_read_bytes: 0,
            writers_there: Vec::new(),
            read_wait: None,
        }
    }

    #[test]
    fn each_call_folds_into_its_causes_and_stacks_outermost_first() {
        let lines = [line(5, "fsync", 1_000, 1_000)];
        let offcpu = [
            OffCpu {
                pid: 5,
                tgid: 5,
                call: "fsync".into(),
                start_ns: 1_100,
                dur_ns: 300,
                stack: vec!["io_schedule".into(), "ext4_sync_file".into()],
            },
            // another thread's stretch and one outside the call are not its own
            OffCpu {
                pid: 6,
                tgid: 6,
                call: "write".into(),
                start_ns: 1_100,
                dur_ns: 999,
                stack: vec!["x".into()],
            },
            OffCpu {
                pid: 5,
                tgid: 5,
                call: "write".into(),
                start_ns: 2_000,
                dur_ns: 999,
                stack: vec!["x".into()],
            },
        ];
        let mut f = Folded::default();
        f.add(&lines, &offcpu);
        f.add(&lines, &[]);
        assert_eq!(
            f.text(),
            "d_d_;fsync;[blocked, stack not kept] 700\n\
             d_d_;fsync;[dirty throttle] 20\n\
             d_d_;fsync;[run queue] 14\n\
             d_d_;fsync;ext4_sync_file;io_schedule 300\n"
        );
    }
}
